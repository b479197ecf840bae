"""Reading and surgically editing Markdown files with YAML front matter. Pure: no I/O.

Two promises to users' files live here:
- reading never converts what they wrote: YAML is loaded with no implicit type resolution,
  so `no` stays "no", `0123` stays "0123" and dates stay the text they typed; the note model
  then interprets the fields it knows;
- changing a field never round-trips the file through a YAML dump: only the lines of that
  field change, every other byte (key order, comments, body, line endings, BOM) is kept.
"""

from __future__ import annotations

import functools
import re

from memctl.core.errors import MemctlError
from memctl.core.hashing import sha256
from memctl.core.records import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

MAX_FRONT_MATTER_BYTES = 64 * 1024
BOM = "\ufeff"
_DELIMITER = re.compile(r"^---[ \t]*$")
_CLOSERS = ("---", "...")
CHECKSUM_KEY = "checksum"


class FrontMatterTooLarge(MemctlError):
    """Fields memctl was asked to write that would not fit in a file's front matter
    (`MAX_FRONT_MATTER_BYTES`, the limit every reader holds a file to). Raised where front
    matter is rendered or edited (`render_front_matter`, `set_fields`), before anything is
    written, so every command refuses such a value in one place, store unchanged, instead of
    writing a file that would no longer parse (docs/format.md). Not a ValueError: the callers
    that word a ValueError as "does not parse" must let this one through as it is."""


def _require_fits(yaml_text: str) -> None:
    """`yaml_text`: the front matter between its delimiters, measured as `load_yaml_mapping`
    measures it. The largest field is named, as what to shorten."""
    size = len(yaml_text.encode("utf-8", "surrogatepass"))
    if size <= MAX_FRONT_MATTER_BYTES:
        return
    sizes: dict[str, int] = {}
    key = ""
    for line in split_lines(yaml_text):  # a field's lines are its key line and the indented ones after it
        match = _KEY_LINE.match(_strip_eol(line))
        key = match.group(1) if match else key
        sizes[key] = sizes.get(key, 0) + len(line.encode("utf-8", "surrogatepass"))
    largest = max(sizes, key=sizes.__getitem__)
    limit = MAX_FRONT_MATTER_BYTES // 1024
    detail = f"; `{largest}` alone is {_kb(sizes[largest])}, shorten it" if largest else ""
    raise FrontMatterTooLarge(
        f"the fields would take {_kb(size)}, more than the {limit} KB a file's front matter may "
        f"hold{detail} (long text belongs in the body, not in a field); nothing was changed")


def _kb(size: int) -> str:
    return f"{-(-size // 1024)} KB"


@dataclass
class ParseProblem:
    line: int  # 1-based line in the file
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParsedFile:
    meta: dict[str, Any]
    body: str
    has_front_matter: bool
    newline: str = "\n"
    bom: bool = False
    problem: ParseProblem | None = None
    # Line indexes (0-based, in the BOM-less text) of the opening and closing delimiters.
    open_line: int | None = None
    close_line: int | None = None
    warnings: list[str] = field(default_factory=list)


def _strict_loader() -> type:
    """A safe YAML loader that resolves no implicit types (every scalar is a string)."""
    global _LOADER
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class StrictLoader(base):  # type: ignore[misc, valid-type]
            yaml_implicit_resolvers: dict = {}
            # Only text, lists and mappings: an explicit tag (!!binary, !!timestamp, !!set,
            # !!python/...) is refused rather than turned into an object.
            yaml_constructors = {
                "tag:yaml.org,2002:str": yaml.SafeLoader.construct_yaml_str,
                "tag:yaml.org,2002:seq": yaml.SafeLoader.construct_yaml_seq,
                "tag:yaml.org,2002:map": yaml.SafeLoader.construct_yaml_map,
                None: yaml.SafeLoader.construct_undefined,
            }

        _LOADER = StrictLoader
    return _LOADER


_LOADER: type | None = None


def detect_newline(text: str) -> str:
    first_break = text.find("\n")
    if first_break > 0 and text[first_break - 1] == "\r":
        return "\r\n"
    return "\n"


