"""Pure: find and edit the sections of a Markdown file without touching any other byte.

MEMORY.md and SCRATCHPAD.md are files people edit by hand, so every edit here is a splice:
the result is the original text with something inserted or one span replaced, line endings
and all. Only ATX headings (`## Title`) delimit sections; headings inside fenced code blocks
do not count. A section runs from its heading to the next heading of the same or a higher
level; its *own* part stops at its first sub-heading, and that is where new items go.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime

from memctl.core.errors import ArgumentError, UsageError, quoted
from memctl.core.noteformat import BOM
from memctl.core.records import dataclass

# The L2 sections. Keys are what commands and JSON use; the first alias of each language is
# the heading memctl writes when it has to create the section.
L2_ALIASES: Mapping[str, Sequence[str]] = {
    "constraints": (
        "Constraints",
        "技术约束",
        "constraint",
        "technical constraints",
        "tech constraints",
        "约束",
    ),
    "decisions": ("Decisions", "关键决策", "decision", "key decisions", "决策"),
    "progress": ("Progress", "当前进度", "current progress", "status", "进度"),
    "lessons": ("Lessons", "教训", "lesson", "lessons learned", "经验教训", "经验"),
}
MEMORY_SECTIONS = tuple(L2_ALIASES)  # the keys, in the file's order

# The sections of SCRATCHPAD.md (memctl.memory.scratchpad), here so that importers, which
# write into them too (docs/sync.md), find them by the same names.
SCRATCHPAD_ALIASES: Mapping[str, Sequence[str]] = {
    "focus": ("Focus", "当前焦点", "current focus", "current task", "焦点", "当前任务"),
    "questions": (
        "Open questions",
        "待解决问题",
        "questions",
        "question",
        "open question",
        "问题",
        "疑问",
        "开放问题",
    ),
    "next": ("Next steps", "下一步", "next", "next step", "todo", "to do", "待办", "下一步计划"),
    "done": ("Done", "已完成", "completed", "finished", "完成"),
    "notes": ("Notes", "笔记", "note", "observations", "results", "记录", "观察", "备注"),
}

_HEADING_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")


def heading(content: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line, or None. String methods instead of one regex:
    a regex with a lazy title and optional closing `#`s backtracks quadratically over a line
    of spaces (linear time on user text)."""
    opened = _HEADING_OPEN.match(content)
    if opened is None:
        return None
    rest = content[opened.end():].rstrip(" \t")
    closing = rest.rstrip("#")
    if closing != rest and (not closing or closing[-1] in " \t"):
        rest = closing  # a closing sequence of `#`s, after a blank or alone
    return len(opened.group(1)), rest.strip(" \t")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_NUMBERING = re.compile(r"^(?:\d+[.)、]|[一二三四五六七八九十]+[、.])\s*")
_SPLIT_TITLE = re.compile(r"[/|()（）｜]")
_COMMENT_LINE = re.compile(r"^\s*<!--.*-->\s*$")


@functools.cache
def _cjk() -> re.Pattern[str]:
    """A CJK character: compiled at first use, when a section is named or added (a class of
    ~28k characters costs ~2.5 ms to compile, in every command that indexes a file)."""
    return re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Heading:
    start: int
    end: int  # after the heading line's ending
    level: int
    title: str
    has_eol: bool


@dataclass(frozen=True)
class Section:
    key: str | None
    title: str
    level: int
    start: int  # the heading line
    body_start: int  # after the heading line
    own_end: int  # before the first sub-heading (or == end)
    end: int  # before the next heading of the same or a higher level, or len(text)
    heading_has_eol: bool


def fence_after(fence: str | None, line: str) -> str | None:
    """The fence (```, ~~~…) of the code block open after `line`, `fence` being the one open
    before it (None: none was)."""
    found = _FENCE.fullmatch(line.rstrip("\r"))
    if found is None:
        return fence
    mark, rest = found.group(1), found.group(2)
    if fence is None:
        # ``` with a backtick after it is inline code, no fence.
        return None if mark[0] == "`" and "`" in rest else mark
    if mark[0] == fence[0] and len(mark) >= len(fence) and not rest.strip():
        return None
    return fence


