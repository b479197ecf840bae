"""The person's editor ($VISUAL, else $EDITOR, else vi), for `memctl edit` and `memctl
project edit`: read as the shell would split it, and run on one file. Every way it can fail
to start is one line (docs/reliability.md), never a traceback."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.disk.storefiles import LINK_ERRNOS, READ_FLAGS, read_open


def editor_command(editor: str | None = None) -> list[str]:
    """The editor's command (`code --wait` is two words), checked before anything is copied
    or opened: an unclosed quote or nothing but spaces is one line, not a traceback."""
    editor = editor or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        words = shlex.split(editor)
    except ValueError as exc:
        raise MemctlError(f"the editor {editor!r} ($VISUAL or $EDITOR) cannot be read: {exc}; "
                          "set it to a command, e.g. EDITOR='code --wait'") from None
    if not words:
        raise MemctlError("$VISUAL or $EDITOR is empty; set it to a command, e.g. EDITOR=vi")
    return words


def run_editor(command: list[str], path: Path, afterwards: str) -> int:
    """Run the editor on `path`; its exit code. `afterwards`: what the error of an editor
    that cannot be started adds about the file (kept, unchanged)."""
    try:
        return subprocess.run([*command, str(path)]).returncode
    except FileNotFoundError:
        raise MemctlError(f"editor {command[0]!r} not found; set $EDITOR; {afterwards}"
                          ) from None
    except OSError as exc:  # not executable, a folder
        raise MemctlError(f"editor {command[0]!r} cannot be run: {exc.strerror or exc}; "
                          f"set $EDITOR; {afterwards}") from None


def edited_copy(folder: Path, name: str, data: bytes) -> Path:
    """A new file `name` in `folder` (`name-2`, `name-3`… when taken: a copy kept from an
    earlier edit is never written over) holding `data`, for the editor to work on."""
    folder.mkdir(parents=True, exist_ok=True)
    stem, dot, suffix = name.rpartition(".")
    number = 1
    while True:
        path = folder / (name if number == 1 else f"{stem}-{number}{dot}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            number += 1
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path


def read_edited(path: Path, limit: int) -> bytes:
    """What the editor left in its copy: a regular file (never followed if it became a
    link), at most `limit` + 1 bytes of it (the caller then knows it is over)."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        raise MemctlError("the editor removed the copy it was given") from None
    except OSError as exc:
        if exc.errno in LINK_ERRNOS:
            raise MemctlError("the editor left a link, not a file") from None
        raise MemctlError(f"the edited copy cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MemctlError("the editor left something else than a file")
        return read_open(fd, info.st_size, limit)
    finally:
        os.close(fd)
