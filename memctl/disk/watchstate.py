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

import errno
import json
import os
import stat
import time
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.disk.layout import make_state_folder, root_of, state_file_error, state_path

try:
    import fcntl
except ImportError:  # Windows: `watch --status` and every read work; a watcher cannot run
    fcntl = None  # type: ignore[assignment]

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memctl.disk.layout import StoreLike


HEARTBEAT_FILE = "watch.json"
LOCK_FILE = "watch.lock"

# The watcher beats every BEAT_INTERVAL seconds; a beat older than STALE_AFTER means the
# watcher hangs (or the machine slept), and readers walk the store themselves again.
BEAT_INTERVAL = 2.0
STALE_AFTER = 10.0


# The heartbeat's key for why the watcher's passes fail now (a full disk), absent while they
# work: such a watcher runs but keeps nothing fresh (`read_status`, `memctl watch --status`).
FAILING = "failing"


def failure_reason(exc: BaseException) -> str:
    """Why a pass failed, in a few words for the heartbeat: a full disk said as one."""
    if getattr(exc, "errno", None) == errno.ENOSPC \
            or getattr(exc, "sqlite_errorname", None) == "SQLITE_FULL":
        return "no space left on device"
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def no_room(store: StoreLike) -> bool:
    """Whether the disk of the store's state folder has no room left for a file: no block
    (or no inode) this user may take. A watcher there cannot write its heartbeat, so it
    cannot say so itself (`memctl watch --status`)."""
    try:
        info = os.statvfs(state_path(store, ""))
        root = os.geteuid() == 0  # (root may take the blocks kept for it)
    except (OSError, AttributeError, MemctlError):  # (no statvfs on Windows)
        return False
    blocks = info.f_bfree if root else info.f_bavail
    inodes = info.f_ffree if root else info.f_favail
    return blocks == 0 or (info.f_files > 0 and inodes == 0)


class WatcherRunning(MemctlError):
    """Another watcher holds this store."""


class WatchStatus:
    """The heartbeat as read by another process (a plain class: see memctl.index.db)."""

    def __init__(self, *, pid: int, host: str, state: str, started: float, heartbeat: float,
                 running: bool, live: bool, extra: dict[str, Any]) -> None:
        self.pid = pid
        self.host = host
        self.state = state  # "starting" while the first full pass runs, then "ready"
        # ("paused" while the index is a newer memctl's: memctl.watch.watcher)
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


def process_alive(pid: int) -> bool:
    """Is there a process with this id (running or stopped)?"""
    return _process_state(pid) is not None


def _process_state(pid: int) -> str | None:
    """'alive', 'stopped' or None (gone). A stopped watcher (Ctrl-Z) sees no events."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # exists, owned by another user
    except (OSError, OverflowError):  # OverflowError: a number no process id can be
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
    """This machine's name, as `socket.gethostname()` gives it. On POSIX the node name of
    `uname` is that same name, without importing socket (~3 ms of every search that finds a
    heartbeat; tests/test_watch.py compares the two)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return uname().nodename
    import socket  # Windows

    return socket.gethostname()


# The heartbeat names the folder its watcher watches: a copy of the store (`cp -a`, a
# backup restored beside it) carries the original's `watch.json`, and a reader there must not
# trust a watcher that never sees the copy's files (tests/test_watch.py).
_IDENTITY_KEYS = ("store", "store_dev", "store_ino")


def store_identity(store: StoreLike) -> dict[str, Any]:
    """The store folder as its heartbeat names it: the resolved absolute path, and the
    device and inode of the folder (a folder put in its place is another store)."""
    root = root_of(store)
    info = os.stat(root)
    return {"store": str(Path(root).resolve()), "store_dev": info.st_dev,
            "store_ino": info.st_ino}


def _written_for(store: StoreLike, data: dict[str, Any]) -> bool:
    """Whether a heartbeat was written by a watcher of this very folder."""
    try:
        here = store_identity(store)
    except OSError:
        return False
    return all(data.get(key) == here[key] for key in _IDENTITY_KEYS)


def read_status(store: StoreLike, *, now: float | None = None) -> WatchStatus | None:
    """The heartbeat of this store's watcher, or None when no heartbeat is there, or when
    the one there was written for another folder (a copied store's)."""
    try:
        data = json.loads(heartbeat_path(store).read_bytes())
        pid, heartbeat = int(data["pid"]), float(data["heartbeat"])
        started = float(data.get("started", 0))
        host, state = str(data.get("host", "")), str(data.get("state", ""))
        if not _written_for(store, data):
            return None  # the watcher of another folder (this store was copied): none here
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # none, half written or not ours: no watcher
    now = time.time() if now is None else now
    running = host == _hostname() and _process_state(pid) == "alive"
    # A beat from the future (the clock stepped back) counts as fresh only within the window.
    # A watcher whose passes fail (a full disk) keeps nothing fresh: readers check the files.
    live = running and state == "ready" and abs(now - heartbeat) <= STALE_AFTER \
        and not data.get(FAILING)
    extra = {k: v for k, v in data.items()
             if k not in {"pid", "host", "state", "started", "heartbeat", *_IDENTITY_KEYS}}
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
        self.identity = store_identity(store)  # the folder watched, as it is when it starts
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
            **self.identity,
        }
        # Never `parents=True`: if the store folder was moved away, recreating its path here
        # would leave a stray folder where the person wants to put the new one.
        self.path.parent.mkdir(exist_ok=True)
        # Replace, never rewrite in place, so a reader never sees half a file. No fsync: the
        # file is derived and local, and a torn one after a power cut reads as "no watcher".
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise state_file_error(self.path, exc) from None

    def clear(self) -> None:
        """Remove the heartbeat if it is still ours (a replaced store may hold another's)."""
        status = read_status(self.path.parent.parent)
        if status is not None and status.pid != os.getpid():
            return
        try:
            self.path.unlink()
        except OSError:  # gone, or `.memctl` replaced by a file: no heartbeat to remove
            pass


