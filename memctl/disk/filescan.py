"""Finding the files the index covers, and telling cheaply which folders changed.

Every read first checks the index against the files. An edit in place changes nothing but
the file's own stamp, so every file is stat'ed: that is the floor. What this module saves is
the rest: the walk lists each folder's files as entries, (file name in bytes, mtime_ns,
ctime_ns, size) tuples, and each folder gets one digest of its sorted entries
(`entries_digest`). The index keeps the same digest of what it indexed in each folder
(computed from its `files` table, inside the transaction that changes it: `indexed_digest`),
so a check that finds nothing changed compares a few hundred digests instead of loading
every file's stamp from SQLite, and a change is looked at only in the folders whose digest
differs: there the files are compared by their keys, `path\\tmtime_ns\\tctime_ns\\tsize`
(`stamp_key`).

The walk writes no text per file: a tuple is made and hashed with its folder's (`marshal`,
whose format is fixed for a given Python version), where a key written out cost 4–7 ms more
a walk of 10k notes (bench/README.md). Names stay bytes, checked to be UTF-8 a folder at a
time (`_all_utf8`): a name that is not is no memory (layout.classify).
"""

from __future__ import annotations

import codecs
import marshal
import os
import stat as stat_module
import sys

from memctl.core.stamp import Stamp
from memctl.core.textfile import is_utf8_name
from memctl.disk.forking import fork_child, stop_child, write_all

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

# memctl.core.vocab (`valid_project_name`) is imported where a name is checked, not here: it
# loads `re` (~10 ms), and `memctl search` starts its walk ahead (below) before that.

Entry = tuple[bytes, int, int, int]  # (file name, mtime_ns, ctime_ns, size): memctl.core.stamp

_MD_SUFFIXES = (b".md", b".MD", b".Md", b".mD")
# Whether Python reads file names as UTF-8 (as it does but with `PYTHONUTF8=0` in a locale
# of another encoding), with surrogate escapes for the bytes that are not.
_UTF8_NAMES = (codecs.lookup(sys.getfilesystemencoding()).name == "utf-8"
               and sys.getfilesystemencodeerrors() == "surrogateescape")
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
# marshal's version 2 writes every object whole: from version 3 on, an object referred to
# twice (a small int, say) may be written as a reference, depending on who else holds it.
_MARSHAL_VERSION = 2

# memctl/disk/_statwalk.c: the listing of one folder in C, built where the install found a
# C compiler (hatch_build.py). It writes the entries as `marshal` does, so a folder's digest
# is the same whichever lists it (tests/test_statwalk.py). Only a build of this version is
# used: an editable install keeps the module it built. MEMCTL_NATIVE_WALK=0: the Python one.
try:
    from memctl.disk import _statwalk  # type: ignore[attr-defined]
except ImportError:  # not built
    _statwalk = None
_STATWALK_VERSION = 1


def _native_lister(module: Any) -> Callable[[bytes, bool], tuple[bytes, int, list[bytes]] | None] | None:
    """`module.list_folder` if it is a build of this version and not turned off, else None."""
    if module is None or os.environ.get("MEMCTL_NATIVE_WALK") == "0" \
            or getattr(module, "VERSION", None) != _STATWALK_VERSION:
        return None
    return module.list_folder  # type: ignore[no-any-return]


_native_list = _native_lister(_statwalk)


def scan(root: str, folders: list[tuple[str, str]] | None = None) -> dict[str, list[str]]:
    """`stamp_key`s of every file the index covers, by store-relative folder
    (`blog/notes/fact/`); folders without such files are left out."""
    return {folder: entry_keys(folder, entries)
            for folder, entries in scan_entries(root, folders).items()}


def scan_entries(root: str, folders: list[tuple[str, str]] | None = None) -> dict[str, list[Entry]]:
    """The entries of every file the walk finds, by store-relative folder; folders without
    such files are left out.

    Mirrors `store.classify` for indexed kinds without classifying each file: top-level
    folders with a project name, no dot folders or dot files, `*.md`, names that are UTF-8.
    Each folder is opened once and its entries are stat'ed relative to it (cheaper than full
    paths).
    """
    found = _walk(_project_tops(root) if folders is None else
                  [(os.fsencode(here), os.fsencode(path)) for here, path in folders])
    return {os.fsdecode(here): entries for here, entries in found.items()}


