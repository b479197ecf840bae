"""The change probe of `memctl mcp` (memctl.disk.changeprobe): a call that finds no change since
the index was last made sure of skips the watcher's round trip, and any change (a file written
by hand, a new project folder, a new sub-folder, a folder moved, a queue overflow, another index
file) makes the next call take the usual way. Real files, real inotify, a real SQLite file, a
real `memctl watch` (docs/watch.md, "Skipping the round trip")."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from test_watch import WatchProcess, commit_notes, nid, note_text

from memctl.disk.changeprobe import ChangeProbe
from memctl.disk.watchstate import COOKIE_PREFIX, change_probe, use_change_probe
from memctl.index.db import Index, ensure_fresh, fresh_during
from memctl.store import Store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")

PATIENCE = 60.0  # a safety net for a broken watcher, never a measure of speed


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A store's folders: one project with a note, `.memctl/` with an index file."""
    root = tmp_path / "store"
    (root / ".memctl").mkdir(parents=True)
    (root / "demo" / "notes" / "fact").mkdir(parents=True)
    (root / "demo" / "notes" / "fact" / "seed.md").write_text("seed\n")
    make_index(root)
    return root


def make_index(root: Path) -> Path:
    path = root / ".memctl" / "index.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS t(x)")
    conn.close()
    return path


@pytest.fixture
def probe(tree: Path):
    started = ChangeProbe.start(tree)
    assert started is not None and started.failure is None
    yield started
    started.close()


def index_of(root: Path) -> Path:
    return root / ".memctl" / "index.sqlite"


def arm(probe: ChangeProbe, root: Path) -> None:
    """What a call does that found a change: it makes sure of the index its usual way,
    then settles the probe; the next check is then quiet."""
    probe.settle(probe.check(index_of(root)), index_of(root))
    assert quiet(probe, root)


def quiet(probe: ChangeProbe, root: Path) -> bool:
    return probe.check(index_of(root)).quiet


def test_nothing_changed_is_quiet_only_once_the_probe_is_armed(tree: Path, probe: ChangeProbe
                                                              ) -> None:
    assert probe.watching == 4  # the store, demo, demo/notes, demo/notes/fact
    assert not quiet(probe, tree)  # never made sure of: the usual way
    arm(probe, tree)
    assert quiet(probe, tree) and quiet(probe, tree)


@pytest.mark.parametrize("change", ["create", "rewrite", "append", "delete", "rename", "touch",
                                    "replace by rename", "uppercase suffix"])
def test_a_write_by_hand_between_two_calls_is_seen(tree: Path, probe: ChangeProbe,
                                                   change: str) -> None:
    folder = tree / "demo" / "notes" / "fact"
    arm(probe, tree)
    seed = folder / "seed.md"
    if change == "create":
        (folder / "new.md").write_text("new\n")
    elif change == "rewrite":
        seed.write_text("other\n")
    elif change == "append":
        with open(seed, "a") as handle:
            handle.write("more\n")
    elif change == "delete":
        seed.unlink()
    elif change == "rename":
        seed.rename(folder / "moved.md")
    elif change == "touch":
        os.utime(seed, (1, 1))
    elif change == "replace by rename":  # an editor's save: a dot temp file renamed over it
        (folder / ".seed.md.tmp").write_text("saved\n")
        os.replace(folder / ".seed.md.tmp", seed)
    else:
        (folder / "LOUD.MD").write_text("loud\n")
    assert not quiet(probe, tree)
    arm(probe, tree)  # and quiet again once made sure of


def test_what_the_walk_never_reads_leaves_it_quiet(tree: Path, probe: ChangeProbe) -> None:
    """Cookies (the round trip of other readers), dot files and folders, editor debris,
    files that are not Markdown, the store's own files and `.memctl/`, `.git/`."""
    arm(probe, tree)
    demo = tree / "demo"
    os.mknod(demo / f"{COOKIE_PREFIX}1-ab")
    os.unlink(demo / f"{COOKIE_PREFIX}1-ab")
    (demo / "notes" / ".seed.md.swp").write_text("swap")
    (demo / "notes" / "fact" / "seed.md~").write_text("backup")
    (demo / "notes" / "fact" / "4913").write_text("")  # vim's probe of the folder
    (demo / ".hidden").mkdir()
    (demo / ".hidden" / "x.md").write_text("never read")
    (tree / "memctl.toml").write_text("[search]\n")
    (tree / "README.md").write_text("not a note: top-level files never are\n")
    (tree / ".memctl" / "counters.sqlite").write_text("")
    (tree / ".git").mkdir()
    (tree / ".git" / "index").write_text("")
    assert quiet(probe, tree)


