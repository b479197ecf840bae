"""One place for output: JSON documents on stdout, tables for people, messages on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

_console = None
_err_console = None


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def console():  # -> rich.console.Console (lazy: rich costs start-up time)
    global _console
    if _console is None:
        from rich.console import Console

        _console = Console(highlight=False, soft_wrap=False)
    return _console


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console

        _err_console = Console(stderr=True, highlight=False)
    return _err_console


def info(message: str) -> None:
    """A message for people on stderr (never mixed into data on stdout)."""
    sys.stderr.write(message + "\n")


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    from rich.table import Table

    grid = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        # Ids must stay copyable: never wrap them.
        grid.add_column(column, overflow="fold", no_wrap=column == "id")
    for row in rows:
        grid.add_row(*["" if cell is None else str(cell) for cell in row])
    console().print(grid)
