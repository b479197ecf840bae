"""The query translator: what users type becomes a safe FTS5 MATCH, never a syntax error."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.core.errors import UsageError
from memctl.core.query import MAX_QUERY_CHARS, parse, shown_query
from memctl.core.tokenize import FTS_TOKENIZE, to_index

DOCS = [
    "The blog backend uses PostgreSQL 16; no ORM, queries go through Kysely.",
    "我们的数据库连接池配置在这里，分布式缓存层也很重要",
    "Always run the c++ build with -O2 (release) before benchmarking.",
    "e-mail notifications use the NEAR real-time queue AND a retry policy",
    "PostgreSQL连接池 settings: max 20 connections",
]


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tokenize='{FTS_TOKENIZE}')")
    for doc in DOCS:
        conn.execute("INSERT INTO f(body) VALUES (?)", (to_index(doc),))
    return conn


def hits(conn: sqlite3.Connection, text: str) -> set[int]:
    query = parse(text)
    if query.match is not None:
        rows = conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (query.match,)).fetchall()
        return {row[0] - 1 for row in rows}
    if query.exclude is not None:
        rows = conn.execute(
            "SELECT rowid FROM f WHERE rowid NOT IN (SELECT rowid FROM f WHERE f MATCH ?)",
            (query.exclude,),
        ).fetchall()
        return {row[0] - 1 for row in rows}
    return set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql", {0, 4}),
        ("PostgreSQL kysely", {0}),
        ("postgres*", {0, 4}),
        ("query", {0}),  # stem: queries
        ("数据库", {1}),
        ("缓存", {1}),  # a two-character word inside a longer run
        ("连接池", {1, 4}),
        ("PostgreSQL连接池", {4}),
        ('"real-time queue"', {3}),
        ("kysely OR 缓存", {0, 1}),
        ("连接池 -postgresql", {1}),
        ("连接池 NOT postgresql", {1}),
        ("-postgresql", {1, 2, 3}),
        ("e-mail", {3}),
        ("c++", {2}),
    ],
)
def test_queries_find_what_a_user_expects(fts: sqlite3.Connection, text: str, expected: set) -> None:
    assert hits(fts, text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '"unbalanced quote', 'say "hi', "foo)", "(foo", "((a OR b)", "AND", "NOT", "OR",
        "a AND", "NEAR(a b, 3)", "a NEAR b", "c++", "-", "--", "*", "**", "a*b*", '"" *',
        "🚀 deploy", "🚀", "x\x00y", "col:value", "title:x", "{a b}", "^a", "a + b",
        "'single'", "a\\b", "\u200b", "中文\"引号", "x" * 10_000, ("word " * 2_000),
        "数据" * 3_000, "- - -", "tag:", "type:", ":", "a:b:c", '"tag:"',
        "TypeError: unknown type: int",
    ],
)
def test_hostile_queries_never_raise(fts: sqlite3.Connection, text: str) -> None:
    hits(fts, text)


@pytest.mark.parametrize("text", ["tag:#", "redis tag:# cache", "-tag:#", "TYPE:#"])
def test_a_filter_naming_nothing_is_bad_usage(text: str) -> None:
    """`tag:#` once searched for the word `tag`, its filter silently lost (`tag:` alone is a
    word, as pasted text has it: above)."""
    with pytest.raises(UsageError, match=r"names no (tag|type); write (tag|type):NAME"):
        parse(text)


def test_operators_typed_as_words_are_words(fts: sqlite3.Connection) -> None:
    assert hits(fts, "NEAR") == {3}
    assert hits(fts, "AND") == {3}  # alone it is a word, not an operator


def test_filters_are_pulled_out() -> None:
    query = parse("tag:Database type:decision -tag:old -type:fact postgres")
    assert query.tags == ("database",)
    assert query.types == ("decision",)
    assert query.exclude_tags == ("old",)
    assert query.exclude_types == ("fact",)
    assert query.match == '"postgres"'
    assert query.words == ("postgres",)


def test_filter_only_query_has_no_match() -> None:
    query = parse("tag:db")
    assert query.match is None and query.exclude is None and query.tags == ("db",)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_query_is_bad_usage(text: str) -> None:
    with pytest.raises(UsageError):
        parse(text)


def test_unknown_type_is_bad_usage_naming_it() -> None:
    with pytest.raises(UsageError, match="banana"):
        parse("type:banana postgres")


def test_a_bare_word_of_four_characters_or_more_also_looks_for_what_it_begins() -> None:
    assert parse("migr").units[0].begins == '{title tags body} : "migr" *'
    assert parse("Kube postgres").units[0].begins == '{title tags body} : "Kube" *'
    for text in ("mig", "db", "2026", '"migr"', "migr*", "migr OR kube", "e-mail", "数据库"):
        assert all(unit.begins is None for unit in parse(text).units), text
    assert parse("migr").match == '"migr"'  # the strict match is the word as typed


def test_or_binds_tighter_than_and() -> None:
    assert parse("db postgres OR mysql").match == '"db" AND ("postgres" OR "mysql")'


def test_long_queries_are_cut_and_say_so() -> None:
    query = parse("word " * 2_000)
    assert query.truncated


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=80).filter(lambda s: s.strip()))
def test_any_text_gives_a_valid_match(text: str) -> None:
    conn = _shared()
    try:
        query = parse(text)
    except UsageError:
        return  # an unknown type:x is a clear message, not a crash
    for match in (query.match, query.exclude):
        if match is not None:
            conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (match,)).fetchall()
    for unit in query.units:  # the search runs these on its title, tags and body columns
        for match in (unit.match, unit.begins):
            if match is not None:
                conn.execute("SELECT rowid FROM cols WHERE cols MATCH ?", (match,)).fetchall()


_SYNTAX = st.sampled_from(
    ['"', "-", "*", "(", ")", "OR", "AND", "NOT", "NEAR", ":", "^", "+", "tag:", "type:", " ",
     "数据", "c++", "\x00", "🚀", "a", "fact", "'"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_SYNTAX, min_size=1, max_size=12).map("".join).filter(lambda s: s.strip()))
def test_syntax_soup_gives_a_valid_match(text: str) -> None:
    test_any_text_gives_a_valid_match.hypothesis.inner_test(text)  # type: ignore[attr-defined]


_CONN: sqlite3.Connection | None = None


def _shared() -> sqlite3.Connection:
    global _CONN
    if _CONN is None:
        _CONN = sqlite3.connect(":memory:")
        _CONN.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tokenize='{FTS_TOKENIZE}')")
        _CONN.execute(f"CREATE VIRTUAL TABLE cols USING fts5(title, tags, body, scope,"
                      f" tokenize='{FTS_TOKENIZE}')")
        for doc in DOCS:
            _CONN.execute("INSERT INTO f(body) VALUES (?)", (to_index(doc),))
            _CONN.execute("INSERT INTO cols(body) VALUES (?)", (to_index(doc),))
    return _CONN


_NAMING = st.sampled_from(["iot-hub", "iot hub", "项目", "项目里", "项目组", "project", "project:",
                           "SendGrid", "key", "的", "，", " ", "目标", "在", "uv", "里"])


@given(st.lists(_NAMING, min_size=1, max_size=14).map("".join).filter(lambda s: s.strip()))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_scope_words_drop_the_name_and_its_word_for_project_only(raw: str) -> None:
    """Whatever the query, the units left out for the project searched are the name's and,
    right after a name, `project` or the units of one Chinese piece starting with 项目; the
    units kept are the others, in order; no name, nothing left out."""
    from memctl.core.query import without_scope_words

    parsed = parse(raw)
    narrowed, left_out = without_scope_words(parsed, "iot-hub")
    units = parsed.units
    kept = [id(unit) for unit in narrowed.units]
    assert kept == [id(unit) for unit in units if id(unit) in set(kept)]  # in order
    dropped = [number for number, unit in enumerate(units) if id(unit) not in set(kept)]
    names = {number for number, unit in enumerate(units)
             if unit.text.strip(".,;:!?'\"()[]{}，：").casefold() in ("iot-hub", "iot", "hub")}
    if not names & set(range(len(units))) or not dropped:
        assert narrowed is parsed and left_out == []
        return
    for number in dropped:
        if number in names:
            continue
        # A word for "project": after a name, with only the same naming run between.
        before = number - 1
        while before >= 0 and before in dropped and before not in names:
            before -= 1
        assert before in names and before in dropped, (raw, number)
        # `project`, or 项目 itself, or a unit of a piece that names the project whole.
        text = units[number].text.strip(".,;:!?'\"()[]{}").casefold()
        assert text in ("project", "projects", "项目") or any(
            text in piece for piece in ("项目里", "项目中", "项目上", "项目内", "项目组")), \
            (raw, number)
    # And right after the name, `project` is always among them.
    for number in names:
        after = number + 1
        if after < len(units) and units[after].label.strip(":").casefold() == "project" \
                and number in dropped:
            assert after in dropped, raw


def test_a_query_is_read_up_to_its_limit() -> None:
    """A query longer than MAX_QUERY_CHARS (an MCP client can send 50 MB: 31 s and 1.8 GB of
    the server) is read up to there, a word cut there left out, and says it was cut: what
    comes after, a bad filter too, is never read."""
    words = "deploy cache " * (MAX_QUERY_CHARS // 13)
    query = parse(words + "type:nosuchtype" + " rollback" * 1000)
    assert query.truncated and len(query.raw) <= MAX_QUERY_CHARS
    assert {term.text for term in query.terms} <= {"deploy", "cache"} and not query.types
    assert not parse("deploy " * 10 + "type:fact").truncated


@pytest.mark.parametrize("space", ["\t", "\r", "\u3000", " "])
@pytest.mark.parametrize("last", ["type:decision", "tag:production"])
def test_a_filter_the_query_limit_cuts_is_left_out(space: str, last: str) -> None:
    """A filter across MAX_QUERY_CHARS is left out whatever whitespace is before it: after
    tabs (or `\\r`, U+3000) it was read cut, `type:deci` (bad usage) or `tag:produc` (none)."""
    head = MAX_QUERY_CHARS - len(last) + 4 - 1  # the limit falls 4 characters before its end
    words = ("deploy" + space) * (head // 7)
    query = parse(words + "x" * (head - len(words)) + space + last)
    assert query.truncated and not query.types and not query.tags
    assert {term.text for term in query.terms} == {"deploy"}
    exact = "deploy" + space * (MAX_QUERY_CHARS - 20) + "tag:production" + " x" * 9
    assert parse(exact).tags == ("production",)  # the limit between two words: none is cut


def test_the_shown_query_reads_only_its_first_words() -> None:
    """The query a reply repeats (MCP search and recall, the recall block) splits only the
    words it shows: a query an MCP client sent of 50 MB was split whole (0.6 s, 550 MB)."""
    import tracemalloc

    query = "deploy cache " * 400_000  # 5.2 MB
    tracemalloc.start()
    try:
        shown = shown_query(query)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shown == ("deploy cache " * 16)[:200] + "…"
    assert peak < 100_000, peak
    for text, limit in (("  a \t b\u3000c\x1c d ", 200), ("alpha  beta", 7), ("", 5), ("ab cd", 5)):
        line = " ".join(text.split())
        assert shown_query(text, limit) == (line if len(line) <= limit else line[:limit] + "…")
