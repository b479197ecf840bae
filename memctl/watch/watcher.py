"""`memctl watch`: keep the index in step with the files while people and git change them.

Watched: the store root (not recursively: project folders appearing and going) and each project
folder, recursively; never `.git` nor `.memctl/`. Only events that can change a file are asked
for, so the indexer's own reads never wake the watcher. A `Coalescer` turns a burst (a save is
~17 events, a checkout thousands) into one pass of `Index.refresh` over the paths named, which
re-reads only what changed. A periodic full pass is the safety net for lost events. The watcher
never writes to a note. See docs/watch.md.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctl.core.errors import MemctlError, sqlite_damaged
from memctl.core.vocab import valid_project_name
from memctl.disk import gitops
from memctl.disk.inotify import IN_DELETE_SELF, Inotify, InotifyFailed
from memctl.disk.journal import recover_pending
from memctl.disk.layout import StoreGoneError, classify, path_identity, state_path
from memctl.disk.locking import LockTimeout, store_lock
from memctl.disk.settings import SETTINGS_FILE
from memctl.disk.watchstate import (
    BEAT_INTERVAL,
    COOKIE_PREFIX,
    COOKIE_STALE_AFTER,
    FAILING,
    ORDERED,
    Heartbeat,
    WatcherRunning,
    WatchLock,
    failure_reason,
    is_cookie,
    read_status,
)
from memctl.index.db import (
    INDEXED_KINDS,
    IndexReplacedError,
    NewerIndexError,
    open_index,
    remove_index_files,
)
from memctl.watch.events import (
    MAX_DELAY,
    PAIR_WAIT,
    QUIET,
    Batch,
    Coalescer,
    interpret,
    relative,
)
from memctl.watch.observer import StoreObserver

# `Watcher._root_said` while another watcher holds the store this one let go when it was
# away (`_store_moved`).
TAKEN = "taken"
# The safety net: a full (stat-only for unchanged files) pass this often.
FULL_CHECK_EVERY = 60.0
# With --commit, at most one commit this often.
COMMIT_EVERY = 5.0

SYSCTL_HINT = (
    "raise it with `sudo sysctl fs.inotify.max_user_watches=524288` (add "
    "`fs.inotify.max_user_watches=524288` to /etc/sysctl.d/90-inotify.conf to keep it)"
)


def inotify_limit_error(exc: OSError, folders: int) -> str | None:
    """A clear message for the kernel's inotify limits, or None for another error."""
    if exc.errno == errno.ENOSPC:
        return (f"the inotify watch limit (fs.inotify.max_user_watches) is reached: the store "
                f"needs about {folders} watches (one per folder) besides what other programs "
                f"use; {SYSCTL_HINT}")
    if exc.errno == errno.EMFILE:
        return ("the inotify instance limit (fs.inotify.max_user_instances) is reached: too many "
                "programs watch files; close some, or raise it with "
                "`sudo sysctl fs.inotify.max_user_instances=1024`")
    return None


def probe_inotify(folder: str) -> OSError | None:
    """Try to add one more inotify watch (then drop it). watchdog silently skips sub-folders it
    cannot watch once the limit is reached; if one more watch fails here, some of ours may be
    missing. Returns the error, or None when a watch could be added (or no probe is possible)."""
    try:
        probe = Inotify()
        fd = probe.init()
    except (OSError, AttributeError):
        return None  # no inotify, or out of instances: says nothing about our own watches
    try:
        # IN_DELETE_SELF: any mask does for a probe; the watch goes with the fd.
        probe.add_watch(fd, folder, IN_DELETE_SELF)
    except InotifyFailed as exc:
        if exc.errno == errno.ENOSPC:
            return OSError(exc.errno, os.strerror(exc.errno))
    finally:
        os.close(fd)
    return None


class StoreAway(MemctlError):
    """The folder a watcher keeps (`keep_folder`) is not at the store's path: "gone" (nothing
    there) or "other" (another folder there). Raised when the watcher would start on it; the
    running watcher says it and waits (`Watcher._store_moved`)."""

    def __init__(self, state: str, root: str) -> None:
        self.state = state
        super().__init__(
            f"the store folder {root} is gone; waiting for it to return" if state == "gone"
            else f"another folder is at {root}, not the store; leaving it untouched, waiting "
                 f"for the store to return")


@dataclass
class BatchReport:
    """What one pass did, for the log line and `--json`. Counts are index entries (a note is
    one, a MEMORY.md one per section)."""

    added: int
    updated: int
    removed: int
    unchanged: int  # files looked at that had not changed
    errors: list[str]  # "path:line: message" of files that do not parse (they keep their entry)
    elapsed_ms: float
    paths: int  # files and folders the pass was asked about (0: a full pass)
    events: int  # file system events behind it (0: a periodic check)
    full: bool

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def as_json(self) -> dict[str, object]:
        return {"event": "batch", "added": self.added, "updated": self.updated,
                "removed": self.removed, "unchanged": self.unchanged, "errors": self.errors,
                "elapsed_ms": round(self.elapsed_ms, 1), "paths": self.paths,
                "events": self.events, "full": self.full}


