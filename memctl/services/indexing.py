"""The index rebuilt from the files (`memctl reindex`). Its own module: the other upkeep
commands' rules (the health report, the sweep, all of sync for `init --clone`) are no part
of a reindex's start-up."""

from __future__ import annotations

from typing import Any

from memctl.index.db import RefreshStats, heals_damaged_index, open_index
from memctl.store import Store

__all__ = ["reindex"]


@heals_damaged_index
def reindex(store: Store, progress: Any = None) -> tuple[RefreshStats, dict[str, int]]:
    """Rebuild the index from the files. Returns the run's figures and the entries by kind."""
    index = open_index(store, replace_newer=True)
    try:
        stats = index.rebuild(progress=progress)
        counts = {kind: index.count(kind) for kind in ("note", "episode", "memory", "scratchpad")}
    finally:
        index.close()
    return stats, counts