def _project_tops(root: str) -> list[tuple[bytes, bytes]]:
    """(name + "/", path) of the project folders at the top of `root`, for `_walk`."""
    from memctl.core.vocab import valid_project_name

    return _encoded([(name, path) for name, path in _top_folders(root)
                     if valid_project_name(name)])


def _top_folders(root: str) -> list[tuple[str, str]]:
    """(name, path) of the real folders (not links) at the top of `root` whose name does not
    start with `.`: the project folders among them are what the walk covers."""
    tops: list[tuple[str, str]] = []
    try:
        with os.scandir(root) as top:
            for entry in top:
                try:
                    if entry.name[0] != "." and entry.is_dir(follow_symlinks=False):
                        tops.append((entry.name, entry.path))
                except OSError:
                    continue
    except OSError:
        return []  # as if the store held nothing: the caller creates or reports it
    return tops


def _walk(folders: list[tuple[bytes, bytes]]) -> dict[bytes, list[Entry]]:
    """The entries of `folders` ((store-relative folder with its `/`, path) pairs, popped)
    and of every folder below them, by folder, sorted. In bytes throughout: no name is
    decoded from the file system nor encoded back for its stat (~15 % of the walk's time)."""
    return {here: marshal.loads(data) for here, (data, _) in _walk_listings(folders).items()}


def _list_folder(here: bytes, folder: bytes, below: list[tuple[bytes, bytes]]) -> list[Entry]:
    """The entries of the files in `folder` (`here` from the store), its subfolders added to
    `below`: regular files named `*.md` (any case of the suffix), not links, with names that
    are UTF-8 and do not start with `.`. A name that is not UTF-8 is no memory
    (layout.classify), nor is anything in a folder so named: its store-relative path could be
    neither looked up in the index nor written to it."""
    entries: list[Entry] = []
    add = entries.append
    try:
        fd = os.open(folder, _FOLDER_FLAGS)
    except OSError:
        return entries
    stat, s_isreg, s_isdir = os.stat, stat_module.S_ISREG, stat_module.S_ISDIR
    try:
        names = os.listdir(folder)
        if not _all_utf8(names):
            names = [name for name in names if _all_utf8([name])]
        for name in names:
            if name[0] == 46:  # "."
                continue
            try:
                info = stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            mode = info.st_mode
            if s_isreg(mode):
                if name.endswith(_MD_SUFFIXES):
                    add((name, info.st_mtime_ns, info.st_ctime_ns, info.st_size))
            elif s_isdir(mode):
                below.append((here + name + b"/", folder + b"/" + name))
    except OSError:
        pass
    finally:
        os.close(fd)
    return entries


def _listing(here: bytes, folder: bytes, below: list[tuple[bytes, bytes]]) -> tuple[bytes, int]:
    """(`marshal.dumps` of the entries of `folder` sorted, what its digest is made of: their
    number), its subfolders added to `below`, as `_list_folder` lists them: in C where it
    was built and can (`_native_list`), else here."""
    if _native_list is not None:
        listed = _native_list(folder, _UTF8_NAMES)
        if listed is not None:
            data, count, subfolders = listed
            below.extend([(here + name + b"/", folder + b"/" + name) for name in subfolders])
            return data, count
    entries = _list_folder(here, folder, below)
    entries.sort()
    return marshal.dumps(entries, _MARSHAL_VERSION), len(entries)


def _walk_listings(folders: list[tuple[bytes, bytes]]) -> dict[bytes, tuple[bytes, int]]:
    """`_walk`, each folder as its `_listing`: no entry made in Python where C lists it."""
    found: dict[bytes, tuple[bytes, int]] = {}
    while folders:
        here, folder = folders.pop()
        data, count = _listing(here, folder, folders)
        if count:
            found[here] = (data, count)
    return found


