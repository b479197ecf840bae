"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Durability: the data is fsynced before the rename, and the folder (and any folder created
for it) after, so a power cut right after a write returns keeps the new version."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from memctl.core.errors import MemctlError, UsageError, write_advice

# Where a failed write leaves the user: the target is untouched and the temp file removed.
_UNCHANGED = "the file was not changed"


class WriteError(MemctlError, OSError):
    """A write that failed (disk full, read-only filesystem, permissions).

    Also an OSError, so code that already handles OSError keeps working."""

    def __init__(self, message: str, errno_value: int | None = None, filename: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.errno = errno_value
        self.filename = filename

    def __str__(self) -> str:
        return self.message


def refuse_special_target(path: Path) -> None:
    """Refuse to write over anything but a regular file (or nothing): the rename of an atomic
    write would put a regular file in place of a folder, a FIFO, a socket or a device node
    (`memctl export /dev/full` as root replaced the device). Every atomic write of memctl
    checks here, the export's zip too (tests/test_exchange.py, tests/test_health.py)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there (or unreachable: the write itself reports it)
    if stat.S_ISDIR(mode):
        raise MemctlError(f"{path} is a folder; give the path of a file to write")
    if not stat.S_ISREG(mode):
        raise MemctlError(f"{path} is not a regular file (a device, a pipe or a socket); "
                          "memctl writes only a new file or over a regular one: give another path")


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write via a temp file in the same folder, fsync it, rename over, fsync the folder.
    `durable=False`: no fsync, for a derived file that may be lost and made again (still
    all or nothing: a reader sees the old file or the new one). Never over a folder or a
    special file (`refuse_special_target`)."""
    path = Path(path)
    refuse_special_target(path)
    try:
        created = make_dirs(path.parent)
        # Dot-prefixed so the watcher and the store walk ignore it if a crash leaves it behind.
        fd, tmp_name = _temp_file(path)
    except OSError as exc:
        if isinstance(exc, MemctlError):
            raise  # said already (`make_dirs`)
        raise _write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        _apply_umask_mode(tmp_name, path)
        os.replace(tmp_name, path)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass  # the original error is the one to report
        if isinstance(exc, OSError) and not isinstance(exc, MemctlError):
            raise _write_error(path, exc) from None
        raise
    if not durable:
        return
    fsync_dir(path.parent)
    for folder in created:
        fsync_dir(folder.parent)


# As tempfile.mkstemp opens its files: a new file (never an existing one, never through a link).
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_BINARY", 0)


TEMP_SUFFIX = ".tmp"
_TEMP_RANDOM_BYTES = 6  # written as 12 lowercase hex digits
_HEX_DIGITS = frozenset("0123456789abcdef")


def _temp_file(path: Path) -> tuple[int, str]:
    """A new file `.<name>.<random>.tmp` beside `path`, mode 0600, open for writing: what
    `tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)` makes,
    without importing tempfile (and the shutil, random, bz2 and lzma it loads: ~6 ms of
    every `memctl add`, bench/bench_write.py)."""
    for _ in range(100):
        random_part = os.urandom(_TEMP_RANDOM_BYTES).hex()
        name = os.path.join(path.parent, f".{path.name}.{random_part}{TEMP_SUFFIX}")
        try:
            return os.open(name, _TEMP_FLAGS, 0o600), name
        except FileExistsError:
            continue  # 48 random bits taken already: another name
    raise FileExistsError(errno.EEXIST, f"no free temporary file name beside {path}")


def is_temp_name(name: str) -> bool:
    """Whether a file name is one `_temp_file` makes (`.<name>.<12 hex digits>.tmp`): what a
    writer killed before its rename leaves behind (memctl.disk.gitops removes those of a
    holder of the store lock that died)."""
    digits = 2 * _TEMP_RANDOM_BYTES
    end = len(name) - len(TEMP_SUFFIX)
    start = end - digits
    return name.startswith(".") and name.endswith(TEMP_SUFFIX) and start >= 3 \
        and name[start - 1] == "." and _HEX_DIGITS.issuperset(name[start:end])


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    # newline="" semantics: the text is written exactly, line endings included.
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # What was not UTF-8 in an argument is refused where it comes in, with its name
        # (memctl.core.arguments.utf8_text); this is the last line: nothing is written.
        raise UsageError(f"cannot write {path.name}: what it would hold is not UTF-8 (a name "
                         f"or a text given that is not UTF-8); nothing was written") from None
    atomic_write_bytes(path, data, durable)


def make_dirs(folder: Path) -> list[Path]:
    """Create `folder` and missing parents with the umask's mode, never world-writable.

    Returns the folders created, outermost first (their parents need an fsync too). A folder
    that cannot be made (no permission, a file in the way, a path that cannot exist) is a
    one-line `WriteError` naming it, never a traceback (docs/reliability.md)."""
    folder = Path(folder)
    try:
        return _make_dirs(folder)
    except OSError as exc:
        if isinstance(exc, MemctlError):
            raise
        failed = Path(exc.filename) if exc.filename else folder
        if isinstance(exc, FileExistsError):
            raise WriteError(f"cannot create the folder {folder}: {failed} is a file, not a "
                             "folder; choose another path, or move that file",
                             exc.errno, str(failed)) from None
        raise _write_error(failed, exc, "nothing was created",
                           doing=f"cannot create the folder {folder}",
                           about=f"{failed.parent}") from None


def _make_dirs(folder: Path) -> list[Path]:
    missing: list[Path] = []
    current = folder
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    mode = 0o777 & ~_umask()
    created: list[Path] = []
    for each in reversed(missing):
        try:
            os.mkdir(each, 0o777)
        except FileExistsError:
            if not each.is_dir():
                raise
            continue  # another process made it meanwhile
        if mode & 0o002:
            os.chmod(each, mode & ~0o002)
        created.append(each)
    return created


def move_file(source: Path, target: Path) -> list[Path]:
    """Move a file with one rename (atomic: it is at one place or the other), making the
    target's missing folders first; the folders are fsynced. A failure (a folder memctl may
    not write, a read-only filesystem) is a one-line `WriteError`, the file left where it was
    and any folder made for it removed. Returns the folders created, outermost first."""
    source, target = Path(source), Path(target)
    created: list[Path] = []
    try:
        created = make_dirs(target.parent)
        os.rename(source, target)
    except OSError as exc:
        for folder in reversed(created):
            try:
                os.rmdir(folder)
            except OSError:
                break
        if isinstance(exc, MemctlError):
            raise
        raise _write_error(target, exc, "the file was not moved",
                           doing=f"cannot move {source} to {target.parent}/",
                           about="the file and both folders") from None
    fsync_dir(target.parent)
    if source.parent != target.parent:
        fsync_dir(source.parent)
    for folder in created:
        fsync_dir(folder.parent)
    return created


def remove_file(path: Path, unchanged: str = "the file was not removed") -> None:
    """Remove a file (one gone already is no error); a failure (permissions, an immutable
    file, a read-only filesystem) is a one-line WriteError naming it, never a traceback."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _write_error(path, exc, unchanged, doing=f"cannot remove {path}",
                           about="the file and its folder") from None


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (threads are safe)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere reading it means setting it; the window is a few instructions long.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_umask = current_umask


def _apply_umask_mode(tmp_name: str, final: Path) -> None:
    """Temporary files are made 0600; keep an existing file's mode, else honour the umask."""
    try:
        mode = os.stat(final).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    os.chmod(tmp_name, mode & ~0o002)  # never world-writable


def _write_error(path: Path, exc: OSError, unchanged: str = _UNCHANGED,
                 doing: str = "", about: str = "the file and its folder") -> WriteError:
    """A one-line message naming the file and what to do, never a traceback. `doing`: what
    failed, when not writing `path` (`cannot move A to B/`); `about`: whose permissions."""
    reason = exc.strerror or str(exc)
    doing = doing or f"cannot write {path}"
    return WriteError(f"{doing}: {reason} ({unchanged}); {write_advice(exc, about)}", exc.errno,
                      str(path))

