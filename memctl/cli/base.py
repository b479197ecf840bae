"""The typer app, the global `--store` option, error handling and shared helpers for the
command modules (`memctl/cli/<group>.py`), which register their commands on `app`;
`memctl.cli.app` imports them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, TypeVar

import typer
from typer.core import TyperGroup

from memctl import __version__
from memctl.cli.context import (  # noqa: F401 - re-exported for the command modules
    choose_store,
    current_project,
    get_store,
    run_command,
    store_path_option,
)
from memctl.core import arguments
from memctl.core.errors import ArgumentError


class MemctlGroup(TyperGroup):
    """Turns library errors into `error: …` on stderr with exit 1 (2 for bad usage)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # keep the order commands were defined in

    def invoke(self, ctx: Any) -> Any:
        returned: list[Any] = []
        code = run_command(lambda: returned.append(super(MemctlGroup, self).invoke(ctx)))
        if code:
            raise typer.Exit(code)
        return returned[0] if returned else None


app = typer.Typer(
    cls=MemctlGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Long-term memory for AI coding agents, kept as Markdown files in git.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _version(value: bool) -> None:
    if value:
        typer.echo(f"memctl {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    store: Optional[str] = typer.Option(
        None, "--store", metavar="PATH",
        help="The store folder (default: $MEMCTL_STORE, else ~/.local/share/memctl).",
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    choose_store(store)


T = TypeVar("T")


def as_option_check(check: Callable[[Any], T], value: Any) -> T:
    """Run one of `memctl.core.arguments`' validators inside a typer callback, so a bad value
    is bad usage (exit 2) in typer's words, naming the option."""
    try:
        return check(value)
    except ArgumentError as exc:
        raise typer.BadParameter(exc.problem) from None


def project_callback(value: Optional[str]) -> Optional[str]:
    """Validates --project at parse time so a bad name is bad usage (exit 2)."""
    return None if value is None else as_option_check(arguments.project_name, value)


# Reusable option declarations, so every command spells them the same way.
JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document on stdout.")
PROJECT_OPTION = typer.Option(None, "--project", "-p", callback=project_callback,
                              help="Project (default: $MEMCTL_PROJECT, else the git repo you are in, else 'default').")
def checked(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A typer callback running one of `memctl.core.arguments`' validators (None passes)."""
    return lambda value: None if value is None else as_option_check(check, value)


LIMIT_OPTION = typer.Option(None, "--limit", "-n", callback=checked(arguments.limit), help="At most N results.")
