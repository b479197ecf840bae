"""A folder of Markdown notes (Obsidian-style, with or without front matter), or one file.

Each file becomes one note. Its body is kept byte for byte; fields memctl understands
(`type`, `importance`, `tags`, `created`, `updated`/`modified`/`date`) are taken over, other
simple fields are kept as they were, folders become tags, and the file name becomes the
title when the text has no heading of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memctl.core.clock import parse_time
from memctl.core.note import NOTE_TYPES, parse_tags, title_of
from memctl.core.noteformat import parse_text
from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.common import (
    file_time,
    front_matter_hazard,
    make_note,
    raise_hazards,
    read_text_file,
    stable_id,
    walk_markdown,
)

_OURS = {"id", "type", "project", "importance", "tags", "created", "updated", "status", "source",
         "checksum", "title", "superseded_by", "corrects", "source_episode"}
_TIME_FIELDS = {"created": ("created", "date", "created_at"),
                "updated": ("updated", "modified", "updated_at", "date")}


def import_markdown(source: Path, project: str) -> tuple[list[BundleFile], list[Problem]]:
    files: list[BundleFile] = []
    problems: list[Problem] = []
    if source.is_file():
        candidates = [(source, source.name)]
    else:
        candidates = list(walk_markdown(source))
    for path, rel in candidates:
        text, problem = read_text_file(path, rel)
        if problem is None and text is not None:
            problem = front_matter_hazard(text, rel)
        if problem is not None:
            problems.append(problem)
            continue
        assert text is not None
        made = note_from_markdown(text, rel, project, file_time(path))
        if isinstance(made, Problem):
            problems.append(made)
        else:
            files.append(made)
    return files, raise_hazards(source, problems)


def note_from_markdown(text: str, rel: str, project: str, mtime: str) -> BundleFile | Problem:
    parsed = parse_text(text)
    if parsed.problem is not None:
        return Problem(rel, str(parsed.problem), hazard=False)
    meta: dict[str, Any] = parsed.meta
    body = parsed.body
    if not body.strip():
        return Problem(rel, "empty note", hazard=False)
    times: dict[str, str] = {}
    for field, names in _TIME_FIELDS.items():
        for name in names:
            value = meta.get(name)
            if value is not None and parse_time(str(value)) is not None:
                times[field] = str(value).strip()
                break
    folders = [part for part in rel.split("/")[:-1] if part]
    tags = parse_tags(meta.get("tags")) + [f.lower().replace(" ", "-") for f in folders]
    note_type = str(meta.get("type", "fact")).strip().lower()
    try:
        importance = min(10, max(1, int(str(meta.get("importance", 5)).strip())))
    except ValueError:
        importance = 5
    stem = rel.rsplit("/", 1)[-1][:-3]
    has_heading = title_of({}, body).strip() != "" and body.lstrip().startswith("#")
    extra = {k: v for k, v in meta.items() if k not in _OURS and k not in ("modified", "date")
             and not isinstance(v, dict) and not (isinstance(v, list) and any(isinstance(i, (list, dict)) for i in v))}
    extra["imported_from"] = rel
    created = times.get("created") or mtime
    updated = times.get("updated") or mtime
    start, end = parse_time(created), parse_time(updated)
    if start is not None and end is not None and end < start:
        updated = created
    return make_note(
        project=project, note_id=stable_id("markdown", project, rel), body=body,
        note_type=note_type if note_type in NOTE_TYPES else "fact", tags=tags,
        created=created, updated=updated, importance=importance,
        title=str(meta.get("title")).strip() if meta.get("title") else (None if has_heading else stem),
        extra=extra,
    )
