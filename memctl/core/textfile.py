"""Whether a file's bytes are text, and if not, the line to fix: the one wording every command
names such a file by, `path:line: problem` (docs/format.md, "A file that does not parse");
and where a quoted string with backslash escapes ends (`unescaped_quote`: JSON, TOML, the
secret scan's quoted values). Pure, and light: the search's fast path reads files through
it (tests/test_layers.py)."""

from __future__ import annotations

NOT_UTF8 = "not text: invalid UTF-8"
BINARY = "not text: binary content (NUL bytes)"


def decode_file(data: bytes) -> str | tuple[int, str]:
    """A file's text, or (line, message) saying why it is no text: the line of the first
    invalid UTF-8 byte or NUL byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data[: exc.start].count(b"\n") + 1, NOT_UTF8
    nul = text.find("\x00")
    if nul >= 0:
        return text.count("\n", 0, nul) + 1, BINARY
    return text


def is_utf8_name(name: str) -> bool:
    """Whether a name as the file system gave it (bytes that are not UTF-8 arrive as surrogate
    escapes) is UTF-8. A name that is not can be neither indexed, committed to a store's
    history as the same name on every machine, nor printed: such a file is not memory, and
    `health` names it, escaped, among the files that do not parse (docs/format.md)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped_name(name: str) -> str:
    """A name that may not be UTF-8 as it can be shown: each byte that is not as `\\xe9`."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def unescaped_quote(text: str, quote: str, start: int, end: int | None = None) -> int:
    """Where the first `quote` from `start` (and before `end`) is that no backslash escapes
    (one after an odd number of them is part of the string: `"a \\" b"`), or -1: the end of
    a string in JSON, TOML or a quoted value of a note. The backslashes are counted back to
    `start` at most, so a string's opening quote is never taken for one of them."""
    limit = len(text) if end is None else end
    position = start
    while True:
        found = text.find(quote, position, limit)
        if found < 0:
            return -1
        before = found
        while before > start and text[before - 1] == "\\":
            before -= 1
        if (found - before) % 2 == 0:
            return found
        position = found + 1
