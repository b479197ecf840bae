"""The derived index: SQLite in `.memctl/index.sqlite`, rebuilt from the files at will.

The files are the truth. Every read first calls `ensure_fresh`, which walks the store with
scandir and compares each file's stamp (mtime_ns, ctime_ns, size: memctl.core.stamp) with
one SELECT of what was indexed; only
files that differ are read and hashed, and only those whose hash differs are parsed. All
changes of one pass land in one transaction. A file that stops parsing keeps its last good
entry and is reported; a file that disappears leaves no row behind. Nothing here ever writes
to a memory file.

Tables: `files` (one row per memory file: stat, hash, parse error), `docs` (one row per
searchable unit: a note, an episode, a scratchpad, or one section of a MEMORY.md), `fts`
(FTS5 over title, tags and body of each doc, same rowid), `doc_tags` (exact tag filters) and
`fuzzy_words` (the words of titles, tags, subjects and predicates per project, with how many
docs have each: the vocabulary of the fuzzy fallback, memctl.index.fuzzy).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
import stat as stat_module
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from memctl.core.errors import (
    MemctlError,
    UnknownIdError,
    UsageError,
    cmd,
    quoted,
    sqlite_damaged,
    sqlite_refused,
)
from memctl.core.stamp import Stamp, file_stamp
from memctl.core.tokenize import FTS_TOKENIZE, TOKENIZER_VERSION, from_index
from memctl.core.vocab import MAX_LIMIT, fact_key
from memctl.disk.counters import file_damaged as counters_damaged
from memctl.disk.filescan import (
    STAMP_COLUMNS,
    STAMP_KEY_SQL,
    content_digest,
    entries_digest,
    entry_keys,
    folder_of,
    indexed_digest,
    key_path,
    project_folders,
    scan_entries,
    scan_folders,
    scan_keys,
    split_key,
    stamp_key,
    walking_ahead,
)
from memctl.disk.filescan import walk_stats as walk_stats  # re-exported (health uses it)
from memctl.disk.layout import (
    StoreGoneError,
    classify,
    is_memory_name,
    make_state_folder,
    path_identity,
    root_of,
    state_path,
)
from memctl.disk.watchstate import (
    ORDERED,
    answered_in_process,
    ask_watcher,
    change_probe,
    no_room,
    read_status,
    watcher_is_live,
)
from memctl.index.fuzzy import count_words, vocabulary
from memctl.index.scope import scope_sql

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, Concatenate, ParamSpec, TypeVar

    _Params = ParamSpec("_Params")
    _Result = TypeVar("_Result")

    from memctl.disk.changeprobe import ChangeProbe, Ticket
    from memctl.disk.layout import StoreLike
    from memctl.disk.watchstate import WatcherQuestion
    from memctl.index.docs import Prepared, Writer

# memctl.index.docs (reading and parsing files into rows) is imported only when some file
# changed: a freshness check that finds nothing to do never loads it.

SCHEMA_VERSION = 14  # 7: `fuzzy_words` (index/fuzzy.py); 8: `fts_pairs` (pairs of CJK characters);
# 10: `docs_project_created`, `docs_project_updated` (a date named in a query, docs/search.md);
# 11: `files.ctime_ns` (a file's stamp: memctl.core.stamp); 12: `docs_project_path`;
# 13: `docs.subject_key`, `docs.predicate_key` (memctl.core.vocab.fact_key); 14: `folders.digest`
# of (name, stamp) entries, not of keys written out (memctl.disk.filescan.entries_digest)
# Bump when what memctl.index.docs extracts from a file changes: the index is rebuilt then.
# 2: values memctl cannot read are read as their defaults (docs/format.md), and a file that is
# no text is named at the line of its first bad byte.
EXTRACT_VERSION = 2
INDEX_FILE = "index.sqlite"
BUSY_TIMEOUT_MS = 15_000
REBUILD_CACHE_KB = 65_536
INDEXED_KINDS = frozenset({"note", "archived", "memory", "scratchpad", "episode"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL, hash TEXT NOT NULL, kind TEXT NOT NULL, error TEXT, error_line INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS folders(path TEXT PRIMARY KEY, digest TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL COLLATE NOCASE, path TEXT NOT NULL,
    kind TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL, importance INTEGER NOT NULL,
    status TEXT NOT NULL, title TEXT NOT NULL, section TEXT, line INTEGER NOT NULL,
    tags TEXT NOT NULL, subject TEXT, predicate TEXT, created TEXT, updated TEXT,
    updated_ts REAL NOT NULL, expires TEXT, expires_ts REAL, pinned INTEGER NOT NULL,
    superseded_by TEXT, corrects TEXT, meta TEXT NOT NULL, subject_key TEXT,
    predicate_key TEXT
);
CREATE TABLE IF NOT EXISTS doc_tags(tag TEXT NOT NULL, doc INTEGER NOT NULL,
    PRIMARY KEY(tag, doc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fuzzy_words(project TEXT NOT NULL, length INTEGER NOT NULL,
    word TEXT NOT NULL, docs INTEGER NOT NULL, PRIMARY KEY(project, length, word)) WITHOUT ROWID;
"""
# Secondary indexes: a rebuild drops them and creates them again once every row is in (a sort
# is much cheaper than 100k inserts at random places in a B-tree).
_INDEXES = {
    "docs_id": "CREATE INDEX IF NOT EXISTS docs_id ON docs(id)",
    "docs_path": "CREATE INDEX IF NOT EXISTS docs_path ON docs(path)",
    "docs_project": "CREATE INDEX IF NOT EXISTS docs_project ON docs(project, kind)",
    # The entries of a project whose file lies outside its folder (Index.held_elsewhere):
    # two range reads, whatever the size of the project.
    "docs_project_path": "CREATE INDEX IF NOT EXISTS docs_project_path ON docs(project, path)",
    "docs_corrects": "CREATE INDEX IF NOT EXISTS docs_corrects ON docs(corrects)"
                     " WHERE corrects IS NOT NULL",
    # The notes of a day, a month or a year a query names, project by project
    # (memctl.index.bestmatch.dated_rows): one range read each, no row read.
    "docs_project_created": "CREATE INDEX IF NOT EXISTS docs_project_created"
                            " ON docs(project, substr(created, 1, 10), kind)",
    "docs_project_updated": "CREATE INDEX IF NOT EXISTS docs_project_updated"
                            " ON docs(project, substr(updated, 1, 10), kind)",
    "doc_tags_doc": "CREATE INDEX IF NOT EXISTS doc_tags_doc ON doc_tags(doc)",
    # Every read command lists the files that do not parse: a few rows out of 100k.
    "files_errors": "CREATE INDEX IF NOT EXISTS files_errors ON files(path)"
                    " WHERE error IS NOT NULL",
}
_SCHEMA += ";\n".join(_INDEXES.values()) + ";\n"
# `scope` holds one token naming the project (see tokenize.scope_token): filtering by
# project inside the MATCH lets FTS5 intersect posting lists instead of SQL joining every hit.
_FTS_SCHEMA = (f"CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, tags, body, scope,"
               f" tokenize='{FTS_TOKENIZE}')")
_SCHEMA += _FTS_SCHEMA + ";"
# The pairs of CJK characters of the same columns, each pair one token (tokenize.cjk_pairs),
# for the entries that have any: a question's pair of characters is one posting list here
# instead of a phrase of two common characters in `fts` (docs/search.md, "Pairs of
# characters"). Same rowids as `fts`.
_PAIRS_SCHEMA = ("CREATE VIRTUAL TABLE IF NOT EXISTS fts_pairs USING fts5(title, tags, body,"
                 " scope, tokenize='unicode61')")
_SCHEMA += _PAIRS_SCHEMA + ";"
_TABLES = ("meta", "files", "folders", "docs", "doc_tags", "fts", "fts_pairs", "fuzzy_words")
# The words `add` compares notes by, made by memctl.index.nearwords at its first use (not
# imported here: it loads the similarity rules, which a search never needs): dropped with
# the rest on a new schema, emptied by a reindex.
_NEAR_TABLES = ("near_docs", "near_words")
_TABLES += _NEAR_TABLES


class RefreshStats:
    """What one pass changed. (Plain classes here and in the rest of the search path:
    `dataclasses` costs every `memctl search` ~8 ms of start-up; see memctl.core.query.)"""

    def __init__(self) -> None:
        self.added: list[str] = []  # ids of new docs
        self.updated: list[str] = []  # ids whose file changed (or moved)
        self.removed: list[str] = []  # ids that are gone
        self.unchanged = 0
        self.errors: list[tuple[str, int, str]] = []  # (path, line, message)
        self.elapsed_ms = 0.0
        self.files_changed = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.files_changed)

    def __repr__(self) -> str:
        return f"RefreshStats({self.__dict__!r})"


