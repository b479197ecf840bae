"""`memctl search` prints its hits without rich when stdout is no terminal
(memctl.cli.plaintext): the bytes must be the ones rich printed, for the same width. Held here
against rich itself: the width of every character the plain layout claims to know, hits of
varied text (CJK, long words, marks rich must measure, narrow widths) laid out both ways, the
width and terminal rules, and the real command in a pipe and on a terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import pytest
from conftest import memctl_executable, run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len as rich_cell_len
from rich.console import Console

from memctl.cli import output, plaintext
from memctl.cli.searching import _print_hits
from memctl.core.vocab import NOTE_TYPES
from memctl.index.search import CLOSE, OPEN, Hit

# The variables rich reads to decide on colours and widths, cleared around each rendering.
RICH_ENV = ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "UNICODE_VERSION",
            "TERM", "COLORTERM")


@contextmanager
def environment(**values: str):
    saved = {name: os.environ.get(name) for name in {*RICH_ENV, *values}}
    for name in RICH_ENV:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def render(hits: list[Hit], explain: bool, width: int, *, via_rich: bool) -> tuple[str, bool]:
    """What `_print_hits` prints at `width` columns to a pipe, and whether rich printed it.
    With `via_rich`, the way it always was: through rich's console of stdout."""
    saved = output._console
    captured = io.StringIO()
    try:
        with environment(COLUMNS=str(width)), redirect_stdout(captured):
            output._console = Console(highlight=False, soft_wrap=False) if via_rich else None
            _print_hits(hits, explain)
            by_rich = output._console is not None  # the plain layout never makes rich's console
    finally:
        output._console = saved
    return captured.getvalue(), by_rich


# --- every character's width -------------------------------------------------------------------


def test_every_character_the_plain_layout_measures_is_as_wide_as_rich_says() -> None:
    """The plain layout measures a character itself only where its width is rich's (rich's
    tables, for every code point); any other character leaves the hits to rich."""
    wrong = []
    claimed = 0
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        character = chr(code)
        if plaintext.printable(character):
            claimed += 1
            if plaintext.cell_len(character) != rich_cell_len(character):
                wrong.append(f"U+{code:04X}")
    assert wrong == []
    assert claimed > 100_000  # letters, CJK and symbols of every script: not a vacuous check


def test_what_the_plain_layout_knows_and_leaves_to_rich() -> None:
    for text in ("PostgreSQL 16 only; no ORM.", "数据库连接池的超时是多少？", "Ärger über Öl — 5 × 3 → …",
                 "ｶﾀｶﾅ and ＦＵＬＬ", "한국어 문장", "emoji 😀 alone", "\u3000ideographic space"):
        assert plaintext.printable(text), text
    for text in ("e\u0301", "family 👨\u200d👩", "heart ❤\ufe0f", "\x1b[31mred", "bell\x07",
                 "tab\tbed", "line\nbreak", "jamo \u1100\u1161", "private \ue000", "tone 👍🏽"):
        assert not plaintext.printable(text), text


# --- hits laid out both ways -------------------------------------------------------------------

WORD_CHARACTERS = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-_.,;:!?()[]{}'\"/#*`~@$%^&+=<>|\\")
    + list("éßøÆçñüÖ") + list("数据库连接池缓存超时登录部署为什么上次失败原因") + list("，。、！？：；（）「」")
    + list("ｱｲｳｴｵ") + list("ＡＢＣ１２３") + list("한국어") + list("…—–×→²•€") + ["😀", "🚀"])
RARE_CHARACTERS = st.sampled_from(["\u0301", "\u200d", "\ufe0f", "\x1b", "\x07", "\t", "\u1160",
                                   "\ue000", "🏽", "\u00ad", "\u200b"])
