"""The access counters' connection a long-running process holds (`memctl mcp`: counters.keep_open):
its calls, on other threads, record through it; a counters file replaced meanwhile gets the
records through a connection of its own; once closed, records open their own again. Real SQLite."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from test_reliability import garble_counts

from memctl.disk import counters
from memctl.disk.layout import state_path

NOTE = "aaaaaaaaaaaaaaaa"


def record_elsewhere(store: Path, ids: list[str], when: str) -> None:
    """As the server records: on a worker thread, not the one that holds the connection."""
    worker = threading.Thread(target=counters.record_access, args=(store, ids, when))
    worker.start()
    worker.join()


def test_a_held_connection_takes_the_records_of_every_thread(store_path: Path) -> None:
    held = counters.keep_open(store_path)
    assert held is not None
    try:
        before = held.conn.total_changes
        record_elsewhere(store_path, [NOTE, NOTE, "bbbbbbbbbbbbbbbb"], "2026-11-01T00:00:00Z")
        record_elsewhere(store_path, [NOTE], "2026-11-02T00:00:00Z")
        assert held.conn.total_changes - before == 6  # two rows per id and call, through it
        assert not held.conn.in_transaction
        assert counters.get_counters(store_path, [NOTE]) == {
            NOTE: (2, "2026-11-02T00:00:00.000Z")}
    finally:
        held.close()
    record_elsewhere(store_path, [NOTE], "2026-11-03T00:00:00Z")  # its own connection again
    assert counters.get_counters(store_path, [NOTE])[NOTE][0] == 3


def test_a_counters_file_replaced_while_held_gets_the_records(store_path: Path) -> None:
    held = counters.keep_open(store_path)
    assert held is not None
    try:
        record_elsewhere(store_path, [NOTE], "2026-11-01T00:00:00Z")
        path = state_path(store_path, counters.COUNTERS_FILE)
        for suffix in ("", "-wal", "-shm"):
            aside = Path(f"{path}{suffix}")
            if aside.exists():
                aside.rename(aside.with_name(aside.name + ".old"))
        changes = held.conn.total_changes
        record_elsewhere(store_path, [NOTE], "2026-11-05T00:00:00Z")
        assert held.conn.total_changes == changes  # not into the file moved away
        assert counters.get_counters(store_path, [NOTE]) == {
            NOTE: (1, "2026-11-05T00:00:00.000Z")}
    finally:
        held.close()


def test_a_forked_child_records_through_a_connection_of_its_own(store_path: Path) -> None:
    """A SQLite connection must not cross a fork: a child (a parsing worker) opens its own."""
    held = counters.keep_open(store_path)
    assert held is not None
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if not held.current():  # the parent's connection is not the child's
                    counters.record_access(store_path, [NOTE], "2026-11-01T00:00:00Z")
                    code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert held.current()  # still the parent's
        assert counters.get_counters(store_path, [NOTE])[NOTE][0] == 1
    finally:
        held.close()


def test_counters_opened_ahead_take_the_records_of_the_search(store_path: Path) -> None:
    """A worker of the watcher's search server opens them while it waits
    (counters.open_ahead): the search it answers records through that connection."""
    counters.record_access(store_path, [NOTE], "2026-11-01T00:00:00Z")  # the file is there
    counters.open_ahead(store_path)
    held = counters._HELD.get(os.fspath(state_path(store_path, counters.COUNTERS_FILE)))
    assert held is not None
    try:
        before = held.conn.total_changes
        counters.record_access(store_path, [NOTE], "2026-11-02T00:00:00Z")
        assert held.conn.total_changes - before == 2
        assert counters.get_counters(store_path, [NOTE]) == {
            NOTE: (2, "2026-11-02T00:00:00.000Z")}
    finally:
        held.close()


def test_counters_opened_ahead_are_never_made_nor_repaired(store_path: Path, capsys) -> None:
    """Ahead of the search, nothing is made, set aside or said: the search itself does and
    says what it would have (a damaged file kept aside, its warning on the search's stderr)."""
    path = state_path(store_path, counters.COUNTERS_FILE)
    counters.open_ahead(store_path)
    assert not path.exists() and not counters._HELD
    path.parent.mkdir(exist_ok=True)
    damaged = b"not a database " * 100
    path.write_bytes(damaged)
    counters.open_ahead(store_path)
    assert not counters._HELD
    assert path.read_bytes() == damaged and capsys.readouterr().err == ""
    counters.record_access(store_path, [NOTE], "2026-11-01T00:00:00Z")
    assert "was damaged" in capsys.readouterr().err
    assert counters.get_counters(store_path, [NOTE])[NOTE][0] == 1


def test_searches_that_leave_their_counters_open_keep_the_wal_small(store_path: Path) -> None:
    """`memctl search` leaves its committed access record for the exit to close
    (counters.leave_open_at_exit): each next process rebuilt the WAL's index from the WAL and
    could never start it over, so it grew by every search (~8 KB each: 10 MB after 1,300) and
    each record cost more. The first search that finds it past LEAVE_OPEN_WAL_BYTES closes
    its connection, which checkpoints and removes it. Every access is still counted."""
    from conftest import run_memctl

    note = run_memctl("add", "The wombat burrow is under the shed", "--json",
                      store=store_path).json()["id"]
    wal = Path(f"{state_path(store_path, counters.COUNTERS_FILE)}-wal")
    searches = 2 * counters.LEAVE_OPEN_WAL_BYTES // (8 * 1024) + 10
    largest = 0
    for _ in range(searches):
        found = run_memctl("search", "wombat", "--json", store=store_path)
        assert found.exit_code == 0 and [hit["id"] for hit in found.json()] == [note]
        largest = max(largest, wal.stat().st_size if wal.exists() else 0)
    assert largest <= counters.LEAVE_OPEN_WAL_BYTES + 64 * 1024, largest
    shown = run_memctl("show", note, "--json", store=store_path).json()
    assert shown["access_count"] == searches


def test_a_held_connection_to_a_file_damaged_past_its_first_page_sets_it_aside(
        store_path: Path, capsys) -> None:
    """A counters file that opens (its first page is sound) but whose table is garbage: the
    connection `memctl mcp` holds failed every record with `database disk image is
    malformed`, for as long as it ran. The file is now set aside as one that does not open
    is (kept, one warning), the held connection closed, and the record counted afresh."""
    counters.record_access(store_path, [NOTE], "2026-11-01T00:00:00Z")
    path = state_path(store_path, counters.COUNTERS_FILE)
    damaged = garble_counts(path)
    held = counters.keep_open(store_path)
    assert held is not None
    try:
        record_elsewhere(store_path, [NOTE], "2026-11-02T00:00:00Z")
        assert held.retired and not counters._HELD
        aside = sorted(path.parent.glob("counters.sqlite.damaged-*"))
        assert [p.read_bytes() for p in aside] == [damaged]
        assert f"kept as {aside[0].name}, access counts start again" in capsys.readouterr().err
        assert counters.get_counters(store_path, [NOTE]) == {
            NOTE: (1, "2026-11-02T00:00:00.000Z")}
    finally:
        held.close()
    record_elsewhere(store_path, [NOTE], "2026-11-03T00:00:00Z")
    assert counters.get_counters(store_path, [NOTE])[NOTE][0] == 2
