"""The change probe of a long-running process (`memctl mcp`): has any file the index covers
changed since the last call? If not, the index that was fresh then is fresh now, and the call
skips the watcher's round trip (its cookies) altogether.

The probe is an inotify descriptor of its own (Linux), with a watch on the store folder and on
every folder the freshness walk reads (memctl.disk.filescan.scan: the project folders and
their sub-folders, never a name starting with `.`, so never `.git/`, `.memctl/`, a cookie or
`.tombstones/`). The kernel queues an inotify event inside the writer's own system call
(`write`, `rename`, `unlink`, `close`...), so once that call has returned, a read of the
descriptor finds the event. `check` reads the descriptor without blocking, until it is empty,
at the start of a call, before the call makes sure of its index in any other way; when that
way succeeds, `settle` arms the probe. The next `check` that finds nothing then proves that no
watched folder changed since the index was last made sure of (docs/watch.md, "Skipping the
round trip"). Events that come during a call stay queued for the next `check`.

Anything the probe cannot vouch for makes `check` say "changed", and the call takes the usual
way: an event on a name the walk reads, a new folder (watched at once, with its sub-folders,
before the call goes on), a folder moved or gone, the store folder moved, a queue overflow
(the probe starts over), an error, another index file at the index's path, or no inotify at all
(`start` gives None). Standard library only; `ctypes` is loaded by `start`.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
from pathlib import Path

from memctl.core.vocab import valid_project_name
from memctl.disk.inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_DONT_FOLLOW,
    IN_EXCL_UNLINK,
    IN_IGNORED,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    LIMITS,
    Inotify,
    InotifyFailed,
    read_events,
)
from memctl.disk.layout import path_identity

# Every event that can change what the walk reads (never an open, a read or a read-only close:
# the index's own reads never count), and the watched folder itself going or moving.
WATCH_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
              | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
# Folders only, never through a link (the walk follows none); no events of a file once it is
# unlinked (it is no longer in the folder the walk reads).
WATCH_FLAGS = IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
_SELF_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT
_MOVES = IN_MOVED_FROM | IN_MOVED_TO
_MD_SUFFIX = ".md"
# After a failure other than a kernel limit (the store folder away for a moment), the probe
# tries again after this long; a limit reached (watches, instances) ends it for good: its
# watches would compete with the watcher's own.
RETRY_AFTER = 30.0


class Ticket:
    """What one `check` found: `quiet` (nothing changed since the probe was armed, and the
    index file is the one it was armed with), the probe's epoch then, and the index file's
    identity (device, inode) then, or None."""

    __slots__ = ("quiet", "epoch", "identity")

    def __init__(self, quiet: bool, epoch: int, identity: tuple[int, int] | None) -> None:
        self.quiet = quiet
        self.epoch = epoch
        self.identity = identity

    def __repr__(self) -> str:
        return f"Ticket(quiet={self.quiet}, epoch={self.epoch})"


class ChangeProbe:
    """The probe of one store (see the module's text). Thread-safe; `close` ends it."""

    def __init__(self, root: str | os.PathLike[str], inotify: Inotify) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self._inotify = inotify
        self._lock = threading.Lock()
        self._fd = -1
        self._folders: dict[int, str] = {}  # watch descriptor -> folder ("" the store, "a/b")
        self._epoch = 0  # counts the checks that found a change
        self._armed: tuple[int, int] | None = None  # the index file vouched for
        self._pin: sqlite3.Connection | None = None  # keeps that file's inode from reuse
        self._retry_at = 0.0
        self.failure: OSError | None = None  # why it does not probe, when it does not
        self.gave_up = False

    @classmethod
    def start(cls, root: str | os.PathLike[str]) -> ChangeProbe | None:
        """A probe watching the store at `root`, or None where inotify is not to be had
        (not Linux). If its watches cannot all be set (a limit), it is returned all the same,
        saying "changed" to every check (`failure` says why)."""
        try:
            inotify = Inotify()
        except (OSError, AttributeError):
            return None
        probe = cls(root, inotify)
        with probe._lock:
            probe._open()
        return probe

    @property
    def watching(self) -> int:
        """How many folders it watches (0 when it does not probe)."""
        return len(self._folders) if self._fd >= 0 else 0

    # --- the two questions of a call --------------------------------------------------------

    def check(self, index_path: str | os.PathLike[str]) -> Ticket:
        """Read every event queued since the last check. Quiet when none of them matters, the
        probe was armed since (`settle`) and `index_path` is still the file it was armed
        with. Call it before the call makes sure of its index any other way."""
        with self._lock:
            try:
                changed = self._drain()
            except Exception as exc:  # noqa: BLE001 - events may be lost: never quiet again
                self._fail(exc if isinstance(exc, OSError) else OSError(str(exc)))
                changed = True  # until it watches everything anew
            if changed:
                self._epoch += 1
                self._disarm()
            identity = path_identity(index_path)
            quiet = self._armed is not None and identity == self._armed
            return Ticket(quiet, self._epoch, identity)

    def vouches(self, ticket: Ticket, index_path: str | os.PathLike[str]) -> bool:
        """Whether `ticket` was quiet and `index_path` is still the file it saw (the caller
        opened its index between the two: the connection holds that very file)."""
        return ticket.quiet and path_identity(index_path) == ticket.identity

    def settle(self, ticket: Ticket, index_path: str | os.PathLike[str]) -> None:
        """The call of `ticket` made sure of the index at `index_path` some other way (the
        watcher's answer, the walk): arm the probe, unless a check since found a change or
        the index file is no longer the one `ticket` saw."""
        with self._lock:
            if ticket.epoch != self._epoch or self._fd < 0 or ticket.identity is None:
                return
            if ticket.identity == self._armed:
                return
            pin = _pin(index_path)  # opened first: the file it holds cannot be replaced by
            if pin is None or path_identity(index_path) != ticket.identity:  # one of its inode
                if pin is not None:
                    pin.close()
                return
            self._disarm()
            self._pin, self._armed = pin, ticket.identity

    def close(self) -> None:
        with self._lock:
            self._disarm()
            self._close_fd()
            self.gave_up = True

    # --- inside -----------------------------------------------------------------------------

    def _disarm(self) -> None:
        self._armed = None
        if self._pin is not None:
            self._pin.close()
            self._pin = None

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # its watches go with it
        self._fd = -1
        self._folders = {}

    def _fail(self, exc: OSError) -> None:
        self._close_fd()
        self.failure = exc
        if exc.errno in LIMITS:
            self.gave_up = True
        self._retry_at = time.monotonic() + RETRY_AFTER

    def _open(self) -> None:
        """A new descriptor watching the store folder and every folder the walk reads."""
        self._close_fd()
        try:
            self._fd = self._inotify.init()
            wd = self._inotify.add_watch(self._fd, self.root, WATCH_MASK | WATCH_FLAGS)
            if wd < 0:
                raise InotifyFailed(errno.ENOENT, "the store folder is gone", self.root)
            self._folders[wd] = ""
            with os.scandir(self.root) as entries:
                tops = [entry.name for entry in entries
                        if valid_project_name(entry.name) and _is_folder(entry)]
            for name in tops:
                self._watch_tree(name)
            self.failure = None
        except OSError as exc:
            self._fail(exc)

    def _watch_tree(self, folder: str) -> None:
        """Watch `folder` (store-relative) and every folder under it the walk reads. Each is
        watched before it is listed: a sub-folder made meanwhile is either listed or seen."""
        pending = [folder]
        while pending:
            here = pending.pop()
            path = os.path.join(self.root, here)
            wd = self._inotify.add_watch(self._fd, path, WATCH_MASK | WATCH_FLAGS)
            if wd < 0:
                continue  # gone again: its parent's watch has said so
            self._folders[wd] = here
            try:
                with os.scandir(path) as entries:
                    pending.extend(f"{here}/{entry.name}" for entry in entries
                                   if entry.name[0] != "." and _is_folder(entry))
            except (FileNotFoundError, NotADirectoryError):
                continue

    def _drain(self) -> bool:
        """Read the queue empty; True when an event matters (see `_matters`). New folders are
        watched, and the probe starts over after an overflow or a folder moved (the paths it
        knows would be wrong), before this returns."""
        if self._fd < 0:
            if not self.gave_up and time.monotonic() >= self._retry_at:
                self._open()
            return True
        changed = start_over = False
        new_folders: list[str] = []
        for wd, mask, _cookie, name in read_events(self._fd):
            if mask & IN_Q_OVERFLOW:
                changed = start_over = True
                continue
            folder = self._folders.get(wd)
            if mask & IN_IGNORED:  # the watch is gone (its folder was deleted)
                self._folders.pop(wd, None)
                changed = True
                continue
            if folder is None:
                changed = True  # an event of a watch it no longer knows
                continue
            if not name:  # about the watched folder itself
                changed = True
                if mask & _SELF_GONE:
                    start_over = start_over or folder == "" or bool(mask & IN_MOVE_SELF)
                continue
            text = os.fsdecode(name)
            is_folder = bool(mask & IN_ISDIR)
            if not _matters(folder, text, is_folder):
                continue
            changed = True
            if is_folder and mask & _MOVES:
                start_over = True
            elif is_folder and mask & IN_CREATE:
                new_folders.append(f"{folder}/{text}" if folder else text)
        if start_over:
            self._open()
        else:
            for folder in new_folders:
                self._watch_tree(folder)
        return changed


def _matters(folder: str, name: str, is_folder: bool) -> bool:
    """Whether an event on `name` in the watched `folder` can change what the walk reads
    (memctl.disk.filescan.scan): in the store folder, only a project's folder; below it, no
    name starting with `.` (cookies, editor swap files, `.git`), folders and `*.md` files."""
    if not folder:
        return is_folder and valid_project_name(name)
    if name[0] == ".":
        return False
    return is_folder or name[-3:].lower() == _MD_SUFFIX


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _pin(path: str | os.PathLike[str]) -> sqlite3.Connection | None:
    """A connection that holds the index file open, read-only and never used: while it is
    open the file's inode cannot be given to a new file, so the same (device, inode) at the
    path later is the same file. (A plain descriptor would not do: closing it would drop the
    locks SQLite holds on the file in this process.)"""
    try:
        return sqlite3.connect(f"{Path(os.path.abspath(path)).as_uri()}?mode=ro", uri=True,
                               check_same_thread=False)
    except (sqlite3.Error, ValueError):
        return None

