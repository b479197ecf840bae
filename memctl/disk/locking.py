"""The store lock: one writer at a time around multi-file changes and git commits.

An flock on the store's own folder, then one on `.memctl/lock` (both released by the kernel
when a process dies, so a crash never leaves the store locked), plus `lock.info` naming the
holder for a clear timeout message.

Why two: `.memctl/` may be deleted at any time (docs/reliability.md, "How to recover"). A
holder's flock then sits on a file nobody can open any more, and the next command would lock
the new `.memctl/lock` while the holder still writes: two commits racing for HEAD, and the
newcomer taking the live holder's `lock.info` for a dead one's and removing its temp files.
The store folder cannot be deleted under a running command without deleting the store, so a
newcomer waits on it for the holder whatever happened to `.memctl/`. `.memctl/lock` stays the
lock where a folder cannot be flocked (some network filesystems) and for a memctl of an older
version running at the same time; a lock on it is kept only once the file locked is still the
one at that path (tests/test_store_lock.py).

A holder removes `lock.info` before it lets go, so finding one on taking the lock means the
last holder was killed while holding it. It is kept as `lock.crashed` (with the time it was
found) until the next commit has dealt with the debris: gitops then knows a `.git/index.lock`
made between that holder's start and its discovery is the dead process's, not a person's
running git."""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memctl.core.clock import seconds_setting
from memctl.core.errors import MemctlError
from memctl.disk.atomic import make_dirs
from memctl.disk.layout import state_file_error, state_path
from memctl.disk.watchstate import process_alive

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no POSIX file locks. Reads need none; changes are refused.
    fcntl = None  # type: ignore[assignment]

# The one line a command that would change a store prints where it cannot lock one.
NO_FILE_LOCKS = ("changing a store is not supported on Windows: memctl locks a store with POSIX "
                 "flock, which Windows lacks; the commands that only read it (search, list, show, "
                 "recall, health, log, export, …) work")

DEFAULT_TIMEOUT = 30.0
# Created with the umask's bits but never world-writable (as every file memctl makes).
_FILE_MODE = 0o664

CRASHED_FILE = "lock.crashed"


class LockTimeout(MemctlError):
    pass


class ReadOnlyStore(MemctlError):
    """The store cannot be written (a read-only mount or folder): reads work, changes do not."""


class NoFileLocks(MemctlError):
    """This system has no POSIX file locks (Windows): reads work, changes do not."""


def require_file_locks() -> None:
    """Refuse, before anything is written, a change this system could not lock
    (README, "Install": the supported platforms; tests/test_platforms.py)."""
    if fcntl is None:
        raise NoFileLocks(NO_FILE_LOCKS)


