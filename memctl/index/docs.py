"""From the files to the index's rows: finding the files, reading and parsing them, and
writing the rows in batches. `memctl.index.db` decides what to (re)index and when.

A note or an episode is one unit; a MEMORY.md is one unit per section, so a hit points at the
section (`blog/MEMORY.md#decisions`, with its line); a SCRATCHPAD.md is one unit.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import stat as stat_module
from collections import Counter
from datetime import UTC, datetime

from memctl.core.clock import parse_time
from memctl.core.note import note_from_parsed, title_of
from memctl.core.noteformat import BOM, ParsedFile, detect_newline, parse_file
from memctl.core.records import dataclass, field
from memctl.core.sections import parse_headings, strip_comments
from memctl.core.stamp import file_stamp
from memctl.core.textfile import decode_file
from memctl.core.tokenize import cjk_pairs, scope_token, to_index
from memctl.core.vocab import MAX_FILE_BYTES, fact_key
from memctl.disk.filescan import content_digest
from memctl.disk.layout import slugify
from memctl.disk.storefiles import LINK_ERRNOS, NOT_A_FILE_ERRNOS, READ_FLAGS, read_open
from memctl.index.fuzzy import doc_words
from memctl.index.scope import tag_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

    from memctl.core.note import Note
    from memctl.core.noteformat import ParsedFile

# The note model and the parsers are imported on first use: a freshness check that finds
# nothing changed (every search) needs neither.

# Files beyond this are reported instead of indexed (a pasted dump is not a memory).
MAX_INDEXED_BYTES = MAX_FILE_BYTES
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)
# L2 sections rank a little above a default note: they are the project's distilled memory.
MEMORY_IMPORTANCE = 6
SCRATCHPAD_IMPORTANCE = 5


@dataclass
class Doc:
    id: str
    kind: str  # note | episode | memory | scratchpad
    project: str
    type: str
    importance: int
    status: str
    title: str
    body: str
    updated: str
    updated_ts: float
    line: int = 1
    section: str | None = None
    tags: list[str] = field(default_factory=list)
    subject: str | None = None
    predicate: str | None = None
    created: str | None = None
    expires: str | None = None
    expires_ts: float | None = None
    pinned: bool = False
    superseded_by: str | None = None
    corrects: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _searchable(text: str) -> str:
    """The text without HTML comments (template guidance is not memory)."""
    return strip_comments(text, " ")


def _has_content(text: str) -> bool:
    """Something besides headings and comments (an empty template section is not a hit)."""
    return bool(_HEADING_LINE.sub("", _searchable(text)).strip())


# --- a fast path for the front matter memctl itself writes ---------------------------------
# YAML costs ~200 µs a file, most of the time of a cold reindex. Front matter made only of
# `key: plain value` and `key: [plain, list]` lines is read here with two regular
# expressions; anything else (quotes, comments, nesting, odd characters or line breaks,
# duplicate keys) goes to the strict YAML loader. A property test checks that both give the
# same result wherever the fast path answers.
#
# Linear time on any line: a plain value and a list item may hold spaces and may be followed
# by spaces, so with ordinary quantifiers a value that fails at its end (`title: a` + 8,100
# spaces + `# c`, a valid title and comment) was retried with one space fewer at a time,
# each retry scanning the spaces again: 0.5 s a line, quadratic in its length. Every
# repetition here is possessive (`*+`, Python 3.11): a value, an item, a line and the block
# have only one way to match (each stops at a character the text after it cannot start
# with), so giving back characters could never lead to a match and is not tried. (No
# capturing groups: Python 3.11's re raises SystemError for some inside possessive repeats.)
_BAD = "\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
_FIRST = f"[^\\s\\-?:,\\[\\]{{}}#&*!|>'\"%@`{_BAD}]"
_PLAIN = f"{_FIRST}(?:[^{_BAD}:#]|:(?=[^\\s{_BAD}])|(?<=[^\\s])#)*+"
_ITEM = f"{_FIRST}[^{_BAD},\\[\\]{{}}#:]*+"
_LIST = f"\\[ *+(?:{_ITEM}(?: *+, *+{_ITEM})*+)?+ *+\\]"
_LINE_RE = f"[A-Za-z_][A-Za-z0-9_-]*+:(?: ++(?:{_LIST}|{_PLAIN}))?+ *+\\r?\\n"


@functools.cache
def _fast_pattern() -> re.Pattern[str]:
    """The whole block: compiled on first use (~2 ms), not at every start-up."""
    return re.compile(f"(?:{_LINE_RE}| *+\\r?\\n)*+")

_CLOSER = re.compile(r"\n(?:---|\.\.\.)([^\n]*)(\n|$)")
_OPENER = re.compile(r"---[ \t]*\r?\n")
_ODD_BREAKS = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\r(?!\n)")


def fast_parse(text: str) -> ParsedFile | None:
    """The same result as `noteformat.parse_text` for simple front matter, else None."""
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    opener = _OPENER.match(text)
    if opener is None:
        return None
    for closer in _CLOSER.finditer(text, opener.end() - 1):
        if closer.group(1).strip() == "":
            break
    else:
        return None
    yaml_text = text[opener.end():closer.start() + 1]
    block_re = _fast_pattern()
    if len(yaml_text) > 8192 or _ODD_BREAKS.search(text, 0, closer.end()) \
            or not block_re.fullmatch(yaml_text):
        return None
    meta: dict[str, Any] = {}
    # The block matched: every line is blank or `key:`, `key: plain` or `key: [a, b]`, and a
    # key holds no `:`. So splitting each line at its first `:` reads it (faster than
    # matching the lines again).
    for line in yaml_text.split("\n"):
        key, colon, value = line.partition(":")
        if not colon:
            continue  # a blank line (or the empty rest after the last newline)
        if key in meta:
            return None
        value = value.rstrip("\r").strip(" ")
        if value.startswith("["):
            inner = value[1:-1].strip(" ")
            meta[key] = [item.strip(" ") for item in inner.split(",")] if inner else []
        else:
            meta[key] = value
    return ParsedFile(meta=meta, body=text[closer.end():], has_front_matter=True,
                      newline=detect_newline(text), bom=bom, open_line=0,
                      close_line=text.count("\n", 0, closer.start() + 1))


def _timestamp(text: str | None, fallback: float) -> float:
    moment = parse_time(text) if text else None
    return moment.timestamp() if moment is not None else fallback


def docs_for_file(path: str, kind: str, project: str, data: bytes, mtime_ns: int,
                  *, max_bytes: int) -> list[Doc] | tuple[int, str]:
    """The units of one file, or (line, message) when it cannot be read as memory."""
    if len(data) > max_bytes:
        return 1, f"file is larger than {max_bytes // (1024 * 1024)} MB, the most memctl reads"
    text = decode_file(data)
    if not isinstance(text, str):
        return text
    # Editors truncate before writing: an empty file is a save in progress (or a mistake),
    # never a reason to drop what it said (parse_file: the one rule, docs/format.md).
    parsed = fast_parse(text) or parse_file(text)
    if parsed.problem is not None:
        return parsed.problem.line, parsed.problem.message
    file_time = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    body_line = (parsed.close_line or 0) + 2 if parsed.has_front_matter else 1
    if kind in ("note", "archived", "episode"):
        note = note_from_parsed(parsed, text=text, relpath=path, project=project,
                                file_time=file_time, archived=kind == "archived",
                                check_stamp=False)
        return [_note_doc(note, kind, body_line, file_time.timestamp())]
    meta = parsed.meta
    updated = str(meta.get("updated") or "") or file_time.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    updated_ts = _timestamp(updated, file_time.timestamp())
    if kind == "scratchpad":
        if not _has_content(parsed.body):
            return []
        title = title_of(meta, parsed.body) or f"{project} scratchpad"
        return [Doc(id=path, kind=kind, project=project, type=kind,
                    importance=SCRATCHPAD_IMPORTANCE, status="active", title=title,
                    body=_searchable(parsed.body), updated=updated, updated_ts=updated_ts, line=body_line,
                    meta=_plain_meta(path, kind, project, title, None, updated))]
    return _memory_docs(path, project, parsed.body, body_line, updated, updated_ts)


def _note_doc(note: Note, kind: str, body_line: int, fallback_ts: float) -> Doc:
    meta = note.to_dict(with_body=False)
    doc_kind = "episode" if kind == "episode" else "note"
    doc_type = note.type
    if doc_kind == "episode":
        doc_type = "episode"
        meta["type"] = "episode"
        meta["kind"] = "episode"
    return Doc(
        id=note.id, kind=doc_kind, project=note.project, type=doc_type,
        importance=note.importance, status=note.status, title=note.title,
        body=_searchable(note.body),
        updated=note.updated, updated_ts=_timestamp(note.updated, fallback_ts), line=body_line,
        tags=list(note.tags), subject=note.subject, predicate=note.predicate,
        created=note.created, expires=note.expires,
        expires_ts=_timestamp(note.expires, 0.0) if note.expires else None,
        pinned=note.pinned, superseded_by=note.superseded_by, corrects=note.corrects, meta=meta,
    )


def _plain_meta(path: str, kind: str, project: str, title: str, section: str | None,
                updated: str) -> dict[str, Any]:
    return {"id": path if section is None else f"{path}#{section}", "type": kind, "kind": kind,
            "project": project, "title": title, "section": section, "updated": updated,
            "status": "active", "path": path}


# A section whose title another section already has gets `-2` appended until the anchor is
# new (`notes`, `notes-2`, `notes-2-2`). Past this many, the anchor would grow by two
# characters with each repeat (a MEMORY.md of 100,000 `# a` lines: quadratic time and ids
# of 200,000 characters), so a number follows instead (`notes` + 16 `-2`, then `-3`, `-4`...).
_MAX_REPEATS = 16


class _Anchors:
    """Unique section anchors as described above, in bounded time per section."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        # The last anchor the `-2` chain of a title gave: every one before it is taken (the
        # set only grows), so the next walk goes on from there, not from the title.
        self.chain_ends: dict[str, str] = {}
        self.numbers: dict[str, int] = {}  # the last number given after a full chain

    def take(self, base: str) -> str:
        anchor = self.chain_ends.get(base, base)
        repeats = (len(anchor) - len(base)) // 2
        while anchor in self.used and repeats < _MAX_REPEATS:
            anchor += "-2"
            repeats += 1
        if anchor in self.used:
            number = self.numbers.get(anchor, 2)
            stem = anchor
            while anchor in self.used:
                number += 1
                anchor = f"{stem}-{number}"
            self.numbers[stem] = number
        else:
            self.chain_ends[base] = anchor
        self.used.add(anchor)
        return anchor