def new_observer(on_overflow: Callable[[], None] = lambda: None) -> Any:
    """The observer for this platform, not started: on Linux memctl's own, every watched
    folder in one inotify descriptor (memctl.watch.observer: its events come in one order,
    so one cookie answers for the whole store); elsewhere, or with
    MEMCTL_WATCH_BACKEND=watchdog, watchdog's (its modules imported then: a command that
    never watches does not pay for them). `on_overflow`: events were lost (memctl's
    observer calls it; watchdog's only logs it, which `_start_observer` hears)."""
    if os.environ.get("MEMCTL_WATCH_BACKEND") != "watchdog":
        try:
            return StoreObserver(on_overflow)
        except (OSError, AttributeError):
            pass  # no inotify here (not Linux): watchdog's
    import watchdog.events  # noqa: F401 - the handlers' module, imported with the observer

    try:
        from watchdog.observers.inotify import InotifyObserver

        # Full events: a move whose other half is outside one watch keeps its empty half,
        # so a move in from another project can be told from a plain create.
        return InotifyObserver(generate_full_events=True)
    except ImportError:  # not Linux
        from watchdog.observers import Observer

        return Observer()


def import_all() -> None:
    """Import what a watcher loads only once it runs (watchdog's observer, the indexer and
    its parser): the check a watcher makes of new code before it starts again on it
    (memctl.cli.codechange) must meet a broken module before the `exec`, not after."""
    import watchdog.events  # noqa: F401 - the observer where memctl's own has no inotify
    import watchdog.observers  # noqa: F401

    import memctl.index.docs  # noqa: F401 - the parser (yaml) and the note model
    import memctl.index.nearwords  # noqa: F401
    import memctl.index.workers  # noqa: F401


def _watchdog_filter() -> list[Any]:
    """The events asked of watchdog's observer: never opens or read-only closes (the indexer
    reading), nor attribute changes (memctl.watch.observer.EVENT_MASK, for memctl's own)."""
    from watchdog import events as ev

    return [ev.FileCreatedEvent, ev.FileModifiedEvent, ev.FileClosedEvent,
            ev.FileDeletedEvent, ev.FileMovedEvent, ev.DirCreatedEvent, ev.DirDeletedEvent,
            ev.DirMovedEvent]


