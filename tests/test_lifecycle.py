"""Forgetting: the TTL sweep (`archive`), its dry run, expiry, protection, and `restore`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import Cli, git, memctl_executable, run_memctl, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reliability import without_file_permission_override

from memctl.core.note import Note
from memctl.core.noteformat import parse_text
from memctl.memory.lifecycle import TtlRules, plan_sweep

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
RULES = TtlRules()  # the defaults of memctl.toml


def note(note_id: str, *, updated: str, importance: int = 5, pinned: bool = False,
         expires: str | None = None, status: str = "active", meta: dict | None = None) -> Note:
    return Note(id=note_id, type="fact", project="blog", importance=importance, tags=[],
                created=updated, updated=updated, status=status, body=f"{note_id}\n",
                path=f"blog/notes/fact/{note_id}.md", pinned=pinned, expires=expires,
                meta=meta or {})


# --- the plan (pure) ----------------------------------------------------------------------------


def test_plan_archives_idle_and_expired_and_demotes_idle_low_importance() -> None:
    notes = [
        note("fresh", updated="2026-11-01T00:00:00Z", importance=2),
        note("idle100", updated="2026-08-20T00:00:00Z", importance=3),
        note("idle100hi", updated="2026-08-20T00:00:00Z", importance=7),
        note("idle200", updated="2026-05-01T00:00:00Z", importance=7),
        note("expired", updated="2026-11-29T00:00:00Z", expires="2026-11-15"),
        note("retired", updated="2025-01-01T00:00:00Z", status="superseded"),
    ]
    plan = plan_sweep(notes, {}, NOW, RULES)
    assert [i.id for i in plan.archive] == ["expired", "idle200"]
    assert plan.archive[1].target == "blog/archive/fact/idle200.md"
    assert [(i.id, i.new_importance) for i in plan.demote] == [("idle100", 2)]
    assert plan.kept == []


def test_idle_counts_from_updated_not_from_a_created_the_file_time_gave() -> None:
    """A note with `updated:` but no `created:` takes its file's time as `created`: counted
    as activity, every clone or checkout made such a note fresh again, never archived."""
    old = note("old", updated="2025-01-01T00:00:00Z", importance=5)
    old.created = "2026-11-29T00:00:00.000Z"  # the file's time, read as `created`
    plan = plan_sweep([old], {}, NOW, RULES)
    assert [item.id for item in plan.archive] == ["old"]


def test_a_write_time_more_than_a_day_ahead_is_no_activity() -> None:
    """`updated: 2062-…` (a typo, or a stamp pushed from a remote) kept the note out of
    every sweep, never idle. Like every time more than a day ahead, it proves nothing
    (docs/lifecycle.md): the note is idle since its `created`."""
    ahead = note("ahead", updated="2062-01-01T00:00:00Z", importance=5)
    ahead.created = "2024-01-01T00:00:00Z"
    within = note("within", updated="2026-12-01T06:00:00Z", importance=5)  # 18 hours ahead
    within.created = "2024-01-01T00:00:00Z"
    plan = plan_sweep([ahead, within], {}, NOW, RULES)
    assert [item.id for item in plan.archive] == ["ahead"]


def test_health_names_a_write_time_ahead_of_the_clock(cli: Cli, store_path: Path) -> None:
    folder = store_path / "alpha" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / "ahead-01aheadaheadahea0.md").write_text(
        "---\nid: 01aheadaheadahea0\ntype: fact\nproject: alpha\n"
        "created: 2024-01-01T00:00:00Z\nupdated: 2062-01-01T00:00:00Z\n---\nA note from ahead\n")
    report = cli.ok("health", "--json").json()
    [warned] = [entry for entry in report["field_warnings"] if entry["id"] == "01aheadaheadahea0"]
    assert warned["warnings"] == ["updated 2062-01-01T00:00:00Z is more than a day ahead of "
                                  "this clock: it does not count as the note's last activity"]
    assert "01aheadaheadahea0" in [entry["id"] for entry in report["unrecalled"]]


def test_a_recent_recall_keeps_a_note_alive() -> None:
    old = note("old", updated="2025-01-01T00:00:00Z", importance=3)
    plan = plan_sweep([old], {"old": "2026-11-20T00:00:00Z"}, NOW, RULES)
    assert plan.empty


def test_pinned_and_top_importance_notes_are_kept_and_listed() -> None:
    notes = [
        note("pinned", updated="2025-01-01T00:00:00Z", pinned=True),
        note("ten", updated="2025-01-01T00:00:00Z", importance=10, expires="2026-01-01"),
        note("nine", updated="2025-01-01T00:00:00Z", importance=9),
    ]
    plan = plan_sweep(notes, {}, NOW, RULES)
    assert plan.empty
    assert sorted(i.id for i in plan.kept) == ["nine", "pinned", "ten"]
    assert "pinned" in next(i.reason for i in plan.kept if i.id == "pinned")


def test_demotion_happens_once_until_the_note_is_used_again() -> None:
    demoted = note("d", updated="2026-08-01T00:00:00Z", importance=3,
                   meta={"demoted": "2026-11-01T00:00:00.000Z"})
    assert plan_sweep([demoted], {}, NOW, RULES).demote == []
    recalled = plan_sweep([demoted], {"d": "2026-08-15T00:00:00Z"}, NOW, RULES)
    assert recalled.demote == []  # recalled before the demotion: still no second one
    later = note("d", updated="2026-08-01T00:00:00Z", importance=3,
                 meta={"demoted": "2026-05-01T00:00:00.000Z"})
    assert [i.id for i in plan_sweep([later], {}, NOW, RULES).demote] == ["d"]


def test_settings_change_the_rules() -> None:
    idle = note("n", updated="2026-10-01T00:00:00Z", importance=6)
    rules = TtlRules(demote_after_days=30, demote_below_importance=7, archive_after_days=365)
    plan = plan_sweep([idle], {}, NOW, rules)
    assert [i.id for i in plan.demote] == ["n"] and plan.archive == []


@settings(max_examples=300, deadline=None)
@given(
    importance=st.integers(1, 10), pinned=st.booleans(), age=st.integers(0, 2000),
    expired=st.booleans(), recalled=st.one_of(st.none(), st.integers(0, 2000)),
)
def test_protected_notes_are_never_touched_and_nothing_is_both_archived_and_demoted(
    importance: int, pinned: bool, age: int, expired: bool, recalled: int | None,
) -> None:
    updated = (NOW - timedelta(days=age)).isoformat()
    n = note("x", updated=updated, importance=importance, pinned=pinned,
             expires="2026-01-01" if expired else None)
    last = {} if recalled is None else {"x": (NOW - timedelta(days=recalled)).isoformat()}
    plan = plan_sweep([n], last, NOW, RULES)
    if pinned or importance >= RULES.protect_importance:
        assert plan.empty
    assert len(plan.archive) + len(plan.demote) <= 1
    for item in plan.demote:
        assert 1 <= item.new_importance == item.importance - 1


# --- through the CLI ------------------------------------------------------------------------------

OLD = {"MEMCTL_NOW": "2026-01-10T09:00:00Z"}
SWEEP = {"MEMCTL_NOW": "2026-11-30T09:00:00Z"}


def _meta(store: Path, relpath: str) -> dict:
    return parse_text((store / relpath).read_text(encoding="utf-8")).meta


def _make_aged_store(cli: Cli) -> dict[str, dict]:
    notes = {
        "old": cli.ok("add", "The legacy importer runs nightly", "--json", env=OLD).json(),
        "pinned": cli.ok("add", "Ops on-call rota lives in PagerDuty", "--json", env=OLD).json(),
        "ten": cli.ok("add", "Production database is eu-west-1", "--importance", "10", "--json",
                      env=OLD).json(),
        "expiring": cli.ok("add", "Feature freeze until the launch", "--expires", "2026-11-15",
                           "--json", env={"MEMCTL_NOW": "2026-11-01T00:00:00Z"}).json(),
        "low": cli.ok("add", "Maybe look at htmx some day", "--importance", "3", "--json",
                      env={"MEMCTL_NOW": "2026-08-01T00:00:00Z"}).json(),
        "fresh": cli.ok("add", "Caching layer is Redis 7", "--json", env=SWEEP).json(),
    }
    # Pinning is a hand edit: a person adds `pinned: true` and commits.
    path = cli.store / notes["pinned"]["path"]
    path.write_text(path.read_text().replace("status: active", "pinned: true\nstatus: active"))
    git(cli.store, "commit", "-qam", "pin the rota note")
    return notes


def test_dry_run_changes_nothing(cli: Cli) -> None:
    notes = _make_aged_store(cli)
    before, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    plan = cli.ok("archive", "--dry-run", "--json", env=SWEEP).json()
    assert sorted(plan["archived"]) == sorted([notes["old"]["id"], notes["expiring"]["id"]])
    assert plan["demoted"] == [notes["low"]["id"]] and plan["dry_run"] is True
    assert tree_snapshot(cli.store) == before
    assert git(cli.store, "rev-parse", "HEAD") == head
    assert git(cli.store, "status", "--porcelain") == ""
    human = cli.ok("archive", "--dry-run", env=SWEEP)
    assert "nothing changed" in human.stderr and notes["old"]["id"] in human.stdout
    assert tree_snapshot(cli.store) == before


def test_sweep_archives_demotes_protects_and_commits_once(cli: Cli) -> None:
    notes = _make_aged_store(cli)
    commits = int(git(cli.store, "rev-list", "--count", "HEAD"))
    done = cli.ok("archive", "--json", env=SWEEP).json()
    assert sorted(done["archived"]) == sorted([notes["old"]["id"], notes["expiring"]["id"]])
    assert done["demoted"] == [notes["low"]["id"]] and done["dry_run"] is False
    assert int(git(cli.store, "rev-list", "--count", "HEAD")) == commits + 1
    assert git(cli.store, "status", "--porcelain") == ""

    old = notes["old"]
    moved = old["path"].replace("/notes/", "/archive/")
    assert not (cli.store / old["path"]).exists() and (cli.store / moved).exists()
    meta = _meta(cli.store, moved)
    assert (meta["id"], meta["status"]) == (old["id"], "archived")
    history = git(cli.store, "log", "--follow", "--format=%s", "--", moved)
    assert "archive sweep" in history and f"add fact {old['id']}" in history
    assert _meta(cli.store, notes["low"]["path"])["importance"] == "2"
    for kept in ("pinned", "ten", "fresh"):
        assert _meta(cli.store, notes[kept]["path"])["status"] == "active"
    # Out of everyday search, still there on request.
    hits = [h["id"] for h in cli.ok("search", "legacy importer", "--json", env=SWEEP).json()]
    assert old["id"] not in hits
    stale = cli.ok("search", "legacy importer", "--include-stale", "--json", env=SWEEP).json()
    assert old["id"] in [h["id"] for h in stale]
    # A second sweep at the same time has nothing left to do and makes no commit.
    again = cli.ok("archive", "--json", env=SWEEP).json()
    assert again["archived"] == [] and again["demoted"] == []
    assert int(git(cli.store, "rev-list", "--count", "HEAD")) == commits + 1


def test_archive_and_restore_round_trip(cli: Cli) -> None:
    notes = _make_aged_store(cli)
    original = (cli.store / notes["old"]["path"]).read_text()
    cli.ok("archive", env=SWEEP)
    restored = cli.ok("restore", notes["old"]["id"][:10], "--json", env=SWEEP).json()
    assert restored["path"] == notes["old"]["path"] and restored["status"] == "active"
    assert restored["from"] == notes["old"]["path"].replace("/notes/", "/archive/")
    text = (cli.store / notes["old"]["path"]).read_text()
    assert parse_text(text).body == parse_text(original).body
    meta = parse_text(text).meta
    assert meta["status"] == "active" and "archived_from" not in meta
    assert meta["updated"].startswith("2026-11-30")  # the clock restarts
    assert not list(cli.store.glob("*/archive/**/*legacy*"))
    hits = cli.ok("search", "legacy importer", "--json", env=SWEEP).json()
    assert notes["old"]["id"] in [h["id"] for h in hits]
    assert git(cli.store, "status", "--porcelain") == ""
    # The expired one comes back without its past expiry, or it would vanish again.
    expired = cli.ok("restore", notes["expiring"]["id"], "--json", env=SWEEP).json()
    assert "expires" not in _meta(cli.store, expired["path"])
    # Restoring an active note is an error that names the note.
    again = cli("restore", notes["old"]["id"], env=SWEEP)
    assert again.exit_code == 1 and notes["old"]["id"] in again.stderr


def test_restore_brings_back_a_superseded_note(cli: Cli) -> None:
    old = cli.ok("add", "The queue is RabbitMQ", "--json").json()
    new = cli.ok("add", "We replaced RabbitMQ with NATS", "--json").json()
    cli.ok("supersede", old["id"], new["id"])
    back = cli.ok("restore", old["id"], "--json").json()
    assert back["path"] == old["path"]
    meta = _meta(cli.store, old["path"])
    assert meta["status"] == "active" and "superseded_by" not in meta


def test_the_same_supersede_again_changes_nothing(cli: Cli) -> None:
    """`supersede` is declared idempotent (MCP's idempotentHint): the same pair again
    writes nothing and makes no commit, not even a new `updated`."""
    old = cli.ok("add", "The queue is RabbitMQ", "--json").json()
    new = cli.ok("add", "We replaced RabbitMQ with NATS", "--json").json()
    first = cli.ok("supersede", old["id"], new["id"], "--json").json()
    before, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    again = cli.ok("supersede", old["id"], new["id"], "--json",
                   env={"MEMCTL_NOW": "2026-12-30T12:00:00Z"}).json()
    assert again == first
    assert tree_snapshot(cli.store) == before and git(cli.store, "rev-parse", "HEAD") == head
    restored = cli.ok("restore", old["id"])  # in place: one path, no "path → path"
    assert restored.stderr == f"restored {old['id']}  {old['path']}\n"


def test_installed_memctl_archives_and_restores_end_to_end(store_path: Path) -> None:
    env = {"MEMCTL_NOW": "2026-01-01T00:00:00Z"}
    added = run_memctl("add", "Old build server is jenkins-01", "--json", store=store_path,
                       env=env)
    assert added.exit_code == 0, added.stderr
    note_id = added.json()["id"]
    later = {"MEMCTL_NOW": "2026-11-30T00:00:00Z"}
    dry = run_memctl("archive", "--dry-run", "--json", store=store_path, env=later)
    assert dry.exit_code == 0 and dry.json()["archived"] == [note_id]
    done = run_memctl("archive", "--json", store=store_path, env=later)
    assert done.exit_code == 0 and done.json()["archived"] == [note_id]
    shown = run_memctl("show", note_id, "--json", store=store_path, env=later).json()
    assert shown["status"] == "archived" and "/archive/" in shown["path"]
    back = run_memctl("restore", note_id, "--json", store=store_path, env=later)
    assert back.exit_code == 0, back.stderr
    assert run_memctl("show", note_id, "--json", store=store_path).json()["status"] == "active"


def _old_hand_dropped_note(cli: Cli) -> tuple[Path, str]:
    """`demo/wiki-notes.md`, a file without front matter, dropped by hand a year and a half
    before SWEEP and committed: its path and the id memctl knows it by."""
    dropped = cli.store / "demo" / "wiki-notes.md"
    dropped.parent.mkdir(exist_ok=True)
    dropped.write_text("Old wiki lives at wiki.internal\n")
    old = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
    os.utime(dropped, (old, old))
    git(cli.store, "add", "-A")
    git(cli.store, "commit", "-qm", "hand-written note")
    return dropped, next(n["id"] for n in cli.ok("list", "--json", env=SWEEP).json()
                         if n["path"] == "demo/wiki-notes.md")


def test_a_hand_dropped_note_keeps_its_id_and_goes_back_where_it_was(cli: Cli) -> None:
    _dropped, note_id = _old_hand_dropped_note(cli)
    done = cli.ok("archive", "--json", env=SWEEP).json()
    assert done["archived"] == [note_id]
    archived = cli.store / "demo/archive/fact/wiki-notes.md"
    meta = parse_text(archived.read_text()).meta
    assert (meta["id"], meta["archived_from"]) == (note_id, "demo/wiki-notes.md")
    assert archived.read_text().endswith("Old wiki lives at wiki.internal\n")
    back = cli.ok("restore", note_id, "--json", env=SWEEP).json()
    assert back["path"] == "demo/wiki-notes.md" and not archived.exists()


# `memctl archive` that kills itself (SIGKILL, as `kill -9`) right after the first of the two
# steps `_move` takes for the note whose path holds $KILL_AT: a write of its file, or a rename.
_ARCHIVE_KILLED_HALFWAY = """
import os, signal, sys
from memctl.memory import lifecycle
from memctl.store import Store
real_write, real_move = Store.write_text, lifecycle.move_file
def dies_after(step):
    def run(*args, **kwargs):
        result = step(*args, **kwargs)
        if any(os.environ["KILL_AT"] in str(arg) for arg in args):
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return run
Store.write_text = dies_after(real_write)
lifecycle.move_file = dies_after(real_move)
from memctl.cli import main
sys.argv = ["memctl", "archive"]
main()
"""


def test_an_archive_killed_halfway_through_a_note_loses_nothing_and_the_next_one_finishes(
        cli: Cli) -> None:
    """`kill -9` of `archive` between its two steps for a hand-dropped note. It moved the
    note first: the note lay in the archive with its old fields, so its id (made from its
    path) changed, it had no `archived_from` for `restore`, and no later sweep put that
    right. Now its new fields are written first: the note keeps its id and is archived for
    every reader, and the next `archive` moves it; `restore` brings it back where it was."""
    dropped, note_id = _old_hand_dropped_note(cli)
    killed = subprocess.run([sys.executable, "-c", _ARCHIVE_KILLED_HALFWAY], capture_output=True,
                            text=True, env={**os.environ, **SWEEP, "MEMCTL_STORE": str(cli.store),
                                            "KILL_AT": "wiki-notes"})
    assert killed.returncode == -9, killed.stderr
    listed = {n["id"]: n for n in cli.ok("list", "--status", "any", "--json", env=SWEEP).json()}
    assert listed[note_id]["status"] == "archived", listed
    finished = cli.ok("archive", "--json", env=SWEEP).json()
    assert finished["archived"] == [note_id], finished
    archived = cli.store / "demo/archive/fact/wiki-notes.md"
    meta = parse_text(archived.read_text()).meta
    assert (meta["id"], meta["status"], meta["archived_from"]) == (
        note_id, "archived", "demo/wiki-notes.md")
    assert not dropped.exists() and git(cli.store, "status", "--porcelain") == ""
    back = cli.ok("restore", note_id, "--json", env=SWEEP).json()
    assert back["path"] == "demo/wiki-notes.md" and not archived.exists()


def _four_old_notes(cli: Cli) -> list[dict]:
    return [cli.ok("add", text, "--json", env=OLD).json() for text in (
        "The billing service listens on port 7001", "Mail goes out through relay.internal",
        "Nightly backups land in the cold bucket", "The search cluster has three nodes")]


def test_restore_last_sweep_brings_back_what_a_killed_sweep_moved_before_the_next_finished_it(
        cli: Cli) -> None:
    """`kill -9` of `archive` once it had moved some notes; the next `archive` finished the
    sweep. Its commit named only the notes it moved itself, so `restore --last-sweep`
    brought those back and left the ones the killed sweep had moved archived. The finishing
    sweep's commit now names (and holds) every note of the sweep."""
    added = sorted(_four_old_notes(cli), key=lambda note: note["path"])  # the sweep's order
    second = Path(added[1]["path"]).name  # killed once the first has moved, the second half-way
    killed = subprocess.run([sys.executable, "-c", _ARCHIVE_KILLED_HALFWAY], capture_output=True,
                            text=True, env={**os.environ, **SWEEP, "MEMCTL_STORE": str(cli.store),
                                            "MEMCTL_PROJECT": "demo", "KILL_AT": second})
    assert killed.returncode == -9, killed.stderr
    assert (cli.store / added[0]["path"].replace("/notes/", "/archive/")).exists()
    ids = [note["id"] for note in added]
    # A dry run names what the run will finish, the notes the killed sweep moved among them.
    planned = cli.ok("archive", "--dry-run", "--json", env=SWEEP).json()
    assert sorted(planned["archived"]) == sorted(ids), planned
    finished = cli.ok("archive", "--json", env=SWEEP).json()
    assert sorted(finished["archived"]) == sorted(ids), finished
    assert git(cli.store, "status", "--porcelain") == ""
    renamed = git(cli.store, "show", "--name-status", "-M", "--format=", finished["commit"])
    assert renamed.count("R") == 4, renamed  # the whole sweep in its own commit
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(note["id"] for note in back["restored"]) == sorted(ids), back
    assert cli.ok("list", "--status", "archived", "--json", env=SWEEP).json() == []


# `memctl archive` that kills itself (SIGKILL) once it has moved $KILL_AFTER notes.
_ARCHIVE_KILLED_AFTER_MOVES = """
import os, signal, sys
from memctl.memory import lifecycle
real_move, moved = lifecycle.move_file, []
def move_then_die(*args, **kwargs):
    result = real_move(*args, **kwargs)
    moved.append(args)
    if len(moved) >= int(os.environ["KILL_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return result
lifecycle.move_file = move_then_die
from memctl.cli import main
sys.argv = ["memctl", "archive"]
main()
"""


def test_restore_last_sweep_undoes_a_killed_sweep_whose_moves_another_command_committed(
        cli: Cli) -> None:
    """`kill -9` of `archive` after its last move, before its commit; an `add` then committed
    what it left on disk, and the next `archive` found nothing to do. `restore --last-sweep`
    then undid the sweep before (here: there was none, an error), never this one. The next
    sweep now records the killed one in a commit of its own."""
    added = _four_old_notes(cli)
    killed = subprocess.run([sys.executable, "-c", _ARCHIVE_KILLED_AFTER_MOVES],
                            capture_output=True, text=True,
                            env={**os.environ, **SWEEP, "MEMCTL_STORE": str(cli.store),
                                 "MEMCTL_PROJECT": "demo", "KILL_AFTER": "4"})
    assert killed.returncode == -9, killed.stderr
    cli.ok("add", "The deploy freeze starts on Friday", env=SWEEP)
    assert git(cli.store, "status", "--porcelain") == ""
    finished = cli.ok("archive", "--json", env=SWEEP).json()
    ids = sorted(note["id"] for note in added)
    assert sorted(finished["archived"]) == ids and finished["commit"], finished
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(note["id"] for note in back["restored"]) == ids, back
    assert cli.ok("archive", "--json", env=SWEEP).json()["commit"] is None  # recorded once


def test_restore_last_sweep_right_after_a_killed_sweep_undoes_that_sweep(cli: Cli) -> None:
    """`kill -9` of `archive` once it had moved two notes, then `restore --last-sweep` (no
    `archive` in between): the killed sweep made no commit, so the restore undid the sweep
    before it (brought back a note archived months ago) and left the two archived. The
    killed sweep's record names its notes: those it archived come back."""
    older = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})  # the sweep before
    added = sorted(_four_old_notes(cli), key=lambda note: note["path"])  # the sweep's order
    killed = subprocess.run([sys.executable, "-c", _ARCHIVE_KILLED_AFTER_MOVES],
                            capture_output=True, text=True,
                            env={**os.environ, **SWEEP, "MEMCTL_STORE": str(cli.store),
                                 "MEMCTL_PROJECT": "demo", "KILL_AFTER": "2"})
    assert killed.returncode == -9, killed.stderr
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(entry["id"] for entry in back["restored"]) == sorted(
        note["id"] for note in added[:2]), back
    assert [n["id"] for n in cli.ok("list", "--status", "archived", "--json").json()] == [
        older["id"]]
    assert git(cli.store, "status", "--porcelain") == ""


