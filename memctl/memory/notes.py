"""Note operations shared by the CLI and the MCP server: add, edit, forget, supersede."""

from __future__ import annotations

from memctl.core import arguments
from memctl.core.clock import format_time, now
from memctl.core.errors import MemctlError, NoteFormatError, UnknownIdError, UsageError, arg, cmd, quoted
from memctl.core.ids import new_id
from memctl.core.importance import infer_importance
from memctl.core.note import (
    SOURCES,
    Note,
    implied_id,
    monotonic_stamp,
    note_from_parsed,
    ordered_meta,
    stamp,
    title_of,
)
from memctl.core.noteformat import (
    compute_checksum,
    parse_file,
    parse_text,
    render_note,
    replace_body,
    salvage_id,
    set_fields,
)
from memctl.core.records import dataclass, field
from memctl.core.secrets import added_secrets, guard, mask_name, masked_title
from memctl.core.textfile import decode_file
from memctl.disk import gitops
from memctl.disk.atomic import WriteError, atomic_write_bytes, refuse_special_target, remove_file
from memctl.disk.layout import GLOBAL, TOMBSTONE_DIR
from memctl.disk.templates import fill, load_template, with_text
from memctl.index.db import Index, ensure_fresh
from memctl.index.nearwords import check_pool, keep_words
from memctl.memory.checks import MERGED, WriteDecision, decide
from memctl.memory.drafts import FORGOTTEN, MARK, Draft, fingerprint
from memctl.memory.editor import editor_command, run_editor
from memctl.store import Store

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any


@dataclass
class AddResult:
    id: str
    path: str
    action: str  # "created" or "merged"
    superseded: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)
    corrects: str | None = None  # a correction: the note it corrects, which stays active
    # Active notes of the same subject + predicate whose file does not parse: not superseded
    # (no field of a file that does not parse can be changed), and said so.
    not_superseded: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "action": self.action,
                "superseded": self.superseded, "similar": self.similar,
                "corrects": self.corrects, "not_superseded": self.not_superseded}


def build_note_text(store: Store, *, note_id: str, text: str, note_type: str, project: str,
                    importance: int | None, tags: list[str], subject: str | None,
                    predicate: str | None, expires: str | None, source: str,
                    created: str, extra: dict[str, Any] | None = None) -> str:
    """The full text of a new note file, from the type's template."""
    template = load_template(store, f"{note_type}.md")
    parsed = parse_text(with_text(template, text, f"{note_type}.md"))
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


def check_corrects(corrects: str | None, note_type: str) -> None:
    """Only a correction is linked to what it corrects and ranked ahead of it: bad usage,
    said before the note it names is looked for (an unknown id is another error)."""
    if corrects and note_type != "correction":
        raise UsageError(f"{arg('corrects')} is for a correction: add {arg('type')} correction")


def add_note(store: Store, text: str, *, note_type: str = "fact", project: str = "default",
             importance: int | None = None, tags: list[str] | None = None,
             subject: str | None = None, predicate: str | None = None,
             expires: str | None = None, source: str = "cli", force: bool = False,
             allow_secret: bool = False, corrects: str | None = None,
             source_episode: str | None = None) -> AddResult:
    """Write one note after the write-time checks (duplicates, supersession, secrets)."""
    text = arguments.note_text(text)
    note_type = arguments.note_type(note_type)
    check_corrects(corrects, note_type)
    project = arguments.scope_name(project)
    if importance is not None:
        arguments.importance(importance)
    if source not in SOURCES:
        raise UsageError(f"invalid source {quoted(source)}")
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
        # The index stays open until the commit has indexed the change (closed on the way
        # out otherwise, when its last reference goes).
        by_id, index, decision = _checked(
            store, project, text, subject=subject, predicate=predicate,
            decide_on=lambda pool: decide(
                text, note_type=note_type, project=project, existing=pool, subject=subject,
                predicate=predicate, expires=expires, corrects=corrected, force=force,
                moment=moment,
                duplicate_threshold=store.settings.get("duplicates.merge_threshold"),
                similar_threshold=store.settings.get("duplicates.similar_threshold")))
        if decision.action == MERGED and decision.merged_into:
            target = by_id[decision.merged_into]
            path = _merge_into(store, target, importance, clean_tags, moment)
            store.commit(f"merge into {target.id}: {masked_title(target.title)}", [path],
                         index=index, close_index=True)
            return AddResult(target.id, path, "merged", [], [])

        note_id = new_id()
        created = format_time(moment)
        title = title_of({}, text)
        # A secret written with allow_secret never reaches a file name or a commit message.
        relpath = store.new_note_relpath(project, note_type, note_id, mask_name(title))
        file_text = build_note_text(
            store, note_id=note_id, text=text, note_type=note_type, project=project,
            importance=importance, tags=clean_tags, subject=subject, predicate=predicate,
            expires=expires, source=source, created=created,
            extra={"corrects": corrects, "source_episode": source_episode},
        )
        retired = [old for old in (by_id.get(old_id) or store.find_note(old_id)
                                   for old_id in decision.supersedes)
                   if old.status == "active"]  # (one already retired stays as it is)
        # Every new text before the first write: a note whose fields cannot be changed
        # (front matter of a shape line edits do not handle) stops the add with nothing
        # written (tests/test_hostile_input.py).
        retirements = [_superseded_version(store, old, note_id, moment) for old in retired]
        store.write_text(relpath, file_text)
        for path, retired_text in retirements:
            store.write_text(path, retired_text)
        changed = [relpath, *(path for path, _ in retirements)]
        superseded = [old.id for old in retired]
        unreadable = index.unreadable_with_key([project, GLOBAL], subject, predicate) \
            if subject and predicate else []
        message = f"add {note_type} {note_id}: {masked_title(title)}"
        if superseded:
            message += f" (supersedes {', '.join(superseded)})"
        if corrects:
            message += f" (corrects {corrects})"
        # The new note's words are kept for the next add's checks while git commits.
        store.commit(message, changed, index=index, close_index=True,
                     then=lambda held: keep_words(held.conn, [relpath], [project, GLOBAL]))
    return AddResult(note_id, relpath, "created", superseded, list(decision.similar), corrects,
                     unreadable)



