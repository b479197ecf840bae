"""Search hits laid out as rich lays them out, without importing rich: for output that is not
a terminal (an agent reading a pipe, a file), where rich adds no colours and importing it
(rich.console and rich.text, with the typing, dataclasses and inspect they load: ~30 ms) was
most of what `memctl search` spent once a watcher spares it the freshness walk
(docs/architecture.md, "Lazy imports, and why").

`PlainText` is the part of `rich.text.Text` that `memctl.cli.searching` lays hits out with
(`append`, `+`, slices, `cell_len`, `rstrip`, `truncate`, `wrap`), on rich's own algorithms
(`Text.wrap`, `rich._wrap.divide_line`, `rich.cells.set_cell_size` and `chop_cells`), without
styles. `plain_console` hands it out only when rich would print the same bytes: stdout is no
terminal by rich's rules, its width is read as rich reads it, and every character of the text
is one `printable` vouches for (one or two cells, the same in rich's cell tables). Anything
else (a terminal, combining marks, control codes, joiners, characters newer than this
Python's Unicode database) is left to rich. tests/test_plaintext.py holds the two together:
each character's width, and hits of varied text laid out at widths from 1 to 200 cells.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
import unicodedata
from itertools import pairwise

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable

# Compiled at their first use (`re` keeps them): a search printing JSON never needs them.
_WORD = r"\s*\S+\s*"  # a word and the spaces around it (rich._wrap.re_word)
_TRAILING_SPACES = r"\s+$"  # rich.text._re_whitespace
ELLIPSIS = "…"

# Code points whose width from `unicodedata.east_asian_width` is not the one in rich's cell
# tables (Unicode 17), found by comparing every code point (tests/test_plaintext.py): Hangul
# medial vowels, final consonants and fillers (0 cells in rich: they join the syllable
# before), yijing, tai xuan jing and counting-rod symbols (2 cells since Unicode 16), skin
# tone modifiers (0 cells). rich measures these.
_RICH_DIFFERS = ((0x1160, 0x11FF), (0x2630, 0x2637), (0x268A, 0x268F), (0x3164, 0x3164),
                 (0x4DC0, 0x4DFF), (0xD7B0, 0xD7FF), (0xFFA0, 0xFFA0), (0x1D300, 0x1D37F),
                 (0x1F3FB, 0x1F3FF))
_cells: dict[str, int] = {}  # character -> cells it takes (1 or 2); 0: left to rich


def _measure(character: str) -> int:
    code = ord(character)
    category = unicodedata.category(character)
    if category[0] in "CM" or category in ("Zl", "Zp") \
            or any(low <= code <= high for low, high in _RICH_DIFFERS):
        cells = 0  # control, format, private, unassigned, a mark, a line break: rich's call
    else:
        cells = 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1
    _cells[character] = cells
    return cells


def printable(text: str) -> bool:
    """Whether every character of `text` takes a number of cells `cell_len` knows, the one
    rich's tables give it."""
    if text.isascii():
        return text.isprintable()
    for character in text:
        cells = _cells.get(character)
        if not (cells if cells is not None else _measure(character)):
            return False
    return True


def cell_len(text: str) -> int:
    """The cells `text` takes on a terminal (for text `printable` accepts)."""
    if text.isascii():
        return len(text)
    return sum(_cells.get(character) or _measure(character) for character in text)


def set_cell_size(text: str, total: int) -> str:
    """`rich.cells.set_cell_size` for `total >= 0`: `text` cut to `total` cells (a wide
    character cut in two becomes a space) or padded with spaces to them."""
    size = cell_len(text)
    if size <= total:
        return text + " " * (total - size)
    used = 0
    for position, character in enumerate(text):
        cells = _cells.get(character) or _measure(character)
        if used + cells > total:
            return text[:position] + " " * (total - used)
        used += cells
    return text


def chop_cells(text: str, width: int) -> list[str]:
    """`rich.cells.chop_cells`: `text` cut into pieces of at most `width` cells."""
    pieces: list[str] = []
    start = size = 0
    for position, character in enumerate(text):
        cells = _cells.get(character) or _measure(character)
        if size + cells > width:
            pieces.append(text[start:position])
            start, size = position, 0
        size += cells
    if size:
        pieces.append(text[start:])
    return pieces


