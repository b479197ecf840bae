"""`memctl watch` after an upgrade: it starts again on the new code (docs/watch.md, "After an
upgrade").

A watcher runs for days. Once memctl's files change under it (`pipx upgrade memctl`, `pip
install -U`, an edit of a checkout), it would go on indexing with the code it imported, beside
commands that run the new code: the two disagree on what the index holds (a new index schema
is rebuilt by every command of one version and again by the watcher of the other). So the
watcher looks at memctl's source files every few seconds; once they changed and stayed as they
are for one more look (an installer writes them one by one), it runs the new code's
`memctl watch … --help` to see that it starts, then stops and executes its own command line
again, in the same process: the same pid for a service manager, the same terminal, the same
options. New code that does not start is said once, and the watcher keeps running the code it
has until the files change again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from memctl.cli.searchserver import code_files
from memctl.core.errors import MemctlError
from memctl.core.stamp import Stamp

CHECK_EVERY = 2.0
# The new code's `--help` must end within this; an installer that is still busy, or code that
# hangs at start-up, is looked at again once the files change.
PROBE_WAIT = 60.0


def command_line() -> list[str]:
    """This process's command line as it was started, with this interpreter: what runs again."""
    return [sys.executable, *sys.orig_argv[1:]]


class CodeChange:
    """A thread that calls `on_change()` once memctl's files changed and the new code starts;
    `on_message(text)` for what the watcher should say."""

    def __init__(self, on_change: Callable[[], None], on_message: Callable[[str], None],
                 every: float = CHECK_EVERY) -> None:
        self.on_change = on_change
        self.on_message = on_message
        self.every = every
        self.wanted = False
        self._started_with = code_files()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memctl-code-change",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        known = self._started_with  # the files as last looked at and judged
        while not self._stop.wait(self.every):
            seen = _files_now()
            if seen == known:
                continue
            if self._stop.wait(self.every):
                return
            if seen is None or _files_now() != seen:
                continue  # still being written: judged at a later look
            problem = _starts()
            if problem is None:
                self.wanted = True
                self.on_message("memctl's code changed (an upgrade): starting again on it")
                self.on_change()
                return
            self.on_message(f"warning: memctl's code changed but does not start ({problem}); "
                            "this watcher goes on with the code it started with")
            known = seen


def _files_now() -> dict[str, Stamp] | None:
    try:
        return code_files()
    except OSError:
        return None  # a folder removed while walked: an installer at work


def _starts() -> str | None:
    """None when this command line's `--help` runs on the code now installed, else why not."""
    try:
        result = subprocess.run([*command_line(), "--help"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                timeout=PROBE_WAIT, check=False)
    except subprocess.TimeoutExpired:
        return f"`memctl watch --help` did not end within {PROBE_WAIT:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if result.returncode == 0:
        return None
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else f"exit {result.returncode}"


def start_again() -> NoReturn:
    """Replace this process with its own command line (the new code)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execv(sys.executable, command_line())
    except OSError as exc:  # the interpreter gone since the check (a virtualenv made anew)
        raise MemctlError(f"memctl's code changed and the watcher could not start again on "
                          f"it ({exc.strerror or exc}); start `memctl watch` again") from None
