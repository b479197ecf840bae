"""Access counters: how often and when each note was recalled or shown in search results.

They are not in the note files (recalling a note must not change it) and not in the index
(which `reindex` throws away): they live in `.memctl/counters.sqlite`. Each row belongs to one
machine (`.memctl/machine-id`), and a machine only ever increments its own rows. So sync can
carry each machine's rows as they are (`export_machine` / `import_machine`, which keep the
larger count and the later time per note), and the total over machines counts every access
exactly once, however often the same rows are exchanged.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path

from memctl.core.clock import ahead, format_time, now, parse_time
from memctl.core.errors import MemctlError, sqlite_damaged, sqlite_refused
from memctl.disk.layout import state_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from memctl.disk.layout import StoreLike


COUNTERS_FILE = "counters.sqlite"
MACHINE_FILE = "machine-id"
FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS access(
    machine TEXT NOT NULL, id TEXT NOT NULL, count INTEGER NOT NULL, last TEXT,
    PRIMARY KEY(machine, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS access_days(
    machine TEXT NOT NULL, id TEXT NOT NULL, day TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY(machine, id, day)) WITHOUT ROWID;
"""


def machine_id(store: StoreLike) -> str:
    """This machine's id for this store, made once (random) and kept in `.memctl/`."""
    path = state_path(store, MACHINE_FILE)
    try:
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    import secrets

    value = secrets.token_hex(8)
    tmp = path.with_name(f".{MACHINE_FILE}.{os.getpid()}.tmp")
    # Never world-writable, whatever the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:  # (a write the full disk refuses leaves no temp file behind either)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
        # link() fails if another process made the id first: then theirs wins.
        os.link(tmp, path)
    except FileExistsError:
        value = path.read_text(encoding="utf-8").strip() or value
    finally:
        tmp.unlink(missing_ok=True)
    return value


# SQLite's primary result codes that say a file is no database (any other error, such as
# SQLITE_IOERR or SQLITE_FULL, is the disk's, not the file's).
_CORRUPT, _NOT_A_DATABASE = 11, 26


class CountersUnavailable(Exception):
    """The counters cannot be written here (a read-only store): they are hints, so reads go
    on without them."""


def _connect(store: StoreLike, *, shared: bool = False) -> sqlite3.Connection:
    path = state_path(store, COUNTERS_FILE)
    folder = path.parent if path.parent.exists() else path.parent.parent
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CountersUnavailable(str(path))
    try:
        return _open_counters(path, shared=shared)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        if getattr(exc, "sqlite_errorcode", _CORRUPT) & 0xFF not in (_CORRUPT, _NOT_A_DATABASE):
            # A disk that is full or failing, a file that cannot be opened: the file is not
            # damaged, and setting it aside would lose every count it holds.
            raise CountersUnavailable(f"{path}: {exc}") from exc
        # Not a database any more (truncated, overwritten): keep the damaged file for a
        # person to look at, and count afresh rather than fail every search.
        _set_aside(path, exc)
        return _open_counters(path, shared=shared)


def _set_aside(path: Path, exc: BaseException) -> None:
    """Move a damaged counters file (and its WAL) to `counters.sqlite.damaged-<time>` beside
    it, never over an earlier one, and say so in one line: it is kept for a person to look
    at (or delete), and the counts start again in a new file. No connection of this process
    may be open on it (the last one to close removes the WAL by its name)."""
    stamp = int(time.time())
    aside = path.with_name(f"{COUNTERS_FILE}.damaged-{stamp}")
    tries = 1
    while any(aside.with_name(aside.name + s).exists() for s in ("", "-wal", "-shm")):
        tries += 1
        aside = path.with_name(f"{COUNTERS_FILE}.damaged-{stamp}-{tries}")
    for suffix in ("", "-wal", "-shm"):
        damaged = path.with_name(path.name + suffix)
        if damaged.exists():
            os.replace(damaged, aside.with_name(aside.name + suffix))
    sys.stderr.write(f"warning: {path.name} was damaged ({exc}); kept as {aside.name}, "
                     "access counts start again\n")


