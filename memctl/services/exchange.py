"""Memory between stores and machines: export and import (zip, folder, other tools'
formats), git sync, a note's history, conflict copies, and git's merge driver."""

from __future__ import annotations

from memctl.exchange.conflicts import find_copy, list_conflicts, resolve
from memctl.exchange.sync import SyncReport, merge_file, note_log, sync
from memctl.exchange.transfer import ExportResult, ImportReport, export_store, import_into

__all__ = ["ExportResult", "ImportReport", "SyncReport", "export_store", "find_copy",
           "import_into", "list_conflicts", "merge_file", "note_log", "resolve", "sync"]
