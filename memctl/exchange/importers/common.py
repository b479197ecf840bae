"""What every importer shares: detecting a source, reading files safely, making notes.

Importers: memory kept by other tools, turned into memctl notes (`source: import`).

Each importer reads its format safely (no links followed, UTF-8 text only, bounded sizes),
keeps the original text as the note body, and gives each note an id derived from where it
came from. Hazards raise `BundleError`; a record that is merely unusable is returned as a
problem (refused unless `--skip-invalid`); what is left out on purpose (a template, an
attachment, a deleted memory) is returned as `skipped`, with the reason.

Re-importing a source updates what came from it and retires what it no longer has
(memctl.exchange.reimport): every imported note carries `source_key` (the source and the
record within it) and `import_hash` (its text as the import wrote it, so an edit made here
since is told apart from a change in the source; docs/sync.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memctl.core import sections
from memctl.core.clock import format_time, latest_now, now, parse_time
from memctl.core.note import NOTE_TYPES, ordered_meta, title_of
from memctl.core.noteformat import compute_checksum, parse_text, render_note, set_fields
from memctl.core.secrets import mask_name
from memctl.core.textfile import decode_file
from memctl.disk.layout import ARCHIVE_DIR, NOTES_DIR, slugify
from memctl.exchange.bundle import (
    MANIFEST_NAME,
    NOT_UTF8_NAME,
    BundleError,
    BundleFile,
    Problem,
    not_utf8_name,
    unsafe_yaml_tags,
)

KINDS = ("markdown", "agents", "cline", "claude-memory", "mem0")
MAX_SOURCE_BYTES = 16 * 1024 * 1024
MAX_FILES = 100_000
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
CLINE_FILES = ("projectbrief.md", "productContext.md", "activeContext.md", "systemPatterns.md",
               "techContext.md", "progress.md")
# The instructions files of coding agents: split into one note per section wherever found.
AGENT_FILES = ("claude.md", "agents.md")
# What OpenMemory's export zip holds (its backup router writes both; docs/sync.md).
OPENMEMORY_FILES = ("memories.json", "memories.jsonl.gz")
# Folders a walk for nested agent files never enters: installed code, not instructions.
VENDOR_DIRS = frozenset({"node_modules", "vendor", "target", "dist", "build", "venv",
                         "__pycache__", "site-packages"})
# Lines of a note that an import's own bookkeeping or memctl's stamp change: left out when
# telling whether a note is still as the import wrote it.
_STAMP_LINE = re.compile(r"^(?:updated|checksum|import_hash)[ \t]*:")


# --- what a source is -------------------------------------------------------------------------


def detect(source: Path) -> str | None:
    """Which reader fits a path: "bundle", "store", or an importer kind."""
    source = Path(source)
    if source.is_file():
        name = source.name.lower()
        if name in AGENT_FILES:
            return "agents"
        if name.endswith((".json", ".jsonl", ".jsonl.gz")):
            return "mem0"
        if name.endswith(".md"):
            return "markdown"
        if openmemory_zip(source):
            return "mem0"
        return "bundle"
    if (source / "memctl.toml").is_file() and (source / ".git").exists():
        return "store"
    if (source / MANIFEST_NAME).exists() or (source / "memctl.toml").is_file() \
            or (source / ".tombstones").is_dir():
        return "bundle"
    if any((source / name).is_file() for name in OPENMEMORY_FILES):
        return "mem0"
    if source.name == "memory-bank" or (source / "memory-bank").is_dir() \
            or any((source / name).is_file() for name in CLINE_FILES):
        return "cline"
    if claude_memory_folder(source) is not None:
        return "claude-memory"
    for entry in _scandir(source):
        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
            inner = Path(entry.path)
            if memctl_project_shaped(inner) or (inner / "MEMORY.md").is_file():
                return "bundle"
    return "markdown"


def memctl_project_shaped(folder: Path) -> bool:
    """A folder that has what only a memctl project has (notes, episodes, an archive, a
    scratchpad): a bundle's project, never another tool's memory."""
    return (folder / NOTES_DIR).is_dir() or (folder / "episodes").is_dir() \
        or (folder / ARCHIVE_DIR).is_dir() or (folder / "SCRATCHPAD.md").is_file()


def claude_memory_folder(source: Path) -> Path | None:
    """Claude Code's auto-memory folder (`~/.claude/projects/<project>/memory/`: MEMORY.md,
    the index, and topic files) when `source` is it or the project folder holding it. That
    project folder looks like a bundle holding a project called `memory`; what tells them
    apart: its name is a path made into a name (`-home-me-repo`, never a project name), or
    Claude Code's session transcripts (`*.jsonl`) lie next to `memory/`, and the folder
    has nothing only a memctl project has."""
    source = Path(source)
    if source.name == "memory" and (source / "MEMORY.md").is_file() \
            and not memctl_project_shaped(source) and not (source / "memory-bank").is_dir():
        return source
    inner = source / "memory"
    if not (inner / "MEMORY.md").is_file() or memctl_project_shaped(inner):
        return None
    if source.name.startswith("-") or any(entry.name.endswith(".jsonl") for entry in _scandir(source)):
        return inner
    return None


def openmemory_zip(path: Path) -> bool:
    """A zip holding OpenMemory's export (`memories.json`, `memories.jsonl.gz`) and no memctl
    manifest."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [name.rsplit("/", 1)[-1] for name in archive.namelist()]
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return MANIFEST_NAME not in names and any(name in OPENMEMORY_FILES for name in names)


