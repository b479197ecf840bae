"""A Cline-style `memory-bank/` folder: projectbrief.md, productContext.md,
activeContext.md, systemPatterns.md, techContext.md, progress.md and any other Markdown file
in it. Each file becomes one note with its text as written."""

from __future__ import annotations

from pathlib import Path

from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.common import (
    file_time,
    make_note,
    raise_hazards,
    read_text_file,
    stable_id,
    walk_markdown,
)

_KINDS = {
    "projectbrief": ("fact", 8),
    "productcontext": ("fact", 7),
    "activecontext": ("fact", 6),
    "systempatterns": ("decision", 7),
    "techcontext": ("fact", 7),
    "progress": ("experience", 6),
}


def import_cline(source: Path, project: str) -> tuple[list[BundleFile], list[Problem]]:
    folder = source / "memory-bank" if (source / "memory-bank").is_dir() else source
    files: list[BundleFile] = []
    problems: list[Problem] = []
    for path, rel in walk_markdown(folder):
        text, problem = read_text_file(path, rel)
        if problem is not None:
            problems.append(problem)
            continue
        assert text is not None
        if not text.strip():
            continue
        stem = rel.rsplit("/", 1)[-1][:-3]
        note_type, importance = _KINDS.get(stem.lower(), ("fact", 5))
        body = text if text.lstrip().startswith("#") else f"# {stem}\n\n{text}"
        when = file_time(path)
        files.append(make_note(
            project=project, note_id=stable_id("cline", project, rel), body=body,
            note_type=note_type, tags=["cline", stem], created=when, updated=when,
            importance=importance, extra={"imported_from": f"memory-bank/{rel}"},
        ))
    return files, raise_hazards(source, problems)
