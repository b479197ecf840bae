"""`memctl.toml`: the store's settings. Every setting has a default here, so a store with an
empty or partial file works, and `memctl init` writes this same text for people to edit."""

from __future__ import annotations

import re
from pathlib import Path

from memctl.core.errors import QUOTED_CHARS, MemctlError, quoted

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


SETTINGS_FILE = "memctl.toml"

# section -> key -> (default, what it does). `memctl init` writes these as memctl.toml.
SETTINGS: dict[str, dict[str, tuple[Any, str]]] = {
    "search": {
        "recency_half_life_days": (90, "a note's recency weight halves every N days"),
        "default_limit": (20, "hits shown when --limit is not given"),
    },
    "recall": {
        "max_notes": (8, "notes in a recall block"),
        "note_chars": (100, "each note cut to this many characters"),
        "total_chars": (6000, "cap for the whole block (L2 + scratchpad + notes)"),
    },
    "ttl": {
        "demote_after_days": (90, "not recalled for this long and below the threshold: demoted"),
        "demote_below_importance": (5, "the threshold for demotion"),
        "archive_after_days": (180, "not recalled for this long: archived"),
        "protect_importance": (9, "this importance or more is never archived automatically"),
    },
    "duplicates": {
        "merge_threshold": (88, "similarity (0-100) at which `add` merges into an existing note"),
        "similar_threshold": (70, "similarity at which a possible contradiction is reported"),
    },
    "memory": {
        "max_bytes": (8192, "MEMORY.md over this is flagged for distilling"),
    },
    "health": {
        "listed_pairs": (50, "near-duplicates and contradictions listed per project, the most alike first"),
    },
}
# The range each number must be in: a value out of it is an error naming the setting, never
# silently used (`archive_after_days = -1` would archive every note at once).
RANGES: dict[str, tuple[float, float]] = {
    "search.recency_half_life_days": (1, 36500), "search.default_limit": (1, 1_000_000),
    "recall.max_notes": (0, 1000), "recall.note_chars": (10, 100_000),
    "recall.total_chars": (200, 10_000_000),
    "ttl.demote_after_days": (1, 36500), "ttl.demote_below_importance": (1, 10),
    "ttl.archive_after_days": (1, 36500), "ttl.protect_importance": (1, 11),
    "duplicates.merge_threshold": (0, 100), "duplicates.similar_threshold": (0, 100),
    "memory.max_bytes": (256, 100_000_000),
    "health.listed_pairs": (0, 1_000_000),
}
DEFAULTS: dict[str, dict[str, Any]] = {
    section: {key: value for key, (value, _help) in values.items()}
    for section, values in SETTINGS.items()
}

_SECTION_TITLES = {
    "search": "Ranked search",
    "recall": "The budgeted block `memctl recall` prints for an agent",
    "ttl": "Forgetting: `memctl archive` (days count from the last recall, else the last update)",
    "duplicates": "Write-time checks in `memctl add`",
    "memory": "The L2 project file",
    "health": "The health report (`memctl health`, docs/health.md)",
}


def default_toml() -> str:
    """The text `memctl init` writes: every default, with a comment saying what it does."""
    out = ["# memctl settings. The values shown are the defaults; delete a line to go back to it.", ""]
    for section, values in SETTINGS.items():
        out.append(f"# {_SECTION_TITLES[section]}")
        out.append(f"[{section}]")
        for key, (value, help_text) in values.items():
            out.append(f"{key} = {_toml_value(value)}  # {help_text}")
        out.append("")
    return "\n".join(out)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _only_comments(raw: bytes) -> bool:
    return all(not line.strip() or line.lstrip().startswith(b"#") for line in raw.splitlines())


# One line of the TOML `memctl init` writes, and of a person's edit of it: a `[section]`, or
# `key = value` with a number, true/false or a string without escapes; comments, blank lines.
# Compiled at its first use (`re` keeps it), not at import: most files are the default one.
_SIMPLE_LINE = (
    r'[ \t]*(?:\[[ \t]*(?P<section>[A-Za-z0-9_-]+)[ \t]*\]'
    r'|(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*(?P<value>[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?'
    r'|true|false|"[^"\\\x00-\x08\x0a-\x1f\x7f]*"))?'
    r'[ \t]*(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?')


# A number of more characters than this is left to tomllib (Python converts at most 4,300
# digits to an int; no setting needs more than a few).
_MAX_DIGITS = 100