def _memory_docs(path: str, project: str, body: str, body_line: int, updated: str,
                 updated_ts: float) -> list[Doc]:
    headings = parse_headings(body)
    chunks: list[tuple[str | None, int, int]] = []  # (heading title, start, end)
    first = headings[0].start if headings else len(body)
    if body[:first].strip():
        chunks.append((None, 0, first))
    for position, heading in enumerate(headings):
        end = headings[position + 1].start if position + 1 < len(headings) else len(body)
        chunks.append((heading.title, heading.start, end))
    docs: list[Doc] = []
    anchors = _Anchors()
    line, counted = body_line, 0
    for number, (heading, start, end) in enumerate(chunks, 1):
        text = body[start:end]
        if not _has_content(text):
            continue
        # Lines counted on from the last section, not from the top each time (quadratic).
        line += body.count("\n", counted, start)
        counted = start
        anchor = anchors.take(slugify(heading or "") or f"part-{number}")
        title = heading or title_of({}, text) or f"{project} MEMORY.md"
        section = heading or ""
        docs.append(Doc(
            id=f"{path}#{anchor}", kind="memory", project=project, type="memory",
            importance=MEMORY_IMPORTANCE, status="active", title=title, body=_searchable(text),
            updated=updated, updated_ts=updated_ts, section=section, line=line,
            meta=_plain_meta(path, "memory", project, title, anchor, updated),
        ))
    return docs