def _inferred_importance(store: Store, text: str, note_type: str) -> int:
    """From the markers in the text, starting at the type template's importance."""
    template = parse_text(fill(load_template(store, f"{note_type}.md"), f"{note_type}.md", text=""))
    return infer_importance(text, note_type, base=_template_importance(template.meta))


def _merge_into(store: Store, target: Note, importance: int, tags: list[str], moment: Any) -> str:
    """A near-duplicate refreshes the note it repeats: `updated`, a higher importance, new tags."""
    updates: dict[str, Any] = {}
    if importance > target.importance:
        updates["importance"] = importance
    merged = arguments.merged_tags(
        target.tags, tags, f"note `{target.id}`, the near-duplicate this would refresh,",
        f"remove some of its tags ({cmd('edit')}), or keep this as a note of its own "
        f"({arg('force')})")
    if len(merged) > len(target.tags):
        updates["tags"] = merged
    text, _info = store.read_text(target.path)
    store.write_text(target.path, stamp(text, updates, moment, target))
    return target.path


def _check_pool(store: Store, project: str, text: str, *, subject: str | None,
                predicate: str | None) -> tuple[list[Note], Index]:
    """The active notes of the project and global that the write-time checks of `text` must
    see (the scope of the checks): those that could be near-duplicates or contradictions of
    it, found through the words the index keeps for them (memctl.index.nearwords: the same
    decision as with every note), and with a subject and a predicate the project's notes
    having both (supersession); and the open index, for the commit to index the change with
    (`Store.commit`).

    Read from the index (fields and body), not from every file: an add stays fast as the
    store grows. The files it then changes are read afresh. Only these two folders need be
    current, so only they are walked (memctl.index.db.ensure_fresh)."""
    index = ensure_fresh(store, [project, GLOBAL])
    rows = check_pool(index.conn, [project, GLOBAL], text,
                      same_key_project=project if subject and predicate else None)
    return [indexed_note(meta, body) for meta, body in rows], index


def _checked(store: Store, project: str, text: str, *, subject: str | None,
             predicate: str | None, decide_on: Callable[[list[Note]], WriteDecision]
             ) -> tuple[dict[str, Note], Index, WriteDecision]:
    """The pool of the write-time checks (by id), the open index and `decide_on(pool)`, made
    sure to rest on the files as they are now: each note the decision would write (merged into,
    superseded) must still hold the bytes the index read, and parse. A note edited by hand
    since (or while this command looked) is indexed again and the decision made again, once;
    changed again by then, the command stops before it writes anything. Before, an add
    merged a new note into a note emptied or rewritten by hand, by the index's older copy,
    and its text was written nowhere (tests/test_write_path.py)."""
    for _attempt in range(2):
        pool, index = _check_pool(store, project, text, subject=subject, predicate=predicate)
        decision = decide_on(pool)
        by_id = {note.id: note for note in pool}
        acted_on = [decision.merged_into] if decision.action == MERGED else decision.supersedes
        changed = [by_id[note_id].path for note_id in acted_on
                   if note_id in by_id and not index.holds_as_indexed(by_id[note_id].path)]
        if not changed:
            return by_id, index, decision
        index.close()  # the next look's walk reads the changed files again (their stamps)
    raise MemctlError(f"{', '.join(changed)} changed on disk while this command ran; nothing "
                      "was written: run it again")


def indexed_note(meta: dict[str, Any], body: str, has_id: bool | None = None) -> Note:
    """A note as the index holds it (for a file that no longer parses: its last good
    version). `has_id`: whether the file has an `id:` line (when the caller read the file);
    else guessed from the id (one its file name or path gives is taken as none written)."""
    fields = {key: meta.get(key) for key in _NOTE_FIELDS}
    fields["tags"] = list(meta.get("tags") or [])
    fields["pinned"] = bool(meta.get("pinned"))
    fields["title"] = meta.get("title") or ""
    if has_id is None:
        has_id = meta["id"] != implied_id(meta["path"])
    return Note(**fields, body=body, has_id=has_id)