def test_a_new_project_folder_is_watched_by_the_call_that_sees_it(tree: Path,
                                                                  probe: ChangeProbe) -> None:
    arm(probe, tree)
    (tree / "newborn" / "notes" / "fact").mkdir(parents=True)
    assert not quiet(probe, tree)
    assert probe.watching == 7
    arm(probe, tree)
    (tree / "newborn" / "notes" / "fact" / "first.md").write_text("first\n")
    assert not quiet(probe, tree)


def test_a_new_sub_folder_made_deep_at_once_is_watched_all_the_way_down(
        tree: Path, probe: ChangeProbe) -> None:
    arm(probe, tree)
    (tree / "demo" / "episodes" / "2026-11" / "deep").mkdir(parents=True)
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "demo" / "episodes" / "2026-11" / "deep" / "e.md").write_text("episode\n")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "demo" / "episodes" / "2026-11" / "late.md").write_text("late\n")
    assert not quiet(probe, tree)


def test_a_folder_moved_or_deleted_is_seen_and_its_new_place_watched(tree: Path,
                                                                     probe: ChangeProbe) -> None:
    arm(probe, tree)
    (tree / "demo").rename(tree / "renamed")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "notes" / "fact" / "after.md").write_text("after\n")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "notes" / "new").mkdir()  # found at its new place, not the old
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "notes" / "new" / "n.md").write_text("in the new folder\n")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "notes" / "fact").rename(tree / "renamed" / "notes" / "facts")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "notes" / "facts" / "again.md").write_text("again\n")
    assert not quiet(probe, tree)
    arm(probe, tree)
    outside = tree.parent / "outside" / "topic"
    outside.mkdir(parents=True)
    (outside.parent).rename(tree / "renamed" / "moved-in")  # a folder tree moved in whole
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "renamed" / "moved-in" / "topic" / "t.md").write_text("moved in\n")
    assert not quiet(probe, tree)
    shutil.rmtree(tree / "renamed" / "moved-in")
    arm(probe, tree)
    shutil.rmtree(tree / "renamed" / "notes")
    assert not quiet(probe, tree)
    arm(probe, tree)
    assert probe.watching == 2  # the store and `renamed`


def test_the_store_folder_replaced_is_watched_at_its_path(tree: Path, probe: ChangeProbe) -> None:
    """`mv store store.old` and a store put in its place (a backup restored): the folder at
    the path is watched from the call that sees the change."""
    arm(probe, tree)
    tree.rename(tree.with_name("store.old"))
    shutil.copytree(tree.with_name("store.old"), tree)
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree / "demo" / "notes" / "fact" / "restored.md").write_text("in the new folder\n")
    assert not quiet(probe, tree)
    arm(probe, tree)
    (tree.with_name("store.old") / "demo" / "notes" / "fact" / "old.md").write_text("elsewhere\n")
    assert quiet(probe, tree)


