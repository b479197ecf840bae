"""What every command shares, without typer: the chosen store and project, and how an error
reaches the user. Both the typer app and the fast path (`memctl.cli.fast`) use it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from memctl.cli.output import visible
from memctl.core import clock
from memctl.core.errors import (
    CLI,
    MemctlError,
    UsageError,
    VariableError,
    arg,
    exit_code,
    machine_error,
    quoted,
)
from memctl.services import stores

_state: dict[str, object] = {"store_option": None, "store": None}


def choose_store(option: str | None) -> None:
    """Remember `--store` for this invocation (the store is opened on first use)."""
    _state["store_option"] = option
    _state["store"] = None
    _state["project_noted"] = False


def get_store() -> stores.Store:
    """The store chosen by --store / MEMCTL_STORE / the default (created on first use)."""
    if _state.get("store") is None:
        _check_clock()
        _state["store"] = stores.open_store(_state.get("store_option"))  # type: ignore[arg-type]
    return _state["store"]  # type: ignore[return-value]


def store_path_option() -> Path:
    """The chosen store's folder, for commands such as init that make it."""
    _check_clock()
    return stores.store_location(_state.get("store_option"))  # type: ignore[arg-type]


def _check_clock() -> None:
    """A bad `MEMCTL_NOW` is refused by every command that works on a store, whether or not
    it reads the clock (`list` did not, and ran on); `--help` and bad usage come first."""
    if os.environ.get("MEMCTL_NOW"):
        clock.now()


def current_project(option: str | None, global_scope: bool = False) -> str:
    """The scope a command works in: `--global`, else the `--project` option, else the
    environment's or the repository's (`stores.project_and_note`). `--global` beside a
    `--project` of another name is bad usage, never one of the two silently."""
    if global_scope:
        if option is not None and option.strip().lower() != stores.GLOBAL:
            raise UsageError(f"{arg('global')} and {arg('project')} {quoted(option)} name two "
                             "scopes: give one")
        return stores.GLOBAL
    project, note = stores.project_and_note(get_store(), option)
    if note and not _state.get("project_noted"):
        _state["project_noted"] = True  # once per command
        sys.stderr.write(f"note: {visible(CLI.render(note))}\n")
    return project


def print_error(message: str) -> None:
    """`error: MESSAGE` on one line: a line break in it can only come from what it quotes (a
    path, a value) and is written as `\\n`, as a terminal's control characters are; a likely
    secret in it is masked."""
    # Lazy: only a failing command scans its message (`memctl search` starts without it).
    from memctl.core.secrets import mask_secrets

    # A value quoted back (`--expires ghp_…`, an id, a name) is shown with any likely secret
    # masked, as every other message shows one (docs/security.md).
    line = visible(mask_secrets(message)).replace("\r", "\\r").replace("\n", "\\n")
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()


def print_usage_hint(names: Sequence[str]) -> None:
    """The line after a usage error's: where to read how the command is used (README,
    "Errors"). `names`: the command as typed after `memctl` (`project add`; none: memctl's)."""
    sys.stderr.write(f"hint: try '{' '.join(['memctl', *names])} --help'\n")


def run_command(action: Callable[[], object], command: Callable[[], Sequence[str]]) -> int:
    """Run one command and return its exit code: a memctl error becomes one `error:` line on
    stderr (exit 2 for bad usage, 1 otherwise, 130 for Ctrl-C); a closed stdout ends quietly.
    Bad usage is followed by the hint line, for every command (`command`: the names of the
    one that ran, asked only then), except a bad environment variable: no command's --help
    tells how to set it. The one mapping for the typer app and the fast path."""
    try:
        action()
    except (MemctlError, KeyboardInterrupt) as exc:
        print_error("interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc))
        code = exit_code(exc)
        if code == 2 and not isinstance(exc, VariableError):
            print_usage_hint(command())
        return code
    except BrokenPipeError:
        _quiet_stdout()
    except Exception as exc:
        message = machine_error(exc)  # a full disk, say: one line, not a traceback
        if message is None:
            raise
        print_error(CLI.render(message))
        return 1
    return 0


def _quiet_stdout() -> None:
    """After a closed pipe, exiting must not fail again flushing stdout."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
