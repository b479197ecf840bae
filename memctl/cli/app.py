"""The whole typer CLI: the app of `memctl.cli.base` with every command module registered
on it, in the order `memctl --help` lists them. `memctl search` does not come here
(`memctl.cli.fast`)."""

from __future__ import annotations

# isort: off
from memctl.cli import notes  # noqa: F401 - each import registers its commands on `app`
from memctl.cli import search  # noqa: F401
from memctl.cli import lifecycle  # noqa: F401
from memctl.cli import agent  # noqa: F401
from memctl.cli import mcp  # noqa: F401
from memctl.cli import sync  # noqa: F401
from memctl.cli import watch  # noqa: F401
# isort: on
from memctl.cli.base import app

__all__ = ["app", "main"]


def main() -> None:
    app()