_NOTE_FIELDS = ("id", "type", "project", "importance", "created", "updated", "status", "path",
                "subject", "predicate", "expires", "superseded_by", "corrects", "source",
                "source_episode")


def _superseded_version(store: Store, old: Note, new_id_value: str, moment: Any
                        ) -> tuple[str, str]:
    """OLD's path and its text marked as superseded by NEW (written by the caller, once every
    text of the command is made)."""
    text, _info = store.read_text(old.path)
    # A note in the archive stays archived there (its folder says so to every reader): its
    # file saying `superseded` while `show` and `list` said `archived` misled a person
    # reading it (tests/test_lifecycle.py). `superseded_by` is what it gains.
    fields = {"superseded_by": new_id_value} if old.status == "archived" else \
        {"status": "superseded", "superseded_by": new_id_value}
    return old.path, stamp(text, fields, moment, old)


@dataclass
class UpdateResult:
    """A note changed in place: which of its fields changed (`text` for the body), and what
    the write-time checks found among the other notes."""

    note: Note
    changed: list[str]
    superseded: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.note.id, "path": self.note.path, "changed": self.changed,
                "superseded": self.superseded, "similar": self.similar}


def update_note(store: Store, ref: str, *, text: str | None = None, importance: int | None = None,
                tags: list[str] | None = None, subject: str | None = None,
                predicate: str | None = None, expires: str | None = None,
                pinned: bool | None = None, allow_secret: bool = False) -> UpdateResult:
    """Change one note in place: its text and/or fields. None leaves a field as it is; an
    empty subject, predicate or expires removes it; `tags` replaces the tags. The values go
    through the same validators and secret guard as `add`, and a changed text or subject +
    predicate meets the same checks: another active note of the same scope with the same
    subject + predicate is superseded by this one, near-duplicates and possible
    contradictions are reported as `similar` (never merged: this note keeps its id).
    Nothing changed, nothing written."""
    moment = now()
    new_text = arguments.note_text(text) if text is not None else None
    wanted: dict[str, Any] = {}
    if importance is not None:
        wanted["importance"] = arguments.importance(importance)
    if tags is not None:
        wanted["tags"] = arguments.tags(tags)
    if subject is not None:
        wanted["subject"] = arguments.short_line(subject, "subject")
    if predicate is not None:
        wanted["predicate"] = arguments.short_line(predicate, "predicate")
    if expires is not None:
        wanted["expires"] = arguments.expiry(expires, moment) if expires.strip() else None
    if pinned is not None:
        wanted["pinned"] = True if pinned else None  # unpinned: the field goes
    if new_text is None and not wanted:
        raise UsageError("nothing to change: give the new text or a field to set")
    guard({"text": new_text, "tags": wanted.get("tags"), "subject": wanted.get("subject"),
           "predicate": wanted.get("predicate")}, allow_secret)

    with store.lock("update"):
        note = store.find_note(ref)
        current = {"importance": note.importance, "tags": list(note.tags),
                   "subject": note.subject, "predicate": note.predicate,
                   "expires": note.expires, "pinned": True if note.pinned else None}
        fields = {key: value for key, value in wanted.items() if current[key] != value}
        text_changed = new_text is not None and new_text != note.body.strip("\n")
        if not fields and not text_changed:
            return UpdateResult(note, [])
        file_text, _info = store.read_text(note.path)
        if text_changed:
            try:
                file_text = replace_body(file_text, new_text or "")
            except ValueError as exc:
                raise MemctlError(f"{note.path}: cannot change a file whose front matter does "
                                  f"not parse ({exc})") from None
        stamped = stamp(file_text, fields, moment, note)

        superseded: list[str] = []
        similar: list[str] = []
        changed_paths = [note.path]
        retirements: list[tuple[str, str]] = []
        if note.status == "active" and (text_changed or "subject" in fields
                                        or "predicate" in fields):
            checked = new_text if new_text is not None else note.body
            subject_now = fields["subject"] if "subject" in fields else note.subject
            predicate_now = fields["predicate"] if "predicate" in fields else note.predicate
            by_id, index, decision = _checked(
                store, note.project, checked, subject=subject_now, predicate=predicate_now,
                decide_on=lambda candidates: decide(
                    checked, note_type=note.type, project=note.project,
                    existing=[other for other in candidates if other.id != note.id],
                    subject=subject_now, predicate=predicate_now, force=True, moment=moment,
                    duplicate_threshold=store.settings.get("duplicates.merge_threshold"),
                    similar_threshold=store.settings.get("duplicates.similar_threshold")))
            index.close()
            for old_id in decision.supersedes:
                old = by_id.get(old_id)
                if old is not None and old.status == "active":
                    retirements.append(_superseded_version(store, old, note.id, moment))
                    superseded.append(old.id)
            similar = list(decision.similar)
        store.write_text(note.path, stamped)  # every text made first: a failure wrote nothing
        for path, retired_text in retirements:
            store.write_text(path, retired_text)
            changed_paths.append(path)
        updated = store.read_note(note.path)
        message = f"update {note.id}: {masked_title(updated.title)}"
        if superseded:
            message += f" (supersedes {', '.join(superseded)})"
        store.commit(message, changed_paths)
    return UpdateResult(updated, (["text"] if text_changed else []) + list(fields),
                        superseded, similar)


