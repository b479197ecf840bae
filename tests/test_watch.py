"""`memctl watch`: the coalescer's promises (pure), then the real watcher as a subprocess on
real files: editor saves, deletes, moves, a branch checkout, an unzip of unchanged files,
shutdown, one watcher per store."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import HARNESS, frozen_code, git, memctl_executable, run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.disk.watchstate import (
    COOKIE_PREFIX,
    ORDERED,
    Heartbeat,
    WatcherRunning,
    WatchLock,
    read_status,
    store_identity,
    watcher_is_live,
)
from memctl.index.db import Index, ensure_fresh, fresh_during, open_index
from memctl.services.retrieval import search
from memctl.store import Store
from memctl.watch.events import Coalescer, interpret, relative

# --- the coalescer (pure) ------------------------------------------------------------------


def test_a_burst_becomes_one_batch_after_the_quiet_window() -> None:
    c = Coalescer(quiet=0.05, max_delay=1.0)
    for i in range(100):
        c.add_path(f"p/notes/n{i % 7}.md", now=i * 0.001)
    assert c.take(0.1 - 0.05) is None  # 0.05 s after the first event, 0.001 s after the last
    batch = c.take(0.099 + 0.05)
    assert batch is not None and batch.paths == {f"p/notes/n{i}.md" for i in range(7)}
    assert batch.events == 100
    assert c.take(10.0) is None  # nothing left


def test_a_never_ending_storm_is_still_applied_at_the_upper_bound() -> None:
    c = Coalescer(quiet=0.05, max_delay=1.0)
    now = 0.0
    taken = []
    while now < 3.0:
        c.add_path("p/a.md", now)
        batch = c.take(now)
        if batch:
            taken.append(now)
        now += 0.01
    assert len(taken) >= 2 and taken[0] <= 1.0 + 1e-9


def test_git_holding_its_index_lock_keeps_the_batch_back_up_to_a_bound() -> None:
    c = Coalescer(quiet=0.05, max_delay=1.0, hold_max=3.0)
    c.add_path("p/a.md", 0.0)
    assert c.take(0.5, hold=True) is None
    assert c.take(2.9, hold=True) is None
    assert c.take(3.0, hold=True) is not None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.3), st.integers(0, 20), st.booleans()), max_size=60))
def test_no_change_is_ever_lost_or_applied_early(steps: list[tuple[float, int, bool]]) -> None:
    """Every path handed in comes out in a batch; no batch leaves before its quiet window
    (or upper bound) has passed."""
    c = Coalescer(quiet=0.05, max_delay=1.0)
    now, seen, out = 0.0, set(), set()
    first = last = None
    for gap, n, try_take in steps:
        now += gap
        if try_take:
            batch = c.take(now)
            if batch is not None:
                assert first is not None and last is not None
                assert now >= min(last + 0.05, first + 1.0)
                out |= batch.paths
                first = last = None
        path = f"p/n{n}.md"
        c.add_path(path, now)
        seen.add(path)
        first = now if first is None else first
        last = now
    final = c.take(now + 2.0)
    if final is not None:
        out |= final.paths
    assert out == seen


def _feed(event: str, is_dir: bool, src: str | None, dest: str | None = None) -> Coalescer:
    from memctl.watch.watcher import Watcher

    c = Coalescer()
    interpret(event, is_dir, src, dest, Watcher.is_memory, Watcher.is_watched_top, c, 0.0)
    return c


def test_reads_and_editor_debris_start_no_batch() -> None:
    assert _feed("opened", False, "p/a.md").take(5.0) is None
    assert _feed("closed_no_write", False, "p/a.md").take(5.0) is None
    assert _feed("created", False, "p/notes/.a.md.swp").take(5.0) is None
    assert _feed("deleted", False, "p/notes/a.md~").take(5.0) is None
    assert _feed("closed", False, "memctl.toml").take(5.0) is None


def test_saves_and_moves_name_the_memory_paths() -> None:
    batch = _feed("moved", False, "p/notes/.a.md.tmp", "p/notes/a.md").take(5.0)
    assert batch is not None and batch.paths == {"p/notes/a.md"}
    batch = _feed("moved", False, "p/notes/a.md", "p/notes/a.md~").take(5.0)  # vim's backup
    assert batch is not None and batch.paths == {"p/notes/a.md"}


def test_folders_that_appear_vanish_or_leave_the_tree() -> None:
    batch = _feed("created", True, "newproj").take(5.0)
    assert batch is not None and batch.new_tops == {"newproj"} and not batch.full
    batch = _feed("deleted", True, "p/notes/fact").take(5.0)  # moved out: no per-file events
    assert batch is not None and batch.paths == {"p/notes/fact"}  # refresh walks the folder
    batch = _feed("moved", True, "p", "q").take(5.0)  # a project renamed
    assert batch is not None and batch.gone_tops == {"p"} and batch.new_tops == {"q"}
    batch = _feed("moved", False, None, "q/notes/a.md").take(0.1)  # half a move: wait for the rest
    assert batch is None
    assert _feed("created", True, ".git").take(5.0) is None
    assert _feed("created", True, ".memctl").take(5.0) is None


def test_relative_paths() -> None:
    assert relative("/s/store", "/s/store/p/a.md") == "p/a.md"
    assert relative("/s/store", "/s/store") is None
    assert relative("/s/store", "/s/store2/p/a.md") is None


# --- heartbeat and lock (other processes' view) -----------------------------------------------


def test_one_lock_per_store_and_no_heartbeat_means_no_watcher(tmp_path: Path) -> None:
    assert not watcher_is_live(tmp_path) and read_status(tmp_path) is None
    with WatchLock(tmp_path):
        with pytest.raises(WatcherRunning, match="already runs"):
            WatchLock(tmp_path).acquire()
    WatchLock(tmp_path).acquire()  # free again


def test_a_stale_or_dead_heartbeat_is_not_live(tmp_path: Path) -> None:
    state = tmp_path / ".memctl"
    state.mkdir()
    import socket

    beat = {"pid": os.getpid(), "host": socket.gethostname(), "state": "ready",
            "started": time.time(), "heartbeat": time.time(), **store_identity(tmp_path)}
    (state / "watch.json").write_text(json.dumps(beat))
    assert watcher_is_live(tmp_path)
    (state / "watch.json").write_text(json.dumps({**beat, "heartbeat": time.time() - 60}))
    assert not watcher_is_live(tmp_path)
    (state / "watch.json").write_text(json.dumps({**beat, "state": "starting"}))
    assert not watcher_is_live(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (state / "watch.json").write_text(json.dumps({**beat, "pid": dead.pid}))
    assert not watcher_is_live(tmp_path)
    (state / "watch.json").write_text("{half a fi")
    assert not watcher_is_live(tmp_path)


def test_a_heartbeat_written_for_another_folder_is_not_trusted(tmp_path: Path) -> None:
    """A live watcher's heartbeat names the folder it watches; the same beat found in another
    folder (a copy of the store), or one without the name (an older watcher), is no watcher."""
    import socket

    original, elsewhere = tmp_path / "a", tmp_path / "b"
    for root in (original, elsewhere):
        (root / ".memctl").mkdir(parents=True)
    beat = {"pid": os.getpid(), "host": socket.gethostname(), "state": "ready",
            "started": time.time(), "heartbeat": time.time(), **store_identity(original)}
    for root in (original, elsewhere):
        (root / ".memctl" / "watch.json").write_text(json.dumps(beat))
    assert watcher_is_live(original) and not watcher_is_live(elsewhere)
    assert read_status(elsewhere) is None
    assert "store" not in read_status(original).extra
    # The same path but another folder there (the store replaced): not the one watched.
    original.rename(tmp_path / "a.old")
    (original / ".memctl").mkdir(parents=True)
    (original / ".memctl" / "watch.json").write_text(json.dumps(beat))
    assert not watcher_is_live(original)
    unnamed = {key: value for key, value in beat.items() if not key.startswith("store")}
    (elsewhere / ".memctl" / "watch.json").write_text(json.dumps(unnamed))
    assert not watcher_is_live(elsewhere)


def test_status_says_when_the_watcher_started_in_utc(store_path: Path) -> None:
    """The heartbeat keeps epoch seconds; `--status` says them as every time memctl writes:
    ISO 8601 UTC in the JSON, UTC named in the text, whatever the machine's time zone."""
    import socket

    beat = {"pid": os.getpid(), "host": socket.gethostname(), "state": "ready",
            "started": 1796281581.7, "heartbeat": time.time(), **store_identity(store_path)}
    (store_path / ".memctl" / "watch.json").write_text(json.dumps(beat))
    zone = {"TZ": "Asia/Shanghai"}
    status = run_memctl("watch", "--status", "--json", store=store_path, env=zone)
    assert status.exit_code == 0 and status.json()["live"] is True, status.stdout
    assert status.json()["started"] == "2026-12-03T07:06:21.700Z"
    text = run_memctl("watch", "--status", store=store_path, env=zone).stdout
    assert "since 2026-12-03 07:06:21 UTC," in text, text
    assert read_status(store_path).started == 1796281581.7  # the heartbeat as it was


# --- the real watcher, a subprocess on real files ----------------------------------------------

DEADLINE = 15.0  # generous: the suite may share two cores with others


def note_text(note_id: str, body: str, note_type: str = "fact") -> str:
    return (f"---\nid: {note_id}\ntype: {note_type}\nimportance: 5\n"
            f"created: 2026-11-01T10:00:00.000Z\nupdated: 2026-11-01T10:00:00.000Z\n---\n{body}\n")


def nid(i: int) -> str:
    return f"01testnote{i:06d}"


