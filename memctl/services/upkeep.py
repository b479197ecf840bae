"""A store's upkeep: creating it, its index, the health report, the TTL sweep and its undo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memctl.core.note import Note
from memctl.disk.atomic import atomic_write_text
from memctl.exchange.sync import clone_store
from memctl.index.db import RefreshStats, open_index
from memctl.memory.health import bar, build_report, problems_of, report_month, to_markdown
from memctl.memory.lifecycle import SweepPlan, restore_note, run_sweep
from memctl.store import Store

__all__ = ["archive", "create_store", "bar", "health", "problems_of", "reindex", "report_month", "restore",
           "write_health_markdown"]


def create_store(root: Path, clone_url: str | None = None) -> tuple[Store, bool, list[str]]:
    """`memctl init`: a new store (or a partial one completed), or this machine's copy of an
    existing one from its git remote. Returns the store, whether anything was created, and
    warnings for the user."""
    if clone_url:
        store, refused = clone_store(clone_url, root)
        warnings = [f"{path}: not checked out (links, .memctl/ and .git* files never come from "
                    "a remote; docs/security.md)" for path in refused]
        return store, True, warnings
    store, created = Store.init(root)
    return store, created, []


def reindex(store: Store, progress: Any = None) -> tuple[RefreshStats, dict[str, int]]:
    """Rebuild the index from the files. Returns the run's figures and the entries by kind."""
    index = open_index(store)
    try:
        stats = index.rebuild(progress=progress)
        counts = {kind: index.count(kind) for kind in ("note", "episode", "memory", "scratchpad")}
    finally:
        index.close()
    return stats, counts


def health(store: Store) -> dict[str, Any]:
    """The health report as data (docs/health.md names its keys)."""
    return build_report(store)


def write_health_markdown(report: dict[str, Any], target: Path) -> None:
    atomic_write_text(target, to_markdown(report))


def archive(store: Store, *, dry_run: bool = False) -> SweepPlan:
    return run_sweep(store, dry_run=dry_run)


def restore(store: Store, ref: str) -> tuple[Note, str]:
    return restore_note(store, ref)
