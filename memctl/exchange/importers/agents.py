"""`CLAUDE.md` / `AGENTS.md`: the instructions files of coding agents.

Each `##` section (or `#` section when the file has no `##`) becomes one note holding the
section's text as written, heading included; text before the first heading becomes a note of
its own. A heading with no text under it (nothing, or only sub-headings) becomes no note: it
is listed as skipped. The heading decides the type: rules and conventions become `rule`, commands and
workflows `skill`, pitfalls and gotchas `error`, architecture and decisions `decision`,
preferences `preference`, anything else `fact`.

Importing one such file also imports what an agent would read with it:
- the other `CLAUDE.md` / `AGENTS.md` files in its folder and below (`packages/api/AGENTS.md`,
  which an agent reads when it works there; one that is a link, or in a linked folder, is
  skipped and listed, never followed);
- the files it imports with Claude Code's `@path/to/file` syntax: relative to the file that
  names them, at most 5 hops deep, not inside code spans or blocks. Only files inside the
  imported folder are read, through the one path resolver's rules (no `..` out of it, no
  link: docs/security.md): an `@~/…` or absolute import is listed as skipped, never read,
  because an instructions file from a cloned repository must not pull files from this
  machine into the store (docs/sync.md).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from memctl.core import sections
from memctl.core.errors import MemctlError
from memctl.disk.storefiles import StoreFiles
from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.common import (
    AGENT_FILES,
    VENDOR_DIRS,
    Imported,
    file_time,
    has_text,
    make_note,
    raise_hazards,
    read_text_file,
    record_key,
    stable_id,
    walk_files,
)

MAX_HOPS = 5  # Claude Code's limit on nested @imports
_TYPES = (
    ("rule", ("rule", "convention", "style", "guideline", "must", "never", "always", "do not",
              "don't", "policy", "standard", "规范", "规则")),
    ("skill", ("command", "build", "test", "run", "workflow", "how to", "setup", "deploy",
               "usage", "命令")),
    ("error", ("pitfall", "gotcha", "lesson", "troubleshoot", "known issue", "caveat", "warning",
               "教训", "坑")),
    ("decision", ("architecture", "decision", "design", "structure", "决策", "架构")),
    ("preference", ("preference", "prefer", "偏好")),
)
# `@path`: at the start of a line or after a blank, up to the next blank (`\ ` escapes one).
_IMPORT = re.compile(r"(?<!\S)@((?:[^\s\\]|\\ )+)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TRAILING = ".,;:!?)"
_TEXT_SUFFIXES = ("", ".md", ".markdown", ".txt")


def guess_type(heading: str) -> str:
    lowered = heading.lower()
    for note_type, words in _TYPES:
        if any(word in lowered for word in words):
            return note_type
    return "fact"


def split_sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) per top section, fenced code blocks respected."""
    headings = sections.parse_headings(text)
    levels = sorted({h.level for h in headings})
    split_level = 2 if 2 in levels else (levels[0] if levels else 0)
    cuts = [h for h in headings if h.level == split_level]
    found: list[tuple[str, str]] = []
    start = cuts[0].start if cuts else len(text)
    if text[:start].strip():
        found.append(("", text[:start]))
    for index, cut in enumerate(cuts):
        end = cuts[index + 1].start if index + 1 < len(cuts) else len(text)
        if text[cut.start:end].strip():
            found.append((cut.title, text[cut.start:end]))
    return found