class Watcher:
    """The running watcher of one store. `run()` blocks until `stop()` or a KeyboardInterrupt
    (the CLI raises one on SIGTERM too), and always cleans up: watches, heartbeat, lock."""

    def __init__(self, root: str | os.PathLike[str], *, commit: bool = False,
                 on_batch: Callable[[BatchReport], None] | None = None,
                 on_message: Callable[[str], None] | None = None,
                 on_commit: Callable[[str, int], None] | None = None,
                 on_answer: Callable[[], None] | None = None,
                 on_live: Callable[[bool], None] | None = None,
                 quiet: float = QUIET, max_delay: float = MAX_DELAY,
                 full_check_every: float = FULL_CHECK_EVERY,
                 commit_every: float = COMMIT_EVERY,
                 keep_folder: tuple[int, int] | None = None) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.commit = commit
        # Another folder at the store's path (`mv store store.old; mkdir store`): start over
        # on it (None), or leave it untouched and wait for the store to return: `memctl mcp`
        # serves only the folder it opened, this (device, inode), and its watcher never
        # starts on another one either, even when the switch happened before its start
        # (docs/agents.md).
        self.keep_folder = keep_folder
        self.on_batch = on_batch or (lambda report: None)
        self.on_message = on_message or (lambda text: None)
        self.on_commit = on_commit or (lambda sha, files: None)
        # Called once readers' cookies are answered: a reader in this process waits on it
        # (memctl.disk.watchstate.answer_in_process) instead of polling the files.
        self.on_answer = on_answer or (lambda: None)
        # Told True once the watcher is ready (its first pass done) and False when it stops
        # or starts over: `memctl watch` answers searches only meanwhile (cli/searchserver.py).
        self.on_live = on_live or (lambda live: None)
        self.full_check_every = full_check_every
        self.commit_every = commit_every
        self._cond = threading.Condition()
        self._coalescer = Coalescer(quiet, max_delay)
        self._stopping = False
        # Stopped to start again on new code (memctl.cli.codechange): the lock is kept, for
        # the process after the `exec` (`handed_lock`), and the heartbeat says "starting".
        self._hand_over = False
        self.handed_lock: Any = None
        # Asked to hand over (`stop(hand_over=True)`) while the store was let go: done once
        # it is watched again, since there is no lock to hand over until then (`run`).
        self._hand_over_wanted = False
        self._hand_over_said = False
        # The index is of a newer memctl: nothing is written to it, and no reader is answered,
        # until it is this version's again (the message said, while paused).
        self._paused: str | None = None
        # `on_ready` of `run`: called once the watcher is live the first time (after its first
        # pass, or once a paused start resumes).
        self._on_ready: Callable[[], None] | None = None
        self._observer: Any = None
        self._ordered = False  # the observer's events come in one order (`_start_observer`)
        self._root_left = False  # the store folder itself moved or went (`_on_event`)
        self._handler: Any = None
        self._log_handler: logging.Handler | None = None
        self._watches: dict[str, Any] = {}  # "" (the root) or a project folder name → watch
        self._index: Any = None
        self._index_size = 0  # of the index file after the last pass (`_index_cut`)
        self._lock: Any = None
        self._heartbeat: Any = None
        self._root_id: tuple[int, int] | None = None
        # The store folder's (mtime, ctime) at the last look: a ctime that moved without the
        # mtime is the folder itself renamed (or its mode changed), not a name made or
        # removed in it: moved away and back between two looks (`_store_moved`).
        self._root_times: tuple[int, int] | None = None
        # What was last said of a store folder that is not there to watch ("gone", "other"):
        # each state said once, and a change of state said again (gone, then an empty folder
        # put in its place, said nothing of the folder: tests/test_mcp.py).
        self._root_said: str | None = None
        self._limit_said = False
        self._failing = False
        # Why the last pass could not write the index (None once one could): the start's
        # first pass gives up with it (`_first_pass_failed`).
        self._failure: BaseException | None = None
        # During the start's first pass: a failure is not said as a warning ("retrying"),
        # as the watcher stops on it instead.
        self._first_pass = False
        self._index_id: tuple[int, int] | None = None
        self._full_every = full_check_every
        self._dirty = False  # memory files changed since the last commit (with --commit)
        # Readers' cookies seen, not yet answered (store-relative paths; docs/watch.md).
        self._cookies: set[str] = set()
        self._last_commit = 0.0

    @staticmethod
    def is_memory(relpath: str) -> bool:
        kind = classify(relpath)
        return kind is not None and kind[0] in INDEXED_KINDS

    @staticmethod
    def is_watched_top(name: str) -> bool:
        return valid_project_name(name)  # never .git, .memctl, .tombstones, ...

    # --- events (watchdog's threads) --------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        src = relative(self.root, event.src_path) if event.src_path else None
        dest = relative(self.root, getattr(event, "dest_path", "") or "") or None
        if getattr(event, "is_self", False):
            # A watched folder itself moved or deleted (memctl's observer): the store folder's
            # means gone, or away and perhaps back before the next look with folders made
            # meanwhile unwatched, so `_store_moved` starts over before any reader is
            # answered. A project folder's is told by the store folder's watch too.
            if event.src_path == self.root:
                with self._cond:
                    self._root_left = True
                    self._cond.notify()
            return
        if src is not None and is_cookie(src.rpartition("/")[2]) and not event.is_directory:
            # In a project folder; at the store's top when the events come in one order
            # (a reader asks there alone then: memctl.index.db._ask_watcher).
            if event.event_type == "created" \
                    and (src.count("/") == 1 or (self._ordered and "/" not in src)):
                with self._cond:
                    self._cookies.add(src)
                    self._cond.notify()
            return  # a cookie's other events (closed, deleted: our own answer) mean nothing
        with self._cond:
            interpret(event.event_type, event.is_directory, src, dest, self.is_memory,
                      self.is_watched_top, self._coalescer, time.monotonic(),
                      pair_wait=0.0 if self._ordered else PAIR_WAIT)
            self._cond.notify()

    def _on_overflow(self) -> None:
        with self._cond:
            self._coalescer.add_full(time.monotonic())
            self._cond.notify()

    # --- setting up -------------------------------------------------------------------------

    def _start(self, *, announce: bool = False, first: bool = False) -> None:
        """Watch the store at its path, from a full pass. `first`: the watcher's own start
        (not a start over on a store back in its place): a first pass that cannot write the
        index ends it (`_first_pass_failed`)."""
        self._check_kept_folder()  # before anything is written into another folder
        try:
            info = os.stat(self.root)
        except OSError:
            raise MemctlError(f"store {self.root} does not exist") from None
        self._root_id = (info.st_dev, info.st_ino)
        self._root_times = (info.st_mtime_ns, info.st_ctime_ns)
        lock = WatchLock(self.root)
        lock.acquire()  # WatcherRunning (exit 1) when another watcher has this store
        self._lock = lock  # (only once held: `_teardown` releases or hands over this one)
        if self._lock.handed_over and self.commit:
            # Started again on new code: what the process before could not commit (a command
            # held the store lock then) is committed at the first look (it asks git).
            self._dirty = True
        self._heartbeat = Heartbeat(self.root)
        self._heartbeat.beat("starting")
        self._paused = None
        try:
            self._open_index()
        except NewerIndexError as exc:  # starts paused (an older memctl, docs/watch.md)
            self._index = None
            self._pause(str(exc))
        self._start_observer()
        # The first full pass runs once the watches are in place: a change made during it
        # arrives as an event and is reconciled right after.
        if self._paused is None:
            self._first_pass = first
            try:
                if not self._apply(Batch(full=True), announce=announce) and first:
                    self._first_pass_failed(announce)
            finally:
                self._first_pass = False
        self._sweep_cookies()
        try:
            # Cookies are never committed, nor shown by `git status` (docs/watch.md).
            gitops.exclude_locally(self.root, f"{COOKIE_PREFIX}*")
        except (OSError, MemctlError):
            pass  # no repository, or a read-only one: nothing to keep them out of
        self._heartbeat.extra["watches"] = len(self._watches)
        self._check_kept_folder()  # moved away meanwhile: never live on what is there now
        if self._paused is None:
            self._heartbeat.beat("ready")
            self.on_live(True)

    def _first_pass_failed(self, announce: bool) -> None:
        """The first pass could not write the index. A damaged index was removed and made
        anew by that failure (`_apply`): one more pass then fills it. A second failure (a disk
        that refuses, an index held busy) ends the watcher with one error: it never was live,
        and saying `watching …` while it kept nothing fresh, as it did, told a person or a
        service the opposite of `memctl watch --status` (docs/watch.md, "Errors")."""
        if self._failure is None:
            return  # the store went meanwhile, or a newer memctl's index: as before
        self._failure = None
        if self._apply(Batch(full=True), announce=announce) or self._failure is None:
            return
        exc = self._failure
        reason = failure_reason(exc)
        busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF in (5, 6)  # SQLITE_BUSY, _LOCKED
        then = ("once the program that holds the index is done" if busy else
                f"once the disk has room and {os.path.join(self.root, '.memctl')} can be "
                f"written")
        raise MemctlError(f"the watcher's first pass could not update the index ({reason}), "
                          f"so it stops without watching; {then}, run `memctl watch` again"
                          ) from exc

    def _check_kept_folder(self) -> None:
        """StoreAway unless the folder at the path is the one this watcher keeps (when it
        keeps one: `keep_folder`)."""
        if self.keep_folder is None:
            return
        folder = path_identity(self.root)
        if folder != self.keep_folder:
            raise StoreAway("gone" if folder is None else "other", self.root)

    def _open_index(self) -> None:
        self._index = open_index(self.root)
        self._index_id = path_identity(self._index.path)
        self._index_size = self._size_of_index()

    def _size_of_index(self) -> int:
        try:
            return os.stat(self._index.path).st_size
        except OSError:
            return 0  # gone: the pass finds out (IndexReplacedError), as before

    def _index_cut(self) -> bool:
        """Whether the index file this watcher has open is shorter than after the last pass:
        cut in place by another program (`truncate`), as no memctl shrinks it. Its pages are
        mapped (memctl.index.db): reading one past the new end killed the watcher with
        SIGBUS, which Python cannot catch, so it reopens the index before it reads anything
        (tests/test_watch.py). Another file at the path (a command made the index anew) is
        no cut: the pass finds it replaced and says so."""
        try:
            info = os.stat(self._index.path)
        except OSError:
            return False  # gone: the pass finds out (IndexReplacedError), as before
        return (info.st_dev, info.st_ino) == self._index_id and info.st_size < self._index_size

    def _remove_damaged_index(self) -> None:
        """The index file this watcher had open, cut short or found corrupt: it is derived, so
        it is removed and the reopening makes it anew for the full pass to fill (reopened
        as it was, a file cut short by another program failed every pass, and every search,
        for ever: tests/test_watch.py). Not a file another memctl has put in its place."""
        try:
            if path_identity(self._index.path) == self._index_id:
                remove_index_files(self._index.path)
        except (OSError, MemctlError):
            pass  # (then reopened as it is: the next pass tries again)

    def _start_observer(self) -> None:
        watcher = self
        self._root_left = False
        observer = new_observer(self._on_overflow)
        self._ordered = bool(getattr(observer, "ordered", False))
        if self._ordered:
            class Handler:
                def dispatch(self, event: Any) -> None:
                    watcher._on_event(event)
        else:
            from watchdog.events import FileSystemEventHandler

            class Handler(FileSystemEventHandler):  # type: ignore[no-redef]
                def dispatch(self, event: Any) -> None:
                    watcher._on_event(event)

            class OverflowLog(logging.Handler):
                def emit(self, record: logging.LogRecord) -> None:
                    if "overflow" in record.getMessage().lower():
                        watcher._on_overflow()

            # watchdog only logs a kernel queue overflow; hearing it triggers a full pass.
            # Its other log lines (a race at shutdown) are not for the person at the terminal.
            logging.getLogger("watchdog").addHandler(logging.NullHandler())
            self._log_handler = OverflowLog(logging.WARNING)
            logging.getLogger("watchdog.observers.inotify_c").addHandler(self._log_handler)
        self._handler = Handler()
        self._observer = observer
        observer.start()
        self._watch("", recursive=False)
        for name in self._tops_on_disk():
            self._watch(name, recursive=True)
        self._check_limit()
        if self._heartbeat is not None:
            # One cookie at the store's top answers for every folder (memctl.watch.observer),
            # once the top is watched: readers learn it from the heartbeat
            # (memctl.index.db._ask_watcher).
            if self._ordered and "" in self._watches:
                self._heartbeat.extra["events"] = ORDERED
            else:
                self._heartbeat.extra.pop("events", None)

    def _watch(self, name: str, *, recursive: bool) -> None:
        path = os.path.join(self.root, name) if name else self.root
        try:
            if self._ordered:
                watch = self._observer.schedule(self._handler, path, recursive=recursive)
            else:
                watch = self._observer.schedule(self._handler, path, recursive=recursive,
                                                event_filter=_watchdog_filter())
            self._watches[name] = watch
        except FileNotFoundError:
            pass  # gone again already; the pass that follows sees that
        except OSError as exc:
            message = inotify_limit_error(exc, self._count_folders())
            if message:
                raise MemctlError(message) from None
            raise

    def _mend_watches(self, gone_tops: set[str], new_tops: set[str]) -> None:
        """Before a full pass: the project folders on disk without a live watch go to
        `new_tops`, the watched ones no longer on disk to `gone_tops` (events lost in an
        overflow, or missed when a limit was reached); memctl's observer watches every
        folder again by its path (`rebuild`) if a limit left some unwatched."""
        observer = self._observer
        if observer is None:
            return
        if getattr(observer, "incomplete", False):
            observer.rebuild()
        listed = self._list_tops()
        if listed is None:
            return  # not listed this time (too many open files...): nothing is taken as gone
        on_disk = set(listed)
        alive = getattr(observer, "alive", None)
        for name, watch in list(self._watches.items()):
            if name and name not in on_disk:
                gone_tops.add(name)
            elif name and alive is not None and not alive(watch):
                new_tops.add(name)
        new_tops.update(on_disk - set(self._watches))

    def _unwatch(self, name: str) -> None:
        watch = self._watches.pop(name, None)
        if watch is not None:
            try:
                self._observer.unschedule(watch)
            except (KeyError, RuntimeError):
                pass

    def _tops_on_disk(self) -> list[str]:
        return self._list_tops() or []

    def _list_tops(self) -> list[str] | None:
        """The project folders at the store's top, or None when it cannot be listed now."""
        try:
            return sorted(e.name for e in os.scandir(self.root)
                          if e.is_dir(follow_symlinks=False) and self.is_watched_top(e.name))
        except OSError:
            return None

    def _count_folders(self) -> int:
        return 1 + sum(1 for name in self._tops_on_disk()
                       for _ in os.walk(os.path.join(self.root, name)))

    def _check_limit(self, *, fatal: bool = True) -> None:
        """At start, a reached limit means watches are missing: an error. Later it may be
        another program's doing and only folders made since are at risk: a warning, and the
        full pass runs every few seconds until the limit is lifted."""
        error = probe_inotify(self.root)
        message = inotify_limit_error(error, self._count_folders()) if error else None
        if message and fatal:
            raise MemctlError(message)
        if message and not self._limit_said:
            self.on_message(f"warning: {message}; new folders may be missed until then")
        self._limit_said = bool(message)
        self._full_every = min(self.full_check_every, 5.0) if message else self.full_check_every

    # --- the loop ---------------------------------------------------------------------------

    def run(self, on_ready: Callable[[], None] | None = None) -> None:
        try:
            self._on_ready = on_ready
            self._start(first=True)
            if self._paused is None:
                self._ready()
            now = time.monotonic()
            next_tick, next_beat = now + 0.5, now + BEAT_INTERVAL
            next_full = now + self._full_every
            while True:
                batch, hold, cookies = None, False, set()
                with self._cond:
                    if self._hand_over_wanted and not self._stopping \
                            and self._lock is not None and self._root_said is None:
                        self._stopping = self._hand_over = True
                    if self._stopping:
                        return
                    due = self._coalescer.due_at()
                    now = time.monotonic()
                    wake = next_tick if due is None else min(next_tick, due)
                    if self._cookies:
                        wake = now
                    if wake > now:
                        self._cond.wait(wake - now)
                        now = time.monotonic()
                    if self._cookies:
                        # A reader waits: apply what came before its cookie now, without the
                        # quiet window (and without waiting for git: a pass per cookie).
                        batch = self._coalescer.take_now(now)
                        cookies, self._cookies = self._cookies, set()
                    else:
                        due = self._coalescer.due_at()
                        if due is not None and now >= due:
                            hold = self._git_busy()
                            batch = self._coalescer.take(now, hold=hold)
                if (batch or cookies) and (self._root_said is not None or self._root_left):
                    # Back since the last tick? Then started over (a full pass) before this
                    # batch, and a reader waiting on it is answered now, not after the tick.
                    self._store_moved()
                applied = self._apply(batch) if batch else True
                if cookies and applied:
                    self._answer(cookies)
                if not batch and hold:
                    time.sleep(0.05)  # git holds its index lock: look again shortly
                if now < next_tick:
                    continue
                next_tick = now + 0.5
                if self._store_moved():
                    continue
                if now >= next_full:
                    next_full = now + self._full_every
                    self._apply(Batch(full=True))
                    self._sweep_cookies()
                if now >= next_beat:
                    next_beat = now + BEAT_INTERVAL
                    self._beat()
                    # A limit reached makes the full pass come every 5 s (`_check_limit`):
                    # from now, not after the minute already begun.
                    next_full = min(next_full, now + self._full_every)
                if self.commit:
                    self._maybe_commit(now)
        finally:
            self.close()

    def stop(self, *, hand_over: bool = False) -> None:
        """Stop the loop (from any thread); `hand_over`: keep the lock for the process this
        one is about to become (`handed_lock`). A watcher that has let the store go (away,
        or another watcher has it) holds no lock: it stops to hand over once it watches the
        store again, and meanwhile goes on waiting; a plain stop ends it at once."""
        with self._cond:
            if hand_over:
                self._hand_over_wanted = True
            else:
                self._stopping = True
            self._cond.notify()

    @property
    def away(self) -> bool:
        """Whether the store is away from its path (gone, or another folder there): read from
        other threads (memctl.cli.codechange waits for the store before it checks new code)."""
        return self._root_said in ("gone", "other")

    @property
    def handing_over(self) -> bool:
        """Whether the loop has stopped (or is stopping) to hand its lock over."""
        return self._hand_over

    def _git_busy(self) -> bool:
        # A lock older than git ever holds one is a dead git's: waiting on it for ever left
        # `watch --commit` committing nothing; the commit removes it (tests/test_interrupted_git.py).
        return gitops.git_lock_is_fresh(self.root)

    def _apply(self, batch: Batch, *, announce: bool = True) -> bool:
        """One pass over the batch; False when the index could not be written."""
        if self._root_said is not None:
            # The store is away (or watched by another): the full pass when it is watched
            # again covers this batch; `--commit` asks git then (another command may have
            # indexed these edits meanwhile).
            self._dirty = self._dirty or bool(batch.paths)
            return False
        gone_tops, new_tops = set(batch.gone_tops), set(batch.new_tops)
        if batch.full:
            self._mend_watches(gone_tops, new_tops)
        for name in sorted(gone_tops):
            self._unwatch(name)
        early: set[str] = set()
        for name in sorted(new_tops):
            if os.path.isdir(os.path.join(self.root, name)):
                # Watched afresh even when a watch of that name is there: the folder may have
                # gone and come back (removed and made again, moved away and back) in one
                # batch, its old watch gone with the old folder.
                self._unwatch(name)
                self._watch(name, recursive=True)
                self._check_limit(fatal=False)
                # Cookies dropped before the folder was watched sent no event to us; the
                # pass below, which walks the folder, covers what was written before them.
                early.update(self._cookies_in(name))
        if not batch.paths and not batch.full:
            return True
        if self._paused is not None and not self._resume():
            if batch.paths:
                self._dirty = True  # hand edits are still committed (`--commit` asks git)
            return False
        # New folders are named in `paths` too: refresh walks them, which also catches files
        # written before their watch was in place.
        cut = False
        try:
            if self._index_cut():
                cut = True
                raise sqlite3.DatabaseError(f"{self._index.path} was cut short by another "
                                            f"program")
            stats = self._index.refresh(None if batch.full else sorted(batch.paths))
        except NewerIndexError as exc:
            self._pause(str(exc))
            self._dirty = self._dirty or bool(batch.paths)  # (as for a batch while paused)
            return False
        except StoreGoneError:
            # Moved, deleted or replaced since the last tick: the next one says so and waits
            # (`_store_moved`); this batch is then covered by a full pass.
            self._dirty = self._dirty or bool(batch.paths)
            with self._cond:
                self._coalescer.add_full(time.monotonic(), wait=0.5)
            return False
        except (sqlite3.Error, IndexReplacedError) as exc:
            # Busy for long, or broken, or made anew by another memctl: say so once, start
            # on a fresh connection (open_index rebuilds a corrupt index) and try a full pass
            # again shortly.
            self._failure = exc
            if not self._failing and not self._first_pass:
                self.on_message(f"warning: could not update the index ({exc}); retrying")
            self._set_failing(exc)
            self._index.close()
            if cut or sqlite_damaged(exc):
                self._remove_damaged_index()
            try:
                self._open_index()
            except NewerIndexError as newer:
                self._pause(str(newer))
                return False
            except (MemctlError, sqlite3.Error, OSError):
                # Busy for long, or the machine refuses (a full disk: SQLite cannot make the
                # index's WAL or shared memory): the full pass below tries again on a fresh
                # connection. (A refusal here ended the watcher.)
                pass
            with self._cond:
                self._coalescer.add_full(time.monotonic(), wait=2.0)
            return False
        self._set_failing(None)
        self._failure = None
        self._index_size = self._size_of_index()
        if early:
            self._answer(early)
        report = BatchReport(
            added=len(stats.added), updated=len(stats.updated), removed=len(stats.removed),
            unchanged=stats.unchanged, errors=[f"{p}:{line}: {msg}" for p, line, msg in stats.errors],
            elapsed_ms=stats.elapsed_ms, paths=0 if batch.full else len(batch.paths),
            events=batch.events, full=batch.full)
        if stats.changed or batch.paths:
            # Saves seen, even when another process indexed them first (a command that
            # walked): `_maybe_commit` asks git what is left to commit.
            self._dirty = True
        if announce and (batch.events or report.changed or report.errors):
            self.on_batch(report)  # a periodic check that found nothing is not worth a line
        return True

    def _ready(self) -> None:
        on_ready, self._on_ready = self._on_ready, None
        if on_ready is not None:
            on_ready()

    def _pause(self, message: str) -> None:
        """A newer memctl made the index (docs/watch.md, "After an upgrade"): writing rows of
        this version into it would hand the newer one rows it trusts and cannot read as
        its own. So nothing is written and the watcher is not live (readers check the files
        themselves) until the index is this version's again: `memctl reindex` by this
        version, looked for at each batch (`_resume`); or this watcher starts again on the
        new code."""
        if self._paused is None:
            self.on_message(f"warning: {message}. This watcher writes nothing to it meanwhile")
            self.on_live(False)
            self._set_state("paused")
        self._paused = message
        if self._index is not None:
            self._index.close()  # (kept: its path is still where the index is looked for)

    def _resume(self) -> bool:
        """Whether the index is this version's again (then watched as before, from a full
        pass); else still paused."""
        try:
            self._open_index()
        except (MemctlError, sqlite3.Error):
            return False  # still a newer memctl's, or busy (that memctl's reindex): later
        self._paused = None
        self.on_message("the index is of this memctl's version again: watching")
        with self._cond:
            self._coalescer.add_full(time.monotonic())
        self._set_state("ready")
        self.on_live(True)
        self._ready()
        return True

    # --- readers' cookies (memctl.disk.watchstate.ask_watcher) -------------------------

    def _answer(self, cookies: set[str]) -> None:
        """Tell the readers waiting on these cookies that the index holds everything before
        them, by deleting the cookies; never while our index or lock is not the store's
        (the reader then checks the files itself)."""
        if self._index is None or self._paused is not None \
                or path_identity(self._index.path) != self._index_id \
                or self._lock is None or not self._lock.still_held() \
                or getattr(self._observer, "incomplete", False):
            # (incomplete: a folder could not be watched, a kernel limit reached; its writes
            # would be missed, so readers walk until a full pass watches it: `_mend_watches`)
            return
        for relpath in cookies:
            try:
                os.unlink(os.path.join(self.root, relpath))
            except OSError:
                pass  # the reader gave up and took it back
        self.on_answer()

    def _cookies_in(self, top: str) -> list[str]:
        """The cookies in the project folder `top`, or at the store's top ("")."""
        try:
            with os.scandir(os.path.join(self.root, top)) as entries:
                return [f"{top}/{entry.name}" if top else entry.name
                        for entry in entries if is_cookie(entry.name)]
        except OSError:
            return []

    def _sweep_cookies(self) -> None:
        """Remove cookies left by readers killed while they waited."""
        limit = time.time() - COOKIE_STALE_AFTER
        for top in ["", *self._tops_on_disk()]:
            for relpath in self._cookies_in(top):
                path = os.path.join(self.root, relpath)
                try:
                    if os.lstat(path).st_mtime < limit:
                        os.unlink(path)
                except OSError:
                    pass

    # --- periodic work ----------------------------------------------------------------------

    def _beat(self) -> None:
        try:
            self._heartbeat.beat()
        except (OSError, MemctlError):
            pass  # the store is being replaced (_store_moved deals with it), or a folder is
            # where the heartbeat goes: readers then walk, as without a watcher
        self._check_limit(fatal=False)

    def _set_failing(self, exc: BaseException | None) -> None:
        """Its passes fail (`exc`: a full disk, an index busy for long) or work again (None).
        The heartbeat says why while they fail (`failing`), so `memctl watch --status` tells
        a watcher that runs but cannot write from one that keeps the index fresh, and
        readers do not wait on it meanwhile (memctl.disk.watchstate.read_status). When the
        heartbeat itself cannot be written, the status finds the disk full itself."""
        self._failing = exc is not None
        if self._heartbeat is None:
            return
        said = self._heartbeat.extra.get(FAILING)
        if exc is None:
            if said is None:
                return
            self._heartbeat.extra.pop(FAILING, None)
        else:
            reason = failure_reason(exc)
            if said == reason:
                return
            self._heartbeat.extra[FAILING] = reason
        self._set_state(None)

    def _set_state(self, state: str | None) -> None:
        """The heartbeat's state now (readers trust only "ready"); None: as it is, beaten
        now."""
        if self._heartbeat is None:
            return
        try:
            self._heartbeat.beat(state)
        except (OSError, MemctlError):
            pass  # as `_beat`: readers then walk

    def _store_moved(self) -> bool:
        """The store folder replaced (`mv store store.old; mkdir store`) leaves inotify on the
        old folder, and a deleted `.memctl/` leaves our lock and index on unlinked files: start
        over on what is at the path now. True while there is nothing to watch."""
        try:
            info = os.stat(self.root)
        except FileNotFoundError:
            self._let_go(StoreAway("gone", self.root))
            return True
        same_root = (info.st_dev, info.st_ino) == self._root_id
        if not same_root and (self.keep_folder is not None or not os.path.isfile(
                os.path.join(self.root, SETTINGS_FILE))):
            # Another folder at the path that is no store (no memctl.toml: an empty folder
            # made for `git clone URL .` or a restore, a mount point) is left untouched, as
            # `memctl watch` started there refuses it: a `.memctl/` made in it made the
            # clone fail (tests/test_watch.py). Once it holds a store, the watcher starts
            # over on it.
            self._let_go(StoreAway("other", self.root))
            return True
        back = self._root_said is not None
        times, self._root_times = self._root_times, (info.st_mtime_ns, info.st_ctime_ns)
        if same_root and not back and (self._root_left or (
                not self._ordered and times is not None and times[0] == info.st_mtime_ns
                and times[1] != info.st_ctime_ns)):
            # Moved away and back since the last look: folders made meanwhile where it was
            # have no watch (tests/test_watch.py). memctl's observer says when the folder
            # itself moves; with watchdog's, a ctime that moved without the mtime (readers'
            # cookies, in project folders then, leave the store folder's mtime alone).
            back = True
        if same_root and not back and self._lock is not None and self._lock.still_held():
            if self._paused is None and path_identity(self._index.path) != self._index_id:
                # Another memctl found the index corrupt and made a new one: ours is unlinked.
                self._index.close()
                try:
                    self._open_index()
                except NewerIndexError as exc:
                    self._pause(str(exc))
                    return False
                except (MemctlError, sqlite3.Error, OSError) as exc:
                    # The new index cannot be opened now (a full disk, busy for long): said
                    # once, and tried again at the next tick (this one is still unlinked),
                    # rather than ending the watcher.
                    if not self._failing:
                        self.on_message(f"warning: could not update the index ({exc}); "
                                        f"retrying")
                    self._set_failing(exc)
                    return False
                self._apply(Batch(full=True), announce=False)
            return False
        # Replaced, `.memctl/` removed, or back in its place after being away: new watches (the
        # folders made while it was away were never watched: watchdog adds a new folder's
        # watch by the path, which was not the store's then), the index opened again, and a
        # full pass, which takes what changed meanwhile, edits made where it was included.
        taken = self._root_said == TAKEN
        if not taken:
            self.on_message("the store folder is back; starting over" if back and same_root
                            else "the store folder was replaced; watching the new one"
                            if not same_root else "`.memctl/` was removed; starting over")
        self._root_said = None
        self._teardown()
        if back and self.commit:
            self._dirty = True  # edits made while it was away: `_maybe_commit` asks git
        try:
            self._start(announce=True)
        except WatcherRunning:
            if self.keep_folder is not None:
                raise  # `memctl mcp`'s watcher: it relies on the other one, then takes over
            # A watcher started where the store was while this one had let it go: this one
            # takes over once that one stops or lets the store go in turn.
            if not taken:
                status = read_status(self.root)
                who = f" (pid {status.pid})" if status is not None else ""
                self.on_message(f"another watcher{who} now watches {self.root}; this one "
                                f"takes over when it stops")
            self._root_said = TAKEN
            self._say_hand_over_waits()
            return True
        except (MemctlError, OSError):
            if path_identity(self.root) is not None:
                raise
            self._let_go(StoreAway("gone", self.root))  # gone again meanwhile: wait for it
            return True
        if taken:
            self.on_message("the other watcher let the store go; watching it again")
        return False

    def _let_go(self, away: StoreAway) -> None:
        """Nothing to watch at the store's path: said once per state, and the lock, the
        heartbeat and the search server let go. The lock file went with the folder: held, it
        would refuse a watcher started where the store is now
        (tests/test_watch.py::test_a_store_moved_for_good_can_be_watched_where_it_is_now).
        The watches stay (their events are held, `_apply`): a reader's cookie dropped just
        after the store is back wakes the watcher, which starts over on it at once and then
        answers (the rest of `_store_moved`), instead of at its next look, after the reader
        has given up and walked the store itself."""
        if self._root_said != away.state:
            self._root_said = away.state
            self.on_message(str(away))
        if self._lock is not None:
            self.on_live(False)
            self._release_store()
        self._say_hand_over_waits()

    def _say_hand_over_waits(self) -> None:
        if self._hand_over_wanted and not self._hand_over_said:
            self._hand_over_said = True
            self.on_message("it starts again on the new code once it watches the store again")

    def _maybe_commit(self, now: float) -> None:
        if not self._dirty or now - self._last_commit < self.commit_every:
            return
        if path_identity(self.root) != self._root_id:
            return  # the store is away: committed once it is back (`_dirty` stays set)
        if self._git_busy() or gitops.commit_blocked(self.root):
            return  # never through a merge, a rebase, a detached HEAD or another git's index lock
        try:
            with store_lock(self.root, "watch --commit", timeout=0.2):
                self._dirty, self._last_commit = False, now
                # A killed import's files are no hand edits: roll it back (or finish it) first,
                # as every command that takes the lock does (`Store.lock`), or its half would
                # be committed here and then taken for a completed import.
                try:
                    for said in recover_pending(Path(self.root), state_path(self.root)):
                        self.on_message(said)
                except MemctlError as exc:  # set aside, named: commit nothing this time
                    self.on_message(f"warning: could not commit: {exc}")
                    return
                changed = self._uncommitted_memory()
                if not changed:
                    return
                kinds = [kind for kind, _path in changed]
                message = (f"memctl watch: hand edits ({kinds.count('A')} added, "
                           f"{kinds.count('M')} changed, {kinds.count('D')} removed)")
                sha = gitops.commit_all(self.root, message, sorted(p for _k, p in changed))
        except LockTimeout:
            return  # a memctl command is busy committing; a later tick tries again
        except gitops.GitError as exc:
            self.on_message(f"warning: could not commit: {exc}")
            return
        if sha:
            self.on_commit(sha, len(changed))

    def _uncommitted_memory(self) -> list[tuple[str, str]]:
        """(A|M|D, path) of the memory files git sees changed (run_git's status never takes
        git's index lock, so a person's own git command cannot fail on us)."""
        result = gitops.run_git(self.root, "status", "--porcelain", "-z", "--no-renames",
                                "--untracked-files=all")
        changed = []
        for entry in result.stdout.split("\0"):
            code, path = entry[:2], entry[3:]
            if len(entry) > 3 and self.is_memory(path):
                kind = "A" if code == "??" or "A" in code else "D" if "D" in code else "M"
                changed.append((kind, path))
        return changed

    # --- shutting down ----------------------------------------------------------------------

    def _teardown(self) -> None:
        self.on_live(False)
        observer, self._observer = self._observer, None
        self._watches.clear()
        if observer is not None:
            observer.stop()
            observer.join(timeout=1.0)
        if self._log_handler is not None:
            logging.getLogger("watchdog.observers.inotify_c").removeHandler(self._log_handler)
            self._log_handler = None
        index, self._index = self._index, None
        if index is not None:
            index.close()
        self._release_store()

    def _release_store(self) -> None:
        """The heartbeat and the lock let go, or kept for the process this one is about to
        become (`_hand_over`: the heartbeat says "starting", the lock is `handed_lock`)."""
        if self._heartbeat is not None:
            if self._hand_over:
                self._set_state("starting")
            else:
                self._heartbeat.clear()
            self._heartbeat = None
        if self._lock is not None:
            if self._hand_over:
                self.handed_lock = self._lock
            else:
                self._lock.release()
            self._lock = None

    def close(self) -> None:
        try:
            if self.commit and self._dirty and self._lock is not None:
                self._maybe_commit(time.monotonic() + self.commit_every)
        finally:
            self._teardown()