def clear_own_heartbeat(store: StoreLike) -> None:
    """Remove the heartbeat if this process wrote it: a process ending while its watcher
    thread is still busy (`memctl mcp`, memctl.services.watching) leaves none behind."""
    status = read_status(store)
    if status is not None and status.pid == os.getpid() and status.host == _hostname():
        try:
            heartbeat_path(store).unlink()
        except OSError:  # (as `Heartbeat.clear`)
            pass


class WatchLock:
    """The single-watcher lock of one store, held until `release`."""

    def __init__(self, store: StoreLike) -> None:
        self.path = lock_path(store)
        self._handle: Any = None
        self.handed_over = False  # taken from this process before its `exec` (hand_over)

    def acquire(self) -> None:
        """Take the lock or raise `WatcherRunning` naming the watcher that holds it."""
        if fcntl is None:  # the same refusal as a change's (memctl.disk.locking.NO_FILE_LOCKS)
            raise MemctlError("watching a store is not supported on Windows: memctl keeps one "
                              "watcher per store with POSIX flock, which Windows lacks")
        self._handle = _handed_over(self.path)
        if self._handle is not None:
            self.handed_over = True
            return
        make_state_folder(self.path.parent)
        try:
            handle = open(self.path, "a+")
        except OSError as exc:
            raise state_file_error(self.path, exc) from None
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

    def hand_over(self) -> dict[str, str]:
        """Keep the lock held across an `exec` of this process (a watcher that starts again
        on new code, memctl.cli.codechange): its descriptor is inherited, and the
        environment returned names it for the next `acquire`. Until then no other watcher
        (a `memctl mcp` that tries every few seconds) can take the store."""
        fd = self._handle.fileno()
        os.set_inheritable(fd, True)
        return {HANDED_LOCK_ENV: str(fd)}

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


# The descriptor of the lock a watcher kept across its `exec` (WatchLock.hand_over).
HANDED_LOCK_ENV = "MEMCTL_WATCH_LOCK_FD"


def _handed_over(path: Path) -> Any:
    """The lock file handed over by this process before its `exec`, if the descriptor named
    in the environment is open on this very file (by device and inode); else None, and
    the descriptor is left alone (not ours to close). The name is taken out of the
    environment either way: no child inherits the claim."""
    value = os.environ.pop(HANDED_LOCK_ENV, "")
    # (`²` is a digit int() refuses; past 18 digits no descriptor, and int() refuses 4,300)
    if not (value.isascii() and value.isdecimal() and len(value) <= 18):
        return None
    fd = int(value)
    try:
        held, here = os.fstat(fd), os.stat(path)
    except (OSError, OverflowError):  # (a number no descriptor has)
        return None
    if (held.st_dev, held.st_ino) != (here.st_dev, here.st_ino):
        return None
    os.set_inheritable(fd, False)
    handle = open(fd, "a+", closefd=True)  # noqa: SIM115 - held until `release`
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: this cannot wait
    except OSError:
        handle.close()
        return None
    return handle


def _describe_holder(root: Path) -> str:
    status = read_status(root)
    who = f" (pid {status.pid})" if status is not None else ""
    return (f"a watcher already runs for the store {root}{who}; only one watcher per store "
            f"can run, stop it first (`memctl watch --status` shows it)")


# --- cookies: "has the watcher seen everything written before now?" ---------------------------
#
# A reader that trusts the watcher must not answer before the watcher has indexed what was
# written just before the question (a note saved, then searched for at once). So the reader
# drops a cookie file into each project folder and waits until the watcher has deleted them
# all: the watcher deletes a cookie only once every event that reached it before the cookie's
# own is in the index. One cookie per project folder, because the watcher watches each project
# folder on its own and only the events of one watch keep their order; the folder of the
# cookie must be watched, so `.memctl/` (never watched) cannot hold them. A cookie's name
# starts with `.`, so it is never a note nor indexed, and the watcher lists it in
# `.git/info/exclude`, so git never sees it (docs/watch.md).

COOKIE_PREFIX = ".memctl-cookie-"
# How long a reader waits for the watcher before walking the store itself.
COOKIE_WAIT = 0.2
# A cookie older than this was left by a reader killed while waiting: the watcher removes it.
COOKIE_STALE_AFTER = 10.0