def _all_utf8(names: list[bytes]) -> bool:
    """Whether every name is UTF-8 as the rest of memctl tells it, from the name as the file
    system's encoding reads it (`textfile.is_utf8_name`: with `LC_ALL=C PYTHONUTF8=0` names
    are read as ASCII, and no other name is). One check of a folder's names joined by `/`,
    which no name holds and which ends any UTF-8 sequence begun before it: a decode per name
    cost ~2 ms a walk of 10k notes with Chinese names."""
    joined = b"/".join(names)
    if joined.isascii():
        return True
    if not _UTF8_NAMES:
        return is_utf8_name(os.fsdecode(joined))
    try:
        joined.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def entries_digest(entries: list[Entry]) -> str:
    """The digest of one folder's entries, in any order (sorted here, in place)."""
    entries.sort()
    return _blake2b_hex(marshal.dumps(entries, _MARSHAL_VERSION))


def indexed_digest(rows: Iterable[tuple[str, int, int, int]]) -> str:
    """`entries_digest` of one folder's files as the index holds them: (store-relative
    path, mtime_ns, ctime_ns, size) rows. A path is text as the file system's encoding read
    it (`os.fsdecode`), so encoding its name back gives the bytes the walk lists."""
    return entries_digest([(_name_bytes(path[path.rfind("/") + 1:]), mtime, ctime, size)
                           for path, mtime, ctime, size in rows])


def _name_bytes(name: str) -> bytes:
    """The bytes of an indexed file's name. A name indexed by a memctl that read names as
    UTF-8 and read now in another encoding (`LC_ALL=C PYTHONUTF8=0`: ASCII) cannot be
    encoded in it: its UTF-8 bytes are what the walk lists."""
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape")


def entry_keys(folder: str, entries: list[Entry]) -> list[str]:
    """The `stamp_key`s of the entries of `folder` (store-relative, with its `/`)."""
    fsdecode = os.fsdecode
    return [f"{folder}{fsdecode(name)}\t{mtime}\t{ctime}\t{size}"
            for name, mtime, ctime, size in entries]


def project_folders(root: str) -> set[str]:
    """The names of the top-level folders `scan` walks (and `memctl watch` watches): real
    folders, not links, with a project's name."""
    from memctl.core.vocab import valid_project_name

    names: set[str] = set()
    try:
        with os.scandir(root) as top:
            for entry in top:
                try:
                    if entry.is_dir(follow_symlinks=False) and valid_project_name(entry.name):
                        names.add(entry.name)
                except OSError:
                    continue
    except OSError:
        pass
    return names


def scan_keys(root: str, folders: list[tuple[str, str]] | None = None) -> set[str]:
    """Every key of `scan`, in one set."""
    keys: set[str] = set()
    for folder_keys in scan(root, folders).values():
        keys.update(folder_keys)
    return keys


def content_digest(data: bytes) -> str:
    """The hash the index keeps of a file's bytes (memctl.index.docs records it; `show`
    compares a file with it without loading the parser: memctl.index.db.current_entry)."""
    return _blake2b_hex(data)


def _blake2b_hex(data: bytes) -> str:
    global _blake2b
    if _blake2b is None:  # at the first digest, not at import: the helpers fork before it
        try:
            from _blake2 import blake2b  # hashlib's blake2b, without loading OpenSSL (~5 ms)
        except ImportError:  # pragma: no cover - a Python built without it
            from hashlib import blake2b
        _blake2b = blake2b
    return _blake2b(data, digest_size=16).hexdigest()  # type: ignore[no-any-return]


# The hash, once imported: an import statement per folder cost ~0.5 ms a walk of 10k notes.
_blake2b: Any = None


def folder_of(path: str) -> str:
    """`blog/notes/fact/` for `blog/notes/fact/x.md`."""
    return path[:path.rfind("/") + 1]


# --- the keys of the stamps (memctl.core.stamp.file_stamp) ---------------------------------


def stamp_key(path: str, stamp: Stamp) -> str:
    """The key of a file in a folder's digest: `path\\tmtime_ns\\tctime_ns\\tsize`."""
    return f"{path}\t{stamp[0]}\t{stamp[1]}\t{stamp[2]}"


# The same key made by SQLite from the `files` table (memctl.index.db).
STAMP_COLUMNS = "mtime_ns, ctime_ns, size"
STAMP_KEY_SQL = "path || char(9) || mtime_ns || char(9) || ctime_ns || char(9) || size"


def split_key(key: str) -> tuple[str, Stamp]:
    path, mtime, ctime, size = key.rsplit("\t", 3)
    return path, (int(mtime), int(ctime), int(size))


