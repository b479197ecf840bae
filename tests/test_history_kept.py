"""The pass over a store's git history kept in `.memctl/history.json` (memctl.exchange.history):
a kept pass, extended by the commits it had not read, equals a pass over everything, on real
git histories with branches, merges, renames, deletions and commit times out of order."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
    return history.seen, history.first_time, history.last_path, history.last_time, history.paths


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
def histories(draw):
    count = draw(st.integers(2, 12))
    # Distinct commit times in any order: a clock that went back is met, a tie is not (on a
    # tie the newest path of a note is the one a pass meets first: the two orders may differ).
    offsets = draw(st.permutations(range(count)))
    commits = []
    for number in range(count):
        first = draw(st.integers(-1, number - 1)) if number else -1
        second = draw(st.one_of(st.none(), st.integers(0, number - 1))) if number > 1 else None
        if second == first:
            second = None
        changes = draw(st.lists(st.tuples(st.integers(0, len(PATHS) - 1),
                                          st.one_of(st.none(), st.integers(0, len(TEXTS) - 1))),
                                max_size=3, unique_by=lambda change: change[0]))
        commits.append((first, second, offsets[number] * 7, changes))
    asks = draw(st.lists(st.lists(st.integers(0, count - 1), min_size=1, max_size=3),
                         min_size=1, max_size=6))
    return commits, asks


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories())
def test_a_kept_pass_equals_a_pass_over_everything(tmp_path_factory, drawn):
    commits, asks = drawn
    root = tmp_path_factory.mktemp("history")
    ids = build(root, commits)
    (root / ".memctl").mkdir()
    for ask in asks:
        revs = [ids[number] for number in ask]
        kept = scan_history(root, revs, keep_pass=True)
        whole = scan_history(root, revs)
        assert comparable(kept) == comparable(whole)
    assert (root / ".memctl" / FILE).is_file()


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
    for text in ("not json", "[]", json.dumps({"format": 1, "tips": [ids[0]], "seen": [],
                                               "paths": {}, "first_time": [], "last": {}}),
                 json.dumps({"format": 1, "tips": [ids[0]], "seen": {}, "paths": {},
                             "first_time": [["a", "b", "5"]], "last": {}}),
                 json.dumps({"format": 1, "tips": ["HEAD"], "seen": {}, "paths": {},
                             "first_time": [], "last": {}})):
        kept.write_text(text)
        assert comparable(scan_history(root, [ids[1]], keep_pass=True)) == whole, text
        assert json.loads(kept.read_text())["tips"] == [ids[1]]


def test_sync_keeps_its_pass_and_importing_another_store_writes_nothing_into_it(tmp_path, remote):
    """A merging sync keeps its pass in its own store; `import` of another store's folder
    reads that store's history and leaves its `.memctl/` as it was."""
    first = machine(tmp_path, "first", remote)
    first.ok("add", "the cache is warmed at deploy")
    first.ok("sync")
    second = machine(tmp_path, "second", remote)
    second.ok("add", "the deploy runs on fridays")
    second.ok("sync")
    first.ok("add", "the queue drains before a deploy")
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