def split_lines(text: str) -> list[str]:
    """Lines with their line endings kept, so joining them gives the text back."""
    return text.splitlines(keepends=True)


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def parse_text(text: str) -> ParsedFile:
    """Split a file's text into front matter fields and body. Never raises for bad input:
    a problem is returned with its line so the caller can report path:line."""
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    newline = detect_newline(text)
    lines = split_lines(text)
    if not lines or not _DELIMITER.match(_strip_eol(lines[0])):
        return ParsedFile(meta={}, body=text, has_front_matter=False, newline=newline, bom=bom)

    close = None
    for index in range(1, len(lines)):
        if _strip_eol(lines[index]).rstrip() in _CLOSERS:
            close = index
            break
    if close is None:
        return ParsedFile(
            meta={}, body=text, has_front_matter=False, newline=newline, bom=bom,
            problem=ParseProblem(1, "front matter opened with '---' is never closed by '---'"),
        )

    yaml_text = "".join(lines[1:close])
    body = "".join(lines[close + 1:])
    parsed = ParsedFile(
        meta={}, body=body, has_front_matter=True, newline=newline, bom=bom,
        open_line=0, close_line=close,
    )
    meta, problem = load_yaml_mapping(yaml_text, first_line=2)
    parsed.meta = meta
    parsed.problem = problem
    return parsed


EMPTY_FILE = "the file is empty"

_ID_LINE = re.compile(r"id[ \t]*:[ \t]*['\"]?([^'\"\s#]+)")


def salvage_id(text: str) -> str | None:
    """The value of the `id:` line of a file whose front matter does not parse (a typo on
    another line), read from that line alone; None when there is none. Only ever used to keep
    such a note from being taken for a removed one (docs/sync.md): a wrong answer can
    withhold a removal, never cause one. The caller checks it as any id (`valid_id`)."""
    lines = split_lines(text.lstrip(BOM)[:MAX_FRONT_MATTER_BYTES])
    if not lines or not _DELIMITER.match(_strip_eol(lines[0])):
        return None
    for line in lines[1:]:
        if _strip_eol(line).rstrip() in _CLOSERS:
            return None
        match = _ID_LINE.match(line)
        if match:
            return match.group(1).lower()
    return None


def parse_file(text: str) -> ParsedFile:
    """`parse_text` for a memory file as it is read from a store, a zip or a folder (a note,
    an episode, MEMORY.md, SCRATCHPAD.md, a tombstone): one that is empty or only white space
    does not parse, line 1, "the file is empty" (docs/format.md). Editors truncate before
    they write and a cut checkout leaves 0 bytes: such a file is never a note, so health lists
    it, export leaves it out and import refuses it, and nothing is written over a good copy
    with it (tests/test_broken_files.py). The one place of that rule: every reader of files
    calls this."""
    if not text.lstrip(BOM).strip():
        return ParsedFile(meta={}, body=text, has_front_matter=False, bom=text.startswith(BOM),
                          problem=ParseProblem(1, EMPTY_FILE))
    return parse_text(text)


def load_yaml_mapping(yaml_text: str, first_line: int = 1) -> tuple[dict[str, Any], ParseProblem | None]:
    """Load front matter YAML strictly. Returns ({}, problem) for anything unsafe or wrong."""
    if len(yaml_text.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES:
        return {}, ParseProblem(first_line, f"front matter is larger than {MAX_FRONT_MATTER_BYTES // 1024} KB")
    if not yaml_text.strip():
        return {}, None
    plain = _plain_mapping(yaml_text)
    if plain is not None:
        return plain, None
    import yaml

    loader = _strict_loader()
    if "*" in yaml_text or "&" in yaml_text:
        # Aliases make "billion laughs" bombs possible; front matter never needs them.
        try:
            for event in yaml.parse(yaml_text, Loader=loader):
                if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                    line = first_line + (event.start_mark.line if event.start_mark else 0)
                    return {}, ParseProblem(line, "YAML anchors and aliases (&name, *name) are not allowed in front matter")
        except yaml.YAMLError as exc:
            return {}, _yaml_problem(exc, first_line)
    try:
        data = yaml.load(yaml_text, Loader=loader)  # noqa: S506 - strict safe loader
    except yaml.YAMLError as exc:
        return {}, _yaml_problem(exc, first_line)
    except (RecursionError, MemoryError):
        return {}, ParseProblem(first_line, "front matter is nested too deeply")
    except (ValueError, TypeError) as exc:
        return {}, ParseProblem(first_line, f"front matter does not parse: {exc}")
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        return {}, ParseProblem(first_line, f"front matter must be fields (key: value), found {kind}")
    meta: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str):
            return {}, ParseProblem(first_line, f"front matter key {key!r} is not text")
        meta[key] = value
    duplicate = _duplicate_key(yaml_text)
    if duplicate is not None:
        # YAML keeps the last value silently; a person editing the first would be ignored.
        return {}, ParseProblem(first_line + duplicate[1], f"field {duplicate[0]!r} appears twice")
    return meta, None


