"""The note model: what each front matter field means, its default, and how a value that a
person typed is interpreted. Pure: the store does the reading and writing."""

from __future__ import annotations

from datetime import datetime, timedelta

from memctl.core.clock import ahead, format_time, parse_time
from memctl.core.errors import MemctlError
from memctl.core.hashing import sha256
from memctl.core.ids import ALPHABET, ID_LENGTH, is_id, valid_id
from memctl.core.noteformat import ParsedFile, compute_checksum, set_fields
from memctl.core.records import dataclass, field
from memctl.core.vocab import (  # noqa: F401 - re-exported
    MAX_NOTE_BYTES,
    NOTE_TYPES,
    PROJECT_NAME,
    SOURCES,
    STATUSES,
    valid_project_name,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TYPE = "fact"
DEFAULT_IMPORTANCE = 5

# The order memctl writes fields in a new note; a person's own order is never changed.
FIELD_ORDER = (
    "id", "type", "project", "importance", "tags", "subject", "predicate", "created",
    "updated", "expires", "pinned", "status", "superseded_by", "corrects", "source",
    "source_episode", "checksum",
)
_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n", ""}


def file_name_id(relpath: str) -> str | None:
    """The id at the end of a note's file name, as memctl names every note it writes
    (`…-01m8p0bq0stxw74r.md`, or the id alone), or None."""
    name = relpath.rsplit("/", 1)[-1]
    stem = name[:-3] if name.lower().endswith(".md") else name
    tail = stem[-ID_LENGTH:]
    if len(stem) >= ID_LENGTH and is_id(tail) \
            and (len(stem) == ID_LENGTH or stem[-ID_LENGTH - 1] == "-"):
        return tail
    return None


def implied_id(relpath: str) -> str:
    """The id of a note file with no valid `id:` field: `file_name_id` (an `id:` line
    deleted or broken by hand leaves the note its id, its links and its counters), else
    `derive_id`. The merge keys of history read file names the same way
    (memctl.exchange.snapshot)."""
    return file_name_id(relpath) or derive_id(relpath)


def derive_id(relpath: str) -> str:
    """A stable id for a file that has none: a hand-dropped note keeps it while it stays put.

    Giving the file an `id:` field makes it permanent across moves."""
    digest = sha256(relpath.encode("utf-8")).digest()
    number = int.from_bytes(digest[:10], "big")
    chars = []
    for _ in range(16):
        chars.append(ALPHABET[number & 31])
        number >>= 5
    return "".join(chars)


def parse_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def parse_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = [str(item) for item in value if item is not None and not isinstance(item, (list, dict))]
    else:
        items = str(value).split(",")
    tags = []
    for item in items:
        tag = item.strip().lstrip("#").strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (list, dict)):
        return None
    text = str(value).strip()
    return text or None


# Fields that hold one value: a list or mapping there is read as the default (`tags` holds a
# list; `importance` and `pinned` say so themselves).
_TEXT_FIELDS = (
    "id", "type", "project", "status", "created", "updated", "expires", "subject",
    "predicate", "superseded_by", "corrects", "source", "source_episode", "title",
)


def _shape(value: Any) -> str:
    return "mapping" if isinstance(value, dict) else "list" if isinstance(value, list) else "value"


def _time_field(meta: dict[str, Any], name: str, default: str, default_words: str,
                warnings: list[str]) -> str:
    """A time field's text, or `default` (with a warning) when it is no date or time."""
    value = _text(meta.get(name))
    if value and parse_time(value) is None:
        warnings.append(f"{name} {value[:80]!r} is not a date or time; read as {default_words}")
        return default
    return value or default


def title_of(meta: dict[str, Any], body: str) -> str:
    """The title: a `title:` field, else the first non-empty line of the body without `#`s."""
    explicit = _text(meta.get("title"))
    if explicit:
        return explicit[:200]
    for line in body.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped[:200]
    return ""


