"""The typer app, the global `--store` option, error handling and shared helpers for the
command modules (`memctl/cli/<group>.py`), which register their commands on `app`;
`memctl.cli.app` imports them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, TypeVar

import typer
from typer.core import HAS_RICH, TyperGroup

try:  # typer 0.28 carries its own copy of click; older ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - typer < 0.28
    from click import exceptions as click_errors

from memctl import __version__
from memctl.cli.context import (  # noqa: F401 - re-exported for the command modules
    choose_store,
    current_project,
    get_store,
    print_error,
    print_usage_hint,
    run_command,
    store_path_option,
)
from memctl.core import arguments
from memctl.core.errors import ArgumentError

_RUNNING = "memctl.running"  # the key of the running command's context in `ctx.meta`


class CommandContext(typer.Context):
    """The context of every command: the one entered last is the command that runs (a
    group's before its command's), kept in the `meta` all contexts of a run share, so that a
    usage error raised while it runs names it in its hint."""

    def __enter__(self) -> CommandContext:
        self.meta[_RUNNING] = self
        return super().__enter__()  # type: ignore[return-value]


class MemctlGroup(TyperGroup):
    """Turns library errors into `error: …` on stderr with exit 1 (2 for bad usage)."""

    context_class = CommandContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in _every_command(self):
            command.context_class = CommandContext
            _help_as_written(command)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # keep the order commands were defined in

    def make_context(self, info_name: Any, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click_errors.ClickException as exc:  # a bad global option: `memctl --bogus`
            raise typer.Exit(report_click_error(exc, [] if parent is None else None)) from None

    def invoke(self, ctx: Any) -> Any:
        returned: list[Any] = []
        try:
            code = run_command(lambda: returned.append(super(MemctlGroup, self).invoke(ctx)),
                               lambda: _names(ctx.meta.get(_RUNNING, ctx)))
        except click_errors.ClickException as exc:  # bad usage of a command, found while parsing it
            code = report_click_error(exc, _names(ctx.meta.get(_RUNNING, ctx)))
        if code:
            raise typer.Exit(code)
        return returned[0] if returned else None


def report_click_error(exc: click_errors.ClickException,
                       names: list[str] | None = None) -> int:
    """Click's own errors (an unknown option, a missing argument, a bad choice) in memctl's one
    style instead of typer's framed box: `error: …` on one line, then how to get help, on
    stderr. Returns the exit code: 2 for bad usage, 1 otherwise. `names`: the command that
    was being parsed, for an error raised without its context (`option '-n' requires an
    argument` comes from click's parser, which has none, and had no hint line)."""
    if not isinstance(exc, getattr(click_errors, "NoArgsIsHelpError", ())):  # help is printed
        message = " ".join(exc.format_message().split()).rstrip(".")  # one line
        print_error(message[:1].lower() + message[1:] if message[1:2].islower() else message)
        ctx = getattr(exc, "ctx", None)
        if isinstance(exc, click_errors.UsageError) and (ctx is not None or names is not None):
            print_usage_hint(_names(ctx) if ctx is not None else names)
    return exc.exit_code


def _every_command(command: Any) -> Any:
    """A command, then every command and group under it (`memctl project add` too)."""
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _every_command(sub)


def _help_as_written(command: Any) -> None:
    """Typer's rich help reads help texts as rich markup, which drops any `[word]` as a tag:
    `pip install 'memctl-md[mcp]'` would show as `'memctl-md'`. Every docstring and option
    help of every command is plain text, so it is escaped here, once, where the app is built
    (tests/test_output.py). The epilog is not: `examples` writes it as markup, escaped."""
    if not (HAS_RICH and getattr(command, "rich_markup_mode", None) == "rich"):
        return  # click's plain help shows the text as it is
    for holder in (command, *command.params):
        for field in ("help", "short_help"):
            if isinstance(getattr(holder, field, None), str):
                setattr(holder, field, not_markup(getattr(holder, field)))


def not_markup(text: str) -> str:
    """Text shown as written where rich reads markup: each `[` escaped (rich 15 drops the
    backslash before any `[`, tag or not)."""
    return text.replace("[", "\\[")


def _names(ctx: Any) -> list[str]:
    """The command of a context as typed after `memctl`, whatever the program was called."""
    names = []
    while ctx is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return names[::-1][1:]


app = typer.Typer(
    cls=MemctlGroup,
    # `--install-completion` / `--show-completion` (bash, zsh, fish, PowerShell). typer imports
    # its completion code either way; a completion request loads the whole app, as `--help`
    # does (memctl.cli.commands), and `memctl search` never reaches typer (README, "Install").
    add_completion=True,
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


def examples(*commands: str) -> str:
    """The examples at the end of a command's --help (typer's `epilog`). One paragraph each:
    typer before 0.28 joins the lines of a paragraph into one."""
    lines = "\n\n".join(not_markup(command) for command in commands)
    return f"[bold]Examples:[/bold]\n\n{lines}"


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