PLAIN_WORD = st.one_of(
    st.text(WORD_CHARACTERS, min_size=1, max_size=12),
    st.text(WORD_CHARACTERS, min_size=30, max_size=90),  # wider than a narrow line
)
RARE_WORD = st.builds(lambda head, rare, tail: head + rare + tail,
                      st.text(WORD_CHARACTERS, max_size=4), RARE_CHARACTERS,
                      st.text(WORD_CHARACTERS, max_size=4))
SPACE = st.sampled_from([" ", " ", " ", "  ", "\u3000", "\xa0"])


@st.composite
def prose(draw: st.DrawFn, word: st.SearchStrategy[str], most: int = 40) -> str:
    words = draw(st.lists(word, max_size=most))
    return "".join(word + draw(SPACE) for word in words).strip(" ")


@st.composite
def snippet(draw: st.DrawFn, word: st.SearchStrategy[str]) -> str:
    words = draw(st.lists(word, max_size=40))
    marked = [OPEN + word + CLOSE if draw(st.booleans()) else word for word in words]
    text = " ".join(marked)
    return draw(st.sampled_from(["", "…", "# ", "## "])) + text + draw(st.sampled_from(["", "…"]))


@st.composite
def explanation(draw: st.DrawFn, word: st.SearchStrategy[str]) -> dict:
    explain = {"bm25": draw(st.one_of(st.none(), st.floats(0, 40))),
               "importance_factor": 1.2, "recency_factor": 0.9866, "age_days": 7.2,
               "type_factor": draw(st.sampled_from([1.0, 1.1]))}
    if draw(st.booleans()):
        explain.update(coverage=0.75, exact=draw(st.booleans()), exact_factor=1.25,
                       fact=draw(st.booleans()), fact_factor=1.1,
                       matched=draw(st.lists(word, max_size=6)))
    if draw(st.booleans()):
        explain["placed_ahead_of"] = ["01jdz4k2m8x7b3qv"]
    if draw(st.booleans()):
        explain["scope_words"] = draw(st.lists(word, min_size=1, max_size=2))
    if draw(st.booleans()):
        explain["fuzzy"] = draw(st.dictionaries(word, st.lists(word, min_size=1, max_size=2),
                                                max_size=2))
    return explain


@st.composite
def hit(draw: st.DrawFn, word: st.SearchStrategy[str]) -> Hit:
    kind = draw(st.sampled_from(["note", "note", "note", "episode", "memory", "scratchpad"]))
    project = draw(st.one_of(st.sampled_from(["blog-backend", "a-rather-long-project-name-for-tests",
                                              "博客后端", "global", "x"]), word))
    note_id = draw(st.from_regex(r"[0-9a-z]{16}", fullmatch=True))
    path = {"memory": f"{project}/MEMORY.md", "scratchpad": f"{project}/SCRATCHPAD.md"}.get(
        kind, f"{project}/notes/fact/n-{note_id}.md")
    return Hit(id=note_id, path=path, project=project, kind=kind,
               type=draw(st.sampled_from(NOTE_TYPES)), importance=5,
               status=draw(st.one_of(st.sampled_from(["active", "superseded", "archived"]), word)),
               score=draw(st.floats(0, 50)), title=draw(prose(word, most=14)),
               snippet_marked=draw(snippet(word)),
               line=draw(st.integers(1, 400)), expired=draw(st.booleans()),
               explain=draw(st.one_of(st.none(), explanation(word))))


@st.composite
def hit_lists(draw: st.DrawFn) -> list[Hit]:
    """Up to four hits; in one list of four, words with a character rich must measure."""
    word = st.one_of(PLAIN_WORD, RARE_WORD) if draw(st.integers(0, 3)) == 0 else PLAIN_WORD
    return draw(st.lists(hit(word), min_size=1, max_size=4))


def words_of(explain: dict) -> list[str]:
    """The words an --explain line quotes as they are (the query's, never escaped)."""
    fuzzy = explain.get("fuzzy", {})
    return [*explain.get("matched", []), *explain.get("scope_words", []), *fuzzy,
            *(word for words in fuzzy.values() for word in words)]


