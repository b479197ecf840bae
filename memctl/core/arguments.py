"""The one definition of every value memctl accepts from outside: option values, tool
arguments, the fields of a note. Each validator returns the clean value or raises
`ArgumentError` naming the argument, so the CLI (options), its fast path and the MCP server
(tool arguments) refuse the same input with the same meaning (tests/test_services.py).
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

from memctl.core.clock import now, parse_expiry, parse_since
from memctl.core.errors import ArgumentError, MemctlError, UsageError, arg, quoted
from memctl.core.vocab import (
    GLOBAL,
    IMPORTANCE_RANGE,
    KIND_TYPES,
    MAX_LIMIT,
    MAX_NOTE_BYTES,
    NOTE_TYPES,
    OUTCOMES,
    PROJECT_NAME_RULE,
    valid_project_name,
)

MAX_TAGS = 100
# The notes one call may link to an episode: each is looked up (~0.5 ms), and 100,000 links
# held the MCP server for a minute.
MAX_LINKS = 100
MAX_FIELD_CHARS = 200


# The shortest secret the scanner finds in a string a project name may be (letters, digits,
# `_ . -`): an AWS access key id, `AKIA` and 16 more. Every key shape of that alphabet also
# holds a digit or a capital letter (memctl/core/secrets.py); a name with neither, or shorter,
# is never scanned, so a search naming its project does not load the scanner.
# tests/test_secrets.py holds this to every labelled secret that could be a project name.
SHORTEST_NAME_SECRET = 20


def project_name(name: str, argument: str = "project") -> str:
    """A project's name: a folder of the store (or `global`), in Unicode NFC (`café` typed
    in either form names one folder). Never one that looks like a secret: the name is a
    folder every clone carries and is in every commit message of the project, where no mask
    can hide it, so not even `allow_secret` lets one through (docs/security.md)."""
    if isinstance(name, str):
        name = unicodedata.normalize("NFC", name)
    if not isinstance(name, str) or not valid_project_name(name):
        raise ArgumentError(argument, f"{quoted(name)} is not a project name ({PROJECT_NAME_RULE})")
    found = secret_in_name(name)
    if found is not None:
        raise ArgumentError(argument, f"the name looks like a secret ({found}); a project's "
                                      "name is a folder name, carried by every clone and "
                                      "commit message, so it can never be one: choose another "
                                      "name")
    return name


def secret_in_name(name: str) -> str | None:
    """The first likely secret in a would-be project name, as `kind masked`, or None: what
    `project_name` refuses, and what a git repository's folder name may not become
    (memctl.disk.repositories)."""
    if len(name) < SHORTEST_NAME_SECRET or not any(ch.isdigit() or ch.isupper() for ch in name):
        return None
    # The scanner, only for a name that may hold a key; read as a file name is (a `-` also
    # as a space: `deploy-ghp_…` is a folder name too).
    from memctl.core.secrets import scan_name

    found = scan_name(name)
    return f"{found[0].kind} {found[0].masked}" if found else None


def scope_name(name: str, argument: str = "project") -> str:
    return GLOBAL if name == GLOBAL else project_name(name, argument)


def note_type(value: str, argument: str = "type") -> str:
    chosen = str(value).strip().lower()
    if chosen not in NOTE_TYPES:
        raise ArgumentError(argument, f"{quoted(value)} (choose from {', '.join(NOTE_TYPES)})")
    return chosen


def search_type(value: str, argument: str = "type") -> str:
    """A note type or another kind of entry (memory, scratchpad, episode)."""
    chosen = str(value).strip().lower()
    if chosen not in NOTE_TYPES + KIND_TYPES:
        raise ArgumentError(argument, f"{quoted(value)} is not a type "
                                      f"(choose from {', '.join(NOTE_TYPES + KIND_TYPES)})")
    return chosen


def importance(value: int, argument: str = "importance") -> int:
    low, high = IMPORTANCE_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ArgumentError(argument, f"{value} is not between {low} and {high}")
    return value


def choice(value: str, choices: tuple[str, ...], argument: str) -> str:
    """One of a fixed set of words (a sort order, a status, an action), case-insensitive."""
    chosen = str(value).strip().lower()
    if chosen not in choices:
        raise ArgumentError(argument, f"{quoted(value)} (choose from {', '.join(choices)})")
    return chosen


def port(value: int, argument: str = "port") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ArgumentError(argument, f"{value} (a TCP port, 1 to 65535)")
    return value


def http_host(value: str, allow_remote: bool = False, argument: str = "host") -> str:
    """Where a network server may listen: a loopback address unless the user explicitly
    allowed others (docs/agents.md, the HTTP transport's security notes)."""
    host = str(value).strip()
    if host.startswith("[") and host.endswith("]"):  # an IPv6 address as written in a URL
        host = host[1:-1]
    if not host or any(ch.isspace() or ord(ch) < 32 for ch in host) or len(host) > 255:
        raise ArgumentError(argument, f"{quoted(value)} is not a host name or address")
    if not allow_remote and not is_loopback(host):
        raise ArgumentError(argument, f"{host} is not a loopback address; the server would be "
                                      f"reachable from other machines. Pass {arg('allow_remote')} "
                                      "to allow it (and read the security notes first)")
    return host


def is_loopback(host: str) -> bool:
    import ipaddress  # here, not at the top: `memctl search` loads this module (~5 ms)

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def limit(value: int, argument: str = "limit", low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_LIMIT:
        raise ArgumentError(argument, f"{value} (must be from {low} to {MAX_LIMIT:,})")
    return value


def as_number(text: str) -> int | None:
    """The number a reference typed as plain digits gives (`scratch done 2`, `conflicts keep
    1`), else None: `²` is a digit to `str.isdigit` but no number to `int`, and `int` refuses
    more than 4,300 digits (each was a traceback). Past 18 digits no list is that long."""
    return int(text) if text.isascii() and text.isdecimal() and len(text) <= 18 else None


def at_least(value: int, low: int, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ArgumentError(argument, f"{value} (at least {low})")
    return value


def utf8_text(text: str, what: str) -> str:
    """`text` if UTF-8 can hold it. An argument that was not UTF-8 (`é` typed in a Latin-1
    terminal) reaches Python as lone surrogates, as does a JSON `"\\udce9"`: no file or index
    can hold those, so they are refused here, before anything is read or written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = ord(text[error.start])
        found = f"byte 0x{char - 0xDC00:02X}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}"
        raise UsageError(f"the {what} is not UTF-8 ({found} at character "
                         f"{error.start + 1}); memctl reads text as UTF-8: use a UTF-8 "
                         f"locale (LANG=C.UTF-8)") from None
    return text


def not_empty(value: str | None, what: str, give: str) -> str | None:
    """`value` unless it is given empty (or spaces): a script's unset variable
    (`memctl import "$DIR"`) is bad usage, never read as the current folder or as no value."""
    if value is not None and not value.strip():
        raise UsageError(f"{what} is empty (an unset variable?); {give}")
    return value


def short_line(value: str | None, argument: str) -> str | None:
    """One short line (subject, predicate, a tag), or None when empty."""
    if value is None or not str(value).strip():
        return None
    text = utf8_text(str(value).strip(), argument)
    if len(text) > MAX_FIELD_CHARS or any(ord(ch) < 32 for ch in text):
        raise ArgumentError(argument, f"one short line (at most {MAX_FIELD_CHARS} characters)")
    return text


def tags(values: str | list[str] | tuple[str, ...] | None, argument: str = "tags") -> list[str]:
    """Tags without blanks or repeats; a comma-separated string is split."""
    if isinstance(values, str):
        values = values.split(",")
    # A dict keeps the first of each in order: a look-up in a list per tag was quadratic, and
    # 200,000 tags in one MCP call held the server for minutes (tests/test_linear_time.py).
    seen: dict[str, None] = {}
    for tag in values or ():
        tag = str(tag).strip()
        if tag:
            seen.setdefault(tag)
    clean = list(seen)
    if len(clean) > MAX_TAGS:
        raise ArgumentError(argument, f"{len(clean)} tags; a note takes at most {MAX_TAGS}")
    for tag in clean:
        utf8_text(tag, "tag")
        if len(tag) > MAX_FIELD_CHARS or any(ord(ch) < 32 for ch in tag):
            raise ArgumentError(argument, f"a tag must be one short line (at most {MAX_FIELD_CHARS} characters)")
    return clean


def merged_tags(existing: list[str], added: list[str], what: str, remedy: str) -> list[str]:
    """`existing` with the tags of `added` it lacks (compared without case), refused when
    that would pass MAX_TAGS: a write that unions tags (a near-duplicate `add`, an episode
    update) never writes more tags than a note takes, nor drops any it was given
    (docs/format.md). A file that already holds more (written by hand) is left as it is
    when nothing is added."""
    known = {tag.lower() for tag in existing}
    new = [tag for tag in added if tag.lower() not in known]
    if new and len(existing) + len(new) > MAX_TAGS:
        # Exit 1, not a usage error: the tags given are valid; the note they meet is full.
        raise MemctlError(f"{what} has {len(existing)} tags and {arg('tags')} would add "
                          f"{len(new)} more ({len(existing) + len(new)}); a note takes at most "
                          f"{MAX_TAGS}, so nothing was changed: {remedy}")
    return [*existing, *new]


def note_text(text: str) -> str:
    """The text of a note: not empty, no NUL bytes, at most MAX_NOTE_BYTES. A byte order
    mark in front (a file saved by Notepad, piped to `memctl add -`) is no part of it: it
    would start the note's title."""
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        raise UsageError("the note text contains NUL bytes; notes are text")
    utf8_text(text, "note text")
    text = text.replace("\r\n", "\n").strip("\n")
    if not visible_text(text):
        raise UsageError("the note text is empty")
    return within_text_size(text, "the note text")


def visible_text(text: str) -> bool:
    """Whether `text` holds a character one can see: not only blanks and invisible format
    characters (zero-width spaces and joiners, direction marks), which made notes without a
    word. Stops at the first such character."""
    return any(not char.isspace() and unicodedata.category(char) != "Cf" for char in text)


def within_text_size(text: str, what: str) -> str:
    """`text`, at most MAX_NOTE_BYTES: the largest text memctl takes as one (a note, MEMORY.md
    or an item of it)."""
    if len(text.encode("utf-8")) > MAX_NOTE_BYTES:
        raise UsageError(f"{what} is larger than {MAX_NOTE_BYTES // 1024} KB; "
                         "store big documents elsewhere and note where")
    return text


def file_within_size(new: str, before: str, what: str, way_out: str) -> str:
    """A whole file after a change (`new`, from `before`), at most MAX_NOTE_BYTES. Not the
    arguments' fault, so not bad usage: the file grew item by item. A change that does not
    make a file already over it larger (a step done, a question resolved, in a scratchpad
    grown by hand or by a sync) is let through: refusing it left no way to shrink the file
    but by hand. `way_out`: what makes room."""
    size = len(new.encode("utf-8"))
    if size > MAX_NOTE_BYTES and size > len(before.encode("utf-8")):
        raise MemctlError(f"{what} would be larger than {MAX_NOTE_BYTES // 1024} KB; {way_out}")
    return new


def expiry(value: str, base: datetime | None = None, argument: str = "expires") -> str:
    try:
        return parse_expiry(value, base or now())
    except ValueError as exc:
        raise ArgumentError(argument, str(exc)) from None


def since(value: str, base: datetime | None = None, argument: str = "since") -> datetime:
    try:
        return parse_since(value, base or now())
    except ValueError as exc:
        raise ArgumentError(argument, str(exc)) from None


def outcome(value: str | None, argument: str = "outcome") -> str:
    if value is None or not str(value).strip():
        raise UsageError(f"{arg(argument)} is required: say how the task ended ({', '.join(OUTCOMES)})")
    chosen = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    if chosen not in OUTCOMES:
        raise ArgumentError(argument, f"{quoted(value)} (choose from {', '.join(OUTCOMES)})")
    return chosen