def split_lines(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, content, eol) for each line; only `\\n` ends a line, `\\r\\n` is kept whole."""
    lines = []
    pos = 0
    length = len(text)
    while pos < length:
        nl = text.find("\n", pos)
        if nl == -1:
            lines.append((pos, length, text[pos:], ""))
            break
        content_end = nl - 1 if nl > pos and text[nl - 1] == "\r" else nl
        lines.append((pos, nl + 1, text[pos:content_end], text[content_end : nl + 1]))
        pos = nl + 1
    return lines


def dominant_eol(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def parse_headings(text: str) -> list[Heading]:
    return _scan(text)[0]


def _scan(text: str) -> tuple[list[Heading], str | None, bool]:
    """The headings, the fence still open at the end of the text (if one is), and whether a
    comment is."""
    headings = []
    fence: str | None = None
    in_comment = False
    for start, end, content, eol in split_lines(text):
        if start == 0 and content.startswith(BOM):
            # A UTF-8 BOM (what some Windows editors put first) is no part of the first
            # line: left in, `\ufeff## Decisions` was no heading, and every write then
            # added a second `## Decisions` at the end (docs/format.md, "MEMORY.md and
            # SCRATCHPAD.md"). The line starts after it, so a splice keeps the BOM.
            start, content = len(BOM), content[len(BOM):]
        if in_comment:
            in_comment = "-->" not in content
            continue
        if fence is not None:
            fence = fence_after(fence, content)
            continue
        fence = fence_after(None, content)
        if fence is not None:
            continue
        opened = content.lstrip(" \t")
        if opened.startswith("<!--"):
            # A comment that opens a line runs to its `-->`, over lines too, as readers take it
            # (`strip_comments`): a heading inside it (a template's example) is no section.
            in_comment = "-->" not in opened[4:]
            continue
        found = heading(content)
        if found:
            headings.append(Heading(start, end, found[0], found[1].strip(), bool(eol)))
    return headings, fence, in_comment


def _normalize(title: str) -> str:
    value = unicodedata.normalize("NFKC", title).strip().lower()
    value = value.strip("*_` \t").rstrip(":：").strip()
    value = _NUMBERING.sub("", value)
    return " ".join(value.split())


# Built once per table of aliases (the tables are module constants): every recall reads the
# headings of MEMORY.md and the scratchpad, and rebuilding the table for each heading was a
# tenth of an MCP `recall` on 10k notes (bench/bench_mcp.py).
_ALIAS_INDEXES: dict[int, tuple[Mapping[str, Sequence[str]], dict[str, str]]] = {}


def _alias_index(aliases: Mapping[str, Sequence[str]]) -> dict[str, str]:
    cached = _ALIAS_INDEXES.get(id(aliases))
    if cached is not None and cached[0] is aliases:
        return cached[1]
    index = {}
    for key, names in aliases.items():
        index[_normalize(key)] = key
        for name in names:
            index[_normalize(name)] = key
    if aliases and len(_ALIAS_INDEXES) < 16:  # a table made on the fly is not kept
        _ALIAS_INDEXES[id(aliases)] = (aliases, index)
    return index


def title_key(title: str, aliases: Mapping[str, Sequence[str]] = L2_ALIASES) -> str | None:
    """Which known section a heading title names, if any (`技术约束 (Constraints)` included)."""
    index = _alias_index(aliases)
    normal = _normalize(title)
    if normal in index:
        return index[normal]
    for part in _SPLIT_TITLE.split(normal):
        part = part.strip()
        if part in index:
            return index[part]
    return None


def section_key(name: str, aliases: Mapping[str, Sequence[str]] = L2_ALIASES,
                argument: str = "section") -> str:
    """Turn what a user typed (`Decisions`, `decision`, `关键决策`) into a section key."""
    key = title_key(name, aliases)
    if key is None:
        known = ", ".join(
            f"{key} ({'/'.join(n for n in names if _cjk().search(n))})"
            for key, names in aliases.items()
        )
        raise ArgumentError(argument, f"unknown section {quoted(name)}; use one of: {known}")
    return key


def parse_sections(text: str, aliases: Mapping[str, Sequence[str]] = L2_ALIASES) -> list[Section]:
    headings = parse_headings(text)
    # Each section ends where the first later heading of its level or a higher one starts:
    # found for all at once with a stack of the sections still open (a look through the
    # headings after each one copied that list: 200,000 headings took about a minute,
    # tests/test_linear_time.py).
    ends = [len(text)] * len(headings)
    open_sections: list[int] = []
    for number, heading in enumerate(headings):
        while open_sections and headings[open_sections[-1]].level >= heading.level:
            ends[open_sections.pop()] = heading.start
        open_sections.append(number)
    result = []
    for i, heading in enumerate(headings):
        end = ends[i]
        own_end = headings[i + 1].start if i + 1 < len(headings) else len(text)
        own_end = min(own_end, end)
        result.append(
            Section(
                key=title_key(heading.title, aliases),
                title=heading.title,
                level=heading.level,
                start=heading.start,
                body_start=heading.end,
                own_end=own_end,
                end=end,
                heading_has_eol=heading.has_eol,
            )
        )
    return result


def find_section(
    text: str, key: str, aliases: Mapping[str, Sequence[str]] = L2_ALIASES
) -> Section | None:
    """The first section whose heading names `key`."""
    for section in parse_sections(text, aliases):
        if section.key == key:
            return section
    return None


def section_body(
    text: str, key: str, aliases: Mapping[str, Sequence[str]] = L2_ALIASES
) -> str | None:
    """The text under a section's heading (sub-sections included), or None when absent."""
    section = find_section(text, key, aliases)
    return None if section is None else text[section.body_start : section.end]