def section_notes(text: str, rel: str, *, project: str, scope: str, when: str,
                  tag: str) -> tuple[list[BundleFile], list[Problem]]:
    """One note per section of an instructions file at `rel` (relative to the imported
    folder); the same file and heading always give the same id. Also returns the headings
    left out, with no text under them (listed as skipped: docs/sync.md)."""
    notes = []
    skipped = []
    seen: dict[str, int] = {}
    for heading, body in split_sections(text):
        if not heading and not has_text(body):
            continue  # a title and nothing else
        name = heading or "(preamble)"
        # Counted even when left out: a heading that gets text later takes the number it
        # has in the file, and the notes of the others keep their ids.
        seen[name] = seen.get(name, 0) + 1
        if not has_text(body):
            skipped.append(Problem(f"{rel}: {name}", "a heading with no text under it: not "
                                                     "imported", hazard=False))
            continue
        identity = f"{name}#{seen[name]}"
        note_type = guess_type(heading) if heading else "fact"
        notes.append(make_note(
            project=project, note_id=stable_id("agents", project, rel, identity),
            body=body.strip("\n") + "\n", note_type=note_type, tags=[tag],
            created=when, updated=when, importance=7 if note_type == "rule" else 6,
            title=None if heading else f"{rel} (introduction)",
            source_key=record_key(scope, rel, identity),
            extra={"imported_from": f"{rel}: {name}"},
        ))
    return notes, skipped


def file_tag(name: str) -> str:
    return name.lower().replace(".", "-")


def prose_lines(text: str) -> Iterator[str]:
    """The lines of Markdown outside fenced code blocks, with their code spans blanked: where
    `@imports`, `#tags` and `[[links]]` count."""
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip().lstrip(fence[0]):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        yield without_code_spans(line) if "`" in line else line


def import_references(text: str) -> list[str]:
    """The `@path` imports of a file, in order, outside code blocks and code spans."""
    return [match.group(1).replace("\\ ", " ") for line in prose_lines(text) if "@" in line
            for match in _IMPORT.finditer(line)]


def without_code_spans(line: str) -> str:
    """The line with its `code spans` blanked. Linear: each run of backticks is paired with
    the next run of the same length, found from a table built in one pass."""
    runs: list[tuple[int, int]] = []  # (start, length) of each backtick run
    index = 0
    while index < len(line):
        if line[index] == "`":
            end = index
            while end < len(line) and line[end] == "`":
                end += 1
            runs.append((index, end - index))
            index = end
        else:
            index += 1
    if len(runs) < 2:
        return line
    following: dict[int, int] = {}  # run number -> the next run of the same length
    last_of_length: dict[int, int] = {}
    for number in range(len(runs) - 1, -1, -1):
        length = runs[number][1]
        if length in last_of_length:
            following[number] = last_of_length[length]
        last_of_length[length] = number
    out = []
    position = number = 0
    while number < len(runs):
        closing = following.get(number)
        if closing is None:
            number += 1
            continue
        start = runs[number][0]
        end = runs[closing][0] + runs[closing][1]
        out += [line[position:start], " " * (end - start)]
        position = end
        number = closing + 1
    out.append(line[position:])
    return "".join(out)


def follow(root: Path, from_rel: str, raw: str) -> tuple[str | None, Problem | None]:
    """Where an `@raw` import in `from_rel` leads, relative to `root`: (rel, None) to read;
    (None, why) when it is not read and says so; (None, None) for an `@word` that names no
    file (Claude Code ignores those too: `@types/node`, a handle)."""
    shown = f"{from_rel}: @{raw.rstrip(_TRAILING)}"
    if raw.startswith(("~", "/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", raw):
        return None, Problem(shown, "outside the imported folder (a home or absolute path): not "
                                    "read; import that file on its own if you want it", hazard=False)
    candidates = [raw] if raw.rstrip(_TRAILING) == raw else [raw, raw.rstrip(_TRAILING)]
    resolver = StoreFiles(root)
    for candidate in candidates:
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(from_rel), candidate))
        if rel in (".", "") or rel == ".." or rel.startswith("../"):
            return None, Problem(shown, "outside the imported folder: not read", hazard=False)
        try:
            path = resolver.resolve(rel)
        except MemctlError:
            return None, Problem(shown, "goes through a symbolic link: not followed", hazard=False)
        if not path.is_file():
            continue
        if Path(rel).suffix.lower() not in _TEXT_SUFFIXES:
            return None, Problem(shown, "not Markdown: not imported (memctl keeps the "
                                        "instructions, not the files they point at)", hazard=False)
        return rel, None
    if raw.rstrip(_TRAILING).lower().endswith(".md"):
        return None, Problem(shown, "not found", hazard=False)
    return None, None


