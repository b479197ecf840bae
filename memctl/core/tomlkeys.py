"""The parts of a TOML file's longest key, counted in one pass before Python's TOML reader
sees the file (pure).

memctl's settings are `[section]` then `key = value`: two parts to a key. Python's TOML
reader takes time and memory quadratic in the parts of one dotted key (`x.a.a.a… = 1`:
20,000 parts, a 40 KB file, took 3.6 s and 2.4 GB), so a file with a key of more parts than
MAX_KEY_PARTS is refused before it is read: `memctl.toml` in a store
(memctl.disk.settings) and in a zip or folder being imported (memctl.exchange.bundle).
"""

from __future__ import annotations

from memctl.core.textfile import unescaped_quote

MAX_KEY_PARTS = 8


def long_key_problem(text: str) -> str | None:
    """What is wrong with the TOML `text` for memctl when one of its keys has more than
    MAX_KEY_PARTS parts (`line N: a key of … parts …`), else None."""
    parts, line = most_key_parts(text)
    if parts <= MAX_KEY_PARTS:
        return None
    return (f"line {line}: a key of {parts:,} parts, where memctl's settings have two "
            f"([section], then key = value)")


def most_key_parts(text: str) -> tuple[int, int]:
    """(the most parts of one key in the TOML `text`, dotted keys and table headers alike,
    inline tables' keys too; the line where that key is), read in one pass: strings and
    comments are passed over (a dot in them is no key's), values are not looked into."""
    most = (1, 1)
    parts, line = 1, 1
    in_key = True  # at the start of a line: a key, or a table's header
    opened: list[str] = []  # the `[` and `{` of the values open here
    position, end = 0, len(text)
    while position < end:
        char = text[position]
        if char in "\"'":
            position, line = _after_string(text, position, line)
            continue
        if char == "#":
            found = text.find("\n", position)
            position = end if found < 0 else found
            continue
        if char == "\n":
            line += 1
            if not opened:
                in_key, parts = True, 1
        elif in_key:
            if char == ".":
                parts += 1
                most = max(most, (parts, line))
            elif char == "=":
                in_key, parts = False, 1
            elif char == "}" and opened:  # `{}`: an empty inline table
                opened.pop()
                in_key = False
        elif char in "[{":
            opened.append(char)
            in_key, parts = char == "{", 1
        elif char in "]}":
            if opened:
                opened.pop()
        elif char == "," and opened and opened[-1] == "{":
            in_key, parts = True, 1
        position += 1
    return most


def _after_string(text: str, start: int, line: int) -> tuple[int, int]:
    """(where the TOML string opening at `start` ends, the line there): basic `"…"` and
    multi-line `\"\"\"…\"\"\"` strings with their escapes, literal `'…'` and `'''…'''`
    ones without; the end of `text` for one left open (tomllib words that error)."""
    quote = text[start]
    closing = quote * 3 if text.startswith(quote * 3, start) else quote
    position = start + len(closing)
    found = unescaped_quote(text, closing, position) if quote == '"' else text.find(closing, position)
    if found < 0:
        return len(text), line + text.count("\n", start)
    found += len(closing)
    while text.startswith(quote, found) and len(closing) == 3:
        found += 1  # `""""`: a quote inside, right before the closing three
    return found, line + text.count("\n", start, found)