def test_a_restore_killed_halfway_through_a_note_still_puts_it_back_where_it_was(
        cli: Cli) -> None:
    """`kill -9` of `restore` after it wrote a hand-dropped note's new fields in the archive
    and before it moved the note: `archived_from` was already gone, so the next `restore`
    put it at `demo/notes/fact/`, not back at `demo/wiki-notes.md`. `archived_from` now
    stays in the file until the note has moved."""
    folder = cli.store / "demo"
    folder.mkdir(exist_ok=True)
    dropped = folder / "wiki-notes.md"
    dropped.write_text("Old wiki lives at wiki.internal\n")
    old = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
    os.utime(dropped, (old, old))
    git(cli.store, "add", "-A")
    git(cli.store, "commit", "-qm", "hand-written note")
    note_id = cli.ok("archive", "--json", env=SWEEP).json()["archived"][0]
    script = _ARCHIVE_KILLED_HALFWAY.replace('["memctl", "archive"]',
                                             '["memctl", "restore", os.environ["NOTE_ID"]]')
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, **SWEEP, "MEMCTL_STORE": str(cli.store),
                                 "KILL_AT": "wiki-notes", "NOTE_ID": note_id})
    assert killed.returncode == -9, killed.stderr
    assert not dropped.exists()
    back = cli.ok("restore", note_id, "--json", env=SWEEP).json()
    assert back["path"] == "demo/wiki-notes.md", back
    meta = parse_text(dropped.read_text()).meta
    assert (meta["id"], meta["status"], "archived_from" in meta) == (note_id, "active", False)