# The heartbeat's "events" when the watcher's events of every watched folder come in one order
# (memctl.watch.observer): one cookie at the store's top then asks about the whole store.
ORDERED = "ordered"


def is_cookie(name: str) -> bool:
    return name.startswith(COOKIE_PREFIX)


# A watcher running in a thread of this very process (`memctl mcp`'s, memctl.services.watching)
# answers cookies here too: store root -> a function waiting, until a `time.monotonic()`
# deadline, for the given cookie paths to be gone, woken by the watcher's answer instead of
# polling the files. Set only while that watcher is ready (docs/watch.md).
_IN_PROCESS: dict[str, Callable[[list[str], float], bool]] = {}


def answer_in_process(store: StoreLike, wait_gone: Callable[[list[str], float], bool] | None
                      ) -> None:
    """Register (or, with None, withdraw) the cookie waiter of this process's own watcher."""
    root = os.fspath(root_of(store))
    if wait_gone is None:
        _IN_PROCESS.pop(root, None)
    else:
        _IN_PROCESS[root] = wait_gone


def answered_in_process(store: StoreLike) -> bool:
    """Whether this process's own watcher is ready to answer for the store (`memctl mcp`)."""
    return os.fspath(root_of(store)) in _IN_PROCESS


# The change probe of a long-running process (`memctl mcp`'s, memctl.disk.changeprobe), by
# store root: a call asks it, before anything else, whether any file the index covers changed
# since the index was last made sure of; if none did, the call skips the cookies
# (memctl.index.db, docs/watch.md "Skipping the round trip"). Not imported here: a probe is a
# `ChangeProbe` (`check`, `settle`), which only a long-running process makes. With the pid
# that made it: a forked child (a parsing worker) shares its descriptor, and reading it there
# would take events away from the process they are for.
_PROBES: dict[str, tuple[int, Any]] = {}


def use_change_probe(store: StoreLike, probe: Any) -> None:
    """Register (or, with None, withdraw) this process's change probe of the store."""
    root = os.fspath(root_of(store))
    if probe is None:
        _PROBES.pop(root, None)
    else:
        _PROBES[root] = (os.getpid(), probe)


def change_probe(store: StoreLike) -> Any:
    """This process's change probe of the store, or None."""
    if not _PROBES:
        return None
    pid, probe = _PROBES.get(os.fspath(root_of(store)), (0, None))
    return probe if pid == os.getpid() else None


class WatcherQuestion:
    """Cookies dropped for the running watcher (`ask_watcher`), and the wait for its answer,
    which the asker may start later: it can do its work meanwhile, while the watcher catches
    up (memctl.index.db.fresh_during). `close` takes back the cookies not answered."""

    def __init__(self, root: str, pending: list[str]) -> None:
        self.root = root
        self.pending = pending

    def answered(self, wait: float | None = None) -> bool:
        """True once the watcher has deleted every cookie, at most `wait` seconds from now
        (MEMCTL_WATCH_SYNC_WAIT, else COOKIE_WAIT)."""
        if wait is None:
            try:
                wait = float(os.environ.get("MEMCTL_WATCH_SYNC_WAIT", COOKIE_WAIT))
            except ValueError:
                wait = COOKIE_WAIT
        deadline = time.monotonic() + wait
        wait_gone = _IN_PROCESS.get(self.root)
        if wait_gone is not None and wait_gone(self.pending, deadline):
            self.pending = []
            return True
        # The watcher answers within a few ms: look every ms at most (a look is one lstat per
        # cookie), so the answer is seen ~1 ms after it comes, not up to 4 ms (10k notes, 21
        # project folders: 4.6 → 4.5 ms at the median, 8.8 → 5.0 ms at the 90th percentile).
        pause = 0.0005
        while self.pending:
            self.pending = [path for path in self.pending if os.path.lexists(path)]
            if not self.pending:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = 0.001
        return True

    def close(self) -> None:
        for path in self.pending:  # the watcher did not answer: take ours back
            try:
                os.unlink(path)
            except OSError:
                pass
        self.pending = []


def _make_cookie(path: str) -> None:
    """An empty file made with one event for the watcher (a create), not three: opening
    and closing it would add a close, and each event costs the watcher (watchdog's threads)
    some 50 µs of Python, 21 project folders at every question. Where `mknod` may not make
    a file (some file systems), it is opened and closed; never through a link, never over
    a file that is there."""
    try:
        os.mknod(path, 0o644 | stat.S_IFREG)
    except (AttributeError, PermissionError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))


def ask_watcher(store: StoreLike, tops: list[str]) -> WatcherQuestion | None:
    """Drop a cookie into each of the project folders `tops` (their names; "" is the store's
    top): the question "have you indexed every change made before this?"
    (`WatcherQuestion.answered`). None
    when a cookie cannot be written (a read-only store; none is left behind)."""
    root = os.fspath(root_of(store))
    token = f"{COOKIE_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    question = WatcherQuestion(root, [])
    try:
        for top in tops:
            path = os.path.join(root, top, token)
            _make_cookie(path)
            question.pending.append(path)
    except OSError:
        question.close()
        return None
    return question
