"""The index's pairs of CJK characters (`fts_pairs`, docs/search.md "Pairs of characters"):
kept in step with the files, and what a question's pairs are ranked by."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from conftest import write_memory_file as write
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.tokenize import _CJK_CLASS, _cjk_pairs_in_batches, cjk_pairs, has_token_chars
from memctl.index.db import ensure_fresh, index_path
from memctl.index.search import search


def test_pairs_are_neighbouring_characters() -> None:
    assert cjk_pairs("部署失败 in prod，登录会超时") == "部署 署失 失败 登录 录会 会超 超时"
    assert cjk_pairs("only English here") == ""
    assert cjk_pairs("a 库 b 表") == ""  # a word between: no pair
    assert cjk_pairs("数 据。库") == "数据 据库"  # as the phrase "数 据" matches "数 据"
    assert cjk_pairs("カタカナ") == "カタ タカ カナ"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("部署失败登录会超时 ab,。\n库_-")), max_size=60))
def test_pairs_are_where_the_phrase_of_two_characters_matches(text: str) -> None:
    # What FTS5 sees: each CJK character a word, a run of letters a word, the rest separators.
    words = re.findall(r"[a-z]+|[^\x00-\x7f,。\s_-]", text)
    expected = [first + second for first, second in zip(words, words[1:], strict=False)
                if not first.isascii() and not second.isascii()]
    assert cjk_pairs(text).split() == expected


def _pairs_run_by_run(text: str) -> str:
    """The plain loop `cjk_pairs` is held equal to: the pairs inside each run of CJK, and the
    last and first characters of two runs with nothing of a token between them."""
    pairs: list[str] = []
    last, end = "", -1
    for match in re.finditer(f"[{_CJK_CLASS}]+", text):
        run = match.group()
        if last and not has_token_chars(text[end:match.start()]):
            pairs.append(last + run[0])
        pairs.extend(run[start:start + 2] for start in range(len(run) - 1))
        last, end = run[-1], match.end()
    return " ".join(pairs)


# CJK that is a letter (数, カ, 한) and CJK that is not (the radical ⺀, the sound mark ゛, the
# katakana middle dot ・), CJK punctuation (not CJK here), letters, digits, `_`, a private-use
# character, an ideograph beyond the BMP, spaces and other punctuation.
_TRICKY = list("数据库カタ한⺀゛，。、・ab1_\ue000\U00020000 \n-!")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(_TRICKY), max_size=40))
def test_pairs_in_one_pass_equal_the_run_by_run_loop(text: str) -> None:
    assert cjk_pairs(text) == _pairs_run_by_run(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(_TRICKY), max_size=200), st.integers(1, 8))
def test_pairs_of_a_long_text_in_batches_equal_the_pairs_at_once(text: str, batch: int) -> None:
    """A text over _PAIRS_AT_ONCE is paired a batch of matches at a time (9 MB of Chinese
    took 885 MB at once): the same pairs, in the same order, wherever a batch ends."""
    assert _cjk_pairs_in_batches(text, batch) == cjk_pairs(text)


def pairs_rows(root: Path) -> dict[str, tuple[str, str, str]]:
    """id → the entry's (title, tags, body) in `fts_pairs`."""
    with sqlite3.connect(index_path(root)) as conn:
        return {doc_id: (title, tags, body) for doc_id, title, tags, body in conn.execute(
            "SELECT d.id, p.title, p.tags, p.body FROM fts_pairs p"
            " JOIN docs d ON d.rowid = p.rowid WHERE d.kind = 'note'")}


@pytest.fixture
def root(store_path: Path) -> Path:
    write(store_path, "blog/notes/fact/login-aaaaaaaaaaaaaaaa.md", "登录会超时，因为会话缓存太小。",
          id="aaaaaaaaaaaaaaaa", type="fact", project="blog", tags=["登录"])
    write(store_path, "blog/notes/fact/english-bbbbbbbbbbbbbbbb.md", "Logins time out at 30 s.",
          id="bbbbbbbbbbbbbbbb", type="fact", project="blog")
    return store_path


def test_the_pairs_follow_every_change_to_the_files(root: Path) -> None:
    ensure_fresh(root).close()
    rows = pairs_rows(root)
    assert set(rows) == {"aaaaaaaaaaaaaaaa"}  # an entry without CJK has no row
    assert rows["aaaaaaaaaaaaaaaa"][1] == "登录"  # the tag's pair
    assert "会超 超时" in rows["aaaaaaaaaaaaaaaa"][2] and "会话" in rows["aaaaaaaaaaaaaaaa"][2]
    note = root / "blog/notes/fact/login-aaaaaaaaaaaaaaaa.md"
    note.write_text(note.read_text(encoding="utf-8").replace("会话缓存", "连接池"),
                    encoding="utf-8")
    ensure_fresh(root).close()
    body = pairs_rows(root)["aaaaaaaaaaaaaaaa"][2]
    assert "连接" in body and "会话" not in body
    english = root / "blog/notes/fact/english-bbbbbbbbbbbbbbbb.md"
    english.write_text(english.read_text(encoding="utf-8") + "\n部署失败\n", encoding="utf-8")
    note.unlink()
    ensure_fresh(root).close()
    assert set(pairs_rows(root)) == {"bbbbbbbbbbbbbbbb"}
    assert "部署 署失 失败" in pairs_rows(root)["bbbbbbbbbbbbbbbb"][2]


def test_a_question_is_ranked_by_its_pairs(root: Path) -> None:
    write(root, "blog/notes/fact/other-cccccccccccccccc.md", "会议室在三楼。",
          id="cccccccccccccccc", type="fact", project="blog")
    hits = search(root, "为什么登录会超时", project="blog", explain=True)
    assert hits[0].id == "aaaaaaaaaaaaaaaa"
    explain = hits[0].explain
    assert explain is not None and explain["bm25"] > 0
    assert {"登录", "超时"} <= set(explain["bm25_units"]) | set(explain["matched"])
