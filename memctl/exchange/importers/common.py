"""What every importer shares: detecting a source, reading files safely, making notes.

Importers: memory kept by other tools, turned into memctl notes (`source: import`).

Each importer reads its format safely (no links followed, UTF-8 text only, bounded sizes),
keeps the original text as the note body, and gives each note an id derived from where it
came from, so importing the same source again updates those notes instead of duplicating
them. Hazards raise `BundleError`; a record that is merely unusable is returned as a problem
(refused unless `--skip-invalid`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memctl.core.clock import format_time
from memctl.core.note import NOTE_TYPES, ordered_meta, title_of
from memctl.core.noteformat import compute_checksum, parse_text, render_note, set_fields
from memctl.disk.layout import NOTES_DIR, slugify
from memctl.exchange.bundle import MANIFEST_NAME, BundleError, BundleFile, Problem, unsafe_yaml_tags

KINDS = ("markdown", "agents", "cline", "mem0")
MAX_SOURCE_BYTES = 16 * 1024 * 1024
MAX_FILES = 100_000
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
CLINE_FILES = ("projectbrief.md", "productContext.md", "activeContext.md", "systemPatterns.md",
               "techContext.md", "progress.md")


def detect(source: Path) -> str | None:
    """Which reader fits a path: "bundle", "store", or an importer kind."""
    source = Path(source)
    if source.is_file():
        name = source.name.lower()
        if name in ("claude.md", "agents.md"):
            return "agents"
        if name.endswith(".json"):
            return "mem0"
        if name.endswith(".md"):
            return "markdown"
        return "bundle"
    if (source / "memctl.toml").is_file() and (source / ".git").exists():
        return "store"
    if (source / MANIFEST_NAME).exists() or (source / "memctl.toml").is_file() \
            or (source / ".tombstones").is_dir():
        return "bundle"
    if source.name == "memory-bank" or (source / "memory-bank").is_dir() \
            or any((source / name).is_file() for name in CLINE_FILES):
        return "cline"
    for entry in _scandir(source):
        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
            inner = Path(entry.path)
            if (inner / "notes").is_dir() or (inner / "MEMORY.md").is_file() \
                    or (inner / "episodes").is_dir():
                return "bundle"
    return "markdown"


def _scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []


def stable_id(*parts: str) -> str:
    """A note id derived from where a record came from: the same source, the same id."""
    digest = hashlib.sha256("\x1f".join(("memctl-import", *parts)).encode("utf-8")).digest()
    number = int.from_bytes(digest[:10], "big")
    return "".join(_ALPHABET[(number >> (5 * i)) & 31] for i in range(16))


def file_time(path: Path) -> str:
    return format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC))


def read_text_file(path: Path, shown: str) -> tuple[str | None, Problem | None]:
    """A source file as text, or the hazard that stops the import."""
    try:
        info = path.lstat()
    except OSError as exc:
        return None, Problem(shown, f"cannot be read: {exc.strerror}")
    import stat

    if stat.S_ISLNK(info.st_mode):
        return None, Problem(shown, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        return None, Problem(shown, "not a regular file")
    if info.st_size > MAX_SOURCE_BYTES:
        return None, Problem(shown, f"over the {MAX_SOURCE_BYTES // 2**20} MB size limit")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, Problem(shown, f"not text: invalid UTF-8 at line {line}")
    if "\x00" in text:
        return None, Problem(shown, "not text: binary content (NUL bytes)")
    return text.removeprefix("\ufeff"), None


def walk_markdown(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, relative name) of every `*.md` under root, skipping dot folders, never
    following links (a link is yielded so the reader reports it)."""
    stack = [(root, "")]
    count = 0
    while stack:
        folder, prefix = stack.pop()
        for entry in _scandir(folder):
            if entry.name.startswith("."):
                continue
            rel = f"{prefix}{entry.name}"
            count += 1
            if count > MAX_FILES:
                raise BundleError(str(root), [Problem("", f"too many files (over {MAX_FILES})")])
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), rel + "/"))
            elif entry.name.lower().endswith(".md"):
                yield Path(entry.path), rel


def raise_hazards(source: Path, problems: list[Problem]) -> list[Problem]:
    """Hazards stop everything; the rest are returned for --skip-invalid."""
    hazards = [p for p in problems if p.hazard]
    if hazards:
        raise BundleError(str(source), hazards)
    return problems


def front_matter_hazard(text: str, shown: str) -> Problem | None:
    parsed = parse_text(text)
    if parsed.has_front_matter and parsed.close_line is not None:
        block = "".join(text.splitlines(keepends=True)[1:parsed.close_line])
        bad = unsafe_yaml_tags(block)
        if bad:
            return Problem(shown, f"unsafe YAML tag {', '.join(sorted(set(bad)))}")
    return None


def make_note(*, project: str, note_id: str, body: str, note_type: str = "fact",
              tags: list[str] | None = None, created: str, updated: str | None = None,
              importance: int = 5, title: str | None = None,
              extra: dict[str, Any] | None = None) -> BundleFile:
    """A memctl note file holding `body` as it was, stamped like memctl's own notes."""
    note_type = note_type if note_type in NOTE_TYPES else "fact"
    meta: dict[str, Any] = {
        "id": note_id, "type": note_type, "project": project, "importance": importance,
        "tags": [t for t in dict.fromkeys(tags or []) if t], "created": created,
        "updated": updated or created, "status": "active", "source": "import",
    }
    for key, value in (extra or {}).items():
        if key not in meta and value is not None and not isinstance(value, dict):
            meta[key] = value
    if title:
        meta["title"] = title
    text = body if body.endswith("\n") else body + "\n"
    rendered = render_note(ordered_meta(meta), text)
    rendered = set_fields(rendered, {"checksum": compute_checksum(rendered)})

    slug = slugify(title or title_of({}, body)) or "imported"
    path = f"{project}/{NOTES_DIR}/{note_type}/{slug}-{note_id}.md"
    return BundleFile(path, rendered.encode("utf-8"), updated or created, ())
