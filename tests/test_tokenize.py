"""The CJK transform: every CJK character its own token, and the original text recoverable."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.tokenize import FTS_TOKENIZE, SEP, clean, from_index, has_cjk, to_index


def tokens(text: str) -> list[str]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tokenize='{FTS_TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.execute("INSERT INTO f(body) VALUES (?)", (to_index(text),))
    return [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]


def test_each_cjk_character_is_a_token_and_english_is_stemmed() -> None:
    assert tokens("PostgreSQL连接池 databases") == ["postgresql", "连", "接", "池", "databas"]


def test_kana_and_hangul_are_split_but_punctuation_is_not_a_token() -> None:
    assert tokens("カタカナ。한국어、ひら") == ["カ", "タ", "カ", "ナ", "한", "국", "어", "ひ", "ら"]


def test_ascii_text_is_untouched() -> None:
    text = "plain ascii\nwith lines"
    assert to_index(text) == text


def test_control_characters_become_spaces() -> None:
    assert clean("a\x00b\x1fc\td\n") == "a b c\td\n"


def test_has_cjk() -> None:
    assert has_cjk("abc 数") and not has_cjk("abc é")


@settings(max_examples=300)
@given(st.text())
def test_transform_is_reversible(text: str) -> None:
    assert from_index(to_index(text)) == clean(text)
    assert SEP not in clean(text)
