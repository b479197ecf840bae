"""Importance when the writer gives none: markers raise it, corrections start high."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.importance import explain_importance, infer_importance
from memctl.core.note import NOTE_TYPES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The API listens on port 8080", 5),
        ("Remember: the staging DB resets nightly", 7),
        ("Always run the linter before pushing", 7),
        ("NEVER force-push to main", 7),
        ("Don't use an ORM here", 6),
        ("Don’t use an ORM here", 6),  # curly apostrophe, as phones and editors type it
        ("Do not deploy on Fridays", 6),
        ("The user prefers short answers", 6),
        ("Remember: always run tests", 8),  # two strong markers
        ("Remember to always, never, ever… don't", 8),  # capped: 9 and 10 are the user's call
        ("我们用 Redis 做缓存", 5),
        ("记住：staging 每晚重置", 7),
        ("以后都用中文回复", 7),
        ("千万不要在周五部署", 7),  # counts once, not also as 不要
        ("不要用 ORM", 6),
        ("偏好简洁的回答", 6),
        ("记住：以后都用中文回复", 8),
    ],
)
def test_markers_raise_a_fact(text: str, expected: int) -> None:
    assert infer_importance(text, "fact") == expected


def test_markers_are_whole_words() -> None:
    assert infer_importance("the alwaysOn flag and neverland", "fact") == 5
    assert infer_importance("see the preferences dialog", "fact") == 6  # "preferences" counts
    assert explain_importance("remembered the key", "fact").markers == ("remember",)


def test_corrections_start_high_and_types_have_their_base() -> None:
    assert infer_importance("the port is 5433, not 5432", "correction") == 8
    assert infer_importance("we chose Kysely", "decision") == 7
    assert infer_importance("we chose Kysely", "fact") == 5
    assert infer_importance("tabs", "preference") == 6


def test_a_store_template_base_is_honoured() -> None:
    assert infer_importance("x", "fact", base=3) == 3
    assert infer_importance("always x", "fact", base=3) == 5
    assert infer_importance("always x", "fact", base=9) == 9  # never lowered by the cap


def test_explain_names_the_markers() -> None:
    guess = explain_importance("Remember: 不要 push on Friday", "fact")
    assert guess.value == 8
    assert set(guess.markers) == {"remember", "不要"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.sampled_from(NOTE_TYPES))
def test_inference_stays_in_range_and_never_reaches_protected_levels(text: str, kind: str) -> None:
    value = infer_importance(text, kind)
    assert 1 <= value <= 8
