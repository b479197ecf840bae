"""Ranked bilingual search, as a user of `memctl search` sees it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli, run_memctl
from conftest import write_memory_file as write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.index import fuzzy
from memctl.index.search import search


def note(root: Path, note_id: str, body: str, project: str = "demo", **meta: object) -> Path:
    meta.setdefault("type", "fact")
    meta.setdefault("updated", "2026-11-29T00:00:00.000Z")
    return write(root, f"{project}/notes/{meta['type']}/{note_id}.md", body, id=note_id,
                 project=project, **meta)


def hit_ids(cli: Cli, *args: str, env: dict[str, str] | None = None) -> list[str]:
    return [hit["id"] for hit in cli.ok("search", *args, "--json", env=env).json()]


NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


@pytest.fixture
def store(store_path: Path) -> Path:
    note(store_path, "pg00000000000001",
         "The blog backend uses PostgreSQL 16; no ORM, queries go through Kysely.",
         type="decision", importance=8, tags=["database", "postgres"])
    note(store_path, "zh00000000000001", "我们的数据库连接池配置在这里，分布式缓存层也很重要。",
         tags=["数据库"])
    note(store_path, "mx00000000000001", "PostgreSQL连接池 设置为 20，登录超时设为 30s。")
    note(store_path, "en00000000000001", "Running the migrations before deploying avoids downtime.",
         type="rule")
    note(store_path, "gl00000000000001", "Prefer tabs over spaces in every project.",
         project="global", type="preference")
    note(store_path, "ot00000000000001", "The other project also uses PostgreSQL and Kysely.",
         project="other")
    return store_path


@pytest.mark.parametrize(("query", "expected"), [
    ("数据库", {"zh00000000000001"}),
    ("连接池", {"zh00000000000001", "mx00000000000001"}),
    ("缓存", {"zh00000000000001"}),  # two characters inside 分布式缓存层
    ("登录超时", {"mx00000000000001"}),
    ("池配", {"zh00000000000001"}),  # any substring, no dictionary
    ("postgresql", {"pg00000000000001", "mx00000000000001"}),
    ("migration", {"en00000000000001"}),  # stem: migrations
    ("deploy", {"en00000000000001"}),  # stem: deploying
    ("run", {"en00000000000001"}),  # stem: running
    ("kyse*", {"pg00000000000001"}),  # prefix
    ("tab*", {"gl00000000000001"}),  # the global scope is searched too
    ('"no ORM"', {"pg00000000000001"}),
    ("kysely OR 缓存", {"pg00000000000001", "zh00000000000001"}),
    ("连接池 -postgresql", {"zh00000000000001"}),
    ("tag:postgres", {"pg00000000000001"}),
    ("type:rule", {"en00000000000001"}),
    ("tag:数据库 缓存", {"zh00000000000001"}),
])
def test_bilingual_queries(cli: Cli, store: Path, query: str, expected: set) -> None:
    assert set(hit_ids(cli, query)) == expected


@pytest.mark.parametrize("query", [
    '"unbalanced', "c++", "foo-bar", "e-mail", "(postgres", "postgres)", "((a OR b", "AND",
    "OR", "NOT", "NEAR", "a AND", "NEAR(a b)", "*", "-", "--", "postgres*)", "🚀", "🚀 deploy",
    "title:x", "col:x", "^start", "a:b:c", "'single'", "x\\y", "中文\"引号", "x" * 10_000,
    "word " * 2_000, "数据" * 2_000, "tag:", "type:", "TypeError: unknown type: int",
    "what does the tag: field do", '""', '"" *', "\u200b",
])
def test_hostile_queries_give_results_or_nothing_never_a_crash(cli: Cli, store: Path,
                                                               query: str) -> None:
    result = cli("search", "--json", "--", query)
    assert result.exit_code == 0, result.stderr
    assert isinstance(result.json(), list)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("query", ["tag:#", "type:#", "redis tag:# cache"])
def test_a_filter_naming_nothing_is_a_one_line_usage_error(cli: Cli, store: Path,
                                                          query: str) -> None:
    result = cli("search", "--json", "--", query)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.error.count("\n") == 1
    assert "names no" in result.stderr and "Traceback" not in result.stderr


def test_a_tag_option_ignores_a_leading_hash_as_the_tag_filter_of_a_query_does(
        cli: Cli, store: Path) -> None:
    # `tag:#postgres` in a query is `postgres` (docs/search.md); `--tag '#postgres'` of
    # search and list found nothing, and so did the tag as `add --tags '#deploy'` wrote it.
    assert hit_ids(cli, "blog", "--tag", "#postgres") == ["pg00000000000001"]
    assert hit_ids(cli, "blog", "--tag", " #Postgres ") == ["pg00000000000001"]
    assert hit_ids(cli, "blog tag:#postgres") == ["pg00000000000001"]
    listed = cli.ok("list", "--tag", "#postgres", "--json").json()
    assert [n["id"] for n in listed] == ["pg00000000000001"]
    made = cli.ok("add", "The deploy runs on Fridays", "--tags", "#deploy", "--json").json()
    assert [n["id"] for n in cli.ok("list", "--tag", "#deploy", "--json").json()] == [made["id"]]
    assert [n["id"] for n in cli.ok("list", "--tag", "deploy", "--json").json()] == [made["id"]]


def test_and_or_beside_a_filter_are_operators_not_words(cli: Cli, store: Path) -> None:
    """`tag:database AND type:decision` looked for the word `AND` and found nothing, where
    `tag:database type:decision` found the note (docs/search.md: `AND` changes nothing), and
    `type:decision OR type:rule` found nothing at all."""
    both = hit_ids(cli, "tag:database type:decision")
    assert both == ["pg00000000000001"]
    assert hit_ids(cli, "tag:database AND type:decision") == both
    assert hit_ids(cli, "PostgreSQL AND tag:postgres") == hit_ids(cli, "PostgreSQL tag:postgres")
    assert set(hit_ids(cli, "type:decision OR type:rule")) \
        == {"pg00000000000001", "en00000000000001"}
    # Tags are all needed, one of those joined by OR.
    assert hit_ids(cli, "tag:database tag:数据库") == []
    assert set(hit_ids(cli, "tag:database OR tag:#数据库")) \
        == {"pg00000000000001", "zh00000000000001"}
    assert hit_ids(cli, "tag:database OR tag:数据库 连接池") == ["zh00000000000001"]


def test_a_quoted_phrase_is_required_and_is_a_unit_of_its_own(cli: Cli, store_path: Path) -> None:
    """docs/search.md: a quoted phrase is required in every hit, and a note is found when it
    matches any unit and every phrase. `"connection pool" kafka` (no note says kafka) found
    no note with the phrase and fell to the fallback, which listed a note without it; and
    `"pool connection"` was taken for a misspelt `connection` and listed notes without it."""
    pool = "cp00000000000001"
    note(store_path, pool, "The connection pool timeout is 30 seconds.")
    note(store_path, "cn00000000000001", "A connection to the database needs TLS.")
    assert hit_ids(cli, '"connection pool" kafka') == [pool]
    result = cli.ok("search", '"pool connection"', "--json")
    assert result.json() == [] and "close ones" not in result.stderr
    assert hit_ids(cli, '"connection pool" timeout') == [pool]
    assert set(hit_ids(cli, "connection")) == {pool, "cn00000000000001"}


def test_full_width_letters_and_digits_are_the_ascii_ones(cli: Cli, store: Path) -> None:
    """An input method in its full-width mode types `ｐｏｓｔｇｒｅｓｑｌ`, `１６`: they found
    nothing, where the dates' full-width digits were already read as ASCII (docs/search.md)."""
    assert hit_ids(cli, "ＰｏｓｔｇｒｅＳＱＬ") == hit_ids(cli, "postgresql") != []
    assert hit_ids(cli, "ｋｙｓｅｌｙ １６") == hit_ids(cli, "kysely 16") != []
    assert hit_ids(cli, "ＰｏｓｔｇｒｅＳＱＬ连接池") == hit_ids(cli, "PostgreSQL连接池")