# `memctl archive` that, holding the store lock with its plan made, says so ($READY) and
# waits a moment before it moves its notes: a sweep still running when another command starts.
_SLOW_ARCHIVE = """
import os, pathlib, sys, time
from memctl.memory import lifecycle
real_apply = lifecycle._apply
def slow_apply(*args, **kwargs):
    pathlib.Path(os.environ["READY"]).write_text("holding the lock")
    time.sleep(3)
    return real_apply(*args, **kwargs)
lifecycle._apply = slow_apply
from memctl.cli import main
sys.argv = ["memctl", "archive"]
main()
"""


def test_restore_last_sweep_started_while_a_sweep_runs_undoes_that_sweep(cli: Cli) -> None:
    """`restore --last-sweep` run while `archive` held the store lock read which sweep was
    the newest before it waited for the lock: once the running sweep was done, it undid the
    sweep before it and left every note of the running one archived. It now reads the
    history under the lock."""
    import time

    older = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})  # the sweep before
    newer = _four_old_notes(cli)
    ready = cli.store.parent / "ready"
    env = dict(os.environ, MEMCTL_STORE=str(cli.store), MEMCTL_PROJECT="demo", **SWEEP)
    sweeping = subprocess.Popen([sys.executable, "-c", _SLOW_ARCHIVE],
                                env={**env, "READY": str(ready)}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and sweeping.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), sweeping.communicate()
    undoing = subprocess.Popen([memctl_executable(), "restore", "--last-sweep", "--json"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert sweeping.wait(timeout=60) == 0, sweeping.communicate()
    out, err = undoing.communicate(timeout=60)
    assert undoing.returncode == 0, err
    restored = sorted(entry["id"] for entry in json.loads(out)["restored"])
    assert restored == sorted(note["id"] for note in newer), out
    assert [n["id"] for n in cli.ok("list", "--status", "archived", "--json").json()] == [
        older["id"]]


def test_restore_last_sweep_skips_a_note_forgotten_while_it_waited_for_the_lock(cli: Cli) -> None:
    """`restore --last-sweep` looked for the swept notes before it took the store lock: one
    forgotten while it waited (an agent's `forget`) made the whole restore fail, `error: no
    note with id …`, nothing restored. It looks under the lock, and skips that note."""
    import time

    from memctl.store import Store

    added = [cli.ok("add", f"Service {name} listens on port {port}", "--json",
                    env={"MEMCTL_NOW": "2026-02-01T09:00:00Z"}).json()
             for name, port in (("billing", 7001), ("mailer", 7002), ("search", 7003))]
    cli.ok("archive", env=SWEEP)
    gone = cli.ok("show", added[0]["id"], "--json").json()["path"]
    env = dict(os.environ, MEMCTL_STORE=str(cli.store), MEMCTL_PROJECT="demo", **SWEEP)
    with Store.open(cli.store).lock("test"):
        waiting = subprocess.Popen([memctl_executable(), "restore", "--last-sweep", "--json"],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        time.sleep(3)  # it has looked for its notes (before the fix) and waits for the lock
        # What a `forget` does meanwhile, under the lock this test holds.
        git(cli.store, "rm", "-q", gone)
        git(cli.store, "commit", "-q", "-m", f"forget {added[0]['id']}")
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    undone = json.loads(out)
    assert sorted(e["id"] for e in undone["restored"]) == sorted(n["id"] for n in added[1:])
    assert [s["id"] for s in undone["skipped"]] == [added[0]["id"]]
    assert git(cli.store, "status", "--porcelain") == ""


def test_restore_many_ids_and_the_last_sweep_in_one_commit(cli: Cli) -> None:
    first_sweep = {"MEMCTL_NOW": "2026-07-10T09:00:00Z"}
    early = cli.ok("add", "The old CI runs on Travis", "--json", env=OLD).json()
    cli.ok("archive", env=first_sweep)  # archives `early` alone
    later = [cli.ok("add", f"Service {name} listens on port {port}", "--json",
                    env={"MEMCTL_NOW": "2026-02-01T09:00:00Z"}).json()
             for name, port in (("billing", 7001), ("mailer", 7002), ("search", 7003),
                                ("uploads", 7004))]
    swept = cli.ok("archive", "--json", env=SWEEP).json()
    assert sorted(swept["archived"]) == sorted(n["id"] for n in later)
    cli.ok("forget", later[3]["id"], env=SWEEP)  # gone since the sweep: skipped, not an error

    commits = int(git(cli.store, "rev-list", "--count", "HEAD"))
    undone = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(e["id"] for e in undone["restored"]) == sorted(n["id"] for n in later[:3])
    assert [s["id"] for s in undone["skipped"]] == [later[3]["id"]]
    assert int(git(cli.store, "rev-list", "--count", "HEAD")) == commits + 1
    assert git(cli.store, "status", "--porcelain") == ""
    for entry, added in zip(sorted(undone["restored"], key=lambda e: e["id"]),
                            sorted(later[:3], key=lambda n: n["id"]), strict=True):
        assert entry["path"] == added["path"] and entry["status"] == "active"
        assert entry["from"] == added["path"].replace("/notes/", "/archive/")
    # The earlier sweep's note is left alone; explicit ids restore it and others at once.
    assert cli.ok("show", early["id"], "--json").json()["status"] == "archived"

    # An active id among them: an error naming it, and nothing changes.
    before, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    refused = cli("restore", early["id"], later[0]["id"], env=SWEEP)
    assert refused.exit_code == 1 and later[0]["id"] in refused.stderr
    assert refused.error.count("\n") == 1
    assert tree_snapshot(cli.store) == before and git(cli.store, "rev-parse", "HEAD") == head
    for args in (["restore"], ["restore", early["id"], "--last-sweep"]):
        bad = cli(*args, env=SWEEP)
        assert bad.exit_code == 2 and "--last-sweep" in bad.stderr
    assert tree_snapshot(cli.store) == before

    cli.ok("supersede", later[1]["id"], later[2]["id"], env=SWEEP)
    both = cli.ok("restore", early["id"], later[1]["id"][:10], "--json", env=SWEEP).json()
    assert sorted(e["id"] for e in both["restored"]) == sorted([early["id"], later[1]["id"]])
    assert int(git(cli.store, "rev-list", "--count", "HEAD")) == commits + 3  # supersede, restore
    assert "restore 2 notes" in git(cli.store, "log", "-1", "--format=%s")
    # Nothing of the last sweep is left to undo.
    nothing = cli("restore", "--last-sweep", env=SWEEP)
    assert nothing.exit_code == 1 and "nothing to undo" in nothing.stderr


def test_restore_last_sweep_skips_a_note_superseded_since_in_the_archive(cli: Cli) -> None:
    """`memctl supersede OLD NEW` of a note the sweep had archived writes `superseded_by`
    into it, in the archive; `restore --last-sweep` then made it active again and dropped
    `superseded_by`: the fact the person had said was replaced stood again beside its
    replacement. It is skipped, as superseded, as the docs say."""
    old, kept = (cli.ok("add", text, "--json", env=OLD).json()
                 for text in ("Deploys go out on Tuesday", "The search cluster has three nodes"))
    cli.ok("archive", env=SWEEP)
    new = cli.ok("add", "Deploys go out on Thursday after the freeze", "--json", env=SWEEP).json()
    cli.ok("supersede", old["id"], new["id"], env=SWEEP)
    undone = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert [entry["id"] for entry in undone["restored"]] == [kept["id"]], undone
    assert [entry["id"] for entry in undone["skipped"]] == [old["id"]], undone
    assert cli.ok("show", old["id"], "--json").json()["superseded_by"] == new["id"]


def test_superseding_an_archived_note_keeps_it_archived_in_its_file(cli: Cli) -> None:
    """`memctl supersede OLD NEW` of an archived OLD wrote `status: superseded` into its file
    in the archive, while `show`, `list` and `--json` said `archived` (its folder's word):
    the file a person reads and the tool disagreed. The file keeps `status: archived` and
    gains `superseded_by`; the same call again changes nothing."""
    old = cli.ok("add", "Deploys go out on Tuesday", "--json", env=OLD).json()
    cli.ok("archive", env=SWEEP)
    new = cli.ok("add", "Deploys go out on Thursday after the freeze", "--json", env=SWEEP).json()
    said = cli.ok("supersede", old["id"], new["id"], env=SWEEP)
    assert "kept in the archive" in said.stderr, said.stderr
    shown = cli.ok("show", old["id"], "--json").json()
    meta = parse_text((cli.store / shown["path"]).read_text()).meta
    assert (shown["status"], meta["status"], meta["superseded_by"]) == (
        "archived", "archived", new["id"])
    head = git(cli.store, "rev-parse", "HEAD")
    cli.ok("supersede", old["id"], new["id"], env=SWEEP)
    assert git(cli.store, "rev-parse", "HEAD") == head


def test_restore_last_sweep_passes_over_a_later_sweep_that_only_demoted(cli: Cli) -> None:
    """The newest sweep's commit was taken even when it archived nothing: after a sweep
    that only demoted, `restore --last-sweep` said there was no sweep at all."""
    def added(text: str, importance: str, when: str) -> str:
        return cli.ok("add", text, "--importance", importance, "--json", "--force",
                      env={"MEMCTL_NOW": when}).json()["id"]

    old = added("The old CI runs on Travis", "5", "2025-06-01T00:00:00Z")
    added("The lint step runs ruff", "3", "2026-01-01T00:00:00Z")
    added("The docs build with mkdocs", "4", "2026-03-01T00:00:00Z")
    first = cli.ok("archive", "--json", env={"MEMCTL_NOW": "2026-04-15T00:00:00Z"}).json()
    second = cli.ok("archive", "--json", env={"MEMCTL_NOW": "2026-06-01T00:00:00Z"}).json()
    assert first["archived"] == [old] and len(first["demoted"]) == 1
    assert second["archived"] == [] and len(second["demoted"]) == 1
    undone = cli.ok("restore", "--last-sweep", "--json").json()
    assert [entry["id"] for entry in undone["restored"]] == [old]
    nothing = cli("restore", "--last-sweep")
    assert nothing.exit_code == 1 and "nothing to undo" in nothing.stderr


def test_a_sweep_whose_commit_is_refused_says_nothing_changed(cli: Cli) -> None:
    """Every move is put back when the commit fails: the commit's own words ("Your change is
    on disk", "`memctl sync` commits the change") were false, and a sync then committed
    nothing of the sweep."""
    cli.ok("add", "The old CI runs on Travis", env=OLD)
    git(cli.store, "checkout", "-q", "--detach")
    before = tree_snapshot(cli.store)
    refused = cli("archive", env=SWEEP)
    assert refused.exit_code == 1 and refused.error.count("\n") == 1, refused.stderr
    assert "detached HEAD" in refused.stderr
    assert "every file was put back, nothing changed" in refused.stderr
    assert "on disk" not in refused.stderr and "commits the change" not in refused.stderr
    assert tree_snapshot(cli.store) == before


def test_restore_last_sweep_after_a_sweep_whose_commit_failed_undoes_the_sweep_before(
        cli: Cli) -> None:
    """A sweep whose commit failed put every note back but left its record (.memctl/
    sweep.json): `restore --last-sweep` took it for the newest sweep and said "nothing to
    undo" (every note of it active) until the next `archive`, not undoing the sweep before."""
    older = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})  # the sweep before
    cli.ok("add", "The old CI runs on Travis", env={"MEMCTL_NOW": "2026-06-01T09:00:00Z"})
    branch = git(cli.store, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(cli.store, "checkout", "-q", "--detach")
    refused = cli("archive", env=SWEEP)
    assert refused.exit_code == 1 and "nothing changed" in refused.stderr, refused.stderr
    git(cli.store, "checkout", "-q", branch)
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert [entry["id"] for entry in back["restored"]] == [older["id"]], back


def test_a_sweep_record_edited_by_hand_makes_no_archive_fail_or_commit_another_file(
        cli: Cli) -> None:
    """The record of a killed sweep was trusted for where each note came from: a path
    outside the store made every `archive` fail (git refused to stage it), another file's
    had the sweep commit that file, and a `null` one was a traceback."""
    note = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                  env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})
    [archived] = cli.ok("list", "--status", "archived", "--json").json()
    settings = cli.store / "memctl.toml"
    settings.write_text(settings.read_text() + "\n# being edited\n")
    for source in ("../outside.md", "memctl.toml", None):
        record = {"archive": [{"id": note["id"], "path": source, "target": archived["path"],
                               "reason": "x"}]}
        (cli.store / ".memctl" / "sweep.json").write_text(json.dumps(record))
        swept = cli.ok("archive", "--json", env=SWEEP).json()
        assert swept["commit"] is None and swept["archived"] == [], swept
        assert not (cli.store / ".memctl" / "sweep.json").exists()
    assert "memctl.toml" in git(cli.store, "status", "--porcelain")


