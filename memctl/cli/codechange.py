"""`memctl watch` after an upgrade: it starts again on the new code (docs/watch.md, "After an
upgrade").

A watcher runs for days. Once memctl's files change under it (`pipx upgrade memctl`, `pip
install -U`, an edit of a checkout), it would go on indexing with the code it imported, beside
commands that run the new code. So the watcher looks at memctl's source files every few
seconds; once they changed and stayed as they are for one more look (an installer writes them
one by one), it starts its own command line on the new code in check-only mode (`PROBE_ENV`:
the imports and the store, no watching), then stops and executes its own command line again,
in the same process: the same pid for a service manager, the same terminal, the same options,
and the store's watcher lock held throughout (memctl.disk.watchstate.WatchLock.hand_over).
New code that does not start is tried again a few times (an installer may still be busy with
memctl's dependencies), then said once; the watcher keeps running the code it has until the
files change again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from memctl.cli.searchserver import code_files
from memctl.cli.served import same_mode_environment
from memctl.core.errors import MemctlError
from memctl.core.stamp import Stamp

CHECK_EVERY = 2.0
# A check that fails is tried again after this many looks each (while the files stay as they
# are), before the watcher says the new code does not start.
RETRY_AFTER = (1, 2, 4)
# The check must end within this; a start-up that hangs is a failed check.
PROBE_WAIT = 60.0
# Set in the environment of the check: `memctl watch` then imports what it needs, opens the
# store, and exits 0 without watching.
PROBE_ENV = "MEMCTL_WATCH_CHECK_ONLY"


def command_line() -> list[str]:
    """This process's command line as it was started, with this interpreter: what runs again."""
    return [sys.executable, *sys.orig_argv[1:]]


class CodeChange:
    """A thread that calls `on_change()` once memctl's files changed and the new code starts;
    `say(text)` for what the watcher says of it (shown even with --quiet)."""

    def __init__(self, on_change: Callable[[], None], say: Callable[[str], None],
                 every: float = CHECK_EVERY,
                 can_check: Callable[[], bool] = lambda: True) -> None:
        self.on_change = on_change
        self.say = say
        self.every = every
        # False while the check cannot tell anything of the code: the store is away from its
        # path, so the command line's store is not there (the check waits for it).
        self.can_check = can_check
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
        judged = self._started_with  # the files of the code that runs, or that did not start
        while not self._stop.wait(self.every):
            seen = _files_now()
            if seen == judged:
                continue
            if self._stop.wait(self.every):
                return
            if seen is None or _files_now() != seen:
                continue  # still being written: judged at a later look
            if not self.can_check():
                continue  # judged once the store is back
            problem = self._check(seen)
            if self._stop.is_set():
                return
            if problem is None:
                self.wanted = True
                self.say("memctl's code changed (an upgrade): starting again on it")
                self.on_change()
                return
            if problem:
                self.say(f"warning: memctl's code changed but does not start ({problem}); "
                         "this watcher goes on with the code it started with")
                judged = seen
            # "": the files changed again meanwhile, judged at the next look

    def _check(self, seen: dict[str, Stamp]) -> str | None:
        """None when the new code starts; else why not, after the tries of RETRY_AFTER ("":
        the files changed again meanwhile, or the watcher stops)."""
        problem = _starts()
        for looks in RETRY_AFTER:
            if problem is None:
                return None
            if self._stop.wait(self.every * looks) or _files_now() != seen \
                    or not self.can_check():
                return ""
            problem = _starts()
        return "" if problem is not None and not self.can_check() else problem


def _files_now() -> dict[str, Stamp] | None:
    try:
        return code_files()
    except OSError:
        return None  # a folder removed while walked: an installer at work


def _starts() -> str | None:
    """None when this command line runs on the code now installed, in check-only mode;
    else why not. In a session of its own: a Ctrl-C at the watcher's terminal is the
    watcher's alone."""
    try:
        result = subprocess.run(command_line(), env=same_mode_environment({PROBE_ENV: "1"}),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=PROBE_WAIT, check=False,
                                start_new_session=True)
    except subprocess.TimeoutExpired:
        return f"it did not start within {PROBE_WAIT:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if result.returncode == 0:
        return None
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else f"exit {result.returncode}"


def start_again(extra: dict[str, str]) -> NoReturn:
    """Replace this process with its own command line (the new code), `extra` added to its
    environment."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execve(sys.executable, command_line(), same_mode_environment(extra))
    except OSError as exc:  # the interpreter gone since the check (a virtualenv made anew)
        raise MemctlError(f"memctl's code changed and the watcher could not start again on "
                          f"it ({exc.strerror or exc}); start `memctl watch` again") from None
