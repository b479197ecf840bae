"""The watcher's observer on Linux (memctl.watch.observer): every watched folder in one inotify
descriptor, so its events come in the order they happened, whatever folder they are in; that
is what lets a reader ask the watcher with one cookie at the store's top (docs/watch.md,
"Cookies"). Real folders, real inotify, the observer's own thread."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from memctl.watch.observer import Event, StoreObserver

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")

PATIENCE = 30.0  # a safety net for a broken observer, never a measure of speed


class Seen:
    """A handler that keeps every event, and a sentinel to wait on: the observer reports in
    order, so once the sentinel's creation is seen, every event before it has been."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.overflows = 0
        self._cond = threading.Condition()
        self._marks = 0

    def dispatch(self, event: Event) -> None:
        if ".sentinel-" in event.src_path and event.event_type != "created":
            return  # a sentinel's close: only its creation marks the place
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def overflow(self) -> None:
        with self._cond:
            self.overflows += 1
            self._cond.notify_all()

    def until(self, folder: Path) -> list[tuple[str, str, bool]]:
        """(type, path, is a folder) of the events before a sentinel made now in `folder`,
        taken away."""
        self._marks += 1
        sentinel = folder / f".sentinel-{self._marks}"
        sentinel.touch()
        deadline = time.monotonic() + PATIENCE
        with self._cond:
            while True:
                paths = [event.src_path for event in self.events]
                if str(sentinel) in paths:
                    cut = paths.index(str(sentinel))
                    taken, self.events = self.events[:cut], self.events[cut + 1:]
                    return [(e.event_type, e.src_path, e.is_directory) for e in taken]
                left = deadline - time.monotonic()
                assert left > 0, "the observer never reported its sentinel"
                self._cond.wait(left)


@pytest.fixture
def observed(tmp_path: Path):
    root = tmp_path / "store"
    (root / "a" / "notes").mkdir(parents=True)
    (root / "b" / "notes").mkdir(parents=True)
    seen = Seen()
    observer = StoreObserver(seen.overflow)
    observer.start()
    observer.schedule(seen, str(root), recursive=False)
    observer.schedule(seen, str(root / "a"), recursive=True)
    observer.schedule(seen, str(root / "b"), recursive=True)
    yield root, seen, observer
    observer.stop()
    observer.join()


def test_files_made_written_and_removed_are_reported_as_watchdog_reports_them(observed) -> None:
    root, seen, _observer = observed
    note = root / "a" / "notes" / "n.md"
    note.write_text("one")
    with note.open("a") as handle:
        handle.write(" two")
    note.rename(root / "b" / "notes" / "n.md")
    (root / "b" / "notes" / "n.md").unlink()
    assert seen.until(root) == [
        ("created", str(note), False), ("modified", str(note), False),
        ("closed", str(note), False),
        ("modified", str(note), False), ("closed", str(note), False),
        ("moved", str(note), False),  # the "from" half: no destination
        ("created", str(root / "b" / "notes" / "n.md"), False),  # the "to" half
        ("deleted", str(root / "b" / "notes" / "n.md"), False)]


def test_events_of_different_folders_come_in_the_order_they_happened(observed) -> None:
    """What one cookie at the store's top relies on: a write in any watched folder that
    returned before the cookie was made is reported before the cookie."""
    root, seen, _observer = observed
    folders = [root / "a" / "notes", root / "b" / "notes", root]
    made = []
    for number in range(300):
        path = folders[number % 3] / f"f{number}.md"
        os.mknod(path)
        made.append(str(path))
    reported = [path for kind, path, _ in seen.until(root) if kind == "created"]
    assert reported == made


def test_a_folder_made_under_a_recursive_watch_is_watched_before_it_is_reported(
        observed) -> None:
    root, seen, _observer = observed
    new = root / "a" / "notes" / "sub"
    new.mkdir()
    assert seen.until(root) == [("created", str(new), True)]
    (new / "x.md").write_text("x")  # its folder was reported: it is watched
    deeper = new / "deeper"
    deeper.mkdir()
    assert seen.until(root) == [("created", str(new / "x.md"), False),
                                ("modified", str(new / "x.md"), False),
                                ("closed", str(new / "x.md"), False),
                                ("created", str(deeper), True)]
    (deeper / "y.md").touch()
    assert seen.until(root) == [("created", str(deeper / "y.md"), False),
                                ("closed", str(deeper / "y.md"), False)]