def test_the_plan_says_which_folder_a_note_moves_to_and_the_whole_path_when_renamed(
        cli: Cli) -> None:
    notes = _make_aged_store(cli)
    old = notes["old"]
    folder, _, name = old["path"].rpartition("/")
    kind = folder.rpartition("/")[2]  # blog/notes/fact -> fact
    shown = cli.ok("archive", "--dry-run", env={**SWEEP, "COLUMNS": "200"}).stdout
    row = next(line for line in shown.splitlines() if line.startswith(old["id"]))
    assert row.rstrip().endswith(f"archive/{kind}/") and name not in row
    # A note that cannot keep its file name (one of that name is archived already) is
    # shown with the whole path it was given.
    taken = cli.store / old["path"].split("/")[0] / "archive" / kind / name
    taken.parent.mkdir(parents=True)
    taken.write_text("not a note of this store\n")
    # (the installed memctl: a terminal as wide as COLUMNS says, whatever ran before here)
    done = run_memctl("archive", store=cli.store, env={**SWEEP, "COLUMNS": "250"})
    assert done.exit_code == 0, done.stderr
    shown = done.stdout
    row = next(line for line in shown.splitlines() if line.startswith(old["id"]))
    assert row.rstrip().endswith(f"archive/{kind}/{name[:-3]}-{old['id']}.md")