# --- from a path to rows ready for the database (runs in worker processes too) -------------


@dataclass
class Prepared:
    path: str
    kind: str
    outcome: str  # "gone" (not a regular file now), "same" (hash unchanged), "error", "docs"
    mtime_ns: int = 0  # the file's stamp (memctl.core.stamp)
    ctime_ns: int = 0
    size: int = 0
    digest: str = ""
    error_line: int = 0
    error: str = ""
    # One tuple per doc: the `docs` columns (without rowid), then fts title, tags and body,
    # then the lowercased tags.
    rows: list[tuple[Any, ...]] = field(default_factory=list)


def read_file(path: str, max_bytes: int) -> tuple[bytes, os.stat_result] | str | None:
    """The bytes and a stat that can only match the file again if the bytes are what it
    holds: when a writer raced the read (the stat before and after differ, or the bytes are
    not the file's size), the stat from before is returned, so the next pass reads it again.
    None if it is gone or not a regular file; the reason as text if it is there but cannot be
    read (permissions)."""
    import errno

    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, *LINK_ERRNOS, *NOT_A_FILE_ERRNOS):
            return None
        return f"cannot read the file: {exc.strerror or exc}"
    try:
        before = os.fstat(fd)
        if not stat_module.S_ISREG(before.st_mode):
            return None
        data = read_open(fd, before.st_size, max_bytes)
        after = os.fstat(fd)
        raced = file_stamp(after) != file_stamp(before)
        if raced or (len(data) != after.st_size and len(data) <= max_bytes):
            return data, _stale_stat(before)
        return data, after
    except OSError as exc:
        return f"cannot read the file: {exc.strerror or exc}"
    finally:
        os.close(fd)


class _RacedStat:
    """Stands in for a stat when a write raced the read: size -1 matches no file, so the next
    pass reads it again; the mtime stays real (hand-made notes take their times from it)."""

    def __init__(self, info: os.stat_result) -> None:
        self.st_mtime_ns = info.st_mtime_ns
        self.st_ctime_ns = info.st_ctime_ns
        self.st_size = -1