def key_path(key: str) -> str:
    return key.rsplit("\t", 3)[0]


def walk_stats(root: str | os.PathLike[str]) -> dict[str, Stamp]:
    """`file_stamp` of every file the index covers, by store-relative path."""
    return dict(split_key(key) for key in scan_keys(str(root)))


# --- the walk in forked processes ----------------------------------------------------------
#
# The stat calls of a walk are the kernel's work (~5 µs a file here), so one process cannot
# make them much cheaper, and a second thread is slower still (the GIL). A short-lived
# command (`memctl search`) forks instead: `walk_ahead` starts helper processes at the very
# beginning of the command, before its imports, and `scan_folders` (the freshness check)
# walks what they have not taken yet and then gathers what they found. Everything they walk
# is walked after the command began, so every write made before it is seen, as with the
# walk made here (docs/search.md, "Never stale").
#
# The top-level folders are the units of work: each is a record in a pipe that the helpers,
# and then the command itself, read one at a time (a read of a pipe takes its bytes whole),
# so whoever is free takes the next one. A helper sends back, for each folder it walked, the
# digest and the number of files, as soon as it has walked the record (~50 bytes a folder,
# where the keys would be ~100 bytes a file: 10k notes, ~25 KB instead of ~1 MB through the
# pipe); the keys of a folder whose digest differs from the index's are listed again when
# asked for (`Walked.keys`). Any failure (no fork, a helper killed, an incomplete answer)
# makes the command walk the whole store itself. `memctl search` forks its helpers with
# nothing loaded but the interpreter, `os` and this module (no SQLite, no thread, nothing
# buffered); they leave with `os._exit`.

_RECORD = 2  # bytes of a record
# At most this many records (2 bytes each, within PIPE_BUF: written whole, before any
# helper reads), so more top-level folders than this share records.
_MAX_RECORDS = 1024
_MAX_HELPERS = 3
_MOST_HELPERS = 16  # whatever MEMCTL_WALK_WORKERS says
_ANSWER_PIPE = 1 << 20  # what a helper's answers may fill before it waits for the command
_LENGTH = 8  # bytes of the length before each record's answer
_END = bytes(_LENGTH)  # a length of 0: the helper's answer is complete


class Walked:
    """The result of a walk, by store-relative folder: each folder's digest, and the number
    of files. A helper process sends only digests and counts (its entries are ~60 bytes a
    file); the keys of one of its folders are listed again when asked for, which the
    freshness check does only for a folder whose digest differs from the index's."""

    __slots__ = ("root", "digests", "files", "_listings")

    def __init__(self, root: str) -> None:
        self.root = root
        self.digests: dict[str, str] = {}
        self.files = 0
        self._listings: dict[str, bytes] = {}

    def add_listing(self, folder: bytes, data: bytes, count: int) -> None:
        """A folder listed here (`_listing`): its entries are read from `data` only if its
        keys are asked for (`keys`)."""
        name = os.fsdecode(folder)
        self.digests[name] = _blake2b_hex(data)
        self._listings[name] = data
        self.files += count

    def add_digest(self, folder: str, digest: str, count: int) -> None:
        self.digests[folder] = digest
        self.files += count

    def keys(self, folder: str) -> list[str]:
        """The keys of `folder` (none for a folder the walk did not find)."""
        data = self._listings.get(folder)
        if data is not None:
            entries: list[Entry] = marshal.loads(data)
        elif folder in self.digests:
            entries = marshal.loads(_listing(os.fsencode(folder), os.fsencode(
                os.path.join(self.root, folder[:-1])), [])[0])
        else:
            return []
        return entry_keys(folder, entries)

    def as_scan(self) -> dict[str, list[str]]:
        """What `scan` returns for the same files."""
        return {folder: self.keys(folder) for folder in self.digests}


def scan_folders(root: str) -> Walked:
    """The walk of `scan(root)` with each folder's digest: the one `walk_ahead` started for
    this store if there is one, else made here."""
    global _ahead
    ahead, _ahead = _ahead, None
    if ahead is not None:
        if ahead.walks(root):
            walked = ahead.finish(root)
            if walked is not None:
                return walked
        else:
            ahead.abandon()  # another folder's: of no use here
    walked = Walked(root)
    for folder, (data, count) in _walk_listings(_project_tops(root)).items():
        walked.add_listing(folder, data, count)
    return walked