def _new_section_title(
    text: str, key: str, aliases: Mapping[str, Sequence[str]]
) -> tuple[str, int]:
    """Title and level for a section memctl must add: in the language and level the file uses."""
    names = aliases[key]
    english = next((n for n in names if not _cjk().search(n)), key)
    chinese = next((n for n in names if _cjk().search(n)), english)
    known = [s for s in parse_sections(text, aliases) if s.key is not None]
    if known:
        use_chinese = sum(bool(_cjk().search(s.title)) for s in known) * 2 > len(known)
        return (chinese if use_chinese else english), known[0].level
    return english, 2


def insert_lines(
    text: str,
    key: str,
    lines: Sequence[str],
    aliases: Mapping[str, Sequence[str]] = L2_ALIASES,
    *,
    at_top: bool = False,
) -> str:
    """Insert whole lines at the end of a section's own part (or at its top), adding the
    section at the end of the file when it is missing. Every original byte stays, in order.
    """
    if not lines:
        return text
    section = find_section(text, key, aliases)
    if section is None:
        return _append_section(text, key, lines, aliases)
    position, eol, needs_leading_eol = _insertion_point(text, section, at_top=at_top)
    block = eol.join(lines)
    if needs_leading_eol:
        # Inserting after a last line that has no ending: keep the file's no-final-newline style.
        return text[:position] + eol + block + text[position:]
    return text[:position] + block + eol + text[position:]


def _insertion_point(text: str, section: Section, *, at_top: bool) -> tuple[int, str, bool]:
    own = split_lines(text[section.body_start : section.own_end])
    fallback_eol = dominant_eol(text)
    if at_top or not any(content.strip() for _, _, content, _ in own):
        if not section.heading_has_eol:
            return section.body_start, fallback_eol, True
        heading_line = split_lines(text[section.start : section.body_start])[0]
        return section.body_start, heading_line[3] or fallback_eol, False
    last = max(i for i, (_, _, content, _) in enumerate(own) if content.strip())
    _, end, _, eol = own[last]
    if not eol:
        return section.body_start + end, fallback_eol, True
    return section.body_start + end, eol, False


