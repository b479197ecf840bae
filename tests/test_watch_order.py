# ruff: noqa: F401, F811 - the fixtures of tests/test_watch.py, imported, then asked for by name
"""One cookie at the store's top answers for the whole store (docs/watch.md, "Never stale,
watcher or not: cookies"): these are the ways a folder can change under the watcher that
could leave it watching less than the store, or watching under wrong paths, while it still
answered readers. Each case writes a note by hand after the change and asks the watcher
(never the walk: MEMCTL_WATCH_SYNC_WAIT=30) unless it is one where the watcher must not
answer; the note must be found. Real folders, a real `memctl watch`, real inotify."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_watch import WatchProcess, nid, note_text, notes_store, watcher

from memctl.core.errors import UnknownIdError
from memctl.index.db import ensure_fresh
from memctl.watch.observer import StoreObserver
from memctl.watch.watcher import Watcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")

PATIENCE = 30.0  # a safety net for a broken watcher, never a measure of speed


def found_by_the_watcher(notes_store: Path, note_id: str) -> tuple[bool, bool]:
    """(the watcher answered, the note is in the index) for a reader asking now."""
    with ensure_fresh(notes_store) as index:
        answered = index.last_refresh is None
        try:
            index.get(note_id)
        except UnknownIdError:
            return answered, False
        return answered, True


def after_a_batch(watch: WatchProcess, mark: int) -> None:
    watch.wait_for(lambda: watch.batches(mark), "a batch")
    time.sleep(0.3)


@pytest.fixture(autouse=True)
def _the_watchers_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")




def test_a_project_folder_moved_away_and_back_in_one_batch_is_watched_again(
        watcher: WatchProcess, notes_store: Path, tmp_path: Path) -> None:
    demo = notes_store / "demo"
    mark = watcher.mark()
    os.rename(demo, tmp_path / "elsewhere")
    os.rename(tmp_path / "elsewhere", demo)
    after_a_batch(watcher, mark)
    (demo / "notes" / "fact" / "late.md").write_text(note_text(nid(900), "a gecko note"))
    assert found_by_the_watcher(notes_store, nid(900)) == (True, True)


def test_a_project_folder_removed_and_made_again_in_one_batch_is_watched_again(
        watcher: WatchProcess, notes_store: Path) -> None:
    project = notes_store / "proj"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "a.md").write_text(note_text(nid(901), "first"))
    assert found_by_the_watcher(notes_store, nid(901)) == (True, True)
    mark = watcher.mark()
    shutil.rmtree(project)
    (project / "notes").mkdir(parents=True)
    after_a_batch(watcher, mark)
    (project / "notes" / "b.md").write_text(note_text(nid(902), "a tuatara note"))
    assert found_by_the_watcher(notes_store, nid(902)) == (True, True)


@pytest.mark.parametrize("attempt", range(2))
def test_a_store_away_and_back_before_the_next_look_is_watched_afresh_before_any_answer(
        watcher: WatchProcess, notes_store: Path, attempt: int) -> None:
    """The store folder moved away, a folder made in it there, and moved back, then a reader
    at once: its cookie changes the store folder's times as the move does, so the watcher
    learns of the move from the folder's own event, and starts over before it answers."""
    away = notes_store.with_name("away")
    os.rename(notes_store, away)
    (away / "demo" / "notes" / "later").mkdir()
    time.sleep(0.05)
    os.rename(away, notes_store)
    found_by_the_watcher(notes_store, nid(1))
    time.sleep(1.0)
    (notes_store / "demo" / "notes" / "later" / "n40.md").write_text(note_text(nid(940), "kiwi"))
    assert found_by_the_watcher(notes_store, nid(940)) == (True, True)
    assert any(line.get("event") == "message" and "back" in line.get("message", "")
               for line in watcher.lines)


