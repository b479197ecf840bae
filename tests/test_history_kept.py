"""The pass over a store's git history kept in `.memctl/history.json` (memctl.exchange.history):
a kept pass, extended by the commits it had not read, equals a pass over everything, on real
git histories with branches, merges, renames, deletions and commit times out of order."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import Cli, git, machine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.exchange.history import FILE, History
from memctl.exchange.snapshot import scan_history

IDS = ["0123456789abcdef", "0123456789abcdeg", "0123456789abcdeh"]
PATHS = [f"proj/notes/fact/{slug}-{note_id}.md" for slug in ("one", "two") for note_id in IDS] + [
    "proj/MEMORY.md", "proj/archive/fact/old-0123456789abcdef.md"]
TEXTS = [f"---\nid: {IDS[0]}\n---\nbody {number}\n" for number in range(4)]


def comparable(history: History) -> tuple[object, ...]:
    return history.seen, history.first_time, history.last_path, history.paths


def comparable_but_newest_path(history: History) -> tuple[object, ...]:
    """All but the newest paths, which a kept pass may take from the other line of history
    (memctl.exchange.history): those are held to be paths the note had."""
    assert set(history.last_path) <= set(history.paths)
    assert all(path in history.paths[key] for key, path in history.last_path.items())
    return history.seen, history.first_time, set(history.last_path), history.paths


def build(root: Path, commits: list[tuple[int, int | None, int, list[tuple[int, int | None]]]]
          ) -> list[str]:
    """A repository at `root` with one commit per item (first parent's position or -1 for a
    root commit, second parent's or None, commit time offset, changes: (path, text or None
    to delete)); the commit ids, in order."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    stream: list[str] = []
    for number, (first, second, offset, changes) in enumerate(commits):
        message = f"c{number}"
        stream.append(f"commit refs/heads/c{number}\nmark :{number + 1}\n"
                      f"committer t <t@example.invalid> {1_700_000_000 + offset} +0000\n"
                      f"data {len(message)}\n{message}\n")
        if first >= 0:
            stream.append(f"from :{first + 1}\n")
        if second is not None:
            stream.append(f"merge :{second + 1}\n")
        for path, text in changes:
            if text is None:
                stream.append(f"D {PATHS[path]}\n")
            else:
                data = TEXTS[text]
                stream.append(f"M 100644 inline {PATHS[path]}\ndata {len(data)}\n{data}\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], check=True,
                   input="".join(stream).encode(), capture_output=True)
    return [git(root, "rev-parse", f"refs/heads/c{number}").strip()
            for number in range(len(commits))]


@st.composite
def histories(draw, branches: bool = True):
    count = draw(st.integers(2, 12))
    # Commit times in any order, ties too: a clock that went back is met.
    offsets = draw(st.lists(st.integers(0, count), min_size=count, max_size=count))
    commits = []
    for number in range(count):
        if branches:
            first = draw(st.integers(-1, number - 1)) if number else -1
            second = draw(st.one_of(st.none(), st.integers(0, number - 1))) if number > 1 else None
        else:
            first, second = number - 1, None
        if second == first:
            second = None
        changes = draw(st.lists(st.tuples(st.integers(0, len(PATHS) - 1),
                                          st.one_of(st.none(), st.integers(0, len(TEXTS) - 1))),
                                max_size=3, unique_by=lambda change: change[0]))
        commits.append((first, second, offsets[number] * 7, changes))
    asks = draw(st.lists(st.lists(st.integers(0, count - 1), min_size=1, max_size=3),
                         min_size=1, max_size=6))
    return commits, asks


def kept_and_whole(tmp_path_factory, drawn) -> list[tuple[History, History]]:
    """For each set of commits asked in turn, the pass with the kept one and the pass over
    everything, on a repository of the drawn history."""
    commits, asks = drawn
    root = tmp_path_factory.mktemp("history")
    ids = build(root, commits)
    (root / ".memctl").mkdir()
    passes = []
    for ask in asks:
        revs = [ids[number] for number in ask]
        passes.append((scan_history(root, revs, keep_pass=True), scan_history(root, revs)))
    assert (root / ".memctl" / FILE).is_file()
    return passes


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories())
def test_a_kept_pass_equals_a_pass_over_everything(tmp_path_factory, drawn):
    for kept, whole in kept_and_whole(tmp_path_factory, drawn):
        assert comparable_but_newest_path(kept) == comparable_but_newest_path(whole)


