"""The write-time decision of `add`: merge, supersede, report similar, or just create."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import Cli, git, run_memctl, tree_snapshot
from conftest import write_memory_file as write
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memctl.core.note import Note
from memctl.core.noteformat import parse_text
from memctl.core.tokenize import from_index
from memctl.index.db import ensure_fresh
from memctl.index.nearwords import check_pool
from memctl.memory import notes as notes_module
from memctl.memory.checks import CREATED, MERGED, decide
from memctl.memory.notes import indexed_note
from memctl.store import Store

T0 = "2026-11-01T10:00:00.000Z"


def note(
    note_id: str, body: str, *, project: str = "blog", note_type: str = "fact",
    subject: str | None = None, predicate: str | None = None, status: str = "active",
    expires: str | None = None,
) -> Note:
    return Note(
        id=note_id, type=note_type, project=project, importance=5, tags=[], created=T0,
        updated=T0, status=status, body=body + "\n", path=f"{project}/notes/{note_id}.md",
        subject=subject, predicate=predicate, expires=expires,
    )


EXISTING = [
    note("pg", "The blog backend uses PostgreSQL 16; no ORM."),
    note("port", "use port 5432"),
    note("tabs", "以后都用中文回复用户的问题", project="global"),
    note("db", "Database: MySQL 8", subject="blog", predicate="database"),
    note("old", "The blog backend uses PostgreSQL 16, no ORM", status="superseded"),
]


def test_a_near_duplicate_is_merged_into_the_existing_note() -> None:
    got = decide("the blog backend uses PostgreSQL 16, no ORM", note_type="fact",
                 project="blog", existing=EXISTING)
    assert got.action == MERGED
    assert got.merged_into == "pg"  # never the superseded copy
    assert got.supersedes == [] and got.similar == []


def test_a_chinese_duplicate_of_a_global_note_is_merged_into_it() -> None:
    got = decide("以后都用中文回复用户问题", note_type="preference", project="blog",
                 existing=EXISTING)
    assert (got.action, got.merged_into) == (MERGED, "tabs")


def test_force_writes_anyway_and_reports_the_duplicate_as_similar() -> None:
    got = decide("The blog backend uses PostgreSQL 16; no ORM!", note_type="fact",
                 project="blog", existing=EXISTING, force=True)
    assert got.action == CREATED
    assert got.similar == ["pg"]


def test_a_changed_number_is_similar_not_merged() -> None:
    got = decide("use port 5433", note_type="fact", project="blog", existing=EXISTING)
    assert got.action == CREATED
    assert got.similar == ["port"]
    assert "number" in got.details["port"][1]


def test_same_subject_and_predicate_supersedes_in_the_same_scope() -> None:
    got = decide("The blog now runs on PostgreSQL", note_type="decision", project="blog",
                 subject="Blog", predicate="DATABASE", existing=EXISTING)
    assert got.action == CREATED
    assert got.supersedes == ["db"]
    other = decide("Use CockroachDB", note_type="decision", project="shop",
                   subject="blog", predicate="database", existing=EXISTING)
    assert other.supersedes == []  # another project's note is not retired


def test_a_correction_never_merges_into_what_it_corrects_and_never_retires_it() -> None:
    got = decide("use port 5432", note_type="correction", project="blog",
                 existing=EXISTING, corrects=["port"])
    assert got.action == CREATED
    assert got.supersedes == []  # the rest of what it said stays: docs/lifecycle.md
    assert got.similar == []
    keyed = decide("Database: PostgreSQL 16", note_type="correction", project="blog",
                   subject="blog", predicate="database", existing=EXISTING, corrects=["db"])
    assert keyed.supersedes == [] and keyed.similar == []


def test_a_duplicate_about_another_subject_is_not_merged() -> None:
    got = decide("Database: MySQL 8", note_type="fact", project="blog",
                 subject="shop", predicate="database", existing=EXISTING)
    assert got.action == CREATED


def test_a_keyed_duplicate_is_never_merged_into_a_note_without_its_key() -> None:
    pool = [note("keyed", "Application logs go to Elasticsearch", subject="logs",
                 predicate="sink"),
            note("plain", "Application logs are shipped to Loki now")]
    got = decide("Application logs are shipped to Loki now.", note_type="fact", project="blog",
                 subject="logs", predicate="sink", existing=pool)
    assert got.action == CREATED
    assert got.supersedes == ["keyed"] and got.similar == ["plain"]
    # without a key of its own, the new note still merges into the plain one
    plain = decide("Application logs are shipped to Loki now.", note_type="fact",
                   project="blog", existing=pool)
    assert (plain.action, plain.merged_into) == (MERGED, "plain")


def test_cli_a_keyed_add_that_repeats_a_plain_note_is_found_by_get(cli: Cli) -> None:
    old = cli.ok("add", "Application logs go to Elasticsearch", "--subject", "logs",
                 "--predicate", "sink", "--json").json()
    plain = cli.ok("add", "Application logs are shipped to Loki now", "--json").json()
    new = cli.ok("add", "Application logs are shipped to Loki now.", "--subject", "logs",
                 "--predicate", "sink", "--json").json()
    assert new["action"] == "created" and new["superseded"] == [old["id"]]
    assert new["similar"] == [plain["id"]]
    got = cli.ok("get", "logs", "sink", "--json").json()
    assert [fact["id"] for fact in got] == [new["id"]]


def test_expired_and_unrelated_notes_are_ignored() -> None:
    moment = datetime(2026, 11, 30, tzinfo=UTC)
    expired = [note("exp", "use port 5432", expires="2026-11-15")]
    got = decide("use port 5432", note_type="fact", project="blog", existing=expired,
                 moment=moment)
    assert (got.action, got.similar) == (CREATED, [])
    got = decide("Deploys need an approval", note_type="fact", project="blog",
                 existing=EXISTING)
    assert (got.action, got.supersedes, got.similar) == (CREATED, [], [])


def test_the_project_note_wins_over_a_global_duplicate() -> None:
    pool = [note("g", "Run ruff before pushing", project="global"),
            note("p", "Run ruff before pushing!", project="blog")]
    got = decide("run ruff before pushing", note_type="fact", project="blog", existing=pool)
    assert got.merged_into == "p"


# --- through the CLI: what a user sees --------------------------------------------------------

# What a merge must never lose (docs/lifecycle.md, "What a merge ignores"): any symbol but
# prose marks ending a word, and anything between backticks.
_SYMBOLS = "<>=/\\-_+*{}[]()@#$%^&|~\"?`"
_WORDS = st.lists(
    st.one_of(
        st.text("abcdefghijklmnopqrstuvwxyzABC0123456789", min_size=1, max_size=8),
        st.text("abcxyz01" + _SYMBOLS.replace("`", ""), min_size=1, max_size=8),
        st.sampled_from(["数据库", "使用", "缓存", "the", "worker", "retry", "must", "be"]),
    ),
    min_size=3, max_size=14,
)


def _merged(old: str, new: str) -> bool:
    got = decide(new, note_type="fact", project="blog", existing=[note("old", old)])
    return got.action == MERGED


@settings(max_examples=300, deadline=None)
@given(words=_WORDS, data=st.data())
def test_a_changed_symbol_is_never_merged_away(words: list[str], data: st.DataObject) -> None:
    old = " ".join(words)
    spots = [i for i, c in enumerate(old) if not c.isspace()]
    kind = data.draw(st.sampled_from(["insert", "replace", "delete", "prose mark inside a word"]))
    if kind == "insert":
        at = data.draw(st.integers(0, len(old)))
        new = old[:at] + data.draw(st.sampled_from(_SYMBOLS)) + old[at:]
    elif kind == "replace":
        at = data.draw(st.sampled_from(spots))
        char = data.draw(st.sampled_from(_SYMBOLS))
        assume(char != old[at])
        new = old[:at] + char + old[at + 1:]
    elif kind == "delete":
        symbols = [i for i in spots if old[i] in _SYMBOLS]
        assume(symbols)
        at = data.draw(st.sampled_from(symbols))
        new = old[:at] + old[at + 1:]
    else:  # `app.log` is not `applog`: a mark between letters or digits is no prose mark
        inside = [i for i in range(1, len(old)) if old[i - 1].isascii() and old[i - 1].isalnum()
                  and old[i].isascii() and old[i].isalnum()]
        assume(inside)
        at = data.draw(st.sampled_from(inside))
        new = old[:at] + data.draw(st.sampled_from(".,;:!")) + old[at:]
    assert not _merged(old, new), (old, new)
    assert not _merged(new, old), (new, old)


@settings(max_examples=300, deadline=None)
@given(before=_WORDS, code=_WORDS, after=_WORDS, data=st.data())
def test_changed_code_is_never_merged_away(before: list[str], code: list[str], after: list[str],
                                           data: st.DataObject) -> None:
    inner = " ".join(code).replace("`", "")
    old = f"{' '.join(before)} `{inner}` {' '.join(after)}"
    start = len(" ".join(before)) + 2
    at = data.draw(st.sampled_from([start + i for i, c in enumerate(inner) if not c.isspace()]))
    char = data.draw(st.one_of(st.just(old[at].swapcase()), st.sampled_from(_SYMBOLS + ".,;:!ab1")))
    assume(char != old[at])
    new = old[:at] + char + old[at + 1:]
    assert not _merged(old, new), (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("The retry check in the worker must be `attempts >= 5` before giving up",
     "The retry check in the worker must be `attempts <= 5` before giving up"),
    ("The cache key format is post:{slug}:v{version} in redis",
     "The cache key format is post:{slug}-v{version} in redis"),
    ("The service writes its log lines to app.log in the data folder",
     "The service writes its log lines to app_log in the data folder"),
    ("The uploads are kept under /data on the build machine",
     "The uploads are kept under /data/ on the build machine"),
])
def test_add_keeps_both_texts_when_a_symbol_differs(store_path: Path, old: str, new: str) -> None:
    first = run_memctl("add", old, "--json", store=store_path)
    second = run_memctl("add", new, "--json", store=store_path)
    assert first.exit_code == 0 and second.exit_code == 0, second.stderr
    said = json.loads(second.stdout)
    assert said["action"] == "created" and said["similar"] == [json.loads(first.stdout)["id"]]
    bodies = {parse_text((store_path / p).read_text(encoding="utf-8")).body.strip()
              for p in _notes_on_disk(store_path)}
    assert bodies == {old, new}


def test_what_a_merge_ignores_still_merges() -> None:
    """Case and blanks outside code, prose marks ending a word or touching a CJK character,
    typographic quotes, width, `n't` for ` not` (docs/lifecycle.md)."""
    for old, new in [
        ("The blog backend uses PostgreSQL 16; no ORM.", "the blog backend uses  PostgreSQL 16, no ORM"),
        ("Don't commit directly to main", "Do not commit directly to main!"),
        ("记住：提交前先运行测试", "记住，提交前先运行测试"),
        ("Run `pytest -q` before pushing the branch", "run  `pytest -q`  before pushing the branch."),
        ("The user’s editor uses tabs", "The user's editor uses tabs"),
    ]:
        assert _merged(old, new), (old, new)


def _notes_on_disk(store: Path) -> list[str]:
    return sorted(p.relative_to(store).as_posix() for p in store.glob("*/notes/**/*.md"))


def _meta(store: Path, relpath: str) -> dict:
    return parse_text((store / relpath).read_text(encoding="utf-8")).meta


def test_cli_english_duplicate_is_merged_and_refreshed(cli: Cli) -> None:
    first = cli.ok("add", "The blog backend uses PostgreSQL 16; no ORM.", "--json",
                   env={"MEMCTL_NOW": "2026-11-01T00:00:00Z"}).json()
    commits = git(cli.store, "rev-list", "--count", "HEAD")
    again = cli.ok("add", "the blog backend uses PostgreSQL 16, no ORM", "--importance", "8",
                   "--tags", "db", "--json", env={"MEMCTL_NOW": "2026-11-30T00:00:00Z"}).json()
    assert again["action"] == "merged"
    assert (again["id"], again["path"]) == (first["id"], first["path"])
    assert again["superseded"] == [] and again["similar"] == []
    assert _notes_on_disk(cli.store) == [first["path"]]  # no second copy
    meta = _meta(cli.store, first["path"])
    assert meta["updated"].startswith("2026-11-30") and meta["created"].startswith("2026-11-01")
    assert meta["importance"] == "8" and meta["tags"] == ["db"]
    assert int(git(cli.store, "rev-list", "--count", "HEAD")) == int(commits) + 1
    assert git(cli.store, "status", "--porcelain") == ""


def test_a_merge_never_writes_more_tags_than_a_note_takes(cli: Cli) -> None:
    """A near-duplicate `add` unions tags; past the 100-tag cap it is refused in one line
    naming the note and what to do, nothing written, and the note still parses and merges
    (docs/format.md, "Fields": tags)."""
    text = "The tagm exporter pushes metrics to Prometheus every 15 seconds."
    first = cli.ok("add", text, "--tags", ",".join(f"a{i}" for i in range(100)), "--json").json()
    before = tree_snapshot(cli.store)
    refused = cli("add", text, "--tags", ",".join(f"b{i}" for i in range(100)))
    assert refused.exit_code == 1, refused.stderr
    assert refused.stderr.startswith("error: ") and refused.error.count("\n") == 1
    assert first["id"] in refused.stderr and "at most 100" in refused.stderr
    assert "--force" in refused.stderr and "does not parse" not in refused.stderr
    assert tree_snapshot(cli.store) == before
    # Tags it has already (in any case) add nothing: the merge refreshes the note.
    again = cli.ok("add", text, "--tags", "A1,a2", "--json").json()
    assert (again["action"], again["id"]) == ("merged", first["id"])
    assert _meta(cli.store, first["path"])["tags"] == [f"a{i}" for i in range(100)]
    kept = cli.ok("add", text, "--tags", "b1", "--force", "--json").json()
    assert kept["action"] == "created"
    assert git(cli.store, "status", "--porcelain") == ""


def test_cli_chinese_duplicate_is_merged_but_never_lowers_importance(cli: Cli) -> None:
    first = cli.ok("add", "记住：以后都用中文回复用户的问题", "--json").json()
    before = _meta(cli.store, first["path"])["importance"]
    again = cli.ok("add", "记住，以后都用中文回复用户问题", "--importance", "2", "--json").json()
    assert again["action"] == "merged" and again["id"] == first["id"]
    assert _meta(cli.store, first["path"])["importance"] == before


def test_cli_similar_port_numbers_are_both_kept_and_reported(cli: Cli) -> None:
    first = cli.ok("add", "use port 5432", "--json").json()
    second = cli.ok("add", "use port 5433", "--json").json()
    assert second["action"] == "created" and second["id"] != first["id"]
    assert second["similar"] == [first["id"]]
    assert len(_notes_on_disk(cli.store)) == 2


def test_cli_long_one_word_notes_are_reported_by_add_and_health(cli: Cli) -> None:
    """Kana are not split into characters: a sentence of them is one word, here 229
    characters long. Its edited copy is similar (and may contradict it), for `add` and for
    `health` alike; only their first five letters were compared."""
    sentence = "でーたべーすのせつぞくぷーるはかならずごせんよんひゃくさんじゅうにばんのぽーとをつかうこと"
    first = cli.ok("add", sentence * 5 + "5432", "--json").json()
    second = cli.ok("add", "ぜったいに" + sentence * 5 + "5433", "--json").json()
    assert second["action"] == "created" and second["similar"] == [first["id"]]
    listed = cli.ok("health", "--json").json()["contradictions"]
    assert [{pair["a"]["id"], pair["b"]["id"]} for pair in listed] == [
        {first["id"], second["id"]}]


def test_cli_notes_of_symbols_alone_are_compared_by_their_symbols(cli: Cli) -> None:
    """A text of emoji or punctuation alone folded to nothing: the same text added twice made
    two notes, `health` listed no pair, and any two such texts scored as the same."""
    rocket = cli.ok("add", "🚀 🎉 ✅", "--json").json()
    again = cli.ok("add", "🚀 🎉 ✅", "--json").json()
    assert (again["action"], again["id"]) == ("merged", rocket["id"])
    arrows = cli.ok("add", "--json", "--", "--> !!! ???").json()
    assert arrows["action"] == "created" and arrows["similar"] == []
    check = cli.ok("add", "✅", "--json").json()
    assert check["action"] == "created" and check["similar"] == []
    assert len(_notes_on_disk(cli.store)) == 3
    write(cli.store, "demo/notes/fact/by-hand.md", "🚀 🎉 ✅", id="01m911vbsyk5k8m9",
          type="fact")
    listed = cli.ok("health", "--json").json()["near_duplicates"]
    assert [{pair["a"]["id"], pair["b"]["id"]} for pair in listed] == [
        {"01m911vbsyk5k8m9", rocket["id"]}]


def test_cli_unrelated_short_notes_are_not_a_possible_contradiction(cli: Cli) -> None:
    cli.ok("add", "added from non-repo dir")
    said = cli.ok("add", "added from store root")
    assert "similar to" not in said.stderr + said.stdout
    assert "may contradict" not in said.stderr + said.stdout
    assert cli.ok("health", "--json").json()["contradictions"] == []


def test_cli_force_writes_a_duplicate(cli: Cli) -> None:
    first = cli.ok("add", "Deploys need an approval from ops", "--json").json()
    forced = cli.ok("add", "Deploys need an approval from ops!", "--force", "--json").json()
    assert forced["action"] == "created" and forced["similar"] == [first["id"]]
    assert len(_notes_on_disk(cli.store)) == 2


def _search_ids(cli: Cli, query: str, *extra: str) -> list[str]:
    return [hit["id"] for hit in cli.ok("search", query, "--json", *extra).json()]


def test_cli_supersession_by_subject_predicate_hides_the_old_note(cli: Cli) -> None:
    old = cli.ok("add", "The blog database is MySQL 8", "--subject", "blog", "--predicate",
                 "database", "--json").json()
    new = cli.ok("add", "We moved the blog database to PostgreSQL", "--subject", "Blog",
                 "--predicate", "database", "--json").json()
    assert new["superseded"] == [old["id"]]
    meta = _meta(cli.store, old["path"])
    assert meta["status"] == "superseded" and meta["superseded_by"] == new["id"]
    assert (cli.store / old["path"]).exists()  # kept on disk …
    assert old["id"] in git(cli.store, "log", "--format=%s")  # … and in history
    assert old["id"] not in _search_ids(cli, "database")
    assert new["id"] in _search_ids(cli, "database")
    assert old["id"] in _search_ids(cli, "database", "--include-stale")


def test_cli_supersede_by_hand(cli: Cli) -> None:
    old = cli.ok("add", "Releases happen on Fridays", "--json").json()
    new = cli.ok("add", "Releases moved to Tuesdays after the outage", "--json").json()
    result = cli.ok("supersede", old["id"][:10], new["id"], "--json").json()
    assert result == {"id": old["id"], "path": old["path"], "status": "superseded",
                      "superseded_by": new["id"]}
    assert old["id"] not in _search_ids(cli, "releases")
    assert old["id"] in _search_ids(cli, "releases", "--include-stale")
    assert git(cli.store, "status", "--porcelain") == ""
    same = cli("supersede", new["id"], new["id"])
    assert same.exit_code == 1 and same.stderr.startswith("error:")
    unknown = cli("supersede", "zzzzzzzz", new["id"])
    assert unknown.exit_code == 1


def test_supersede_refuses_a_new_note_that_is_not_active(cli: Cli) -> None:
    # Superseding B by A after A by B would hide both notes (a cycle): NEW must be active.
    a = cli.ok("add", "Releases happen on Fridays", "--json").json()
    b = cli.ok("add", "Releases moved to Tuesdays after the outage", "--json").json()
    cli.ok("supersede", a["id"], b["id"])
    before, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    cycle = cli("supersede", b["id"], a["id"])
    assert cycle.exit_code == 1
    assert cycle.stderr == (f"error: note {a['id']} is superseded ({a['path']}); only an active "
                            f"note can supersede another: restore it first (`memctl restore "
                            f"{a['id']}`)\n")
    assert tree_snapshot(cli.store) == before and git(cli.store, "rev-parse", "HEAD") == head
    assert b["id"] in _search_ids(cli, "releases")


def test_supersede_refuses_a_new_note_that_serves_fewer_projects(cli: Cli) -> None:
    """A `global` rule superseded by one project's note was gone from every project, `get`
    and `health` silent; so was a note superseded by another project's. Refused, naming both
    projects; a global NEW, or one of OLD's own project, still supersedes."""
    rule = cli.ok("add", "Indent with tabs everywhere", "--global", "--type", "rule",
                  "--subject", "style", "--predicate", "indent", "--json").json()
    webapp = cli.ok("add", "Two spaces in the webapp", "--project", "webapp", "--type",
                    "rule", "--json").json()
    api = cli.ok("add", "Four spaces in the api", "--project", "api", "--type", "rule",
                 "--json").json()
    before, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    for old, new, lost in ((rule, webapp, "every project"), (webapp, api, "project 'webapp'")):
        refused = cli("supersede", old["id"], new["id"])
        assert refused.exit_code == 1, refused.stdout
        line = refused.stderr.strip()
        assert line.count("\n") == 0 and line.startswith(f"error: note {new['id']} belongs")
        assert f"would be gone from {lost}" in line and "`memctl forget`" in line
    assert tree_snapshot(cli.store) == before and git(cli.store, "rev-parse", "HEAD") == head
    assert [n["id"] for n in cli.ok("get", "style", "indent", "--project", "api",
                                    "--json").json()] == [rule["id"]]
    wider = cli.ok("add", "Indent with spaces everywhere", "--global", "--type", "rule",
                   "--json").json()
    cli.ok("supersede", webapp["id"], wider["id"])  # a global NEW serves webapp too
    cli.ok("supersede", rule["id"], wider["id"])
    assert cli.ok("show", rule["id"], "--json").json()["status"] == "superseded"