@pytest.mark.parametrize("change", ["made", "renamed"])
def test_a_folder_made_or_renamed_while_events_overflowed_is_watched_by_its_path(
        notes_store: Path, change: str) -> None:
    """More events than the kernel queues while the watcher is stopped (SIGSTOP): the event
    of a folder made, or renamed, is lost with the others. The watcher then watches every
    folder again by its path now, so later writes there are seen, under their real path."""
    folder = notes_store / "demo" / "notes" / "fact"
    (folder / "sub").mkdir()
    watch = WatchProcess(notes_store).ready()
    # Past the kernel's queue by a margin: events read before the stop is in force are not
    # queued any more.
    junk = [folder / f".junk{number}" for number in
            range(int(Path("/proc/sys/fs/inotify/max_queued_events").read_text()) + 2000)]
    try:
        watch.proc.send_signal(signal.SIGSTOP)
        stopped_by(watch.proc.pid)
        for path in junk:
            os.mknod(path)
        target = folder / ("new" if change == "made" else "sub2")
        if change == "made":
            target.mkdir()
        else:
            os.rename(folder / "sub", target)
        mark = watch.mark()
        watch.proc.send_signal(signal.SIGCONT)
        watch.wait_for(lambda: [batch for batch in watch.batches(mark) if batch.get("full")],
                       "the full pass", 60)
        for path in junk:
            path.unlink()
        time.sleep(0.5)
        (target / "late.md").write_text(note_text(nid(970), "a takahe note"))
        assert found_by_the_watcher(notes_store, nid(970)) == (True, True)
    finally:
        watch.proc.send_signal(signal.SIGCONT)
        watch.stop()


def stopped_by(pid: int) -> None:
    """Wait until every thread of process `pid` is stopped (SIGSTOP is in force)."""
    deadline = time.monotonic() + PATIENCE
    while True:
        states = []
        for thread in os.listdir(f"/proc/{pid}/task"):
            stat = Path(f"/proc/{pid}/task/{thread}/stat").read_bytes()
            states.append(stat[stat.rfind(b")") + 2:][:1])
        if all(state in (b"T", b"t") for state in states):
            return
        assert time.monotonic() < deadline, "the watcher never stopped"
        time.sleep(0.005)