def _close(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # a damaged file may refuse even that; closing ends the transaction
    conn.close()


def _set_aside_when_damaged(store: StoreLike, conn: sqlite3.Connection,
                            exc: sqlite3.Error) -> bool:
    """After `exc` from `conn`, a connection to the counters that opened: when SQLite says
    the file is no sound database (damage past its first page, which opening reads) and its
    `quick_check` agrees, `conn` is closed and the file set aside (`_set_aside`), as one that
    does not open at all is. True then: the caller runs again on a fresh file. False for any
    other error, which stays the caller's: a disk that is full or fails says nothing of the
    file (docs/reliability.md)."""
    if not sqlite_damaged(exc) or not file_damaged(store):
        return False
    _close(conn)
    try:
        _set_aside(state_path(store, COUNTERS_FILE), exc)
    except OSError:
        return False
    return True


def _using(store: StoreLike, work: Callable[[sqlite3.Connection], Any]) -> Any:
    """`work(conn)` on a connection to the counters (`_connect`), closed after. A file found
    damaged only where `work` reads or writes it is set aside, and `work` runs once more on
    a fresh one (`_set_aside_when_damaged`)."""
    for attempt in (1, 2):
        conn = _connect(store)
        try:
            return work(conn)
        except sqlite3.DatabaseError as exc:
            if attempt == 2 or not _set_aside_when_damaged(store, conn, exc):
                raise
        finally:
            _close(conn)
    raise AssertionError("unreachable")


def _open_counters(path: Path, *, shared: bool = False) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=15, isolation_level=None, check_same_thread=not shared)
    try:
        _set_up(conn, make=True)
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _set_up(conn: sqlite3.Connection, *, make: bool) -> bool:
    """Make `conn` a counters connection: WAL, both tables. Without `make` (counters opened
    ahead of a search, `open_ahead`) nothing is changed in the file: False when it is not
    that already."""
    conn.execute("PRAGMA busy_timeout=15000")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        if not make:
            return False
        conn.execute("PRAGMA journal_mode=WAL")
    # Counters are hints: losing the last few on a power cut is fine, an fsync per search
    # is not (with WAL, NORMAL still never corrupts the file).
    conn.execute("PRAGMA synchronous=NORMAL")
    if conn.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('access', 'access_days')"
                    ).fetchone()[0] < 2:
        if not make:
            return False
        conn.executescript(_SCHEMA)
    return True


def _iso(when: Any) -> str:
    if when is None:
        return format_time(now())
    moment = parse_time(when)
    if moment is None:
        raise ValueError(f"not a time: {when!r}")
    return format_time(moment)


def _later(a: str | None, b: str | None) -> str | None:
    if not a or not b:
        return a or b
    first, second = parse_time(a), parse_time(b)
    if first is None or second is None:
        return a if first is not None else b
    return a if first >= second else b


def _reading(store: StoreLike, work: Callable[[sqlite3.Connection], Any], empty: Any) -> Any:
    """`work(conn)` on a connection to read the counters: the usual one (`_using`: a file
    damaged past its first page is set aside, and read afresh), or in a read-only store the
    file opened read-only; `empty` when there is nothing readable (no counts, not an error:
    counts are hints)."""
    try:
        return _using(store, work)
    except CountersUnavailable:
        pass
    except sqlite3.Error:
        return empty
    path = state_path(store, COUNTERS_FILE)
    if not path.is_file():
        return empty
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=15)
    except sqlite3.Error:
        return empty
    try:
        return work(conn)
    except sqlite3.Error:
        return empty  # read-only and unreadable
    finally:
        conn.close()


