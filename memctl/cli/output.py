"""One place for output: JSON documents on stdout, tables for people, messages on stderr."""

from __future__ import annotations

import json
import re
import sys

from memctl.core.errors import UsageError
from memctl.core.vocab import MAX_NOTE_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, BinaryIO


_console = None
_err_console = None

# What a terminal would act on rather than show (docs/security.md, "Terminal output"): C0
# controls but newline and tab (a carriage return only before a newline), DEL, C1 controls,
# and the bidi embeddings, overrides and isolates. A note's text, a file's name, a hand-edited
# field can hold them (`\x1b]0;…\x07` retitles a terminal, `\x1b[2J` clears it, U+202E turns
# a line around); human output shows each as an escape (`\x1b`, `\u202e`). One class, so
# linear in the text.
# `_ACTED_ON`: those beside the C0 controls (which JSON escapes itself).
_ACTED_ON = "\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_ACTED_ON}]|\r(?!\n)")
# In JSON, the same characters JSON leaves as they are (C0 it escapes itself), written as
# JSON's own escape (`\u202e`): the document's values stay exactly the same.
_JSON_UNSAFE = re.compile(f"[{_ACTED_ON}]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` as a terminal can show it safely: every character a terminal would act on
    (`_UNSAFE`) written as an escape; the rest, newlines and tabs too, as it is."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(_shown, text)


def write(text: str) -> None:
    """Text for people on stdout (a note's body, a file as it is, a report), made `visible`."""
    sys.stdout.write(visible(text))
    sys.stdout.flush()


def emit_json(data: Any) -> None:
    """The document exactly as `json.dumps(data, ensure_ascii=False, indent=2, default=str)`
    gives it, written in pieces: a health report of 100k notes is tens of MB of text, and
    building it whole (with the millions of pieces the encoder joins) took gigabytes."""
    write = sys.stdout.write
    safe = _json_safe if _holds_unicode(sys.stdout) else _json_ascii
    pieces: list[str] = []
    for piece in _indented(data, 0):
        pieces.append(piece)
        if len(pieces) >= 4096:
            write(safe("".join(pieces)))
            pieces.clear()
    pieces.append("\n")
    write(safe("".join(pieces)))
    sys.stdout.flush()


def _holds_unicode(stream: Any) -> bool:
    """Whether `stream` encodes every character (UTF-8, as nearly everywhere); else (an ASCII
    locale with `PYTHONUTF8=0`, `PYTHONIOENCODING=latin-1`) JSON goes out as ASCII."""
    import codecs

    try:
        return codecs.lookup(stream.encoding).name.startswith("utf")
    except (AttributeError, LookupError, TypeError):
        return True


_NOT_ASCII = re.compile("[^\x00-\x7f]")


def _json_ascii(text: str) -> str:
    """JSON text with every character beyond ASCII as JSON's escape (`\\u00e9`, a surrogate
    pair beyond the BMP), as `json.dumps(ensure_ascii=True)` writes it: the same values."""
    if text.isascii():
        return text
    return _NOT_ASCII.sub(_json_ascii_escaped, text)


def _json_ascii_escaped(match: re.Match[str]) -> str:
    return json.encoder.encode_basestring_ascii(match.group())[1:-1]


def _json_safe(text: str) -> str:
    # Only inside a string can these characters be (JSON's own text is ASCII). One class
    # searched in C: `str.translate` looks each character of a non-ASCII text up in Python.
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_UNSAFE.sub(_json_escaped, text)


def _json_escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


_CONTAINERS = (dict, list, tuple)
_flat_encoders: dict[int, json.JSONEncoder] = {}


def _flat_encoder(level: int) -> json.JSONEncoder:
    """json's encoder in C (it has no `indent`) whose separator between items carries the
    line break and indentation of items at `level`: what the indenting encoder, in Python
    and ~4× slower, writes for a list or dict of scalars there."""
    encoder = _flat_encoders.get(level)
    if encoder is None:
        encoder = _flat_encoders[level] = json.JSONEncoder(
            ensure_ascii=False, default=str, separators=(",\n" + "  " * level, ": "))
    return encoder


def _indented(value: Any, level: int) -> Iterator[str]:
    """The pieces of `value` at nesting `level`, as json.dumps(indent=2) writes them: a list
    or dict holding no list or dict is written whole by `_flat_encoder` (nearly every item of
    a big report: a note's brief, a pair's reasons), the others item by item."""
    if isinstance(value, dict):
        items: Any = value.values()
        opening, closing = "{", "}"
    elif isinstance(value, (list, tuple)):
        items = value
        opening, closing = "[", "]"
    else:
        yield _flat_encoder(level).encode(value)
        return
    if not value:
        yield opening + closing
        return
    inner = "\n" + "  " * (level + 1)
    end = "\n" + "  " * level + closing
    if not any(isinstance(item, _CONTAINERS) for item in items):
        # '{"a": 1,⏎    "b": 2}': the brackets' own line breaks added around the C encoder's.
        yield opening + inner + _flat_encoder(level + 1).encode(value)[1:-1] + end
        return
    separator = opening + inner
    if isinstance(value, dict):
        # Runs of scalar items written at once by the C encoder, as a dict of their own (a
        # search hit: its tags apart, ~4× faster than item by item: bench/README.md).
        run: dict[Any, Any] = {}
        for key, item in value.items():
            if not isinstance(item, _CONTAINERS):
                run[key] = item
                continue
            if run:
                yield separator + _flat_encoder(level + 1).encode(run)[1:-1]
                separator = "," + inner
                run = {}
            yield separator + json.encoder.encode_basestring(_key(key)) + ": "
            yield from _indented(item, level + 1)
            separator = "," + inner
        if run:
            yield separator + _flat_encoder(level + 1).encode(run)[1:-1]
    else:
        for item in value:
            yield separator
            yield from _indented(item, level + 1)
            separator = "," + inner
    yield end


def _key(key: Any) -> str:
    """A dict's key as json writes it (a string; a number, true, false or null as text)."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def console():  # -> rich.console.Console (lazy: rich costs start-up time)
    global _console
    if _console is None:
        from rich.console import Console

        class _Console(Console):
            def on_broken_pipe(self) -> None:
                # rich exits 1 here (SystemExit); a closed pipe (`memctl list | head -1`)
                # ends memctl quietly with 0, as a plain write to it does
                # (`memctl.cli.context.run_command`): the same for every command and layout.
                self.quiet = True
                raise BrokenPipeError(32, "Broken pipe")

        _console = _Console(highlight=False, soft_wrap=False)
    return _console


def console_made() -> bool:
    """Whether this process has made rich's console of stdout (whose width is then fixed)."""
    return _console is not None


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console

        _err_console = Console(stderr=True, highlight=False)
    return _err_console


def info(message: str) -> None:
    """A message for people on stderr (never mixed into data on stdout)."""
    sys.stderr.write(visible(message) + "\n")


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {visible(message)}\n")


# How a table's columns give way when the terminal is too narrow for all of them (by header):
# short values are kept whole (ids must stay copyable, dates and numbers readable); paths are
# folded onto more lines, never cut (a path with a piece missing names nothing); a project
# name is shortened with "…" before the text columns (titles, messages: what people read the
# table for), which share the rest and are cut with "…", but for the messages that say what
# to do (_MESSAGES), wrapped as paths are. tests/test_output.py holds it.
_RIGID = {"id", "type", "imp", "importance", "updated", "created", "status", "#", "commit",
          "time", "notes", "action", "outcome", "score", "kind", "count", "a", "b", "days",
          "accesses", "steps", "bytes", "limit", "expires", "N", ""}
_PATHS = {"path", "copy", "current version", "moves to", "where", "files", "folder",
          "points to", "tombstone"}
# A message that ends in the way out (`health`'s problems: "…: `memctl restore ID` makes it
# active again") is wrapped onto more lines, never cut: cut, the command was the part lost.
_MESSAGES = {"problem", "warnings"}
_SHORTENED = {"project"}
_GAP = 2  # spaces between two columns


def read_text_argument(text: str) -> str:
    """A TEXT argument; `-` means the text comes from stdin."""
    if text != "-":
        return text
    return read_text_input(sys.stdin.buffer, "stdin")


def read_text_input(stream: BinaryIO, what: str) -> str:
    """The UTF-8 text of `stream` (stdin, a FILE argument), read up to MAX_NOTE_BYTES and no
    further: no text memctl takes is larger, and `/dev/zero` or a runaway pipe must end in
    one line, not in memory running out."""
    data = stream.read(MAX_NOTE_BYTES + 1)
    if len(data) > MAX_NOTE_BYTES:
        raise UsageError(f"{what} holds more than {MAX_NOTE_BYTES // 1024} KB, the most memctl "
                         "takes as one text; store big documents elsewhere and note where")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} is not UTF-8 text") from None


