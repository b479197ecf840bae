"""Editing one section of MEMORY.md / SCRATCHPAD.md keeps every other byte of the file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core import sections
from memctl.core.errors import UsageError

WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
STAMP = sections.day_stamp(WHEN)


def inserted_part(before: str, after: str) -> str:
    """The text added to `before` to make `after`, asserting it was a pure insertion."""
    assert len(after) > len(before)
    start = 0
    while start < len(before) and before[start] == after[start]:
        start += 1
    added = len(after) - len(before)
    assert after[:start] + after[start + added :] == before, "bytes outside the insertion changed"
    return after[start : start + added]


def test_append_goes_after_the_last_item_of_the_section():
    text = "# P\n\n## Decisions\n- [11-01] use pg\n\n## Progress\n- [11-02] v1\n"
    result = sections.append_dated_item(text, "decisions", "no ORM", WHEN)
    expected = (
        f"# P\n\n## Decisions\n- [11-01] use pg\n- [{STAMP}] no ORM\n\n## Progress\n- [11-02] v1\n"
    )
    assert result == expected


def test_crlf_file_stays_crlf_and_a_missing_final_newline_stays_missing():
    text = "## Constraints\r\n- py 3.11\r\n\r\n## Lessons\r\n- old lesson"
    result = sections.append_dated_item(text, "lessons", "new lesson", WHEN)
    assert result == text + f"\r\n- [{STAMP}] new lesson"
    result = sections.append_dated_item(text, "constraints", "pg 16", WHEN)
    assert inserted_part(text, result) == f"- [{STAMP}] pg 16\r\n"


def test_chinese_headings_are_the_same_sections():
    text = "# 项目\n\n## 技术约束\n- 只用 Python 3.11\n\n## 关键决策\n\n## 当前进度\n\n## 教训\n"
    for name, heading in (
        ("constraints", "技术约束"),
        ("Decisions", "关键决策"),
        ("progress", "当前进度"),
        ("教训", "教训"),
        ("lesson", "教训"),
    ):
        result = sections.append_dated_item(text, name, "记住这一条", WHEN)
        added = inserted_part(text, result)
        assert added == f"- [{STAMP}] 记住这一条\n"
        section = sections.find_section(result, sections.section_key(name))
        assert section is not None and section.title == heading
        assert added in result[section.body_start : section.end]


def test_headings_with_numbers_colons_and_both_languages_are_recognised():
    for title in (
        "1. Constraints",
        "Constraints:",
        "技术约束 (Constraints)",
        "Key Decisions",
        "**Lessons learned**",
        "技术约束：",
    ):
        assert sections.title_key(title) is not None, title
    assert sections.title_key("Installation") is None


def test_item_goes_before_a_sub_heading_and_keeps_the_guiding_comment():
    text = "## Decisions\n<!-- why -->\n\n### Archive\n- old\n\n## Lessons\n"
    result = sections.append_dated_item(text, "decisions", "new", WHEN)
    assert (
        result
        == f"## Decisions\n<!-- why -->\n- [{STAMP}] new\n\n### Archive\n- old\n\n## Lessons\n"
    )


def test_headings_inside_code_fences_do_not_count():
    text = "## Lessons\n```sh\n## Decisions\n```\n"
    result = sections.append_dated_item(text, "decisions", "real one", WHEN)
    # The fenced "## Decisions" is code: a real section is added at the end instead.
    assert result.startswith(text)
    assert result.endswith(f"\n## Decisions\n- [{STAMP}] real one\n")


def test_a_missing_section_is_added_at_the_end_in_the_files_language():
    english = "# P\n\n## Constraints\n- a\n"
    assert (
        sections.append_dated_item(english, "lessons", "x", WHEN)
        == english + f"\n## Lessons\n- [{STAMP}] x\n"
    )
    chinese = "# P\n\n## 技术约束\n- a\n\n## 关键决策\n- b"
    result = sections.append_dated_item(chinese, "lessons", "x", WHEN)
    assert result == chinese + f"\n\n## 教训\n- [{STAMP}] x\n"
    assert (
        sections.append_dated_item("", "progress", "start", WHEN)
        == f"## Progress\n- [{STAMP}] start\n"
    )


def test_multi_line_item_is_indented_under_its_bullet():
    result = sections.append_dated_item(
        "## Lessons\n", "lessons", "first line\n\nsecond line", WHEN
    )
    # The blank line is kept: a paragraph break inside the item (docs/agents.md).
    assert result == f"## Lessons\n- [{STAMP}] first line\n\n  second line\n"


def test_unknown_section_and_empty_text_are_usage_errors():
    with pytest.raises(UsageError, match="unknown section 'banana'"):
        sections.append_dated_item("", "banana", "x", WHEN)
    with pytest.raises(UsageError):
        sections.append_dated_item("## Lessons\n", "lessons", "  \n ", WHEN)


def test_replace_own_body_changes_only_that_paragraph():
    text = "# S\n\n## Focus\n<!-- one line -->\nold focus\nstill old\n\n## Next steps\n1. a\n"
    result = sections.replace_own_body(text, "focus", ["new focus"], {"focus": ("Focus",)})
    assert result == "# S\n\n## Focus\n<!-- one line -->\nnew focus\n\n## Next steps\n1. a\n"


def test_section_body_reads_one_section():
    text = "## Decisions\n- a\n### Sub\n- b\n## Lessons\n- c\n"
    assert sections.section_body(text, "decisions") == "- a\n### Sub\n- b\n"
    assert sections.section_body(text, "progress") is None


# --- property: an append never changes anything else -------------------------------------

_line = st.one_of(
    st.sampled_from(
        [
            "## Constraints",
            "## 技术约束",
            "## Decisions",
            "### Decisions",
            "# Title",
            "## Lessons",
            "## 教训",
            "## Progress",
            "## Other",
            "```",
            "~~~",
            "- item",
            "1. step",
            "",
            "  ",
            "<!-- comment -->",
            "## ",
            "#NoSpace",
            "text ## Decisions",
        ]
    ),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
        max_size=20,
    ),
)


@st.composite
def documents(draw) -> str:
    lines = draw(st.lists(_line, max_size=14))
    eols = draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines)))
    text = "".join(line + eol for line, eol in zip(lines, eols, strict=True))
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    return text


@settings(max_examples=300, deadline=None)
@given(
    documents(),
    st.sampled_from(["constraints", "decisions", "progress", "lessons"]),
    st.text(alphabet="abc 数据库-", min_size=1, max_size=15).filter(lambda s: s.strip()),
)
def test_append_is_a_pure_insertion_that_lands_in_the_section(text, key, item):
    result = sections.append_dated_item(text, key, item, WHEN)
    added = inserted_part(text, result)
    expected_line = f"- [{STAMP}] {item.strip()}"
    assert expected_line in added
    section = sections.find_section(result, key)
    assert section is not None
    assert expected_line in result[section.body_start : section.own_end]
    # Appending again still only inserts.
    again = sections.append_dated_item(result, key, item, WHEN)
    inserted_part(result, again)


def test_a_bom_on_top_is_no_part_of_the_first_heading_and_stays():
    """A UTF-8 BOM before the first line's heading: the heading starts after it, so the
    section is found and every splice keeps the BOM (docs/format.md)."""
    text = "\ufeff## Decisions\n- [11-01] use pg\n"
    [found] = sections.parse_headings(text)
    assert (found.start, found.title) == (1, "Decisions")
    after = sections.append_dated_item(text, "decisions", "drop the ORM", WHEN)
    assert after == f"\ufeff## Decisions\n- [11-01] use pg\n- [{STAMP}] drop the ORM\n"
    replaced = sections.replace_own_body(text, "decisions", ["- x"])
    assert replaced == "\ufeff## Decisions\n- x\n"
    # A file of a BOM alone is an empty one: the new section comes right after the BOM.
    assert sections.append_dated_item("\ufeff", "decisions", "first", WHEN) == \
        f"\ufeff## Decisions\n- [{STAMP}] first\n"
