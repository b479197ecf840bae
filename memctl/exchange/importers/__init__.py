"""Importers: memory kept by other tools, turned into memctl notes (`source: import`). The
readers share `common`; `run` picks one by kind. See docs/sync.md for each format."""

from __future__ import annotations

from pathlib import Path

from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.agents import import_agents_md
from memctl.exchange.importers.cline import import_cline
from memctl.exchange.importers.common import KINDS, detect
from memctl.exchange.importers.markdown import import_markdown
from memctl.exchange.importers.mem0 import import_mem0

__all__ = ["KINDS", "detect", "run"]


def run(kind: str, source: Path, project: str) -> tuple[list[BundleFile], list[Problem]]:
    """Files in store layout for `project`, and the invalid records met on the way."""
    if kind == "markdown":
        reader = import_markdown
    elif kind == "agents":
        reader = import_agents_md
    elif kind == "cline":
        reader = import_cline
    elif kind == "mem0":
        reader = import_mem0
    else:
        raise ValueError(f"unknown importer {kind!r}")
    return reader(Path(source), project)
