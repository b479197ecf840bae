"""Reading and parsing many files in worker processes while the caller writes to SQLite.

A cold reindex reads, hashes and parses every file (~150 µs a note here) and inserts its
rows (~50 µs). Forked workers parse while the calling process writes. Each worker takes
every Nth chunk and sends its results back over its own pipe as `marshal` data: plain tuples
of text and numbers, several times cheaper than pickle, and no helper threads (Pool's
threads and pickling cost about 1 s of CPU per 10k notes on a 2-core machine). The caller
reads the chunks in order, so results arrive exactly as a sequential pass would give them.

A worker that dies, for any reason, only costs time: the caller parses its chunks itself.
"""

from __future__ import annotations

import marshal
import os
import threading
from collections.abc import Iterator

from memctl.disk.forking import fork_child, stop_child
from memctl.index.docs import MAX_INDEXED_BYTES, Prepared, prepare_file

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of `add`)
if TYPE_CHECKING:
    from typing import BinaryIO

# Below this many files to parse, worker processes cost more than they save.
PARALLEL_MIN = 1500
CHUNK = 250
_LENGTH = 8

Item = tuple[str, str, str, "str | None"]  # path, kind, project, the hash indexed before


# At most this many workers whatever MEMCTL_INDEX_WORKERS says: 300 forked 300 processes
# for a reindex of seven chunks.
MAX_WORKERS = 16


def worker_count() -> int:
    """MEMCTL_INDEX_WORKERS (at most MAX_WORKERS), else one per core (at most 4); below 2,
    no workers at all."""
    try:
        chosen = int(os.environ.get("MEMCTL_INDEX_WORKERS") or min(4, os.cpu_count() or 1))
    except ValueError:
        return 1
    return min(chosen, MAX_WORKERS)


def prepare_all(root: str, items: list[Item], *, parallel_min: int = PARALLEL_MIN
                ) -> Iterator[Prepared]:
    """`prepare_file` for every item, in order; big batches in worker processes."""
    workers = worker_count()
    # fork is only safe without other threads (a watcher has some): then stay sequential.
    if len(items) < parallel_min or workers < 2 or threading.active_count() > 1 \
            or not hasattr(os, "fork"):
        for item in items:
            yield prepare_file(root, *item, MAX_INDEXED_BYTES)
        return
    chunks = [items[start:start + CHUNK] for start in range(0, len(items), CHUNK)]
    workers = min(workers, len(chunks))  # a worker with no chunk is a process for nothing
    children: dict[int, tuple[int, BinaryIO]] = {}  # worker number -> (pid, its pipe)
    try:
        for number in range(workers):
            started = _start(root, chunks[number::workers])
            if started is not None:  # None: no process or pipe to be had, chunks done here
                children[number] = started
        failed: set[int] = set()  # workers that stopped sending: their chunks are done here
        for position, chunk in enumerate(chunks):
            number = position % workers
            worker = None if number in failed else children.get(number)
            batch = None if worker is None else _receive(worker[1])
            if batch is None:
                failed.add(number)
                for item in chunk:
                    yield prepare_file(root, *item, MAX_INDEXED_BYTES)
            else:
                for packed in batch:
                    yield Prepared(*packed)
    finally:
        for pid, stream in children.values():
            stream.close()
            stop_child(pid)  # done already, or no longer wanted


def _start(root: str, chunks: list[list[Item]]) -> tuple[int, BinaryIO] | None:
    """Fork one worker for these chunks: (its pid, the pipe it answers on), or None when the
    system refuses a process or a pipe (limits reached)."""
    started = fork_child(lambda write_fd: _work(root, chunks, write_fd))
    if started is None:
        return None
    pid, read_fd = started
    return pid, os.fdopen(read_fd, "rb", buffering=1 << 20)


def _work(root: str, chunks: list[list[Item]], write_fd: int) -> None:
    """In a worker: each chunk prepared and sent as soon as it is (the caller redoes whatever
    a worker did not send)."""
    with os.fdopen(write_fd, "wb", buffering=1 << 20) as out:
        for chunk in chunks:
            data = marshal.dumps([_pack(prepare_file(root, *item, MAX_INDEXED_BYTES))
                                  for item in chunk])
            out.write(len(data).to_bytes(_LENGTH, "little"))
            out.write(data)
            out.flush()


def _pack(prepared: Prepared) -> tuple[object, ...]:
    return (prepared.path, prepared.kind, prepared.outcome, prepared.mtime_ns,
            prepared.ctime_ns, prepared.size, prepared.digest, prepared.error_line,
            prepared.error, prepared.rows)


def _receive(stream: BinaryIO) -> list[tuple[object, ...]] | None:
    """The next chunk a worker sent, or None if it stopped before sending it."""
    header = stream.read(_LENGTH)
    if len(header) < _LENGTH:
        return None
    size = int.from_bytes(header, "little")
    data = stream.read(size)
    if len(data) < size:
        return None
    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
