"""Claude Code's auto-memory folder, `~/.claude/projects/<project>/memory/` (or the project
folder holding it): `MEMORY.md`, the index Claude Code loads into every session, and topic
files (`debugging.md`, `api-conventions.md`), optionally with front matter `name`,
`description` and `type` (`user`, `feedback`, `project`, `reference`).

`MEMORY.md` is mapped like a Cline memory bank (cline.py): its progress, decisions,
constraints and lessons go to memctl's `MEMORY.md`, its focus and next steps to
`SCRATCHPAD.md`; its lines that only point at a topic file are left out (the topic file is
imported itself) and the rest becomes one note. Each topic file becomes one note: `feedback`
(how to work) a `rule`, `user` (who the person is, what they like) a `preference`, the others
a `fact`; the Claude Code type is kept as `original_type`.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from memctl.core.note import title_of
from memctl.core.noteformat import parse_text
from memctl.exchange.bundle import Problem
from memctl.exchange.importers.agents import guess_type
from memctl.exchange.importers.cline import map_sections
from memctl.exchange.importers.common import (
    Imported,
    claude_memory_folder,
    file_time,
    front_matter_hazard,
    has_text,
    make_note,
    raise_hazards,
    read_text_file,
    record_key,
    stable_id,
    text_field,
    walk_markdown,
)

INDEX = "MEMORY.md"
_TYPES = {"feedback": "rule", "user": "preference", "project": "fact", "reference": "fact"}
# `- [Title](topic.md) — one line`: an index line pointing at a topic file.
_POINTER = re.compile(r"^\s*[-*+]\s+\[[^\]\n]*\]\(([^)\s]+)\)\s*(?:[-—–:]+\s*(.*))?$")


def import_claude_memory(source: Path, project: str) -> Imported:
    folder = claude_memory_folder(source) or source
    label = folder.parent.name if folder.name == "memory" else folder.name
    imported = Imported(scope=f"claude-memory:{label}")
    found = list(walk_markdown(folder))
    topics = {rel for _path, rel in found if rel != INDEX}
    hooks: dict[str, str] = {}
    imported.found = len(found)
    for path, rel in found:
        text, problem = read_text_file(path, rel)
        if problem is None and text is not None:
            problem = front_matter_hazard(text, rel)
        if problem is not None:
            imported.problems.append(problem)
            continue
        assert text is not None
        if not text.strip():
            imported.skipped.append(Problem(rel, "empty file", hazard=False))
            continue
        if rel == INDEX:
            _index(imported, text, path, project, topics, hooks)
    for path, rel in found:
        if rel in topics:
            _topic(imported, path, rel, project, hooks.get(rel))
    raise_hazards(source, imported.problems)
    return imported


def _index(imported: Imported, text: str, path: Path, project: str, topics: set[str],
           hooks: dict[str, str]) -> None:
    kept = []
    for line in text.splitlines(keepends=True):
        pointer = _POINTER.match(line.rstrip("\r\n"))
        target = posixpath.normpath(pointer.group(1)) if pointer else None
        if target in topics:
            if pointer and pointer.group(2):
                hooks[target] = pointer.group(2).strip()
            continue  # the topic file itself is imported
        kept.append(line)
    blocks, rest = map_sections("".join(kept), INDEX, imported.scope)
    imported.blocks.extend(blocks)
    if has_text(rest):
        when = file_time(path)
        imported.notes.append(make_note(
            project=project, note_id=stable_id("claude-memory", project, INDEX), body=rest,
            tags=["claude-memory"], created=when, updated=when, importance=6,
            title=None if rest.lstrip().startswith("#") else "Claude Code memory",
            source_key=record_key(imported.scope, INDEX),
            extra={"imported_from": f"memory/{INDEX}"},
        ))


def _topic(imported: Imported, path: Path, rel: str, project: str, hook: str | None) -> None:
    text, _problem = read_text_file(path, rel)
    if not text or not text.strip():
        return
    parsed = parse_text(text)
    key = record_key(imported.scope, rel)
    if parsed.problem is not None:
        imported.problems.append(Problem(rel, str(parsed.problem), hazard=False))
        imported.kept.add(key)
        return
    meta = parsed.meta
    if not parsed.body.strip():
        imported.skipped.append(Problem(rel, "empty note (no text)", hazard=False))
        return
    # Front matter is the source's to write: a `name`, `type` or `description` that is not
    # text is left out with a warning (never its Python notation as the title or type).
    kind = (text_field(meta, "type", rel, imported.warnings) or "").strip().lower()
    stem = rel.rsplit("/", 1)[-1][:-3]
    name = (text_field(meta, "name", rel, imported.warnings) or "").strip()
    note_type = _TYPES.get(kind) or guess_type(name or title_of({}, parsed.body) or stem)
    when = file_time(path)
    description = text_field(meta, "description", rel, imported.warnings)
    description = description if description is not None else hook
    imported.notes.append(make_note(
        project=project, note_id=stable_id("claude-memory", project, rel), body=parsed.body,
        note_type=note_type, tags=["claude-memory", stem], created=when, updated=when,
        importance=7 if note_type == "rule" else 6,
        title=name or (None if parsed.body.lstrip().startswith("#") else stem),
        source_key=key,
        extra={"imported_from": f"memory/{rel}", "description": description,
               "original_type": kind or None},
    ))