class ParseError:
    """A file that does not parse: where, and why. `has_last_good`: whether the index still
    serves its last good version (listed, searched, recalled), or leaves it out."""

    __slots__ = ("path", "line", "message", "has_last_good")

    def __init__(self, path: str, line: int, message: str, has_last_good: bool = True) -> None:
        self.path = path
        self.line = line
        self.message = message
        self.has_last_good = has_last_good

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParseError) and \
            (self.path, self.line, self.message) == (other.path, other.line, other.message)

    def __hash__(self) -> int:
        return hash((self.path, self.line, self.message))

    def __repr__(self) -> str:
        return f"ParseError({self.path!r}, {self.line!r}, {self.message!r})"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# Beyond this many changed folders (a checkout, a first run), one query reads every stamp.
_FOLDER_BY_FOLDER_MAX = 40
# The files directly in one folder: paths between `folder` and `folder` with its `/` turned
# into `0` (the next character), without a further `/`.
_IN_FOLDER_SQL = (f"SELECT path, {STAMP_COLUMNS} FROM files WHERE path > ? AND path < ?"
                  " AND instr(substr(path, ?), '/') = 0")


def _in_folder(folder: str) -> tuple[str, str, int]:
    return folder, folder[:-1] + "0", len(folder) + 1


# Files modified (or replaced: their ctime) less than this long before they were read are
# re-checked next time.
RACY_NS = 2_000_000_000


def _racy(stamp: Stamp, now: int) -> bool:
    """Whether a file of this stamp, read at `now`, may have been written again in the same
    clock tick without a change of its stamp."""
    return now - max(stamp[0], stamp[1]) < RACY_NS
# Up to this many changed files, a refresh first looks for those that are only racily clean
# (`Index._racy_unchanged`), one query each; beyond, all go to the parser.
_RACY_CHECK_MAX = 200


def index_path(store: StoreLike) -> Path:
    return state_path(store, INDEX_FILE)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    # Reads dominate: map the file instead of copying pages through the page cache.
    conn.execute("PRAGMA mmap_size=268435456")
    # Keep the WAL from staying as big as the last rebuild.
    conn.execute("PRAGMA journal_size_limit=8388608")
    try:
        conn.execute("SELECT exp(0)").fetchone()
    except sqlite3.OperationalError:
        import math

        conn.create_function("exp", 1, math.exp, deterministic=True)
    return conn


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _writable(path: Path) -> bool:
    """Whether the index can be written where it lives (a read-only store cannot)."""
    folder = path.parent if path.parent.exists() else path.parent.parent
    return os.access(folder, os.W_OK | os.X_OK) and (not path.exists() or os.access(path, os.W_OK))


# The private copy of each index this process made (index path -> copy): one per store for
# the life of the process, so a long-running `memctl mcp` on a read-only store or a full disk
# keeps one copy up to date from call to call instead of leaving a new one behind per call.
_COPIES: dict[Path, Path] = {}


def _private_copy(root: Path, path: Path) -> Index:
    """A read-only store (a read-only mount, a folder shared read-only), or a full disk
    (`_copy_instead`): reads keep working on a private copy of the index in a temporary
    folder, brought up to date from the files by its caller and removed when the process
    ends (docs/security.md, docs/reliability.md). Never taken for the store's index: a live
    watcher is not asked about it (`_ask_watcher`), a change probe not armed with it."""
    import atexit  # here, not at the top: only a read-only store needs them (search start-up)
    import shutil
    import tempfile

    copy = _COPIES.get(path)
    if copy is None or not copy.is_file():
        folder = Path(tempfile.mkdtemp(prefix="memctl-read-only-"))
        atexit.register(shutil.rmtree, folder, True)
        copy = folder / INDEX_FILE
        try:
            if path.is_file():
                shutil.copyfile(path, copy)
        except OSError:
            pass  # unreadable as well: the copy starts empty and is built from the files
    _COPIES.pop(path, None)
    for attempt in range(2):
        try:
            index = Index(root, _connect(copy), copy)
            index._prepare(replace_newer=True)  # this process's own copy
            _COPIES[path] = copy
            return index
        except sqlite3.DatabaseError:
            if attempt:
                raise
            remove_index_files(copy)
    raise AssertionError("unreachable")


# SQLITE_CANTOPEN: a file SQLite could not open or create (the index's WAL or shared memory).
_SQLITE_CANTOPEN = 14


def _open_refused(root: Path, exc: sqlite3.DatabaseError) -> bool:
    """Whether opening the index failed for the machine, not for the index: a refused read
    or write (`sqlite_refused`), or a file SQLite could not create on a disk with no room for
    one more (no free inode: `unable to open database file`, which deleting the index as if
    damaged turned into every read failing, `cannot create the index`)."""
    if sqlite_refused(exc):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == _SQLITE_CANTOPEN and no_room(root)


def _copy_instead(root: Path, path: Path, refused: sqlite3.DatabaseError) -> Index:
    """The index at `path` may be sound but the disk refuses to write it (a full disk: even
    opening it writes its shared-memory file). Reads go on as on a read-only store, from a
    private copy brought up to date from the files (docs/reliability.md, "A full disk");
    `refused` is raised when the copy cannot be made either (the temporary folder on the
    same full disk). The copy is never taken for the store's index: a change probe is not
    armed by it (its identity is another file's), and a watcher never uses one."""
    try:
        return _private_copy(root, path)
    except (OSError, sqlite3.DatabaseError):
        raise refused from None