def _plain_mapping(yaml_text: str) -> dict[str, Any] | None:
    """The fields of front matter written as memctl writes it (`render_front_matter`): every
    line `key: value`, each value text that `render_value` leaves unquoted, or a flow list
    `[a, b]` of such items; None for anything else, which YAML reads. For these lines the
    strict loader gives exactly the text between `: ` and the end of the line (or the items
    between `, `), so loading YAML (~12 ms of start-up for `memctl show` and `add`,
    bench/bench_write.py) is spared; tests/test_noteformat.py holds the two equal."""
    meta: dict[str, Any] = {}
    lines = yaml_text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        key, colon, value = line.partition(": ")
        if not colon or key in meta or _PLAIN_KEY.fullmatch(key) is None:
            return None
        if value.startswith("[") and value.endswith("]"):
            items = value[1:-1].split(", ") if len(value) > 2 else []
            if not all(map(_plain_flow_item, items)):
                return None
            meta[key] = items
        elif _renders_plain(value):
            meta[key] = value
        else:
            return None
    return meta


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _plain_flow_item(item: str) -> bool:
    return _renders_plain(item) and not any(ch in item for ch in ",[]{}")


def _duplicate_key(yaml_text: str) -> tuple[str, int] | None:
    seen: set[str] = set()
    for number, line in enumerate(yaml_text.splitlines()):
        match = _KEY_LINE.match(line)
        if match:
            key = match.group(1)
            if key in seen:
                return key, number
            seen.add(key)
    return None


# What YAML calls the constructs a person opens and must close, and how they are written.
_OPENED = {"flow sequence": "'['", "flow mapping": "'{'", "quoted scalar": "quote"}


def _yaml_problem(exc: Exception, first_line: int) -> ParseProblem:
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    mark = problem_mark or context_mark
    line = first_line + (mark.line if mark is not None else 0)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if "could not determine a constructor" in str(exc):
        problem = "unsupported YAML tag (only plain values, lists and mappings are allowed)"
    context = str(getattr(exc, "context", None) or "")
    opened = next((sign for name, sign in _OPENED.items() if context.endswith(name)), None)
    if opened and context_mark is not None:
        # An unclosed `[`, `{` or quote is found only where YAML gives up (the next field, or
        # the end of the front matter); the line to fix is the one that opened it
        # (tests/test_broken_files.py).
        line = first_line + context_mark.line
        if problem_mark is not None and problem_mark.line != context_mark.line:
            problem += f" (the {opened} on this line is not closed)"
    return ParseProblem(line, f"front matter does not parse: {problem}")


# --- checksums -----------------------------------------------------------------------------

_CHECKSUM_LINE = re.compile(r"^checksum[ \t]*:.*(?:\r?\n|$)", re.MULTILINE)


def compute_checksum(text: str) -> str:
    """Hash of a note's text with its own checksum line left out and line endings folded.

    memctl stamps it on every write; a file whose stamp does not match was edited by hand.
    """
    if text.startswith(BOM):
        text = text[1:]
    parsed_close = _front_matter_end(text)
    head, tail = text[:parsed_close], text[parsed_close:]
    head = _CHECKSUM_LINE.sub("", head)
    normalized = (head + tail).replace("\r\n", "\n")
    return sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _front_matter_end(text: str) -> int:
    """Character offset just after the closing delimiter line, or 0 with no front matter."""
    lines = split_lines(text)
    if not lines or not _DELIMITER.match(_strip_eol(lines[0])):
        return 0
    offset = len(lines[0])
    for line in lines[1:]:
        offset += len(line)
        if _strip_eol(line).rstrip() in _CLOSERS:
            return offset
    return 0


def content_hash(text: str) -> str:
    """Hash of the exact bytes (for change detection, not for hand-edit detection)."""
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --- rendering values -----------------------------------------------------------------------

