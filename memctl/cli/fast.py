"""The fast path of `memctl search`: the command agents and people run most, answered
without importing typer (~45 ms of every start-up on this kind of machine).

Only argument lists understood completely are answered here: the options spelled as the
typer command declares them (tests/test_fastpath.py holds the two in step), with valid
values. Anything else (help, a typo, an invalid value, `--`, `-n5`) goes to the typer app,
which parses it afresh, so usage errors and help text come from one place. Either way the
same `run_search` does the work. MEMCTL_NO_FAST_PATH=1 turns the fast path off.
"""

from __future__ import annotations

import os
import re

from memctl.cli.context import choose_store, run_command
from memctl.cli.searching import run_search
from memctl.core import arguments
from memctl.core.errors import ArgumentError

# option spelling -> run_search keyword
SEARCH_FLAGS = {
    "--all-projects": "all_projects", "-a": "all_projects",
    "--include-stale": "include_stale", "--explain": "explain", "--json": "json_output",
}
SEARCH_VALUES = {
    "--project": "project", "-p": "project", "--type": "types", "-t": "types",
    "--tag": "tags", "--since": "since", "--limit": "limit", "-n": "limit",
}
_REPEATABLE = frozenset({"types", "tags"})
_DIGITS = re.compile(r"[0-9]+")


_CHECKS = {"project": arguments.project_name, "types": arguments.search_type,
           "limit": lambda value: arguments.limit(int(value)) if _DIGITS.fullmatch(value) else None}


def _convert(key: str, value: str) -> object:
    """The value as the typer command would pass it (the same validators), or None where
    typer must decide and word the error."""
    check = _CHECKS.get(key)
    if check is None:
        return value
    try:
        return check(value)
    except ArgumentError:
        return None


def parse_search(argv: list[str]) -> tuple[str | None, dict[str, object]] | None:
    """(the --store option, the keyword arguments of `run_search`) for `[--store PATH] search
    …`, or None when the typer app should take the arguments."""
    store: str | None = None
    position = 0
    while position < len(argv) and argv[position] != "search":
        token = argv[position]
        if token == "--store" and position + 1 < len(argv) \
                and not argv[position + 1].startswith("-"):
            store = argv[position + 1]
            position += 2
        elif token.startswith("--store="):
            store = token[len("--store="):]
            position += 1
        else:
            return None
    if position >= len(argv):
        return None
    rest = argv[position + 1:]
    kwargs: dict[str, object] = {"project": None, "all_projects": False, "types": [], "tags": [],
                              "since": None, "limit": None, "include_stale": False,
                              "explain": False, "json_output": False}
    query: str | None = None
    position = 0
    while position < len(rest):
        token = rest[position]
        if token in SEARCH_FLAGS:
            kwargs[SEARCH_FLAGS[token]] = True
            position += 1
            continue
        name, value = token, None
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
        if name in SEARCH_VALUES:
            if value is None:
                if position + 1 >= len(rest):
                    return None
                value = rest[position + 1]
                position += 2
            else:
                position += 1
            key = SEARCH_VALUES[name]
            converted = None if value.startswith("-") else _convert(key, value)
            if converted is None:
                return None
            if key in _REPEATABLE:
                kwargs[key].append(converted)
            else:
                kwargs[key] = converted
            continue
        if token.startswith("-") or query is not None:
            return None  # help, an unknown option, `--`, `-word`, or a second argument
        query = token
        position += 1
    if query is None:
        return None
    kwargs["query"] = query
    return store, kwargs


def run_fast(argv: list[str]) -> int | None:
    """The exit code of a command answered here, or None to hand it to the typer app."""
    if "search" not in argv or os.environ.get("MEMCTL_NO_FAST_PATH") == "1":
        return None
    parsed = parse_search(argv)
    if parsed is None:
        return None

    store_option, kwargs = parsed
    choose_store(store_option)
    return run_command(lambda: run_search(**kwargs))  # type: ignore[arg-type]
