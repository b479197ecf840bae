"""Memory between stores and machines: export and import (zip, folder, other tools'
formats), git sync, a note's history, conflict copies, and git's merge driver."""

from __future__ import annotations

from memctl.core.vocab import MAX_FILE_BYTES
from memctl.exchange.conflicts import diff_copy, find_copy, list_conflicts, resolve
from memctl.exchange.sync import SyncReport, merge_file, note_log
from memctl.exchange.sync import sync as sync_store
from memctl.exchange.transfer import ExportResult, ImportReport, export_store, import_into
from memctl.index.db import ensure_fresh, open_index
from memctl.store import Store

__all__ = ["ExportResult", "ImportReport", "SyncReport", "diff_copy", "export_store", "find_copy",
           "import_into", "list_conflicts", "merge_file", "note_log", "resolve", "sync"]


def sync(store: Store, remote: str | None = None, push: bool = True) -> SyncReport:
    """`memctl sync`, with the files that do not parse named (`broken`, path and line): sync
    commits and pushes them as they are, like every other change, and says so
    (docs/sync.md)."""
    # An index this memctl cannot read (a newer memctl's) is said before anything is
    # committed or pushed, not after (docs/search.md, "The index").
    open_index(store).close()
    report = sync_store(store, remote=remote, push=push)
    with ensure_fresh(store) as index:
        report.broken = index.parse_errors()
    report.too_big_to_edit = [problem.path for problem in report.broken
                              if _file_size(store, problem.path) > MAX_FILE_BYTES]
    return report


def _file_size(store: Store, path: str) -> int:
    try:
        return (store.root / path).stat().st_size
    except OSError:
        return 0