# ASCII letters, digits and `_` (then also ` .:/+@()-`), or any character from U+0080 to
# U+FFFF. That range is written as "not ASCII and not beyond U+FFFF": as a class of 65k
# characters it cost ~8 ms to compile in every command that writes a note (`add`); this way
# ~0.1 ms, with the same matches (tests/test_noteformat.py). Still compiled on first use.
_ABOVE_ASCII = r"[^\x00-\x7f\U00010000-\U0010ffff]"
_PLAIN_SAFE_PATTERN = (rf"^(?:[A-Za-z0-9_]|{_ABOVE_ASCII})"
                       rf"(?:[A-Za-z0-9_ .:/+@()-]|{_ABOVE_ASCII})*$")


@functools.cache
def _plain_safe() -> re.Pattern[str]:
    return re.compile(_PLAIN_SAFE_PATTERN)

_YAML_SPECIAL_WORDS = {"~", "null", "Null", "NULL"}


def render_scalar(value: Any) -> str:
    """A YAML scalar that the strict loader reads back as exactly this text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    return text if _renders_plain(text) else double_quoted(text)


def _renders_plain(text: str) -> bool:
    """Whether `text` is written as a plain YAML scalar, which the strict loader reads back
    as exactly this text."""
    return bool(
        _plain_safe().match(text)
        and not text.endswith((" ", ":"))
        and ": " not in text
        and " #" not in text
        and text not in _YAML_SPECIAL_WORDS
        and all(_is_yaml_printable(ch) for ch in text)
    )


def _is_yaml_printable(ch: str) -> bool:
    code = ord(ch)
    return (
        0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    ) and ch not in "\u2028\u2029\ufeff"


def double_quoted(text: str) -> str:
    """A YAML double-quoted scalar; anything YAML cannot hold raw is escaped."""
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif _is_yaml_printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def render_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_render_flow_item(item) for item in value) + "]"
    return render_scalar(value)


def _render_flow_item(item: Any) -> str:
    rendered = render_scalar(item)
    if rendered == str(item) and any(ch in str(item) for ch in ",[]{}"):
        return double_quoted(str(item))
    return rendered


def render_front_matter(meta: dict[str, Any], newline: str = "\n") -> str:
    """Raises FrontMatterTooLarge when the fields do not fit the limit."""
    lines = ["---"]
    for key, value in meta.items():
        if value is None:
            continue
        lines.append(f"{key}: {render_value(value)}")
    _require_fits(newline.join(lines[1:]) + newline)
    lines.append("---")
    return newline.join(lines) + newline


def render_note(meta: dict[str, Any], body: str, newline: str = "\n") -> str:
    """A new file memctl writes itself: front matter in the given key order, then the body."""
    return render_front_matter(meta, newline) + body


def replace_body(text: str, body: str) -> str:
    """The file with its body replaced by `body` (in the file's line endings, ending with
    one newline); the front matter keeps every byte. Raises ValueError when the front matter
    does not parse, like `set_fields`."""
    parsed = parse_text(text)
    if parsed.problem is not None:
        raise ValueError(str(parsed.problem))
    prefix = BOM if parsed.bom else ""
    plain = text[1:] if parsed.bom else text
    head = plain[:_front_matter_end(plain)] if parsed.has_front_matter else ""
    lines = body.replace("\r\n", "\n").strip("\n").split("\n")
    return prefix + head + parsed.newline.join(lines) + parsed.newline


# --- surgical edits ------------------------------------------------------------------------

_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(.*)$")


def set_fields(text: str, updates: dict[str, Any]) -> str:
    """Change only the named top-level fields; `None` removes a field.

    Every other byte of the file is kept. A file with no front matter gets a new block at
    the top (the body stays byte for byte). Raises ValueError when the existing front
    matter does not parse, because editing a file we cannot read could lose data, and
    FrontMatterTooLarge when the changed fields would not fit the limit.
    """
    parsed = parse_text(text)
    if parsed.problem is not None:
        raise ValueError(str(parsed.problem))
    prefix = BOM if parsed.bom else ""
    plain = text[1:] if parsed.bom else text
    newline = parsed.newline
    if not parsed.has_front_matter:
        new_meta = {k: v for k, v in updates.items() if v is not None}
        if not new_meta:
            return text
        return prefix + render_front_matter(new_meta, newline) + plain

    lines = split_lines(plain)
    assert parsed.close_line is not None
    head = lines[1:parsed.close_line]
    for key, value in updates.items():
        head = _set_one(head, key, value, newline)
    _require_fits("".join(head))
    result = prefix + lines[0] + "".join(head) + "".join(lines[parsed.close_line:])
    _check_edit(result, parsed.meta, updates)
    return result


def _check_edit(result: str, before: dict[str, Any], updates: dict[str, Any]) -> None:
    """A line-level edit of YAML a person wrote could meet a shape it does not foresee; the
    result must read back as exactly the intended fields, or the file is not changed."""
    after = parse_text(result)
    expected = {k: v for k, v in before.items() if k not in updates}
    expected.update({k: _as_read(v) for k, v in updates.items() if v is not None})
    if after.problem is not None or after.meta != expected:
        raise ValueError("memctl cannot change the fields of this file safely (its front matter "
                         "has a shape line edits do not handle); edit the file by hand")


def _as_read(value: Any) -> Any:
    """How the strict loader reads back a value memctl rendered."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return [_as_read(item) for item in value]
    return str(value) if isinstance(value, int) else value


