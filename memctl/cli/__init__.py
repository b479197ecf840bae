"""The memctl command line: a thin layer over the core that turns errors into one-line
messages. Command groups live in one module each and register on the typer `app`;
`memctl search` is answered by a fast path that skips typer (see `memctl.cli.fast`)."""

from __future__ import annotations

import codecs
import os
import sys

from memctl.cli.served import answer as answer_from_watcher
from memctl.cli.served import finish, search_store_option, walk_root

# Lazy on purpose: importing typer costs ~45 ms, and `memctl search` never needs it
# (tests/test_layers.py pins the modules a search loads). The fast path too: a search a live
# watcher answers loads nothing of it (memctl.cli.served, docs/watch.md).


_GC_THRESHOLD = 50_000


def _writable_streams() -> None:
    """stdout in an encoding that cannot hold every character (`LC_ALL=C PYTHONUTF8=0`:
    ASCII; `PYTHONIOENCODING=gbk`) writes what it cannot encode as an escape (`\\u2026`),
    as Python's stderr always does, instead of ending the command in a UnicodeEncodeError
    traceback at the first note with an accent, an emoji or a table cut with "…" (--json
    writes such characters as JSON's own escapes: `memctl.cli.output.emit_json`)."""
    stream = sys.stdout
    try:
        if stream is None or stream.errors not in ("strict", "surrogateescape") \
                or codecs.lookup(stream.encoding).name.startswith("utf"):
            return
        stream.reconfigure(errors="backslashreplace")
    except (AttributeError, LookupError, ValueError):  # a stream Python did not make
        return


def _hold_closed_streams() -> None:
    """A standard stream closed before memctl started (`memctl list >&-`, `2>&-`): Python
    makes it None, and the first write to it was an AttributeError traceback, or exit 1 once
    the work was done; a command whose line on stderr comes before its output (`get`,
    `show` of an episode) printed nothing. Its descriptor is held on /dev/null instead: what
    is written to it is dropped, as a closed pipe's output is (`run_command`: quietly, 0),
    and no file memctl opens can take its number and receive what is meant for it."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            held = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8",  # noqa: SIM115
                                    errors="backslashreplace", closefd=False))
        except OSError:
            continue


def main() -> None:
    _hold_closed_streams()
    _writable_streams()
    code = answer_from_watcher(sys.argv[1:])
    if code is not None:
        finish(code)  # ends the process
    root = walk_root(sys.argv[1:])
    if root is not None:
        # A search that walks: a short process whose objects nearly all live to its end.
        # The collector's passes over them (~25 during its imports and walk, at the default
        # threshold of 700) are ~1.5 ms of CPU finding nothing (bench/bench_scale.py); a
        # search that goes on to index many files still collects, every 50k objects. The
        # helpers forked below inherit it.
        import gc

        gc.set_threshold(_GC_THRESHOLD)
        # Lazy, and first: the search's walk of the store runs in helper processes while
        # the rest of the search is imported (docs/search.md, "Never stale").
        from memctl.services.walkahead import walk_ahead

        walk_ahead(root)
    from memctl.cli.fast import run_fast

    code = run_fast(sys.argv[1:], exits=True)
    if code is not None:
        if search_store_option(sys.argv[1:])[0] is not None:
            # A search answered here has closed its index (its counters are left for the
            # exit to close: memctl.disk.counters.leave_open_at_exit) and started no
            # thread: the end of the process need not tear the interpreter down, module by
            # module (~6 ms after a search's imports: docs/search.md, "Never stale").
            finish(code)
        sys.exit(code)
    # The typer app, with the command module this command line needs (memctl.cli.commands).
    from memctl.cli.commands import main as typer_main

    typer_main(sys.argv[1:])


def __getattr__(name: str) -> object:
    # `from memctl.cli import app` still works, without importing typer for the fast path.
    if name == "app":
        from memctl.cli.app import app

        return app
    raise AttributeError(name)


__all__ = ["app", "main"]