def _stale_stat(info: os.stat_result) -> Any:
    return _RacedStat(info)


# json.dumps with keyword arguments builds a new encoder per call: one, made once, is faster.
_to_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def doc_row(path: str, doc: Doc) -> tuple[Any, ...]:
    tag_text = " ".join([*doc.tags, doc.subject or "", doc.predicate or ""]).strip()
    return (
        doc.id, path, doc.kind, doc.project, doc.type, doc.importance, doc.status, doc.title,
        doc.section, doc.line, _to_json(doc.tags), doc.subject,
        doc.predicate, doc.created, doc.updated, doc.updated_ts, doc.expires, doc.expires_ts,
        int(doc.pinned), doc.superseded_by, doc.corrects,
        _to_json(doc.meta), doc.subject and fact_key(doc.subject),
        doc.predicate and fact_key(doc.predicate),
        to_index(doc.title), to_index(tag_text), to_index(doc.body), scope_token(doc.project),
        sorted(set(filter(None, map(tag_key, doc.tags)))),
        doc_words(doc.title, doc.tags, doc.subject, doc.predicate),
        _pairs_row(doc.title, tag_text, doc.body, doc.project),
    )


def _pairs_row(title: str, tags: str, body: str, project: str) -> tuple[str, ...] | None:
    """The entry's row of `fts_pairs` (its pairs of CJK characters), None when it has none."""
    pairs = (cjk_pairs(title), cjk_pairs(tags), cjk_pairs(body))
    return (*pairs, scope_token(project)) if any(pairs) else None


def prepare_file(root: str, path: str, kind: str, project: str, old_hash: str | None,
                 max_bytes: int) -> Prepared:
    read = read_file(os.path.join(root, path), max_bytes)
    if read is None:
        return Prepared(path, kind, "gone")
    if isinstance(read, str):
        # No stat and no hash are recorded: the next pass tries again (a chmod back changes
        # neither mtime nor size), and the last good entry stays until then.
        return Prepared(path, kind, "error", -1, -1, -1, "", 1, read)
    data, info = read
    digest = content_digest(data)
    prepared = Prepared(path, kind, "same", *file_stamp(info), digest)
    if digest == old_hash:
        return prepared
    result = docs_for_file(path, kind, project, data, info.st_mtime_ns, max_bytes=max_bytes)
    if isinstance(result, tuple):
        prepared.outcome = "error"
        prepared.error_line, prepared.error = result
        return prepared
    prepared.outcome = "docs"
    prepared.rows = [doc_row(path, doc) for doc in result]
    return prepared


# --- writing rows ------------------------------------------------------------------------------


class Writer:
    """Batches inserts (executemany with rowids assigned here): far fewer round trips."""

    BATCH = 500

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.next_rowid = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM docs"
                                       ).fetchone()[0]
        self.docs: list[tuple[Any, ...]] = []
        self.fts: list[tuple[Any, ...]] = []
        self.pairs: list[tuple[Any, ...]] = []
        self.tags: list[tuple[str, int]] = []
        self.files: list[tuple[Any, ...]] = []
        # (project, word) -> entries added with it: the fuzzy vocabulary's counts, written
        # once at the end of the pass (memctl.index.fuzzy.count_words).
        self.words: Counter[tuple[str, str]] = Counter()

    def add(self, row: tuple[Any, ...]) -> None:
        rowid = self.next_rowid
        self.next_rowid += 1
        self.docs.append((rowid, *row[:24]))
        self.fts.append((rowid, *row[24:28]))
        self.tags.extend((tag, rowid) for tag in row[28])
        self.words.update((row[3], word) for word in row[29])
        if row[30] is not None:
            self.pairs.append((rowid, *row[30]))
        if len(self.docs) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        conn = self.conn
        if self.docs:
            conn.executemany(
                "INSERT INTO docs(rowid, id, path, kind, project, type, importance, status,"
                " title, section, line, tags, subject, predicate, created, updated, updated_ts,"
                " expires, expires_ts, pinned, superseded_by, corrects, meta, subject_key,"
                " predicate_key) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.docs)
            conn.executemany("INSERT INTO fts(rowid, title, tags, body, scope)"
                             " VALUES (?, ?, ?, ?, ?)", self.fts)
            conn.executemany("INSERT INTO fts_pairs(rowid, title, tags, body, scope)"
                             " VALUES (?, ?, ?, ?, ?)", self.pairs)
            conn.executemany("INSERT OR IGNORE INTO doc_tags(tag, doc) VALUES (?, ?)",
                             self.tags)
        if self.files:
            conn.executemany(
                "INSERT OR REPLACE INTO files(path, mtime_ns, ctime_ns, size, hash, kind, error,"
                " error_line) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)", self.files)
        self.docs, self.fts, self.pairs, self.tags, self.files = [], [], [], [], []