# A top-level key as written, quoted or not (`"updated": …` is the key `updated`: a new line
# written beside it would hold the same key twice, which stricter YAML readers refuse).
_FIELD_LINE = re.compile(
    r"""^(?:"(?P<double>[A-Za-z_][A-Za-z0-9_-]*)"|'(?P<single>[A-Za-z_][A-Za-z0-9_-]*)'"""
    r"|(?P<plain>[A-Za-z_][A-Za-z0-9_-]*))[ \t]*:")


def _field_extent(head: list[str], key: str) -> tuple[int, int] | None:
    """Index range [start, end) of the lines holding one top-level field."""
    for index, line in enumerate(head):
        match = _FIELD_LINE.match(line)
        if match and (match["plain"] or match["double"] or match["single"]) == key:
            end = index + 1
            while end < len(head):
                following = _strip_eol(head[end])
                if following.startswith((" ", "\t")) or following == "-" or following.startswith("- "):
                    end += 1
                    continue
                break
            return index, end
    return None


def _set_one(head: list[str], key: str, value: Any, newline: str) -> list[str]:
    extent = _field_extent(head, key)
    if value is None:
        if extent is None:
            return head
        return head[:extent[0]] + head[extent[1]:]
    rendered = f"{key}: {render_value(value)}"
    if extent is None:
        # New fields go before memctl's checksum stamp, which stays the last line.
        stamp_at = _field_extent(head, CHECKSUM_KEY)
        if stamp_at is not None and key != CHECKSUM_KEY:
            return head[:stamp_at[0]] + [rendered + newline] + head[stamp_at[0]:]
        # Before trailing blank lines. A line holding only tabs is blank to YAML until a
        # field stands next to it, then an error: such lines are the one thing dropped. So
        # is, in a front matter of nothing but white space (no fields), a blank line of what
        # Python calls white space and YAML refuses or reads as a value (\x1d, \f, \xa0):
        # read as no fields, then broken by the first one (bench/fuzz.py --only edit). Beside
        # fields such a line may be part of a value, and stays (the edit is then refused).
        if all(not line.strip() for line in head):
            head = [line for line in head if not line.strip(" \r\n")]
        elif any("\t" in line and not line.strip() for line in head):
            head = [line for line in head if line.strip() or "\t" not in line]
        end = len(head)
        while end > 0 and not head[end - 1].strip():
            end -= 1
        return head[:end] + [rendered + newline] + head[end:]
    start, end = extent
    old_first = _strip_eol(head[start])
    eol = head[start][len(old_first):] or newline
    comment = _trailing_comment(old_first) if end == start + 1 else ""
    return head[:start] + [rendered + comment + eol] + head[end:]


def _trailing_comment(line: str) -> str:
    """The ` # comment` at the end of a one-line field, outside any quotes.

    One pass over the line (linear time on user text): whether the value has started is
    kept in a flag rather than found by stripping the text before every quote, which was
    quadratic on a value of many quotes (`title: a""""…`)."""
    value = line.split(":", 1)[1]
    quote: str | None = None
    started = False  # the value has begun: a non-whitespace character came before
    for index, ch in enumerate(value):
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "\"'" and not started:
            quote = ch
            started = True
            continue
        if ch == "#" and index > 0 and value[index - 1] in " \t":
            # The run of blanks before the `#` belongs to the comment: the value ends there.
            return value[len(value[:index].rstrip(" \t")):]
        if not started and not ch.isspace():
            started = True
    return ""
