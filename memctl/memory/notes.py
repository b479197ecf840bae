"""Note operations shared by the CLI and the MCP server: add, edit, forget, supersede."""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from typing import Any

from memctl.core import arguments
from memctl.core.clock import format_time, now
from memctl.core.errors import MemctlError, UsageError
from memctl.core.ids import new_id
from memctl.core.importance import infer_importance
from memctl.core.note import (
    SOURCES,
    Note,
    derive_id,
    monotonic_stamp,
    note_from_parsed,
    ordered_meta,
    stamp,
    title_of,
)
from memctl.core.noteformat import compute_checksum, parse_text, render_note, set_fields
from memctl.core.secrets import guard, mask_secrets, masked_title, scan
from memctl.disk.layout import GLOBAL, TOMBSTONE_DIR
from memctl.disk.templates import fill, load_template
from memctl.index.db import ensure_fresh
from memctl.memory.checks import MERGED, decide
from memctl.store import Store


@dataclass
class AddResult:
    id: str
    path: str
    action: str  # "created" or "merged"
    superseded: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "action": self.action,
                "superseded": self.superseded, "similar": self.similar}


def build_note_text(store: Store, *, note_id: str, text: str, note_type: str, project: str,
                    importance: int | None, tags: list[str], subject: str | None,
                    predicate: str | None, expires: str | None, source: str,
                    created: str, extra: dict[str, Any] | None = None) -> str:
    """The full text of a new note file, from the type's template."""
    template = load_template(store.root, f"{note_type}.md")
    parsed = parse_text(fill(template, text=text))
    if parsed.problem is not None:
        raise MemctlError(f"template {note_type}.md does not parse: {parsed.problem}; fix it in .templates/")
    meta: dict[str, Any] = dict(parsed.meta)
    meta.update({
        "id": note_id, "type": note_type, "project": project,
        "importance": importance if importance is not None else _template_importance(meta),
        "tags": tags, "subject": subject, "predicate": predicate,
        "created": created, "updated": created, "expires": expires,
        "status": "active", "source": source,
    })
    if extra:
        meta.update({k: v for k, v in extra.items() if v is not None})
    body = parsed.body if parsed.body.endswith("\n") else parsed.body + "\n"
    rendered = render_note(ordered_meta(meta), body)
    try:
        return set_fields(rendered, {"checksum": compute_checksum(rendered)})
    except ValueError as exc:
        raise UsageError(f"the note's fields do not fit in a note ({exc})") from None


def _template_importance(meta: dict[str, Any]) -> int:
    try:
        return min(10, max(1, int(str(meta.get("importance", 5)))))
    except ValueError:
        return 5