def test_cli_correction_names_what_it_corrects(cli: Cli) -> None:
    wrong = cli.ok("add", "The staging DB listens on port 5432", "--json").json()
    fix = cli.ok("add", "The staging DB listens on port 6432 (pgbouncer), not 5432",
                 "--type", "correction", "--corrects", wrong["id"][:8], "--json").json()
    assert fix["superseded"] == [] and fix["corrects"] == wrong["id"]
    assert _meta(cli.store, fix["path"])["corrects"] == wrong["id"]
    assert _meta(cli.store, fix["path"])["importance"] == "8"  # corrections start high
    kept = _meta(cli.store, wrong["path"])
    assert kept["status"] == "active" and "superseded_by" not in kept


def test_cli_a_correction_keeps_the_rest_of_the_note_it_corrects(cli: Cli) -> None:
    wrong = cli.ok("add", "Staging DB: port 5432; backups run nightly with pg_dump",
                   "--json").json()
    said = cli.ok("add", "Staging DB port is 6432 (pgbouncer), not 5432", "--type",
                  "correction", "--corrects", wrong["id"])
    assert f"correction of {wrong['id']}: {wrong['id']} stays active, the correction ranks " \
           "ahead of it" in said.stderr + said.stdout
    fix = cli.ok("list", "--type", "correction", "--json").json()[0]["id"]
    # What only the corrected note says is still found and recalled …
    assert _search_ids(cli, "backups")[:2] == [fix, wrong["id"]]
    # … and where both match, the correction comes first, in search and in recall.
    assert _search_ids(cli, "staging port")[:2] == [fix, wrong["id"]]
    notes = cli.ok("recall", "--json").json()["notes"]
    assert [n["id"] for n in notes][:2] == [fix, wrong["id"]]
    assert notes[1]["corrected_by"] == [fix] and notes[1]["contradicts"] == []
    assert f"[corrected by `{fix}`]" in cli.ok("recall").stdout
    assert "superseded" not in git(cli.store, "log", "-1", "--format=%B")