def walking_ahead(root: str) -> bool:
    """Whether helper processes are walking the store at `root` for this process."""
    return _ahead is not None and _ahead.walks(root)


def walk_ahead(root: str, helpers: int | None = None) -> bool:
    """Start walking the store at `root` in `helpers` forked processes (default: one per
    core but one, at most 3; MEMCTL_WALK_WORKERS=N), for the next `scan_folders(root)` of
    this process; whether they were started. Only in a process with no other thread (a fork
    copies just the calling one), on Linux (/proc tells the threads)."""
    global _ahead
    if helpers is None:
        helpers = walk_workers()
    if helpers < 1 or not hasattr(os, "fork") or not _single_threaded():
        return False
    tops = _top_folders(root)
    records = min(len(tops), _MAX_RECORDS)
    helpers = min(helpers, records - 1)  # the command itself takes records too
    if helpers < 1:
        return False
    groups = [tops[number::records] for number in range(records)]
    try:
        started = _WalkAhead.start(root, groups, helpers)
    except OSError:  # the store's folder gone meanwhile: the command walks (or says so)
        return False
    if started is None:
        return False
    if _ahead is not None:
        _ahead.abandon()
    else:
        import atexit

        atexit.register(_abandon_at_exit)  # a command that ends before its walk is used
    _ahead = started
    return True


def _abandon_at_exit() -> None:
    global _ahead
    ahead, _ahead = _ahead, None
    if ahead is not None:
        ahead.abandon()
    reap_helpers()


def walk_workers() -> int:
    """MEMCTL_WALK_WORKERS (at most 16), else one per core but one (at most 3): the helpers
    of a walk ahead; 0 walks in the command alone."""
    try:
        chosen = os.environ.get("MEMCTL_WALK_WORKERS")
        if chosen is not None:
            # At most _MOST_HELPERS, as MEMCTL_INDEX_WORKERS: 1000 forked a helper per
            # top-level folder of the store (up to 1,023) for every search.
            return min(int(chosen), _MOST_HELPERS)
        return min(_MAX_HELPERS, len(os.sched_getaffinity(0)) - 1)
    except (ValueError, AttributeError, OSError):
        return 0


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


_ahead: _WalkAhead | None = None


