"""memctl.disk.forking: a forked child sends its work through a pipe and leaves with its own
status, never running this process's clean-up (reindex workers, health's second process and
the walk of `memctl search` use it)."""

from __future__ import annotations

import os
from collections.abc import Callable

from memctl.disk.forking import fork_child, stop_child


def read_all(fd: int) -> bytes:
    """Everything a child sends, until it closes its end."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def run_child(work: Callable[[int], object]) -> tuple[bytes, int]:
    """What a forked child running `work` sends, and its exit code."""
    started = fork_child(work)
    assert started is not None
    pid, read_end = started
    try:
        sent = read_all(read_end)
    finally:
        os.close(read_end)
    return sent, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_child_sends_its_work_and_leaves_with_status_0() -> None:
    assert run_child(lambda write_end: os.write(write_end, b"walked 3 folders")) \
        == (b"walked 3 folders", 0)


def test_a_child_that_raises_leaves_with_status_1() -> None:
    """What it sent before failing arrives; the caller sees the failure in its status (and
    does the work itself)."""

    def fail(write_end: int) -> None:
        os.write(write_end, b"half")
        raise RuntimeError("the work failed")

    assert run_child(fail) == (b"half", 1)


def test_a_child_closes_the_descriptors_it_is_given_and_can_be_stopped() -> None:
    """`close`: a pipe only the parent writes to is closed in the child, so the parent's
    reader sees its end when the parent closes it; `stop_child` ends a child that waits."""
    keep_read, keep_write = os.pipe()
    started = fork_child(lambda write_end: os.read(keep_read, 1), close=(keep_write,))
    assert started is not None
    pid, read_end = started
    stop_child(pid)  # it waits on keep_read: killed and reaped
    os.close(read_end)
    os.close(keep_write)
    assert os.read(keep_read, 1) == b""  # no copy of the write end is left open anywhere
    os.close(keep_read)
    stop_child(pid)  # a child already reaped: nothing to do, no error