def test_a_note_written_in_full_width_is_found_by_either_width(cli: Cli,
                                                                store_path: Path) -> None:
    """Read as ASCII in queries alone, full-width letters and digits in a note were found by
    no query (`５４３３`, `ｐｏｓｔｇｒｅｓ` typed in full-width mode): the index reads them
    as ASCII too, so either width finds either."""
    note(store_path, "fw00000000000001", "测试库的端口是５４３３，用户名 ｐｏｓｔｇｒｅｓ")
    note(store_path, "fw00000000000002", "Redis 端口 6379")
    for query in ("５４３３", "5433", "ｐｏｓｔｇｒｅｓ", "postgres", "端口是５４３３", "端口是5433"):
        assert hit_ids(cli, query)[:1] == ["fw00000000000001"], query


def test_a_tag_written_in_full_width_is_found_by_either_width(cli: Cli, store_path: Path) -> None:
    """A query's filters are read as ASCII: a note tagged `ｏｐｓ` (kept as written) was
    found by `list --tag ｏｐｓ` and by no `tag:` in a search. Tags are kept as ASCII too."""
    note(store_path, "fw00000000000003", "The replica listens on port 5433.", tags=["ｏｐｓ"])
    for query in ("tag:ｏｐｓ replica", "tag:ops replica", "tag:OPS replica"):
        assert hit_ids(cli, query) == ["fw00000000000003"], query
    for tag in ("ｏｐｓ", "ops"):
        listed = cli.ok("list", "--tag", tag, "--json").json()
        assert [entry["id"] for entry in listed] == ["fw00000000000003"], tag


def test_a_phrase_one_side_of_an_or_is_not_required_in_the_fuzzy_fallback(
        cli: Cli, store_path: Path) -> None:
    """`"pool connection" OR kafak`: either side will do. The fallback required every quoted
    phrase, this one too, so the close words of `kafak` found nothing where they found the
    Kafka note before (a phrase alone stays required: the test above)."""
    kafka = "kf00000000000001"
    note(store_path, kafka, "Kafka consumer lag alerts at 1000 messages.")
    note(store_path, "cp00000000000001", "The connection pool timeout is 30 seconds.")
    result = cli.ok("search", '"pool connection" OR kafak', "--json")
    assert kafka in [hit["id"] for hit in result.json()]
    assert hit_ids(cli, '"pool connection" kafak') == []