def crashed_holder(store_root: Path) -> dict[str, Any] | None:
    """What the lock.info of a holder that died holding the lock said (`pid`, `command`,
    `since`), plus `found` (when it was discovered); None when no crash awaits clearing."""
    try:
        info = json.loads(state_path(store_root, CRASHED_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def clear_crashed(store_root: Path) -> None:
    """The crashed holder's debris has been dealt with (called by the lock holder)."""
    try:
        state_path(store_root, CRASHED_FILE).unlink()
    except OSError:
        pass


@contextmanager
def store_lock(store_root: Path, what: str = "", timeout: float | None = None) -> Iterator[None]:
    require_file_locks()
    if timeout is None:
        timeout = _timeout_setting()
    state_dir = state_path(store_root)
    _make_state_dir(state_dir)
    info_path = state_dir / "lock.info"
    deadline = time.monotonic() + timeout
    folder_fd = _lock_store_folder(state_dir.parent, deadline, timeout, info_path)
    try:
        fd = _lock_file_at(state_dir, deadline, timeout, info_path)
        try:
            _note_previous_holder(info_path)
            _write_info(info_path, {
                "pid": os.getpid(),
                "command": what or " ".join(sys.argv[1:3]),
                "since": time.time(),
            })
            try:
                yield
            finally:
                try:
                    info_path.unlink()
                except OSError:
                    pass
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        if folder_fd is not None:
            # Let go before closing: a child forked meanwhile (a health or reindex worker of
            # `memctl mcp`) shares the descriptor, and would hold the lock until it exits.
            fcntl.flock(folder_fd, fcntl.LOCK_UN)
            os.close(folder_fd)


def _lock_store_folder(root: Path, deadline: float, timeout: float, info_path: Path) -> int | None:
    """The flock on the store folder itself, which deleting `.memctl/` cannot take away from
    a running holder. None where the folder cannot be opened or flocked (some network
    filesystems refuse a lock on a folder): `.memctl/lock` alone is the lock there."""
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        _wait_for_flock(fd, deadline, timeout, info_path)
    except OSError:  # (not LockTimeout: a MemctlError)
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lock_file_at(state_dir: Path, deadline: float, timeout: float, info_path: Path) -> int:
    """An open descriptor of `.memctl/lock`, flocked, and still the file at that path. A lock
    taken on a file that was deleted (or replaced) meanwhile locks nothing anyone else will
    open: let it go and lock the file there now, made again if it is gone."""
    lock_path = state_dir / "lock"
    vanished = 0
    while True:
        _make_state_dir(state_dir)
        try:
            fd = _open_lock_file(lock_path, state_dir.parent, retry_missing=vanished < 100)
        except _FolderGone:
            vanished += 1  # deleted again between making it and opening the file in it
            continue
        try:
            _wait_for_flock(fd, deadline, timeout, info_path)
            if _is_file_at(fd, lock_path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _open_lock_file(lock_path: Path, store_root: Path, *, retry_missing: bool) -> int:
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                       _FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise ReadOnlyStore(
                f"the store {store_root} is on a read-only file system ({lock_path}); memctl "
                "can read it but not change it: mount it read-write to change it") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ReadOnlyStore(
                f"the store {store_root} is read-only for you ({exc.strerror}: {lock_path}); "
                "memctl can read it but not change it: check the folder's permissions") from None
        if exc.errno == errno.ENOENT and retry_missing:
            # (Not "is the folder there now?": another command may have made it again since.)
            raise _FolderGone from None
        raise state_file_error(lock_path, exc) from None


class _FolderGone(Exception):
    """`.memctl/` was deleted between making it and opening the lock file in it."""


def _wait_for_flock(fd: int, deadline: float, timeout: float, info_path: Path) -> None:
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(
                    f"the store is locked by {_describe_holder(info_path)} for more than "
                    f"{timeout:.0f} s; wait for it to finish (or stop it) and try again"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def _is_file_at(fd: int, path: Path) -> bool:
    """Is the open file `fd` the one at `path` now (not deleted, not replaced)?"""
    try:
        on_disk = os.stat(path)
    except OSError:
        return False
    ours = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)


def _timeout_setting() -> float:
    return seconds_setting("MEMCTL_LOCK_TIMEOUT", DEFAULT_TIMEOUT)


def _make_state_dir(state_dir: Path) -> None:
    if not state_dir.parent.is_dir():
        raise MemctlError(f"the store {state_dir.parent} does not exist (was it moved or deleted?)")
    try:
        make_dirs(state_dir)
    except MemctlError:
        raise  # a one-line message naming the folder already
    except OSError as exc:
        raise MemctlError(f"cannot create {state_dir}: {exc.strerror or exc}; check the "
                          "permissions of the store folder") from None


def _note_previous_holder(info_path: Path) -> None:
    try:
        text = info_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    except (OSError, ValueError):  # ValueError: bytes that are not UTF-8 (a damaged file)
        text = ""
    try:
        info = json.loads(text)
    except ValueError:
        info = {}  # half-written by a holder killed while writing it: it died all the same
    if not isinstance(info, dict):
        info = {}
    if info.get("pid") == os.getpid():
        return  # our own, from an earlier acquisition whose cleanup failed
    pid = info.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and process_alive(pid):
        # Not a dead holder's record (its pid was reused, or a holder of a lock file deleted
        # under it still runs): treating it as one would remove a live writer's temp files
        # and git locks. A dead memctl's debris is then left to the age rule of gitops.
        return
    info["found"] = time.time()
    _write_info(info_path.with_name(CRASHED_FILE), info)


def _write_info(info_path: Path, info: dict[str, Any]) -> None:
    """Written whole or not at all, so a waiting process never reads half of it. Only the
    holder of the lock writes these files, so one temp name serves: the next holder writes
    over (and renames away) what a holder killed before its rename left, where a name per
    process stayed for ever (tests/test_crash.py checks that no temp file stays)."""
    tmp = info_path.with_name(f".{info_path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(info))
        os.replace(tmp, info_path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _describe_holder(info_path: Path) -> str:
    try:
        info = json.loads(info_path.read_text())
        return f"memctl {info.get('command') or ''} (pid {info.get('pid')})".replace("  ", " ")
    except (OSError, ValueError, AttributeError):
        return "another memctl process"