def _simple_toml(raw: bytes) -> dict[str, dict[str, Any]] | None:
    """What `tomllib.loads` reads from a file of `_SIMPLE_LINE`s, or None for anything else
    (tomllib then reads it, or words its error). tomllib and the `typing` it imports cost
    ~10 ms of every command, a search included, whenever the file is not the one `memctl init`
    writes today: an older store's, or one with a value changed (tests/test_settings.py)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    data: dict[str, dict[str, Any]] = {}
    section: dict[str, Any] | None = None
    for line in text.replace("\r\n", "\n").split("\n"):  # a lone \r is tomllib's error
        found = re.fullmatch(_SIMPLE_LINE, line)
        if found is None:
            return None
        name, key, value = found.group("section", "key", "value")
        if name is not None:
            if name in data:
                return None  # a table defined twice: tomllib's error
            section = data[name] = {}
        elif key is not None:
            if section is None or key in section:
                return None  # a key outside any table, or twice
            if value[0] == '"':
                section[key] = value[1:-1]
            elif value in ("true", "false"):
                section[key] = value == "true"
            elif len(value) > _MAX_DIGITS:
                return None  # past Python's int conversion: tomllib's error, worded below
            else:
                section[key] = float(value) if "." in value else int(value)
    return data


def _reason(exc: BaseException) -> str:
    """A TOML reader's error as a person can act on it: Python's own words for a number past
    its int conversion limit name a function of Python's."""
    if type(exc) is ValueError and "digits" in str(exc):
        return "it holds a number of thousands of digits"
    return str(exc)


def _shown(value: Any) -> str:
    """A value of the file as a message shows it: its start, when long (a 20 MB string)."""
    if isinstance(value, str):
        return quoted(value)
    written = repr(value)
    return written if len(written) <= QUOTED_CHARS else written[:QUOTED_CHARS] + "…"


# The file marks a folder as a store: one deleted leaves no store until `memctl init` writes
# the defaults again (it said "delete it to use the defaults", and then every command said
# the folder was no memctl store).
_WAY_OUT = "fix the file, or delete it and run `memctl init` to write the defaults"


class Settings:
    def __init__(self, values: dict[str, dict[str, Any]] | None = None) -> None:
        self._values = values or {}

    @classmethod
    def load(cls, store_root: Path) -> Settings:
        path = Path(store_root) / SETTINGS_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls({})
        except OSError as exc:
            raise MemctlError(f"cannot read {SETTINGS_FILE}: {exc.strerror}") from exc
        if raw == default_toml().encode("utf-8") or _only_comments(raw):
            # The file `memctl init` wrote, untouched (or nothing but comments): its values
            # are the defaults, and skipping the TOML parser saves every command ~6 ms.
            return cls({})
        simple = _simple_toml(raw)
        if simple is not None:
            return cls(simple)
        import tomllib

        from memctl.core.tomlkeys import long_key_problem  # with tomllib: never for a search

        try:
            text = raw.decode("utf-8")
            too_long = long_key_problem(text)
            if too_long is not None:
                raise MemctlError(f"{SETTINGS_FILE} {too_long}; {_WAY_OUT}")
            data = tomllib.loads(text)
        except (ValueError, RecursionError) as exc:
            # ValueError: tomllib's own errors, a file that is no UTF-8, and a whole number
            # of more digits than Python converts (4,300), which was a traceback.
            raise MemctlError(f"{SETTINGS_FILE} does not parse: {_reason(exc)}; {_WAY_OUT}") from exc
        return cls(data)

    def unknown(self) -> list[str]:
        """The settings of the file memctl does not know (`recall.max_note`, a `[serch]`
        table's keys, a key outside any table), dotted: each changes nothing."""
        found: list[str] = []
        for section, table in self._values.items():
            known = SETTINGS.get(section)
            if not isinstance(table, dict):
                if known is None:
                    found.append(section)  # (a known table given a value: `get` says so)
                continue
            found.extend(f"{section}.{key}" for key in table if known is None or key not in known)
        return found

    def get(self, dotted: str) -> Any:
        section, key = dotted.split(".", 1)
        default = DEFAULTS[section][key]
        table = self._values.get(section, {})
        if not isinstance(table, dict):  # `search = 3`: a value where a [search] table goes
            raise MemctlError(f"{SETTINGS_FILE}: {section} must be a table of settings "
                              f"([{section}] on a line of its own, then `{key} = …`), not "
                              f"{table!r}; fix it or delete the line for the defaults")
        value = table.get(key, default)
        fix = f"; fix it or delete the line for the default ({default})"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise MemctlError(f"{SETTINGS_FILE}: {dotted} must be true or false, not "
                                  f"{_shown(value)}{fix}")
        elif isinstance(default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise MemctlError(f"{SETTINGS_FILE}: {dotted} must be a number, not "
                                  f"{_shown(value)}{fix}")
            if isinstance(default, int) and isinstance(value, float):
                # A count (`default_limit`, `max_notes`): 1.5 was cut to 1 without a word.
                if not value.is_integer():
                    raise MemctlError(f"{SETTINGS_FILE}: {dotted} must be a whole number, "
                                      f"not {value!r}{fix}")
                value = int(value)
            low, high = RANGES.get(dotted, (float("-inf"), float("inf")))
            if not low <= value <= high:
                raise MemctlError(f"{SETTINGS_FILE}: {dotted} = {value!r} is out of range "
                                  f"({low:,g} to {high:,.0f}); fix it or delete the line for "
                                  f"the default ({default})")
        return value