def remove_index_files(path: Path) -> None:
    """Delete the index (it is derived). Something else in its place (a folder) is not ours
    to delete: say so instead."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        target = Path(f"{path}{suffix}")
        try:
            target.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            what = "is a folder, not an index" if target.is_dir() else exc.strerror
            raise MemctlError(f"{target} {what}; move it away and run the command again "
                              f"(the index is rebuilt from the files)") from exc


# A connection to one index file opened ahead of the one search this process will answer
# (`open_ahead`), with the file's (device, inode) then; `open_index` takes it for that file.
_opened_ahead: tuple[sqlite3.Connection, tuple[int, int]] | None = None


def open_ahead(store: StoreLike) -> None:
    """Open the store's index now, and read its schema and the full-text tables' settings,
    for the next `open_index` of this process: in a worker of the watcher's search server,
    forked ahead of the search it will answer, this is done while it waits (a fresh
    connection's first query costs ~3 ms more than the next, and opening it ~2 ms: docs/watch.md,
    bench/bench_scale.py). Nothing is created: a store without an index, or one this process
    cannot write, is left to `open_index`. No statement is left open, so no read
    transaction: the search sees what is committed when it runs, as with a connection opened
    then. `open_index` takes the connection only for the file it was opened on."""
    global _opened_ahead
    try:
        path = state_path(root_of(store), INDEX_FILE)
    except MemctlError:
        return  # a `.memctl` that is a link: the search says so
    identity = path_identity(path)
    if identity is None or not _writable(path):
        return
    conn = None
    try:
        conn = _connect(path)
        for statement in ("SELECT count(*) FROM sqlite_master",
                          "SELECT rowid FROM fts WHERE fts MATCH '\"memctl\"' LIMIT 1",
                          "SELECT rowid FROM fts_pairs WHERE fts_pairs MATCH '\"memctl\"' LIMIT 1",
                          "SELECT rowid FROM docs LIMIT 1"):
            conn.execute(statement).fetchall()
    except sqlite3.Error:
        if conn is not None:
            conn.close()
        return  # an index to make or repair: open_index does it, in the search
    if path_identity(path) != identity:
        conn.close()
        return
    if _opened_ahead is not None:
        _opened_ahead[0].close()
    _opened_ahead = (conn, identity)


def _take_opened_ahead(path: Path) -> sqlite3.Connection | None:
    """The connection `open_ahead` opened, if it is on the file at `path` now."""
    global _opened_ahead
    if _opened_ahead is None:
        return None
    (conn, identity), _opened_ahead = _opened_ahead, None
    if path_identity(path) == identity:
        return conn
    conn.close()  # another file there now (removed, rebuilt elsewhere): not this one
    return None


def open_index(store: StoreLike, *, replace_newer: bool = False,
               copy_when_refused: bool = False) -> Index:
    """Open the index, creating it or rebuilding it when it is missing, corrupt or of another
    schema or tokenizer version (one of a newer memctl only with `replace_newer`:
    `Index._prepare`). The caller still has to `refresh()` (see `ensure_fresh`).
    `copy_when_refused`: where the disk refuses the index (full, failing), a private copy
    (`_copy_instead`), for a command that only needs an index current for its own answer."""
    root = root_of(store)
    path = state_path(root, INDEX_FILE)
    if not _writable(path):
        return _private_copy(root, path)
    ahead = _take_opened_ahead(path)
    make_state_folder(path.parent)
    busy_until = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    attempt = 0
    while True:
        conn = None
        try:
            conn, ahead = ahead or _connect(path), None
            index = Index(root, conn, path)
            try:
                index._prepare(replace_newer=replace_newer)
            except MemctlError:
                conn.close()
                raise
            return index
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                # Two processes opening a new index at once: switching it to WAL takes a
                # lock SQLite does not wait for (its busy handler is not asked), so the
                # loser is told "locked" at once. Look again shortly; only a holder that
                # keeps it past the busy timeout is an error (tests/test_mcp_watch.py).
                if time.monotonic() < busy_until:
                    time.sleep(0.02)
                    continue
                raise MemctlError(
                    f"the index {path} is busy (another memctl holds it); try again"
                ) from exc
            if _open_refused(root, exc):
                # A full disk, a disk that fails, a file it may not write: the index may be
                # sound. Deleting it (as if damaged) lost a good index to a full disk, made
                # every read fail until the disk had room again, and cost a rebuild then.
                if copy_when_refused:
                    return _copy_instead(root, path, exc)
                raise
            if attempt:
                raise MemctlError(f"cannot create the index {path}: {exc}") from exc
            attempt += 1
            # Corrupt or not a database: it is derived, so start over from the files.
            remove_index_files(path)


def heals_damaged_index(read: Callable[Concatenate[Any, _Params], _Result]
                        ) -> Callable[Concatenate[Any, _Params], _Result]:
    """`read(store, ...)`, a command that only reads the index (so it can run again), made to
    heal a damaged one: an index file cut short by another program while a watcher holds its
    WAL opens as if whole (SQLite sizes it by the WAL), the freshness check trusts the
    watcher, and the command met the damage in its own queries; `reindex` too, in its first
    statement (tests/test_watch.py). The index is derived: it is removed, and `read` runs
    once more on one made anew from the files. A second failure is the command's (one line:
    memctl.core.errors.machine_error)."""

    @functools.wraps(read)
    def healing(store: Any, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        try:
            return read(store, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            # The access counters are SQLite too, read and written by the same commands: a
            # damaged counters file is theirs to report, and leaves the index alone. The
            # index is not asked itself: SQLite's `quick_check` reads no FTS5 data (not
            # before 3.44), where damage stops a query as well (tests/test_reliability.py).
            if not sqlite_damaged(exc) or counters_damaged(store):
                raise
        remove_index_files(index_path(store))
        return read(store, *args, **kwargs)

    return healing


def ensure_fresh(store: StoreLike, paths: list[str] | None = None) -> Index:
    """The index, brought up to date with the files. Every read command calls this first.

    `paths` (store-relative folders or files): only what is under them must be current, and
    only they are walked (the write-time checks of `add` read one project and `global`: a
    tenth of a 10k store's stat calls, bench/bench_write.py). A live `memctl watch` keeps the
    index fresh by itself, so the walk is skipped then; and when this process's change probe
    saw no change since the index was last made sure of, so is the watcher's round trip."""
    probe, ticket = _probe_ticket(store)
    index = open_index(store, copy_when_refused=True)
    if _still_fresh(store, index, probe, ticket):
        return index
    if paths is not None:
        # A project's folder stands for the project's entries, some of which may lie in
        # another folder: their files are made sure of too.
        try:
            paths = [*paths, *index.held_elsewhere(paths)]
        except sqlite3.DatabaseError:
            paths = None  # a damaged index: the whole walk rebuilds it (`_walk`)
    index = _freshen(store, index, paths)
    if paths is None:
        _settle(probe, ticket, index)
    return index


def _freshen(store: StoreLike, index: Index, paths: list[str] | None = None) -> Index:
    if _watcher_keeps_it_fresh(store, index, paths):
        return index
    return _walk(store, index, paths)


def _probe_ticket(store: StoreLike) -> tuple[ChangeProbe | None, Ticket | None]:
    """This process's change probe of the store (`memctl mcp`'s) and what it finds now: asked
    before the index is made sure of in any other way (docs/watch.md, "Skipping the round
    trip"). (None, None) without one, or with MEMCTL_ALWAYS_WALK=1."""
    probe = change_probe(store)
    if probe is None or os.environ.get("MEMCTL_ALWAYS_WALK") == "1":
        return None, None
    try:
        return probe, probe.check(index_path(store))
    except Exception:  # noqa: BLE001 - a probe that fails says nothing: the usual way runs
        return None, None


def _still_fresh(store: StoreLike, index: Index, probe: ChangeProbe | None,
                 ticket: Ticket | None) -> bool:
    """True when the probe saw nothing change since it was armed with this very index file
    (the one just opened), and a watcher keeps the store: what inotify cannot see (a write
    from another machine to a network file system) is then missed no more often than through
    the watcher's cookies, which rest on inotify too."""
    if probe is None or ticket is None or not ticket.quiet:
        return False
    try:
        return probe.vouches(ticket, index.path) and (
            answered_in_process(store) or watcher_is_live(store))
    except Exception:  # noqa: BLE001 - a probe that fails says nothing: the usual way runs
        return False


def _settle(probe: ChangeProbe | None, ticket: Ticket | None, index: Index) -> None:
    """The whole index was made sure of (the watcher answered, or the walk): arm the probe."""
    if probe is not None and ticket is not None:
        try:
            probe.settle(ticket, index.path)
        except Exception:  # noqa: BLE001 - an unarmed probe only costs the next call its round trip
            pass


def _walk(store: StoreLike, index: Index, paths: list[str] | None = None) -> Index:
    """The index brought in step with the files by its own walk (a corrupt one rebuilt)."""
    try:
        index.last_refresh = index.refresh(paths)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
            raise MemctlError("the index is busy (another memctl is updating it); try again") \
                from exc
        if sqlite_refused(exc):
            # A full disk (SQLITE_FULL once the WAL cannot grow), a disk that fails: the index
            # is sound. Removing it as if corrupt lost it to a full disk (a search with a
            # watcher or an MCP server running, whose shared-memory file was already there).
            # The walk goes on in a private copy (once: a copy refused too is the error).
            index.close()
            if index.path != index_path(index.root):
                raise
            index = _copy_instead(index.root, index.path, exc)
            index.last_refresh = index.refresh(paths)
            return index
        try:  # a newer memctl made it anew since it was opened: its own, not corrupt
            _refuse_newer(index._versions(), index._wanted_versions())
        except sqlite3.DatabaseError:
            pass  # the versions cannot be read either: corrupt
        finally:
            index.close()
        remove_index_files(index.path)
        index = open_index(store)
        index.last_refresh = index.refresh(paths)
    return index


def find_entry(store: StoreLike, id_or_prefix: str,
               kinds: tuple[str, ...] = ("note", "episode"),
               then: Callable[[Index, dict[str, Any]], object] | None = None) -> dict[str, Any]:
    """`Index.get` on an index that is current for the answer. An entry asked for by its
    whole id is answered from its own file when that file is as indexed (or once it is
    indexed again): `memctl show` reads one file instead of walking the store (10k notes:
    one stat instead of 10k, bench/bench_write.py). Anything else (a prefix, an id the
    index does not know or knows twice, a file gone) after `ensure_fresh`. `then` is run on
    the index and the entry before the index is closed (`show` reads the note's
    corrections there rather than opening the index again)."""
    wanted = id_or_prefix.strip()
    index = open_index(store, copy_when_refused=True)
    try:
        try:
            found = index.current_entry(wanted, kinds)
        except sqlite3.DatabaseError:
            found = None  # a broken index: ensure_fresh rebuilds it
        if found is None:
            index = _freshen(store, index)
            found = index.get(wanted, kinds)
        if then is not None:
            then(index, found)
        return found
    finally:
        index.close()


def fresh_during(store: StoreLike, work: Callable[[Index], Any]) -> tuple[Index, Any]:
    """(`ensure_fresh(store)`, `work` run on it), with a live watcher's round trip (its
    cookies) overlapping `work`: the question is asked, `work` runs while the watcher
    catches up, then its answer is awaited. If the index changed meanwhile (SQLite's
    `data_version`: another connection committed, as the watcher's pass would), `work`
    runs again on the index now current; so the result always reflects every change made
    before the call, as with `ensure_fresh` first. Without a live watcher, or when it does
    not answer in time: the walk, then `work` (the MCP server's search: the ~5 ms of the
    round trip mostly hidden behind the query, bench/bench_mcp.py). With this process's change
    probe finding nothing changed since the index was last made sure of, `work` alone."""
    probe, ticket = _probe_ticket(store)
    index = open_index(store, copy_when_refused=True)
    if _still_fresh(store, index, probe, ticket):
        # Nothing changed since the index was made sure of.
        return index, index.consistently(work)
    question = _ask_watcher(store, index)
    if question is None:
        if walking_ahead(str(index.root)):
            return _work_while_walking(store, index, probe, ticket, work)
        index = _walk(store, index)
        _settle(probe, ticket, index)
        return index, index.consistently(work)
    try:
        before = _data_version(index)
        result = index.consistently(work)
        answered = question.answered()
    finally:
        question.close()
    if not answered:
        index = _walk(store, index)
        _settle(probe, ticket, index)
        return index, index.consistently(work)
    _settle(probe, ticket, index)
    if _data_version(index) != before:
        result = index.consistently(work)
    return index, result


def _work_while_walking(store: StoreLike, index: Index, probe: ChangeProbe | None,
                        ticket: Ticket | None, work: Callable[[Index], Any]
                        ) -> tuple[Index, Any]:
    """`work` run first, while this command's helper processes walk the store
    (memctl.disk.filescan.walk_ahead), then the walk. The result stands when the walk
    changed nothing in the index (this connection's `total_changes`) and no other
    connection committed meanwhile (`data_version`); else `work` runs again on the index now
    current. So it reflects every change made before the command, as with the walk first,
    and on an unchanged store the query costs no time of its own: it runs while the
    helpers walk (docs/search.md)."""
    version, changes = _data_version(index), index.conn.total_changes
    try:
        result, done = index.consistently(work), True
    except Exception:  # noqa: BLE001 - a broken index, or an answer the walk may change:
        result, done = None, False  # `work` runs again once the index is current
    walked = _walk(store, index)
    _settle(probe, ticket, walked)
    if not done or walked is not index or walked.conn.total_changes != changes \
            or _data_version(walked) != version:
        result = walked.consistently(work)
    return walked, result


def _data_version(index: Index) -> int:
    return index.conn.execute("PRAGMA data_version").fetchone()[0]


def _watcher_keeps_it_fresh(store: StoreLike, index: Index,
                            paths: list[str] | None = None) -> bool:
    """The hook for `memctl watch`: a live watcher that says it has indexed everything
    written before now (its cookies, memctl.disk.watchstate.ask_watcher) spares the
    walk; asked about the project folders of `paths` alone when given. MEMCTL_ALWAYS_WALK=1
    turns it off (tests, paranoia)."""
    question = _ask_watcher(store, index, paths)
    if question is None:
        return False
    try:
        return question.answered()
    finally:
        question.close()


def _ask_watcher(store: StoreLike, index: Index,
                 paths: list[str] | None = None) -> WatcherQuestion | None:
    """The question to a live watcher about the project folders of `paths` (all when
    None), or None when there is none to ask (or it cannot be trusted: see below)."""
    if os.environ.get("MEMCTL_ALWAYS_WALK") == "1" or index.path != index_path(store):
        return None  # (a private copy: only this process brings it up to date)
    try:
        status = read_status(store)
        if status is None or not status.live:
            return None
        on_disk = project_folders(str(index.root))
        # The project folders the index holds files of, the first part of each folder path
        # (in SQLite: a search on a fresh index, 10k notes, read ~480 rows here).
        indexed = {top for (top,) in index.conn.execute(
            "SELECT DISTINCT substr(path, 1, instr(path || '/', '/') - 1) FROM folders")} - {""}
        relative = None if paths is None else index._relative(paths)
        if relative is not None:
            asked = {path.split("/", 1)[0] for path in relative}
            on_disk, indexed = on_disk & asked, indexed & asked
        # A project folder gone or renamed is seen only by the watch of the store folder,
        # which no cookie covers; an empty index may be one just made beside the watcher's.
        if not indexed.issubset(on_disk) or (on_disk and not indexed and relative is None):
            return None
        if status.extra.get("events") == ORDERED:
            # Its events of every folder come in one order (memctl.watch.observer): one
            # cookie at the store's top follows every change made before it, anywhere.
            return ask_watcher(index.root, [""])
        return ask_watcher(index.root, sorted(on_disk))
    except Exception:  # noqa: BLE001 - a broken heartbeat must never block a read
        return None


def _holds(path: Path, size: int, digest: str | None) -> bool:
    """Whether the file at `path` holds `size` bytes hashing to `digest` (never following a
    link: the index reads files as memctl.index.docs.read_file does)."""
    if not digest:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        data = os.read(fd, size + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    return len(data) == size and content_digest(data) == digest


def _kind_of(relpath: str) -> tuple[str, str] | None:
    """`store.classify`, for indexed kinds only; files two folders deep or more are
    classified once per folder (100k files: ~1 s less of a rebuild)."""
    folder, _, name = relpath.rpartition("/")
    if "/" in folder and is_memory_name(name):
        return _kind_of_folder(folder)
    return _indexed_kind(relpath)


@functools.lru_cache(maxsize=4096)
def _kind_of_folder(folder: str) -> tuple[str, str] | None:
    return _indexed_kind(f"{folder}/any.md")


def _indexed_kind(relpath: str) -> tuple[str, str] | None:
    kind = classify(relpath)
    if kind is None or kind[0] not in INDEXED_KINDS:
        return None
    return kind


class NewerIndexError(MemctlError):
    """The index was made by a newer memctl (`Index._prepare`): left as it is."""


def _there_unlinked(root: str, path: str) -> bool:
    """Whether the file at `path` is there, reached through no symbolic link: a project folder
    (or a folder in it) replaced by a link to where it went is no more walked than a link
    made anew (docs/security.md), and its notes were read through it again, one by one, as
    "there again" after every walk (tests/test_index.py)."""
    current = root
    for part in path.split("/")[:-1]:
        current = os.path.join(current, part)
        try:
            if not stat_module.S_ISDIR(os.lstat(current).st_mode):
                return False
        except (OSError, ValueError):  # (a name the file system's encoding cannot hold)
            return False
    return os.path.lexists(os.path.join(current, path.rsplit("/", 1)[-1]))


class IndexReplacedError(MemctlError):
    """The index was made anew, for another version, by another memctl since this process
    opened it: a process that keeps it open (a watcher) opens it again."""


def _refuse_newer(found: dict[str, str], wanted: dict[str, str]) -> None:
    """Raise NewerIndexError when `found` (the index's versions) is newer than `wanted` in
    some part and older in none: the index of a newer memctl. Versions that are no numbers (a
    damaged table), or a key one side lacks, are no reason to refuse: the index is made anew,
    as for any other version. (So a later memctl that adds a key to `meta` must also bump
    `schema`, which every older one reads.)"""
    try:
        newer = [key for key in wanted if int(found[key]) > int(wanted[key])]
        older = [key for key in wanted if int(found[key]) < int(wanted[key])]
    except (KeyError, ValueError):
        return
    if newer and not older:
        said = "; ".join(f"{key} {found[key]}, this memctl's {wanted[key]}" for key in newer)
        raise NewerIndexError(
            f"the index was made by a newer memctl ({said}): this one is older. Upgrade it "
            f"if it is another installation; a process started before an upgrade (a "
            f"`memctl mcp`) must be started again. If you went back to this version on "
            f"purpose, run {cmd('reindex')}")


class Index:
    def __init__(self, root: Path, conn: sqlite3.Connection, path: Path) -> None:
        self.root = root
        self.conn = conn
        self.path = path
        # The store folder this index is of: a walk of another folder at its path (the store
        # moved away, or replaced) is never taken for the store's files (`_still_the_store`).
        self.folder = path_identity(root)
        self.last_refresh: RefreshStats | None = None
        # (project, word) of the entries removed in the pass under way (fuzzy vocabulary).
        self._words_gone: Counter[tuple[str, str]] = Counter()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- schema ---------------------------------------------------------------------------

    def _versions(self) -> dict[str, str]:
        try:
            return dict(self.conn.execute("SELECT key, value FROM meta"))
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise

    def _wanted_versions(self) -> dict[str, str]:
        return {"schema": str(SCHEMA_VERSION), "tokenizer": str(TOKENIZER_VERSION),
                "extract": str(EXTRACT_VERSION)}

    def _prepare(self, *, replace_newer: bool = False) -> None:
        """The tables of this version, made anew when the index is of another version. An
        index a newer memctl made is refused unless `replace_newer` (`memctl reindex`, or a
        private copy): a process that still runs the code from before an upgrade (a
        long-running `memctl mcp`) would make it again for its own version, and every command
        of the new version would then make it again for theirs, over and over
        (docs/search.md, "The index")."""
        wanted = self._wanted_versions()
        found = self._versions()
        if found == wanted:
            return
        if not replace_newer:
            # Before the write lock, which the newer memctl may hold for long (its reindex):
            # an older process says what it is at once, not that the index is busy.
            _refuse_newer(found, wanted)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            current = self._versions()  # another process may have done it meanwhile
            if current != wanted and not replace_newer:
                _refuse_newer(current, wanted)
            if current != wanted:
                for table in _TABLES:
                    self.conn.execute(f"DROP TABLE IF EXISTS {table}")
                # executescript would commit early; statements one by one stay in the
                # transaction, so a crash never leaves half a schema.
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                self.conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                                      wanted.items())
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _still_this_version(self, *, newer_too: bool = False) -> None:
        """In a write transaction: the index is still of this version. A process that keeps
        it open (a watcher, for days) would otherwise write rows of its version into an
        index another memctl made anew for its own (tests/test_watch.py). `newer_too`: a
        rebuild (`memctl reindex`), which takes a newer memctl's index over, is told only to
        run again."""
        wanted = self._wanted_versions()
        found = self._versions()
        if found != wanted:
            if not newer_too:
                _refuse_newer(found, wanted)
            raise IndexReplacedError(f"the index {self.path} was made anew by another memctl "
                                     f"while this one ran; run the command again")

    def consistently(self, work: Callable[[Index], Any]) -> Any:
        """`work(self)` in one read transaction: every query it makes sees the index as it
        was at its first. A search reads which entries have each word in one statement and
        ranks them in the next; a note edited meanwhile by another process is indexed again
        under a new rowid, and would be missed between the two
        (tests/test_concurrency.py)."""
        conn = self.conn
        if conn.in_transaction:
            return work(self)
        conn.execute("BEGIN")
        try:
            return work(self)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")  # nothing of the index was written: only TEMP tables

    # --- keeping in step with the files ---------------------------------------------------

    def refresh(self, paths: Iterable[str] | None = None,
                progress: Callable[[int, int], None] | None = None) -> RefreshStats:
        """Bring the index in step with the files: all of them (None) or only `paths`
        (store-relative; a folder stands for everything under it)."""
        started = time.perf_counter()
        stats = RefreshStats()
        if paths is not None:
            paths = self._relative(paths)
        if paths is None:
            known, current, total = self._differing_keys()
            changed = current - known
            gone = known - current
            candidates = [key_path(key) for key in changed]
            # A changed file is in both sets (new stamp, old stamp): not removed.
            removed = sorted({key_path(key) for key in gone} - set(candidates))
            stats.unchanged = total - len(changed)
        else:
            found, known_stats, removed, same, linked = self._stat_paths(paths)
            candidates = [path for path, st in found.items() if known_stats.get(path) != st]
            if linked and candidates:
                # A file of several names (hard links): a write through one changes them
                # all, and the watcher hears of one. The whole walk finds the others (their
                # folder's digest changed with the shared stamp): tests/test_watch.py.
                return self.refresh(None, progress)
            stats.unchanged = same + len(found) - len(candidates)
        if candidates and len(candidates) <= _RACY_CHECK_MAX:
            unchanged = self._racy_unchanged(candidates)
            candidates = [path for path in candidates if path not in unchanged]
            stats.unchanged += len(unchanged)
            self._record_stamps(unchanged)
        if (candidates or removed) and not self._done_by_another(candidates, removed):
            try:
                self._apply(sorted(candidates), removed, stats, progress)
            except sqlite3.OperationalError as exc:
                # Waited for the write lock in vain: those holding it may have indexed what
                # this walk found (many searches after the same writes); else it is busy.
                if not _is_busy(exc) or not self._done_by_another(candidates, removed):
                    raise
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        return stats

    def _done_by_another(self, candidates: list[str], removed: list[str]) -> bool:
        """Whether the index already holds every candidate as it is on disk now, and none of
        the removed files: another process (the watcher, another command) indexed them since
        this walk read the index. Then there is nothing to write, and no write lock to wait
        for: 48 searches at once, each just after a write, spent their time queueing for it to
        write what one of them had written already (tests/test_concurrency.py). Only for a
        few files; a pass over many takes the lock as usual."""
        if len(candidates) + len(removed) > _RACY_CHECK_MAX:
            return False
        conn, racy = self.conn, []
        for path in removed:
            if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone():
                return False
        for path in candidates:
            row = conn.execute(f"SELECT {STAMP_COLUMNS} FROM files WHERE path = ?",
                               (path,)).fetchone()
            if _kind_of(path) is None:
                if row is not None:
                    return False
                continue
            try:
                info = os.lstat(self.root / path)
            except OSError:
                return False
            if row is None or not stat_module.S_ISREG(info.st_mode):
                return False
            if row[0] == 0:
                racy.append(path)
            elif file_stamp(info) != tuple(row):
                return False
        return not racy or len(self._racy_unchanged(racy)) == len(racy)

    def _racy_unchanged(self, candidates: list[str]) -> dict[str, tuple[Stamp, str] | None]:
        """The candidates indexed without their mtime (written less than RACY_NS before they
        were read: racily clean) that still hold the bytes indexed: each with its stamp now
        and the hash it holds, to record (`_record_stamps`), or None while it is still that
        recent.
        Indexing them again would hash them, find them the same and record them once more:
        nothing would change but the stamp. So they are checked by their hash alone, without
        the parser (`add` right after `add`, `show`, and the command after those, seconds
        later: bench/bench_write.py).

        The stamp is taken before the bytes are read: a write after it gives the file
        another stamp (its mtime, RACY_NS later at least), which the next walk sees; a write
        before the read gives other bytes, which go to the parser."""
        unchanged: dict[str, tuple[Stamp, str] | None] = {}
        now = time.time_ns()
        for path in candidates:
            row = self.conn.execute("SELECT mtime_ns, size, hash FROM files WHERE path = ?",
                                    (path,)).fetchone()
            if row is None or row[0] != 0:
                continue
            try:
                info = os.lstat(self.root / path)
            except OSError:
                continue
            if stat_module.S_ISREG(info.st_mode) and info.st_size == row[1] \
                    and _holds(self.root / path, row[1], row[2]):
                stamp = file_stamp(info)
                unchanged[path] = None if _racy(stamp, now) else (stamp, row[2])
        return unchanged

    def _record_stamps(self, unchanged: dict[str, tuple[Stamp, str] | None]) -> None:
        """Record the stamps `_racy_unchanged` found old enough to trust, each only where the
        index still holds the row it compared (no mtime, the same size and hash): the next
        walk then finds these files as indexed. Only when the write lock is free at once: an
        index another process writes (or one not writable) leaves them to the next refresh,
        which hashes them again, rather than make this one wait for the lock."""
        settled = []
        for path, found in unchanged.items():
            if found is not None:
                (mtime_ns, ctime_ns, size), digest = found
                settled.append((mtime_ns, ctime_ns, path, size, digest))
        if not settled:
            return
        conn = self.conn
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return  # busy, read-only, or a transaction open already (none is: never ours)
        finally:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        try:
            self._still_this_version()
            conn.executemany("UPDATE files SET mtime_ns = ?, ctime_ns = ? WHERE path = ?"
                             " AND mtime_ns = 0 AND size = ? AND hash = ?", settled)
            self._store_folder_digests(folder_of(row[2]) for row in settled)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def holds_as_indexed(self, path: str) -> bool:
        """Whether the file at `path` holds the bytes the index read from it, and they parsed:
        what the index says of it is what the file says now."""
        row = self.conn.execute("SELECT size, hash, error FROM files WHERE path = ?",
                                (path,)).fetchone()
        return row is not None and row[2] is None and _holds(self.root / path, row[0], row[1])

    def held_elsewhere(self, paths: Iterable[str]) -> list[str]:
        """The files of the entries of each project whose folder is named in `paths` that lie
        outside that folder. A note's project is its front matter's `project:`, whatever
        folder holds it (a note moved by hand into another project's folder stays its
        project's), so a check of a project's notes must look at these files too (`add`'s
        write-time checks: docs/search.md, "Why a search of one project walks every project
        too")."""
        relative = self._relative(paths) or []
        found: list[str] = []
        for project in dict.fromkeys(path for path in relative if "/" not in path):
            # ('0' sorts right after '/'.)
            found.extend(path for (path,) in self.conn.execute(
                "SELECT path FROM docs WHERE project = ?1"
                " AND path < ?2 UNION ALL SELECT path FROM docs"
                " WHERE project = ?1 AND path >= ?3", (project, project + "/", project + "0")))
        return list(dict.fromkeys(found))

    def _relative(self, paths: Iterable[str]) -> list[str] | None:
        """Store-relative `/` paths; None (walk everything) when the store itself is named."""
        import posixpath

        result = []
        root = str(self.root.absolute())
        for raw in paths:
            text = os.fspath(raw)
            if os.path.isabs(text):
                text = os.path.relpath(text, root)
            rel = posixpath.normpath(text.replace(os.sep, "/")).strip("/")
            if rel in ("", "."):
                return None
            if rel == ".." or rel.startswith("../"):
                continue
            result.append(rel)
        return result

    def _differing_keys(self) -> tuple[set[str], set[str], int]:
        """(indexed keys, keys on disk) of the folders whose digest differs from the one the
        index stored, and the number of files on disk (see memctl.disk.filescan)."""
        # The walk `memctl search` started ahead, if any (memctl.disk.filescan.walk_ahead).
        on_disk = scan_folders(str(self.root))
        self._still_the_store()
        stored = dict(self.conn.execute("SELECT path, digest FROM folders"))
        differing = [folder for folder, digest in on_disk.digests.items()
                     if stored.get(folder) != digest]
        differing.extend(folder for folder in stored if folder not in on_disk.digests)
        known: set[str] = set()
        current: set[str] = set()
        if len(differing) > _FOLDER_BY_FOLDER_MAX:
            known = self._known_keys()
            for folder in on_disk.digests:
                current.update(on_disk.keys(folder))
            return known, current, on_disk.files
        for folder in differing:
            known.update(stamp_key(path, stamp) for path, *stamp in
                         self.conn.execute(_IN_FOLDER_SQL, _in_folder(folder)))
            current.update(on_disk.keys(folder))
        return known, current, on_disk.files

    def _store_folder_digests(self, touched: Iterable[str] | None) -> None:
        """Record the digest of what is indexed in each touched folder (None: all of them),
        inside the transaction that changed them."""
        conn = self.conn
        if touched is None:
            conn.execute("DELETE FROM folders")
            by_folder: dict[str, list[tuple[str, int, int, int]]] = {}
            for row in conn.execute(f"SELECT path, {STAMP_COLUMNS} FROM files"):
                by_folder.setdefault(folder_of(row[0]), []).append(row)
            conn.executemany("INSERT INTO folders(path, digest) VALUES (?, ?)",
                             [(folder, indexed_digest(rows)) for folder, rows in by_folder.items()])
            return
        for folder in set(touched):
            rows = conn.execute(_IN_FOLDER_SQL, _in_folder(folder)).fetchall()
            if rows:
                conn.execute("INSERT OR REPLACE INTO folders(path, digest) VALUES (?, ?)",
                             (folder, indexed_digest(rows)))
            else:
                conn.execute("DELETE FROM folders WHERE path = ?", (folder,))

    def _known_keys(self) -> set[str]:
        # One string for the whole table: splitting it is done in C, unlike 10k row tuples.
        # (A path holding a newline splits wrongly; it is then merely re-checked each time.)
        text = self.conn.execute(
            f"SELECT group_concat({STAMP_KEY_SQL}, char(10)) FROM files").fetchone()[0]
        return set(text.split("\n")) if text else set()

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> RefreshStats:
        """Forget everything and index every file again (`memctl reindex`), in one
        transaction: readers see the old index until the new one is complete."""
        started = time.perf_counter()
        stats = RefreshStats()
        # A bigger page cache while the whole index is written (100k notes: ~20 % faster);
        # the usual 2 MB again afterwards, so memory stays low (100k: peak RSS < 200 MB).
        # No fsync while rebuilding: the index is derived from the files, a killed process
        # loses nothing (the OS has the writes) and only a power cut right then could leave
        # an index to rebuild again.
        self.conn.execute(f"PRAGMA cache_size=-{REBUILD_CACHE_KB}")
        self.conn.execute("PRAGMA synchronous=OFF")
        try:
            self._apply([], [], stats, progress, clear=True)
        finally:
            self.conn.execute("PRAGMA cache_size=-2000")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        # No 'optimize' merge here: FTS5's own incremental merging keeps queries fast, and a
        # full merge of 100k notes would add seconds to every reindex.
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return stats

    def _stat_paths(self, paths: Iterable[str]) -> tuple[
            dict[str, Stamp], dict[str, Stamp], list[str], int, bool]:
        """(found now, indexed before, removed, how many files were found as indexed,
        whether a named file has other names too) for the named paths and what is under
        them. In a folder, only the sub-folders whose
        digest differs from the one the index keeps are compared file by file (as the
        whole store's walk does, memctl.disk.filescan): `add` walks a project and `global`
        (10k notes: ~1,000 files, a few ms less, bench/bench_write.py)."""
        current: dict[str, Stamp] = {}
        known: dict[str, Stamp] = {}
        same = 0
        linked = False
        for rel in paths:
            full = self.root / rel
            try:
                info = os.lstat(full)
            except OSError:
                info = None
            if info is not None and stat_module.S_ISDIR(info.st_mode):
                # A file indexed at this very path (a folder now) is gone.
                for path, *stamp in self.conn.execute(
                        f"SELECT path, {STAMP_COLUMNS} FROM files WHERE path = ?", (rel,)):
                    known[path] = tuple(stamp)
                same += self._stat_folder(rel, str(full), current, known)
            else:
                # Indexed entries at this path or below it ('0' sorts right after '/').
                for path, *stamp in self.conn.execute(
                        f"SELECT path, {STAMP_COLUMNS} FROM files WHERE path = ?"
                        " OR (path > ? AND path < ?)", (rel, rel + "/", rel + "0")):
                    known[path] = tuple(stamp)
                if info is not None and stat_module.S_ISREG(info.st_mode) and _kind_of(rel):
                    current[rel] = file_stamp(info)
                    linked = linked or info.st_nlink > 1
        # Every entry of `known` is at or under one of `paths`: what is not on disk is gone
        # (once, after the loop: a pass over `known` per path made removing 8,000 notes
        # under a watcher take 6 s, quadratic).
        removed = {path for path in known if path not in current}
        self._still_the_store()
        return current, known, sorted(removed), same, linked

    def _still_the_store(self) -> None:
        """After a walk: StoreGoneError unless the store's folder is still at its path. A
        walk of a folder gone meanwhile finds no file, and one of another folder put in its
        place finds that folder's: never "every note was deleted", nor another's notes
        added to this index (tests/test_watch.py)."""
        if self.folder is None or path_identity(self.root) != self.folder:
            raise StoreGoneError(self.root)

    def _stat_folder(self, rel: str, full: str, current: dict[str, Stamp],
                     known: dict[str, Stamp]) -> int:
        """Adds to `current` and `known` the files of the folders under `rel` whose digest
        differs from the index's (or that only one of them has); returns the number of
        files in the others, which are exactly as indexed."""
        on_disk = scan_entries(str(self.root), folders=[(rel + "/", full)])
        stored = dict(self.conn.execute(
            "SELECT path, digest FROM folders WHERE path >= ? AND path < ?", (rel + "/", rel + "0")))
        same = 0
        for folder, entries in on_disk.items():
            if stored.pop(folder, None) == entries_digest(entries):
                same += len(entries)
                continue
            self._indexed_in(folder, known)
            current.update(p for p in map(split_key, entry_keys(folder, entries))
                           if _kind_of(p[0]))
        for folder in stored:  # indexed, and no file the index covers there now
            self._indexed_in(folder, known)
        return same

    def _indexed_in(self, folder: str, known: dict[str, Stamp]) -> None:
        """Adds to `known` the files the index holds directly in `folder`."""
        for path, *stamp in self.conn.execute(_IN_FOLDER_SQL, _in_folder(folder)):
            known[path] = tuple(stamp)

    def _apply(self, candidates: list[str], removed: list[str], stats: RefreshStats,
               progress: Callable[[int, int], None] | None, clear: bool = False) -> None:
        conn = self.conn
        gone_ids: dict[str, str] = {}
        new_ids: list[str] = []
        # Lazy: the parser (YAML, the note model) is needed only when a file changed, and
        # `memctl search` on a fresh index must not pay for it (tests/test_layers.py). Imported
        # before the write lock is taken, not while other processes wait for it.
        from memctl.index.docs import Writer
        from memctl.index.workers import prepare_all

        # What the index holds is read inside the write transaction: another process may
        # have indexed the same files since our walk, and we must replace, never add twice.
        conn.execute("BEGIN IMMEDIATE")
        try:
            # (A rebuild too: its index was made for this version when it was opened, and a
            # newer memctl may have made it anew since.)
            self._still_this_version(newer_too=clear)
            # The walk read the disk before the index: a file written, and indexed by another
            # process (the watcher, a command), between the two looks removed. Under the lock,
            # a path that is there again is looked at as a changed one instead
            # (tests/test_concurrency.py).
            back = {path for path in removed if _there_unlinked(str(self.root), path)}
            if back:
                removed = [path for path in removed if path not in back]
                candidates = sorted({*candidates, *back})
            if clear:
                # Every file, read under the lock: one another process indexed after a walk
                # made before it would be dropped with the old index, and a watcher that
                # indexed it would not see it again (tests/test_concurrency.py).
                candidates = sorted(key_path(key) for key in scan_keys(str(self.root)))
                hashes: dict[str, str] = {}
            elif len(candidates) > 200:
                hashes = dict(conn.execute("SELECT path, hash FROM files"))
            else:  # a few files: do not read the whole table (100k rows) for them
                hashes = {}
                for path in candidates:
                    row = conn.execute("SELECT hash FROM files WHERE path = ?", (path,)).fetchone()
                    if row is not None:
                        hashes[path] = row[0]
            items = []
            for path in candidates:
                kind = _kind_of(path)
                if kind is not None:
                    items.append((path, kind[0], kind[1], hashes.get(path)))
                elif path in hashes:
                    removed.append(path)
            if clear:
                for name in _INDEXES:
                    conn.execute(f"DROP INDEX IF EXISTS {name}")
                for table in ("files", "docs", "doc_tags", "fuzzy_words"):
                    conn.execute(f"DELETE FROM {table}")
                for table in _NEAR_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                # Far faster than deleting every row of an FTS table that keeps its content.
                conn.execute("DROP TABLE fts")
                conn.execute(_FTS_SCHEMA)
                conn.execute("DROP TABLE fts_pairs")
                conn.execute(_PAIRS_SCHEMA)
            writer = Writer(conn)
            self._words_gone = Counter()
            for path in removed:
                gone_ids.update((doc_id, path) for doc_id in self._delete_docs(path))
                conn.execute("DELETE FROM files WHERE path = ?", (path,))
            done = 0
            for prepared in prepare_all(str(self.root), items):
                done += 1
                if progress is not None and (done % 250 == 0 or done == len(items)):
                    progress(done, len(items))
                self._store(prepared, prepared.path in hashes, writer, stats, gone_ids,
                            new_ids)
            writer.flush()
            # The fuzzy vocabulary follows the entries added and removed (index/fuzzy.py).
            writer.words.subtract(self._words_gone)
            count_words(conn, writer.words)
            if clear:
                for statement in _INDEXES.values():
                    conn.execute(statement)
            self._store_folder_digests(None if clear else
                                       map(folder_of, [*candidates, *removed]))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        gone = set(gone_ids)
        for doc_id in new_ids:
            (stats.updated if doc_id in gone else stats.added).append(doc_id)
        stats.removed.extend(sorted(gone - set(new_ids)))

    def _store(self, prepared: Prepared, known: bool, writer: Writer, stats: RefreshStats,
               gone_ids: dict[str, str], new_ids: list[str]) -> None:
        conn, path = self.conn, prepared.path
        if _racy((prepared.mtime_ns, prepared.ctime_ns, prepared.size), time.time_ns()):
            # Racily clean (as git calls it): a write in the same clock tick as our read would
            # keep this mtime and maybe this size (and a replacement, this ctime). Recording no
            # mtime makes the next refresh hash the file again, until it is old enough to
            # trust its stamp.
            prepared.mtime_ns = 0
        if prepared.outcome == "gone":  # vanished (or became a folder or a link) meanwhile
            if known:
                gone_ids.update((doc_id, path) for doc_id in self._delete_docs(path))
                conn.execute("DELETE FROM files WHERE path = ?", (path,))
            return
        row = (path, prepared.mtime_ns, prepared.ctime_ns, prepared.size, prepared.digest,
               prepared.kind)
        if prepared.outcome == "same":
            # (Only its stamp changed: a `chmod`, a hard link made or removed, a copy of the
            # same bytes. Its rows stay; the next walk finds it as indexed.)
            conn.execute("UPDATE files SET mtime_ns = ?, ctime_ns = ?, size = ? WHERE path = ?",
                         (prepared.mtime_ns, prepared.ctime_ns, prepared.size, path))
            stats.unchanged += 1
            return
        stats.files_changed += 1
        if prepared.outcome == "error":
            # The last good entry stays; the file's row remembers the problem.
            stats.errors.append((path, prepared.error_line, prepared.error))
            conn.execute(
                "INSERT OR REPLACE INTO files(path, mtime_ns, ctime_ns, size, hash, kind, error,"
                " error_line) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, prepared.error, prepared.error_line))
            return
        if known:
            writer.flush()
            for doc_id in self._delete_docs(path):
                gone_ids.setdefault(doc_id, path)
        for doc in prepared.rows:
            writer.add(doc)
            new_ids.append(doc[0])
        writer.files.append(row)

    def _delete_docs(self, path: str) -> list[str]:
        conn = self.conn
        rows = conn.execute("SELECT rowid, id, project, title, tags, subject, predicate FROM docs"
                            " WHERE path = ?", (path,)).fetchall()
        for rowid, _, project, title, tags, subject, predicate in rows:
            conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM fts_pairs WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM doc_tags WHERE doc = ?", (rowid,))
            self._words_gone.update((project, word) for word in vocabulary(
                [(title, tags, subject, predicate)]))
        conn.execute("DELETE FROM docs WHERE path = ?", (path,))
        return [row[1] for row in rows]

    # --- reading --------------------------------------------------------------------------

    def get(self, id_or_prefix: str, kinds: Iterable[str] = ("note", "episode")
            ) -> dict[str, Any]:
        """The note (or episode) with this id or unambiguous id prefix: its front matter
        fields and path. Unknown or ambiguous ids raise MemctlError naming the candidates."""
        kind_list = list(kinds)
        kind_sql = "d.kind IN (" + ", ".join("?" * len(kind_list)) + ")"
        wanted = id_or_prefix.strip()
        if not wanted:
            raise UsageError("an id is required")
        rows = self.conn.execute(f"SELECT d.id, d.path, d.meta FROM docs d"
                                 f" WHERE d.id = ? AND {kind_sql}",
                                 (wanted, *kind_list)).fetchall()
        if not rows:
            upper = wanted[:-1] + chr(ord(wanted[-1]) + 1)
            rows = self.conn.execute(
                "SELECT d.id, d.path, d.meta FROM docs d"
                f" WHERE d.id >= ? AND d.id < ? AND {kind_sql} ORDER BY d.id LIMIT 50",
                (wanted, upper, *kind_list)).fetchall()
        if not rows:
            raise UnknownIdError(
                f"no note with id {wanted!r}; {cmd('list')} shows ids")
        ids = sorted({row[0] for row in rows})
        if len(ids) > 1:
            shown = ", ".join(ids[:8]) + (" …" if len(ids) > 8 else "")
            raise MemctlError(f"id prefix {wanted!r} is ambiguous: {shown}; type more characters")
        if len(rows) > 1:
            paths = ", ".join(sorted(row[1] for row in rows))
            raise MemctlError(f"id {ids[0]!r} is in more than one file ({paths}); "
                              "give one of them a new id or delete the copy")
        return json.loads(rows[0][2])

    def current_entry(self, doc_id: str, kinds: Iterable[str]) -> dict[str, Any] | None:
        """The entry whose id is exactly `doc_id`, when its file is exactly as indexed (its
        file changed: indexed again first); None when the whole store must be looked at:
        no such id, two files with it, or its file gone or no longer holding it."""
        kind_list = list(kinds)
        sql = ("SELECT d.meta, d.path, f.mtime_ns, f.ctime_ns, f.size, f.hash FROM docs d"
               " JOIN files f ON f.path = d.path WHERE d.id = ? AND d.kind IN ("
               + ", ".join("?" * len(kind_list)) + ")")
        rows = self.conn.execute(sql, (doc_id, *kind_list)).fetchall()
        if len(rows) != 1:
            return None
        meta, path, mtime_ns, ctime_ns, size, digest = rows[0]
        try:
            info = os.lstat(self.root / path)
        except (OSError, UnicodeEncodeError):
            # (UnicodeEncodeError: a name indexed where names are read as UTF-8, looked up
            # where they are ASCII, `LC_ALL=C PYTHONUTF8=0`: no file this process can name.)
            return None
        if not stat_module.S_ISREG(info.st_mode):
            return None
        if file_stamp(info) == (mtime_ns, ctime_ns, size):
            return json.loads(meta)
        if mtime_ns == 0 and info.st_size == size and _holds(self.root / path, size, digest):
            # Indexed without its mtime (written too recently to trust its stamp: RACY_NS),
            # and its bytes are still the ones indexed: what indexing it again would find,
            # without the parser nor a write (`memctl show` right after `add`,
            # bench/bench_write.py). The stamp is recorded by the next walk.
            return json.loads(meta)
        # Changed since (or written too recently to trust its stamp: RACY_NS): index this
        # one file again; it must still hold the id.
        self.refresh([path])
        rows = self.conn.execute(sql, (doc_id, *kind_list)).fetchall()
        if len(rows) != 1 or rows[0][1] != path:
            return None
        return json.loads(rows[0][0])

    def list_notes(self, *, projects: Iterable[str] | None = None, types: Iterable[str] = (),
                   tags: Iterable[str] = (), status: str | None = None,
                   since: Any = None, include_stale: bool = False,
                   kinds: Iterable[str] = ("note",), limit: int | None = None,
                   order: str = "updated", subjects: Iterable[str] = (),
                   predicates: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Entries matching every filter given, newest `updated` first (front matter + path).

        Without `include_stale` (and without an explicit `status`) superseded, archived and
        expired notes are left out; with `status` only that status is shown."""
        where, params = scope_sql(
            projects=None if projects is None else list(projects), types=list(types),
            tags=list(tags), status=status, since=since, include_stale=include_stale,
            kinds=list(kinds), subjects=list(subjects), predicates=list(predicates))
        # `created` by time (SQLite reads ISO 8601 with `Z` or an offset, and a bare date),
        # not by its text: `10:00+09:00` is before `05:00Z`. A time it cannot read goes last.
        orders = {"updated": "d.updated_ts DESC, d.id",
                  "created": "julianday(d.created) DESC, d.created DESC, d.id",
                  "importance": "d.importance DESC, d.updated_ts DESC, d.id", "id": "d.id",
                  "path": "d.path"}
        if order not in orders:
            raise UsageError(f"invalid sort {quoted(order)}; choose from {', '.join(orders)}")
        sql = f"SELECT d.meta FROM docs d WHERE {where} ORDER BY {orders[order]}"
        if limit is not None:
            sql += f" LIMIT {min(int(limit), MAX_LIMIT)}"
        return [json.loads(row[0]) for row in self.conn.execute(sql, params)]

    def recall_candidates(self, scopes: list[str], max_notes: int, hit_ids: list[str],
                          now_ts: float, half_life_days: float) -> tuple[list[dict[str, Any]], int]:
        """The live notes recall may pick from, without loading every note of a big store: the
        best corrections, rules and notes by recall's base score (importance × a recency
        half-life, computed here in SQL as `memctl.memory.recall.base_score` does), plus the
        query's hits. Returns their front matter and the number of live notes in scope."""
        where, params = scope_sql(projects=scopes, kinds=["note"], now_ts=now_ts)
        scale = half_life_days * 86400 / math.log(2)
        score = "d.importance * (0.5 + 0.5 * exp(-max(0.0, ? - d.updated_ts) / ?))"
        live = self.conn.execute(f"SELECT count(*) FROM docs d WHERE {where}", params).fetchone()[0]
        found: dict[str, dict[str, Any]] = {}

        def fetch(extra: str, extra_params: list[Any], limit: int) -> None:
            sql = (f"SELECT d.meta FROM docs d WHERE {where}{extra} "
                   f"ORDER BY {score} DESC, d.id LIMIT {int(limit)}")
            for (meta,) in self.conn.execute(sql, [*params, *extra_params, now_ts, scale]):
                row = json.loads(meta)
                found.setdefault(str(row["id"]), row)

        if max_notes > 0:
            fetch(" AND d.type = ?", ["correction"], max_notes)
            fetch(" AND d.type = ?", ["rule"], max_notes)
            fetch("", [], max_notes * 3)
        if hit_ids:
            marks = ", ".join("?" * len(hit_ids))
            fetch(f" AND d.id IN ({marks})", list(hit_ids), len(hit_ids))
        return list(found.values()), live

    def unreadable_with_key(self, projects: Iterable[str], subject: str, predicate: str
                            ) -> list[str]:
        """The ids of the active notes of `projects` with this subject and predicate whose
        file does not parse now (the index serves their last good version): a write that
        supersedes the others cannot mark them, and says so (memctl.memory.notes)."""
        scopes = sorted(set(projects))
        marks = ", ".join("?" * len(scopes))
        return [row[0] for row in self.conn.execute(
            f"SELECT d.id FROM docs d JOIN files fl ON fl.path = d.path"
            f" WHERE fl.error IS NOT NULL AND d.kind = 'note' AND d.status = 'active'"
            f" AND d.subject_key = ? AND d.predicate_key = ? AND d.project IN ({marks})"
            f" ORDER BY d.id", [fact_key(subject), fact_key(predicate), *scopes])]

    def corrections_of(self, ids: Iterable[str], now_ts: float) -> dict[str, list[str]]:
        """The live corrections naming each of these notes in `corrects`, by corrected id
        (oldest first): recall marks a corrected note with them (docs/lifecycle.md)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, list[str]] = {}
        for start in range(0, len(wanted), 500):  # SQLite's limit on bound values
            chunk = wanted[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for corrected, correction in self.conn.execute(
                    f"SELECT d.corrects, d.id FROM docs d INDEXED BY docs_corrects"
                    f" WHERE d.corrects IS NOT NULL AND d.corrects IN ({marks})"
                    f" AND d.type = 'correction' AND d.status = 'active'"
                    f" AND (d.expires_ts IS NULL OR d.expires_ts > ?) ORDER BY d.id",
                    [*chunk, now_ts]):
                found.setdefault(corrected, []).append(correction)
        return found

    def paths_of(self, ids: Iterable[str], kinds: Iterable[str] = ("note", "archived")
                 ) -> dict[str, list[str]]:
        """The files holding each of these ids (exactly), by id: `sync` looks for notes
        alive beside their tombstone with it (docs/sync.md)."""
        wanted = list(dict.fromkeys(ids))
        kind_list = list(kinds)
        found: dict[str, list[str]] = {}
        for start in range(0, len(wanted), 500):  # SQLite's limit on bound values
            chunk = wanted[start:start + 500]
            for note_id, path in self.conn.execute(
                    f"SELECT d.id, d.path FROM docs d WHERE d.id IN ({', '.join('?' * len(chunk))})"
                    f" AND d.kind IN ({', '.join('?' * len(kind_list))}) ORDER BY d.path",
                    [*chunk, *kind_list]):
                found.setdefault(note_id, []).append(path)
        return found

    def parse_errors(self) -> list[ParseError]:
        """Files that do not parse now (each keeps its last good entry, if it had one)."""
        return [ParseError(path, line or 1, message, bool(kept)) for path, line, message, kept
                in self.conn.execute(
                    "SELECT fl.path, fl.error_line, fl.error, EXISTS(SELECT 1 FROM docs d"
                    " WHERE d.path = fl.path) FROM files fl WHERE fl.error IS NOT NULL"
                    " ORDER BY fl.path")]

    def last_good_notes(self) -> int:
        """How many notes are served from their last good version: their file does not
        parse now (health counts them apart: docs/health.md)."""
        return self.conn.execute(
            "SELECT count(*) FROM files fl JOIN docs d ON d.path = fl.path"
            " WHERE fl.error IS NOT NULL AND d.kind = 'note'").fetchone()[0]

    def last_good(self, path: str) -> tuple[ParseError, str] | None:
        """A note file that does not parse now: its problem, and the body of the last good
        version the index keeps (recall uses it, as search does). None when it parses."""
        row = self.conn.execute(
            "SELECT fl.error_line, fl.error, f.body FROM files fl JOIN docs d ON d.path = fl.path"
            " JOIN fts f ON f.rowid = d.rowid"
            " WHERE fl.path = ? AND fl.error IS NOT NULL AND d.kind = 'note'", (path,)).fetchone()
        if row is None:
            return None
        return ParseError(path, row[0] or 1, row[1]), from_index(row[2] or "")

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self.conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM docs WHERE kind = ?",
                                 (kind,)).fetchone()[0]

    def indexed_files(self) -> dict[str, tuple[Stamp, str]]:
        """(stamp, hash) by path: for health's drift check and for tests."""
        return {path: (tuple(stamp), digest) for path, *stamp, digest in
                self.conn.execute(f"SELECT path, {STAMP_COLUMNS}, hash FROM files")}