def test_cli_corrects_is_for_a_correction(cli: Cli) -> None:
    wrong = cli.ok("add", "The staging DB listens on port 5432", "--json").json()
    refused = cli("add", "port 6432", "--corrects", wrong["id"])
    assert refused.exit_code == 2 and "--corrects" in refused.stderr
    assert "--type correction" in refused.stderr
    assert _meta(cli.store, wrong["path"])["status"] == "active"


def test_cli_refuses_secrets_unless_allowed(cli: Cli) -> None:
    head = git(cli.store, "rev-parse", "HEAD")
    refused = cli("add", "CI uses AKIAIOSFODNN7EXAMPLE for uploads", "--json")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error:") and "AKIA****" in refused.stderr
    assert "AKIAIOSFODNN7EXAMPLE" not in refused.stderr and refused.stdout == ""
    assert _notes_on_disk(cli.store) == [] and git(cli.store, "rev-parse", "HEAD") == head
    allowed = cli.ok("add", "CI uses AKIAIOSFODNN7EXAMPLE for uploads", "--allow-secret",
                     "--json").json()
    assert allowed["action"] == "created"


def test_cli_importance_markers_apply_when_none_is_given(cli: Cli) -> None:
    plain = cli.ok("add", "The API listens on 8080", "--json").json()
    marked = cli.ok("add", "Remember: never push straight to main", "--json").json()
    chinese = cli.ok("add", "千万不要在周五下午部署", "--json").json()
    given = cli.ok("add", "Always squash merge", "--importance", "3", "--json").json()
    assert _meta(cli.store, plain["path"])["importance"] == "5"
    assert _meta(cli.store, marked["path"])["importance"] == "8"
    assert _meta(cli.store, chinese["path"])["importance"] == "7"
    assert _meta(cli.store, given["path"])["importance"] == "3"  # the user's value wins