def report_parse_errors(problems: Any) -> None:
    """Files that do not parse (an index's `parse_errors()`), named with path and line on
    stderr by the command meeting them."""
    for problem in problems:
        served = ("its last good version is used" if problem.has_last_good
                  else "left out until it parses")
        warn(f"{problem.path}:{problem.line}: {problem.message} ({served})")


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    """A table for people on stdout, as wide as the terminal at most. Cells are plain text
    (never read as markup: a title with "[x]" in it shows as written)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    cells = [["" if cell is None else visible(str(cell)) for cell in row] for row in rows]
    title = None if title is None else visible(title)
    widths = column_widths(columns, cells, console().width)
    grid = Table(title=title, show_lines=False, header_style="bold", box=box.SIMPLE_HEAD,
                 show_edge=False, pad_edge=False, padding=(0, _GAP - 1, 0, 0))
    for column, width in zip(columns, widths, strict=True):
        if column in _PATHS or column in _MESSAGES:
            grid.add_column(column, width=width, overflow="fold")
        else:
            grid.add_column(column, width=width, no_wrap=True, overflow="ellipsis")
    for row in cells:
        grid.add_row(*(Text(cell) for cell in row))
    console().print(grid)


def column_widths(columns: list[str], cells: list[list[str]], total: int) -> list[int]:
    """Each column's width in a table `total` cells wide: every column as wide as its widest
    value when they all fit; else the short columns keep theirs and the others share what is
    left, a text column getting three parts, a path two and a project name one, none less
    than the longest word of its header (or its widest value)."""
    from rich.cells import cell_len

    natural = [max(cell_len(line) for text in (column, *(row[index] for row in cells))
                   for line in text.split("\n"))
               for index, column in enumerate(columns)]
    room = total - _GAP * (len(columns) - 1)
    if sum(natural) <= room:
        return natural
    widths = list(natural)
    weight = {index: 1 if column in _SHORTENED else 2 if column in _PATHS else 3
              for index, column in enumerate(columns) if column not in _RIGID}
    left = room - sum(width for index, width in enumerate(natural) if index not in weight)
    # (a header of two words may take two lines)
    least = {index: min(natural[index], max(6, *(cell_len(word) for word in columns[index].split())))
             for index in weight}
    pending = sorted(weight, key=lambda index: natural[index])
    while pending:
        parts = sum(weight[index] for index in pending)
        shares = {index: max(0, left) * weight[index] // parts for index in pending}
        # A column that needs no more than its share, or would get less than its least,
        # is settled; the others share again what it leaves.
        settled = [index for index in pending
                   if natural[index] <= shares[index] or shares[index] < least[index]]
        if not settled:
            # What integer division leaves over goes to the widest text column.
            shares[max(pending, key=lambda index: (weight[index], natural[index]))] += \
                max(0, left) - sum(shares.values())
            for index in pending:
                widths[index] = shares[index]
            break
        for index in settled:
            widths[index] = natural[index] if natural[index] <= shares[index] else least[index]
            left -= widths[index]
            pending.remove(index)
    return widths


def print_episode(episode: Any, json_output: bool = False) -> None:
    """One episode (a `services.working.Episode`), the one way `episode show` and `show`
    print it: its JSON, or a line of fields on stderr and its Markdown body as written on
    stdout (copyable, and the same in a pipe as on a terminal)."""
    if json_output:
        emit_json(episode.to_dict())
        return
    info(f"episode {episode.id}  {episode.project}  {episode.outcome}  {episode.created}  "
         f"{episode.path}")
    write(episode.body.strip("\n") + "\n")