@pytest.mark.parametrize("first_offset", [0, 7])
def test_a_kept_pass_asked_for_a_commit_its_tips_reach_with_a_clock_gone_back(
        tmp_path_factory, first_offset: int) -> None:
    """A line of twelve commits: the first adds `two-…g.md`, the eleventh `one-…g.md` for the
    same note, and the tenth's clock is 7 s ahead of the commits after it. A pass kept at
    the ninth, then asked for the first and the eleventh: `git log --topo-order` listed the
    first (which the kept tip reaches) before the new ones, so `two-…` was taken for the
    newest path where a pass over everything gives `one-…` (found by the test below)."""
    commits = [(-1, None, first_offset, [(4, 0)])] + [(number - 1, None, 0, []) for number in range(1, 9)] \
        + [(8, None, 7, []), (9, None, 0, [(1, 0)]), (10, None, 0, [])]
    for kept, whole in kept_and_whole(tmp_path_factory, (commits, [[8], [0, 10]])):
        assert comparable(kept) == comparable(whole)
    assert whole.last_path == {"id:0123456789abcdeg": PATHS[1]}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories(branches=False))
def test_on_one_line_of_history_a_kept_pass_has_the_same_newest_paths(tmp_path_factory, drawn):
    """Without branches, every commit a later pass reads descends from the kept ones: the
    newest path of each note is the one a pass over everything gives, whatever the clocks."""
    for kept, whole in kept_and_whole(tmp_path_factory, drawn):
        assert comparable(kept) == comparable(whole)


def test_the_kept_pass_is_read_and_a_history_that_no_longer_reaches_it_is_read_whole(tmp_path):
    """What is kept is used (a planted time shows through), the commits it covers are not
    read again, and after a reset to another line of history it is thrown away."""
    root = tmp_path / "repo"
    ids = build(root, [(-1, None, 0, [(0, 0)]), (0, None, 10, [(0, 1)]),
                       (1, None, 20, [(1, 2)]), (0, None, 30, [(2, 3)])])
    (root / ".memctl").mkdir()
    scan_history(root, [ids[1]], keep_pass=True)
    kept = root / ".memctl" / FILE
    data = json.loads(kept.read_text())
    assert data["tips"] == [ids[1]]
    planted = [PATHS[5], "f" * 40, 5]
    data["first_time"].append(planted)
    kept.write_text(json.dumps(data))

    later = scan_history(root, [ids[2]], keep_pass=True)  # a descendant: the kept pass + c2
    assert later.first_time[(PATHS[5], "f" * 40)] == 5
    assert (PATHS[1], git(root, "rev-parse", f"{ids[2]}:{PATHS[1]}").strip()) in later.first_time
    assert json.loads(kept.read_text())["tips"] == [ids[2]]

    other = scan_history(root, [ids[3]], keep_pass=True)  # c3 does not reach c2: read whole
    assert (PATHS[5], "f" * 40) not in other.first_time
    assert comparable(other) == comparable(scan_history(root, [ids[3]]))
    assert json.loads(kept.read_text())["tips"] == [ids[3]]


def test_a_kept_file_that_does_not_read_is_made_again(tmp_path):
    root = tmp_path / "repo"
    ids = build(root, [(-1, None, 0, [(0, 0), (6, 1)]), (0, None, 10, [(0, None)])])
    (root / ".memctl").mkdir()
    kept = root / ".memctl" / FILE
    whole = comparable(scan_history(root, [ids[1]]))
    for text in ("not json", "[]", "[" * 100_000, json.dumps(
            {"format": 1, "tips": [ids[0]], "seen": [], "paths": {}, "first_time": [],
             "last_path": {}}),
                 json.dumps({"format": 1, "tips": [ids[0]], "seen": {}, "paths": {},
                             "first_time": [["a", "b", "5"]], "last_path": {}}),
                 json.dumps({"format": 1, "tips": ["HEAD"], "seen": {}, "paths": {},
                             "first_time": [], "last_path": {}})):
        kept.write_text(text)
        assert comparable(scan_history(root, [ids[1]], keep_pass=True)) == whole, text
        assert json.loads(kept.read_text())["tips"] == [ids[1]]


def diverged(tmp_path: Path, remote: str) -> Cli:
    """A machine whose next sync merges: another machine pushed a note since its last sync,
    and it added one of its own."""
    first = machine(tmp_path, "first", remote)
    first.ok("add", "the cache is warmed at deploy")
    first.ok("sync")
    second = machine(tmp_path, "second", remote)
    second.ok("add", "the deploy runs on fridays")
    second.ok("sync")
    first.ok("add", "the queue drains before a deploy")
    return first


def test_sync_keeps_its_pass_and_importing_another_store_writes_nothing_into_it(tmp_path, remote):
    """A merging sync keeps its pass in its own store; `import` of another store's folder
    reads that store's history and leaves its `.memctl/` as it was."""
    first = diverged(tmp_path, remote)
    first.ok("sync")
    assert (first.store / ".memctl" / FILE).is_file()
    assert len(git(first.store, "log", "--merges", "--format=%H").split()) == 1

    other = Cli(tmp_path / "other")
    other.ok("init", str(other.store))
    other.ok("add", "a note from another store")
    state = other.store / ".memctl"
    before = sorted(path.name for path in state.iterdir())
    first.ok("import", str(other.store))
    assert sorted(path.name for path in state.iterdir()) == before
    assert not (state / FILE).exists()


