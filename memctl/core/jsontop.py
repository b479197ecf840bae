"""The top-level members of a JSON object, read without recursion (pure).

Python's JSON reader recurses once per level of nesting, so a line nested a few thousand
levels deep raises RecursionError however small it is. Its top level can still be read: the
MCP server answers such a request by the id it gives there, where it used to answer nothing
and leave the client waiting (memctl.mcp_server.unreadable_request, docs/agents.md).

Linear in the text: each character is passed over once, strings are found by searching for
their closing quote, and the nesting below the top is tracked with a list, not the stack.
"""

from __future__ import annotations

import json
import re

from memctl.core.textfile import unescaped_quote

_WHITESPACE = " \t\n\r"  # JSON's four
# What ends a number, `true`, `false` or `null` at the top level.
_SCALAR_END = re.compile(r"[,}\s]")
# The characters that open, close or quote something below the top level.
_STRUCTURE = re.compile(r'[\[\]{}"]')
_CLOSES = {"]": "[", "}": "{"}


class _Malformed(Exception):
    """The text is no JSON object: nothing of it is read."""


class _Opaque:
    """The value of a member read over, not converted (`top_level_members`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OPAQUE"


# A member holding an object, an array, or a number longer than Python converts.
OPAQUE = _Opaque()


def top_level_scalars(text: str) -> dict[str, object] | None:
    """The members of the JSON object `text` whose values are strings, numbers, `true`,
    `false` or `null`, by key (a later member of the same key wins, as with `json.loads`);
    members holding an object or an array are passed over, however deep. None when `text`
    is no JSON object, or holds a number at its top level longer than Python converts. What
    is below the top level is checked for balanced brackets and closed strings only."""
    try:
        return _read_object(text, keep_opaque=False)
    except (_Malformed, ValueError, RecursionError):
        return None


def top_level_members(text: str) -> dict[str, object] | None:
    """Every member of the JSON object `text`, as `top_level_scalars` reads them, with
    `OPAQUE` for a value it does not convert (an object, an array, a number longer than
    Python converts): which keys the object has, whatever their values. None when `text` is
    no JSON object."""
    try:
        return _read_object(text, keep_opaque=True)
    except (_Malformed, ValueError, RecursionError):
        return None


def _read_object(text: str, keep_opaque: bool) -> dict[str, object]:
    position = _skip_space(text, 0)
    if not text.startswith("{", position):
        raise _Malformed
    members: dict[str, object] = {}
    position = _skip_space(text, position + 1)
    if text.startswith("}", position):
        position += 1
    else:
        while True:
            if not text.startswith('"', position):
                raise _Malformed
            end = _string_end(text, position)
            key = json.loads(text[position:end])
            position = _skip_space(text, end)
            if not text.startswith(":", position):
                raise _Malformed
            position = _skip_space(text, position + 1)
            if position >= len(text):
                raise _Malformed
            first = text[position]
            if first == '"':
                end = _string_end(text, position)
                members[key] = json.loads(text[position:end])
            elif first in "[{":
                end = _container_end(text, position)
                if keep_opaque:
                    members[key] = OPAQUE
                else:  # not a scalar: an earlier scalar of the key is replaced
                    members.pop(key, None)
            else:
                found = _SCALAR_END.search(text, position)
                end = found.start() if found else len(text)
                try:
                    members[key] = json.loads(text[position:end])
                except ValueError as exc:  # JSONDecodeError too: not a number, no JSON
                    if not keep_opaque or "integer string conversion" not in str(exc):
                        raise
                    members[key] = OPAQUE
            position = _skip_space(text, end)
            if text.startswith(",", position):
                position = _skip_space(text, position + 1)
                continue
            if text.startswith("}", position):
                position += 1
                break
            raise _Malformed
    if _skip_space(text, position) != len(text):
        raise _Malformed
    return members


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _string_end(text: str, start: int) -> int:
    """The index after the string that opens at `start` (its `"`)."""
    quote = unescaped_quote(text, '"', start + 1)
    if quote < 0:
        raise _Malformed
    return quote + 1


def _container_end(text: str, start: int) -> int:
    """The index after the array or object that opens at `start`."""
    opened = [text[start]]
    position = start + 1
    while opened:
        found = _STRUCTURE.search(text, position)
        if found is None:
            raise _Malformed
        character = found.group()
        if character == '"':
            position = _string_end(text, found.start())
            continue
        if character in "[{":
            opened.append(character)
        elif opened.pop() != _CLOSES[character]:
            raise _Malformed
        position = found.end()
    return position
