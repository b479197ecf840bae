"""Note ids: unique across machines without coordination, sortable by creation time.

16 characters of lowercase Crockford base32: 10 for the milliseconds since 1970 (good until
the year 10889) and 6 random ones (30 bits). Two machines would have to create a note in the
same millisecond and draw the same 30 bits to collide; merge keeps both notes even then.
"""

from __future__ import annotations

import os
import re
import time

from memctl.core.errors import ArgumentError

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 16
ID_PATTERN = re.compile(rf"^[{ALPHABET}]{{{ID_LENGTH}}}$")
_last_millis = 0


def _encode(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(ALPHABET[number & 31])
        number >>= 5
    return "".join(reversed(chars))


def new_id(millis: int | None = None) -> str:
    """A fresh id. Ids made by one process are strictly increasing."""
    global _last_millis
    if millis is None:
        millis = time.time_ns() // 1_000_000
        # Keep ids of one process ordered even when the clock repeats a millisecond.
        millis = max(millis, _last_millis + 1)
        _last_millis = millis
    # 30 random bits from the system's generator, the one `secrets` draws from: the
    # `secrets` module itself (hmac, hashlib, random) cost every `memctl show` and `add`
    # ~8 ms of start-up (tests/test_layers.py).
    return _encode(millis, 10) + _encode(int.from_bytes(os.urandom(4), "big") >> 2, 6)


def is_id(text: str) -> bool:
    """A memctl-made id (16 characters of Crockford base32)."""
    return bool(ID_PATTERN.fullmatch(text))


# What any id may be, memctl's own or a person's (`pg-choice`): one short name of letters,
# digits, `.`, `_`, `-`, not starting with `.` or `-`, no `..` — never a path
# (docs/security.md). The pattern states the whole rule: it is the MCP tools' schema for an
# id, which let `a..b` through to a refusal that did not say why.
MAX_ID_CHARS = 64
VALID_ID = re.compile(rf"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{MAX_ID_CHARS - 1}}}$")


def valid_id(text: str) -> bool:
    """Whether `text` may be an id: the one rule for ids from files, bundles, remotes, agents
    and the command line, so an id can never be used as a path (`../x`, `/abs`, `a/b`)."""
    return bool(VALID_ID.fullmatch(text)) and ".." not in text


def id_argument(value: str, argument: str = "ID") -> str:
    """An id (or its first characters) given as an option or tool argument: refused, naming
    the argument (`ID`, a positional argument of the CLI; `id` for a model), when it could
    not be an id at all, so no lookup ever sees a path. Here rather than in
    `core/arguments.py`, which `memctl search` loads and which needs no id."""
    text = str(value).strip()
    if not text:
        raise ArgumentError(argument, "empty; give an id or its first characters")
    if not valid_id(text):
        shown = text if len(text) <= 40 else text[:40] + "…"
        what = (f"is longer than an id can be ({MAX_ID_CHARS} characters)"
                if len(text) > MAX_ID_CHARS else "is not an id (letters, digits, '.', '_', '-'; never '..')")
        raise ArgumentError(argument, f"{shown!r} {what}")
    return text