def test_an_empty_tag_filters_nothing_in_search_as_in_list(cli: Cli, store: Path) -> None:
    """`search --tag ""` found nothing where `list --tag ""` listed every note."""
    everything = hit_ids(cli, "postgres")
    assert everything and hit_ids(cli, "postgres", "--tag", "") == everything
    assert hit_ids(cli, "postgres", "--tag", " # ") == everything
    assert len(cli.ok("list", "--tag", "", "--json").json()) \
        == len(cli.ok("list", "--json").json())


def test_bad_usage_exits_2_with_a_message(cli: Cli, store: Path) -> None:
    for args, word in ((["search", ""], "empty"), (["search", "   "], "empty"),
                       (["search", "x", "--type", "banana"], "--type"),
                       (["search", "type:banana"], "banana"),
                       (["search", "x", "--limit", "0"], "--limit"),
                       (["search", "x", "--since", "yesterday-ish"], "--since")):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert word in result.stderr


def test_json_hits_have_the_documented_fields(cli: Cli, store: Path) -> None:
    hits = cli.ok("search", "postgresql", "--json").json()
    assert hits and hits[0]["id"] == "pg00000000000001"
    for hit in hits:
        assert {"id", "path", "project", "type", "importance", "status", "score",
                "snippet"} <= set(hit)
        assert not hit["path"].startswith("/") and "\\" not in hit["path"]
    assert hits[0]["score"] >= hits[-1]["score"]
    assert "**PostgreSQL**" in hits[0]["snippet"]


def test_snippets_are_cut_from_the_original_text(cli: Cli, store: Path) -> None:
    [hit] = cli.ok("search", "缓存", "--json").json()
    assert "**缓存**" in hit["snippet"]
    assert hit["snippet"].replace("**", "") in "我们的数据库连接池配置在这里，分布式缓存层也很重要。"


def test_scope_is_the_project_plus_global_by_default(cli: Cli, store: Path) -> None:
    assert set(hit_ids(cli, "kysely")) == {"pg00000000000001"}
    assert set(hit_ids(cli, "kysely", "--all-projects")) == {"pg00000000000001",
                                                              "ot00000000000001"}
    assert set(hit_ids(cli, "kysely", "--project", "other")) == {"ot00000000000001"}
    assert set(hit_ids(cli, "tabs", "--project", "other")) == {"gl00000000000001"}


def test_stale_notes_only_on_request(cli: Cli, store: Path) -> None:
    note(store, "old0000000000001", "Deploy with capistrano.", status="superseded",
         superseded_by="new0000000000001")
    note(store, "exp0000000000001", "Deploy freeze until the audit.", expires="2026-11-01")
    write(store, "demo/archive/fact/arc.md", "Deploy from the old jenkins box.")
    note(store, "new0000000000001", "Deploy with kamal.")
    assert set(hit_ids(cli, "deploy", env=NOW)) == {"new0000000000001", "en00000000000001"}
    stale = cli.ok("search", "deploy", "--include-stale", "--json", env=NOW).json()
    assert {h["id"] for h in stale} >= {"old0000000000001", "exp0000000000001",
                                        "new0000000000001"}
    assert {h["status"] for h in stale if h["path"].startswith("demo/archive/")} == {"archived"}


def test_include_stale_labels_expired_hits_too(cli: Cli, store: Path) -> None:
    note(store, "old0000000000001", "Freeze deploys with capistrano.", status="superseded",
         superseded_by="new0000000000001")
    note(store, "exp0000000000001", "Freeze deploys until the audit.", expires="2026-11-01")
    hits = {h["id"]: h for h in cli.ok("search", "freeze", "--include-stale", "--json",
                                        env=NOW).json()}
    assert hits["exp0000000000001"]["expired"] is True
    assert hits["old0000000000001"]["expired"] is False
    assert hits["old0000000000001"]["status"] == "superseded"
    table = cli.ok("search", "freeze", "--include-stale", env={**NOW, "COLUMNS": "200"}).stdout
    [expired_line] = [line for line in table.splitlines() if "exp0000000000001" in line]
    assert "[expired]" in expired_line
    [superseded_line] = [line for line in table.splitlines() if "old0000000000001" in line]
    assert "[superseded]" in superseded_line and "[expired]" not in superseded_line


def test_when_only_stale_notes_match_the_search_says_how_many(cli: Cli, store: Path) -> None:
    note(store, "old0000000000001", "Freeze deploys with capistrano.", status="superseded",
         superseded_by="new0000000000001")
    note(store, "exp0000000000001", "Freeze deploys until the audit.", expires="2026-11-01")
    write(store, "demo/archive/fact/arc.md", "Freeze the jenkins box.")
    said = "no matches among live notes; 3 stale matches (superseded, archived or expired): " \
           "--include-stale shows them"
    text = cli.ok("search", "freeze", env=NOW)
    assert text.stdout == "" and text.stderr.strip() == said
    data = cli.ok("search", "freeze", "--json", env=NOW)
    assert data.json() == [] and data.stderr.strip() == said
    one = cli.ok("search", "freeze", "--limit", "1", env=NOW)  # as many as it would show
    assert "1 stale match (" in one.stderr
    assert one.stderr.strip().endswith("--include-stale shows it")  # one match is not "them"
    nothing = cli.ok("search", "qqqqzzzz", "--json", env=NOW)
    assert nothing.json() == [] and nothing.stderr == ""


