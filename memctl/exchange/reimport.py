"""Importing another tool's memory again: update what came from the source, retire what it no
longer has, never overwrite what was edited here (docs/sync.md, "Importing again").

Every imported note carries `source_key` (the source's scope and the record within it) and
`import_hash` (its text as the import wrote it, without the `updated`/`checksum`/`import_hash`
lines). A note whose text still gives its `import_hash` is unedited. Against what the source
gives now, a stored note is:

| the source | the stored note | becomes |
|---|---|---|
| gives the same note as last time | any | unchanged (an edited `created` too) |
| changed it | unedited | updated in place (same id; created kept) |
| changed it | edited here | kept; the source's version is written as a conflict copy and the note's `import_hash` follows the source, so the same source is no news next time |
| no longer has it | unedited | archived with `source_gone: <time>` (`retired`); back when the source has it again |
| no longer has it | edited here | kept, `source_gone` set, reported as a conflict once |
| has it, the note was forgotten here | tombstone | stays forgotten |

Items of `MEMORY.md` / `SCRATCHPAD.md` (Cline's memory bank, Claude Code's auto-memory) are
kept in blocks between `<!-- memctl import: KEY HASH -->` and `<!-- /memctl import -->`, where
HASH is that of the item lines as written: the same rules, per block (an edited block whose
source changed gets a conflict copy of the whole file).

Pure planning over a snapshot: the caller (memctl.exchange.transfer) guards, writes through
the journal and commits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memctl.core import sections
from memctl.core.clock import format_time, parse_time
from memctl.core.merge import TOMBSTONE, conflict_path, git_oid, key_name
from memctl.core.note import monotonic_stamp
from memctl.core.noteformat import compute_checksum, parse_text, set_fields
from memctl.disk.layout import ARCHIVE_DIR, MEMORY_FILE, NOTES_DIR, SCRATCHPAD_FILE
from memctl.exchange.bundle import BundleFile, entry_for
from memctl.exchange.importers import Block
from memctl.exchange.importers.common import import_digest, label_of, seal_import
from memctl.exchange.snapshot import Snapshot

_OPEN = "<!-- memctl import: "
_CLOSE = "<!-- /memctl import -->"
_GONE = "gone"


@dataclass
class ReimportPlan:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflict_copies: list[str] = field(default_factory=list)
    writes: dict[str, bytes] = field(default_factory=dict)
    removes: list[str] = field(default_factory=list)

    def move(self, old: str, new: str, data: bytes) -> None:
        self.writes[new] = data
        if old != new:
            self.removes.append(old)


def plan_reimport(local: Snapshot, notes: Sequence[BundleFile], blocks: Sequence[Block], *,
                  scope: str, kept: set[str], project: str, moment: datetime,
                  templates: Mapping[str, str], retire: bool = True) -> ReimportPlan:
    """What importing `notes` and `blocks` (one source's, `scope`) changes in `local`.
    `templates` holds the text a missing `MEMORY.md` ("memory") or `SCRATCHPAD.md`
    ("scratchpad") starts from. `retire` false: the source was read only in part, so no note
    is retired for being gone from it."""
    plan = ReimportPlan()
    incoming: set[str] = set()
    for item in sorted(notes, key=lambda f: f.path):
        key = entry_for(item.path, item.data, item.updated).key
        incoming.add(key)
        mine = local.entries.get(key)
        if mine is None:
            plan.writes[item.path] = item.data
            plan.added.append(key_name(key))
        elif mine.kind == TOMBSTONE:
            continue  # forgotten here: a re-import does not bring it back
        elif mine.kind == "note":
            _reconcile(plan, mine.path, mine.data, mine.stamped, item, key_name(key), local, moment)
    if retire:
        _retire(plan, local, incoming, scope, kept, project, moment)
    for kind, (name, aliases) in {"memory": (MEMORY_FILE, sections.L2_ALIASES),
                                  "scratchpad": (SCRATCHPAD_FILE, sections.SCRATCHPAD_ALIASES)}.items():
        _plan_file(plan, local, f"{project}/{name}", [b for b in blocks if b.file == kind],
                   scope, aliases, templates[kind])
    plan.removes = sorted(set(plan.removes) - set(plan.writes))
    return plan


# --- notes -----------------------------------------------------------------------------------


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0]


def _reconcile(plan: ReimportPlan, path: str, data: bytes, stamped: bool, item: BundleFile,
               name: str, local: Snapshot, moment: datetime) -> None:
    mine = data.decode("utf-8", "replace")
    parsed = parse_text(mine)
    fresh = item.data.decode("utf-8")
    given = parse_text(fresh).meta
    created, updated = parsed.meta.get("created"), parsed.meta.get("updated")
    # The source's version as it gives it, before this note's `created` is put in: what the
    # import wrote last time unless an update in place since kept an earlier `created`.
    given_text = fresh
    if isinstance(created, str) and created.strip() and given.get("created") != created:
        fresh = set_fields(fresh, {"created": created})  # the note's first import dated it
    before, after = parse_time(updated), parse_time(given.get("updated"))
    if isinstance(updated, str) and before is not None and (after is None or after <= before):
        # A new version is never dated before the one it replaces (a source file's time can
        # be older than the retirement it undoes); sync relies on it (docs/sync.md).
        fresh = set_fields(fresh, {"updated": format_time(monotonic_stamp(moment, updated))})
    fresh = seal_import(fresh)
    fresh_path = path if _folder(path) == _folder(item.path) else item.path
    recorded = parsed.meta.get("import_hash")
    if parsed.problem is not None:
        edited, same_source = True, False  # a note that no longer parses is the user's to fix
    elif isinstance(recorded, str):
        edited = import_digest(mine) != recorded
        # The source is unchanged when the note it gives matches the recorded hash with the
        # `created` the note has here (kept by an update in place, or a conflict's
        # bookkeeping) or with its own: a `created` edited here is an edit made here, not a
        # change in the source, and must not make an unchanged source a conflict.
        same_source = recorded in (import_digest(fresh), import_digest(given_text))
    else:  # imported before notes kept their import_hash: memctl's stamp tells edits apart
        edited, same_source = not stamped, False
    if same_source:
        plan.unchanged.append(name)
        if parsed.meta.get("source_gone"):
            _bookkeep(plan, path, mine, stamped, {"source_gone": None})
    elif not edited:
        plan.move(path, fresh_path, fresh.encode("utf-8"))
        plan.updated.append(name)
    else:
        copy = conflict_path(path, git_oid(fresh.encode("utf-8")))
        if copy not in local.files:  # the same copy kept already is no news
            plan.conflicts.append(name)
            plan.writes[copy] = fresh.encode("utf-8")
            plan.conflict_copies.append(copy)
        if parsed.problem is None:
            _bookkeep(plan, path, mine, stamped, {"import_hash": import_digest(fresh), "source_gone": None})


def _bookkeep(plan: ReimportPlan, path: str, text: str, stamped: bool, updates: dict[str, object]) -> None:
    """The import's own fields on a note it must otherwise leave alone; memctl's stamp is
    renewed only where it was valid (a hand edit stays recognisable as one)."""
    try:
        changed = set_fields(text, updates)
        if stamped:
            changed = set_fields(changed, {"checksum": compute_checksum(changed)})
    except ValueError:
        return  # a front matter shape line edits do not handle: left as it is
    if changed != text:
        plan.writes[path] = changed.encode("utf-8")


def _retire(plan: ReimportPlan, local: Snapshot, incoming: set[str], scope: str, kept: set[str],
            project: str, moment: datetime) -> None:
    prefix = scope + "#"
    kept_tree = _kept_tree(kept)
    for key, entry in sorted(local.entries.items()):
        if entry.kind != "note" or key in incoming or not entry.path.startswith(project + "/") \
                or b"source_key" not in entry.data:
            continue
        text = entry.data.decode("utf-8", "replace")
        parsed = parse_text(text)
        source_key = parsed.meta.get("source_key")
        if parsed.problem is not None or not isinstance(source_key, str) \
                or not source_key.startswith(prefix) or _kept(source_key, kept_tree) \
                or parsed.meta.get("source_gone"):
            continue
        gone = format_time(moment)
        if import_digest(text) != parsed.meta.get("import_hash"):
            _bookkeep(plan, entry.path, text, entry.stamped, {"source_gone": gone})
            plan.conflicts.append(key_name(key))
            continue
        updated = parsed.meta.get("updated")
        stamp = format_time(monotonic_stamp(moment, updated if isinstance(updated, str) else None))
        try:
            retired = seal_import(set_fields(text, {"status": "archived", "source_gone": gone,
                                                    "updated": stamp}))
        except ValueError:
            continue
        target = entry.path
        notes_folder = f"{project}/{NOTES_DIR}/"
        if target.startswith(notes_folder):
            target = f"{project}/{ARCHIVE_DIR}/{target[len(notes_folder):]}"
        plan.move(entry.path, target, retired.encode("utf-8"))
        plan.retired.append(key_name(key))


def _kept_tree(kept: set[str]) -> dict:
    """The kept keys as a tree of their `#`-separated parts: a key ends at a node holding
    None (no part is None)."""
    tree: dict = {}
    for key in kept:
        node = tree
        for part in key.split("#"):
            node = node.setdefault(part, {})
        node[None] = True
    return tree


def _kept(source_key: str, kept_tree: dict) -> bool:
    """Whether a record, or the file it is a section of, is still in the source but was left
    out as invalid (`scope#file` keeps `scope#file#section` too): a kept key of two parts or
    more that `source_key`'s parts start with. Each part is looked at once: joining the
    parts again for each length was quadratic in a key of many parts
    (tests/test_linear_time.py)."""
    node = kept_tree
    for depth, part in enumerate(source_key.split("#"), start=1):
        node = node.get(part)
        if node is None:
            return False
        if depth >= 2 and None in node:
            return True
    return False


# --- MEMORY.md and SCRATCHPAD.md blocks ---------------------------------------------------------


@dataclass
class _Found:
    key: str
    recorded: str  # the hash in the opening marker
    gone: bool
    start: int  # the opening marker line
    end: int  # after the closing marker line (or the last line, when unclosed)
    lines: list[str]
    closed: bool


def lines_hash(lines: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(line.rstrip() for line in lines).encode("utf-8")).hexdigest()[:16]


def render_block(key: str, lines: Sequence[str], recorded: str | None = None, gone: bool = False) -> list[str]:
    mark = f"{_OPEN}{key} {recorded or lines_hash(lines)}{' ' + _GONE if gone else ''} -->"
    return [mark, *lines, _CLOSE]


def find_blocks(text: str) -> list[_Found]:
    """The import blocks of a file, in order. One pass over its lines; markers are read with
    string methods (linear time on user text)."""
    found: list[_Found] = []
    current: _Found | None = None
    for start, end, content, _eol in sections.split_lines(text):
        line = content.strip()
        opening = _parse_open(line)
        if current is not None and (opening is not None or line == _CLOSE):
            current.end = end if line == _CLOSE else start
            current.closed = line == _CLOSE
            found.append(current)
            current = None
            if opening is None:
                continue
        if opening is not None:
            key, recorded, gone = opening
            current = _Found(key, recorded, gone, start, end, [], False)
        elif current is not None:
            current.lines.append(content)
            current.end = end
    if current is not None:
        found.append(current)
    return found


def _parse_open(line: str) -> tuple[str, str, bool] | None:
    if not (line.startswith(_OPEN) and line.endswith("-->")):
        return None
    words = line[len(_OPEN):-3].split()
    gone = bool(words) and words[-1] == _GONE
    if gone:
        words = words[:-1]
    if len(words) < 2 or len(words[-1]) != 16 or any(ch not in "0123456789abcdef" for ch in words[-1]):
        return None
    return " ".join(words[:-1]), words[-1], gone


def _plan_file(plan: ReimportPlan, local: Snapshot, path: str, wanted: list[Block], scope: str,
               aliases: Mapping[str, Sequence[str]], template: str) -> None:
    existing = local.files.get(path)
    text = existing.data.decode("utf-8", "replace") if existing is not None else None
    if text is None and not wanted:
        return
    base = text if text is not None else template
    mine, theirs, conflict = splice(base, wanted, scope, aliases)
    if text is None:
        plan.writes[path] = mine.encode("utf-8")
        plan.added.append(path)
        return
    if conflict:
        plan.conflicts.append(path)
        copy = conflict_path(path, git_oid(theirs.encode("utf-8")))
        if theirs != mine and copy not in local.files:
            plan.writes[copy] = theirs.encode("utf-8")
            plan.conflict_copies.append(copy)
    if mine != text:
        plan.writes[path] = mine.encode("utf-8")
        if not conflict or _without_markers(mine) != _without_markers(text):
            plan.updated.append(path)
    elif wanted and not conflict:
        plan.unchanged.append(path)


def _without_markers(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.strip().startswith(_OPEN))


def splice(text: str, wanted: Sequence[Block], scope: str,
           aliases: Mapping[str, Sequence[str]]) -> tuple[str, str, bool]:
    """(the file with this source's blocks brought up to date, the file as the source would
    have it where a block edited here conflicts, whether one does)."""
    eol = sections.dominant_eol(text)
    prefix = label_of(scope) + "#"
    blocks = {label_of(block.record): block for block in wanted}
    mine: list[tuple[int, int, list[str]]] = []  # (start, end, replacement lines)
    theirs: list[tuple[int, int, list[str]]] = []
    conflict = False
    for found in find_blocks(text):
        if not found.key.startswith(prefix):
            continue
        block = blocks.pop(found.key, None)
        lines = list(block.lines) if block is not None else None
        edited = not found.closed or lines_hash(found.lines) != found.recorded
        if lines is not None and [line.rstrip() for line in found.lines] == lines and found.closed:
            if found.gone or found.recorded != lines_hash(lines):
                mine.append((found.start, found.end, render_block(found.key, lines)))
            continue
        if lines is None:  # the source no longer has it
            if not edited:
                mine.append((found.start, found.end, []))
            elif not found.gone:
                conflict = True
                mine.append(_marker_only(found, found.recorded, gone=True))
            continue
        if not edited:
            mine.append((found.start, found.end, render_block(found.key, lines)))
        elif lines_hash(lines) != found.recorded or found.gone:
            conflict = conflict or lines_hash(lines) != found.recorded
            mine.append(_marker_only(found, lines_hash(lines)))
            if found.closed:
                theirs.append((found.start, found.end, render_block(found.key, lines)))
    merged = _apply(text, mine, eol)
    conflicting = _apply(text, mine if not theirs else _replace(mine, theirs), eol)
    new: dict[str, list[str]] = {}  # section -> the new blocks' lines, inserted at once
    for block in wanted:
        key = label_of(block.record)
        if key in blocks:
            new.setdefault(block.section, []).extend(render_block(key, block.lines))
    for section, lines in new.items():
        merged = sections.insert_lines(merged, section, lines, aliases)
        conflicting = sections.insert_lines(conflicting, section, lines, aliases)
    return merged, conflicting, conflict


def _marker_only(found: _Found, recorded: str, gone: bool = False) -> tuple[int, int, list[str]]:
    """A change of the opening marker alone: the lines under it are the user's."""
    return (found.start, -1, [render_block(found.key, [], recorded, gone)[0]])


def _replace(mine: list[tuple[int, int, list[str]]],
             theirs: list[tuple[int, int, list[str]]]) -> list[tuple[int, int, list[str]]]:
    starts = {start for start, _end, _lines in theirs}
    return [change for change in mine if change[0] not in starts] + theirs


def _apply(text: str, changes: list[tuple[int, int, list[str]]], eol: str) -> str:
    """Replace spans of the text by whole lines, in one pass; an end of -1 replaces the line
    at start (its ending kept)."""
    out: list[str] = []
    position = 0
    for start, end, lines in sorted(changes, key=lambda c: c[0]):
        out.append(text[position:start])
        if end == -1:
            line_end = text.find("\n", start)
            end = len(text) if line_end < 0 else line_end + 1
            span = text[start:end]
            out.append(lines[0] + span[len(span.rstrip("\r\n")):])
        elif lines:
            out.append(eol.join(lines) + (eol if text[start:end].endswith("\n") else ""))
        position = end
    out.append(text[position:])
    return "".join(out)
