"""Files only this user may read, in `.memctl/`: the MCP server's HTTP token (docs/agents.md)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from memctl.core.errors import MemctlError

PRIVATE_MODE = 0o600


def read_or_create_private(path: Path, make: Callable[[], str],
                           usable: Callable[[str], str | None] | None = None) -> tuple[str, bool]:
    """The first line of `path`, or a new value from `make` written there with mode 0600
    whatever the umask. Returns (value, whether it was made now). Made with O_EXCL, so two
    processes starting at once agree on one value. A file that others may read (or a link
    in its place) is refused, never used: whoever could read it could use it. So is anything
    but a regular file (a FIFO is opened without waiting for a writer, and never read), a
    file that is not UTF-8 text, and a value `usable` finds fault with (it returns why)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return _create(path, make, usable)
    except OSError as exc:
        raise MemctlError(f"cannot read {path}: {exc.strerror} (delete it: a new one is made)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MemctlError(f"{path} is not a file; delete it (a new one is made)")
        if info.st_mode & 0o077:
            raise MemctlError(f"{path} may be read by other users (mode "
                              f"{stat.S_IMODE(info.st_mode):o}); delete it (a new one is made) "
                              "or make it private: chmod 600")
        try:
            head = os.read(fd, _MAX_READ)
        except OSError as exc:
            raise MemctlError(f"cannot read {path}: {exc.strerror} (delete it: a new one is "
                              "made)") from None
    finally:
        os.close(fd)
    if len(head) == _MAX_READ and b"\n" not in head:
        raise MemctlError(f"{path} holds no usable value: its first line is longer than "
                          f"{_MAX_READ} bytes; delete it (a new one is made)")
    try:
        value = head.split(b"\n", 1)[0].decode("utf-8").strip()
    except UnicodeDecodeError:
        raise MemctlError(f"{path} is not UTF-8 text; delete it (a new one is made)") from None
    if not value:
        raise MemctlError(f"{path} is empty; delete it (a new one is made)")
    fault = usable(value) if usable is not None else None
    if fault is not None:
        raise MemctlError(f"{path} holds no usable value: {fault}; delete it (a new one is made)")
    return value, False


# The first line is all that is read: a value is a line, and a huge file is no reason to fill
# memory (a first line longer than this is refused).
_MAX_READ = 4096


def _create(path: Path, make: Callable[[], str],
            usable: Callable[[str], str | None] | None = None) -> tuple[str, bool]:
    value = make()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     PRIVATE_MODE)
    except FileExistsError:  # another process made it first: theirs wins
        return read_or_create_private(path, make, usable)[0], False
    except OSError as exc:
        raise MemctlError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), PRIVATE_MODE)  # the umask may have narrowed it; never widened
        handle.write(value + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return value, True