def test_a_store_path_that_is_a_link_is_watched_through_it(notes_store: Path,
                                                           tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(notes_store)
    watch = WatchProcess(link).ready()
    try:
        (notes_store / "demo" / "notes" / "fact" / "late.md").write_text(
            note_text(nid(960), "a weta note"))
        assert found_by_the_watcher(link, nid(960)) == (True, True)
        (notes_store / "newp" / "notes").mkdir(parents=True)
        (notes_store / "newp" / "notes" / "x.md").write_text(note_text(nid(961), "a moa note"))
        assert found_by_the_watcher(link, nid(961)) == (True, True)
    finally:
        watch.stop()


def test_a_folder_past_the_watch_limit_is_never_trusted_to_the_watcher(
        notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sub-folder made once the inotify watch limit is reached has no watch: the watcher
    answers no reader while that is so, and readers check the files themselves."""
    if subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True).returncode:
        pytest.skip("no user namespaces here")
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "0.3")
    folders = 1 + sum(1 for top in notes_store.iterdir()
                      if top.is_dir() and not top.name.startswith(".")
                      for _ in os.walk(top))
    watch = WatchProcess(notes_store, prefix=(
        "unshare", "-U", "-r", "sh", "-c",
        f'echo {folders + 1} > /proc/sys/user/max_inotify_watches && exec "$@"', "sh")).ready()
    try:
        folder = notes_store / "demo" / "notes" / "fact"
        for number in (1, 2):
            (folder / f"sub{number}").mkdir()
        time.sleep(0.5)
        found_by_the_watcher(notes_store, nid(1))
        (folder / "sub2" / "late.md").write_text(note_text(nid(950), "a kakapo note"))
        answered, found = found_by_the_watcher(notes_store, nid(950))
        assert found and not answered
    finally:
        watch.stop()


def test_the_observer_works_with_a_descriptor_past_1023(tmp_path: Path) -> None:
    """select() cannot wait on a descriptor numbered 1024 or more: a long-running process
    holding many files would have a deaf observer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open 1,100 files here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
    events: list[object] = []
    try:
        class Handler:
            def dispatch(self, event: object) -> None:
                events.append(event)

        observer = StoreObserver(lambda: None)
        observer.start()
        observer.schedule(Handler(), str(tmp_path), recursive=True)
        (tmp_path / "x.md").write_text("x")
        deadline = time.monotonic() + 30
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
        assert observer.is_alive() and events
        observer.stop()
        observer.join()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_folders_made_deep_then_renamed_report_their_new_paths(
        watcher: WatchProcess, notes_store: Path) -> None:
    base = notes_store / "demo" / "notes"
    (base / "a" / "b" / "c").mkdir(parents=True)
    (base / "a" / "b" / "c" / "n.md").write_text(note_text(nid(990), "one"))
    assert found_by_the_watcher(notes_store, nid(990)) == (True, True)
    os.rename(base / "a", base / "z")
    (base / "z" / "b" / "c" / "n3.md").write_text(note_text(nid(992), "three"))
    with ensure_fresh(notes_store) as index:
        assert index.last_refresh is None
        assert [index.get(nid(number))["path"] for number in (990, 992)] == [
            "demo/notes/z/b/c/n.md", "demo/notes/z/b/c/n3.md"]


def another_users_folder(path: Path) -> None:
    path.mkdir(parents=True)
    try:
        os.chown(path, 12345, 12345)
    except PermissionError:
        pytest.skip("cannot give a folder to another user here")
    os.chmod(path, 0o700)


@pytest.fixture
def in_a_user_namespace() -> None:
    if subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True).returncode:
        pytest.skip("no user namespaces here")


@pytest.mark.parametrize("when", ["at start", "while it runs", "in a new project"])
def test_a_folder_it_may_not_read_is_skipped_and_the_rest_is_watched(
        notes_store: Path, in_a_user_namespace: None, when: str) -> None:
    """inotify needs read permission on a folder: one the watcher may not read is left
    unwatched, as watchdog leaves it (the walk cannot read it either), and everything else
    is watched and answered for. It stopped the watcher at start, and made it answer no
    reader once such a folder came while it ran."""
    places = {"at start": notes_store / "demo" / "notes" / "private",
              "while it runs": notes_store / "demo" / "notes" / "private",
              "in a new project": notes_store / "newp" / "notes" / "private"}
    if when == "at start":
        another_users_folder(places[when])
    # In a user namespace of its own, a folder owned by a user it does not map is another
    # user's, one it may not read (as root may).
    watch = WatchProcess(notes_store, prefix=("unshare", "-U", "-r")).ready()
    try:
        if when != "at start":
            another_users_folder(places[when])
            time.sleep(0.5)
        (notes_store / "demo" / "notes" / "fact" / "late.md").write_text(
            note_text(nid(800), "a kea note"))
        assert found_by_the_watcher(notes_store, nid(800)) == (True, True)
        (notes_store / "newp" / "notes").mkdir(parents=True, exist_ok=True)
        (notes_store / "newp" / "notes" / "x.md").write_text(note_text(nid(801), "a moa note"))
        assert found_by_the_watcher(notes_store, nid(801)) == (True, True)
        assert watch.proc.poll() is None
    finally:
        watch.stop()


def test_a_top_it_could_not_list_once_unwatches_nothing(
        notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a full pass the watcher mends its watches from a listing of the store's top.
    That listing failing once (too many open files in a long-running `memctl mcp`: here the
    failure is made by hand, the rest is real) took every project folder for gone and
    unwatched it, while the watcher went on answering readers."""
    listings: list[bool] = []
    list_tops = Watcher._list_tops

    def failing_once(self: Watcher) -> list[str] | None:
        if listings and listings[-1]:
            listings.append(False)
            return None
        return list_tops(self)

    monkeypatch.setattr(Watcher, "_list_tops", failing_once)
    watch = Watcher(notes_store)
    ready = threading.Event()
    thread = threading.Thread(target=watch.run, kwargs={"on_ready": ready.set}, daemon=True)
    thread.start()
    try:
        assert ready.wait(PATIENCE)
        assert found_by_the_watcher(notes_store, nid(1)) == (True, True)
        listings.append(True)  # the next listing fails
        watch._on_overflow()  # a full pass, as after an overflow or each minute
        deadline = time.monotonic() + PATIENCE
        while listings[-1] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(watch._watches) == ["", "demo", "global"]
        (notes_store / "demo" / "notes" / "fact" / "late.md").write_text(
            note_text(nid(810), "a kea note"))
        assert found_by_the_watcher(notes_store, nid(810)) == (True, True)
    finally:
        watch.stop()
        thread.join(PATIENCE)