@settings(max_examples=300, deadline=None)
@given(hits=hit_lists(), explain=st.booleans(),
       width=st.one_of(st.integers(1, 200), st.sampled_from([1, 2, 20, 21, 22, 40, 80, 120])))
def test_hits_are_laid_out_as_rich_lays_them_out(hits: list[Hit], explain: bool, width: int) -> None:
    expected, _ = render(hits, explain, width, via_rich=True)
    shown, by_rich = render(hits, explain, width, via_rich=False)
    assert shown == expected
    every_text = [value for hit in hits
                  for value in (hit.title, hit.snippet_marked, hit.project, hit.status)]
    if explain:
        every_text += [text for hit in hits if hit.explain for text in words_of(hit.explain)]
    if all(plaintext.printable(text.replace(OPEN, "").replace(CLOSE, "")) for text in every_text):
        assert not by_rich, "text the plain layout knows is printed without rich"


def test_cjk_long_words_and_narrow_widths_by_hand() -> None:
    """The cases the layout gives way in, spelled out: a wide character cut at a line's end, a
    word wider than the line, a lead wider than half the line, a title cut with "…"."""
    hits = [
        Hit(id="01m843gqygtzdabr", path="博客后端/notes/error/a-01m843gqygtzdabr.md", project="博客后端",
            type="error", kind="note", importance=5, status="superseded", score=16.4, expired=True,
            title="以后都用连接池做编码，不要直接接口。" * 3,
            snippet_marked=f"千万不要在{OPEN}数据库{CLOSE}上直接连接，" * 6,
            explain={"bm25": 11.094, "importance_factor": 1.2, "recency_factor": 0.98,
                     "age_days": 7.2, "type_factor": 1.0, "coverage": 1.0, "exact": True,
                     "exact_factor": 1.25, "matched": ["数据", "据库", "数据库"]}),
        Hit(id="01m0qxkxx8mp6gq8", path="blog/notes/fact/b-01m0qxkxx8mp6gq8.md", project="blog",
            type="fact", kind="note", importance=5, status="active", score=3.0,
            title="x" * 75, snippet_marked="y" * 300 + f" {OPEN}timeout{CLOSE} " + "z" * 50),
        Hit(id="MEMORY.md#Decisions", path="blog/MEMORY.md", project="blog", type="decision",
            kind="memory", importance=5, status="active", score=2.0, line=12, title="Decisions",
            snippet_marked=f"## Decisions - [11-30] {OPEN}PostgreSQL{CLOSE} 16 only; no ORM."),
    ]
    for width in (1, 5, 19, 20, 21, 33, 34, 35, 40, 59, 60, 61, 80, 81, 100, 200):
        for explain in (False, True):
            expected, _ = render(hits, explain, width, via_rich=True)
            shown, by_rich = render(hits, explain, width, via_rich=False)
            assert shown == expected, width
            assert not by_rich


@pytest.mark.parametrize("field", ["title", "snippet_marked", "project", "status", "type", "id",
                                   "explain"])
@pytest.mark.parametrize("odd", ["\x07", "e\u0301", "\u200d", "🏽", "\ue000"])
def test_a_character_rich_must_measure_anywhere_leaves_the_hits_to_rich(field: str, odd: str) -> None:
    """A combining mark, a joiner, a skin tone, a private character, in any text the hits
    show: rich prints them all, as before. A bell (a control character) reaches neither: it
    is shown as `\\x07` (docs/security.md), which the plain layout prints as rich would."""
    explain = {"bm25": 1.0, "importance_factor": 1.0, "recency_factor": 1.0, "age_days": 1,
               "type_factor": 1.0, "coverage": 1.0, "matched": ["pool"]}
    fields = {"id": "01m843gqygtzdabr", "title": "Pool size", "type": "fact", "project": "blog",
              "status": "archived", "snippet_marked": f"The {OPEN}pool{CLOSE} size is 20"}
    if field == "explain":
        explain["matched"] = [f"po{odd}ol"]
    else:
        fields[field] = fields[field][:2] + odd + fields[field][2:]
    hits = [Hit(**fields, path=f"blog/notes/fact/{fields['id']}.md", kind="note", importance=5,
                score=1.0, explain=explain)]
    expected, _ = render(hits, True, 80, via_rich=True)
    shown, by_rich = render(hits, True, 80, via_rich=False)
    assert shown == expected
    if odd == "\x07":
        assert not by_rich and "\x07" not in shown and "\\x07" in shown
    else:
        assert by_rich


