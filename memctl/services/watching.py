"""`memctl watch`: keeping the index in step with the files while the command runs; and the
same watcher run in a thread of `memctl mcp` (`BackgroundWatcher`, docs/watch.md)."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable

from memctl.disk.changeprobe import ChangeProbe
from memctl.disk.layout import path_identity
from memctl.disk.watchstate import (
    FAILING,
    WatcherRunning,
    answer_in_process,
    clear_own_heartbeat,
    no_room,
    read_status,
    use_change_probe,
)
from memctl.store import Store
from memctl.watch.watcher import BatchReport, StoreAway, Watcher, import_all

__all__ = ["FAILING", "BackgroundWatcher", "BatchReport", "Watcher", "clear_own_heartbeat",
           "import_all", "no_room", "read_status"]

# While another process's watcher holds the store, look this often whether it is gone, so
# that the server takes over when it stops.
TAKE_OVER_EVERY = 5.0
# While the store is away from its path (moved, an empty folder in its place), look this often
# whether it is back.
STORE_BACK_EVERY = 0.5
# How long `stop` waits for the watcher's thread (the MCP client gives a server 2 s to exit
# once its stdin is closed).
STOP_WAIT = 1.5


class BackgroundWatcher:
    """`memctl watch` in a thread of a long-running process (`memctl mcp`): the index stays in
    step with the files, so a call skips the walk of the store (`index.db.ensure_fresh` asks
    this watcher, through its cookies, to settle first: memctl.disk.watchstate). When it cannot
    watch (another watcher holds the store: then that one is trusted, and this one takes over
    once it stops; a read-only store; no inotify) every call checks the files itself, as
    without a watcher. `stop` ends it and removes its heartbeat."""

    def __init__(self, store: Store, *, say: Callable[[str], None] = lambda text: None) -> None:
        self.store = store
        self.say = say
        # The folder the server opened: its watcher never starts on another one put at the
        # same path (`Watcher.keep_folder`).
        found = os.stat(store.root)
        self.folder = (found.st_dev, found.st_ino)
        self.ready = threading.Event()  # set while the watcher is live (its first pass done)
        self.problem: str | None = None  # why it does not watch, when it does not
        self._lock = threading.Lock()
        self._stopping = False
        self._wake = threading.Event()
        self._watcher: Watcher | None = None
        self._thread: threading.Thread | None = None
        self._answered = threading.Condition()
        self._go = threading.Event()
        self._after = 0.0
        # The change probe: a call that finds nothing changed since the last one skips the
        # round trip to the watcher (memctl.disk.changeprobe, docs/watch.md).
        self.probe: ChangeProbe | None = None

    def start(self, *, after: float = 0.0) -> None:
        """Start the thread; it begins to watch at `go()`, or `after` seconds at the latest
        (the server asks it to wait until its client is answered: the watcher's first pass
        would compete with the server's start-up for the interpreter)."""
        if after <= 0:
            self._go.set()
        self._after = after
        self._thread = threading.Thread(target=self._run, name="memctl-watch", daemon=True)
        self._thread.start()

    def go(self) -> None:
        self._go.set()

    def stop(self) -> None:
        """Stop watching: the watches, the lock and the heartbeat go (within STOP_WAIT; a
        heartbeat left by a thread still busy then is removed here)."""
        with self._lock:
            self._stopping = True
            watcher = self._watcher
        self._wake.set()
        self._go.set()
        if watcher is not None:
            watcher.stop()
        use_change_probe(self.store, None)
        if self.probe is not None:
            self.probe.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_WAIT)
            if thread.is_alive():
                clear_own_heartbeat(self.store)

    def _run(self) -> None:
        self._go.wait(self._after)
        said_other = False
        said_away: str | None = None
        while True:
            with self._lock:
                if self._stopping:
                    return
                # Never onto another folder put at the store's path: the server serves only
                # the store it opened (serving.ServedStore) and writes nothing elsewhere.
                watcher = self._watcher = Watcher(self.store.root, on_message=self._message,
                                                  on_answer=self._answer,
                                                  keep_folder=self.folder)
            try:
                watcher.run(on_ready=self._on_ready)
                return  # stopped
            except StoreAway as away:
                # Moved away before the watcher started (or while it started): it starts
                # once the store is back, as a running watcher goes on (tests/test_mcp.py).
                if said_away != away.state:
                    said_away = away.state
                    self._message(str(away))
                self._wake.wait(STORE_BACK_EVERY)
                continue
            except WatcherRunning:
                self._start_probe()  # the other watcher need not be asked either
                if not said_other:
                    said_other = True
                    found = read_status(self.store)
                    who = f" (pid {found.pid})" if found is not None else ""
                    self.problem = "another watcher runs"
                    self.say(f"another watcher{who} keeps the index of {self.store.root} fresh; "
                             f"calls rely on it, and this server watches once it stops")
            except Exception as exc:  # noqa: BLE001 - whatever stops the watcher, calls go on
                if self._store_away():
                    continue  # it went while the watcher started: the next start says so, and waits
                self.problem = _reason(exc)
                self.say(f"not watching the store ({self.problem}); each call checks the files "
                         f"itself")
                return
            finally:
                self.ready.clear()
                answer_in_process(self.store, None)
            self._wake.wait(TAKE_OVER_EVERY)

    def _store_away(self) -> bool:
        return path_identity(self.store.root) != self.folder

    def _on_ready(self) -> None:
        self.problem = None
        answer_in_process(self.store, self._wait_gone)
        # Its watches are set in a thread of its own (10k notes: ~40 ms, 100k: ~250 ms), while
        # the watcher answers: a call meanwhile asks the watcher, as without a probe.
        threading.Thread(target=self._start_probe, name="memctl-probe", daemon=True).start()
        self.ready.set()
        self.say(f"watching {self.store.root}: the index stays fresh between calls")

    def _start_probe(self) -> None:
        """Once a watcher keeps the store (its own or another's), and never before the
        watcher's own watches are set: the probe's watches come second when a limit is near."""
        with self._lock:
            if self.probe is not None or self._stopping:
                return
            try:
                self.probe = ChangeProbe.start(self.store.root)
            except Exception as exc:  # noqa: BLE001 - without a probe every call asks the watcher
                self.say(f"no change probe ({_reason(exc)}); each call asks the watcher")
                return
            if self.probe is None:
                return  # not Linux: each call asks the watcher
            if self.probe.failure is not None:
                self.say(f"no change probe ({_probe_reason(self.probe.failure)}); each call "
                         f"asks the watcher")
            use_change_probe(self.store, self.probe)

    def _message(self, text: str) -> None:
        self.say(f"watcher: {text}")

    def _answer(self) -> None:
        with self._answered:
            self._answered.notify_all()

    def _wait_gone(self, paths: list[str], deadline: float) -> bool:
        """Wait until the cookies `paths` are answered (deleted by the watcher), or until
        `deadline`; woken by each answer, and looking again every 50 ms regardless."""
        with self._answered:
            while True:
                if not any(os.path.lexists(path) for path in paths):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._answered.wait(min(left, 0.05))


def _probe_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the inotify watch limit, fs.inotify.max_user_watches, is reached"
    if exc.errno == errno.EMFILE:
        return "the inotify instance limit, fs.inotify.max_user_instances, is reached"
    return _reason(exc)


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