# --- a sweep is all or nothing (docs/lifecycle.md) ----------------------------------------------


def _run_as_a_user(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT="demo", **SWEEP)
    return subprocess.run([*without_file_permission_override(), memctl_executable(), *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_a_note_memctl_cannot_change_in_place_is_kept_and_the_sweep_goes_on(
        sample_store: Path) -> None:
    # Flow-style front matter is valid YAML: memctl reads it, but its line edits do not
    # handle it. The sweep keeps that note (listed, with why) and does the rest.
    rel = "blog-backend/notes/fact/zz-hand.md"
    dropped = ("---\n{id: handdrop1, expires: 2026-01-01, created: 2025-01-01T00:00:00Z}\n"
               "---\nHand-dropped note.\n")
    (sample_store / rel).write_text(dropped)
    git(sample_store, "add", "-A")
    git(sample_store, "commit", "-qm", "hand drop")
    planned = run_memctl("archive", "--dry-run", "--json", store=sample_store, env=SWEEP).json()
    swept = run_memctl("archive", "--json", store=sample_store, env=SWEEP)
    assert swept.exit_code == 0, swept.stderr
    report = swept.json()
    assert report["plan"] == planned["plan"]  # the dry run showed exactly this
    kept = {item["id"]: item for item in report["plan"]["kept"]}
    assert "handdrop1" in kept and "handdrop1" not in report["archived"]
    assert "cannot change" in kept["handdrop1"]["reason"] and rel in kept["handdrop1"]["reason"]
    assert report["archived"] and report["demoted"]
    assert (sample_store / rel).read_text() == dropped
    assert git(sample_store, "status", "--porcelain") == ""
    undone = run_memctl("restore", "--last-sweep", "--json", store=sample_store, env=SWEEP)
    assert undone.exit_code == 0, undone.stderr


def test_notes_the_sweep_cannot_change_leave_the_plan_in_linear_time(
        store_path: Path, monkeypatch) -> None:
    """Half the expired notes cannot be changed in place, interleaved with the others: each
    is kept, the rest archived, and no note of the plan is looked for in it again (a
    removal per failure scanned the list: quadratic in the failures)."""
    from memctl.memory import lifecycle
    from memctl.store import Store

    Store.init(store_path)
    folder = store_path / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    pairs = 150
    for number in range(pairs):
        (folder / f"n{number:04d}-a.md").write_text(
            f"---\nid: plain{number:04d}\nexpires: 2026-01-01\n"
            f"created: 2025-01-01T00:00:00Z\n---\nA plain note {number}.\n")
        (folder / f"n{number:04d}-b.md").write_text(
            f"---\n{{id: flow{number:04d}, expires: 2026-01-01,"
            f" created: 2025-01-01T00:00:00Z}}\n---\nA flow-style note {number}.\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "hand-dropped notes")
    compared = 0
    equal = lifecycle.SweepItem.__eq__

    def counting(self, other):
        nonlocal compared
        compared += 1
        return equal(self, other)

    monkeypatch.setattr(lifecycle.SweepItem, "__eq__", counting)
    monkeypatch.setenv("MEMCTL_NOW", SWEEP["MEMCTL_NOW"])
    plan = lifecycle.run_sweep(Store(store_path))
    assert sorted(item.id for item in plan.archive) == [f"plain{n:04d}" for n in range(pairs)]
    assert sorted(item.id for item in plan.kept) == [f"flow{n:04d}" for n in range(pairs)]
    assert all("cannot change" in item.reason for item in plan.kept)
    assert compared <= pairs, f"{compared} comparisons of plan items for {2 * pairs} notes"
    assert git(store_path, "status", "--porcelain") == ""


def test_a_sweep_that_fails_half_way_leaves_the_store_as_it_was(sample_store: Path) -> None:
    # The sweep writes the demotions, then moves notes in path order; the last notes' folder
    # cannot be written, so the failure comes after other notes were already changed.
    plan = run_memctl("archive", "--dry-run", "--json", store=sample_store, env=SWEEP).json()["plan"]
    assert plan["demote"] and len(plan["archive"]) > 2
    last = plan["archive"][-1]["path"]
    locked = sample_store / last.rpartition("/")[0]
    before, head = tree_snapshot(sample_store), git(sample_store, "rev-parse", "HEAD")
    locked.chmod(0o555)
    try:
        result = _run_as_a_user("archive", store=sample_store)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 1, result.stderr
    assert tree_snapshot(sample_store) == before
    assert git(sample_store, "rev-parse", "HEAD") == head
    assert git(sample_store, "status", "--porcelain", "--ignored") == "!! .memctl/\n"


def test_a_folder_memctl_cannot_write_is_one_line_for_archive_and_restore(
        sample_store: Path) -> None:
    plan = run_memctl("archive", "--dry-run", "--json", store=sample_store, env=SWEEP).json()["plan"]
    first = plan["archive"][0]
    source_folder = sample_store / first["path"].rpartition("/")[0]
    before = tree_snapshot(sample_store)
    source_folder.chmod(0o555)
    try:
        swept = _run_as_a_user("archive", store=sample_store)
    finally:
        source_folder.chmod(0o755)
    assert swept.returncode == 1 and "Traceback" not in swept.stderr
    # (its new fields are written where it is before it moves: `lifecycle._move`)
    assert swept.stderr.startswith(f"error: cannot write {sample_store / first['path']}: ")
    assert "Permission denied" in swept.stderr and swept.stderr.count("\n") == 1
    assert tree_snapshot(sample_store) == before

    # Restore into a folder memctl may not write: one line, the note still archived.
    run_memctl("archive", store=sample_store, env=SWEEP)
    archived = run_memctl("show", first["id"], "--json", store=sample_store, env=SWEEP).json()
    before, head = tree_snapshot(sample_store), git(sample_store, "rev-parse", "HEAD")
    source_folder.chmod(0o555)
    try:
        restored = _run_as_a_user("restore", first["id"], store=sample_store)
    finally:
        source_folder.chmod(0o755)
    assert restored.returncode == 1 and "Traceback" not in restored.stderr
    assert restored.stderr.startswith(
        f"error: cannot move {sample_store / archived['path']} to {source_folder}/: "
        "Permission denied"), restored.stderr
    assert tree_snapshot(sample_store) == before
    assert git(sample_store, "rev-parse", "HEAD") == head
    assert git(sample_store, "status", "--porcelain") == ""


def test_restore_last_sweep_names_an_archived_note_that_does_not_parse_as_such(cli: Cli) -> None:
    """A note the sweep archived whose file was broken by hand since is still there: the
    undo skips it saying why and how to bring it back, not "not found (forgotten since?)"."""
    kept = cli.ok("add", "The cache holds sessions for a day", "--json", env=OLD).json()
    broken = cli.ok("add", "The queue retries a job five times", "--json", env=OLD).json()
    swept = cli.ok("archive", "--json", env=SWEEP).json()
    assert sorted(swept["archived"]) == sorted([kept["id"], broken["id"]])
    path = cli.store / broken["path"].replace("/notes/", "/archive/")
    path.write_text(path.read_text().replace("importance: ", "importance: [", 1))
    undone = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert [e["id"] for e in undone["restored"]] == [kept["id"]]
    [skipped] = undone["skipped"]
    assert skipped["id"] == broken["id"]
    assert "does not parse" in skipped["why"] and "forgotten" not in skipped["why"]
    assert f"memctl restore {broken['id']}" in skipped["why"]


def test_restore_last_sweep_says_why_it_cannot_name_a_note_whose_id_looks_like_a_key(cli):
    """A note dropped in by hand whose id is a key: the sweep's commit names it masked (every
    commit message is: gitops.clean_message), so `restore --last-sweep` cannot find it. It
    restores the others and says why that one is skipped (it said every note was restored,
    changed or forgotten since); the note is restored by its id."""
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    folder = cli.store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "uploader.md").write_text(f"---\nid: {key}\ntype: fact\nexpires: 2026-01-01\n---\n"
                                        "The uploader\n")
    cli("sync", env=SWEEP)  # (no remote: it commits the hand-dropped file, then says so)
    alone = cli("restore", "--last-sweep", env=SWEEP)
    assert alone.exit_code == 1  # no sweep yet
    cli.ok("archive", env=SWEEP)
    refused = cli("restore", "--last-sweep", env=SWEEP)
    assert refused.exit_code == 1 and "looks like a key" in refused.stderr, refused.stderr
    assert key not in refused.stderr
    assert cli.ok("show", key, "--json").json()["status"] == "archived"
    cli.ok("restore", key, env=SWEEP)
    assert cli.ok("show", key, "--json").json()["status"] == "active"


# `memctl archive` that kills itself (SIGKILL) once its record is written, before it writes
# or moves any note: a sweep killed before its first move.
_ARCHIVE_KILLED_BEFORE_MOVING = """
import os, signal, sys
from memctl.memory import lifecycle
def dies(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
lifecycle._apply = dies
from memctl.cli import main
sys.argv = ["memctl", "archive"]
main()
"""


def _killed_archive(store: Path, script: str, when: dict, **env: str) -> None:
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, **when, "MEMCTL_STORE": str(store),
                                 "MEMCTL_PROJECT": "demo", **env})
    assert killed.returncode == -9, killed.stderr


