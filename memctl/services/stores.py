"""Which store and which project a command works on. On `memctl search`'s start-up path:
light imports only (tests/test_layers.py)."""

from __future__ import annotations

from pathlib import Path

from memctl.core.vocab import GLOBAL
from memctl.disk import repositories
from memctl.disk.layout import choose_project, resolve_project, resolve_store_path
from memctl.store import Store

__all__ = ["GLOBAL", "Store", "current_project", "open_store", "project_and_note", "store_location"]


def store_location(option: str | None) -> Path:
    """The store's folder from `--store`, else `MEMCTL_STORE`, else the per-user default."""
    return resolve_store_path(option)[0]


def open_store(option: str | None) -> Store:
    """The chosen store; only the per-user default is created on first use, so a mistyped
    path never silently becomes a new store."""
    path, is_default = resolve_store_path(option)
    return Store.open(path, create_if_missing=is_default)


def current_project(store: Store, option: str | None, global_scope: bool = False) -> str:
    """`global`, or the project named, else `MEMCTL_PROJECT`, else the git repository the
    shell stands in, else `default`."""
    if global_scope:
        return GLOBAL
    return resolve_project(option, store.root, repository=repositories.lookup(store.root))


def project_and_note(store: Store, option: str | None) -> tuple[str, str | None]:
    """`current_project`, and a note for the user when a git repository's folder name had to
    change to make the project name (worded with `arg()` markers; None otherwise)."""
    return choose_project(option, store.root, repository=repositories.lookup(store.root))
