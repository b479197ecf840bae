"""A store's upkeep: the health report, the TTL sweep and its undo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memctl.core import arguments
from memctl.core.errors import UsageError, arg
from memctl.core.ids import id_argument
from memctl.core.note import Note
from memctl.core.vocab import GLOBAL
from memctl.disk.atomic import atomic_write_text
from memctl.index.db import heals_damaged_index
from memctl.memory.health import bar, build_report, problems_of, report_month, to_markdown
from memctl.memory.lifecycle import (
    LastSweep,
    RestoreResult,
    SweepItem,
    SweepPlan,
    restore_last_sweep,
    restore_note,
    restore_notes,
    run_sweep,
)
from memctl.store import Store

__all__ = ["archive", "bar", "health", "health_markdown", "LastSweep", "problems_of",
           "report_month", "restore", "restore_many", "review", "SweepItem",
           "write_health_markdown"]


@heals_damaged_index
def health(store: Store) -> dict[str, Any]:
    """The health report as data (docs/health.md names its keys)."""
    return build_report(store)


def health_markdown(report: dict[str, Any]) -> str:
    """The health report as Markdown (what `health --markdown` writes)."""
    return to_markdown(report)


REVIEW_KEYS = ("near_duplicates", "contradictions", "expired", "unrecalled")
# A problem's places named in the review, at most this many of each kind (the health report
# has them all): a recall that leaves a note out as a likely secret sends the model to the
# review, which named only "likely secrets: 1".
REVIEW_PLACES = 20


def _place(entry: Any) -> str | None:
    """One entry of a health report's list as `path:line: what`, or None for one that names
    no file (a setting, a pair of projects)."""
    if not isinstance(entry, dict):
        return None
    paths = entry.get("paths")
    if isinstance(paths, list) and paths and all(isinstance(path, str) for path in paths):
        where = ", ".join(paths)  # one problem of several files (same_fact, duplicate_ids)
    elif isinstance(entry.get("path"), str):
        where = entry["path"] + (f":{entry['line']}" if entry.get("line") else "")
    else:
        return None
    what = (f"{entry['kind']} {entry['masked']}" if entry.get("masked")
            else entry.get("message") or entry.get("reason") or entry.get("kind"))
    return f"{where}: {what}" if what else where


def _problems_with_places(report: dict[str, Any]) -> list[dict[str, Any]]:
    problems = []
    for problem in report.get("problems", []):
        entries = report.get(problem["kind"])
        places = ([place for place in map(_place, entries) if place]
                  if isinstance(entries, list) and problem["kind"] not in REVIEW_KEYS else [])
        problems.append({**problem, "places": places[:REVIEW_PLACES]})
    return problems


@heals_damaged_index
def review(store: Store, project: str | None) -> dict[str, Any]:
    """What a consolidation pass works through (docs/agents.md, the `consolidate` prompt):
    the health report's near-duplicates, possible contradictions, expired notes and notes
    nobody recalled for `unrecalled_days`, of `project` + global (every project when None),
    and the report's `problems` (its summary: the whole store's, not narrowed to `project`)
    and `unrecalled_days`."""
    if project is not None:
        arguments.scope_name(project)
    report = build_report(store)
    scope = None if project is None else {project, GLOBAL}

    def mine(entry: dict[str, Any]) -> bool:
        if scope is None:
            return True
        briefs = [entry["a"], entry["b"]] if "a" in entry else [entry]
        return any(brief.get("project") in scope for brief in briefs)

    picked: dict[str, Any] = {key: [e for e in report.get(key, []) if mine(e)]
                              for key in REVIEW_KEYS}
    picked.update({"project": project, "unrecalled_days": report.get("unrecalled_days"),
                   "problems": _problems_with_places(report)})
    return picked


def write_health_markdown(report: dict[str, Any], target: Path) -> None:
    atomic_write_text(target, to_markdown(report))


def archive(store: Store, *, dry_run: bool = False) -> SweepPlan:
    return run_sweep(store, dry_run=dry_run)


def restore(store: Store, ref: str) -> tuple[Note, str]:
    return restore_note(store, id_argument(ref))  # the one id validator, as `restore_many`


def restore_many(store: Store, refs: list[str], *, last_sweep: bool = False) -> RestoreResult:
    """`restore ID…` or `restore --last-sweep` (the notes the newest sweep archived that are
    still archived): all in one commit, or nothing when an id is unknown or active."""
    if last_sweep and refs:
        raise UsageError(f"give note ids or {arg('last_sweep')}, not both")
    if last_sweep:
        return restore_last_sweep(store)
    if not refs:
        raise UsageError(f"give the ids of the notes to restore, or {arg('last_sweep')}")
    return restore_notes(store, [id_argument(ref) for ref in refs])
