"""What every command shares, without typer: the chosen store and project, and how an error
reaches the user. Both the typer app and the fast path (`memctl.cli.fast`) use it."""

from __future__ import annotations

import sys

from memctl.disk.layout import GLOBAL, resolve_project, resolve_store_path
from memctl.store import Store

_state: dict[str, object] = {"store_option": None, "store": None}


def choose_store(option: str | None) -> None:
    """Remember `--store` for this invocation (the store is opened on first use)."""
    _state["store_option"] = option
    _state["store"] = None


def get_store():  # -> memctl.store.Store
    """The store chosen by --store / MEMCTL_STORE / the default (created on first use)."""
    if _state.get("store") is None:
        path, is_default = resolve_store_path(_state.get("store_option"))
        _state["store"] = Store.open(path, create_if_missing=is_default)
    return _state["store"]


def store_path_option():  # -> pathlib.Path for commands such as init

    return resolve_store_path(_state.get("store_option"))[0]


def current_project(option: str | None, global_scope: bool = False) -> str:
    if global_scope:
        return GLOBAL
    store = get_store()
    return resolve_project(option, store.root)


def print_error(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
