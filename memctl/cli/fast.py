"""The fast path of `memctl search`: the command agents and people run most, answered
without importing typer (~45 ms of every start-up on this kind of machine).

Only argument lists understood completely are answered here: the options spelled as the
typer command declares them (tests/test_fastpath.py holds the two in step), with valid
values. Anything else (help, a typo, an invalid value, `--`, `-n5`) goes to the typer app,
which parses it afresh, so usage errors and help text come from one place. Either way the
same `run_search` does the work. MEMCTL_NO_FAST_PATH=1 turns the fast path off.

A query may start with `-` (`memctl search -mysql`): both parsers read a word after one `-`
as the query unless it is short options of the command (`is_query_word`).
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
# The one-letter options, as click reads a word that starts with one `-`.
_SHORT_FLAGS = frozenset({spelling[1] for spelling in SEARCH_FLAGS if len(spelling) == 2} | {"h"})
_SHORT_VALUES = frozenset(spelling[1] for spelling in SEARCH_VALUES if len(spelling) == 2)


def _short_options(token: str) -> tuple[bool, bool]:
    """(whether `token` is short options of `memctl search`, whether the last one takes the
    next argument as its value). Short options are flags run together (`-a`, `-ah`), ending
    at most in one option that takes a value, with nothing attached (`-ap blog`) or, for
    `-n`, a number (`-n5`)."""
    if len(token) < 2 or token[0] != "-" or token[1] == "-":
        return False, False
    letters = token[1:]
    position = 0
    while position < len(letters) and letters[position] in _SHORT_FLAGS:
        position += 1
    if position == len(letters):
        return True, False
    letter, attached = letters[position], letters[position + 1:]
    if letter not in _SHORT_VALUES:
        return False, False
    if not attached:
        return True, True
    return letter == "n" and _DIGITS.fullmatch(attached) is not None, False


def is_query_word(token: str) -> bool:
    """A word that starts with one `-` and is not short options of the command is the query
    (`memctl search -mysql` leaves out mysql: docs/search.md), not an unknown option."""
    return len(token) > 1 and token[0] == "-" and token[1] != "-" \
        and not _short_options(token)[0]


def query_words_last(args: list[str]) -> list[str]:
    """The arguments of `memctl search` with each word `is_query_word` calls the query moved
    after `--`, where click reads it as the argument (the typer command parses these)."""
    options: list[str] = []
    queries: list[str] = []
    moved = False
    position = 0
    while position < len(args):
        token = args[position]
        if token == "--":
            queries.extend(args[position + 1:])
            break
        if is_query_word(token):
            queries.append(token)
            moved = True
        else:
            options.append(token)
            if (token in SEARCH_VALUES or _short_options(token)[1]) and position + 1 < len(args):
                position += 1
                options.append(args[position])  # an option's value, whatever it looks like
        position += 1
    return [*options, "--", *queries] if moved else args


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
        if query is None and is_query_word(token):
            query = token  # `-mysql`: the query, not an option
            position += 1
            continue
        if token.startswith("-") or query is not None:
            return None  # help, an unknown option, `--`, short options run together, or a second argument
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