def _append_section(
    text: str, key: str, lines: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> str:
    eol = dominant_eol(text)
    title, level = _new_section_title(text, key, aliases)
    addition = ""
    written = text.removeprefix(BOM)  # a file of a BOM alone is an empty one
    if written and not text.endswith("\n"):
        addition += eol
    _headings, open_fence, open_comment = _scan(text)
    if open_fence is not None:
        # The file ends inside a code block: close it, or the new section would be code.
        addition += open_fence + eol + eol
    elif open_comment:
        # Or inside a comment: the new section would be hidden in it.
        addition += "-->" + eol + eol
    elif written.strip() and not text.endswith(("\n\n", "\r\n\r\n")):
        addition += eol
    addition += "#" * level + " " + title + eol + eol.join(lines) + eol
    return text + addition


def replace_own_body(
    text: str,
    key: str,
    lines: Sequence[str],
    aliases: Mapping[str, Sequence[str]] = L2_ALIASES,
) -> str:
    """Replace the content lines of a section's own part, keeping the blank lines that
    separate it from what follows and every byte outside it."""
    section = find_section(text, key, aliases)
    if section is None:
        return _append_section(text, key, lines, aliases) if lines else text
    own = split_lines(text[section.body_start : section.own_end])
    eol = dominant_eol(text)
    if not section.heading_has_eol:
        return text + (eol + eol.join(lines) if lines else "")
    heading_eol = split_lines(text[section.start : section.body_start])[0][3]
    eol = heading_eol or eol
    content_idx = [i for i, (_, _, content, _) in enumerate(own) if content.strip()]
    # A guiding comment at the top of a section (as in the templates) is kept, one that runs
    # over several lines too (it was replaced by the new text).
    first = 0
    while first < len(content_idx):
        line = own[content_idx[first]][2]
        if _COMMENT_LINE.match(line):
            first += 1
            continue
        if not line.lstrip().startswith("<!--"):
            break
        close = next((i for i in range(first + 1, len(content_idx))
                      if "-->" in own[content_idx[i]][2]), None)
        if close is None or not own[content_idx[close]][2].rstrip().endswith("-->"):
            break
        first = close + 1
    content_idx = content_idx[first:]
    if not content_idx:
        return insert_lines(text, key, lines, aliases)
    start = section.body_start + own[content_idx[0]][0]
    _, last_end, _, last_eol = own[content_idx[-1]]
    end = section.body_start + last_end
    block = eol.join(lines)
    if lines:
        block += last_eol
    return text[:start] + block + text[end:]


# Text written into a section can never start or end one (docs/format.md, "Text inside a
# section"): a line of it that would read as a heading, a code fence (which hides the
# headings after it), or an HTML comment (which a reader skips), and in a list item also one
# that would read as a new item, gets a backslash in front, Markdown's own escape (it shows
# as the text it was). Readers take one backslash off such lines (`restore`): what was
# written reads back as it was given, `\## x` included. `inert` and `restore` are the one
# place that decides; every writer of MEMORY.md, SCRATCHPAD.md and episodes goes through
# `format_item` or `text_lines`.
_ITEM_START = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def _structural(rest: str, item: bool) -> bool:
    """Whether `rest` (a line without its leading blanks and backslashes) would be read as
    structure: a heading, a fence, a comment, and with `item` a list item."""
    return (
        heading(rest) is not None
        or rest.startswith(("```", "~~~", "<!--"))
        or (item and _ITEM_START.match(rest) is not None)
    )


def inert(line: str, *, item: bool = False) -> str:
    """`line` as it can be written into a section without changing the file's structure."""
    rest = line.lstrip(" \t")
    if _structural(rest.lstrip("\\"), item):
        indent = line[: len(line) - len(rest)]
        return indent + "\\" + rest
    return line


def restore(line: str, *, item: bool = False) -> str:
    """The line `inert` was given, from the line it wrote (a line it did not change as is)."""
    rest = line.lstrip(" \t")
    if rest.startswith("\\") and _structural(rest.lstrip("\\"), item):
        return line[: len(line) - len(rest)] + rest[1:]
    return line


def text_lines(text: str, *, keep_blank: bool = False) -> list[str]:
    """The lines of a text written as a paragraph into a section (a focus, a summary): each
    made `inert`, ends of lines trimmed, blank lines dropped unless `keep_blank`."""
    return [inert(line.rstrip()) for line in text.strip().splitlines()
            if keep_blank or line.strip()]


def format_item(text: str, stamp: str | None = None, marker: str = "-", *,
                keep_blank: bool = False) -> list[str]:
    """A list item, continuation lines indented under it and made `inert`; empty lines
    inside are dropped, or with `keep_blank` kept as empty lines (a paragraph break inside
    the item: the indented lines after it still belong to it, in Markdown too)."""
    parts = [line.rstrip() for line in text.strip().splitlines()
             if keep_blank or line.strip()]
    if not parts:
        raise UsageError("the text is empty")
    head = f"{marker} [{stamp}] {parts[0]}" if stamp else f"{marker} {parts[0]}"
    indent = " " * (len(marker) + 1)
    return [head] + [indent + inert(part.strip(), item=True) if part.strip() else ""
                     for part in parts[1:]]


def day_stamp(moment: datetime) -> str:
    """`11-30`: the short date the design puts in front of L2 items (local time)."""
    return moment.astimezone().strftime("%m-%d")


def append_dated_item(
    text: str,
    section: str,
    item: str,
    moment: datetime,
    aliases: Mapping[str, Sequence[str]] = L2_ALIASES,
) -> str:
    """Add `- [11-30] item` to a section (a name or key in any language); blank lines
    inside the item are kept (docs/agents.md)."""
    key = section_key(section, aliases)
    return insert_lines(text, key, format_item(item, day_stamp(moment), keep_blank=True),
                        aliases)


def strip_comments(text: str, replacement: str = "", *, whole_lines: bool = False) -> str:
    """`text` without HTML comments (`<!-- … -->`, across lines too), in linear time: each
    `<!--` looks for its `-->` once, and with none left no later `<!--` can close either
    (`re.sub(r"<!--.*?-->", …, re.DOTALL)` rescans to the end from every `<!--`: 80 KB of
    them took 8 s). Each comment becomes `replacement`.

    A comment that opens inside a line (after other text) must close on that line; one that
    opens a line may run over several.

    With `whole_lines`, only a comment that stands on lines of its own is taken out, newline
    included (a comment starting a line runs to the first `-->` followed by nothing but
    blanks to the end of a line); the others stay."""
    if "<!--" not in text:
        return text
    if whole_lines:
        return _strip_whole_line_comments(text)
    out: list[str] = []
    position = search = scanned = line_start = 0
    line_end = -1  # the end of the line of the last `<!--` looked at (its `\n`, or the size)
    dirty = False  # whether that line has anything but blanks before that `<!--`
    size = len(text)
    while True:
        start = text.find("<!--", search)
        if start < 0:
            break
        newline = text.rfind("\n", scanned, start)  # each stretch of text looked at once
        if newline >= 0:
            line_start = newline + 1
            dirty = bool(text[line_start:start].strip(" \t"))
        else:
            dirty = dirty or bool(text[scanned:start].strip(" \t"))
        scanned = start
        if dirty:
            # A comment opened inside a line closes on that line, or is no comment: text
            # written into a section (`inert`) can then never hide the sections after it.
            if start >= line_end:
                line_end = text.find("\n", start)
                line_end = size if line_end < 0 else line_end
            end = text.find("-->", start + 4, line_end)
            if end < 0:
                search = scanned = line_end  # (no later `<!--` of this line closes on it)
                dirty = False
                continue
        else:
            end = text.find("-->", start + 4)
            if end < 0:
                break
        out += [text[position:start], replacement]
        position = search = scanned = end + 3
        dirty = True  # (a `<!--` right after this comment is inside a line)
    if not out:
        return text
    out.append(text[position:])
    return "".join(out)


def _strip_whole_line_comments(text: str) -> str:
    out: list[str] = []
    position = search = 0
    scanned = line_start = 0  # text before `scanned` is known: where its line starts, and
    dirty = False  # whether that line has anything but blanks before it
    size = len(text)
    while True:
        start = text.find("<!--", search)
        if start < 0:
            break
        newline = text.rfind("\n", scanned, start)  # each stretch of text looked at once
        if newline >= 0:
            line_start = newline + 1
            dirty = bool(text[line_start:start].strip(" \t"))
        else:
            dirty = dirty or bool(text[scanned:start].strip(" \t"))
        scanned = start
        if dirty:
            search = start + 4
            continue
        close = start + 4
        while True:  # the first `-->` with only blanks after it up to the end of a line
            end = text.find("-->", close)
            if end < 0:
                # No `-->` ends a line from here on: no later comment can be one either.
                out.append(text[position:])
                return "".join(out)
            after = end + 3
            while after < size and text[after] in " \t":
                after += 1
            if after == size or text[after] == "\n":
                after += after < size
                break
            if text.startswith("\r\n", after):
                after += 2
                break
            close = end + 1
        out.append(text[position:line_start])
        position = search = scanned = line_start = after
        dirty = False
    out.append(text[position:])
    return "".join(out)
