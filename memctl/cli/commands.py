"""The typer app with only the command module a command line needs.

`memctl.cli.app` imports every command module, and typer then builds a click command for
every command, before the one asked for runs. An agent runs `memctl add` and `memctl show`
on every step, so those load the commands of their own module alone (`memctl show`, 10k
notes: ~60 ms less; bench/bench_write.py). Anything else (no command, `--help`, `--version`,
a word no module is known to register, or one its module turned out not to register) gets
the whole app, so help, suggestions for a typo and usage errors are typer's own.
"""

from __future__ import annotations

import os
import sys

from memctl.cli.base import app

# The first word of a command line -> the module registering it (tests/test_layers.py holds
# this in step with memctl.cli.app).
MODULE_OF = {
    **dict.fromkeys(("init", "add", "show", "get", "list", "edit", "forget"), "notes"),
    **dict.fromkeys(("search", "reindex"), "search"),
    **dict.fromkeys(("supersede", "archive", "restore", "health"), "lifecycle"),
    **dict.fromkeys(("recall", "project", "scratch", "episode"), "agent"),
    "mcp": "mcp",
    **dict.fromkeys(("export", "import", "sync", "log", "merge-file", "conflicts"), "sync"),
    "watch": "watch",
}


def command_word(argv: list[str]) -> str | None:
    """The command a command line names, after the global `--store PATH`; None when an
    option comes first (`--help`, `--version`) or no command is given."""
    position = 0
    while position < len(argv):
        token = argv[position]
        if token == "--store":
            position += 2
        elif token.startswith("--store="):
            position += 1
        elif token.startswith("-"):
            return None
        else:
            return token
    return None


def _load(module: str) -> None:
    # Lazy on purpose, each one: a command line loads its own module only (module docstring).
    if module == "notes":
        from memctl.cli import notes  # noqa: F401 - registers its commands on `app`
    elif module == "search":
        from memctl.cli import search  # noqa: F401
    elif module == "lifecycle":
        from memctl.cli import lifecycle  # noqa: F401
    elif module == "agent":
        from memctl.cli import agent  # noqa: F401
    elif module == "mcp":
        from memctl.cli import mcp  # noqa: F401
    elif module == "sync":
        from memctl.cli import sync  # noqa: F401
    elif module == "watch":
        from memctl.cli import watch  # noqa: F401


def _registered(word: str) -> bool:
    names = {command.name or command.callback.__name__.replace("_", "-")
             for command in app.registered_commands if command.callback is not None}
    names.update(group.name for group in app.registered_groups if group.name)
    return word in names


def main(argv: list[str]) -> None:
    stdout_before = _stdout_identity()
    try:
        _run(argv)
    except SystemExit as exit_:
        # Help and a usage error's text are written by typer's click and rich, which end a
        # closed pipe with exit 1; memctl ends it quietly with 0, as every command's own
        # output (memctl.cli.context.run_command): `memctl --help | head -1` succeeds
        # (tests/test_output.py).
        if exit_.code == 1 and _pipe_closed_on_stdout(stdout_before):
            raise SystemExit(0) from None
        raise


def _stdout_identity() -> tuple[int, int] | None:
    try:
        info = os.fstat(1)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _pipe_closed_on_stdout(before: tuple[int, int] | None) -> bool:
    """Whether click or rich met a closed stdout: click then wraps the stream to keep its
    last flush quiet (`PacifyFlushWrapper`, `_PacifyFlushWrapper` from click 8.2), rich puts
    /dev/null on descriptor 1 (`Console.on_broken_pipe`). Each does so only then."""
    if type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper":
        return True
    now = _stdout_identity()
    if before is None or now is None or now == before:
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return now == (null.st_dev, null.st_ino)


def _run(argv: list[str]) -> None:
    word = command_word(argv)
    module = MODULE_OF.get(word or "")
    if module is not None:
        _load(module)
    if module is None or not _registered(word or ""):
        from memctl.cli.app import app as whole_app  # every command module

        whole_app()
        return
    app()
