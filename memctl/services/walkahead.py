"""The freshness walk of `memctl search`, started before the search's own imports.

A search with no live watcher walks the whole store before it queries (the freshness check,
docs/search.md, "Never stale"): on 10k notes, ~70 ms of stat calls that one process cannot
make much cheaper. The command line starts that walk in helper processes as soon as it
knows the store's folder (memctl.cli.served.walk_root), before it imports anything else of
the search (~35 ms), and the freshness check then takes its share of what is left and
gathers the rest (memctl.disk.filescan.scan_folders). MEMCTL_WALK_WORKERS=0 turns it off.
"""

from __future__ import annotations

from memctl.disk.filescan import walk_ahead as walk_ahead

__all__ = ["walk_ahead"]
