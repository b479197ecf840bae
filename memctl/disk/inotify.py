"""Linux's inotify, through the libc calls Python does not offer: shared by the change probe of
a long-running process (memctl.disk.changeprobe) and the watcher's own observer
(memctl.watch.observer). Standard library only; `ctypes` is loaded when an `Inotify` is made.

The kernel queues an event inside the system call that caused it (`write`, `rename`,
`unlink`, `close`...), and one inotify descriptor keeps its events in the order they were
queued: once a call has returned, a later read of the descriptor finds its event, after those
of every call that returned before it.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK if hasattr(os, "O_NONBLOCK") else 0o4000
IN_CLOEXEC = os.O_CLOEXEC if hasattr(os, "O_CLOEXEC") else 0o2000000

# Kernel limits: watches (max_user_watches), instances (max_user_instances), descriptors.
LIMITS = (errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.ENOMEM)

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
READ_SIZE = 65536


class InotifyFailed(OSError):
    """inotify could not start, or could not watch a folder."""


class Inotify:
    """The three libc calls: `inotify_init1`, `inotify_add_watch`, `inotify_rm_watch`.
    Making one raises OSError or AttributeError where there is no inotify (not Linux)."""

    def __init__(self) -> None:
        import ctypes  # only a watcher or a long-running process watches (~2 ms of import)

        libc = ctypes.CDLL(None, use_errno=True)
        self._init1 = libc.inotify_init1
        self._init1.argtypes = [ctypes.c_int]
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        self._errno = ctypes.get_errno

    def init(self) -> int:
        """A new descriptor, non-blocking and closed on exec."""
        fd = self._init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = self._errno()
            raise InotifyFailed(err, os.strerror(err))
        return fd

    def add_watch(self, fd: int, path: str, mask: int) -> int:
        """The watch descriptor, or -1 when the folder is gone or no longer a folder (its
        parent's watch says so); any other failure (a limit) raises InotifyFailed."""
        wd = self._add(fd, os.fsencode(path), mask)
        if wd >= 0:
            return wd
        err = self._errno()
        if err in (errno.ENOENT, errno.ENOTDIR):
            return -1
        raise InotifyFailed(err, os.strerror(err), path)

    def rm_watch(self, fd: int, wd: int) -> None:
        """Stop a watch (its IN_IGNORED event follows); one already gone is no error."""
        self._rm(fd, wd)


def read_events(fd: int) -> Iterator[tuple[int, int, int, bytes]]:
    """(wd, mask, cookie, name) of every event queued on the non-blocking `fd`, in order,
    until it is empty. The name is empty for an event about the watched folder itself."""
    while True:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        offset, size = 0, len(data)
        while offset < size:
            wd, mask, cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            yield wd, mask, cookie, data[offset:offset + length].rstrip(b"\0")
            offset += length