def test_restore_last_sweep_after_a_sweep_killed_before_its_first_move_undoes_the_one_before(
        cli: Cli) -> None:
    """`kill -9` of `archive` after it wrote its record and before it changed any note:
    `restore --last-sweep` took the record for the newest sweep, found every note of it
    active and said "nothing to undo". A sweep that changed nothing is no sweep: the one
    before it is undone. One whose notes were restored since still has nothing to undo."""
    older = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    before = cli.ok("archive", "--json", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"}).json()
    added = _four_old_notes(cli)
    files = tree_snapshot(cli.store)
    _killed_archive(cli.store, _ARCHIVE_KILLED_BEFORE_MOVING, SWEEP)
    assert (cli.store / ".memctl" / "sweep.json").exists() and tree_snapshot(cli.store) == files
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert [entry["id"] for entry in back["restored"]] == [older["id"]], back
    assert back["sweep"]["commit"] == before["commit"], back
    again = cli("restore", "--last-sweep", env=SWEEP)
    assert again.exit_code == 1 and "nothing to undo" in again.stderr, again.stderr
    assert again.stderr.count("\n") == 1 and "Traceback" not in again.stderr
    # The next sweep archives the four; restore --last-sweep undoes it, as ever.
    done = cli.ok("archive", "--json", env=SWEEP).json()
    assert sorted(done["archived"]) == sorted(n["id"] for n in added), done
    undone = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(e["id"] for e in undone["restored"]) == sorted(done["archived"])


def test_a_killed_sweep_restored_since_leaves_nothing_to_undo(cli: Cli) -> None:
    """The other side of the test above: a sweep killed after two moves, undone by
    `restore --last-sweep`; the next `restore --last-sweep` has nothing to undo (as after a
    committed sweep), and never undoes the sweep before it."""
    older = _one_committed_sweep(cli)
    added = sorted(_four_old_notes(cli), key=lambda note: note["path"])
    _killed_archive(cli.store, _ARCHIVE_KILLED_AFTER_MOVES, SWEEP, KILL_AFTER="2")
    back = cli.ok("restore", "--last-sweep", "--json", env=SWEEP).json()
    assert sorted(e["id"] for e in back["restored"]) == sorted(n["id"] for n in added[:2])
    _assert_nothing_to_undo(cli, older)


def _one_committed_sweep(cli: Cli) -> dict:
    """A note archived by a committed sweep of 2026-08-01: the sweep before the killed one."""
    older = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})
    return older


