"""Creating a store (`memctl init`): a new one, or this machine's copy of an existing one
from its git remote. Its own module: the clone brings in the whole of sync (the merge, the
transfer rules), which the other upkeep commands (`reindex`, `health`) do not need."""

from __future__ import annotations

from pathlib import Path

from memctl.exchange.sync import clone_store
from memctl.store import Store

__all__ = ["create_store"]


def create_store(root: Path, clone_url: str | None = None,
                 force: bool = False) -> tuple[Store, bool, list[str]]:
    """`memctl init`: a new store (or a partial one completed), or this machine's copy of an
    existing one from its git remote. A folder holding other files than memory becomes a
    store only with `force` (`Store.init`). Returns the store, whether anything was
    created, and warnings for the user."""
    if clone_url:
        store, refused, cloned = clone_store(clone_url, root)
        warnings = [f"{path}: not checked out (links, .memctl/ and .git* files never come from "
                    "a remote; docs/security.md)" for path in refused]
        return store, cloned, warnings
    store, created = Store.init(root, force=force)
    return store, created, []