# --- the checks' candidates from the index (memctl.index.nearwords) ---------------------------

_WORDS = ("cache", "redis", "timeout", "deploy", "staging", "port", "the", "a", "uses", "not",
          "never", "always", "database", "postgres", "mysql", "16", "5432", "5433", "blog",
          "api", "limit", "数据库", "连接池", "超时", "缓存", "ops", "approval", "nginx")


def _text(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.1:  # one or two words: they pair by their characters too
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 2)))
    if shape < 0.15:  # a long text: every note is a candidate
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(120, 160)))
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14)))


def _big_project(store: Path, rng: random.Random, count: int) -> list[str]:
    """`count` notes dropped by hand into `blog` and `global` (some with a subject and a
    predicate, a few superseded): their texts."""
    texts = []
    for number in range(count):
        text = _text(rng)
        texts.append(text)
        meta: dict[str, object] = {"id": f"n{number:015d}", "type": "fact"}
        if rng.random() < 0.1:
            meta.update(subject=rng.choice(["api", "blog"]), predicate="limit")
        if rng.random() < 0.05:
            meta["status"] = "superseded"
        project = "global" if rng.random() < 0.3 else "blog"
        write(store, f"{project}/notes/fact/n{number}.md", text, **meta)
    return texts


def test_the_checks_see_the_same_notes_through_the_index_as_through_every_note(
        store_path: Path) -> None:
    """The decision on a new text is the same with the notes the index finds for it as with
    every active note of its project and global: merges, similar notes (contradictions),
    supersession, for short, one-word, long, Chinese texts, and repeated words."""
    rng = random.Random(7)
    texts = _big_project(store_path, rng, 400)
    store = Store.open(store_path)
    index = ensure_fresh(store, ["blog", "global"])
    every = [indexed_note(meta, body) for meta, body in index.conn.execute(
        "SELECT d.meta, f.body FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.kind = 'note'"
        " AND d.status = 'active' AND d.project IN ('blog', 'global')").fetchall()
        for meta, body in [(json.loads(meta), from_index(body))]]
    compared = smaller = 0
    for number in range(250):
        base = rng.choice(texts).split()
        if number % 3 == 0 and base:  # a near copy of a note: a merge or a contradiction
            base[rng.randrange(len(base))] = rng.choice(_WORDS)
            text = " ".join(base)
        else:
            text = _text(rng)
        subject, predicate = ("api", "limit") if number % 7 == 0 else (None, None)
        found = [indexed_note(meta, body) for meta, body in check_pool(
            index.conn, ["blog", "global"], text,
            same_key_project="blog" if subject else None)]
        everything = decide(text, note_type="fact", project="blog", existing=every,
                            subject=subject, predicate=predicate)
        through_index = decide(text, note_type="fact", project="blog", existing=found,
                               subject=subject, predicate=predicate)
        assert (through_index.action, through_index.merged_into, through_index.similar,
                through_index.supersedes) == (everything.action, everything.merged_into,
                                              everything.similar, everything.supersedes), text
        compared += 1
        smaller += len(found) < len(every) // 4
    assert compared == 250 and smaller > 150  # most texts read a fraction of the notes
    index.close()