class WatchProcess:
    """`memctl watch --json` as a subprocess; its JSON lines are collected as they come."""

    def __init__(self, store: Path, *extra: str, env: dict[str, str] | None = None,
                 base: dict[str, str] | None = None, prefix: tuple[str, ...] = ()) -> None:
        """`prefix`: the command that runs memctl (`unshare -U -r`, say)."""
        env = {**(os.environ if base is None else base), **(env or {}),
               "MEMCTL_STORE": str(store)}
        self.proc = subprocess.Popen([*prefix, memctl_executable(), "watch", "--json", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self.lines: list[dict] = []
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(json.loads(line))

    def _read_err(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.stderr.append(line)

    def wait_for(self, predicate, what: str, timeout: float = DEADLINE):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; lines={self.lines[-5:]} "
                             f"stderr={''.join(self.stderr)[-2000:]}")

    def ready(self) -> WatchProcess:
        self.wait_for(lambda: any(e.get("event") == "ready" for e in self.lines), "ready")
        return self

    def batches(self, since: int = 0) -> list[dict]:
        return [e for e in self.lines[since:] if e.get("event") == "batch"]

    def mark(self) -> int:
        return len(self.lines)

    def settle(self, since: int, predicate, what: str) -> dict:
        """Wait until the batches since `since` satisfy `predicate(totals)`; return the totals."""
        def totals() -> dict | None:
            found = self.batches(since)
            total = {k: sum(b[k] for b in found) for k in ("added", "updated", "removed",
                                                            "unchanged")}
            total["batches"] = len(found)
            return total if found and predicate(total) else None
        return self.wait_for(totals, what)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def commit_notes(store: Path, count: int) -> Path:
    """`count` committed notes in project `demo` (`n0.md`…, body `original body i zebraiq`)."""
    folder = store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"n{i}.md").write_text(note_text(nid(i), f"original body {i} zebra{i}q"))
    git(store, "add", "-A")
    git(store, "commit", "-qm", f"{count} notes")
    return store


@pytest.fixture
def notes_store(store_path: Path) -> Path:
    """A store with 20 committed notes in project `demo`."""
    return commit_notes(store_path, 20)


@pytest.fixture
def watcher(notes_store: Path):
    proc = WatchProcess(notes_store).ready()
    yield proc
    proc.stop()


def search_ids(store: Path, query: str) -> list[str]:
    result = run_memctl("search", query, "--all-projects", "--json", store=store, project=None)
    assert result.exit_code == 0, result.stderr
    return [hit["id"] for hit in json.loads(result.stdout)]


def test_a_search_while_it_runs_does_not_close_the_counters_last(watcher: WatchProcess,
                                                                 notes_store: Path) -> None:
    """`memctl watch` holds the access counters open, so a search's own connection is not the
    last to close: it leaves the WAL as it is instead of checkpointing it with an fsync (the
    WAL file is gone after a last close). The access still counts."""
    wal = notes_store / ".memctl" / "counters.sqlite-wal"
    assert search_ids(notes_store, "zebra3q") == [nid(3)]
    assert wal.exists()
    shown = run_memctl("show", nid(3), "--json", store=notes_store, project=None)
    assert shown.exit_code == 0, shown.stderr
    assert shown.json()["access_count"] == 1


def test_saves_of_every_kind_reach_the_index(watcher: WatchProcess, notes_store: Path) -> None:
    folder = notes_store / "demo" / "notes" / "fact"
    written: dict[str, str] = {}

    def save(name: str, text: str, how: str) -> None:
        path = folder / name
        if how == "in place":
            with open(path, "w") as handle:
                handle.write(text)
        elif how == "rename":
            tmp = folder / f".{name}.tmp123"
            tmp.write_text(text)
            os.replace(tmp, path)
        elif how == "vim":  # backupcopy=no: the note is renamed away, written anew, backup gone
            os.rename(path, folder / f"{name}~")
            path.write_text(text)
            os.unlink(folder / f"{name}~")
        written[name] = text

    for i, how in enumerate(("in place", "rename", "vim")):
        mark = watcher.mark()
        save(f"n{i}.md", note_text(nid(i), f"saved {how} quokka{i}"), how)
        totals = watcher.settle(mark, lambda t: t["updated"] >= 1, f"the {how} save")
        assert totals["added"] == 0 and totals["removed"] == 0  # never vanished, same id
    assert set(search_ids(notes_store, "quokka0 OR quokka1 OR quokka2")) == {nid(0), nid(1),
                                                                          nid(2)}
    assert nid(1) not in search_ids(notes_store, "zebra1q")  # the old text is gone
    for name, text in written.items():  # the watcher never touched a byte
        assert (folder / name).read_text() == text


def test_real_vim_save(watcher: WatchProcess, notes_store: Path) -> None:
    import shutil

    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    path = notes_store / "demo" / "notes" / "fact" / "n5.md"
    mark = watcher.mark()
    subprocess.run(["vim", "-Es", "-u", "NONE", "-i", "NONE", "-c",
                    "set nobackup writebackup backupcopy=no", "-c", "%s/zebra5q/wombat5/",
                    "-c", "wq", str(path)], check=True, timeout=20, stdin=subprocess.DEVNULL)
    totals = watcher.settle(mark, lambda t: t["updated"] >= 1, "vim's save")
    assert totals["removed"] == 0 and totals["added"] == 0
    assert "wombat5" in path.read_text()


def test_a_file_emptied_mid_save_keeps_its_last_entry(watcher: WatchProcess,
                                                     notes_store: Path) -> None:
    path = notes_store / "demo" / "notes" / "fact" / "n3.md"
    mark = watcher.mark()
    path.write_text("")  # VS Code truncates first; the rest comes later
    watcher.wait_for(lambda: watcher.batches(mark), "a batch for the emptied file")
    assert sum(b["removed"] for b in watcher.batches(mark)) == 0
    assert search_ids(notes_store, "zebra3q")[:1] == [nid(3)]
    mark = watcher.mark()
    path.write_text(note_text(nid(3), "finished saving platypus"))
    watcher.settle(mark, lambda t: t["updated"] >= 1, "the finished save")
    assert search_ids(notes_store, "platypus") == [nid(3)]


def test_delete_and_move_between_folders(watcher: WatchProcess, notes_store: Path) -> None:
    folder = notes_store / "demo" / "notes"
    mark = watcher.mark()
    (folder / "fact" / "n7.md").unlink()
    watcher.settle(mark, lambda t: t["removed"] >= 1, "the delete")
    mark = watcher.mark()
    (folder / "decision").mkdir()
    os.rename(folder / "fact" / "n8.md", folder / "decision" / "n8.md")
    totals = watcher.settle(mark, lambda t: t["updated"] >= 1, "the move")
    assert totals["removed"] == 0 and totals["added"] == 0  # same id, new place
    mark = watcher.mark()
    (notes_store / "other").mkdir()  # a new project folder is watched as it appears ...
    watcher.settle(mark, lambda t: True, "the new project folder")
    mark = watcher.mark()
    os.rename(folder / "fact" / "n9.md", notes_store / "other" / "n9.md")  # ... and a move there
    totals = watcher.settle(mark, lambda t: t["updated"] >= 1, "the move to another project")
    assert totals["removed"] == 0 and totals["added"] == 0
    mark = watcher.mark()
    outside = notes_store.parent / "elsewhere"  # a project folder arriving whole (cp -r, unzip)
    (outside / "notes").mkdir(parents=True)
    (outside / "notes" / "x.md").write_text(note_text(nid(900), "arrived whole"))
    os.rename(outside, notes_store / "third")
    watcher.settle(mark, lambda t: t["added"] >= 1, "the project folder moved in")
    shown = run_memctl("show", nid(8), "--json", store=notes_store)
    assert json.loads(shown.stdout)["path"] == "demo/notes/decision/n8.md"
    assert nid(7) not in search_ids(notes_store, "zebra7q")
    shown = run_memctl("show", nid(9), "--json", store=notes_store)
    assert json.loads(shown.stdout)["path"] == "other/n9.md"


def test_a_branch_checkout_is_one_pass_and_an_unzip_of_the_same_files_reindexes_nothing(
        notes_store: Path, tmp_path: Path) -> None:
    folder = notes_store / "demo" / "notes" / "fact"
    git(notes_store, "checkout", "-qb", "other")
    for i in range(200):
        (folder / f"n{i}.md").write_text(note_text(nid(i), f"branch body {i} narwhal"))
    git(notes_store, "add", "-A")
    git(notes_store, "commit", "-qm", "200 notes on a branch")
    git(notes_store, "checkout", "-q", "main" if "main" in git(notes_store, "branch") else "master")
    proc = WatchProcess(notes_store).ready()
    try:
        mark = proc.mark()
        git(notes_store, "checkout", "-q", "other")
        totals = proc.settle(mark, lambda t: t["added"] + t["updated"] >= 200, "the checkout")
        assert totals["batches"] == 1 and totals["added"] == 180 and totals["updated"] == 20
        assert totals["removed"] == 0
        assert len(search_ids(notes_store, "narwhal")) >= 20

        archive = tmp_path / "backup.zip"
        subprocess.run(["zip", "-qr", str(archive), "demo"], cwd=notes_store, check=True)
        before = {p: p.read_bytes() for p in folder.iterdir()}
        mark = proc.mark()
        subprocess.run(["unzip", "-qo", str(archive)], cwd=notes_store, check=True)
        totals = proc.settle(mark, lambda t: t["unchanged"] >= 200, "the unzip")
        assert (totals["added"], totals["updated"], totals["removed"]) == (0, 0, 0)
        assert {p: p.read_bytes() for p in folder.iterdir()} == before
    finally:
        proc.stop()


def test_shutdown_on_sigterm_and_one_watcher_per_store(watcher: WatchProcess,
                                                      notes_store: Path) -> None:
    status = run_memctl("watch", "--status", "--json", store=notes_store)
    assert json.loads(status.stdout)["live"] is True
    second = run_memctl("watch", store=notes_store, timeout=30)
    assert second.exit_code == 1 and "already runs" in second.stderr
    watcher.proc.send_signal(signal.SIGTERM)
    watcher.proc.wait(30)
    assert watcher.proc.returncode == 0
    assert not watcher_is_live(notes_store)
    status = run_memctl("watch", "--status", "--json", store=notes_store)
    assert json.loads(status.stdout)["running"] is False


def committed_by_the_watcher(store: Path, head: str) -> None:
    """Wait for the watcher's commit after `head`; it holds every hand edit."""
    deadline = time.monotonic() + DEADLINE
    while git(store, "rev-parse", "HEAD") == head and time.monotonic() < deadline:
        time.sleep(0.1)
    assert git(store, "log", "-1", "--format=%s").startswith("memctl watch:")
    assert git(store, "status", "--porcelain") == ""


def test_people_get_one_line_per_batch_and_commits_wait_for_git(notes_store: Path) -> None:
    """Without --json: a ready line, then `+a ~u -r in N ms`. With --commit: hand edits are
    committed, but never while git holds its index lock."""
    import re

    env = {**os.environ, "MEMCTL_STORE": str(notes_store)}
    # Ctrl-C as a terminal sends it: when the suite itself runs as a shell's background job,
    # SIGINT arrives here ignored (POSIX), and an ignored signal stays ignored across exec.
    proc = subprocess.Popen([memctl_executable(), "watch", "--commit"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert "watching" in proc.stderr.readline()  # type: ignore[union-attr]
        head = git(notes_store, "rev-parse", "HEAD")
        lock = notes_store / ".git" / "index.lock"
        lock.write_text("")  # a person's git is mid-operation
        path = notes_store / "demo" / "notes" / "fact" / "n4.md"
        path.write_text(note_text(nid(4), "committed by the watcher"))
        line = proc.stderr.readline()  # type: ignore[union-attr]
        assert re.fullmatch(r"\+0 ~1 -0 in \d+ ms\n", line), line
        time.sleep(1.5)
        assert git(notes_store, "rev-parse", "HEAD") == head
        lock.unlink()
        committed_by_the_watcher(notes_store, head)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(DEADLINE)  # a commit under way finishes first
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the watcher did not stop on Ctrl-C; its stderr: "
                                 + proc.communicate()[1][-2000:]) from None
    assert proc.returncode == 0


def test_with_commit_a_save_another_command_indexed_first_is_committed(notes_store: Path) -> None:
    """A command that walks the store (one the watcher did not answer in time) may index a
    hand save before the watcher's own pass: that pass then changes nothing in the index,
    and `--commit` never committed the save, until some later one."""
    from memctl.watch.watcher import Watcher

    ensure_fresh(notes_store).close()  # the watcher's first pass finds nothing to index
    head = git(notes_store, "rev-parse", "HEAD")
    # A quiet window far longer than the refresh below takes, even on a loaded machine.
    watcher = Watcher(notes_store, commit=True, quiet=5.0, max_delay=8.0, commit_every=0.1)
    ready = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"on_ready": ready.set}, daemon=True)
    thread.start()
    try:
        assert ready.wait(DEADLINE)
        time.sleep(1.0)  # past the first ticks: nothing of the start is left to commit
        path = notes_store / "demo" / "notes" / "fact" / "n4.md"
        path.write_text(note_text(nid(4), "saved by hand, indexed by another command first"))
        with open_index(notes_store) as other:  # well within the watcher's quiet window
            assert other.refresh().files_changed == 1
        committed_by_the_watcher(notes_store, head)
    finally:
        watcher.stop()
        thread.join(DEADLINE)