def supersede_note(store: Store, old_ref: str, new_ref: str) -> tuple[Note, Note]:
    """Mark OLD as replaced by NEW, by hand."""
    with store.lock("supersede"):
        # Both found under the lock: a note another command moved, forgot or superseded
        # while this waited for it is seen as it is now.
        old = store.find_note(old_ref)
        new = store.find_note(new_ref)
        if old.id == new.id:
            raise MemctlError("a note cannot supersede itself")
        if new.status != "active":
            # A superseded NEW would hide both notes (superseding B by A after A by B leaves
            # no active one: a cycle); an archived one is out of search. CLI and MCP come here.
            raise MemctlError(f"note {new.id} is {new.status} ({new.path}); only an active note "
                              f"can supersede another: restore it first (`memctl restore {new.id}`)")
        if new.project not in (old.project, GLOBAL):
            # NEW would not serve every project OLD serves: a global rule superseded by one
            # project's note was gone from every other project, and nothing said so
            # (docs/lifecycle.md, "Supersession by hand and corrections").
            raise MemctlError(
                f"note {new.id} belongs to project {new.project!r} and note {old.id} to "
                f"{old.project!r}: superseded by it, {old.id} would be gone from "
                + ("every project" if old.project == GLOBAL else f"project {old.project!r}")
                + " while the new note serves only its own; supersede it by a note of "
                + ("`global`" if old.project == GLOBAL else f"{old.project!r} or `global`")
                + f", or delete it with {cmd('forget')}")
        if old.status in ("superseded", "archived") and old.superseded_by == new.id:
            # Already so: the tool is declared idempotent, so the same call again changes
            # nothing, not even `updated`, and makes no commit (tests/test_lifecycle.py).
            return old, new
        moment = now()
        path, retired_text = _superseded_version(store, old, new.id, moment)
        store.write_text(path, retired_text)
        store.commit(f"supersede {old.id} by {new.id}: {masked_title(old.title)}", [path])
    return store.read_note(old.path), new


@dataclass
class EditResult:
    """What `memctl edit` did: `changed` when the note was saved; `reopened` when the edit
    went on from the draft a failed save had kept; `broken` when the file is left as it was
    and still does not parse."""

    note: Note
    changed: bool
    reopened: bool = False
    broken: NoteFormatError | None = None
    kept_text: str | None = None  # where the uncommitted hand edit the save replaced was copied

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.note.id, "path": self.note.path, "changed": self.changed,
                "reopened": self.reopened,
                "problem": None if self.broken is None else str(self.broken),
                "kept_text": self.kept_text}


def edit_note(store: Store, ref: str, editor: str | None = None, fresh: bool = False) -> EditResult:
    """Open the note in $EDITOR on a copy, validate, then stamp `updated` and save.

    The note file is replaced only with a valid result; an invalid one is kept in
    `.memctl/edit/` and named in the error, and the next edit of the note opens it again with
    the reason on top (`fresh` drops it): no typing is lost (memctl.memory.drafts). A file
    that does not parse is opened as it is, for fixing; its last good version (the index's)
    gives the id it must keep."""
    note, original, broken = _editable(store, ref)
    command = editor_command(editor)
    draft_dir = store.state_dir / "edit"
    draft_dir.mkdir(exist_ok=True)
    draft = Draft(draft_dir, note.id)
    with draft.editing():
        return _edit_in_draft(store, note, original, broken, command, draft, fresh)