# --- what rich reads: width and terminal -------------------------------------------------------


@pytest.mark.parametrize("settings_", [{}, {"COLUMNS": "100"}, {"COLUMNS": ""}, {"COLUMNS": "abc"},
                                       {"COLUMNS": "7"}, {"COLUMNS": "0"}])
def test_the_width_is_read_as_rich_reads_it(settings_: dict[str, str]) -> None:
    with environment(**settings_):
        assert plaintext._width() == Console().width


@pytest.mark.parametrize("settings_", [{}, {"FORCE_COLOR": ""}, {"FORCE_COLOR": "1"},
                                       {"TTY_COMPATIBLE": "0"}, {"TTY_COMPATIBLE": "1"},
                                       {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
                                       {"TTY_COMPATIBLE": "x", "FORCE_COLOR": "1"}])
def test_a_terminal_is_told_as_rich_tells_it(settings_: dict[str, str]) -> None:
    with environment(**settings_), redirect_stdout(io.StringIO()):
        assert plaintext._terminal() == Console().is_terminal


def test_a_width_rich_reads_otherwise_or_no_room_is_left_to_rich() -> None:
    for columns in ("0", "٣"):  # no room at all; a digit int() reads but isascii() does not
        with environment(COLUMNS=columns):
            assert plaintext.plain_console(["text"]) is None
    with environment(COLUMNS="80", UNICODE_VERSION="9.0"):  # rich's older tables
        assert plaintext.plain_console(["text"]) is None
    with environment(COLUMNS="80", FORCE_COLOR="1"):  # colours for a pipe
        assert plaintext.plain_console(["text"]) is None


# --- the real command ---------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["80", "41", "120"])
@pytest.mark.parametrize("query", ["postgres", "连接池", "redis 缓存"])
def test_memctl_search_in_a_pipe_prints_what_rich_printed(sample_store: Path, query: str,
                                                          columns: str) -> None:
    """The installed command, plain (stdout is a pipe) and through rich (UNICODE_VERSION
    naming rich's own latest tables sends the hits to rich, and changes nothing else)."""
    for explain in ([], ["--explain"]):
        args = ("search", query, "--all-projects", *explain)
        plain = run_memctl(*args, store=sample_store, env={"COLUMNS": columns})
        by_rich = run_memctl(*args, store=sample_store,
                             env={"COLUMNS": columns, "UNICODE_VERSION": "latest"})
        assert plain.exit_code == by_rich.exit_code == 0, plain.stderr
        assert plain.stdout.count("\n") >= 2, plain.stdout  # hits were found and printed
        assert plain.stdout == by_rich.stdout and plain.stderr == by_rich.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminal")
def test_memctl_search_on_a_terminal_keeps_rich_colours(sample_store: Path) -> None:
    """On a terminal rich prints, with its colours: the id bold, the matches bold yellow."""
    leader, follower = pty.openpty()
    env = {**os.environ, "MEMCTL_STORE": str(sample_store), "COLUMNS": "100", "TERM": "xterm"}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "UNICODE_VERSION"):
        env.pop(name, None)
    done = subprocess.run([memctl_executable(), "search", "postgres", "--all-projects",
                           "--limit", "3"],
                          stdout=follower, stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal is closed once everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 0, done.stderr
    text = shown.decode()
    assert "\x1b[1m" in text and "\x1b[1;33m" in text, text[:500]
    assert re.search(r"\x1b\[1m[0-9a-z]{16}", text), text[:500]