def test_when_only_other_projects_match_the_search_says_so(cli: Cli, store: Path) -> None:
    """An agent started in another folder than it thought searches another project: the
    search says where the matches are instead of a bare `no matches`."""
    note(store, "zp00000000000001", "The zeppelin hangar opens at dawn.", project="other")
    note(store, "zp00000000000002", "A zeppelin crew rota lives in the wiki.", project="third")
    said = ("no matches in project demo or global; 2 matches in other projects: "
            "--all-projects shows them")
    text = cli.ok("search", "zeppelin", env=NOW)
    assert text.stdout == "" and text.stderr.strip() == said
    data = cli.ok("search", "zeppelin", "--json", env=NOW)
    assert data.json() == [] and data.stderr.strip() == said
    one = cli.ok("search", "zeppelin", "--limit", "1", env=NOW)  # as many as it would show
    assert one.stderr.strip().endswith("1 match in other projects: --all-projects shows it")
    assert hit_ids(cli, "zeppelin", "--all-projects", env=NOW) == [
        "zp00000000000001", "zp00000000000002"]
    # Stale matches here and live ones elsewhere: both said, in one line.
    note(store, "zp00000000000003", "The zeppelin was sold.", status="superseded",
         superseded_by="zp00000000000001")
    both = cli.ok("search", "zeppelin", env=NOW)
    assert both.stderr.strip() == (
        "no matches among live notes in project demo or global; 1 stale match (superseded, "
        "archived or expired): --include-stale shows it; 2 matches in other projects: "
        "--all-projects shows them")
    # The wider search asks what the scoped one asked: without the word naming the project
    # (a rare word that only this project's notes hold pushed the others below the floor).
    note(store, "dm00000000000001", "The demo runs on Fridays.")
    named = cli.ok("search", "demo zeppelin", env=NOW)
    assert "2 matches in other projects" in named.stderr
    assert cli.ok("search", "qqqqzzzz", "--json", env=NOW).stderr == ""
    # From global, the scope is global alone.
    from_global = cli.ok("search", "zeppelin", "-p", "global", env=NOW)
    assert from_global.stderr.strip() == ("no matches in global; 2 matches in other projects: "
                                          "--all-projects shows them")


def test_the_count_of_other_projects_leaves_out_the_words_naming_this_one(
        cli: Cli, store: Path) -> None:
    note(store, "al00000000000001", "Alpha release checklist: tag alpha builds.", project="alpha")
    for number in range(12):
        note(store, f"rd{number:014d}", f"Redis cache {number} holds sessions.",
             project=f"p{number:02d}")
    said = cli.ok("search", "alpha redis", "-p", "alpha", env=NOW)
    assert said.stderr.strip() == ("no matches in project alpha or global; 12 matches in other "
                                   "projects: --all-projects shows them")


def test_filters(cli: Cli, store: Path) -> None:
    note(store, "rl00000000000001", "Postgres backups run nightly.", type="rule",
         tags=["ops"], updated="2026-01-01T00:00:00Z")
    assert hit_ids(cli, "postgres*", "--type", "rule") == ["rl00000000000001"]
    assert hit_ids(cli, "postgres*", "--tag", "OPS") == ["rl00000000000001"]
    assert "rl00000000000001" not in hit_ids(cli, "postgres*", "--since", "2026-06-01")
    assert len(hit_ids(cli, "postgres*", "--limit", "1")) == 1


def test_importance_and_recency_rank(cli: Cli, store: Path) -> None:
    body = "Rotate the signing keys every quarter."
    note(store, "lo00000000000001", body, importance=2)
    note(store, "hi00000000000001", body, importance=9)
    note(store, "ol00000000000001", body, importance=9, updated="2026-06-01T00:00:00Z")
    assert hit_ids(cli, "signing keys", env=NOW) == [
        "hi00000000000001", "ol00000000000001", "lo00000000000001"]
    explained = cli.ok("search", "signing", "--explain", "--json", env=NOW).json()
    factors = {h["id"]: h["explain"] for h in explained}
    assert factors["hi00000000000001"]["importance_factor"] == 1.4
    assert factors["ol00000000000001"]["recency_factor"] < factors["hi00000000000001"][
        "recency_factor"]
    assert all(h["explain"]["bm25"] > 0 for h in explained)


def test_a_correction_ranks_ahead_of_what_it_corrects(cli: Cli, store: Path) -> None:
    note(store, "wr00000000000001", "The staging database port is 5432, port 5432, port.",
         importance=9)
    note(store, "co00000000000001", "Wrong: staging uses 6432 (pgbouncer).",
         type="correction", corrects="wr00000000000001", importance=3)
    hits = cli.ok("search", "port", "--json", "--explain").json()
    order = [h["id"] for h in hits]
    assert order.index("co00000000000001") < order.index("wr00000000000001")
    assert hits[0]["explain"]["placed_ahead_of"] == ["wr00000000000001"]