def record_access(store: StoreLike, ids: Iterable[str], when: datetime | str | None = None) -> None:
    """Count one access of each id (once per id per call) at `when` (default: now). A
    counters file found damaged where the record writes (past its first page) is set aside,
    and the access counted in a fresh one (`_set_aside_when_damaged`)."""
    unique = list(dict.fromkeys(str(i) for i in ids if i))
    if not unique:
        return
    stamp = _iso(when)
    path = state_path(store, COUNTERS_FILE)
    held = _HELD.get(os.fspath(path)) if _HELD else None
    if held is not None and held.current():
        # The connection the process holds (`keep_open`): no connection opened and closed
        # per call (~0.4 ms of each MCP search and recall, bench/bench_mcp.py).
        try:
            machine = machine_id(store)
        except OSError:
            return
        with held.lock:
            if not held.retired:
                try:
                    _record(held.conn, machine, unique, stamp)
                    return
                except BaseException as exc:
                    if not (isinstance(exc, sqlite3.DatabaseError) and sqlite_damaged(exc)
                            and file_damaged(store)):
                        if held.conn.in_transaction:
                            held.conn.execute("ROLLBACK")
                        raise
                    # Its file is damaged: closed (the last connection to close removes the
                    # WAL by its name) and set aside; this record, and the later ones,
                    # go to a fresh file through a connection of their own.
                    held.retire()
                    try:
                        _set_aside(path, exc)
                    except OSError:
                        raise exc from None
    try:
        conn = _connect(store)
        machine = machine_id(store)
    except (CountersUnavailable, OSError):
        return  # a read-only store: nothing is counted, the read goes on
    try:
        try:
            _record(conn, machine, unique, stamp)
        except sqlite3.DatabaseError as exc:
            if not _set_aside_when_damaged(store, conn, exc):
                raise
            try:
                conn = _connect(store)
            except (CountersUnavailable, OSError):
                return
            _record(conn, machine, unique, stamp)
    finally:
        try:
            leave = _LEFT_OPEN is not None and not conn.in_transaction \
                and _wal_bytes(path) < LEAVE_OPEN_WAL_BYTES
        except sqlite3.ProgrammingError:
            leave = False  # closed: its file was damaged, and could not be set aside
        if leave and _LEFT_OPEN is not None:
            # A command that ends at once (`memctl search`): closing the last connection
            # checkpoints the WAL and removes it (~1 ms of its end). Left open, the WAL is
            # left as any writer that ends without closing leaves it, and the next process
            # rebuilds its index from it and can never start it over: it grew by each
            # search's record, and so did the cost of every later one (tests/test_counters.py).
            # So the first search that finds it past this size closes, and starts it anew.
            _LEFT_OPEN.append(conn)
        else:
            conn.close()


# The counters' connections `record_access` leaves open for the process's end
# (`leave_open_at_exit`); None: each is closed once written.
_LEFT_OPEN: list[sqlite3.Connection] | None = None
# A WAL this big or bigger is checkpointed and removed by the search that finds it (~30
# searches' records: a rebuild of its index from it costs ~0.2 ms).
LEAVE_OPEN_WAL_BYTES = 256 * 1024


def _wal_bytes(path: os.PathLike[str] | str) -> int:
    try:
        return os.stat(f"{os.fspath(path)}-wal").st_size
    except OSError:
        return 0


def file_damaged(store: StoreLike) -> bool:
    """Whether SQLite finds the counters' file damaged (`quick_check`; a missing file is
    not): a command that met a damaged SQLite file tells the counters' from the index's by
    it (memctl.index.db.heals_damaged_index)."""
    path = state_path(store, COUNTERS_FILE)
    if not path.is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=15)
        try:
            return conn.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok"
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return sqlite_damaged(exc)


def leave_open_at_exit() -> None:
    """Let `record_access` leave its connections open: for a process that ends right after
    its one search (memctl.cli.served.finish, `os._exit`). Each record is committed before;
    the exit leaves the WAL as any writer that ends without closing does, up to
    LEAVE_OPEN_WAL_BYTES."""
    global _LEFT_OPEN
    if _LEFT_OPEN is None:
        _LEFT_OPEN = []


def _record(conn: sqlite3.Connection, machine: str, unique: list[str], stamp: str) -> None:
    """One access of each of `unique`, in one transaction. A disk that refuses the write
    (full, failing) counts nothing and lets the read go on, as a read-only store does: the
    counts are hints, the answer is not (docs/reliability.md, "A full disk")."""
    try:
        _count(conn, machine, unique, stamp)
    except sqlite3.Error as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite rolled back itself
        if not sqlite_refused(exc):
            raise