def _assert_nothing_to_undo(cli: Cli, older: dict) -> None:
    """`restore --last-sweep` has nothing to undo (one line, exit 1, nothing changed), and the
    sweep before, which archived `older`, is not undone in its place."""
    files, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    again = cli("restore", "--last-sweep", env=SWEEP)
    assert again.exit_code == 1 and "nothing to undo" in again.stderr, again.stderr
    assert tree_snapshot(cli.store) == files and git(cli.store, "rev-parse", "HEAD") == head
    assert [n["id"] for n in cli.ok("list", "--status", "archived", "--json").json()] == [
        older["id"]]


def test_an_archive_with_nothing_to_do_after_a_killed_sweep_was_undone_keeps_it_the_last(
        cli: Cli) -> None:
    """A sweep killed after its one move and undone by `restore --last-sweep`, then an
    `archive` that finds nothing to do: that archive removed the killed sweep's record, and
    the next `restore --last-sweep` undid the sweep before it (exit 0), where after a
    committed sweep undone it has nothing to undo."""
    older = _one_committed_sweep(cli)
    cli.ok("add", "The billing service listens on port 7001", "--json", env=OLD)
    _killed_archive(cli.store, _ARCHIVE_KILLED_AFTER_MOVES, SWEEP, KILL_AFTER="1")
    cli.ok("restore", "--last-sweep", env=SWEEP)
    assert cli.ok("archive", "--dry-run", "--json", env=SWEEP).json()["archived"] == []
    cli.ok("archive", env=SWEEP)
    _assert_nothing_to_undo(cli, older)