def test_a_folder_made_at_the_top_of_a_plain_watch_is_reported_and_not_watched(
        observed) -> None:
    """The store's top is watched alone: a new project folder is the watcher's to watch."""
    root, seen, _observer = observed
    (root / "c").mkdir()
    (root / "c" / "x.md").touch()
    assert seen.until(root) == [("created", str(root / "c"), True)]


def test_a_folder_moved_away_is_let_go_and_one_moved_in_is_watched(observed,
                                                                    tmp_path: Path) -> None:
    root, seen, _observer = observed
    away = tmp_path / "elsewhere"
    away.mkdir()
    sub = root / "a" / "notes" / "sub"
    (sub / "deep").mkdir(parents=True)
    seen.until(root)
    sub.rename(away / "sub")
    assert seen.until(root) == [("moved", str(sub), True)]
    # Its watches would report writes there under its old path: they are gone.
    (away / "sub" / "deep" / "z.md").write_text("z")
    (away / "sub" / "w.md").write_text("w")
    assert seen.until(root) == []
    # Moved back in (under another project): watched, with its sub-folders.
    (away / "sub").rename(root / "b" / "notes" / "sub")
    assert seen.until(root) == [("created", str(root / "b" / "notes" / "sub"), True)]
    (root / "b" / "notes" / "sub" / "deep" / "q.md").touch()
    assert [kind for kind, _path, _ in seen.until(root)] == ["created", "closed"]


def test_a_watch_unscheduled_reports_nothing_more(observed) -> None:
    root, seen, observer = observed
    other = root.parent / "other"
    other.mkdir()
    watch = observer.schedule(seen, str(other), recursive=True)
    (other / "one.md").touch()
    assert ("created", str(other / "one.md"), False) in seen.until(root)
    observer.unschedule(watch)
    (other / "two.md").touch()
    assert seen.until(root) == []


def test_scheduling_a_folder_that_is_not_there_raises_file_not_found(observed) -> None:
    root, seen, observer = observed
    with pytest.raises(FileNotFoundError):
        observer.schedule(seen, str(root / "missing"), recursive=True)


def test_a_queue_overflow_is_reported(tmp_path: Path) -> None:
    """More events than the kernel queues (fs.inotify.max_queued_events) before the observer
    reads any: events were lost, and the watcher must hear it (it then walks everything)."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}: too many events to make here")
    folder = tmp_path / "w"
    folder.mkdir()
    seen = Seen()
    observer = StoreObserver(seen.overflow)
    observer.schedule(seen, str(folder), recursive=False)
    # Two files in turn: the kernel merges an event only with the one just before it.
    paths = [folder / "x.md", folder / "y.md"]
    fds = [os.open(path, os.O_WRONLY | os.O_CREAT) for path in paths]
    try:
        for number in range(limit + 10):
            os.write(fds[number % 2], b"x")
    finally:
        for fd in fds:
            os.close(fd)
    observer.start()
    try:
        deadline = time.monotonic() + PATIENCE
        while not seen.overflows:
            assert time.monotonic() < deadline, "no overflow reported"
            time.sleep(0.01)
    finally:
        observer.stop()
        observer.join()


def test_stopping_lets_go_of_the_descriptor(tmp_path: Path) -> None:
    def open_descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_descriptors()
    observer = StoreObserver(lambda: None)
    observer.start()
    observer.schedule(Seen(), str(tmp_path), recursive=True)
    assert open_descriptors() > before
    observer.stop()
    observer.join()
    assert not observer.is_alive()
    assert open_descriptors() == before


def test_a_thread_that_ends_after_join_gave_up_still_lets_go_of_the_descriptors(
        tmp_path: Path) -> None:
    """`join` waits a second; a thread busy for longer (a slow handler at a restart) must
    close the inotify descriptor and its pipe itself when it ends, or each restart of a
    long-running watcher would keep an inotify instance and its watches."""
    class Slow:
        def dispatch(self, event: Event) -> None:
            time.sleep(1.5)

    before = set(os.listdir("/proc/self/fd"))
    observer = StoreObserver(lambda: None)
    observer.start()
    observer.schedule(Slow(), str(tmp_path), recursive=True)
    (tmp_path / "x.md").touch()
    time.sleep(0.2)
    observer.stop()
    observer.join(0.5)
    assert observer.is_alive()  # join gave up
    deadline = time.monotonic() + PATIENCE
    while observer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(os.listdir("/proc/self/fd")) == before