def test_fuzzy_fallback_when_nothing_matches(cli: Cli, store: Path) -> None:
    result = cli.ok("search", "postgress", "--json")
    hits = result.json()
    assert hits and hits[0]["id"] == "pg00000000000001" and hits[0]["fuzzy"] is True
    assert hit_ids(cli, "qqqqzzzz") == []
    human = cli.ok("search", "kysley")
    assert "close" in human.stderr and "pg00000000000001" in human.stdout


def test_an_excluded_word_holds_for_close_matches_too(cli: Cli, store_path: Path) -> None:
    """`postgres -mysql` found nothing as typed, and the fallback's close words of
    `postgres` brought back the very note `-mysql` leaves out."""
    note(store_path, "my00000000000001", "We use PostgreSQL instead of MySQL here.")
    for query in ("postgres -mysql", "postgress -mysql", "postgres NOT mysql"):
        assert hit_ids(cli, query, env=NOW) == [], query
    note(store_path, "bk00000000000001", "PostgreSQL backups run nightly.")
    for query in ("postgres -mysql", "postgress -mysql"):
        hits = cli.ok("search", query, "--json", env=NOW).json()
        assert [hit["id"] for hit in hits] == ["bk00000000000001"], query
        # `postgres` begins PostgreSQL; `postgress` is a misspelling of it.
        assert hits[0]["fuzzy"] is (query == "postgress -mysql")


_LOADS_RAPIDFUZZ = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('rapidfuzz' in sys.modules, file=sys.stderr))\n"
    "sys.argv = ['memctl', *sys.argv[1:]]\n"
    "from memctl.cli import main\n"
    "main()\n")


def test_a_search_nothing_is_close_to_ends_without_loading_rapidfuzz(store: Path) -> None:
    """A word no word of the vocabulary could be close to (`fuzzy.reachable`) ends the fuzzy
    fallback before rapidfuzz is imported, so a miss costs no more start-up than a hit
    (bench/bench_search.py `miss`); a misspelling still loads it and finds its note."""
    env = {**os.environ, "MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo"}

    def run(query: str) -> tuple[bool, list[dict[str, object]]]:
        done = subprocess.run([sys.executable, "-c", _LOADS_RAPIDFUZZ, "search", query,
                               "--json"], env=env, capture_output=True, text=True, check=True)
        return done.stderr.strip().splitlines()[-1] == "True", json.loads(done.stdout)

    assert run("zqxwvy") == (False, [])
    loaded, hits = run("postgress")
    assert loaded and hits[0]["id"] == "pg00000000000001" and hits[0]["fuzzy"] is True


_LETTERS = st.text("abcdeilnorstz", min_size=1, max_size=14)


@settings(max_examples=400, deadline=None)
@given(word=st.text("abcdeilnorstz", min_size=4, max_size=14), vocab=st.lists(_LETTERS, max_size=40))
def test_the_words_within_reach_hold_every_word_rapidfuzz_finds_close(
        word: str, vocab: list[str]) -> None:
    """The bound `fuzzy.reachable` filters by never drops a word `fuzz.ratio` puts at or
    above the cutoff, and keeps the vocabulary's order: the close words are the same as
    when every word was compared."""
    from rapidfuzz import fuzz

    kept = fuzzy.reachable(word, vocab)
    assert kept == [other for other in vocab if other in set(kept)]
    for other in vocab:
        if fuzz.ratio(word, other) >= fuzzy.SCORE_CUTOFF:
            assert other in kept, (word, other)


def test_a_bare_word_also_finds_the_words_it_begins_ranked_below(cli: Cli, store: Path) -> None:
    note(store, "mg00000000000001", "The migr script is retired.")
    note(store, "k800000000000000", "The cluster runs Kubernetes 1.31 on three nodes.")
    # `migr` begins `migrations` (en…): found, below the note that has the word itself.
    assert hit_ids(cli, "migr") == ["mg00000000000001", "en00000000000001"]
    [hit] = cli.ok("search", "kube", "--json", "--explain").json()
    assert hit["id"] == "k800000000000000" and hit["explain"]["matched"] == ["kube…"]
    assert hit["coverage"] == 0.5 and not hit["exact"] and not hit["fuzzy"]
    assert "**Kubernetes**" in hit["snippet"]
    # With another word: the note with both ranks first, the one with a beginning only next.
    assert hit_ids(cli, "migr script") == ["mg00000000000001"]
    assert hit_ids(cli, "kube nodes cluster")[0] == "k800000000000000"