def _count(conn: sqlite3.Connection, machine: str, unique: list[str], stamp: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO access(machine, id, count, last) VALUES (?, ?, 1, ?)"
        " ON CONFLICT(machine, id) DO UPDATE SET count = count + 1,"
        " last = CASE WHEN last IS NULL OR excluded.last > last THEN excluded.last"
        " ELSE last END",
        [(machine, note_id, stamp) for note_id in unique])
    conn.executemany(
        "INSERT INTO access_days(machine, id, day, count) VALUES (?, ?, ?, 1)"
        " ON CONFLICT(machine, id, day) DO UPDATE SET count = count + 1",
        [(machine, note_id, stamp[:10]) for note_id in unique])
    conn.execute("COMMIT")


def get_counters(store: StoreLike, ids: Iterable[str] | None = None
                 ) -> dict[str, tuple[int, str | None]]:
    """{id: (count over all machines, last access as ISO text or None)}; every asked id is
    in the answer (0, None when never accessed). `ids=None` gives every counted note."""
    wanted = None if ids is None else list(dict.fromkeys(ids))
    rows: list[tuple[str, int, str | None]] = _reading(
        store, lambda conn: conn.execute("SELECT id, count, last FROM access").fetchall()
        if wanted is None else _rows_for(conn, wanted), [])
    result: dict[str, tuple[int, str | None]] = {}
    if wanted is not None:
        result = {str(note_id): (0, None) for note_id in wanted}
    for note_id, count, last in rows:
        before, before_last = result.get(note_id, (0, None))
        result[note_id] = (before + int(count), _later(before_last, last))
    return result