def test_the_store_folder_replaced(watcher: WatchProcess, notes_store: Path) -> None:
    old = notes_store.with_name("store.old")
    first = read_status(notes_store)
    assert first is not None
    # Copied aside, then swapped in at once: a watcher looking during a copy made in place
    # would start over on a half-copied folder (and its `.memctl/` clash with the copy's).
    copy = notes_store.with_name("store.copy")
    # Its .memctl/ too, heartbeat and all, but for the search server's socket, which a copy
    # cannot open (it is there once the server, a process of its own, is listening).
    shutil.copytree(notes_store, copy, symlinks=True,
                    ignore=shutil.ignore_patterns("search.sock"))
    os.rename(notes_store, old)
    os.rename(copy, notes_store)
    watcher.wait_for(lambda: any(e.get("event") == "message" and "replaced" in e["message"]
                                 for e in watcher.lines), "the watcher to notice")

    def restarted() -> bool:
        status = read_status(notes_store)
        return status is not None and status.live and status.started != first.started
    watcher.wait_for(restarted, "the heartbeat of the watcher on the new folder")
    mark = watcher.mark()
    (notes_store / "demo" / "notes" / "fact" / "n6.md").write_text(note_text(nid(6), "axolotl"))
    watcher.settle(mark, lambda t: t["updated"] >= 1, "an edit in the new folder")
    assert search_ids(notes_store, "axolotl")[:1] == [nid(6)]


def test_an_index_cut_in_place_under_the_watcher_is_healed_not_fatal(
        watcher: WatchProcess, notes_store: Path) -> None:
    """The index file cut to nothing while the watcher holds it open, its WAL not yet
    checkpointed: the watcher died of SIGBUS (exit 135, not a word) reading the pages it had
    mapped. It now sees the file shorter than after its last pass, reopens the index (which
    rebuilds it) and keeps watching; searches find what was written before them."""
    fact = notes_store / "demo" / "notes" / "fact"
    mark = watcher.mark()
    for i in range(3):
        (fact / f"wal{i}.md").write_text(note_text(nid(100 + i), f"filler {i} quokka"))
    watcher.settle(mark, lambda t: t["added"] >= 3, "the three notes")
    assert len(search_ids(notes_store, "quokka")) == 3
    with open(notes_store / ".memctl" / "index.sqlite", "r+b") as handle:
        handle.truncate(0)
    (fact / "after.md").write_text(note_text(nid(200), "written after the cut wombat"))
    watcher.wait_for(lambda: any("cut short" in e.get("message", "") for e in watcher.lines),
                     "the watcher's word on the cut")
    assert search_ids(notes_store, "wombat") == [nid(200)]
    mark = watcher.mark()
    (fact / "later.md").write_text(note_text(nid(201), "still watched numbat"))
    watcher.settle(mark, lambda t: t["added"] + t["updated"] >= 1, "the next save")
    assert search_ids(notes_store, "numbat") == [nid(201)]
    assert len(search_ids(notes_store, "quokka")) == 3
    assert watcher.proc.poll() is None, "".join(watcher.stderr)


def test_an_index_another_memctl_made_anew_is_not_taken_for_one_cut_short(
        notes_store: Path) -> None:
    """A command that found the index damaged makes a new, smaller file at its path: the
    watcher compared that file's size with its own file's and said the index was "cut short
    by another program". Only its own file, shorter, is one cut short; another file at the
    path is a replaced index, which the watcher opens again (`_store_moved`)."""
    from memctl.watch.watcher import Watcher

    ensure_fresh(notes_store).close()
    watcher = Watcher(notes_store)
    watcher._open_index()
    try:
        index = notes_store / ".memctl" / "index.sqlite"
        fresh = index.with_name("made-anew.sqlite")
        sqlite3.connect(fresh).close()  # an empty database: far smaller than the index
        os.replace(fresh, index)
        assert not watcher._index_cut()
        watcher._index.close()
        watcher._open_index()
        watcher._index_size += 4096  # as if the pass before had left it a page longer
        assert watcher._index_cut()  # its own file, shorter than it was: cut
    finally:
        watcher._index.close()