def test_a_shallow_or_replaced_history_keeps_no_pass(tmp_path):
    """A commit id fixes its ancestors only in a full history without replaced commits: a
    shallow clone deepened later, or `git replace --graft`, gives the same tips more (or
    other) ancestors, and a kept pass would miss their versions for good."""
    upstream = tmp_path / "upstream"
    ids = build(upstream, [(-1, None, 0, [(0, 0)]), (0, None, 10, [(0, 1)]),
                           (1, None, 20, [(0, 2)]), (2, None, 30, [(1, 3)])])
    git(upstream, "branch", "-q", "-f", "main", ids[3])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "main",
                    f"file://{upstream}", str(clone)], check=True, capture_output=True)
    (clone / ".memctl").mkdir()
    scan_history(clone, ["HEAD"], keep_pass=True)
    assert not (clone / ".memctl" / FILE).exists()
    git(clone, "fetch", "-q", "--unshallow")
    kept = scan_history(clone, ["HEAD"], keep_pass=True)
    assert comparable(kept) == comparable(scan_history(clone, ["HEAD"]))
    assert len(kept.seen[f"id:{IDS[0]}"]) == 3  # every version, the deepened ones too
    assert (clone / ".memctl" / FILE).is_file()

    (clone / ".memctl" / FILE).unlink()
    git(clone, "replace", "--graft", ids[2], ids[0])
    scan_history(clone, ["HEAD"], keep_pass=True)
    assert not (clone / ".memctl" / FILE).exists()
    git(clone, "pack-refs", "--all")  # the replace ref now in packed-refs only
    scan_history(clone, ["HEAD"], keep_pass=True)
    assert not (clone / ".memctl" / FILE).exists()


@pytest.mark.parametrize("planted", ["folder", "fifo", "link to /dev/null", "deep json"])
def test_a_kept_file_that_is_no_file_never_stops_a_command(tmp_path, remote, planted):
    """`.memctl/history.json` is derived: a folder, a FIFO, a link to a device or a JSON
    nested past any reader in its place is passed over (read whole instead, never written),
    and export and a merging sync go on. (A folder there stopped both with an error, a FIFO
    made them wait for ever, deep nesting was a traceback.)"""
    first = diverged(tmp_path, remote)
    kept = first.store / ".memctl" / FILE
    if planted == "folder":
        kept.mkdir()
    elif planted == "fifo":
        os.mkfifo(kept)
    elif planted == "link to /dev/null":
        kept.symlink_to("/dev/null")
    else:
        kept.write_text("[" * 100_000)
    exported = first("export", str(tmp_path / "all.zip"))
    assert exported.exit_code == 0 and "Traceback" not in exported.stderr, exported.stderr
    synced = first("sync")
    assert synced.exit_code == 0 and "Traceback" not in synced.stderr, synced.stderr
    assert len(git(first.store, "log", "--merges", "--format=%H").split()) == 1


def test_a_removal_is_carried_under_the_path_the_note_had_last_whatever_the_clocks(
        tmp_path, monkeypatch):
    """A note moved from `alpha` to `beta` and then removed, by a machine whose clock was a
    day behind: its last path is `beta`'s (a commit comes before its parents), so `export -p
    beta` carries the removal. Going by commit time gave the older `alpha` path, and the
    removal left the `beta` export."""
    cli = Cli(tmp_path / "store", project="alpha")
    cli.ok("init", str(cli.store))
    note_id = cli.ok("add", "the deploy script needs sudo rights", "--json").json()["id"]
    old = next((cli.store / "alpha" / "notes" / "fact").glob(f"*{note_id}.md"))
    (cli.store / "beta" / "notes" / "fact").mkdir(parents=True)
    moved = f"beta/notes/fact/{old.name}"
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-29T12:00:00Z")
    git(cli.store, "mv", f"alpha/notes/fact/{old.name}", moved)
    git(cli.store, "commit", "-qm", "move to beta")
    git(cli.store, "rm", "-q", moved)
    git(cli.store, "commit", "-qm", "remove")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    cli.ok("add", "beta keeps its logs for ninety days", "--project", "beta")
    cli.ok("add", "alpha uses postgres fifteen")
    for project, carried in (("beta", True), ("alpha", False)):
        target = tmp_path / f"{project}.zip"
        cli.ok("export", str(target), "--project", project)
        with zipfile.ZipFile(target) as bundle:
            removed = json.loads(bundle.read("memctl-manifest.json")).get("removed") or {}
        assert (f"id:{note_id}" in removed) == carried, (project, removed)
        if carried:
            assert removed[f"id:{note_id}"]["path"] == moved
