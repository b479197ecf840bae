"""Listing notes with filters (the index answers when it exists; else the files are read)."""

from __future__ import annotations

from memctl.clock import now, parse_since, parse_time
from memctl.errors import UsageError
from memctl.note import Note
from memctl.store import GLOBAL, Store

_SORT_KEYS = {
    "updated": lambda n: (parse_time(n.updated) or parse_time("1970-01-01"), n.id),
    "created": lambda n: (parse_time(n.created) or parse_time("1970-01-01"), n.id),
    "importance": lambda n: (n.importance, n.updated),
    "type": lambda n: (n.type, n.updated),
    "project": lambda n: (n.project, n.updated),
}


def list_notes(store: Store, *, project: str | None, note_type: str | None = None,
               tag: str | None = None, status: str = "active", since: str | None = None,
               sort: str = "updated", limit: int | None = None) -> list[Note]:
    """Notes of `project` + global (all projects when project is None), newest first."""
    moment = now()
    since_time = None
    if since:
        try:
            since_time = parse_since(since, moment)
        except ValueError as exc:
            raise UsageError(f"invalid value for --since: {exc}") from None
    scopes = None if project is None else {project, GLOBAL}
    wanted_tag = tag.lower() if tag else None
    selected = []
    for note in _candidate_notes(store, scopes, status):
        if scopes is not None and note.project not in scopes:
            continue
        if status != "any" and note.status != status:
            continue
        if note_type and note.type != note_type:
            continue
        if wanted_tag and wanted_tag not in (t.lower() for t in note.tags):
            continue
        if since_time is not None:
            updated = parse_time(note.updated)
            if updated is None or updated < since_time:
                continue
        selected.append(note)
    key = _SORT_KEYS.get(sort, _SORT_KEYS["updated"])
    selected.sort(key=key, reverse=sort not in ("type", "project"))
    return selected[:limit] if limit else selected


def _candidate_notes(store: Store, scopes: set[str] | None, status: str):
    try:
        from memctl.index import ensure_fresh
    except ImportError:
        yield from store.iter_notes(include_archived=status in ("archived", "any"))
        return
    index = ensure_fresh(store)
    rows = index.list_notes(projects=sorted(scopes) if scopes else None,
                            status=None if status == "any" else status, include_stale=True)
    for row in rows:
        try:
            yield store.read_note(row["path"])
        except Exception:  # a file that vanished or broke since: the index reports it
            continue