def test_beginnings_leave_the_explicit_syntax_as_it_was(cli: Cli, store: Path) -> None:
    note(store, "k800000000000000", "The cluster runs Kubernetes 1.31 on three nodes.")
    assert hit_ids(cli, '"kube"') == []  # a quoted phrase is the word as typed
    assert hit_ids(cli, "kube*") == ["k800000000000000"]
    assert hit_ids(cli, "cluster -kube") == ["k800000000000000"]  # -x leaves out x only
    assert hit_ids(cli, "kube OR qqqq") == []  # an OR group: its words as typed
    assert hit_ids(cli, "tag:post") == []  # a tag is matched whole
    assert hit_ids(cli, "kub") == []  # under four characters: no beginnings
    # A word the stemmer shortens is a whole word: `running` is not `run*` (runtime).
    note(store, "rt00000000000001", "The runtime is Node 22.")
    assert "rt00000000000001" not in hit_ids(cli, "running")


def test_a_word_the_stemmer_cuts_a_short_ending_off_finds_the_words_it_begins(
        cli: Cli, store: Path) -> None:
    """`postgres` (stem `postgr`) found the PostgreSQL note only as a misspelling, "no exact
    matches; showing close ones": the README's own first search. A word the stemmer only
    cut a short ending off begins words too; one it cut an inflection off does not."""
    note(store, "pq00000000000001", "The blog database is PostgreSQL 16.")
    note(store, "au00000000000001", "The runbook was authored by the platform team.")
    note(store, "li00000000000001", "The listener of the queue restarts on failure.")
    hits = cli.ok("search", "postgres", "--json", "--explain").json()
    hit = next(hit for hit in hits if hit["id"] == "pq00000000000001")
    assert not any(hit["fuzzy"] for hit in hits)
    assert hit["explain"]["matched"] == ["postgres…"]
    said = cli.ok("search", "postgres")
    assert "no exact matches" not in said.stderr
    # `authorization` → author…, `listening` → listen…: inflections, not beginnings (what
    # the misspelling search makes of them is its own matter: never a beginning).
    for word in ("authorization", "listening"):
        for hit in cli.ok("search", word, "--json", "--explain").json():
            assert f"{word}…" not in hit["explain"]["matched"], (word, hit)


def test_search_records_access_counters(cli: Cli, store: Path) -> None:
    cli.ok("search", "kysely", env=NOW)
    cli.ok("search", "kysely", "--json", env=NOW)
    shown = cli.ok("show", "pg00000000000001", "--json").json()
    assert shown["access_count"] == 2 and shown["last_accessed"].startswith("2026-11-30T12:00")


def test_human_output_and_no_matches(cli: Cli, store: Path) -> None:
    result = cli.ok("search", "kysely", "--explain")
    assert "pg00000000000001" in result.stdout and "bm25" in result.stdout
    nothing = cli.ok("search", "zzzzqqqq")
    assert nothing.stdout == "" and "no matches" in nothing.stderr


def test_unparsable_file_is_named_on_stderr(cli: Cli, store: Path) -> None:
    (store / "demo/notes/bad.md").write_text("---\ntags: [x\n---\nbody\n")
    result = cli.ok("search", "kysely")
    assert re.search(r"warning: demo/notes/bad\.md:\d+: ", result.stderr)


def test_reindex_rebuilds_with_a_summary(cli: Cli, store: Path) -> None:
    report = cli.ok("reindex", "--json").json()
    assert report["note"] == 6 and report["errors"] == []
    (store / "demo/notes/bad.md").write_text("---\ntags: [x\n---\nbody\n")
    result = cli.ok("reindex")
    assert "indexed 6 notes" in result.stderr and "demo/notes/bad.md" in result.stderr
    assert hit_ids(cli, "kysely") == ["pg00000000000001"]


def test_installed_memctl_end_to_end(store: Path) -> None:
    result = run_memctl("search", "连接池", "--json", store=store, project="demo")
    assert result.exit_code == 0, result.stderr
    assert {h["id"] for h in result.json()} == {"zh00000000000001", "mx00000000000001"}
    (store / "demo/notes/fact/zh00000000000001.md").unlink()
    again = run_memctl("search", "连接池", "--json", store=store, project="demo")
    assert [h["id"] for h in again.json()] == ["mx00000000000001"]
    bad = run_memctl("search", "", store=store, project="demo")
    assert bad.exit_code == 2 and bad.stderr.startswith("error:")
    rebuilt = run_memctl("reindex", store=store, project="demo")
    assert rebuilt.exit_code == 0 and rebuilt.stdout == ""


# --- property: search agrees with a brute-force scan of the files --------------------------

WORDS = ["alpha", "bravo", "delta", "kilo", "lima", "tango", "zulu", "oscar"]
HANZI = list("数据库连接池缓存")
PROJECTS = ["demo", "global", "other"]
# What FTS5 sees: lowercase words and single CJK characters (the words above are their own
# Porter stems); a query matches a run of consecutive tokens, whatever separates them.
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def _body(draw_words: list[str]) -> str:
    return " ".join(draw_words)


note_st = st.tuples(
    st.sampled_from(PROJECTS),
    st.lists(st.sampled_from(WORDS + HANZI + ["".join(HANZI[:3]), "alpha数据"]), min_size=1,
             max_size=6),
    st.lists(st.sampled_from(WORDS), max_size=2),
)
edit_st = st.tuples(st.sampled_from(["edit", "delete", "move", "add"]), st.integers(0, 20), note_st)