@dataclass
class Note:
    id: str
    type: str
    project: str
    importance: int
    tags: list[str]
    created: str
    updated: str
    status: str
    body: str
    path: str = ""
    subject: str | None = None
    predicate: str | None = None
    expires: str | None = None
    pinned: bool = False
    superseded_by: str | None = None
    corrects: str | None = None
    source: str | None = None
    source_episode: str | None = None
    title: str = ""
    has_id: bool = True
    # True when the `checksum` stamp matches the text: memctl wrote it and nobody edited it since.
    stamped: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def updated_at(self) -> datetime | None:
        return parse_time(self.updated)

    @property
    def created_at(self) -> datetime | None:
        return parse_time(self.created)

    def is_expired(self, moment: datetime) -> bool:
        if not self.expires:
            return False
        expiry = parse_time(self.expires)
        return expiry is not None and expiry <= moment

    def is_stale(self, moment: datetime) -> bool:
        return self.status != "active" or self.is_expired(moment)

    def to_dict(self, with_body: bool = True) -> dict[str, Any]:
        """Front matter fields (as memctl understands them) plus path and, optionally, body."""
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "project": self.project,
            "importance": self.importance,
            "tags": list(self.tags),
            "subject": self.subject,
            "predicate": self.predicate,
            "created": self.created,
            "updated": self.updated,
            "expires": self.expires,
            "pinned": self.pinned,
            "status": self.status,
            "superseded_by": self.superseded_by,
            "corrects": self.corrects,
            "source": self.source,
            "source_episode": self.source_episode,
            "title": self.title,
            "path": self.path,
        }
        # Fields a person added that memctl does not know are shown as they were written.
        for key, value in self.meta.items():
            if key not in data and key != "checksum":
                data[key] = value
        if with_body:
            data["body"] = self.body
        return data


def note_from_parsed(
    parsed: ParsedFile,
    *,
    text: str,
    relpath: str,
    project: str,
    file_time: datetime | None = None,
    archived: bool = False,
    check_stamp: bool = True,
) -> Note:
    """Interpret a parsed file as a note, filling defaults for what is missing.

    Values that cannot be understood fall back to the default and leave a warning; the file
    is never changed by reading it. The index, which never needs `stamped`, passes
    `check_stamp=False` and skips hashing the text."""
    meta = parsed.meta
    warnings: list[str] = []

    raw_id = _text(meta.get("id"))
    if raw_id and not valid_id(raw_id):
        # Never a path (`../../x`, `/abs`): the note is known by the id its path gives, which
        # the next change memctl makes to it writes down (docs/security.md).
        named = file_name_id(relpath)
        warnings.append(f"id {raw_id[:80]!r} is not a valid id (letters, digits, '.', '_', "
                        f"'-'); read as {implied_id(relpath)}, "
                        + ("the id at the end of its file name" if named
                           else "the id its path gives"))
        raw_id = None
    has_id = bool(raw_id)
    note_id = raw_id.lower() if raw_id else implied_id(relpath)
    if raw_id and not is_id(note_id):
        # Hand-made ids such as "pg-choice" are accepted as they are: they are still unique keys.
        note_id = raw_id

    note_type = (_text(meta.get("type")) or DEFAULT_TYPE).lower()
    if note_type not in NOTE_TYPES:
        warnings.append(f"unknown type {meta.get('type')!r}, read as {DEFAULT_TYPE!r}")
        note_type = DEFAULT_TYPE

    importance = DEFAULT_IMPORTANCE
    raw_importance = meta.get("importance")
    if raw_importance is not None and str(raw_importance).strip() != "":
        try:
            importance = int(str(raw_importance).strip())
        except ValueError:
            warnings.append(f"importance {raw_importance!r} is not a number 1-10, read as {DEFAULT_IMPORTANCE}")
        else:
            if not 1 <= importance <= 10:
                warnings.append(f"importance {importance} is outside 1-10, read as {min(10, max(1, importance))}")
                importance = min(10, max(1, importance))

    status = (_text(meta.get("status")) or "active").lower()
    if status not in STATUSES:
        warnings.append(f"unknown status {meta.get('status')!r}, read as 'active'")
        status = "active"
    if archived:
        status = "archived"

    pinned = parse_bool(meta.get("pinned", False))
    if pinned is None:
        warnings.append(f"pinned {meta.get('pinned')!r} is not true/false, read as false")
        pinned = False

    # Every value memctl cannot understand falls back to the field's default, with a warning
    # that `health` lists (docs/format.md, "How memctl reads what you wrote").
    for name in _TEXT_FIELDS:
        if isinstance(meta.get(name), (list, dict)):
            warnings.append(f"{name} is a {_shape(meta[name])}, not a value; read as the default")
    created_default = format_time(file_time) if file_time else ""
    created = _time_field(meta, "created", created_default, created_default or "unknown",
                          warnings)
    updated = _time_field(meta, "updated", created, "the created time", warnings) or created
    expires = _time_field(meta, "expires", "", "no expiry", warnings) or None

    note_project = _text(meta.get("project")) or project
    if not valid_project_name(note_project):
        # Never a path (`../../etc`) or a name no folder can have: the folder it is in.
        warnings.append(f"project {note_project[:80]!r} is not a project name; read as "
                        f"{project!r}, the folder the file is in")
        note_project = project

    raw_tags = meta.get("tags")
    if isinstance(raw_tags, dict) or (
        isinstance(raw_tags, list) and any(isinstance(t, (list, dict)) for t in raw_tags)
    ):
        warnings.append("tags is a mapping, not a list of words; read as none"
                        if isinstance(raw_tags, dict) else
                        "tags holds a list or mapping inside; those parts are left out")
        raw_tags = None if isinstance(raw_tags, dict) else raw_tags

    stamp = _text(meta.get("checksum"))
    return Note(
        id=note_id,
        type=note_type,
        project=note_project,
        importance=importance,
        tags=parse_tags(raw_tags),
        created=created,
        updated=updated,
        status=status,
        body=parsed.body,
        path=relpath,
        subject=_text(meta.get("subject")),
        predicate=_text(meta.get("predicate")),
        expires=expires,
        pinned=pinned,
        superseded_by=_text(meta.get("superseded_by")),
        corrects=_text(meta.get("corrects")),
        source=_text(meta.get("source")),
        source_episode=_text(meta.get("source_episode")),
        title=title_of(meta, parsed.body),
        has_id=has_id,
        stamped=check_stamp and bool(stamp) and stamp == compute_checksum(text),
        meta=dict(meta),
        warnings=warnings,
    )


