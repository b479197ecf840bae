"""The fast path of `memctl search`, `show` and `add`: the commands agents run on nearly
every step, answered without importing typer (~45 ms of every start-up on this kind of
machine).

Only argument lists understood completely are answered here: the options spelled as the
typer command declares them (tests/test_fastpath.py holds the two in step), with valid
values. Anything else (help, a typo, an invalid value, `--`, `-n5`) goes to the typer app,
which parses it afresh, so usage errors and help text come from one place. Either way the
same `run_search`, `run_show` or `run_add` does the work (the last two imported only for
their command: a search loads neither). MEMCTL_NO_FAST_PATH=1 turns the fast path off.

A query may start with `-` (`memctl search -mysql`): both parsers read a word after one `-`
as the query unless it is short options of the command (`is_query_word`).
"""

from __future__ import annotations

import os
import re

from memctl.cli.context import choose_store, run_command
from memctl.cli.searching import run_search
from memctl.cli.served import search_store_option
from memctl.core import arguments
from memctl.core.errors import ArgumentError
from memctl.core.vocab import NOTE_TYPES
from memctl.services.retrieval import leave_open_at_exit

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

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


def _read_option(rest: list[str], position: int, flags: dict[str, str],
                 values: dict[str, str]) -> tuple[str | None, str | None, int] | None:
    """The token of `rest` at `position`, read as the typer command would: (a flag's key,
    None, next) or (a value option's key, its value, next), `--name=value` or `--name value`;
    (None, the token, next) for anything else; None for a value option with no value."""
    token = rest[position]
    if token in flags:
        return flags[token], None, position + 1
    name, value = token, None
    if token.startswith("--") and "=" in token:
        name, value = token.split("=", 1)
    if name not in values:
        return None, token, position + 1
    if value is not None:
        return values[name], value, position + 1
    if position + 1 >= len(rest):
        return None
    return values[name], rest[position + 1], position + 2


def _options(rest: list[str], flags: dict[str, str], values: dict[str, str],
             convert: Callable[[str, str], object], repeatable: frozenset[str],
             kwargs: dict[str, object], word_ok: Callable[[str], bool]) -> list[str] | None:
    """Fills `kwargs` with the options of `rest` (each value converted and valid; a key of
    `repeatable` collects its values in the list `kwargs` has for it) and returns the one
    other word; None when the typer app should take the arguments: a value that does not
    convert, a second word, or a word `word_ok` refuses."""
    words: list[str] = []
    position = 0
    while position < len(rest):
        read = _read_option(rest, position, flags, values)
        if read is None:
            return None
        key, token, position = read
        if token is None:
            kwargs[key] = True  # type: ignore[index]
            continue
        if key is not None:
            converted = None if token.startswith("-") else convert(key, token)
            if converted is None:
                return None
            if key in repeatable:
                kwargs[key].append(converted)  # type: ignore[attr-defined]
            else:
                kwargs[key] = converted
            continue
        if words or not word_ok(token):
            return None
        words.append(token)
    return words


def parse_search(argv: list[str]) -> tuple[str | None, dict[str, object]] | None:
    """(the --store option, the keyword arguments of `run_search`) for `[--store PATH] search
    …`, or None when the typer app should take the arguments."""
    position, store = search_store_option(argv)
    if position is None:
        return None
    rest = argv[position + 1:]
    kwargs: dict[str, object] = {"project": None, "all_projects": False, "types": [], "tags": [],
                              "since": None, "limit": None, "include_stale": False,
                              "explain": False, "json_output": False}
    # `-mysql` is the query, not an option; any other word with `-` is help, an unknown
    # option, `--` or short options run together.
    words = _options(rest, SEARCH_FLAGS, SEARCH_VALUES, _convert, _REPEATABLE, kwargs,
                     lambda token: is_query_word(token) or not token.startswith("-"))
    if not words:
        return None
    kwargs["query"] = words[0]
    return store, kwargs


def _command_args(argv: list[str], command: str) -> tuple[str | None, list[str]] | None:
    """(the --store option, the arguments after the command) for `[--store PATH] COMMAND
    …`, or None when the command line is anything else."""
    store: str | None = None
    position = 0
    if argv[:1] == ["--store"] and len(argv) > 1 and not argv[1].startswith("-"):
        store, position = argv[1], 2
    elif argv[:1] and argv[0].startswith("--store="):
        store, position = argv[0][len("--store="):], 1
    if argv[position:position + 1] != [command]:
        return None
    return store, argv[position + 1:]