def test_a_duplicate_in_a_big_project_is_caught_reading_only_its_candidates(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """`memctl add` in a project of 600 notes merges a near-duplicate and reports a possible
    contradiction as before, with its checks reading a handful of notes, not all 600."""
    for number in range(600):
        write(cli.store, f"demo/notes/fact/filler-{number}.md",
              f"Filler note {number}: service {number % 37} restarts at {number} past the hour",
              id=f"f{number:015d}", type="fact")
    write(cli.store, "demo/notes/fact/pg.md", "The blog backend uses PostgreSQL 16; no ORM.",
          id="pg0000000000000x", type="fact")
    seen: list[int] = []
    real_decide = notes_module.decide

    def counting(text: str, **kwargs: object) -> object:
        seen.append(len(kwargs["existing"]))  # type: ignore[arg-type]
        return real_decide(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(notes_module, "decide", counting)
    cli.ok("add", "warm the index up: an unrelated note about kafka partitions")
    merged = cli.ok("add", "the blog backend uses PostgreSQL 16, no ORM", "--json").json()
    assert (merged["action"], merged["id"]) == ("merged", "pg0000000000000x")
    similar = cli.ok("add", "The blog backend uses PostgreSQL 15; no ORM.", "--json").json()
    assert similar["action"] == "created" and similar["similar"] == ["pg0000000000000x"]
    assert seen[0] >= 600  # the first add keeps the words of every note, and reads them all
    assert max(seen[1:]) < 20