def ordered_meta(values: dict[str, Any]) -> dict[str, Any]:
    """Fields in memctl's order for a new file; unknown keys keep their order at the end."""
    ordered = {key: values[key] for key in FIELD_ORDER if key in values and values[key] is not None}
    for key, value in values.items():
        if key not in ordered and value is not None:
            ordered[key] = value
    if "checksum" in ordered:
        ordered["checksum"] = ordered.pop("checksum")
    return ordered


def stamp(text: str, updates: dict[str, object], moment: datetime, note: Note | None = None) -> str:
    """Apply field updates, set `updated` and a fresh `checksum`, touching nothing else.

    A hand-made file without an `id` gets its derived id written down, so the id it was known
    by survives the change."""
    changes = dict(updates)
    changes["updated"] = format_time(monotonic_stamp(moment, note.updated if note else None))
    if note is not None and not note.has_id:
        changes.setdefault("id", note.id)
    try:
        text = set_fields(text, changes)
        text = set_fields(text, {"checksum": compute_checksum(text)})
    except ValueError as exc:
        where = f"{note.path}: " if note is not None and note.path else ""
        # The reason says which: front matter that does not parse, or a shape of it line
        # edits do not handle (a file that parses well must not be said not to).
        raise MemctlError(f"{where}cannot change its fields ({exc})") from exc
    if len(text.encode("utf-8")) > MAX_NOTE_BYTES * 10:
        raise MemctlError("note is too large to rewrite")
    return text


def monotonic_stamp(moment: datetime, previous: str | None) -> datetime:
    """A new `updated` is never older than the one it replaces (clocks differ between
    machines; newest-wins merging relies on a change looking newer than what it changed)."""
    before = parse_time(previous) if previous else None
    if before is not None and before >= moment:
        if ahead(before):
            # A stamp far in this clock's future (a machine's clock years ahead, or a hostile
            # `9999-12-31`) does not hold every later change hostage (docs/sync.md).
            return moment
        try:
            return before + timedelta(milliseconds=1)
        except OverflowError:
            return moment
    return moment
