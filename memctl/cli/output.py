"""One place for output: JSON documents on stdout, tables for people, messages on stderr."""

from __future__ import annotations

import json
import sys

from memctl.core.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
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


# Columns that keep their full width (ids must stay copyable); the others share what is left
# and are cut with an ellipsis.
_RIGID = {"id", "type", "imp", "importance", "updated", "created", "status", "#", "commit",
          "time", "notes", "action", "outcome", "score", "project", "kind", "count", ""}


def read_text_argument(text: str) -> str:
    """A TEXT argument; `-` means the text comes from stdin."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("stdin is not UTF-8 text") from None


def report_parse_errors(problems: Any) -> None:
    """Files that do not parse (an index's `parse_errors()`), named with path and line on
    stderr by the command meeting them."""
    for problem in problems:
        warn(f"{problem.path}:{problem.line}: {problem.message} (its last good version is used)")


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table

    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max([cell_len(column)] + [cell_len(row[index]) for row in cells])
              for index, column in enumerate(columns)]
    fixed = sum(width + 2 for width, column in zip(widths, columns, strict=True) if column in _RIGID)
    elastic = [c for c in columns if c not in _RIGID]
    room = max(12, (console().width - fixed - 1) // max(1, len(elastic)) - 2)
    grid = Table(title=title, show_lines=False, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for column, width in zip(columns, widths, strict=True):
        if column not in _RIGID:
            grid.add_column(column, no_wrap=True, overflow="ellipsis", max_width=room)
        else:
            grid.add_column(column, no_wrap=True, min_width=width)
    for row in cells:
        grid.add_row(*row)
    console().print(grid)
