"""The watcher's observer on Linux: every watched folder of the store in one inotify
descriptor, read by one thread.

watchdog's observer gives each scheduled folder (the store's top, each project folder) an
inotify descriptor and threads of its own, so the events of two folders reach the watcher in
no known order. A reader then had to ask the watcher with a cookie in every project folder,
and each event crossed three of watchdog's threads: on the 10k-note benchmark store (21
project folders), ~6 ms of the watcher's CPU per search, and ~4.5 ms of the search's time
(docs/watch.md, "Cookies"). One descriptor keeps its events in the order the kernel queued
them (memctl.disk.inotify), whatever folder they are in: a reader's one cookie at the store's
top, once the watcher has seen it, follows every change made before it (`ordered`).

Events are reported as the watcher reads watchdog's (memctl.watch.watcher._on_event): an
`Event` with `event_type` ("created", "modified", "closed", "deleted", "moved"),
`is_directory`, `src_path` and `dest_path`, to the `dispatch` of the watch's handler, in the
kernel's order, from the observer's thread. The two halves of a move are reported apart, in
order: the "from" half as a move with no destination, the "to" half as a creation (the pass
that follows looks at both paths in one go: memctl.watch.events.interpret). A folder made or
moved in under a recursive watch is watched, with its sub-folders, before its event is
reported (the pass that follows walks it, which covers what was written in it before); a
folder moved away is no longer watched (its watches would report its new place under its old
path). A scheduled folder itself moved or deleted is reported too (`Event.is_self`). A queue
overflow watches every scheduled tree again by its paths now (events of folders made or
renamed meanwhile were lost) and calls `on_overflow`, in order with the events.

MEMCTL_WATCH_BACKEND=watchdog makes the watcher use watchdog's observer here too, as it does
where there is no inotify (memctl.watch.watcher.new_observer).
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from typing import Any

from memctl.disk import inotify

# What the watcher asks of watchdog (memctl.watch.watcher): creations, writes, closes after a
# write, deletions and moves; never opens, reads, read-only closes or attribute changes.
EVENT_MASK = (inotify.IN_CREATE | inotify.IN_MODIFY | inotify.IN_CLOSE_WRITE | inotify.IN_DELETE
              | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO)
# Folders only, never through a link below the folder scheduled (that one may be a link to
# the store: `memctl --store LINK watch`).
WATCH_FLAGS = inotify.IN_ONLYDIR | inotify.IN_DONT_FOLLOW
# The folder scheduled itself moved or deleted: reported as an event of that folder (the
# watcher learns so that its store folder left, even if it is back by its next look).
SELF_MASK = inotify.IN_MOVE_SELF | inotify.IN_DELETE_SELF
# How long `join` waits for the thread (which lets go of the descriptors as it ends).
JOIN_WAIT = 1.0


class Event:
    """One file system event, as the watcher reads watchdog's."""

    __slots__ = ("event_type", "is_directory", "src_path", "dest_path", "is_self")

    def __init__(self, event_type: str, src_path: str, *, is_directory: bool,
                 dest_path: str = "", is_self: bool = False) -> None:
        self.event_type = event_type
        self.is_directory = is_directory
        self.src_path = src_path
        self.dest_path = dest_path
        # About a scheduled folder itself (moved or deleted), not a name in it.
        self.is_self = is_self

    def __repr__(self) -> str:
        dest = f" -> {self.dest_path}" if self.dest_path else ""
        kind = "folder" if self.is_directory else "file"
        return f"Event({self.event_type} {kind} {self.src_path}{dest})"


class Watch:
    """One scheduled folder (with its sub-folders when `recursive`) and its handler."""

    __slots__ = ("path", "recursive", "handler", "wds")

    def __init__(self, path: str, recursive: bool, handler: Any) -> None:
        self.path = path
        self.recursive = recursive
        self.handler = handler
        self.wds: set[int] = set()


