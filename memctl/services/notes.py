"""Notes: remember, show, get (the exact fact), list, edit, forget, supersede."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memctl.core import arguments
from memctl.core.errors import ArgumentError, MemctlError, NoteFormatError, cmd
from memctl.core.ids import id_argument
from memctl.core.note import Note
from memctl.core.vocab import GLOBAL, LIST_SORTS, LIST_STATUSES
from memctl.disk.counters import get_counters
from memctl.disk.layout import EPISODE, classify
from memctl.index.db import Index, ensure_fresh
from memctl.memory.episodes import Episode, find_episode
from memctl.memory.listing import list_notes as list_index
from memctl.memory.notes import (
    AddResult,
    EditResult,
    UpdateResult,
    add_note,
    edit_note,
    forget_note,
    supersede_note,
    update_note,
)
from memctl.store import Store

__all__ = ["AddResult", "EditResult", "Shown", "UpdateResult", "edit", "forget", "get", "list_notes",
           "remember", "show", "supersede", "update"]


def remember(store: Store, text: str, *, note_type: str = "fact", project: str,
             importance: int | None = None, tags: list[str] | str | None = None,
             subject: str | None = None, predicate: str | None = None,
             expires: str | None = None, corrects: str | None = None,
             source_episode: str | None = None, force: bool = False,
             allow_secret: bool = False, source: str = "cli") -> AddResult:
    """Write one note after the write-time checks. `corrects` and `source_episode` are ids
    (or unambiguous prefixes) that must exist: they are resolved to full ids here."""
    corrected = store.find_note(id_argument(corrects, "corrects")).id if corrects else None
    episode_id = (find_episode(store, id_argument(source_episode, "source_episode")).id
                  if source_episode else None)
    return add_note(
        store, text, note_type=note_type, project=project, importance=importance,
        tags=arguments.tags(tags), subject=subject, predicate=predicate, expires=expires,
        source=source, force=force, allow_secret=allow_secret, corrects=corrected,
        source_episode=episode_id)


@dataclass
class Shown:
    """A note with its access counters, or an episode, or a note file that does not parse
    (`broken`, with the fields of its last good version, `last_good`): shown as it is, with
    the problem."""

    note: Note | None = None
    episode: Episode | None = None
    access_count: int = 0
    last_accessed: str | None = None
    broken: NoteFormatError | None = None
    last_good: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.episode is not None:
            return self.episode.to_dict()
        if self.broken is not None:
            return {**(self.last_good or {}), "path": self.broken.path, "line": self.broken.line,
                    "problem": self.broken.problem,
                    "raw": self.broken.data.decode("utf-8", "replace")}
        assert self.note is not None
        data = self.note.to_dict()
        data.update({"access_count": self.access_count, "last_accessed": self.last_accessed})
        return data


def show(store: Store, ref: str) -> Shown:
    """The note (or else the episode) with this id or unambiguous id prefix. A note file
    that does not parse is returned as it is, with its problem (docs/format.md)."""
    ref = id_argument(ref)
    try:
        note = store.find_note(ref)
    except NoteFormatError as broken:
        return Shown(broken=broken, last_good=store.find_entry(ref))
    except MemctlError as not_a_note:
        try:
            return Shown(episode=find_episode(store, ref))
        except MemctlError:
            raise not_a_note from None
    count, last = get_counters(store, [note.id]).get(note.id, (0, None))
    return Shown(note=note, access_count=count, last_accessed=last)


def list_notes(store: Store, *, project: str | None, note_type: str | None = None,
               tag: str | None = None, status: str = "active", since: str | None = None,
               sort: str = "updated", limit: int | None = None) -> tuple[list[dict[str, Any]], Index]:
    """Notes of `project` + global (every project when None), newest first, and the fresh
    index they came from (its `parse_errors()` name files that do not parse)."""
    if note_type is not None:
        note_type = arguments.note_type(note_type)
    status = arguments.choice(status, LIST_STATUSES, "status")
    sort = arguments.choice(sort, LIST_SORTS, "sort")
    tag = arguments.short_line(tag, "tag")
    if project is not None:
        arguments.scope_name(project)
    if limit is not None:
        arguments.limit(limit)
    index = ensure_fresh(store)
    rows = list_index(store, project=project, note_type=note_type, tag=tag, status=status,
                      since=since, sort=sort, limit=limit, index=index)
    return rows, index


def get(store: Store, subject: str, predicate: str | None = None, *,
        project: str | None) -> list[Note]:
    """The exact-fact lookup: the active notes about `subject` (and `predicate`), in `project`
    + global (every project when None), newest first. A note with the same subject and
    predicate supersedes the older one, so there is usually one."""
    subject_text = arguments.short_line(subject, "subject")
    if subject_text is None:
        raise ArgumentError("subject", "empty; name what the fact is about")
    predicate_text = arguments.short_line(predicate, "predicate")
    index = ensure_fresh(store)
    rows = index.list_notes(
        projects=None if project is None else sorted({project, GLOBAL}),
        subjects=[subject_text], predicates=[predicate_text] if predicate_text else [])
    if not rows:
        about = subject_text + (f" / {predicate_text}" if predicate_text else "")
        raise MemctlError(f"no active note about {about!r}; {cmd('search')} finds notes by "
                          "their words")
    return [store.read_note(str(row["path"])) for row in rows]


def edit(store: Store, ref: str, *, fresh: bool = False) -> EditResult:
    """Edit a note in $EDITOR (a kept draft of a failed save is reopened unless `fresh`)."""
    ref = id_argument(ref)
    entry = store.find_entry(ref)
    kind = classify(str(entry.get("path", "")))
    if kind is not None and kind[0] == EPISODE:
        # Not opened: `edit` validates and stamps a file as a note, and an episode's
        # fields differ (docs/agents.md, "Episodes").
        raise MemctlError(f"{entry.get('id', ref)} is an episode, not a note: "
                          f"{cmd('episode update')} changes its outcome, summary, steps, links "
                          f"and tags, or edit its file {entry['path']} by hand (memctl reads "
                          "hand edits)")
    return edit_note(store, ref, fresh=fresh)


def update(store: Store, ref: str, *, text: str | None = None, importance: int | None = None,
           tags: list[str] | str | None = None, subject: str | None = None,
           predicate: str | None = None, expires: str | None = None,
           pinned: bool | None = None, allow_secret: bool = False) -> UpdateResult:
    """Change one note's text and/or fields in place, with `remember`'s checks (validators,
    secret guard, supersession by subject + predicate, similar notes reported); None
    leaves a field, an empty subject/predicate/expires removes it."""
    return update_note(store, id_argument(ref), text=text, importance=importance,
                       tags=None if tags is None else arguments.tags(tags), subject=subject,
                       predicate=predicate, expires=expires, pinned=pinned,
                       allow_secret=allow_secret)


def forget(store: Store, ref: str) -> Note:
    return forget_note(store, id_argument(ref))


def supersede(store: Store, old_ref: str, new_ref: str) -> tuple[Note, Note]:
    """Mark the note OLD as replaced by NEW (both ids or unambiguous prefixes)."""
    return supersede_note(store, id_argument(old_ref, "OLD"), id_argument(new_ref, "NEW"))