def _matches(text: str, tags: list[str], query: str) -> bool:
    tokens, wanted = _TOKEN.findall(text.lower()), _TOKEN.findall(query)
    size = len(wanted)
    found = any(tokens[i:i + size] == wanted for i in range(len(tokens) - size + 1))
    return found or query in tags


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(note_st, min_size=1, max_size=6), st.lists(edit_st, max_size=6))
def test_search_equals_a_brute_force_scan(tmp_path_factory: pytest.TempPathFactory,
                                          notes: list, edits: list) -> None:
    root = tmp_path_factory.mktemp("prop")
    (root / "memctl.toml").write_text("")
    live: dict[str, tuple[Path, str, str, list[str]]] = {}
    counter = 0

    def put(spec: tuple, path: Path | None = None, note_id: str | None = None) -> None:
        nonlocal counter
        project, words, tags = spec
        counter += 1
        note_id = note_id or f"n{counter:015d}"
        if path is None or not path.parent.name:
            path = root / project / "notes" / f"{note_id}.md"
        project = path.relative_to(root).parts[0]
        text = _body(words)
        write(root, path.relative_to(root).as_posix(), text, id=note_id, project=project,
              tags=tags)
        live[note_id] = (path, project, text, tags)

    for spec in notes:
        put(spec)
    check(root, live)
    for action, pick, spec in edits:
        keys = sorted(live)
        if action == "add" or not keys:
            put(spec)
        else:
            note_id = keys[pick % len(keys)]
            path, project, _, _ = live[note_id]
            if action == "edit":
                put((project, spec[1], spec[2]), path, note_id)
            elif action == "delete":
                path.unlink()
                del live[note_id]
            else:
                target = root / spec[0] / "moved" / f"{note_id}.md"
                if target.exists():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)
                put((spec[0], live[note_id][2].split(), live[note_id][3]), target, note_id)
        check(root, live)


def check(root: Path, live: dict) -> None:
    for query in WORDS[:4] + ["数据", "缓存", "连接池"]:
        expected = {note_id for note_id, (_, project, text, tags) in live.items()
                    if project in ("demo", "global") and _matches(text, tags, query)}
        found = search(root, query, project="demo", limit=100)
        hits = [h for h in found if not h.fuzzy and h.exact]  # every word as typed
        assert {h.id for h in hits} == expected, query
        assert len(hits) == len(expected)  # no duplicates, no phantoms
        assert len({h.id for h in found}) == len(found)


# --- a search of one project still walks the whole store (docs/search.md, "Never stale") ----


def test_a_note_moved_by_hand_into_another_project_s_folder_is_searched_as_it_is_now(
        store: Path) -> None:
    """A note's project is its front matter's `project:`, whatever folder holds it: a search
    of that project must see the file wherever it is, edited or deleted there."""
    assert run_memctl("search", "Kysely", "--all-projects", store=store).exit_code == 0
    moved = store / "other" / "notes" / "fact" / "pg00000000000001.md"
    (store / "demo" / "notes" / "decision" / "pg00000000000001.md").rename(moved)
    found = run_memctl("search", "Kysely", "--json", store=store, project="demo")
    assert "pg00000000000001" in [hit["id"] for hit in json.loads(found.stdout)], found.stderr
    moved.write_text(moved.read_text().replace("Kysely", "Prisma"))
    assert "pg00000000000001" not in [hit["id"] for hit in json.loads(run_memctl(
        "search", "Kysely", "--json", store=store, project="demo").stdout)]
    assert "pg00000000000001" in [hit["id"] for hit in json.loads(run_memctl(
        "search", "Prisma", "--json", store=store, project="demo").stdout)]
    moved.unlink()
    assert "pg00000000000001" not in [hit["id"] for hit in json.loads(run_memctl(
        "search", "Prisma", "--json", store=store, project="demo").stdout)]


def test_the_ranking_of_a_search_of_one_project_never_depends_on_what_was_walked_before(
        store_path: Path) -> None:
    """bm25 weighs a word by how many entries of the whole index hold it: files of other
    projects deleted by hand change a search of this one as soon as they are gone."""
    for name, word in (("a", "alpha"), ("b", "beta")):
        write(store_path, f"demo/notes/fact/{name}.md", f"Harbour notes about {word}")
    for number in range(30):
        write(store_path, f"other/notes/fact/keep{number}.md", f"filler beta {number}")
    for number in range(60):
        write(store_path, f"other/notes/fact/gone{number}.md", f"filler alpha {number}")
    assert run_memctl("search", "filler", "--all-projects", store=store_path).exit_code == 0
    for number in range(60):
        (store_path / "other" / "notes" / "fact" / f"gone{number}.md").unlink()

    def order() -> list[str]:
        found = run_memctl("search", "alpha beta", "--json", store=store_path, project="demo")
        return [hit["path"] for hit in json.loads(found.stdout)]

    first = order()
    assert run_memctl("search", "filler", "--all-projects", store=store_path).exit_code == 0
    assert order() == first == ["demo/notes/fact/a.md", "demo/notes/fact/b.md"]