def parse_show(argv: list[str]) -> tuple[str | None, str, bool] | None:
    """(the --store option, the id, --json) for `[--store PATH] show ID [--json]` (`--json`
    before or after the id), or None when the typer app should take the arguments."""
    found = _command_args(argv, "show")
    if found is None:
        return None
    store, rest = found
    json_output = "--json" in rest
    words = [token for token in rest if token != "--json"]
    if len(words) != 1 or words[0].startswith("-") or len(rest) - len(words) > 1:
        return None  # help, another option, `--`, no id or two
    return store, words[0], json_output


# `memctl add`: option spelling -> run_add keyword (tests/test_fastpath.py holds these equal
# to the typer command's options).
ADD_FLAGS = {"--global": "global_scope", "-g": "global_scope", "--force": "force",
             "--allow-secret": "allow_secret", "--json": "json_output"}
ADD_VALUES = {"--type": "note_type", "-t": "note_type", "--project": "project",
              "-p": "project", "--importance": "importance", "-i": "importance",
              "--tags": "tags", "--subject": "subject", "--predicate": "predicate",
              "--expires": "expires", "--corrects": "corrects",
              "--source-episode": "source_episode"}


def _add_value(key: str, value: str) -> object:
    """The value as the typer command would pass it (its choice, its callbacks' validators),
    or None where typer must decide and word the error."""
    if key == "note_type":
        # click's case-insensitive choice, for the plain ASCII spellings of a type.
        return next((kind for kind in NOTE_TYPES if value.isascii()
                     and value.casefold() == kind.casefold()), None)
    try:
        if key == "project":
            return arguments.project_name(value)
        if key == "importance":
            return arguments.importance(int(value)) if _DIGITS.fullmatch(value) else None
    except ArgumentError:
        return None
    return value


def parse_add(argv: list[str]) -> tuple[str | None, dict[str, object]] | None:
    """(the --store option, the keyword arguments of `run_add`) for `[--store PATH] add …`
    with one TEXT (or `-`) and options spelled as the typer command declares them, each
    value valid; None when the typer app should take the arguments."""
    found = _command_args(argv, "add")
    if found is None:
        return None
    store, rest = found
    kwargs: dict[str, object] = {}
    # One TEXT, or `-` for stdin; a given twice takes the last value, as click does.
    words = _options(rest, ADD_FLAGS, ADD_VALUES, _add_value, frozenset(), kwargs,
                     lambda token: token == "-" or not token.startswith("-"))
    if not words:
        return None
    return store, {"text": words[0], **kwargs}


def run_fast(argv: list[str], *, exits: bool = False) -> int | None:
    """The exit code of a command answered here, or None to hand it to the typer app.
    `exits`: the process ends as soon as a search is answered (memctl.cli.main's `finish`),
    which closes the access counters' connection (memctl.disk.counters.leave_open_at_exit)."""
    if os.environ.get("MEMCTL_NO_FAST_PATH") == "1":
        return None
    if "show" in argv:
        shown = parse_show(argv)
        if shown is not None:
            store_option, note_id, json_output = shown
            choose_store(store_option)
            # Lazy: `memctl search` never loads what `show` needs (tests/test_layers.py).
            from memctl.cli.showing import run_show

            return run_command(lambda: run_show(note_id, json_output=json_output), lambda: ["show"])
    if "add" in argv:
        adding = parse_add(argv)
        if adding is not None:
            store_option, add_kwargs = adding
            choose_store(store_option)
            # Lazy: the write-time checks and the git commit, never for a search.
            from memctl.cli.adding import run_add

            return run_command(lambda: run_add(**add_kwargs), lambda: ["add"])  # type: ignore[arg-type]
    if "search" not in argv:
        return None
    parsed = parse_search(argv)
    if parsed is None:
        return None

    store_option, kwargs = parsed
    choose_store(store_option)
    if exits:
        leave_open_at_exit()
    return run_command(lambda: run_search(**kwargs), lambda: ["search"])  # type: ignore[arg-type]
