"""Importers: memory kept by other tools, turned into memctl notes (`source: import`) and
items of memctl's own `MEMORY.md` / `SCRATCHPAD.md`. The readers share `common`; `run` picks
one by kind. See docs/sync.md for each format."""

from __future__ import annotations

from pathlib import Path

from memctl.exchange.importers.agents import import_agents_md
from memctl.exchange.importers.claudemem import import_claude_memory
from memctl.exchange.importers.cline import import_cline
from memctl.exchange.importers.common import KINDS, Block, Imported, consistent_dates, detect
from memctl.exchange.importers.markdown import import_markdown
from memctl.exchange.importers.mem0 import import_mem0

__all__ = ["KINDS", "Block", "Imported", "detect", "run"]

_READERS = {
    "markdown": import_markdown,
    "agents": import_agents_md,
    "cline": import_cline,
    "claude-memory": import_claude_memory,
    "mem0": import_mem0,
}


def run(kind: str, source: Path, project: str) -> Imported:
    """What the source holds for `project`, in memctl's terms (see `common.Imported`)."""
    reader = _READERS.get(kind)
    if reader is None:
        raise ValueError(f"unknown importer {kind!r}")
    imported = reader(Path(source), project)
    consistent_dates(imported)  # every importer's notes, in this one place
    return imported