def divide_line(text: str, width: int) -> list[int]:
    """`rich._wrap.divide_line` (folding words longer than a line): the character offsets
    where `text` breaks into lines of `width` cells."""
    breaks: list[int] = []
    offset = 0  # cells used on the current line
    word_pattern = re.compile(_WORD)
    match = word_pattern.match(text, 0)
    while match is not None:
        start, end = match.span()
        word = match.group(0)
        word_cells = cell_len(word.rstrip())
        if width - offset >= word_cells:
            offset += cell_len(word)
        elif word_cells > width:
            pieces = chop_cells(word, width)
            for number, piece in enumerate(pieces, 1):
                if start:
                    breaks.append(start)
                if number == len(pieces):
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
        match = word_pattern.match(text, end)
    return breaks


class PlainText:
    """A `rich.text.Text` without styles, for the calls `memctl.cli.searching` makes."""

    __slots__ = ("plain",)

    def __init__(self, text: str = "", style: str | None = None) -> None:
        self.plain = text

    def append(self, text: str | PlainText, style: str | None = None) -> PlainText:
        self.plain += text if isinstance(text, str) else text.plain
        return self

    def __add__(self, other: str | PlainText) -> PlainText:
        return PlainText(self.plain + (other if isinstance(other, str) else other.plain))

    def __getitem__(self, part: slice) -> PlainText:
        return PlainText(self.plain[part])

    def __len__(self) -> int:
        return len(self.plain)

    @property
    def cell_len(self) -> int:
        return cell_len(self.plain)

    def stylize(self, style: str, start: int = 0, end: int | None = None) -> None:
        """Styles are for a terminal; this text goes elsewhere."""

    def rstrip(self) -> None:
        self.plain = self.plain.rstrip()

    def truncate(self, max_width: int, *, overflow: str | None = None) -> None:
        if cell_len(self.plain) > max_width:
            if overflow == "ellipsis":
                self.plain = set_cell_size(self.plain, max_width - 1) + ELLIPSIS
            else:
                self.plain = set_cell_size(self.plain, max_width)

    def wrap(self, console: object, width: int) -> list[PlainText]:
        """`rich.text.Text.wrap` with its defaults (words folded, no justification), for
        text of one line."""
        text = self.plain
        bounds = [0, *divide_line(text, width), len(text)]
        lines = []
        for start, end in pairwise(bounds):
            line = text[start:end]
            excess = len(line) - width  # rich counts characters here, not cells
            if excess > 0:
                spaces = re.search(_TRAILING_SPACES, line)
                if spaces is not None:
                    line = line[:len(line) - min(len(spaces.group(0)), excess)]
            if cell_len(line) > width:
                line = set_cell_size(line, width)
            lines.append(PlainText(line))
        return lines


class PlainConsole:
    """Lines for stdout, each cut to the width with "…" as `rich.console.Console.print(text,
    no_wrap=True, overflow="ellipsis")` cuts them; written by `flush`."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []

    def print(self, text: PlainText, *, no_wrap: bool = True, overflow: str = "ellipsis") -> None:
        line = text.plain
        if cell_len(line) > self.width:
            line = set_cell_size(line, self.width - 1) + ELLIPSIS
        self.lines.append(line + "\n")

    def text(self) -> str:
        return "".join(self.lines)

    def flush(self) -> None:
        sys.stdout.write(self.text())
        sys.stdout.flush()


def plain_console(texts: Iterable[str]) -> PlainConsole | None:
    """A console for these texts when rich would print them without styles at a width read as
    rich reads it, with characters `printable` knows; else None (rich prints them)."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython") \
            or "UNICODE_VERSION" in os.environ or _terminal():
        return None  # Windows consoles, notebooks, other cell tables, colours: rich decides
    width = _width()
    if width is None or width < 1 or not all(printable(text) for text in texts):
        return None
    return PlainConsole(width)


def _terminal() -> bool:
    """Whether rich would take stdout for a terminal (`rich.console.Console.is_terminal`), and
    so style it. Where unsure, yes: rich then prints, as it always did."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return isatty is not None and bool(isatty())
    except ValueError:  # a closed stdout
        return False


def _width() -> int | None:
    """The width `rich.console.Console` gives stdout when it is no terminal: COLUMNS, else the
    size of the first standard stream that is a terminal, else 80. None for a COLUMNS rich
    reads differently (digits other than 0-9)."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns) if columns.isascii() else None
    width = 0
    for stream, number in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            descriptor = stream.fileno()  # type: ignore[union-attr]
        except Exception:  # as rich: the usual number when a stream has none
            descriptor = number
        try:
            width = os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80