def _edit_in_draft(store: Store, note: Note, original: bytes, broken: NoteFormatError | None,
                   command: list[str], draft: Draft, fresh: bool) -> EditResult:
    where = store.relpath(draft.path)
    reopened = draft.exists() and not fresh
    # A kept draft began from another version of the note than the one it now replaces: a
    # hand edit of the note since, never committed, is in no version git keeps.
    unseen = reopened and draft.base != fingerprint(original)
    if reopened:
        kept, _removed, _leftover = draft.read()
        base, base_note = draft.base, draft.base_note
        # Taken here rather than on save, so the person sees in the editor what is saved.
        merged, fields = _lifecycle_merge(kept, base_note, original)
        if merged is not None:
            kept = merged
            if base_note is not None:
                base_note = original  # the draft's lifecycle fields now answer to this note
        problem = _validate_edited(kept, note, original)
        stale = base is not None and base != fingerprint(original)
        draft.reopen(kept, _draft_header(note.id, problem, stale, fields, merged is None),
                     base, base_note)
    else:
        draft.start(original)
    kept_note = (f"the note is unchanged and your edit is kept: {cmd(f'edit {note.id}')} opens "
                 f"it again ({arg('fresh')}: start again from the note)")
    # An editor that cannot start leaves the draft, as one that fails does.
    returncode = run_editor(command, draft.path, "the note is unchanged")
    if returncode != 0:
        raise MemctlError(f"editor exited with {returncode}; {kept_note} ({where})")
    try:
        edited, removed, leftover = draft.read()
    except FileNotFoundError:
        draft.discard()
        raise MemctlError(f"the editor removed the copy it was given ({where}); the note is "
                          "unchanged") from None
    if leftover is not None:
        raise MemctlError(f"{where}:{leftover}: a line memctl put at the top of the draft "
                          f"(`# memctl: …`) was changed or moved, so it is not removed by "
                          f"itself; delete it; {kept_note}")
    if edited == original:
        draft.discard()
        return EditResult(note, False, reopened, broken)
    problem = _validate_edited(edited, note, original, first_line=removed + 1)
    if problem:
        line, message = problem
        raise MemctlError(f"{where}{f':{line}' if line else ''}: {message}; {kept_note}")
    # What the reopen could not take (the kept draft did not parse then; its header said
    # so): the lifecycle fields left as they were come from the note as it is now.
    merged, fields = _lifecycle_merge(edited, draft.base_note, original)
    if merged is None:
        raise MemctlError(f"{where}: the note's {_listed(fields)} changed since this edit "
                          "began, and memctl cannot change them in this draft's front matter "
                          f"by itself; write them in the draft as the note has them now "
                          f"({cmd(f'show {note.id}')}), then save; {kept_note}")
    if merged != edited:
        if merged == original:
            draft.discard()
            return EditResult(note, False, reopened, broken)
        problem = _validate_edited(merged, note, original)
        if problem:
            raise MemctlError(f"{where}: {problem[1]}; {kept_note}")
        edited = merged
    text = edited.decode("utf-8")  # validated
    with store.lock("edit"):
        changed = _changed_meanwhile(store, note, original)
        if changed is not None:
            # Archived, forgotten, superseded or edited while the editor was open: saving
            # would undo that, or leave the note in two files (tests/test_notes_cli.py).
            if changed.startswith("it was forgotten"):
                # No `memctl edit` can reopen it now: set aside, as `forget` does.
                where = _set_aside(store, draft, locked=True) or where
                raise MemctlError(f"note {note.id} changed while you edited it ({changed}); "
                                  f"nothing was saved, and your edit is kept in {where} (there "
                                  "is no note left to save it to)")
            raise MemctlError(f"note {note.id} changed while you edited it ({changed}); "
                              f"nothing was saved, and your edit is kept: "
                              f"{cmd(f'edit {note.id}')} opens your edit again, on top of the "
                              f"note as it is now ({where})")
        moment = now()
        try:
            stamped = stamp(text, {}, moment, note)
        except MemctlError as exc:
            # Front matter of a shape line edits do not handle (a flow mapping `{…}`): the
            # draft stays, and can be saved once written as one `key: value` line a field.
            raise MemctlError(f"{exc}, or write the draft's front matter as one `key: value` "
                              f"line per field; {kept_note} ({where})") from None
        # Saving a kept draft puts it in the place of the note as it is now; a hand edit of
        # the note made since the draft began and never committed would be lost: it is
        # copied first, as `forget` copies one (tests/test_edit_drafts.py).
        kept_text = (_keep_replaced(store, note.id, original)
                     if unseen and not gitops.committed_as(store.root, note.path, original)
                     else None)
        store.write_text(note.path, stamped)
        store.commit(f"edit {note.id}: {masked_title(title_of(parse_text(stamped).meta, parse_text(stamped).body))}", [note.path])
    draft.discard()
    return EditResult(store.read_note(note.path), True, reopened,
                      kept_text=None if kept_text is None else store.relpath(kept_text))


def _keep_replaced(store: Store, note_id: str, data: bytes) -> Path:
    """Where a note's uncommitted text, replaced by the save of a draft that began before it,
    was copied (`.memctl/edit/replaced/ID.md`, this machine's only, as a kept edit)."""
    return _keep_aside(store.state_dir / "edit" / "replaced", note_id, data)


