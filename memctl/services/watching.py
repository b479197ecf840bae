"""`memctl watch`: keeping the index in step with the files while the command runs."""

from __future__ import annotations

from memctl.disk.watchstate import read_status
from memctl.watch.watcher import BatchReport, Watcher

__all__ = ["BatchReport", "Watcher", "read_status"]
