"""The person's editor ($VISUAL, else $EDITOR, else vi), for `memctl edit` and `memctl
project edit`: read as the shell would split it, and run on one file. Every way it can fail
to start is one line (docs/reliability.md), never a traceback."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from memctl.core.errors import MemctlError


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