def _rows_for(conn: sqlite3.Connection, ids: list[str]) -> list[tuple[str, int, str | None]]:
    rows: list[tuple[str, int, str | None]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        rows.extend(conn.execute(
            f"SELECT id, count, last FROM access WHERE id IN ({marks})", chunk))
    return rows


def top_accessed(store: StoreLike, since: datetime | str, limit: int = 20
                 ) -> list[tuple[str, int]]:
    """The most accessed ids since a day (counted by UTC day), most first: for health."""
    day = _iso(since)[:10]
    return _reading(store, lambda conn: [(row[0], int(row[1])) for row in conn.execute(
        "SELECT id, sum(count) AS n FROM access_days WHERE day >= ? GROUP BY id"
        " ORDER BY n DESC, id LIMIT ?", (day, int(limit)))], [])


def export_machine(store: StoreLike, machine: str | None = None) -> dict[str, Any]:
    """One machine's counters (default: this one) in the `.counters/<machine>.json` shape:
    {"format", "machine", "notes": {id: {"count", "last"}}}."""
    machine = machine or machine_id(store)
    rows = _using(store, lambda conn: conn.execute(
        "SELECT id, count, last FROM access WHERE machine = ? ORDER BY id", (machine,)).fetchall())
    return {"format": FORMAT, "machine": machine,
            "notes": {note_id: {"count": count, "last": last} for note_id, count, last in rows}}


def machines(store: StoreLike) -> list[str]:
    return _using(store, lambda conn: [
        row[0] for row in conn.execute("SELECT DISTINCT machine FROM access")])


# The largest count SQLite holds (a signed 64-bit integer): a larger one, which only a file
# made by hand or by a hostile collaborator can carry, is no count (it raised OverflowError
# in a sync or import after its commit, a traceback that skipped the push and the report).
MAX_COUNT = 2**63 - 1


def _from_the_future(stamp: str) -> bool:
    """A last access more than a day ahead of this machine's clock proves nothing, as an
    `updated` that far ahead wins no merge (docs/sync.md, rule 2): merged as the later time,
    a pushed `9999-12-31` kept its note recalled for ever, never idle and never archived, on
    every machine, and no later access could replace it."""
    moment = parse_time(stamp)
    return moment is not None and ahead(moment)


def import_machine(store: StoreLike, data: Mapping[str, Any], machine: str | None = None) -> int:
    """Merge another copy of one machine's counters (from sync or an export): per note, the
    larger count and the later time win, so importing the same data twice changes nothing.
    A count SQLite cannot hold is skipped, as a negative one is. Returns how many notes
    changed."""
    machine = machine or str(data.get("machine") or "")
    if not machine:
        raise ValueError("counter data names no machine")
    notes = data.get("notes") or {}
    if not isinstance(notes, Mapping):
        raise ValueError("counter data has no notes mapping")
    return _using(store, lambda conn: _merge(conn, machine, notes))


def _merge(conn: sqlite3.Connection, machine: str, notes: Mapping[str, Any]) -> int:
    changed = 0
    try:
        conn.execute("BEGIN IMMEDIATE")
        for note_id, value in notes.items():
            if not isinstance(value, Mapping):
                continue
            count = value.get("count")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
                continue
            last = value.get("last") if isinstance(value.get("last"), str) else None
            if last is not None and _from_the_future(last):
                last = None
            row = conn.execute("SELECT count, last FROM access WHERE machine = ? AND id = ?",
                               (machine, str(note_id))).fetchone()
            new = (max(count, row[0]) if row else count,
                   _later(row[1] if row else None, last))
            if row is None or (row[0], row[1]) != new:
                conn.execute("INSERT OR REPLACE INTO access(machine, id, count, last)"
                             " VALUES (?, ?, ?, ?)", (machine, str(note_id), *new))
                changed += 1
        conn.execute("COMMIT")
    except BaseException:
        _close(conn)  # (rolled back: a damaged file may refuse the ROLLBACK itself)
        raise
    return changed


class HeldCounters:
    """The counters' connection a long-running process holds (`keep_open`); `close` it."""

    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        import threading  # only a long-running process holds one (not `memctl search`)

        self.path = path
        self.conn = conn
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.retired = False  # closed: its file was found damaged and set aside
        info = os.stat(path)
        self.identity = (info.st_dev, info.st_ino)

    def current(self) -> bool:
        """Whether the file at its path is still the one it holds (`.memctl/` deleted and
        made again holds another: the records go there, through a connection of their own).
        The open connection keeps its file's inode from being given to a new file. Never in
        a forked child: a SQLite connection must not cross a fork."""
        if os.getpid() != self.pid:
            return False
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self.identity

    def close(self) -> None:
        with self.lock:
            self.retire()

    def retire(self) -> None:
        """Close it, and let no record go through it again (with `lock` held)."""
        if _HELD.get(self.path) is self:
            del _HELD[self.path]
        self.retired = True
        _close(self.conn)


# The connection each store's counters are held open by in this process (`keep_open`), by
# the counters file's path: `record_access` writes through it.
_HELD: dict[str, HeldCounters] = {}


def open_ahead(store: StoreLike) -> None:
    """Open the counters now for the records of this process's one search: a worker of the
    watcher's search server does it while it waits (~1.5 ms of the search, docs/watch.md).
    Only a counters file that is there and opens as it is: nothing is made, repaired or said
    here, so the search does and says what it would have (`record_access` opens them itself
    when this did not)."""
    conn = None
    try:
        path = state_path(store, COUNTERS_FILE)
        if not path.is_file() or not os.access(path, os.W_OK):
            return
        conn = sqlite3.connect(path, timeout=15, isolation_level=None)
        if not _set_up(conn, make=False):
            conn.close()
            return
        _HELD[os.fspath(path)] = HeldCounters(os.fspath(path), conn)
    except (OSError, sqlite3.Error, MemctlError):
        if conn is not None:
            conn.close()


def keep_open(store: StoreLike) -> HeldCounters | None:
    """A connection for a long-running process (`memctl mcp`, `memctl watch`) to hold for its
    whole life, or None where the counters cannot be written. While it is open, no connection
    a record opens is the last one to close, and the last one's close checkpoints the WAL (10k
    notes, ~10 ms of each MCP search); and the records of this process go through it, without
    a connection of their own (bench/bench_mcp.py)."""
    try:
        conn = _connect(store, shared=True)
    except (CountersUnavailable, OSError, sqlite3.Error):
        return None
    path = os.fspath(state_path(store, COUNTERS_FILE))
    try:
        held = HeldCounters(path, conn)
    except OSError:
        conn.close()
        return None
    _HELD[path] = held
    return held