def add_note(store: Store, text: str, *, note_type: str = "fact", project: str = "default",
             importance: int | None = None, tags: list[str] | None = None,
             subject: str | None = None, predicate: str | None = None,
             expires: str | None = None, source: str = "cli", force: bool = False,
             allow_secret: bool = False, corrects: str | None = None,
             source_episode: str | None = None) -> AddResult:
    """Write one note after the write-time checks (duplicates, supersession, secrets)."""
    text = arguments.note_text(text)
    note_type = arguments.note_type(note_type)
    project = arguments.scope_name(project)
    if importance is not None:
        arguments.importance(importance)
    if source not in SOURCES:
        raise UsageError(f"invalid source {source!r}")
    moment = now()
    if expires:
        expires = arguments.expiry(expires, moment)
    clean_tags = arguments.tags(tags or [])
    subject = arguments.short_line(subject, "subject")
    predicate = arguments.short_line(predicate, "predicate")

    guard({"text": text, "tags": clean_tags, "subject": subject, "predicate": predicate,
           "project": project}, allow_secret)
    if importance is None:
        importance = _inferred_importance(store, text, note_type)
    corrected = [corrects] if corrects else []

    with store.lock("add"):
        pool = _active_notes(store, project)
        decision = decide(
            text, note_type=note_type, project=project, existing=pool, subject=subject,
            predicate=predicate, corrects=corrected, force=force, moment=moment,
            duplicate_threshold=store.settings.get("duplicates.merge_threshold"),
            similar_threshold=store.settings.get("duplicates.similar_threshold"),
        )
        by_id = {note.id: note for note in pool}
        if decision.action == MERGED and decision.merged_into:
            target = by_id[decision.merged_into]
            path = _merge_into(store, target, importance, clean_tags, moment)
            store.commit(f"merge into {target.id}: {masked_title(target.title)}", [path])
            return AddResult(target.id, path, "merged", [], [])

        note_id = new_id()
        created = format_time(moment)
        title = title_of({}, text)
        # A secret written with allow_secret never reaches a file name or a commit message.
        relpath = store.new_note_relpath(project, note_type, note_id, mask_secrets(title))
        file_text = build_note_text(
            store, note_id=note_id, text=text, note_type=note_type, project=project,
            importance=importance, tags=clean_tags, subject=subject, predicate=predicate,
            expires=expires, source=source, created=created,
            extra={"corrects": corrects, "source_episode": source_episode},
        )
        store.write_text(relpath, file_text)
        changed = [relpath]
        superseded: list[str] = []
        for old_id in decision.supersedes:
            old = by_id.get(old_id) or store.find_note(old_id)
            if old.status != "active":
                continue  # already retired: `corrects:` still names it
            changed.append(_mark_superseded(store, old, note_id, moment))
            superseded.append(old.id)
        message = f"add {note_type} {note_id}: {masked_title(title)}"
        if superseded:
            message += f" (supersedes {', '.join(superseded)})"
        store.commit(message, changed)
    return AddResult(note_id, relpath, "created", superseded, list(decision.similar))



def _inferred_importance(store: Store, text: str, note_type: str) -> int:
    """From the markers in the text, starting at the type template's importance."""
    template = parse_text(fill(load_template(store.root, f"{note_type}.md"), text=""))
    return infer_importance(text, note_type, base=_template_importance(template.meta))


def _merge_into(store: Store, target: Note, importance: int, tags: list[str], moment: Any) -> str:
    """A near-duplicate refreshes the note it repeats: `updated`, a higher importance, new tags."""
    updates: dict[str, Any] = {}
    if importance > target.importance:
        updates["importance"] = importance
    new_tags = [t for t in tags if t.lower() not in {x.lower() for x in target.tags}]
    if new_tags:
        updates["tags"] = target.tags + new_tags
    text, _info = store.read_text(target.path)
    store.write_text(target.path, stamp(text, updates, moment, target))
    return target.path


def _active_notes(store: Store, project: str) -> list[Note]:
    """Active notes of the project and global, the scope of the write-time checks.

    Read from the index (fields and body), not from every file: an add stays fast as the
    store grows. The files it then changes are read afresh."""
    index = ensure_fresh(store)
    notes = []
    for meta, body in index.active_notes_with_bodies([project, GLOBAL]):
        fields = {key: meta.get(key) for key in _NOTE_FIELDS}
        fields["tags"] = list(meta.get("tags") or [])
        fields["pinned"] = bool(meta.get("pinned"))
        fields["title"] = meta.get("title") or ""
        notes.append(Note(**fields, body=body, has_id=meta["id"] != derive_id(meta["path"])))
    return notes


_NOTE_FIELDS = ("id", "type", "project", "importance", "created", "updated", "status", "path",
                "subject", "predicate", "expires", "superseded_by", "corrects", "source",
                "source_episode")


def _mark_superseded(store: Store, old: Note, new_id_value: str, moment: Any) -> str:
    text, _info = store.read_text(old.path)
    store.write_text(old.path, stamp(text, {"status": "superseded", "superseded_by": new_id_value}, moment, old))
    return old.path