def _keep_aside(folder: Path, stem: str, data: bytes) -> Path:
    """`data` written to `folder/STEM.md`, or `STEM-2.md`, … when that is taken: a text no
    version git keeps holds, copied before memctl writes over it or deletes it."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{stem}.md"
    number = 2
    while target.exists():
        target = folder / f"{stem}-{number}.md"
        number += 1
    atomic_write_bytes(target, data)
    return target


# The fields memctl's lifecycle commands write: `supersede` (and an `add` or `update` with the
# same subject + predicate) status and superseded_by; the archive sweep status and
# archived_from, or importance and demoted when it demotes; `restore` status, archived_from,
# superseded_by and a past expires. A kept draft still holds the values the edit began with.
_LIFECYCLE_FIELDS = ("status", "superseded_by", "archived_from", "importance", "demoted",
                     "expires")


def _lifecycle_merge(draft: bytes, base: bytes | None, current: bytes
                     ) -> tuple[bytes | None, list[str]]:
    """A three-way merge of the lifecycle fields only: each one the note changed since
    `base` (the note the draft's fields came from) and the draft still has as in `base` is
    taken from `current`, the note as it is now; a value the person changed stays theirs.
    Only those fields' lines change (`set_fields`); the rest of the draft keeps every byte.

    Returns (the draft, the fields taken), or (None, the fields to take) when the draft's
    front matter cannot be read or changed. No `base` (a draft kept by an older memctl),
    or a base or note that does not parse: nothing is known to take, the draft as it is."""
    if base is None or base == current:
        return draft, []
    before, after = _front_matter(base), _front_matter(current)
    if before is None or after is None:
        return draft, []
    changed = [name for name in _LIFECYCLE_FIELDS if before[1].get(name) != after[1].get(name)]
    if not changed:
        return draft, []
    mine = _front_matter(draft)
    if mine is None:
        return None, changed
    text, meta = mine
    updates = {name: after[1].get(name) for name in changed
               if meta.get(name) == before[1].get(name)}
    if not updates:
        return draft, []
    try:
        merged = set_fields(text, updates)
    except ValueError:  # a shape of front matter line edits do not handle
        return None, list(updates)
    return merged.encode("utf-8"), list(updates)


def _front_matter(data: bytes) -> tuple[str, dict[str, Any]] | None:
    """A file's text and front matter fields; None when it is no text or does not parse."""
    text = decode_file(data)
    if not isinstance(text, str):
        return None
    parsed = parse_file(text)
    return None if parsed.problem is not None else (text, parsed.meta)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _changed_meanwhile(store: Store, note: Note, original: bytes) -> str | None:
    """How the note is no longer the file the edit began from (None when it still is). The
    caller holds the store lock, so no command changes it between this look and the save."""
    try:
        entry = store.find_entry(note.id)
    except UnknownIdError:
        return "it was forgotten"
    if entry["path"] != note.path:
        return f"it was moved to {entry['path']}"
    try:
        current = store.read_text(note.path)[0].encode("utf-8")
    except NoteFormatError as broken:
        current = broken.data
    except MemctlError:
        return "its file is gone"
    return None if current == original else "its file was changed meanwhile"


def _editable(store: Store, ref: str) -> tuple[Note, bytes, NoteFormatError | None]:
    """The note to edit and its file's bytes. A file that does not parse is edited as it is;
    the note is then its last good version, from the index (docs/format.md)."""
    entry = store.find_entry(ref)
    try:
        note = store.read_note(entry["path"])
    except NoteFormatError as broken:
        # Whether the file writes its id: a note named `…-ID.md` whose `id:` line was changed
        # in the edit is refused ("ids are permanent"), as for a file that parses.
        written = salvage_id(broken.data.decode("utf-8", "replace"))
        return indexed_note(entry, "", has_id=written is not None), broken.data, broken
    text, _info = store.read_text(note.path)
    return note, text.encode("utf-8"), None


def _draft_header(note_id: str, problem: tuple[int | None, str] | None, stale: bool,
                  fields: list[str], pending: bool) -> list[str]:
    """The lines on top of a reopened draft; a problem's line is counted in the draft as it
    will be, below these lines. `fields`: the lifecycle fields taken from the note as it is
    now (`pending`: to be taken on save, the draft's front matter not being readable yet)."""
    lines = [f"{MARK} your edit of note {note_id}, kept because it could not be saved."]
    if problem:
        lines.append("")  # the problem, once the size of the header is known
    if fields:
        names, verb = _listed(fields), "is" if len(fields) == 1 else "are"
        taken = (f"on save, its {names} {verb} taken from the note as it is now unless you "
                 "changed them" if pending
                 else f"its {names} {verb} taken from the note as it is now")
        lines.append(f"{MARK} the note has changed since this edit began; {taken}; saving "
                     "puts this edit in its place.")
    elif stale:
        lines.append(f"{MARK} the note has changed since this edit began; saving puts this "
                     "edit in its place.")
    lines.append(f"{MARK} fix it and save: the lines starting with `{MARK}` are removed.")
    lines.append(f"{MARK} to start again from the note: memctl edit {note_id} --fresh")
    if problem:
        line, message = problem
        message = " ".join(message.split())  # one line, whatever the message holds
        lines[1] = f"{MARK} line {line + len(lines)}: {message}" if line else f"{MARK} {message}"
    return lines


def _validate_edited(data: bytes, original: Note, original_data: bytes,
                     first_line: int = 1) -> tuple[int | None, str] | None:
    """Why the edited file cannot be saved, with the line (counted from `first_line`, the
    draft's line of the file's first line) when there is one; None when it can."""
    shift = first_line - 1
    text = decode_file(data)
    if not isinstance(text, str):
        return text[0] + shift, text[1]
    parsed = parse_file(text)  # an emptied draft is "the file is empty", not a new id
    if parsed.problem is not None:
        return parsed.problem.line + shift, parsed.problem.message
    if not parsed.has_front_matter and _opens_front_matter(original, original_data):
        # Read on as a file with no front matter, the draft's fields were its body and its
        # id the one its file name gives: "the id changed", of an id nobody touched.
        return 1 + shift, ("front matter is gone: the file no longer opens with '---'; put "
                           "the '---' line back on top, above the note's fields")
    edited = note_from_parsed(parsed, text=text, relpath=original.path, project=original.project)
    if original.has_id and edited.id != original.id:
        return None, f"the id changed from {original.id} to {edited.id}; ids are permanent"
    if edited.warnings:
        # The reader's warnings say how it would read the file anyway ("…, read as 'fact'");
        # an edit is refused on them, so the message says what to change.
        return None, "; ".join(edited.warnings) + "; fix it in the draft (a valid value) and save again"
    added = added_secrets(original_data.decode("utf-8", "replace"), text)
    if added:
        shown = ", ".join(f"{f.kind} {f.masked} (line {f.line + shift})" for f in added[:3])
        return added[0].line + shift, (f"the edit adds what looks like a secret: {shown}; the "
                                       "store is synced through git, so it was not saved")
    if not parsed.body.strip():
        return None, "the note body is empty (use `memctl forget` to delete a note)"
    return None


def _opens_front_matter(original: Note, original_data: bytes) -> bool:
    """Whether the note's file has front matter, so that an edit must keep it: a note written
    by hand without any stays so (docs/format.md, "No front matter at all"). A file that does
    not parse now is edited from its last good version, which has an id when it had fields."""
    if original.has_id:
        return True
    text = decode_file(original_data)
    return isinstance(text, str) and parse_text(text).has_front_matter


def _write_then_remove(store: Store, tombstone_path: str, tombstone: str, note_path: str) -> None:
    """The tombstone first, then the note: killed between the two, the note is gone on no
    machine without its tombstone. A note that cannot be removed (its folder not writable,
    the file immutable) takes its tombstone back, as it was: one line, nothing changed, never
    a live note beside its tombstone (docs/reliability.md)."""
    target = store.resolve(tombstone_path)
    # Checked before the read too: a FIFO there (hand-made) would block the read for ever,
    # the store locked meanwhile (docs/reliability.md, special files).
    refuse_special_target(target)
    try:
        before: bytes | None = target.read_bytes()
    except FileNotFoundError:
        before = None
    store.write_text(tombstone_path, tombstone)
    try:
        remove_file(store.resolve(note_path), "nothing was changed")
    except WriteError:
        if before is None:
            remove_file(target)
        else:
            atomic_write_bytes(target, before)
        raise


def _set_aside(store: Store, draft: Draft, locked: bool) -> str | None:
    """Where the kept edit of a forgotten note was moved (memctl.memory.drafts), or None when
    none was. A move that fails leaves the draft where it is: still nothing is lost, and the
    note is forgotten all the same."""
    try:
        moved = draft.set_aside(locked)
    except OSError:
        return None
    return None if moved is None else store.relpath(moved)


@dataclass
class Forgotten:
    """What `forget` did: the note, where its kept edit went (None when there was none, or an
    editor still has it open), and the notes it had superseded: `repointed` to its own
    successor, or `left_superseded` when it had none (docs/lifecycle.md, "Forgetting a
    note")."""

    note: Note
    kept_edit: str | None = None
    successor: str | None = None
    repointed: list[str] = field(default_factory=list)
    left_superseded: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # of those, files that do not parse
    kept_text: str | None = None  # where its uncommitted hand edit was copied

    def messages(self) -> list[str]:
        """What `forget` tells of what it did beside the forget itself, one line each, marked
        for the front end (memctl.core.errors.cmd): the CLI and MCP say the same."""
        said = []
        if self.kept_text:
            said.append(f"its changes since the last commit were copied to {self.kept_text} "
                        "(the store's history has the version before them)")
        if self.repointed:
            said.append(f"{', '.join(self.repointed)} now superseded by {self.successor}, the "
                        f"note that replaced {self.note.id}")
        if self.left_superseded:
            said.append(_left_superseded_message(self.note.id, self.left_superseded,
                                                 self.unreadable))
        return said


def forget_note(store: Store, ref: str) -> Forgotten:
    """Delete a note and leave a tombstone, so no sync or import brings it back. Its kept
    edit, if any, is set aside in `.memctl/edit/forgotten/`. The notes it had superseded
    now name its own successor, when it was superseded too, in the same commit; without
    one they stay superseded, and the result names them."""
    with store.lock("forget"):
        # Found under the lock: an `archive` or `restore` that moved the note while this
        # waited for it must not leave the note alive beside its tombstone.
        note = store.find_note(ref)
        moment = now()
        hidden, unreadable = _superseded_by(store, note.id)
        successor = _successor(store, note, hidden)
        repointed: list[tuple[str, str]] = []
        originals: dict[str, str] = {}
        if successor is not None:
            # Every text made before any is written: one that cannot be changed stops the
            # command with nothing written.
            for old in hidden:
                originals[old.path] = store.read_text(old.path)[0]
                repointed.append((old.path, stamp(originals[old.path],
                                                  {"superseded_by": successor.id}, moment, old)))
        tombstone_path = f"{TOMBSTONE_DIR}/{note.id}.md"
        tombstone = render_note(
            {"id": note.id, "deleted": format_time(monotonic_stamp(moment, note.updated)),
             "project": note.project, "path": note.path, "updated": note.updated},
            f"{mask_name(note.title)}\n",
        )
        # A hand edit of the note saved but never committed is in no version git keeps: it
        # is set aside, as a kept edit is, never lost with the file (docs/lifecycle.md).
        kept_text = _keep_uncommitted(store, note)
        # The older notes first: killed before the tombstone, they name a successor of a
        # note still there, a state as sound as the one before.
        written: list[str] = []
        try:
            for path, text in repointed:
                store.write_text(path, text)
                written.append(path)
            _write_then_remove(store, tombstone_path, tombstone, note.path)
        except BaseException:
            # A note that cannot be removed (or an older one that cannot be written) leaves
            # the store as it was: the older notes take back their text, as the tombstone is
            # taken back, so "nothing was changed" is true (docs/reliability.md).
            for path in written:
                try:
                    store.write_text(path, originals[path])
                except (OSError, MemctlError):
                    pass
            if kept_text is not None:
                kept_text.unlink(missing_ok=True)  # the note is still there
            raise
        store.commit(f"forget {note.id}: {masked_title(note.title)}",
                     [tombstone_path, note.path, *(path for path, _text in repointed)])
        # Left in `.memctl/edit/` it was there for ever: `memctl edit ID` finds no note to
        # reopen it for. Set aside, not deleted: it may hold typing never saved.
        kept_edit = _set_aside(store, Draft(store.state_dir / "edit", note.id), locked=False)
    ids = [old.id for old in hidden]
    kept = None if kept_text is None else store.relpath(kept_text)
    if successor is not None:
        return Forgotten(note, kept_edit, successor.id, repointed=ids,
                         left_superseded=unreadable, unreadable=unreadable, kept_text=kept)
    return Forgotten(note, kept_edit, left_superseded=ids + unreadable, unreadable=unreadable,
                     kept_text=kept)


def _keep_uncommitted(store: Store, note: Note) -> Path | None:
    """Where the note's file, changed since its last commit (a hand edit), was copied before
    the forget removes it (`.memctl/edit/forgotten/ID.uncommitted.md`, this machine's only,
    as a kept edit); None when its file is as committed."""
    try:
        data = store.resolve(note.path).read_bytes()
    except OSError:
        return None
    if gitops.committed_as(store.root, note.path, data):
        return None
    return _keep_aside(store.state_dir / "edit" / FORGOTTEN, f"{note.id}.uncommitted", data)


def _left_superseded_message(note_id: str, ids: list[str],
                            unreadable: Sequence[str] = ()) -> str:
    """What `forget` says of the notes the forgotten one had superseded and left superseded
    (`ids`): they stay out of search, `get` and recall, and how one comes back; those whose
    file does not parse (`unreadable`, among `ids`) could not be changed at all, and are
    named with what to do first (marked for the front end: memctl.core.errors.cmd)."""
    said = []
    kept = [note for note in ids if note not in unreadable]
    if kept:
        them = ", ".join(kept)
        said.append(f"{them} {'was' if len(kept) == 1 else 'were'} superseded by {note_id} and "
                    f"{'stays' if len(kept) == 1 else 'stay'} superseded: {cmd('restore')} "
                    f"makes {'it' if len(kept) == 1 else 'one'} active again")
    if unreadable:
        them = ", ".join(unreadable)
        said.append(f"{them} still {'names' if len(unreadable) == 1 else 'name'} {note_id}: "
                    f"{'its file does' if len(unreadable) == 1 else 'their files do'} not "
                    f"parse ({cmd('health')} names the line); fix "
                    f"{'it' if len(unreadable) == 1 else 'them'}, then {cmd('restore')} or "
                    f"{cmd('forget')}")
    return "; ".join(said)


def _superseded_by(store: Store, note_id: str) -> tuple[list[Note], list[str]]:
    """The superseded notes whose `superseded_by` names `note_id`, as their files say; and
    the ids of those whose file no longer parses (the index's last good version names
    `note_id`): they cannot be changed, so they are left as they are and named, and the
    forget goes on (`add` treats such a note so: `not_superseded`)."""
    index = ensure_fresh(store)
    try:
        rows = list(index.conn.execute(
            "SELECT path, id FROM docs WHERE kind = 'note' AND status = 'superseded'"
            " AND superseded_by = ? COLLATE NOCASE ORDER BY path", (note_id,)))
    finally:
        index.close()
    found: list[Note] = []
    unreadable: list[str] = []
    for path, old_id in rows:
        try:
            old = store.read_note(path)
        except NoteFormatError:
            unreadable.append(old_id)
            continue
        if old.status == "superseded" and (old.superseded_by or "").lower() == note_id.lower():
            found.append(old)
    return found, unreadable


def _successor(store: Store, note: Note, hidden: list[Note]) -> Note | None:
    """The note that replaced `note`, when it was superseded by one that exists and is none
    of `hidden` (a loop made by hand is left for `health` to report)."""
    if note.status != "superseded" or not note.superseded_by:
        return None
    try:
        successor = store.find_note(note.superseded_by)
    except MemctlError:  # no such note, a prefix of several, a file that does not parse
        return None
    others = {note.id.lower(), *(old.id.lower() for old in hidden)}
    if successor.id.lower() != note.superseded_by.lower() or successor.id.lower() in others:
        return None
    return successor