def test_a_sweep_record_edited_by_hand_moves_no_note_another_sweep_archived(cli: Cli) -> None:
    """A record (`.memctl/sweep.json`) that names a note an earlier sweep archived, somewhere
    else than where it lies: `restore --last-sweep` restored whatever id the record named.
    Only a note where the killed sweep put it is restored; here none: one line, exit 1,
    nothing changed."""
    first = cli.ok("add", "The old wiki lives at wiki.internal", "--json",
                   env={"MEMCTL_NOW": "2026-01-01T09:00:00Z"}).json()
    cli.ok("archive", env={"MEMCTL_NOW": "2026-08-01T09:00:00Z"})
    cli.ok("add", "Mail goes out through relay.internal", "--json", env=OLD)
    cli.ok("archive", env=SWEEP)
    (cli.store / ".memctl" / "sweep.json").write_text(json.dumps({"at": SWEEP["MEMCTL_NOW"], "archive": [
        {"id": first["id"], "path": "demo/notes/fact/wiki.md",
         "target": "demo/archive/fact/wiki.md", "reason": "hand-made"}]}))
    files, head = tree_snapshot(cli.store), git(cli.store, "rev-parse", "HEAD")
    refused = cli("restore", "--last-sweep", env=SWEEP)
    assert refused.exit_code == 1 and refused.stderr.startswith("error: "), refused.stderr
    assert refused.stderr.count("\n") == 1 and "not where the killed sweep put it" in refused.stderr
    assert tree_snapshot(cli.store) == files and git(cli.store, "rev-parse", "HEAD") == head


def test_restore_last_sweep_undoes_a_newer_sweep_synced_from_another_machine(
        tmp_path: Path, remote: str) -> None:
    """A sweep killed on one machine (its moves committed by the next `sync`), then a newer
    sweep on another, brought by `sync`: `restore --last-sweep` took the killed sweep's
    record for the newest and restored its notes (and any of them the newer sweep had
    archived too), leaving the rest of the newer sweep archived. The newer sweep by time is
    undone; the killed one is named as passed over."""
    from conftest import machine

    laptop = machine(tmp_path, "laptop")
    billing, mail = (laptop.ok("add", text, "--json", env={"MEMCTL_NOW": "2026-02-01T09:00:00Z"}).json()["id"]
                     for text in ("Billing listens on port 7001", "Mail goes out through relay.internal"))
    search = laptop.ok("add", "The search cluster has three nodes", "--json",
                       env={"MEMCTL_NOW": "2026-06-10T09:00:00Z"}).json()["id"]
    laptop.ok("sync", "--remote", remote, env={"MEMCTL_NOW": "2026-11-29T09:00:00Z"})
    desktop = machine(tmp_path, "desktop", remote)
    _killed_archive(laptop.store, _ARCHIVE_KILLED_AFTER_MOVES, {"MEMCTL_NOW": "2026-11-30T09:00:00Z"},
                    KILL_AFTER="1")  # archives billing, then dies (mail is left to do)
    laptop.ok("sync", env={"MEMCTL_NOW": "2026-11-30T09:30:00Z"})
    desktop.ok("sync", env={"MEMCTL_NOW": "2026-12-20T10:00:00Z"})
    newer = desktop.ok("archive", "--json", env={"MEMCTL_NOW": "2026-12-20T10:00:00Z"}).json()
    assert sorted(newer["archived"]) == sorted([mail, search]), newer
    desktop.ok("sync", env={"MEMCTL_NOW": "2026-12-20T10:00:00Z"})
    laptop.ok("sync", env={"MEMCTL_NOW": "2026-12-20T11:00:00Z"})
    back = laptop.ok("restore", "--last-sweep", "--json",
                     env={"MEMCTL_NOW": "2026-12-20T11:00:00Z"}).json()
    assert sorted(e["id"] for e in back["restored"]) == sorted([mail, search]), back
    assert back["sweep"]["commit"] == newer["commit"]
    assert back["sweep"]["passed_over_stopped_sweep"] == "2026-11-30T09:00:00.000Z", back
    assert [n["id"] for n in laptop.ok("list", "--status", "archived", "--json").json()] == [billing]
    said = laptop("restore", "--last-sweep", env={"MEMCTL_NOW": "2026-12-20T11:00:00Z"})
    assert said.exit_code == 1 and "nothing to undo" in said.stderr
