"""Notes: remember, show, get (the exact fact), list, edit, forget, supersede."""

from __future__ import annotations

from memctl.core import arguments
from memctl.core.clock import now
from memctl.core.errors import ArgumentError, MemctlError, NoteFormatError, cmd
from memctl.core.ids import id_argument
from memctl.core.note import Note
from memctl.core.vocab import GLOBAL, LIST_SORTS, LIST_STATUSES
from memctl.disk.layout import EPISODE, classify
from memctl.index.db import Index, ParseError, ensure_fresh, heals_damaged_index
from memctl.memory.listing import list_notes as list_index
from memctl.memory.notes import (
    AddResult,
    EditResult,
    Forgotten,
    UpdateResult,
    add_note,
    check_corrects,
    edit_note,
    forget_note,
    indexed_note,
    supersede_note,
    update_note,
)
from memctl.services.showing import Shown, show
from memctl.store import Store

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AddResult", "EditResult", "Fact", "Forgotten", "Shown", "UpdateResult", "edit", "forget",
           "get", "list_notes", "remember", "show", "supersede", "update"]


def remember(store: Store, text: str, *, note_type: str = "fact", project: str,
             importance: int | None = None, tags: list[str] | str | None = None,
             subject: str | None = None, predicate: str | None = None,
             expires: str | None = None, corrects: str | None = None,
             source_episode: str | None = None, force: bool = False,
             allow_secret: bool = False, source: str = "cli") -> AddResult:
    """Write one note after the write-time checks. `corrects` and `source_episode` are ids
    (or unambiguous prefixes) that must exist: they are resolved to full ids here."""
    note_type = arguments.note_type(note_type)  # (`Correction` from a model too)
    check_corrects(corrects, note_type)  # bad usage before the lookup of what it corrects
    corrected = store.find_note(id_argument(corrects, "corrects")).id if corrects else None
    episode_id = None
    if source_episode:
        # Lazy: the episode rules (their sections, ~8 ms of start-up) only for a note that
        # names its episode, not for every `memctl add` (tests/test_layers.py).
        from memctl.memory.episodes import find_episode

        episode_id = find_episode(store, id_argument(source_episode, "source_episode")).id
    return add_note(
        store, text, note_type=note_type, project=project, importance=importance,
        tags=arguments.tags(tags), subject=subject, predicate=predicate, expires=expires,
        source=source, force=force, allow_secret=allow_secret, corrects=corrected,
        source_episode=episode_id)


@heals_damaged_index
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


class Fact:
    """A note `get` found, with the live corrections that name it (`corrects`): a corrected
    note stays active, so the exact fact must say it was corrected, as recall does
    (docs/lifecycle.md)."""

    def __init__(self, note: Note, corrected_by: list[str],
                 problem: ParseError | None = None) -> None:
        self.note = note
        self.corrected_by = corrected_by
        self.problem = problem  # its file does not parse: `note` is its last good version

    def to_dict(self) -> dict[str, Any]:
        data = {**self.note.to_dict(), "corrected_by": list(self.corrected_by)}
        if self.problem is not None:
            data["problem"] = (f"{self.problem}; this is its last good version, as search "
                               "and recall use it")
        return data


@heals_damaged_index
def get(store: Store, subject: str, predicate: str | None = None, *,
        project: str | None) -> list[Fact]:
    """The exact-fact lookup: the active notes about `subject` (and `predicate`), in `project`
    + global (every project when None), newest first, each with the corrections of it. A
    note with the same subject and predicate supersedes the older one, so there is usually
    one."""
    # The CLI's positional arguments, by their metavars (the MCP tool's `subject`, `predicate`).
    subject_text = arguments.short_line(subject, "SUBJECT")
    if subject_text is None:
        raise ArgumentError("SUBJECT", "empty; name what the fact is about")
    predicate_text = arguments.short_line(predicate, "PREDICATE")
    index = ensure_fresh(store)
    rows = index.list_notes(
        projects=None if project is None else sorted({project, GLOBAL}),
        subjects=[subject_text], predicates=[predicate_text] if predicate_text else [])
    if not rows:
        about = subject_text + (f" / {predicate_text}" if predicate_text else "")
        raise MemctlError(f"no active note about {about!r}; {cmd('search')} finds notes by "
                          "their words")
    corrections = index.corrections_of([str(row["id"]) for row in rows], now().timestamp())
    facts = []
    for row in rows:
        named = corrections.get(str(row["id"]), [])
        try:
            facts.append(Fact(store.read_note(str(row["path"])), named))
        except NoteFormatError:
            # A file that stopped parsing: its last good version, as search, list and recall
            # serve it, said so; the other notes found are not lost with it.
            kept = _last_good_note(index, row)
            if kept is not None:
                facts.append(Fact(kept[1], named, kept[0]))
    return facts


def _last_good_note(index: Index, row: dict[str, Any]) -> tuple[ParseError, Note] | None:
    """The note the index keeps for a file that does not parse now, with the file's problem."""
    kept = index.last_good(str(row["path"]))
    if kept is None:
        return None
    problem, body = kept
    return problem, indexed_note(row, body)


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


def forget(store: Store, ref: str) -> Forgotten:
    """Forget a note: the note, where its kept `memctl edit` draft was set aside, and what
    became of the notes it had superseded."""
    return forget_note(store, id_argument(ref))


def supersede(store: Store, old_ref: str, new_ref: str) -> tuple[Note, Note]:
    """Mark the note OLD as replaced by NEW (both ids or unambiguous prefixes)."""
    return supersede_note(store, id_argument(old_ref, "OLD"), id_argument(new_ref, "NEW"))