class StoreObserver:
    """watchdog's observer, as the watcher uses it (`start`, `schedule`, `unschedule`,
    `stop`, `join`), on one inotify descriptor. Making one raises OSError (or AttributeError)
    where there is no inotify."""

    ordered = True  # one cookie at the store's top answers for every watched folder

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        self._inotify = inotify.Inotify()
        self._fd = self._inotify.init()
        try:
            self._wake, self._stop = os.pipe()
        except OSError:
            os.close(self._fd)
            raise
        self._on_overflow = on_overflow
        self._lock = threading.Lock()  # the folders, between the thread and `schedule`
        self._folders: dict[int, tuple[str, Watch]] = {}  # watch descriptor -> folder, watch
        self._watches: list[Watch] = []
        # A folder that came while watching could not be watched (a kernel limit): events
        # there are missed until `rebuild` succeeds, so the watcher answers no reader.
        self.incomplete = False
        self._thread = threading.Thread(target=self._run, name="memctl-watch-events",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def schedule(self, handler: Any, path: str, recursive: bool = False) -> Watch:
        """Watch `path` (and every folder under it when `recursive`) for `handler`, for the
        events the watcher asks for (EVENT_MASK). FileNotFoundError when it is not there;
        InotifyFailed (an OSError with its errno) when a kernel limit stops it."""
        watch = Watch(os.fspath(path), recursive, handler)
        with self._lock:
            try:
                self._watch_tree(watch, watch.path, strict=True)
            except OSError:
                self._let_go(set(watch.wds))
                raise
            self._watches.append(watch)
        return watch

    def unschedule(self, watch: Watch) -> None:
        with self._lock:
            self._let_go(set(watch.wds))
            if watch in self._watches:
                self._watches.remove(watch)

    def alive(self, watch: Watch) -> bool:
        """Whether `watch` still watches its folder (not deleted, moved away, or let go)."""
        with self._lock:
            return any(self._folders.get(wd, ("", None))[0] == watch.path for wd in watch.wds)

    def rebuild(self) -> bool:
        """Every scheduled folder watched again from its path, as it is now: after a queue
        overflow (folders made or renamed meanwhile were never seen) or a limit reached.
        Whether every folder is watched now (`incomplete` says the opposite)."""
        with self._lock:
            self._rebuild()
            return not self.incomplete

    def stop(self) -> None:
        with self._lock:  # (never a descriptor number the thread has closed, reused since)
            if self._stop < 0:
                return  # ended already
            try:
                os.write(self._stop, b"s")
            except OSError:
                pass  # told already: the pipe is full

    def join(self, timeout: float | None = JOIN_WAIT) -> None:
        """Wait up to `timeout` for the thread; it closes the descriptors as it ends (a
        thread never started: closed here)."""
        if self._thread.is_alive():
            self._thread.join(timeout)
        elif self._thread.ident is None:
            self._close()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    # --- inside -----------------------------------------------------------------------------

    def _close(self) -> None:
        with self._lock:
            for fd in (self._fd, self._wake, self._stop):
                if fd >= 0:
                    os.close(fd)  # the descriptor's watches go with it
            self._fd = self._wake = self._stop = -1
            self._folders.clear()

    def _watch_tree(self, watch: Watch, path: str, *, strict: bool,
                    seen: set[int] | None = None) -> None:
        """Watch `path`, and its sub-folders if `watch` is recursive, each before it is
        listed: a folder made meanwhile is either listed or reported. `strict` (the watcher
        asked): a limit raises, and so does `path` not being there. Else (a folder that came
        while watching, a rebuild) a limit leaves the rest unwatched and the observer
        `incomplete`: the watcher then answers no reader, and tries `rebuild` at each of its
        full passes (memctl.watch.watcher)."""
        pending = [path]
        while pending:
            here = pending.pop()
            # (the scheduled folder itself may be a link: `memctl --store LINK watch`)
            flags = SELF_MASK | inotify.IN_ONLYDIR if here == watch.path else WATCH_FLAGS
            mask = EVENT_MASK | flags
            try:
                wd = self._inotify.add_watch(self._fd, here, mask)
            except inotify.InotifyFailed as exc:
                if exc.errno in inotify.LIMITS:
                    if strict:
                        raise
                    self.incomplete = True
                    continue
                if strict and here == path:
                    raise
                # A folder this user may not read (another user's, mode 000): skipped, as
                # watchdog skips it; the walk cannot read it either, so no note is there.
                continue
            if wd < 0:
                if strict and here == path:
                    raise FileNotFoundError(2, "no such folder", path)
                continue  # gone again: its parent's watch reports it
            known = self._folders.get(wd)
            if known is not None:
                known[1].wds.discard(wd)  # the same folder under a new name: this one now
            self._folders[wd] = (here, watch)
            watch.wds.add(wd)
            if seen is not None:
                seen.add(wd)
            if not watch.recursive:
                continue
            try:
                with os.scandir(here) as entries:
                    pending.extend(entry.path for entry in entries if _is_folder(entry))
            except OSError:
                continue  # gone or not readable: its events say what became of it

    def _let_go(self, wds: set[int]) -> None:
        """Stop the watches `wds` (a set of the caller's own: each watch's set shrinks)."""
        for wd in wds:
            folder = self._folders.pop(wd, None)
            if folder is not None:
                folder[1].wds.discard(wd)
            if self._fd >= 0:
                self._inotify.rm_watch(self._fd, wd)

    def _let_go_below(self, path: str) -> None:
        """Stop watching `path` and every folder under it (moved away)."""
        below = path + os.sep
        self._let_go({wd for wd, (folder, _watch) in self._folders.items()
                      if folder == path or folder.startswith(below)})

    def _rebuild(self) -> None:
        """Watch every scheduled tree again by its paths now: a folder still watched keeps its
        watch (the kernel gives the same descriptor back, now under its path of today), so
        no event of it is lost meanwhile; the watches of folders no longer found are let go."""
        self.incomplete = False
        seen: set[int] = set()
        for watch in self._watches:
            self._watch_tree(watch, watch.path, strict=False, seen=seen)
        self._let_go(set(self._folders) - seen)

    def _run(self) -> None:
        try:
            self._listen()
        finally:
            # The thread lets go of the descriptors as it ends, also when `join` stopped
            # waiting for it (a slow pass at a restart): never while it may still read them.
            self._close()

    def _listen(self) -> None:
        # poll, not select: a descriptor numbered past 1023 (a long-running `memctl mcp`
        # holding many files) is beyond select's reach.
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake, select.POLLIN)
        while True:
            try:
                ready = dict(poller.poll())
            except OSError:
                return  # closed under it
            if self._wake in ready or ready.get(self._fd, 0) & (select.POLLNVAL | select.POLLERR):
                return
            with self._lock:
                try:
                    events = self._read()
                except OSError:
                    events = [(None, None)]  # what was lost is what an overflow loses
            for handler, event in events:
                try:
                    if event is None:
                        self._on_overflow()
                    else:
                        handler.dispatch(event)
                except Exception:  # noqa: BLE001 - an event not taken is an event lost:
                    self._on_overflow()  # the watcher's full pass covers it

    def _read(self) -> list[tuple[Any, Event | None]]:
        """The events queued now, in order, each with the handler it is for (None for an
        overflow); folders made or moved in are watched, those moved away let go, first."""
        events: list[tuple[Any, Event | None]] = []
        for wd, mask, _cookie, name in inotify.read_events(self._fd):
            if mask & inotify.IN_Q_OVERFLOW:
                # Events were lost: folders made or renamed meanwhile would stay unwatched,
                # or be reported under their old path. Every folder is watched again, as it is
                # now, before the watcher hears of the overflow (its full pass follows).
                self._rebuild()
                events.append((None, None))
                continue
            if mask & inotify.IN_IGNORED:  # the folder was deleted, or its watch let go
                folder = self._folders.pop(wd, None)
                if folder is not None:
                    folder[1].wds.discard(wd)
                continue
            known = self._folders.get(wd)
            if known is None:
                continue  # a watch let go
            folder, watch = known
            if not name:
                # The folder itself: only the scheduled one's move or deletion is reported
                # (a sub-folder's is reported by its parent's watch).
                if folder == watch.path and mask & SELF_MASK:
                    kind = "moved" if mask & inotify.IN_MOVE_SELF else "deleted"
                    events.append((watch.handler, Event(kind, folder, is_directory=True,
                                                        is_self=True)))
                continue
            path = os.path.join(folder, os.fsdecode(name))
            is_directory = bool(mask & inotify.IN_ISDIR)
            if mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO):
                if is_directory and watch.recursive:
                    self._watch_tree(watch, path, strict=False)
                kind = "created"
            elif mask & inotify.IN_MOVED_FROM:
                if is_directory:
                    self._let_go_below(path)
                kind = "moved"
            elif mask & inotify.IN_DELETE:
                kind = "deleted"
            elif mask & inotify.IN_MODIFY:
                kind = "modified"
            elif mask & inotify.IN_CLOSE_WRITE:
                kind = "closed"
            else:
                continue
            events.append((watch.handler, Event(kind, path, is_directory=is_directory)))
        return events


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