def test_a_queue_overflow_says_changed_and_the_probe_starts_over(tree: Path,
                                                                 probe: ChangeProbe) -> None:
    """More events than the kernel queues (fs.inotify.max_queued_events) before a check:
    the kernel drops the rest and says so; the probe cannot tell what it missed (a new
    folder among them would go unwatched), so it says "changed" and watches everything anew."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip(f"max_queued_events is {limit}: too many events to make here")
    arm(probe, tree)
    folder = tree / "demo" / "notes" / "fact"
    pair = [folder / "a.md", folder / "b.md"]
    for path in pair:
        path.write_text("x\n")
    for number in range(limit + 10):  # alternating names: the kernel merges no two of them
        os.utime(pair[number % 2], (number, number))
    (tree / "demo" / "lost").mkdir()  # its event is lost: the queue is full
    assert not quiet(probe, tree)
    assert probe.watching == 5 and probe.failure is None  # found when it started over
    arm(probe, tree)
    (tree / "demo" / "lost" / "c.md").write_text("still seen\n")
    assert not quiet(probe, tree)


def test_another_index_file_at_the_path_is_not_vouched_for(tree: Path,
                                                           probe: ChangeProbe) -> None:
    """An index deleted and made again (by hand, or by a memctl that found it corrupt) may be
    empty: no file event says so, the file's identity does (the probe holds the old one open,
    so the new one cannot get its inode number)."""
    arm(probe, tree)
    index_of(tree).unlink()
    make_index(tree)
    assert not quiet(probe, tree)
    arm(probe, tree)


def test_a_call_that_settles_after_another_found_a_change_does_not_arm_the_probe(
        tree: Path, probe: ChangeProbe) -> None:
    first = probe.check(index_of(tree))
    (tree / "demo" / "notes" / "fact" / "new.md").write_text("new\n")
    second = probe.check(index_of(tree))  # another call found the write
    assert not first.quiet and not second.quiet
    probe.settle(first, index_of(tree))  # made sure of before the write: not enough
    assert not quiet(probe, tree)
    arm(probe, tree)


def test_a_probe_that_cannot_watch_says_changed_every_time(tmp_path: Path) -> None:
    gone = tmp_path / "no-store"
    probe = ChangeProbe.start(gone)
    assert probe is not None and probe.failure is not None and probe.watching == 0
    try:
        for _ in range(3):
            ticket = probe.check(gone / ".memctl" / "index.sqlite")
            probe.settle(ticket, gone / ".memctl" / "index.sqlite")
            assert not ticket.quiet
    finally:
        probe.close()


def test_a_forked_child_never_reads_the_probe(tree: Path, probe: ChangeProbe) -> None:
    """A child shares the descriptor: its reads would take events away from the process
    they are for (a parsing worker forked by the server, memctl.index.workers)."""
    use_change_probe(tree, probe)
    try:
        pid = os.fork()
        if pid == 0:  # the child: no probe for it
            os._exit(0 if change_probe(tree) is None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert change_probe(tree) is probe
    finally:
        use_change_probe(tree, None)
    assert change_probe(tree) is None


def test_a_closed_probe_says_changed(tree: Path, probe: ChangeProbe) -> None:
    arm(probe, tree)
    probe.close()
    assert not quiet(probe, tree)
    assert probe.watching == 0


# --- with the index and a real `memctl watch` ----------------------------------------------


class CreatedNames:
    """The names created in one folder, as a separate watch (watchdog's) sees them."""

    def __init__(self, folder: Path) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers.inotify import InotifyObserver

        self.folder = folder
        self.names: list[str] = []
        names = self.names

        class Handler(FileSystemEventHandler):
            def on_created(self, event) -> None:  # noqa: ANN001
                names.append(os.path.basename(event.src_path))

        self.observer = InotifyObserver()
        self.observer.schedule(Handler(), str(folder), recursive=False)
        self.observer.start()
        self.marks = 0

    def since_last(self) -> list[str]:
        """The names created since the last call: a sentinel is made and awaited (the events
        of one watch come in order, so everything before it has come)."""
        self.marks += 1
        sentinel = f".sentinel-{self.marks}"
        (self.folder / sentinel).touch()
        deadline = time.monotonic() + PATIENCE
        while sentinel not in self.names:
            assert time.monotonic() < deadline, "the observer never saw its sentinel"
            time.sleep(0.01)
        cut = self.names.index(sentinel)
        found, self.names[:cut + 1] = self.names[:cut], []
        return found

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(5)


@pytest.fixture
def watched_store(store_path: Path):
    commit_notes(store_path, 5)
    watcher = WatchProcess(store_path).ready()
    yield store_path
    watcher.stop()


def test_with_the_probe_a_call_that_finds_nothing_changed_asks_no_watcher_and_misses_nothing(
        watched_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cookie is the round trip to the watcher: the first call makes
    one, the next one (nothing changed) none; a note written by hand, a note in a project
    folder made between two calls, a note in a sub-folder made between two calls: each is
    found by the next call."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")  # the watcher's answer, never the walk
    store = Store.open(watched_store)
    probe = ChangeProbe.start(watched_store)
    assert probe is not None
    use_change_probe(store, probe)
    cookies = CreatedNames(watched_store)  # one cookie at the store's top (the watcher's
    # events come in one order: memctl.watch.observer)

    def ids(index: Index) -> list[str]:
        return [row[0] for row in index.conn.execute("SELECT id FROM docs ORDER BY id")]

    def asked() -> bool:
        return any(name.startswith(COOKIE_PREFIX) for name in cookies.since_last())

    try:
        index, found = fresh_during(store, ids)
        assert index.last_refresh is None and found == [nid(i) for i in range(5)]
        assert asked()  # made sure of through the watcher
        for _ in range(3):
            index, found = fresh_during(store, ids)
            assert index.last_refresh is None and len(found) == 5
            assert not asked()  # nothing changed: no round trip
            with ensure_fresh(store) as index:  # recall, list, show...: the same
                assert index.count("note") == 5
            assert not asked()
        (watched_store / "demo" / "notes" / "fact" / "hand.md").write_text(
            note_text(nid(10), "written by hand"))
        assert nid(10) in fresh_during(store, ids)[1]
        assert asked()
        assert len(fresh_during(store, ids)[1]) == 6 and not asked()
        for number, folder in ((11, watched_store / "newborn" / "notes"),
                               (12, watched_store / "demo" / "sub" / "deep")):
            folder.mkdir(parents=True)
            before = fresh_during(store, ids)[1]  # sees the new folder (and watches it)
            assert asked()
            assert fresh_during(store, ids)[1] == before and not asked()
            (folder / "late.md").write_text(note_text(nid(number), "written later"))
            assert fresh_during(store, ids)[1] == sorted([*before, nid(number)])
        with ensure_fresh(store) as index:
            assert index.get(nid(11))["path"] == "newborn/notes/late.md"
            assert index.get(nid(12))["path"] == "demo/sub/deep/late.md"
    finally:
        use_change_probe(store, None)
        probe.close()
        cookies.stop()
