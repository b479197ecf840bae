"""What other processes know about `memctl watch`: one watcher per store, and its heartbeat.

`.memctl/watch.lock` is flocked by the running watcher for its whole life, so the kernel frees
it when the process dies however it dies; a second watcher fails to take it and says who holds
it. `.memctl/watch.json` is the heartbeat: pid, host, start time, state and the time of the last
beat. A read command may skip its own full walk of the store only while `watcher_is_live` holds:
the watcher said it is ready (its first full pass is done), it beat recently, its process exists
on this machine and is not stopped (Ctrl-Z). Otherwise the command falls back to its walk.

This module is on every read command's startup path: standard library only, no heavy imports.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.disk.layout import state_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from memctl.disk.layout import StoreLike


HEARTBEAT_FILE = "watch.json"
LOCK_FILE = "watch.lock"

# The watcher beats every BEAT_INTERVAL seconds; a beat older than STALE_AFTER means the
# watcher hangs (or the machine slept), and readers walk the store themselves again.
BEAT_INTERVAL = 2.0
STALE_AFTER = 10.0


class WatcherRunning(MemctlError):
    """Another watcher holds this store."""


class WatchStatus:
    """The heartbeat as read by another process (a plain class: see memctl.index.db)."""

    def __init__(self, *, pid: int, host: str, state: str, started: float, heartbeat: float,
                 running: bool, live: bool, extra: dict[str, Any]) -> None:
        self.pid = pid
        self.host = host
        self.state = state  # "starting" while the first full pass runs, then "ready"
        self.started = started  # epoch seconds
        self.heartbeat = heartbeat  # epoch seconds of the last beat
        self.running = running  # its process exists on this machine and is not stopped
        self.live = live  # it keeps the index fresh right now (see watcher_is_live)
        self.extra = extra

    @property
    def age(self) -> float:
        return max(0.0, time.time() - self.heartbeat)


def heartbeat_path(store: StoreLike) -> Path:
    return state_path(store, HEARTBEAT_FILE)


def lock_path(store: StoreLike) -> Path:
    return state_path(store, LOCK_FILE)


def _process_state(pid: int) -> str | None:
    """'alive', 'stopped' or None (gone). A stopped watcher (Ctrl-Z) sees no events."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # exists, owned by another user
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return "alive"  # no /proc (macOS): trust kill(0)
    # Field 3, after the parenthesised command name (which may itself hold spaces or ')').
    state = stat[stat.rfind(b")") + 2:][:1]
    if state in (b"T", b"t"):
        return "stopped"
    if state in (b"Z", b"X"):
        return None
    return "alive"


def _hostname() -> str:
    import socket  # ~3 ms to import: only when a heartbeat is there to check

    return socket.gethostname()


def read_status(store: StoreLike, *, now: float | None = None) -> WatchStatus | None:
    """The heartbeat of this store's watcher, or None when no heartbeat is there."""
    try:
        data = json.loads(heartbeat_path(store).read_bytes())
        pid, heartbeat = int(data["pid"]), float(data["heartbeat"])
        started = float(data.get("started", 0))
        host, state = str(data.get("host", "")), str(data.get("state", ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # none, half written or not ours: no watcher
    now = time.time() if now is None else now
    running = host == _hostname() and _process_state(pid) == "alive"
    # A beat from the future (the clock stepped back) counts as fresh only within the window.
    live = running and state == "ready" and abs(now - heartbeat) <= STALE_AFTER
    extra = {k: v for k, v in data.items()
             if k not in {"pid", "host", "state", "started", "heartbeat"}}
    return WatchStatus(pid=pid, host=host, state=state, started=started,
                       heartbeat=heartbeat, running=running, live=live, extra=extra)


def watcher_is_live(store: StoreLike) -> bool:
    """True when a running watcher keeps this store's index fresh, so a full walk can be skipped."""
    status = read_status(store)
    return status is not None and status.live


class Heartbeat:
    """Writes `.memctl/watch.json` for the watcher (this process)."""

    def __init__(self, store: StoreLike) -> None:
        self.path = heartbeat_path(store)
        self.started = time.time()
        self.state = "starting"
        self.extra: dict[str, Any] = {}

    def beat(self, state: str | None = None, **extra: Any) -> None:
        if state is not None:
            self.state = state
        self.extra.update(extra)
        data = {
            "pid": os.getpid(), "host": _hostname(), "state": self.state,
            "started": self.started, "heartbeat": time.time(), **self.extra,
        }
        # Never `parents=True`: if the store folder was moved away, recreating its path here
        # would leave a stray folder where the person wants to put the new one.
        self.path.parent.mkdir(exist_ok=True)
        # Replace, never rewrite in place, so a reader never sees half a file. No fsync: the
        # file is derived and local, and a torn one after a power cut reads as "no watcher".
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, self.path)

    def clear(self) -> None:
        """Remove the heartbeat if it is still ours (a replaced store may hold another's)."""
        status = read_status(self.path.parent.parent)
        if status is not None and status.pid != os.getpid():
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class WatchLock:
    """The single-watcher lock of one store, held until `release`."""

    def __init__(self, store: StoreLike) -> None:
        self.path = lock_path(store)
        self._handle: Any = None

    def acquire(self) -> None:
        """Take the lock or raise `WatcherRunning` naming the watcher that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise WatcherRunning(_describe_holder(self.path.parent.parent)) from None
        self._handle = handle

    def still_held(self) -> bool:
        """False when `.memctl/` (or the lock file) was deleted or replaced under us: the
        flock then sits on a file nobody else can see, and a second watcher could start."""
        if self._handle is None:
            return False
        try:
            on_disk = os.stat(self.path)
        except OSError:
            return False
        ours = os.fstat(self._handle.fileno())
        return (on_disk.st_ino, on_disk.st_dev) == (ours.st_ino, ours.st_dev)

    def release(self) -> None:
        if self._handle is not None:
            try:
                fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            finally:
                self._handle.close()
                self._handle = None

    def __enter__(self) -> WatchLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _describe_holder(root: Path) -> str:
    status = read_status(root)
    who = f" (pid {status.pid})" if status is not None else ""
    return (f"a watcher already runs for the store {root}{who}; only one watcher per store "
            f"can run, stop it first (`memctl watch --status` shows it)")