def test_a_search_that_made_the_index_anew_leaves_no_write_ahead_log(store: Path) -> None:
    """An index a search made anew (missing, here) was written in one transaction and its
    write-ahead log left behind: the search ended without closing the index, so the last
    close never checkpointed it, and every later search read through a log as big as the
    index (34 MB at 10k notes, ~6 ms a search) until another command closed it."""
    state = store / ".memctl"
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (state / name).unlink(missing_ok=True)
    found = run_memctl("search", "postgres", "--all-projects", "--json", store=store)
    assert found.exit_code == 0 and json.loads(found.stdout), found.stderr
    assert not (state / "index.sqlite-wal").exists()
    assert run_memctl("search", "kysely", "--json", store=store).exit_code == 0
    assert not (state / "index.sqlite-wal").exists()


def test_the_help_says_any_word_finds_a_note(cli: Cli, store: Path) -> None:
    """`search --help` said `Words (all must match)`, where a note with any of them is found
    (docs/search.md, "Best match"), and `pool kafka` finds the note saying only pool."""
    shown = " ".join(cli.ok("search", "--help").stdout.replace("│", " ").split())
    assert "all must match" not in shown and "all of them first" in shown


def test_two_subjects_in_a_query_are_either_as_two_types_are(cli: Cli, store_path: Path) -> None:
    """A note has one subject: `subject:api subject:blog` (or with `OR`) found nothing."""
    note(store_path, "sa00000000000001", "The API allows 100 requests a minute.",
         subject="api", predicate="rate-limit")
    note(store_path, "sb00000000000001", "The blog database is PostgreSQL.",
         subject="blog", predicate="database")
    both = {"sa00000000000001", "sb00000000000001"}
    assert set(hit_ids(cli, "subject:api OR subject:Blog")) == both
    assert set(hit_ids(cli, "subject:api subject:blog")) == both
    assert hit_ids(cli, "subject:blog predicate:database") == ["sb00000000000001"]
    assert hit_ids(cli, "subject:api predicate:database") == []


def test_a_subject_or_predicate_left_out_is_left_out(cli: Cli, store_path: Path) -> None:
    """`-subject:api` was an excluded phrase no note holds: it left out nothing, where
    `-tag:` and `-type:` leave notes out. Notes with no subject stay."""
    note(store_path, "sa00000000000001", "The API allows 100 requests a minute.",
         subject="api", predicate="rate-limit")
    note(store_path, "sb00000000000001", "The blog allows 20 comments a minute.",
         subject="blog", predicate="comment-limit")
    note(store_path, "sn00000000000001", "Nobody allows more than this a minute.")
    assert set(hit_ids(cli, "minute -subject:API")) == {"sb00000000000001",
                                                           "sn00000000000001"}
    assert set(hit_ids(cli, "minute -predicate:comment-limit")) == {"sa00000000000001",
                                                                       "sn00000000000001"}
    assert hit_ids(cli, "minute subject:blog -subject:blog") == []


def test_or_between_a_word_and_a_filter_is_bad_usage_not_and(cli: Cli, store: Path) -> None:
    """`pool OR tag:ops` was read as `pool tag:ops` (a filter always narrows), answering
    another question than the one asked, without a word: it is bad usage, naming both sides.
    Two filters of one kind stay either (`tag:a OR tag:b`)."""
    for query, sides in (("postgres OR tag:ops", "the word 'postgres' and a `tag:` filter"),
                         ("tag:database OR type:decision", "a `tag:` filter and a `type:` filter")):
        refused = cli("search", query)
        assert refused.exit_code == 2 and sides in refused.stderr, refused.stderr
        assert refused.stderr.startswith("error: `OR` joins two words")
    assert "pg00000000000001" in hit_ids(cli, "tag:database OR tag:nothing-such")
    assert "pg00000000000001" in hit_ids(cli, "postgres AND tag:database")


def test_several_groups_of_tags_each_need_one_of_theirs(cli: Cli, store_path: Path) -> None:
    """`tag:a OR tag:b tag:c OR tag:d`: a note with a tag of each group, however the groups
    share tags (one subquery answers all of them: tests/test_hostile_input.py)."""
    for note_id, tags in (("ga00000000000001", ["a", "c"]), ("gb00000000000001", ["b", "d"]),
                          ("gc00000000000001", ["a"]), ("gd00000000000001", ["d"]),
                          ("ge00000000000001", ["a", "b"]), ("gf00000000000001", ["b", "c", "x"])):
        note(store_path, note_id, "The gadget ships on Monday.", tags=tags)
    assert set(hit_ids(cli, "gadget tag:a OR tag:b tag:c OR tag:d")) == {
        "ga00000000000001", "gb00000000000001", "gf00000000000001"}
    assert set(hit_ids(cli, "gadget tag:a OR tag:b tag:a OR tag:c")) == {
        "ga00000000000001", "gc00000000000001", "ge00000000000001", "gf00000000000001"}
    assert set(hit_ids(cli, "gadget tag:a OR tag:b tag:c OR tag:d tag:x")) == {"gf00000000000001"}
    assert set(hit_ids(cli, "gadget tag:a OR tag:b -tag:c")) == {"gb00000000000001",
                                                                  "gc00000000000001",
                                                                  "ge00000000000001"}