def test_people_get_no_line_for_a_batch_that_changed_nothing(notes_store: Path) -> None:
    """A note saved again with the same bytes is an event and no change: people got
    `+0 ~0 -0 in 1 ms` for it, where docs/watch.md promises no line."""
    env = {**os.environ, "MEMCTL_STORE": str(notes_store)}
    proc = subprocess.Popen([memctl_executable(), "watch"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while not any("watching" in line for line in said) and time.monotonic() < deadline:
            time.sleep(0.02)
        fact = notes_store / "demo" / "notes" / "fact"
        same = sorted(fact.glob("*.md"))[0]
        same.write_bytes(same.read_bytes())  # saved again, unchanged
        time.sleep(1.5)  # past the watcher's batching of it (QUIET 0.05 s, MAX_DELAY 1 s)
        (fact / "new.md").write_text(note_text(nid(900), "a real change"))
        while not any(line.startswith("+1 ") for line in said) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(DEADLINE)
        reader.join(DEADLINE)
    assert any(line.startswith("+1 ~0 -0 in ") for line in said), said
    assert not any(line.startswith("+0 ~0 -0") for line in said), said


def _cut_part_way(watcher: WatchProcess, store: Path) -> None:
    """The index's pages written into its file (the WAL checkpointed), a note indexed since
    (its pages in the WAL again: a new connection then sizes the file by the WAL and opens it
    as whole), then the file cut after its first 16 pages: the schema and the tables made
    first (`meta`, `files`, `folders`) are kept, the words (`fts_*`, made after) are not, and
    SQLite reads them as "database disk image is malformed"."""
    index = store / ".memctl" / "index.sqlite"
    with sqlite3.connect(index) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    assert index.stat().st_size > 32 * 4096
    fact = store / "demo" / "notes" / "fact"
    number = len(list(fact.glob("kea*.md")))
    mark = watcher.mark()
    (fact / f"kea{number}.md").write_text(note_text(nid(400 + number), "a kea"))
    watcher.settle(mark, lambda t: t["added"] >= 1, "the note after the checkpoint")
    with open(index, "r+b") as handle:
        handle.truncate(16 * 4096)


def _forty_notes(watcher: WatchProcess, fact: Path) -> None:
    mark = watcher.mark()
    for i in range(40):  # pages enough that the cut keeps the schema and loses the words
        (fact / f"cut{i}.md").write_text(note_text(nid(300 + i), f"filler {i} tapir"))
    watcher.settle(mark, lambda t: t["added"] >= 40, "the forty notes")


def test_a_search_through_the_watcher_makes_an_index_cut_part_way_anew(
        watcher: WatchProcess, notes_store: Path) -> None:
    """An index file cut part-way by another program while the watcher runs: a search, which
    trusts the watcher and so does not walk, read the damaged pages and ended in a traceback.
    It now makes the index anew from the files and answers."""
    _forty_notes(watcher, notes_store / "demo" / "notes" / "fact")
    _cut_part_way(watcher, notes_store)
    assert len(search_ids(notes_store, "tapir")) == 20  # (its limit)
    assert watcher.proc.poll() is None, "".join(watcher.stderr)


def test_the_watcher_makes_an_index_cut_part_way_anew(
        watcher: WatchProcess, notes_store: Path) -> None:
    """The same cut, seen by the watcher first: it reopened the file as it was and failed
    every pass for ever ("retrying"). It now removes the damaged file, and its full pass
    fills the new index."""
    fact = notes_store / "demo" / "notes" / "fact"
    index = notes_store / ".memctl" / "index.sqlite"
    _forty_notes(watcher, fact)
    _cut_part_way(watcher, notes_store)
    mark = watcher.mark()
    (fact / "ibis.md").write_text(note_text(nid(391), "written after the cut ibis"))
    # The watcher's full pass into an index made anew adds every note again.
    watcher.settle(mark, lambda t: t["added"] >= 42, "the watcher's pass into a new index")
    assert watcher.proc.poll() is None, "".join(watcher.stderr)
    with sqlite3.connect(index) as connection:
        assert connection.execute("PRAGMA quick_check").fetchone() == ("ok",)
    connection.close()
    assert search_ids(notes_store, "ibis") == [nid(391)]
    assert len(search_ids(notes_store, "tapir")) == 20


@pytest.mark.parametrize("command", [
    ["list", "--project", "demo", "--limit", "100", "--json"],
    ["get", "kea-subject", "--project", "demo", "--json"],
    ["recall", "--project", "demo", "--json"],
    ["health", "--json"],
    ["reindex"],
])
def test_commands_that_read_an_index_cut_part_way_make_it_anew(
        watcher: WatchProcess, notes_store: Path, command: list[str]) -> None:
    """The same cut, met by commands that trust the watcher (no walk): `list`, `get`,
    `recall` and `health` stopped on the damaged pages, and so did `reindex`, the command
    their error names. Each now removes the damaged index and runs again on one made anew."""
    fact = notes_store / "demo" / "notes" / "fact"
    _forty_notes(watcher, fact)
    mark = watcher.mark()
    (fact / "fact.md").write_text(note_text(nid(398), "a kea fact").replace(
        "type: fact", "type: fact\nsubject: kea-subject\npredicate: p", 1))
    watcher.settle(mark, lambda t: t["added"] >= 1, "the fact")
    _cut_part_way(watcher, notes_store)
    result = run_memctl(*command, store=notes_store)
    assert result.exit_code == 0, result.stderr
    if command[0] == "list":
        assert sum(1 for note in result.json() if "tapir" in note["title"]) == 40
    if command[0] == "get":
        assert [note["id"] for note in result.json()] == [nid(398)]
    assert len(search_ids(notes_store, "tapir")) == 20
    assert watcher.proc.poll() is None, "".join(watcher.stderr)


def test_a_save_through_one_name_of_a_hard_linked_note_is_seen_under_every_name(
        watcher: WatchProcess, notes_store: Path) -> None:
    """The kernel tells the watcher of the name a write went through; the note's other names
    kept their old text in the index until the next full pass, a minute later. A file of
    several names now makes the pass walk the whole store, which finds them all."""
    fact = notes_store / "demo" / "notes" / "fact"
    mark = watcher.mark()
    (fact / "linked.md").write_text("linked note oldword\n")
    watcher.settle(mark, lambda t: t["added"] >= 1, "the linked note")
    os.link(fact / "linked.md", fact / "other-name.md")
    watcher.settle(mark, lambda t: t["added"] >= 2, "its second name")
    assert len(search_ids(notes_store, "oldword")) == 2
    mark = watcher.mark()
    with open(fact / "linked.md", "w") as handle:  # in place: the inode both names share
        handle.write("linked note newword\n")
    watcher.settle(mark, lambda t: t["updated"] >= 2, "both names")
    assert search_ids(notes_store, "oldword") == []
    assert len(search_ids(notes_store, "newword")) == 2


def test_a_file_where_the_state_folder_goes_is_one_clear_error(notes_store: Path) -> None:
    """`.memctl` replaced by a file: the watcher said "Once the disk has room …" (the machine
    error for a mkdir that finds a file). It names the file and what to do."""
    shutil.rmtree(notes_store / ".memctl")
    (notes_store / ".memctl").write_text("junk\n")
    result = run_memctl("watch", store=notes_store, project=None, timeout=60)
    assert result.exit_code == 1
    assert result.stderr == (f"error: {notes_store / '.memctl'} is not a folder: memctl keeps "
                             "the store's index, lock and watcher state in it; move that file "
                             "away, then run the command again\n")


def test_a_first_pass_that_cannot_write_the_index_is_one_error_not_watching(
        store_path: Path) -> None:
    """The disk refuses the index's growth at the watcher's first pass (a file size limit,
    RLIMIT_FSIZE: writes past it fail with EFBIG, as on a full disk). The watcher said
    `warning: could not update the index (disk I/O error); retrying`, then `watching …`
    (`{"event": "ready"}` with --json) and ran on, live to a person or a service while
    `watch --status` said it could not write and its heartbeat's state was `ready`. Now it
    stops with one `error:` line saying what failed and what to do (exit 1), and leaves no
    heartbeat; with room again, the same store is watched."""
    import random

    fact = store_path / "demo" / "notes" / "fact"
    fact.mkdir(parents=True)
    rng = random.Random(5)
    for i in range(400):
        body = " ".join(f"w{rng.randrange(10 ** 9)}" for _ in range(120))
        (fact / f"n{i}.md").write_text(note_text(nid(i), body))
    last_word = body.rsplit(" ", 1)[1]
    limit = 256 * 1024  # room for the new index's tables, not for 400 notes' words
    limited = (sys.executable, "-c", "import os, resource, sys; "
               f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
               "os.execvp(sys.argv[1], sys.argv[1:])")
    proc = WatchProcess(store_path, prefix=limited, env={"PYTHONDONTWRITEBYTECODE": "1"})
    try:
        assert proc.proc.wait(DEADLINE) == 1, "".join(proc.stderr)
        proc._reader.join(DEADLINE)
        proc.wait_for(lambda: proc.stderr, "its error line")
        time.sleep(0.2)  # (the whole of stderr)
    finally:
        proc.stop()
    said = "".join(proc.stderr)
    assert said.startswith("error: the watcher's first pass could not update the index ("), said
    assert said.count("\n") == 1 and "watching" not in said.replace("without watching", "")
    assert "run `memctl watch` again" in said, said
    assert proc.lines == []  # no {"event": "ready"}, no warning before the error
    status = run_memctl("watch", "--status", "--json", store=store_path, project=None)
    assert json.loads(status.stdout)["running"] is False, status.stdout
    again = WatchProcess(store_path).ready()
    try:
        assert read_status(store_path).live
        assert search_ids(store_path, last_word) == [nid(399)]
    finally:
        again.stop()


def test_a_store_gone_then_another_folder_in_its_place_is_said_each(notes_store: Path) -> None:
    """A watcher that leaves a replaced store alone (`memctl mcp`'s) said "gone" and then
    nothing when an empty folder took the store's place: the second state went unsaid (and a
    test waiting for it timed out whenever the watcher had seen the first)."""
    from memctl.watch.watcher import Watcher

    said: list[str] = []
    found = os.stat(notes_store)
    watcher = Watcher(notes_store, keep_folder=(found.st_dev, found.st_ino),
                      on_message=said.append)
    ready = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"on_ready": ready.set}, daemon=True)
    thread.start()
    away = notes_store.with_name("away")

    def wait_for(words: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not any(words in message for message in said):
            assert time.monotonic() < deadline, (words, said)
            time.sleep(0.05)

    try:
        assert ready.wait(DEADLINE)
        os.rename(notes_store, away)
        wait_for("is gone")
        notes_store.mkdir()  # an empty mount point where the store was
        wait_for("another folder is at")
        assert os.listdir(notes_store) == []  # left untouched
        notes_store.rmdir()
    finally:
        if away.exists() and not notes_store.exists():
            os.rename(away, notes_store)
        watcher.stop()
        thread.join(DEADLINE)


def test_a_store_moved_away_while_indexed_keeps_its_index_and_is_not_made_again(
        notes_store: Path) -> None:
    """A watcher's pass (or a command's check) on a store moved away meanwhile walked a
    folder that was not there, found no file and deleted every row of the index it held open
    (the moved store's); a watcher starting then made the store's path again, with a
    `.memctl/` in it. Both now say the store is gone and change nothing."""
    from memctl.core.errors import MemctlError
    from memctl.disk.watchstate import WatchLock
    from memctl.index.db import open_index

    index = open_index(notes_store)
    index.refresh()
    count = index.conn.execute("SELECT count(*) FROM files").fetchone()[0]
    assert count >= 20
    away = notes_store.with_name("away")
    os.rename(notes_store, away)
    try:
        for refresh in (index.refresh, lambda: index.refresh(["demo"])):
            with pytest.raises(MemctlError, match="is gone"):
                refresh()
            assert index.conn.execute("SELECT count(*) FROM files").fetchone()[0] == count
        for start in (lambda: open_index(notes_store).refresh(),
                      lambda: WatchLock(notes_store).acquire()):
            with pytest.raises(MemctlError, match="is gone"):
                start()
            assert not notes_store.exists()
        # Another folder in its place (`mkdir store`), with a note of its own: neither its
        # missing files nor its note reach the moved store's index.
        (notes_store / "demo" / "notes").mkdir(parents=True)
        (notes_store / "demo" / "notes" / "other.md").write_text("another folder's note\n")
        for refresh in (index.refresh, lambda: index.refresh(["demo"])):
            with pytest.raises(MemctlError, match="was replaced"):
                refresh()
            assert index.conn.execute("SELECT count(*) FROM files").fetchone()[0] == count
    finally:
        index.close()
        if notes_store.exists():
            shutil.rmtree(notes_store)
        os.rename(away, notes_store)
    assert len(search_ids(notes_store, "original")) == 20  # back in its place, all there


def test_watch_waits_for_a_store_moved_away_and_takes_what_changed_meanwhile(
        watcher: WatchProcess, notes_store: Path) -> None:
    """`memctl watch` on a store moved away (or deleted) says so and waits; it ended with
    an error when a pass found the folder gone. An edit made where the store was moved to
    is indexed once the store is back."""
    away = notes_store.with_name("away")
    os.rename(notes_store, away)
    watcher.wait_for(lambda: any(e.get("event") == "message" and "is gone" in e["message"]
                                 for e in watcher.lines), "the watcher to say the store is gone")
    (away / "demo" / "notes" / "fact" / "n3.md").write_text(note_text(nid(3), "quokka"))
    time.sleep(0.3)  # (its events reach the watcher, which holds them while the store is away)
    mark = watcher.mark()
    os.rename(away, notes_store)
    # Asked at once, before the watcher's next look: a reader's cookie alone was answered
    # from the index as it was before the store went (a stale "no match").
    edited = notes_store / "demo" / "notes" / "fact" / "n3.md"
    with ensure_fresh(notes_store) as index:
        indexed = index.conn.execute("SELECT size FROM files WHERE path = ?",
                                     ("demo/notes/fact/n3.md",)).fetchone()
    assert indexed == (edited.stat().st_size,)
    watcher.settle(mark, lambda t: t["updated"] >= 1, "the edit made while away")
    assert watcher.proc.poll() is None, "".join(watcher.stderr)
    assert search_ids(notes_store, "quokka") == [nid(3)]
    assert len(search_ids(notes_store, "original")) == 19


def test_a_store_moved_away_and_back_between_two_looks_is_watched_afresh(
        watcher: WatchProcess, notes_store: Path) -> None:
    """Away and back within the half second between two looks of the watcher: a folder made
    meanwhile where the store was got no watch, and notes saved there later were missed by
    searches until the next minute's full pass. The folder's ctime, moved without its mtime,
    tells that the folder itself was renamed."""
    away = notes_store.with_name("away")
    mark = watcher.mark()
    os.rename(notes_store, away)
    (away / "demo" / "notes" / "later").mkdir()
    os.rename(away, notes_store)
    watcher.wait_for(lambda: any(e.get("event") == "message" and "back" in e["message"]
                                 for e in watcher.lines[mark:]), "the watcher to start over")
    mark = watcher.mark()
    (notes_store / "demo" / "notes" / "later" / "n40.md").write_text(note_text(nid(40), "kiwi"))
    watcher.settle(mark, lambda t: t["added"] >= 1, "the note saved in the new folder")
    assert search_ids(notes_store, "kiwi") == [nid(40)]


def test_watch_commit_stopped_while_the_store_is_away_stops_cleanly(notes_store: Path) -> None:
    """An edit made while the store was away left something to commit: stopping then tried
    to take the store's lock where the store was, and `memctl watch` ended with an error."""
    watcher = WatchProcess(notes_store, "--commit").ready()
    away = notes_store.with_name("away")
    try:
        os.rename(notes_store, away)
        watcher.wait_for(lambda: any(e.get("event") == "message" and "is gone" in e["message"]
                                     for e in watcher.lines), "the watcher to say it is gone")
        (away / "demo" / "notes" / "fact" / "n4.md").write_text(note_text(nid(4), "numbat"))
        time.sleep(0.3)  # (its events reach the watcher, which holds them while away)
        watcher.proc.send_signal(signal.SIGTERM)
        assert watcher.proc.wait(DEADLINE) == 0, "".join(watcher.stderr)
        watcher._reader.join(DEADLINE)
        assert not any(line.startswith("error") for line in watcher.stderr), watcher.stderr
    finally:
        watcher.stop()
        if away.exists():
            os.rename(away, notes_store)
    assert "numbat" in (notes_store / "demo" / "notes" / "fact" / "n4.md").read_text()


def test_folders_made_while_the_store_was_away_are_watched_once_it_is_back(
        notes_store: Path) -> None:
    """A folder made where the store was moved to got no watch (watchdog adds a new folder's
    watch by its path, which was not the store's then): notes saved there later reached no
    batch, and searches, which trust the watcher, missed them until the next minute's full
    pass. With `--commit`, an edit made while away and indexed by another command before
    the store came back was never committed."""
    watcher = WatchProcess(notes_store, "--commit").ready()
    try:
        first = read_status(notes_store)
        away = notes_store.with_name("away")
        os.rename(notes_store, away)
        (away / "demo" / "notes" / "later").mkdir()
        (away / "fresh").mkdir()  # a new project folder too
        (away / "demo" / "notes" / "fact" / "n5.md").write_text(note_text(nid(5), "wombat"))
        assert search_ids(away, "wombat") == [nid(5)]  # a command there indexed it
        watcher.wait_for(lambda: any(e.get("event") == "message" and "is gone" in e["message"]
                                     for e in watcher.lines), "the watcher to say it is gone")
        os.rename(away, notes_store)

        def watched_afresh() -> bool:
            # Started over (a new heartbeat, live): its first pass is done. (That pass has
            # nothing to report here: a command indexed the edit made away.)
            status = read_status(notes_store)
            return status is not None and status.live and first is not None \
                and status.started != first.started

        watcher.wait_for(watched_afresh, "the watcher to start over once the store is back")
        mark = watcher.mark()
        (notes_store / "demo" / "notes" / "later" / "n30.md").write_text(
            note_text(nid(30), "blueberry"))
        (notes_store / "fresh" / "n31.md").write_text(note_text(nid(31), "blueberry"))
        watcher.settle(mark, lambda t: t["added"] >= 2, "the notes saved in the new folders")
        assert sorted(search_ids(notes_store, "blueberry")) == [nid(30), nid(31)]
        deadline = time.monotonic() + DEADLINE
        while git(notes_store, "status", "--porcelain") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert git(notes_store, "status", "--porcelain") == ""  # the edit made away too
        assert "wombat" in git(notes_store, "show", "HEAD:demo/notes/fact/n5.md")
    finally:
        watcher.stop()


def _move_away(store: Path, watcher: WatchProcess) -> Path:
    """The store moved to `moved` beside it, once the watcher has said it is gone."""
    moved = store.with_name("moved")
    os.rename(store, moved)
    watcher.wait_for(lambda: any(e.get("event") == "message" and "is gone" in e["message"]
                                 for e in watcher.lines), "the watcher to say the store is gone")
    return moved


def test_a_store_moved_for_good_can_be_watched_where_it_is_now(watcher: WatchProcess,
                                                                notes_store: Path) -> None:
    """The watcher of a store moved away kept its lock, which the folder took along: a
    `memctl watch` started where the store now is was refused for as long as the first one
    ran. The first lets the store go while it is away; when the store comes back, it takes
    it over from the second once that one has let it go in turn."""
    moved = _move_away(notes_store, watcher)
    second = WatchProcess(moved)
    try:
        second.ready()
        mark = second.mark()
        (moved / "demo" / "notes" / "fact" / "n41.md").write_text(note_text(nid(41), "platypus"))
        second.settle(mark, lambda t: t["added"] >= 1, "the note saved where the store is now")
        assert search_ids(moved, "platypus") == [nid(41)]
        os.rename(moved, notes_store)  # back: the second lets it go, the first takes it
        second.wait_for(lambda: any(e.get("event") == "message" and "is gone" in e["message"]
                                    for e in second.lines), "the second watcher to let it go")

        def first_watches() -> bool:
            status = read_status(notes_store)
            return status is not None and status.live and status.pid == watcher.proc.pid
        watcher.wait_for(first_watches, "the first watcher to watch the store again")
        mark = watcher.mark()
        (notes_store / "demo" / "notes" / "fact" / "n42.md").write_text(
            note_text(nid(42), "echidna"))
        watcher.settle(mark, lambda t: t["added"] >= 1, "the note saved once it is back")
        assert search_ids(notes_store, "echidna") == [nid(42)]
        assert watcher.proc.poll() is None and second.proc.poll() is None, \
            "".join(watcher.stderr + second.stderr)
    finally:
        second.stop()
        if moved.exists():
            os.rename(moved, notes_store)


def test_a_store_back_while_another_watcher_has_it_is_taken_over_when_that_one_stops(
        watcher: WatchProcess, notes_store: Path) -> None:
    """Back at its path while the watcher started where it was moved to still holds it (here
    the path is a link to that folder): the first watcher says so and waits, then watches the
    store once the second stops; it neither ends nor runs beside the second."""
    moved = _move_away(notes_store, watcher)
    second = WatchProcess(moved)
    try:
        second.ready()
        notes_store.symlink_to(moved)  # the same folder at the first one's path again
        watcher.wait_for(lambda: any(e.get("event") == "message"
                                     and f"(pid {second.proc.pid}) now watches" in e["message"]
                                     for e in watcher.lines), "the first watcher to wait")
        time.sleep(1.2)  # two more looks: it still waits, and says it once
        assert sum("now watches" in e.get("message", "") for e in watcher.lines) == 1
        assert read_status(moved).pid == second.proc.pid
        second.stop()
        mark = watcher.mark()
        watcher.wait_for(lambda: any("watching it again" in e.get("message", "")
                                     for e in watcher.lines[mark:]), "the first to take over")
        (moved / "demo" / "notes" / "fact" / "n43.md").write_text(note_text(nid(43), "quoll"))
        watcher.settle(mark, lambda t: t["added"] >= 1, "the note saved once it took over")
        assert search_ids(moved, "quoll") == [nid(43)]
        assert watcher.proc.poll() is None, "".join(watcher.stderr)
    finally:
        second.stop()
        if notes_store.is_symlink():
            notes_store.unlink()
        if moved.exists():
            os.rename(moved, notes_store)


def test_a_clear_error_when_the_inotify_watch_limit_is_reached(notes_store: Path) -> None:
    for i in range(30):
        (notes_store / "demo" / "notes" / f"type{i}").mkdir()
    # A user namespace has its own inotify limit: lower it there, not for the whole machine.
    probe = subprocess.run(["unshare", "-U", "-r", "sh", "-c",
                            "echo 10 > /proc/sys/user/max_inotify_watches"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot lower the inotify limit in a user namespace here")
    result = subprocess.run(
        ["unshare", "-U", "-r", "sh", "-c",
         'echo 10 > /proc/sys/user/max_inotify_watches && exec "$0" watch', memctl_executable()],
        capture_output=True, text=True, timeout=60, env={**os.environ, "MEMCTL_STORE": str(notes_store)})
    assert result.returncode == 1
    assert "fs.inotify.max_user_watches" in result.stderr and "sysctl" in result.stderr
    assert not watcher_is_live(notes_store)


def test_a_copy_of_a_watched_store_does_not_trust_the_original_watcher(
        watcher: WatchProcess, notes_store: Path) -> None:
    """`cp -a` of a store while `memctl watch` runs on it copies the heartbeat too; a hand
    edit in the copy must still reach a search of the copy (docs/watch.md)."""
    assert watcher_is_live(notes_store)
    copy = notes_store.with_name("store-copy")
    # `.memctl/` and watch.json too, and the watcher's search socket, as a socket nobody
    # listens on (shutil.copytree cannot copy a socket).
    subprocess.run(["cp", "-a", str(notes_store), str(copy)], check=True)
    assert (copy / ".memctl" / "watch.json").read_bytes()
    assert not watcher_is_live(copy) and read_status(copy) is None
    assert watcher_is_live(notes_store)  # the original's watcher is still trusted there
    (copy / "demo" / "notes" / "fact" / "n3.md").write_text(note_text(nid(3), "quokka in the copy"))
    assert search_ids(copy, "quokka") == [nid(3)]
    assert search_ids(notes_store, "quokka") == []
    status = run_memctl("watch", "--status", "--json", store=copy, project=None)
    assert status.exit_code == 0 and status.json()["running"] is False, status.stdout


# --- readers ask the watcher: its cookies (docs/watch.md) --------------------------------------


def test_a_cookie_answer_takes_the_pending_batch_at_once_but_never_half_a_move() -> None:
    c = Coalescer(quiet=0.05, max_delay=1.0)
    c.add_path("p/a.md", 0.0)
    batch = c.take_now(0.001)  # long before the quiet window ends
    assert batch is not None and batch.paths == {"p/a.md"} and not batch.full
    assert c.take_now(0.002) is None and c.take(5.0) is None
    # The other half of a move may still come: the reader is answered at once all the same,
    # by a full pass, which sees both ends of the move (the paths alone could show the note
    # twice). Holding the batch back made the reader give up and walk the store itself.
    c.add_top("newproj", gone=False, now=1.0, wait=0.6)
    batch = c.take_now(1.1)
    assert batch is not None and batch.full and batch.new_tops == {"newproj"}
    assert c.take_now(1.2) is None and c.take(5.0) is None


def _cookies(store: Path) -> list[str]:
    """The cookies left in the store: at its top, or in a project folder."""
    return sorted(str(p.relative_to(store)) for pattern in (f"{COOKIE_PREFIX}*",
                                                            f"*/{COOKIE_PREFIX}*")
                  for p in store.glob(pattern))


def test_a_search_right_after_a_hand_write_finds_it_while_the_watcher_runs(
        watcher: WatchProcess, notes_store: Path) -> None:
    """The watcher indexes a save some 50 ms after it; a search that trusted its heartbeat
    and skipped its own check answered before that, and missed the note. The search now
    asks the watcher (a cookie) or, when it does not answer in time, checks the files."""
    store = Store.open(notes_store)
    folder = notes_store / "demo" / "notes" / "fact"
    for attempt in range(5):
        word = f"wombat{attempt}q"
        (folder / f"fresh{attempt}.md").write_text(note_text(nid(100 + attempt), f"a {word} note"))
        hits = search(store, word, project="demo").hits
        assert [hit.id for hit in hits] == [nid(100 + attempt)]
    assert _cookies(notes_store) == []


def _cookies_made(monkeypatch: pytest.MonkeyPatch, store: Path) -> list[str]:
    """The cookies this process makes from now on, store-relative (each is still made)."""
    from memctl.disk import watchstate

    made: list[str] = []
    make = watchstate._make_cookie

    def recorded(path: str) -> None:
        made.append(os.path.relpath(path, store))
        make(path)

    monkeypatch.setattr(watchstate, "_make_cookie", recorded)
    return made


def _write_in_three_projects(store: Path, first: int, word: str) -> None:
    """A note written by hand in `demo`, in a project folder made just now and in a
    sub-folder made just now."""
    for number, folder in enumerate((store / "demo" / "notes" / "fact",
                                     store / "fresh" / "notes" / "fact",
                                     store / "demo" / "notes" / "fact" / "deeper")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{word}{number}.md").write_text(note_text(nid(first + number), f"a {word}"))


def test_a_reader_asks_the_watcher_with_one_cookie_at_the_stores_top(
        watcher: WatchProcess, notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's events of every folder come in one order (memctl.watch.observer) and
    its heartbeat says so: a reader asks with one cookie at the store's top, not one per
    project folder, and still finds what was written by hand just before, in any folder."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")  # the watcher's answer, never the walk
    status = read_status(notes_store)
    assert status is not None and status.extra.get("events") == ORDERED
    made = _cookies_made(monkeypatch, notes_store)
    _write_in_three_projects(notes_store, 400, "quokka")
    with ensure_fresh(notes_store) as index:
        assert index.last_refresh is None  # the watcher answered: no walk
        assert [index.get(nid(400 + number))["path"] for number in range(3)] == [
            "demo/notes/fact/quokka0.md", "fresh/notes/fact/quokka1.md",
            "demo/notes/fact/deeper/quokka2.md"]
    assert len(made) == 1 and "/" not in made[0] and made[0].startswith(COOKIE_PREFIX)
    assert _cookies(notes_store) == []


def test_with_watchdogs_observer_a_reader_asks_in_every_project_folder(
        notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCTL_WATCH_BACKEND=watchdog (as where there is no inotify): each watched folder has
    its own queue, the heartbeat says nothing of an order, and a reader asks with a cookie
    in each project folder; what was written just before is found all the same."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")
    (notes_store / "other").mkdir()
    proc = WatchProcess(notes_store, env={"MEMCTL_WATCH_BACKEND": "watchdog"}).ready()
    try:
        status = read_status(notes_store)
        assert status is not None and "events" not in status.extra
        made = _cookies_made(monkeypatch, notes_store)
        _write_in_three_projects(notes_store, 500, "bilby")
        with ensure_fresh(notes_store) as index:
            assert index.last_refresh is None
            assert [index.get(nid(500 + number))["path"] for number in range(3)] == [
                "demo/notes/fact/bilby0.md", "fresh/notes/fact/bilby1.md",
                "demo/notes/fact/deeper/bilby2.md"]
        assert sorted(path.split("/")[0] for path in made) == ["demo", "fresh", "global", "other"]
        assert _cookies(notes_store) == []
    finally:
        proc.stop()


def test_the_watcher_answers_a_readers_cookies_which_never_become_notes_nor_commits(
        watcher: WatchProcess, notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")  # the watcher's answer, never the walk
    folder = notes_store / "demo" / "notes" / "fact"
    (folder / "fresh.md").write_text(note_text(nid(200), "a platypus note"))
    # A project folder made just now: the reader's cookie may land before it is watched.
    (notes_store / "newproj" / "notes").mkdir(parents=True)
    (notes_store / "newproj" / "notes" / "n.md").write_text(note_text(nid(201), "an echidna"))
    with ensure_fresh(notes_store) as index:
        assert index.last_refresh is None  # the watcher said so: no walk
        assert index.get(nid(200))["path"] == "demo/notes/fact/fresh.md"
        assert index.get(nid(201))["path"] == "newproj/notes/n.md"
        assert not [path for path in index.indexed_files() if COOKIE_PREFIX in path]
    assert _cookies(notes_store) == []
    # One caught mid-wait is ignored by git (`git add -A`, `git status`): never committed.
    cookies = [f"{COOKIE_PREFIX}77-ee", f"demo/{COOKIE_PREFIX}123-abc",
               f"newproj/{COOKIE_PREFIX}9-ff"]
    checked = subprocess.run(["git", "-C", str(notes_store), "check-ignore", "--stdin"],
                             input="\n".join([*cookies, "demo/notes/fact/fresh.md"]) + "\n",
                             capture_output=True, text=True)
    assert checked.stdout.split() == cookies


@pytest.mark.parametrize("layout", ["separate git folder", "linked worktree"])
def test_cookies_are_kept_out_of_git_where_dot_git_is_a_file(tmp_path: Path,
                                                              layout: str) -> None:
    """`.git` may be a file pointing elsewhere (`git init --separate-git-dir`, a linked
    worktree): the cookies' pattern goes into the ignore list git reads there. It went
    nowhere, and a cookie caught mid-wait by `memctl sync` was committed and pushed."""
    if layout == "separate git folder":
        store = tmp_path / "store"
        git(tmp_path, "init", "-q", f"--separate-git-dir={tmp_path / 'sep.git'}", str(store))
    else:
        main = tmp_path / "main"
        main.mkdir()
        git(main, "init", "-q")
        git(main, "commit", "-q", "--allow-empty", "-m", "start")
        store = tmp_path / "store"
        git(main, "worktree", "add", "-q", str(store))
    assert (store / ".git").is_file()
    init = run_memctl("init", store=store, project=None)
    assert init.exit_code == 0, init.stderr
    commit_notes(store, 2)
    proc = WatchProcess(store).ready()
    try:
        cookies = [f"{COOKIE_PREFIX}4242-beef", f"demo/{COOKIE_PREFIX}4243-beef"]
        checked = subprocess.run(["git", "-C", str(store), "check-ignore", "--stdin"],
                                 input="\n".join([*cookies, "demo/notes/fact/n0.md"]) + "\n",
                                 capture_output=True, text=True)
        assert checked.stdout.split() == cookies
    finally:
        proc.stop()


def test_a_note_moved_into_a_folder_made_just_now_is_in_one_place_for_the_next_reader(
        watcher: WatchProcess, notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mkdir x && mv note x/`: the move may land before x is watched, and its other half
    comes later. A reader asking right then gets the watcher's answer (a full pass), not
    the note in two places, nor its own walk."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")  # the watcher's answer, never the walk
    source = notes_store / "demo" / "notes" / "fact" / "n1.md"
    with ensure_fresh(notes_store) as index:
        assert index.get(nid(1))["path"] == "demo/notes/fact/n1.md"
    target = notes_store / "moved" / "notes" / "fact"
    target.mkdir(parents=True)
    source.rename(target / "n1.md")
    with ensure_fresh(notes_store) as index:
        assert index.last_refresh is None  # the watcher answered: no walk
        assert index.get(nid(1))["path"] == "moved/notes/fact/n1.md"
        assert [path for path in index.indexed_files() if path.endswith("/n1.md")] == [
            "moved/notes/fact/n1.md"]
    assert _cookies(notes_store) == []


def test_a_reader_the_watcher_does_not_answer_checks_the_files_and_takes_its_cookies_back(
        notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A heartbeat that says live, written by a process that answers no cookie (this one):
    the reader waits, then walks the store itself, and leaves no cookie behind."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "0.05")
    Heartbeat(notes_store).beat("ready")
    assert watcher_is_live(notes_store)
    (notes_store / "demo" / "notes" / "fact" / "fresh.md").write_text(
        note_text(nid(300), "a numbat note"))
    with ensure_fresh(notes_store) as index:
        assert index.last_refresh is not None  # walked
        assert index.get(nid(300))["path"] == "demo/notes/fact/fresh.md"
    assert _cookies(notes_store) == []


def test_a_search_works_while_the_watcher_answers_and_again_if_the_index_changed(
        watcher: WatchProcess, notes_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search asks the watcher and runs its query while the answer comes (`fresh_during`);
    when the index changed meanwhile (here: another connection indexed a note written during
    the first run), the query runs again on the index now current; when nothing changed, it
    runs once. No walk either way, and no cookie left behind."""
    monkeypatch.setenv("MEMCTL_WATCH_SYNC_WAIT", "30")  # the watcher's answer, never the walk
    store = Store.open(notes_store)
    late = "demo/notes/fact/late.md"
    runs: list[list[str]] = []

    def work(index: Index) -> list[str]:
        runs.append([row[0] for row in index.conn.execute("SELECT id FROM docs WHERE id = ?",
                                                           (nid(400),))])
        if len(runs) == 1:  # written and indexed by another connection after the query read
            (notes_store / late).write_text(note_text(nid(400), "a quoll note"))
            with open_index(notes_store) as other:
                other.refresh([late])
        return runs[-1]

    def unchanged(index: Index) -> int:
        runs.append([])
        return index.count("note")

    index, count = fresh_during(store, unchanged)
    assert index.last_refresh is None  # the watcher answered: no walk
    assert runs == [[]] and count == 20  # nothing changed: one run
    runs.clear()
    index, found = fresh_during(store, work)
    assert index.last_refresh is None
    assert runs == [[], [nid(400)]] and found == [nid(400)]
    assert _cookies(notes_store) == []


def test_a_heartbeat_whose_folder_became_a_file_is_cleared_without_a_traceback(
        notes_store: Path) -> None:
    """`.memctl/` replaced by a file while the watcher runs: tearing down (the watcher then
    starts over on what is there) finds no heartbeat to remove, and says nothing more."""
    import shutil

    from memctl.disk.watchstate import clear_own_heartbeat

    heartbeat = Heartbeat(notes_store)
    heartbeat.beat("ready")
    shutil.rmtree(notes_store / ".memctl")
    (notes_store / ".memctl").write_text("x\n")
    heartbeat.clear()  # NotADirectoryError before
    clear_own_heartbeat(notes_store)
    assert (notes_store / ".memctl").read_text() == "x\n"


# --- after an upgrade (memctl.cli.codechange) ---------------------------------------------

# A change of the code is acted on after two looks 2 s apart, then its check (a start of the
# new code); a check that fails is tried again after 2, 4 and 8 s.
RESTART_WAIT = 90.0


def _status(store: Path, env: dict[str, str]) -> dict:
    shown = subprocess.run([memctl_executable(), "watch", "--status", "--json"], check=True,
                           capture_output=True, text=True,
                           env={**os.environ, **env, "MEMCTL_STORE": str(store)})
    return json.loads(shown.stdout)


def _events(process: WatchProcess, kind: str) -> list[dict]:
    return [line for line in process.lines if line.get("event") == kind]


def _messages(process: WatchProcess) -> list[str]:
    return [line["message"] for line in _events(process, "message")]


def _said(process: WatchProcess, words: str) -> bool:
    return any(words in line for line in process.stderr)


STARTING_AGAIN = "memctl's code changed (an upgrade): starting again on it"


def _change_code(tmp_path: Path) -> None:
    """An upgrade: the new code says on stderr that it was imported (a check of it, whose
    output the watcher does not show, imports it too)."""
    module = tmp_path / "code" / "memctl" / "cli" / "watch.py"
    module.write_text(module.read_text() + "\nsys.stderr.write('new code loaded\\n')\n")


class _LockTaker(threading.Thread):
    """Tries to take the store's watcher lock every few ms (as a `memctl mcp` tries every 5 s),
    until told to stop; counts the times it got it."""

    def __init__(self, store: Path) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.taken = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            lock = WatchLock(self.store)
            try:
                lock.acquire()
            except WatcherRunning:
                pass
            else:
                self.taken += 1
                lock.release()
            time.sleep(0.003)


def test_a_watcher_starts_again_on_the_code_an_upgrade_installs(
        notes_store: Path, tmp_path: Path) -> None:
    """Once memctl's files change under a running watcher, it runs its own command line again,
    in the same process, on the new code: before, it went on indexing with the code it had
    imported beside commands that ran the new one. The store's watcher lock stays held all
    along (no other watcher takes the store meanwhile), and the reason is said even with
    --quiet (a service's log)."""
    env = frozen_code(tmp_path)
    process = WatchProcess(notes_store, "--quiet", env=env).ready()
    taker = _LockTaker(notes_store)
    try:
        before = _status(notes_store, env)
        assert before["live"]
        taker.start()
        _change_code(tmp_path)
        process.wait_for(lambda: len(_events(process, "ready")) == 2, "the second ready",
                         RESTART_WAIT)
        taker.done.set()
        taker.join()
        assert taker.taken == 0  # the lock was never free
        assert _messages(process) == [STARTING_AGAIN]
        process.wait_for(lambda: _said(process, f"memctl watch: {STARTING_AGAIN}"),
                         "the reason on stderr")
        process.wait_for(lambda: _said(process, "new code loaded"), "the new code")
        after = process.wait_for(lambda: (lambda found: found["live"] and found)(
            _status(notes_store, env)), "the heartbeat of the new code")
        assert after["pid"] == before["pid"] == process.proc.pid  # the same process
        assert process.proc.poll() is None
        # It watches as before: a hand edit reaches the index.
        mark = process.mark()
        (notes_store / "demo" / "notes" / "fact" / "n3.md").write_text(
            note_text(nid(3), "edited after the upgrade quokkaword"))
        process.settle(mark, lambda total: total["updated"] >= 1, "the edit indexed")
        assert search_ids(notes_store, "quokkaword") == [nid(3)]
    finally:
        taker.done.set()
        process.stop()
    assert process.proc.returncode == 0, "".join(process.stderr)


def test_new_code_that_does_not_start_is_said_and_the_watcher_goes_on(
        notes_store: Path, tmp_path: Path) -> None:
    """An upgrade that leaves code which does not start (a file half written, a broken
    release): it is tried again a few times, then one warning, and the watcher keeps running
    the code it has, until the files change again."""
    env = frozen_code(tmp_path)
    process = WatchProcess(notes_store, env=env).ready()
    try:
        module = tmp_path / "code" / "memctl" / "core" / "ids.py"
        good = module.read_text()
        module.write_text(good + "\nbroken = (\n")
        process.wait_for(lambda: _messages(process), "the warning", RESTART_WAIT)
        [warning] = _messages(process)
        assert warning.startswith("warning: memctl's code changed but does not start ("), warning
        assert "SyntaxError" in warning and warning.endswith(
            "this watcher goes on with the code it started with"), warning
        assert len(_events(process, "ready")) == 1
        mark = process.mark()
        (notes_store / "demo" / "notes" / "fact" / "n4.md").write_text(
            note_text(nid(4), "edited while the code is broken wombatword"))
        process.settle(mark, lambda total: total["updated"] >= 1, "the edit indexed")
        module.write_text(good)
        process.wait_for(lambda: len(_events(process, "ready")) == 2, "the start on the mend",
                         RESTART_WAIT)
        assert _messages(process)[1:] == [STARTING_AGAIN]
        assert search_ids(notes_store, "wombatword") == [nid(4)]
    finally:
        process.stop()


def test_an_upgrade_while_another_watcher_has_the_store_waits_for_it(
        notes_store: Path, tmp_path: Path) -> None:
    """A watcher that had let the store go (moved away, then back while a watcher started
    where it went still held it) had no lock to hand over when memctl's code changed: it
    ended, exit 0, and nothing watched the store once the other stopped. It now starts again
    on the new code once it watches the store again."""
    env = frozen_code(tmp_path)
    first = WatchProcess(notes_store, env=env).ready()
    moved = notes_store.with_name("moved")
    second = None
    try:
        os.rename(notes_store, moved)
        first.wait_for(lambda: any("is gone" in message for message in _messages(first)),
                       "the first watcher to let the store go")
        second = WatchProcess(moved).ready()  # this checkout's code: not upgraded
        notes_store.symlink_to(moved)
        first.wait_for(lambda: any("now watches" in message for message in _messages(first)),
                       "the first watcher to wait for the second")
        _change_code(tmp_path)
        first.wait_for(lambda: any("once it watches the store again" in message
                                   for message in _messages(first)),
                       "the first watcher to say it starts again later", RESTART_WAIT)
        time.sleep(1.0)
        assert first.proc.poll() is None, "".join(first.stderr)
        assert len(_events(first, "ready")) == 1
        second.stop()
        first.wait_for(lambda: len(_events(first, "ready")) == 2, "the start on the new code",
                       RESTART_WAIT)
        first.wait_for(lambda: _said(first, "new code loaded"), "the new code")
        after = first.wait_for(lambda: (lambda found: found["live"] and found)(
            _status(notes_store, env)), "the heartbeat of the new code")
        assert after["pid"] == first.proc.pid
        mark = first.mark()
        (moved / "demo" / "notes" / "fact" / "n44.md").write_text(note_text(nid(44), "bilby"))
        first.settle(mark, lambda total: total["added"] >= 1, "the note saved after it")
        assert search_ids(moved, "bilby") == [nid(44)]
    finally:
        if second is not None:
            second.stop()
        first.stop()
        if notes_store.is_symlink():
            notes_store.unlink()
        if moved.exists():
            os.rename(moved, notes_store)
    assert first.proc.returncode == 0, "".join(first.stderr)


def test_an_upgrade_while_the_store_is_away_is_checked_once_it_is_back(
        notes_store: Path, tmp_path: Path) -> None:
    """The check of new code runs the watcher's command line, whose store was not there while
    it was away: the new code was said not to start, and the watcher stayed on the old code
    after the store came back, until the files changed again."""
    env = frozen_code(tmp_path)
    process = WatchProcess(notes_store, env=env).ready()
    away = notes_store.with_name("away")
    try:
        os.rename(notes_store, away)
        process.wait_for(lambda: any("is gone" in message for message in _messages(process)),
                         "the watcher to say the store is gone")
        _change_code(tmp_path)
        # Longer than the check and its three tries again (2, 4 and 8 s) took to say so.
        time.sleep(22)
        assert not any("does not start" in message for message in _messages(process)), \
            _messages(process)
        assert len(_events(process, "ready")) == 1
        os.rename(away, notes_store)
        process.wait_for(lambda: len(_events(process, "ready")) == 2,
                         "the start on the new code once the store is back", RESTART_WAIT)
        process.wait_for(lambda: _said(process, "new code loaded"), "the new code")
        assert STARTING_AGAIN in _messages(process)
    finally:
        process.stop()
        if away.exists():
            os.rename(away, notes_store)
    assert process.proc.returncode == 0, "".join(process.stderr)


def _search_server_of(watcher_pid: int) -> int:
    """The pid of the watcher's search server (its child running memctl.cli.searchserver)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat_file:
                parent = int(stat_file.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as command:
                if parent == watcher_pid and b"memctl.cli.searchserver" in command.read():
                    return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    raise AssertionError("no search server")


def test_a_stop_asked_while_the_watcher_starts_again_ends_it_cleanly(
        notes_store: Path, tmp_path: Path) -> None:
    """SIGTERM (a `systemctl stop`) that comes while the watcher stops to start again on new
    code: it ends as on any stop, exit 0, the lock and the heartbeat gone, instead of
    `error: interrupted` and exit 130. (Its search server, stopped here with SIGSTOP, holds
    the watcher in that window for the 2 s it is waited for.)"""
    env = frozen_code(tmp_path)
    process = WatchProcess(notes_store, env=env).ready()
    server = None
    try:
        process.wait_for(lambda: (notes_store / ".memctl" / "search.sock").exists(),
                         "the search server")
        server = _search_server_of(process.proc.pid)
        os.kill(server, signal.SIGSTOP)
        _change_code(tmp_path)
        process.wait_for(lambda: _messages(process), "the restart", RESTART_WAIT)
        time.sleep(0.3)
        process.proc.send_signal(signal.SIGTERM)
        process.proc.wait(30)
    finally:
        if server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGCONT)
        process.stop()
    process.wait_for(lambda: _said(process, "memctl watch: stopped"), "the stop")
    assert process.proc.returncode == 0, "".join(process.stderr)
    assert len(_events(process, "ready")) == 1  # not started again
    assert not _said(process, "error:")
    assert read_status(notes_store) is None  # no heartbeat left
    with WatchLock(notes_store):  # nor the lock
        pass


def test_a_restarted_watcher_keeps_the_utf8_mode_of_the_c_locale(
        notes_store: Path, tmp_path: Path) -> None:
    """Python started in the C locale turns UTF-8 mode on and sets LC_CTYPE=C.UTF-8 in its
    own environment: started again with that environment, it ran without UTF-8 mode, and its
    search server then declined every search asked in the same locale."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LC_", "LANG", "PYTHONUTF8"))}
    env.update(frozen_code(tmp_path), MEMCTL_STORE=str(notes_store))
    env.pop("MEMCTL_ALWAYS_WALK", None)
    process = WatchProcess(notes_store, base=env).ready()

    def answered() -> str:
        mark = tmp_path / f"mark-{time.monotonic_ns()}"
        subprocess.run([sys.executable, "-c", HARNESS, str(mark), "search", "zebra3q", "-a"],
                       env=env, check=True, capture_output=True, timeout=60)
        return mark.read_text()

    try:
        process.wait_for(lambda: answered() == "served", "a served search")
        _change_code(tmp_path)
        process.wait_for(lambda: len(_events(process, "ready")) == 2, "the second ready",
                         RESTART_WAIT)
        process.wait_for(lambda: answered() == "served", "a served search after the restart")
    finally:
        process.stop()


def _bump(store: Path, key: str) -> dict[str, str]:
    """The index as a newer memctl leaves it: `key`'s version one higher (`meta`)."""
    conn = sqlite3.connect(store / ".memctl" / "index.sqlite")
    try:
        with conn:
            conn.execute("UPDATE meta SET value = value + 1 WHERE key = ?", (key,))
        return dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()


def _indexed(store: Path, word: str) -> bool:
    conn = sqlite3.connect(store / ".memctl" / "index.sqlite")
    try:
        return conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?",
                            (word,)).fetchone()[0] > 0
    finally:
        conn.close()


def test_a_running_watcher_writes_nothing_into_an_index_a_newer_memctl_made(
        watcher: WatchProcess, notes_store: Path) -> None:
    """A newer memctl made the index while an older watcher runs (another installation, or
    the seconds before the watcher starts again on an upgrade): the watcher wrote rows of its
    version into it, which the newer memctl then trusted. Now it writes nothing and is not
    live (readers check the files themselves) until the index is its version's again."""
    newer = _bump(notes_store, "tokenizer")
    mark = watcher.mark()
    (notes_store / "demo" / "notes" / "fact" / "n5.md").write_text(
        note_text(nid(5), "edited under a newer index numbatword"))
    watcher.wait_for(lambda: _messages(watcher), "the warning")
    [warning] = _messages(watcher)
    assert warning.startswith("warning: the index was made by a newer memctl (tokenizer "), \
        warning
    assert warning.endswith("This watcher writes nothing to it meanwhile"), warning
    time.sleep(1.0)  # a batch would have been applied by now
    assert not _indexed(notes_store, "numbatword")
    assert watcher.batches(mark) == []
    found = read_status(notes_store)
    assert found is not None and found.running and not found.live and found.state == "paused"
    shown = run_memctl("watch", "--status", store=notes_store, project=None)
    assert "writes nothing to the index, which a newer memctl made" in shown.stdout
    conn = sqlite3.connect(notes_store / ".memctl" / "index.sqlite")
    assert dict(conn.execute("SELECT key, value FROM meta")) == newer
    conn.close()
    # This version takes the index over (`memctl reindex`): the watcher watches again.
    assert run_memctl("reindex", store=notes_store, project=None).exit_code == 0
    (notes_store / "demo" / "notes" / "fact" / "n6.md").write_text(
        note_text(nid(6), "edited once the index is ours again dingoword"))
    watcher.wait_for(lambda: len(_messages(watcher)) == 2, "watching again")
    assert _messages(watcher)[1] == "the index is of this memctl's version again: watching"
    watcher.wait_for(lambda: _indexed(notes_store, "dingoword"), "the edit indexed")
    watcher.wait_for(lambda: watcher_is_live(notes_store), "live again")
    assert search_ids(notes_store, "numbatword") == [nid(5)]


def test_a_watcher_started_on_an_index_of_a_newer_memctl_starts_paused(notes_store: Path) -> None:
    """An older `memctl watch` started (or started again, on a version gone back to) where a
    newer memctl made the index: it watches paused, instead of exiting, and writes nothing
    until the index is its version's again."""
    assert run_memctl("reindex", store=notes_store, project=None).exit_code == 0
    _bump(notes_store, "schema")
    process = WatchProcess(notes_store)
    try:
        process.wait_for(lambda: _messages(process), "the warning")
        assert _messages(process)[0].startswith(
            "warning: the index was made by a newer memctl (schema "), _messages(process)
        process.wait_for(lambda: (lambda found: found is not None and found.state == "paused")(
            read_status(notes_store)), "the paused heartbeat")
        assert _events(process, "ready") == []  # not watching until it resumes
        (notes_store / "demo" / "notes" / "fact" / "n7.md").write_text(
            note_text(nid(7), "written while paused okapiword"))
        time.sleep(1.0)
        assert not _indexed(notes_store, "okapiword")
        assert run_memctl("reindex", store=notes_store, project=None).exit_code == 0
        (notes_store / "demo" / "notes" / "fact" / "n8.md").write_text(
            note_text(nid(8), "written once the index is ours again tapirword"))
        process.wait_for(lambda: watcher_is_live(notes_store), "live again")
        process.wait_for(lambda: _indexed(notes_store, "tapirword"), "the edit indexed")
        process.ready()  # said once it resumed
        assert process.proc.poll() is None
    finally:
        process.stop()
    assert process.proc.returncode == 0, "".join(process.stderr)


def test_a_paused_watcher_with_commit_still_commits_hand_edits(notes_store: Path) -> None:
    """`--commit` commits what git sees changed, which needs no index: a watcher paused on a
    newer memctl's index went on counting nothing as changed, and committed nothing."""
    process = WatchProcess(notes_store, "--commit").ready()
    try:
        time.sleep(1.5)  # its first look for hand edits to commit (the first pass's) is over
        _bump(notes_store, "tokenizer")
        (notes_store / "demo" / "notes" / "fact" / "n9.md").write_text(
            note_text(nid(9), "a hand edit while paused"))
        process.wait_for(lambda: _messages(process), "the warning")
        process.wait_for(lambda: _events(process, "commit"), "the commit", 60)
        shown = git(notes_store, "show", "--name-only", "--format=%s", "HEAD")
        assert "demo/notes/fact/n9.md" in shown, shown
    finally:
        process.stop()


def test_the_check_of_new_code_meets_a_broken_indexer(notes_store: Path, tmp_path: Path) -> None:
    """The check a watcher makes before it starts again on new code imports what a watcher
    loads only once it runs (the indexer and its parser): a release broken there no longer
    passes it, to crash the watcher after the `exec`."""
    env = {**os.environ, **frozen_code(tmp_path), "MEMCTL_STORE": str(notes_store),
           "MEMCTL_WATCH_CHECK_ONLY": "1"}
    checked = subprocess.run([memctl_executable(), "watch"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert read_status(notes_store) is None  # it did not watch
    module = tmp_path / "code" / "memctl" / "index" / "docs.py"
    module.write_text(module.read_text() + "\nbroken = (\n")
    checked = subprocess.run([memctl_executable(), "watch"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode != 0 and "SyntaxError" in checked.stderr, checked


def test_an_empty_folder_put_where_the_store_was_is_left_untouched(
        watcher: WatchProcess, notes_store: Path) -> None:
    """`mv store store.old; mkdir store` to `git clone URL .` into it: the running watcher took
    the empty folder for the store and made a `.memctl/` in it within half a second, so the
    clone failed ("destination path '.' already exists and is not an empty directory"), though
    `memctl watch` started there refuses it (no memctl.toml). It now waits for a store there,
    and starts over once one is."""
    old = notes_store.with_name("store.old")
    os.rename(notes_store, old)
    watcher.wait_for(lambda: any("is gone" in e.get("message", "") for e in watcher.lines),
                     "the watcher to see the store gone")
    notes_store.mkdir()
    watcher.wait_for(lambda: any("another folder is at" in e.get("message", "")
                                 for e in watcher.lines), "the watcher to see another folder")
    time.sleep(1.2)  # two more looks at the folder
    assert os.listdir(notes_store) == []
    notes_store.rmdir()
    os.rename(old, notes_store)
    watcher.wait_for(lambda: (status := read_status(notes_store)) is not None and status.live,
                     "the watcher back on the store")
    (notes_store / "demo" / "notes" / "fact" / "n7.md").write_text(note_text(nid(7), "tapir"))
    assert search_ids(notes_store, "tapir") == [nid(7)]