def _scandir(folder: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []


# --- what an importer returns -----------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Items from one record of a source for one section of memctl's own files: `file` is
    "memory" (`MEMORY.md`, section keys of core.sections.L2_ALIASES) or "scratchpad"
    (`SCRATCHPAD.md`, core.sections.SCRATCHPAD_ALIASES)."""

    file: str
    section: str
    record: str  # the record within the source, as in a note's `source_key`
    lines: tuple[str, ...]  # the items as written, list markers included


@dataclass
class Imported:
    """What one source holds, in memctl's terms. `scope` names the source (`agents:CLAUDE.md`):
    a re-import updates the notes and blocks of this scope and retires those it no longer
    produces, except the records in `kept` (still in the source, left out as invalid), and
    none at all when `whole` is false: part of the source could not be read, so which
    records it holds is not known."""

    scope: str
    notes: list[BundleFile] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    # What was imported with a value of the source left out or corrected (a `name` that is
    # a list, an `updated_at` before `created_at`): one warning line each, nothing refused.
    warnings: list[Problem] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)
    found: int = 0  # records of its format the source holds (files, memories), used or not
    whole: bool = True

    def recognised(self) -> bool:
        """Whether the source held anything this importer reads (even if all was skipped)."""
        return self.found > 0 or bool(self.problems)


def record_key(scope: str, *parts: str) -> str:
    """A record's `source_key`: the scope, then where in the source it is, `#`-separated."""
    return "#".join((scope, *parts))


def has_text(markdown: str) -> bool:
    """Whether Markdown holds anything but headings and blank lines."""
    return any(line.strip() and sections.heading(line) is None for line in markdown.splitlines())


def text_field(meta: dict[str, Any], name: str, shown: str, warnings: list[Problem], *,
               whole_numbers: bool = False) -> str | None:
    """`meta[name]` when it is text (or, with `whole_numbers`, a whole number, as text);
    anything else (a list, a mapping, a number) is taken as missing, with a warning naming
    it: `str()` of it would write Python's notation of the value (`['deploy', 'rules']`) into
    the note as if the source had said so."""
    value = meta.get(name)
    if value is None or isinstance(value, str):
        return value
    if whole_numbers and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    warnings.append(Problem(shown, f"`{name}` is not text ({type(value).__name__}): left out",
                            hazard=False))
    return None


def label_of(text: str) -> str:
    """Text safe inside an HTML comment and on one line (for block markers)."""
    return " ".join(text.replace("--", "-").replace(">", ")").replace("<", "(").split())


# --- reading ------------------------------------------------------------------------------------


def stable_id(*parts: str) -> str:
    """A note id derived from where a record came from: the same source, the same id."""
    digest = hashlib.sha256("\x1f".join(("memctl-import", *parts)).encode("utf-8")).digest()
    number = int.from_bytes(digest[:10], "big")
    return "".join(_ALPHABET[(number >> (5 * i)) & 31] for i in range(16))


def file_time(path: Path) -> str:
    return format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC))


