"""Errors a user (or an agent) can cause, and how each front end words them.

A message names an option or a command through `arg()` and `cmd()`, never by its spelling in
one front end: the CLI renders `arg("allow_secret")` as `--allow-secret` and `cmd("list")` as
`` `memctl list` ``; the MCP server renders them as the tool argument `allow_secret` and the
tool `search` (`memctl.mcp_server`). `str(error)` is the CLI's wording.
"""

from __future__ import annotations

import errno
import re

# Markers inside a message: U+001C … U+001D never occur in text a person types as a message.
_MARK = re.compile(r"\x1c(arg|cmd):([^\x1c\x1d]*)\x1d")


def arg(name: str) -> str:
    """An option/argument named in a message (`allow_secret`, `importance`, `type`)."""
    return f"\x1carg:{name}\x1d"


def cmd(name: str) -> str:
    """A command named in a message (`list`, `scratch show`, `init PATH`)."""
    return f"\x1ccmd:{name}\x1d"


# Of a value a message quotes back (`invalid value for sort: 'x…'`): a value of megabytes
# sent by an agent came back whole, a one-line error of megabytes.
QUOTED_CHARS = 60


def quoted(value: str) -> str:
    """`repr(value)`, of its first QUOTED_CHARS characters and `…` when it is longer."""
    if len(value) <= QUOTED_CHARS:
        return repr(value)
    return repr(value[:QUOTED_CHARS]) + "…"


class Front:
    """How one front end spells options and commands in messages."""

    def option(self, name: str) -> str:
        if name.isupper():  # a positional argument, by its metavar: `ID`, `OLD`
            return name
        return "--" + name.replace("_", "-")

    def command(self, name: str) -> str:
        return f"`memctl {name}`"

    def render(self, message: str) -> str:
        # One pass over the message: linear in its length.
        return _MARK.sub(lambda m: self.option(m.group(2)) if m.group(1) == "arg"
                         else self.command(m.group(2)), message)


CLI = Front()


class MemctlError(Exception):
    """Something went wrong while running; the CLI prints `error: <message>` and exits 1."""

    def __str__(self) -> str:
        return CLI.render(self.raw_message)

    @property
    def raw_message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def render(self, front: Front) -> str:
        return front.render(self.raw_message)


class NoteFormatError(MemctlError):
    """A note file that cannot be read as a note: its front matter does not parse, it is
    empty, or it is not UTF-8 text. Worded `path:line: problem`, the form every command uses
    for such a file; `data` is the file as it is, so `show` can print it and `edit` open it
    for fixing (docs/format.md, "A file that does not parse")."""

    def __init__(self, path: str, line: int, problem: str, data: bytes = b"") -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem
        self.data = data


class UnknownIdError(MemctlError):
    """No note or episode has this id or starts with this prefix (an ambiguous prefix, or an
    id in two files, is a plain MemctlError: something was found)."""


class UsageError(MemctlError):
    """Bad usage, such as an invalid option value; the CLI exits 2."""


class VariableError(UsageError):
    """A bad environment variable (`MEMCTL_NOW`, `MEMCTL_STORE`, `MEMCTL_PROJECT`): bad usage
    (exit 2), but of no one command, so the CLI adds no hint to read a command's --help."""


class ArgumentError(UsageError):
    """An invalid value for one named option or argument."""

    def __init__(self, argument: str, problem: str) -> None:
        super().__init__(f"invalid value for {arg(argument)}: {problem}")
        self.argument = argument
        self.problem = problem


def exit_code(error: BaseException) -> int:
    """The exit code of a command that ended with `error` (one rule for every entry point):
    2 for bad usage, 1 for any other memctl error, 130 for Ctrl-C."""
    if isinstance(error, UsageError):
        return 2
    if isinstance(error, KeyboardInterrupt):
        return 130
    return 1


# SQLite's primary result codes that are the machine's, not memctl's: no permission, a
# read-only file, a disk that fails or is full, a file that cannot be opened.
_SQLITE_MACHINE_CODES = {3: "no permission", 8: "read-only", 10: "disk I/O error",
                         13: "disk full", 14: "cannot open a file"}
_SQLITE_REFUSALS = (3, 8, 10, 13)
# SQLITE_CORRUPT and SQLITE_NOTADB: a file that is no sound database.
_SQLITE_DAMAGED_CODES = (11, 26)


def sqlite_refused(error: BaseException) -> bool:
    """Whether a SQLite error is the machine refusing a read or a write (no permission, a
    read-only file, a disk that fails or is full): it says nothing of the file's content."""
    code = getattr(error, "sqlite_errorcode", None)  # sqlite3.Error, without importing it
    return isinstance(code, int) and code & 0xFF in _SQLITE_REFUSALS


def sqlite_damaged(error: BaseException) -> bool:
    """Whether a SQLite error says its file is no sound database (cut short, overwritten)."""
    code = getattr(error, "sqlite_errorcode", None)  # sqlite3.Error, without importing it
    return isinstance(code, int) and code & 0xFF in _SQLITE_DAMAGED_CODES


def machine_error(error: BaseException) -> str | None:
    """One line for an error of the machine rather than of memctl or of its input (a disk
    that is full or fails, a file size limit, a permission), raised anywhere in a command:
    the CLI says it so, never as a traceback (tests/test_reliability.py). None for
    any other error, which stays a bug to report."""
    if isinstance(error, BrokenPipeError):
        return None
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        reason = error.strerror or str(error)
    else:
        code = getattr(error, "sqlite_errorcode", None)  # sqlite3.Error, without importing it
        if sqlite_damaged(error):
            # Met where no rebuild was tried (memctl.index.db.heals_damaged_index): a file cut or
            # overwritten by another program under a running memctl.
            return (f"{error} (a SQLite file in the store's .memctl/ folder was damaged by "
                    f"another program); the command stopped there. {cmd('reindex')} makes the "
                    "index anew from the notes' files; then run the command again (if it "
                    "stops again, the damaged file is .memctl/counters.sqlite, this machine's "
                    "access counts: move it away)")
        if not isinstance(code, int) or code & 0xFF not in _SQLITE_MACHINE_CODES:
            return None
        where, reason = "", f"{error} (the store's SQLite files)"
    return (f"{reason}{where}; the command stopped there. Once the disk has room (or the file "
            f"can be written), run it again; {cmd('health')} checks the store")


def write_advice(exc: OSError, about: str) -> str:
    """What to do when a write failed with `exc`: a full disk, a quota, a read-only file
    system, a permission (`about`: whose), else to check the disk."""
    hints = {
        errno.ENOSPC: "free some disk space and run the command again",
        errno.EDQUOT: "free some space within your disk quota and run the command again",
        errno.EROFS: "the filesystem is read-only; remount it read-write or move the store",
        errno.EACCES: f"check the permissions of {about}",
        errno.EPERM: f"check the permissions of {about}",
    }
    return hints.get(exc.errno or 0, "check the disk and the folder, then run the command again")