class _WalkAhead:
    """Helper processes walking groups of top-level folders, and the queue they take them
    from."""

    def __init__(self, identity: tuple[int, int], groups: list[list[tuple[str, str]]],
                 queue: int) -> None:
        self.identity = identity  # of the store's folder
        self.groups = groups
        self.queue = queue  # the read end of the records' pipe
        self.helpers: list[tuple[int, int]] = []  # (pid, the read end of its answer's pipe)

    @classmethod
    def start(cls, root: str, groups: list[list[tuple[str, str]]],
              helpers: int) -> _WalkAhead | None:
        identity = _identity(root)
        queue, queue_in = os.pipe()
        try:
            os.write(queue_in, b"".join(number.to_bytes(_RECORD, "big")
                                        for number in range(len(groups))))
        except OSError:
            os.close(queue)
            raise
        finally:
            os.close(queue_in)  # the queue's end: a read of it, emptied, returns nothing
        ahead = cls(identity, groups, queue)
        for _ in range(helpers):
            if not ahead._fork():
                break
        if not ahead.helpers:
            ahead.abandon()
            return None
        return ahead

    def _fork(self) -> bool:
        started = fork_child(self._help)
        if started is None:
            return False
        self.helpers.append(started)
        return True

    def _help(self, answer: int) -> None:
        """In a helper: walk records from the queue until it is empty, sending what each
        record holds as soon as it is walked (the last one is then all the command waits
        for): its length, then (record, [(folder, digest, number of files), ...]); and at
        the end a length of 0 (`_END`), so that the command need not wait for this process
        to be gone (its exit unmaps its copy of the command's memory: ~0.5 ms)."""
        _widen(answer)
        _quiet_standard_streams()
        while record := os.read(self.queue, _RECORD):
            number = int.from_bytes(record, "big")
            folders = _walk_listings(_encoded(self.groups[number]))
            data = marshal.dumps((number, [(os.fsdecode(folder), _blake2b_hex(listing), count)
                                           for folder, (listing, count) in folders.items()]))
            write_all(answer, len(data).to_bytes(_LENGTH, "big") + data)
        write_all(answer, _END)

    def walks(self, root: str) -> bool:
        """Whether this walk is of the folder `root` names (the same folder, by identity)."""
        try:
            return _identity(root) == self.identity
        except OSError:
            return False

    def finish(self, root: str) -> Walked | None:
        """The whole walk: the records no helper took, walked here, and the helpers' answers;
        None if any helper failed (the caller then walks everything itself)."""
        from memctl.core.vocab import valid_project_name

        try:
            walked = Walked(root)
            named: dict[str, bool] = {}  # top-level folder -> whether it is a project's

            def wanted(folder: str) -> bool:
                top = folder[:folder.find("/")]
                if top not in named:
                    named[top] = valid_project_name(top)
                return named[top]

            done: set[int] = set()
            while record := os.read(self.queue, _RECORD):
                number = int.from_bytes(record, "big")
                done.add(number)
                folders = _encoded([(name, path) for name, path in self.groups[number]
                                    if valid_project_name(name)])
                for folder, (data, count) in _walk_listings(folders).items():
                    walked.add_listing(folder, data, count)
            while self.helpers:
                pid, answer = self.helpers.pop()
                try:
                    frames = _read_frames(answer)
                finally:
                    os.close(answer)
                _reap_later(pid)
                if frames is None:  # the helper ended before its last word: it failed
                    return None
                for frame in frames:
                    number, folders = marshal.loads(frame)
                    if number in done or not 0 <= number < len(self.groups):
                        return None
                    done.add(number)
                    for folder, digest, count in folders:
                        if wanted(folder):
                            walked.add_digest(folder, digest, count)
            return walked if len(done) == len(self.groups) else None
        except (OSError, EOFError, ValueError, TypeError):
            return None
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Stop the helpers still running and let go of the pipes."""
        while self.helpers:
            pid, answer = self.helpers.pop()
            os.close(answer)
            stop_child(pid)
        if self.queue >= 0:
            os.close(self.queue)
            self.queue = -1


def _read_frames(fd: int) -> list[bytes] | None:
    """The frames a helper sent (each after its length), up to its `_END`; None when the
    pipe closes before it (the helper was killed, or failed). One buffer that grows, read
    from where the last frame ended: each byte is copied once, however the pipe cuts it."""
    data = bytearray()
    frames: list[tuple[int, int]] = []  # (start, end) in `data`
    position = 0
    while chunk := os.read(fd, 1 << 20):
        data += chunk
        while position + _LENGTH <= len(data):
            start = position + _LENGTH
            end = start + int.from_bytes(data[position:start], "big")
            if end == start:
                return [bytes(data[begin:stop]) for begin, stop in frames]
            if end > len(data):
                break
            frames.append((start, end))
            position = end
    return None


# Helpers that sent their whole answer and may still be exiting: waited for at this
# process's exit (by then they are gone), so that none is left unreaped.
_ending: list[int] = []


def _reap_later(pid: int) -> None:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == 0:
            _ending.append(pid)
    except ChildProcessError:
        pass


def reap_helpers() -> None:
    """Wait for the helpers that answered and were still exiting."""
    while _ending:
        try:
            os.waitpid(_ending.pop(), 0)
        except ChildProcessError:
            pass


def _encoded(tops: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """(name + "/", path) of top-level folders, for `_walk`."""
    return [(os.fsencode(name) + b"/", os.fsencode(path)) for name, path in tops]


def _identity(root: str) -> tuple[int, int]:
    info = os.stat(root)
    return info.st_dev, info.st_ino


def _widen(fd: int) -> None:
    """Let a helper's answers fill more than the 64 KiB of a pipe before it must wait for
    the command to read them (which it does once it has walked its own share), up to what
    the system allows (1 MiB by default on Linux): ~20k folders, a store of ~400k notes."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _ANSWER_PIPE)
    except (ImportError, AttributeError, OSError):
        pass  # a smaller pipe: the answer takes more hand-overs


def _quiet_standard_streams() -> None:
    """In a helper: stdin, stdout and stderr on /dev/null, so that a reader of the command's
    output never waits for a helper to let go of it."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)