def nested_agent_files(root: Path, top: str) -> tuple[list[str], list[str]]:
    """(every CLAUDE.md / AGENTS.md below `root` but `top`, every linked folder below it),
    skipping dot and vendor folders. A linked folder outside the repository is not followed
    (docs/security.md), so the instructions an agent would read in it are not imported: it is
    named, never passed over in silence."""
    found: list[str] = []
    linked: list[str] = []
    real_root = os.path.realpath(root)
    for path, rel in walk_files(root, prune=VENDOR_DIRS):
        name = rel.rsplit("/", 1)[-1]
        if name.lower() in AGENT_FILES:
            if rel != top:
                found.append(rel)
        # A linked vendor folder is passed over as a real one is; a link to a folder this
        # walk goes through anyway (the repository, or a folder in it) hides nothing.
        elif name not in VENDOR_DIRS and path.is_symlink() and path.is_dir() \
                and not _walked(os.path.realpath(path), real_root):
            linked.append(rel)
    return sorted(found), sorted(linked)


def _walked(folder: str, root: str) -> bool:
    """Whether `walk_files(root, prune=VENDOR_DIRS)` goes through `folder` (both real
    paths): inside the root, through no dot or vendor folder."""
    relative = os.path.relpath(folder, root)
    if relative == ".":
        return True
    parts = relative.split(os.sep)
    return parts[0] != ".." and not any(part.startswith(".") or part in VENDOR_DIRS
                                        for part in parts)


def import_agents_md(source: Path, project: str) -> Imported:
    if source.is_dir():  # `--from agents` on a repository: its top instructions file
        tops = [entry for entry in sorted(source.iterdir()) if entry.name.lower() in AGENT_FILES]
        if not tops:
            return Imported(scope=f"agents:{source.name}")
        source = min(tops, key=lambda entry: (entry.name.lower() != "claude.md", entry.name))
    root = source.parent
    imported = Imported(scope=f"agents:{source.name}")
    queue: deque[tuple[str, int, str]] = deque([(source.name, 0, file_tag(source.name))])
    nested, linked = nested_agent_files(root, source.name)
    queue.extend((rel, 0, file_tag(rel.rsplit("/", 1)[-1])) for rel in nested)
    imported.skipped.extend(Problem(rel, "a linked folder: not followed (an instructions file in "
                                    "it is not imported)", hazard=False) for rel in linked)
    done: set[str] = set()
    while queue:
        rel, depth, tag = queue.popleft()
        if rel in done:
            continue
        done.add(rel)
        path = root / rel
        if rel != source.name and path.is_symlink():
            imported.skipped.append(Problem(rel, "a symbolic link: not followed", hazard=False))
            continue
        imported.found += 1
        text, problem = read_text_file(path, rel)
        if problem is not None:
            imported.problems.append(problem)
            continue
        assert text is not None
        made, empty = section_notes(text, rel, project=project, scope=imported.scope,
                                    when=file_time(path), tag=tag)
        imported.notes.extend(made)
        imported.skipped.extend(empty)
        for raw in import_references(text):
            target, why = follow(root, rel, raw)
            if why is not None:
                imported.skipped.append(why)
            elif target is not None and target not in done:
                if depth + 1 > MAX_HOPS:
                    imported.skipped.append(Problem(
                        f"{rel}: @{raw.rstrip(_TRAILING)}", f"more than {MAX_HOPS} hops of @imports (Claude "
                                          "Code's limit): not imported", hazard=False))
                else:
                    queue.append((target, depth + 1, tag))
    raise_hazards(source, imported.problems)
    return imported
