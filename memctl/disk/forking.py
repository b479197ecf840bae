"""A forked child that sends its work back through a pipe: how a reindex (memctl.index.workers),
a health report (memctl.memory.health) and the walk of `memctl search`
(memctl.disk.filescan.walk_ahead) use a second core.

Only `os` and `_signal` (the C half of `signal`, without the `enum` that `signal` loads) are
imported: `memctl search` forks its walk before anything else of it is loaded.
"""

from __future__ import annotations

import _signal
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def fork_child(work: Callable[[int], object], close: Iterable[int] = ()) -> tuple[int, int] | None:
    """Fork a child that runs `work(write_end)` and leaves with `os._exit` (0 when `work`
    returned, 1 when it raised), without any clean-up of this process's state in its copy
    (buffers, exit functions, open files). Returns (its pid, the read end of its pipe), or None
    when the system refuses a pipe or a process (the caller then does the work itself).
    `close`: descriptors the child closes first (pipes only this process may write to).

    Ctrl-C is held back across the fork, so it never reaches the child while it still runs
    this process's code; the child then ends on Ctrl-C, and this process gets it as soon as
    its mask is restored (and cleans up: `stop_child`)."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    blocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    try:
        pid = os.fork()
    except OSError:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: never returns
        status = 1
        try:
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
            _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)
            os.close(read_end)
            for descriptor in close:
                os.close(descriptor)
            work(write_end)
            status = 0
        finally:
            os._exit(status)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)
    os.close(write_end)
    return pid, read_end


def stop_child(pid: int) -> None:
    """End a child (done already, or no longer wanted) and wait for it."""
    try:
        os.kill(pid, _signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def write_all(fd: int, data: bytes) -> None:
    """Send `data` whole through a pipe (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