def supersede_note(store: Store, old_ref: str, new_ref: str) -> tuple[Note, Note]:
    """Mark OLD as replaced by NEW, by hand."""
    old = store.find_note(old_ref)
    new = store.find_note(new_ref)
    if old.id == new.id:
        raise MemctlError("a note cannot supersede itself")
    with store.lock("supersede"):
        moment = now()
        path = _mark_superseded(store, old, new.id, moment)
        store.commit(f"supersede {old.id} by {new.id}: {masked_title(old.title)}", [path])
    return store.read_note(old.path), new


def edit_note(store: Store, ref: str, editor: str | None = None) -> tuple[Note, bool]:
    """Open the note in $EDITOR on a copy, validate, then stamp `updated` and save.

    The note file is replaced only with a valid result; an invalid one is kept in
    `.memctl/edit/` and named in the error so no typing is lost."""
    note = store.find_note(ref)
    original, _info = store.read_text(note.path)
    editor = editor or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    draft_dir = store.state_dir / "edit"
    draft_dir.mkdir(exist_ok=True)
    draft = draft_dir / f"{note.id}.md"
    draft.write_bytes(original.encode("utf-8"))
    try:
        result = subprocess.run([*shlex.split(editor), str(draft)])
    except FileNotFoundError:
        raise MemctlError(f"editor {editor!r} not found; set $EDITOR") from None
    if result.returncode != 0:
        raise MemctlError(f"editor exited with {result.returncode}; the note is unchanged (your copy: {draft})")
    try:
        edited = draft.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise MemctlError(f"the edited note is not UTF-8 text; the note is unchanged (your copy: {draft})") from None
    if edited == original:
        draft.unlink()
        return note, False
    problem = _validate_edited(edited, note, original)
    if problem:
        raise MemctlError(f"{problem}; the note is unchanged (your edited copy: {store.relpath(draft)})")
    with store.lock("edit"):
        moment = now()
        stamped = stamp(edited, {}, moment, note)
        store.write_text(note.path, stamped)
        store.commit(f"edit {note.id}: {masked_title(title_of(parse_text(stamped).meta, parse_text(stamped).body))}", [note.path])
    draft.unlink()
    return store.read_note(note.path), True


def _validate_edited(text: str, original: Note, original_text: str) -> str | None:
    parsed = parse_text(text)
    if parsed.problem is not None:
        return f"line {parsed.problem.line}: {parsed.problem.message}"
    edited = note_from_parsed(parsed, text=text, relpath=original.path, project=original.project)
    if original.has_id and edited.id != original.id:
        return f"the id changed from {original.id} to {edited.id}; ids are permanent"
    if edited.warnings:
        return "; ".join(edited.warnings)
    before = {(f.kind, f.masked) for f in scan(original_text)}
    added = [f for f in scan(text) if (f.kind, f.masked) not in before]
    if added:
        shown = ", ".join(f"{f.kind} {f.masked} (line {f.line})" for f in added[:3])
        return (f"the edit adds what looks like a secret: {shown}; the store is synced through "
                "git, so it was not saved")
    if not parsed.body.strip():
        return "the note body is empty (use `memctl forget` to delete a note)"
    return None


def forget_note(store: Store, ref: str) -> Note:
    """Delete a note and leave a tombstone, so no sync or import brings it back."""
    note = store.find_note(ref)
    with store.lock("forget"):
        moment = format_time(monotonic_stamp(now(), note.updated))
        tombstone_path = f"{TOMBSTONE_DIR}/{note.id}.md"
        tombstone = render_note(
            {"id": note.id, "deleted": moment, "project": note.project, "path": note.path,
             "updated": note.updated},
            f"{mask_secrets(note.title)}\n",
        )
        store.write_text(tombstone_path, tombstone)
        try:
            store.resolve(note.path).unlink()
        except FileNotFoundError:
            pass
        store.commit(f"forget {note.id}: {masked_title(note.title)}", [tombstone_path, note.path])
    return note