def read_text_file(path: Path, shown: str) -> tuple[str | None, Problem | None]:
    """A source file as text, or the hazard that stops the import."""
    if not_utf8_name(shown):
        return None, Problem(shown, NOT_UTF8_NAME)
    try:
        info = path.lstat()
    except OSError as exc:
        return None, Problem(shown, f"cannot be read: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return None, Problem(shown, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        return None, Problem(shown, "not a regular file")
    if info.st_size > MAX_SOURCE_BYTES:
        return None, Problem(shown, f"over the {MAX_SOURCE_BYTES // 2**20} MB size limit")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    text = decode_file(data)
    if not isinstance(text, str):
        return None, Problem(shown, text[1], line=text[0])
    return text.removeprefix("\ufeff"), None


def walk_files(root: Path, *, prune: frozenset[str] = frozenset()) -> Iterator[tuple[Path, str]]:
    """(path, relative name) of every file under root, skipping dot folders and files and the
    folders named in `prune`, never following links (a link is yielded so the reader
    reports it)."""
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
                if entry.name not in prune:
                    stack.append((Path(entry.path), rel + "/"))
            else:
                yield Path(entry.path), rel


def walk_markdown(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, relative name) of every `*.md` under root, and every link whatever its name
    (see `walk_files`): a linked folder is a link like a linked note, which the reader
    refuses (`read_text_file`), never a name to pass over in silence."""
    for path, rel in walk_files(root):
        if rel.lower().endswith(".md") or path.is_symlink():
            yield path, rel


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


# --- making notes -------------------------------------------------------------------------------


def import_digest(text: str) -> str:
    """The note's text with its `updated`, `checksum` and `import_hash` lines left out, hashed:
    equal to the note's `import_hash` while nobody changed it since the import wrote it."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    parsed = parse_text(text)
    if parsed.has_front_matter and parsed.close_line is not None:
        lines = text.splitlines(keepends=True)
        head = [line for line in lines[1:parsed.close_line] if not _STAMP_LINE.match(line)]
        text = "".join(lines[:1] + head + lines[parsed.close_line:])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def seal_import(text: str) -> str:
    """The note as an import writes it: `import_hash` of its text, then memctl's stamp."""
    text = set_fields(text, {"import_hash": import_digest(text)})
    return set_fields(text, {"checksum": compute_checksum(text)})


def consistent_dates(imported: Imported) -> None:
    """Every note of `imported` dated so that its `updated` is never before its `created` (it
    takes `created`) and neither is after now (it takes now), a warning naming the record for
    each date changed. Sources are the other tool's to write (`updated_at: 0001-01-01`, a
    clock years ahead): left as they are, such dates made `archive` see a memory unrecalled
    for 739,954 days, or one edited long after this moment. One place for every importer.
    "After now" is after the later of `MEMCTL_NOW` and this machine's clock (a `MEMCTL_NOW`
    set in the past must not put today's files in the future, docs/sync.md); the date it
    becomes is `now()`."""
    limit, moment = latest_now(), now()
    for index, note in enumerate(imported.notes):
        text = note.data.decode("utf-8")
        meta = parse_text(text).meta
        created, updated = meta.get("created"), meta.get("updated")
        start, end = parse_time(created), parse_time(updated)
        label = str(meta.get("source_key") or note.path)
        expires = meta.get("expires")
        ends = parse_time(expires) if isinstance(expires, str) else None
        if ends is not None and ends <= moment and meta.get("status", "active") == "active":
            # Imported as the source says, and expired from its first moment: out of search,
            # recall and `get`, which `add` never allows; said, so it is not a silent loss.
            imported.warnings.append(Problem(label, f"`expires` {expires} is past: imported "
                                                    "expired (out of search and recall until "
                                                    "its expires is changed)", hazard=False))
        if start is None or end is None:
            continue
        changes: dict[str, str] = {}
        if start > limit:
            changes["created"] = format_time(moment)
            start = moment
            imported.warnings.append(Problem(label, f"`created` {created} is in the future: "
                                                    f"imported as {changes['created']}", hazard=False))
        if end > limit:
            changes["updated"] = format_time(moment)
            end = moment
            imported.warnings.append(Problem(label, f"`updated` {updated} is in the future: "
                                                    f"imported as {changes['updated']}", hazard=False))
        if end < start:
            changes["updated"] = changes.get("created", str(created))
            imported.warnings.append(Problem(label, f"`updated` {updated} is before `created` "
                                                    f"{created}: imported as {changes['updated']}",
                                             hazard=False))
        if changes:
            fixed = seal_import(set_fields(text, changes))
            imported.notes[index] = BundleFile(note.path, fixed.encode("utf-8"),
                                               changes.get("updated", note.updated), note.history)


def note_folder(project: str, note_type: str, status: str) -> str:
    return f"{project}/{ARCHIVE_DIR if status == 'archived' else NOTES_DIR}/{note_type}"


def make_note(*, project: str, note_id: str, body: str, note_type: str = "fact",
              tags: list[str] | None = None, created: str, updated: str | None = None,
              importance: int = 5, title: str | None = None, source_key: str,
              status: str = "active", extra: dict[str, Any] | None = None) -> BundleFile:
    """A memctl note file holding `body` as it was, stamped like memctl's own notes; an
    archived one lives under `archive/`."""
    note_type = note_type if note_type in NOTE_TYPES else "fact"
    meta: dict[str, Any] = {
        "id": note_id, "type": note_type, "project": project, "importance": importance,
        "tags": [t for t in dict.fromkeys(tags or []) if t], "created": created,
        "updated": updated or created, "status": status, "source": "import",
    }
    for key, value in (extra or {}).items():
        if key not in meta and value is not None and not isinstance(value, dict):
            meta[key] = value
    if title:
        meta["title"] = title
    meta["source_key"] = source_key
    text = body if body.endswith("\n") else body + "\n"
    rendered = seal_import(render_note(ordered_meta(meta), text))
    return BundleFile(note_path(project, note_type, status, title or title_of({}, body), note_id),
                      rendered.encode("utf-8"), updated or created, ())


def note_path(project: str, note_type: str, status: str, title: str, note_id: str) -> str:
    # A likely secret of the title is masked before it becomes the file's name, as `add`
    # does (docs/security.md, "Never shown, even when allowed"): with --allow-secret the key
    # went, lowercased, into the file name, and so into every clone and commit. Read as a
    # name is read (`mask_name`): a key joined to a word by `-` (`deploy-ghp_…`, a vault
    # file's name as its title) is no token to the text's rules, yet it is one in the name.
    slug = slugify(mask_name(title)) or "imported"
    return f"{note_folder(project, note_type, status)}/{slug}-{note_id}.md"


_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)([ \t]*:)")


def rename_field(text: str, old: str, new: str) -> str:
    """The file with the top-level field `old` called `new`, its value's lines byte for byte
    (a nested mapping too): how a field memctl owns keeps the value a source gave it."""
    parsed = parse_text(text)
    if parsed.problem is not None or not parsed.has_front_matter or old not in parsed.meta \
            or new in parsed.meta:
        return text
    assert parsed.close_line is not None
    lines = text.splitlines(keepends=True)
    for index in range(1, parsed.close_line):
        match = _KEY_LINE.match(lines[index])
        if match and match.group(1) == old:
            lines[index] = new + lines[index][len(old):]
            break
    renamed = "".join(lines)
    after = parse_text(renamed)
    expected = {(new if key == old else key): value for key, value in parsed.meta.items()}
    return renamed if after.problem is None and after.meta == expected else text
