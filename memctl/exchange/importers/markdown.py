"""A folder of Markdown notes (an Obsidian vault, with or without front matter), or one file.

Each file becomes one note; its body is kept byte for byte and so is its front matter: memctl
sets the fields it owns with line edits and leaves every other field (nested ones included)
as it was. A value memctl cannot take for a field it owns is kept under `original_<field>`
(a `status: done` becomes `status: active` + `original_status: done`, as memctl's statuses
are `active`, `superseded`, `archived`; a note's own `id` becomes `original_id`). Taken over:
`type`, `importance`, `status` (`active`/`archived`), `tags`, `created`
(else `date`/`created_at`, else `modified`/`updated`), `updated` (else `modified`/
`updated_at`/`date`, else the file's time); folders and inline `#tags` become tags,
`[[wikilinks]]` to other imported notes become `links` (their memctl ids; the text keeps the
`[[…]]`), embedded attachments are named in `attachments`. `CLAUDE.md`/`AGENTS.md` files
in the folder are split into sections (agents.py).

A link in the folder, to a file or a folder, refuses the import like a linked note: it is
never followed, nor taken for an attachment.

Left out, each listed as skipped with the reason: templates (the folder `.obsidian/
templates.json` or Templater name, or `{{…}}`/`<% … %>` files in a `Templates` folder),
empty notes and attachments (memctl keeps text).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from memctl.core.clock import parse_time
from memctl.core.errors import MemctlError
from memctl.core.note import NOTE_TYPES, ordered_meta, parse_bool, parse_tags, title_of
from memctl.core.noteformat import ParsedFile, parse_text, set_fields
from memctl.disk.storefiles import StoreFiles
from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.agents import file_tag, prose_lines, section_notes
from memctl.exchange.importers.common import (
    AGENT_FILES,
    Imported,
    file_time,
    front_matter_hazard,
    note_path,
    raise_hazards,
    read_text_file,
    record_key,
    rename_field,
    seal_import,
    stable_id,
    walk_files,
)

_TEMPLATE_SETTINGS = ((".obsidian/templates.json", "folder"),
                      (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"))
_TEMPLATE_FOLDERS = {"templates", "_templates", "template"}
_PLACEHOLDER = re.compile(r"\{\{[^{}\n]*\}\}|<%[^%\n]*%>")
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#^\n]+)(?:[#^][^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_MDLINK = re.compile(r"(!?)\[[^\[\]\n]*\]\(([^()\s]+)\)")
_STATUSES = ("active", "archived")
# Fields memctl sets on every imported note: a value the source gave one of them is kept as
# `original_<field>` (docs/sync.md).
_SET_ALWAYS = ("id", "project", "source", "checksum", "superseded_by", "corrects",
               "source_episode", "source_key", "import_hash", "imported_from", "links",
               "attachments", "source_gone")
_CREATED = ("created", "date", "created_at", "modified", "updated", "updated_at")
_UPDATED = ("updated", "modified", "updated_at", "date")


@dataclass
class _Source:
    path: Path
    rel: str
    text: str
    parsed: ParsedFile


@dataclass
class _Vault:
    """Where links lead: by path, by name, by alias (lower case, without `.md`)."""

    ids: dict[str, str] = field(default_factory=dict)  # rel -> note id
    by_path: dict[str, str] = field(default_factory=dict)
    # name -> the note of that name with the shortest path, as Obsidian resolves `[[name]]`
    # (kept as each is learnt: a `min` over every namesake per link was quadratic).
    by_name: dict[str, str] = field(default_factory=dict)
    by_alias: dict[str, str] = field(default_factory=dict)
    attachments: dict[str, str] = field(default_factory=dict)  # name -> the shortest rel
    attachment_paths: set[str] = field(default_factory=set)
    embedded_by: dict[str, list[str]] = field(default_factory=dict)  # attachment -> notes


def import_markdown(source: Path, project: str) -> Imported:
    imported = Imported(scope=f"markdown:{source.name}")
    if source.is_file():
        entries, templates = [(source, source.name)], []
    else:
        entries, templates = list(walk_files(source)), template_folders(source)
    vault = _Vault()
    found: list[_Source] = []
    for path, rel in entries:
        # A link, to a file or a folder, whatever its name, is read (refused) below like a
        # linked note: never taken for an attachment, never followed (docs/security.md).
        if not rel.lower().endswith(".md") and not path.is_symlink():
            vault.attachment_paths.add(rel)
            _keep_shortest(vault.attachments, rel.rsplit("/", 1)[-1].lower(), rel)
            continue
        imported.found += 1
        text, problem = read_text_file(path, rel)
        if problem is None and text is not None:
            problem = front_matter_hazard(text, rel)
        if problem is not None:
            imported.problems.append(problem)
            continue
        assert text is not None
        why = template_reason(rel, text, templates)
        if why:
            imported.skipped.append(Problem(rel, why, hazard=False))
            continue
        parsed = parse_text(text)
        if parsed.problem is not None:
            imported.problems.append(Problem(rel, parsed.problem.message, hazard=False,
                                             line=parsed.problem.line))
            imported.kept.add(record_key(imported.scope, rel))
            # Still a note of this vault (kept from the last import): links to it hold.
            _learn(vault, rel, {}, stable_id("markdown", project, rel))
            continue
        if not parsed.body.strip():
            imported.skipped.append(Problem(rel, "empty note (no text)", hazard=False))
            continue
        found.append(_Source(path, rel, text, parsed))
        if rel.rsplit("/", 1)[-1].lower() not in AGENT_FILES:
            _learn(vault, rel, parsed.meta, stable_id("markdown", project, rel))
    for item in found:
        if item.rel.rsplit("/", 1)[-1].lower() in AGENT_FILES:
            made, empty = section_notes(
                item.text, item.rel, project=project, scope=imported.scope,
                when=file_time(item.path), tag=file_tag(item.rel.rsplit("/", 1)[-1]))
            imported.notes.extend(made)
            imported.skipped.extend(empty)
            continue
        made = vault_note(item, project, imported.scope, vault)
        if isinstance(made, Problem):
            imported.problems.append(made)
            imported.kept.add(record_key(imported.scope, item.rel))
        else:
            imported.notes.append(made)
    for rel in sorted(vault.attachment_paths):
        users = vault.embedded_by.get(rel)
        imported.skipped.append(Problem(rel, "attachment: not imported (memctl keeps text)"
                                        + (f"; embedded by {', '.join(users[:3])}" if users else ""),
                                        hazard=False))
    raise_hazards(source, imported.problems)
    return imported


def template_folders(root: Path) -> list[str]:
    """The vault's templates folders, as Obsidian's Templates and the Templater plugin name
    them in `.obsidian/` (read through the path resolver: no link is followed)."""
    folders = []
    for rel, key in _TEMPLATE_SETTINGS:
        try:
            path = StoreFiles(root).resolve(rel)
        except MemctlError:
            continue
        if not path.is_file():
            continue
        text, problem = read_text_file(path, rel)
        try:
            value = json.loads(text or "") if problem is None else None
        except (ValueError, RecursionError):
            continue
        folder = value.get(key) if isinstance(value, dict) else None
        if isinstance(folder, str) and folder.strip("/ "):
            folders.append(folder.strip("/ "))
    return folders


def template_reason(rel: str, text: str, folders: list[str]) -> str | None:
    for folder in folders:
        if rel == folder or rel.startswith(folder + "/"):
            return "template (the vault's templates folder)"
    if any(part.lower() in _TEMPLATE_FOLDERS for part in rel.split("/")[:-1]) \
            and _PLACEHOLDER.search(text):
        return "template ({{…}} placeholders)"
    return None


def _learn(vault: _Vault, rel: str, meta: dict[str, Any], note_id: str) -> None:
    stem = rel[:-3].lower()
    vault.ids[rel] = note_id
    vault.by_path[stem] = rel
    _keep_shortest(vault.by_name, stem.rsplit("/", 1)[-1], rel)
    aliases = meta.get("aliases") or meta.get("alias")
    for alias in aliases if isinstance(aliases, list) else [aliases] if aliases else []:
        if isinstance(alias, str) and alias.strip():
            vault.by_alias.setdefault(alias.strip().lower(), rel)


def _resolve_note(vault: _Vault, target: str, from_rel: str) -> str | None:
    wanted = target.strip().replace("\\", "/").lower()
    wanted = wanted[:-3] if wanted.endswith(".md") else wanted
    nearby = posixpath.normpath(posixpath.join(posixpath.dirname(from_rel.lower()), wanted))
    for candidate in (nearby, wanted.lstrip("/")):
        if candidate in vault.by_path:
            return vault.by_path[candidate]
    named = vault.by_name.get(wanted.rsplit("/", 1)[-1])
    return named if named is not None else vault.by_alias.get(wanted)


def _resolve_attachment(vault: _Vault, target: str, from_rel: str) -> str | None:
    wanted = unquote(target.strip()).replace("\\", "/")
    nearby = posixpath.normpath(posixpath.join(posixpath.dirname(from_rel), wanted))
    for candidate in (nearby, wanted.lstrip("/")):
        if candidate in vault.attachment_paths:
            return candidate
    return vault.attachments.get(wanted.rsplit("/", 1)[-1].lower())


def _keep_shortest(by_name: dict[str, str], name: str, rel: str) -> None:
    """`rel` under `name` if it is the first of that name or has a shorter path (fewer
    folders, then first in order) than the one kept: the file Obsidian links to."""
    kept = by_name.get(name)
    if kept is None or (rel.count("/"), rel) < (kept.count("/"), kept):
        by_name[name] = rel


def references(body: str, rel: str, vault: _Vault) -> tuple[list[str], list[str], list[str]]:
    """(inline tags, ids of linked notes, embedded attachments) of a note's prose."""
    tags: list[str] = []
    links: list[str] = []
    attachments: list[str] = []
    for line in prose_lines(body):
        if "#" in line:
            for match in _TAG.finditer(line):
                tag = match.group(1).strip("/")
                if tag and not tag.replace("/", "").isdigit():
                    tags.append(tag)
        if "[" not in line:
            continue
        targets = [(m.group(1), m.group(2)) for m in _WIKILINK.finditer(line)]
        targets += [(m.group(1), unquote(m.group(2))) for m in _MDLINK.finditer(line)
                    if "://" not in m.group(2) and not m.group(2).startswith(("#", "mailto:"))]
        for _embed, target in targets:
            linked = _resolve_note(vault, target, rel)
            if linked is not None and linked != rel:
                links.append(vault.ids[linked])
                continue
            attachment = _resolve_attachment(vault, target, rel) if linked is None else None
            if attachment is not None:
                attachments.append(attachment)
                vault.embedded_by.setdefault(attachment, []).append(rel)
    return tags, list(dict.fromkeys(links)), list(dict.fromkeys(attachments))


def _first_time(meta: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = meta.get(name)
        if isinstance(value, str) and parse_time(value) is not None:
            return value.strip()
    return None


def vault_note(item: _Source, project: str, scope: str, vault: _Vault) -> BundleFile | Problem:
    """The note of one vault file: its text as it was, memctl's fields set by line edits."""
    meta, body, rel = item.parsed.meta, item.parsed.body, item.rel
    mtime = file_time(item.path)
    created = _first_time(meta, _CREATED) or mtime
    updated = _first_time(meta, _UPDATED) or mtime
    # An `updated` before `created` is made `created` with the other importers' notes
    # (common.consistent_dates), with a warning.
    raw_type = str(meta.get("type", "")).strip().lower()
    raw_status = str(meta.get("status", "")).strip().lower()
    status = raw_status if raw_status in _STATUSES else "active"
    note_type = raw_type if raw_type in NOTE_TYPES else "fact"
    try:
        importance: int | None = int(str(meta.get("importance", "")).strip())
    except ValueError:
        importance = None
    if importance is not None and not 1 <= importance <= 10:
        importance = None
    # A mapping is no list of tags: read as words, it became the tag `{'a': 'b'}`; nor is a
    # list holding one (`[{area: ops}, web]`), whose mapping was dropped without a word.
    given_tags = meta.get("tags")
    tags_taken = not isinstance(given_tags, dict) and not (
        isinstance(given_tags, list)
        and any(isinstance(tag, (dict, list)) for tag in given_tags))
    inline, links, attachments = references(body, rel, vault)
    folders = [part.lower().replace(" ", "-") for part in rel.split("/")[:-1] if part]
    note_id = vault.ids[rel]
    updates: dict[str, Any] = {
        "id": note_id, "type": note_type, "project": project, "importance": importance or 5,
        "tags": list(dict.fromkeys((parse_tags(meta.get("tags")) if tags_taken else [])
                                   + folders + inline)),
        "created": created, "updated": updated, "status": status, "source": "import",
        "imported_from": rel, "source_key": record_key(scope, rel),
        "links": links or None, "attachments": attachments or None,
    }
    has_heading = bool(title_of({}, body).strip()) and body.lstrip().startswith("#")
    title = str(meta["title"]).strip() if isinstance(meta.get("title"), str) and meta["title"].strip() else None
    if title is None and not has_heading:
        updates["title"] = rel.rsplit("/", 1)[-1][:-3]
    # The source's own value of a field memctl sets differently is kept, renamed.
    keep = [name for name in _SET_ALWAYS if name in meta and meta[name] != updates.get(name)]
    keep += [name for name, taken in (("type", raw_type in NOTE_TYPES),
                                      ("status", raw_status in _STATUSES),
                                      ("importance", importance is not None),
                                      ("created", _first_time(meta, ("created",)) is not None),
                                      ("updated", _first_time(meta, ("updated",)) is not None),
                                      ("expires", _first_time(meta, ("expires",)) is not None),
                                      ("pinned", parse_bool(meta.get("pinned", False)) is not None),
                                      ("tags", tags_taken))
             if name in meta and not taken]
    text = item.text
    for name in keep:
        renamed = rename_field(text, name, _free_name(meta, f"original_{name}"))
        if renamed == text:
            return Problem(rel, f"its field {name!r} cannot be kept as `original_{name}`",
                           hazard=False)
        text = renamed
    try:
        text = set_fields(text, updates if item.parsed.has_front_matter else ordered_meta(updates))
        text = seal_import(text)
    except ValueError as exc:
        return Problem(rel, str(exc), hazard=False)
    shown = title or updates.get("title") or title_of({}, body)
    return BundleFile(note_path(project, note_type, status, str(shown), note_id),
                      text.encode("utf-8"), updated, ())


def _free_name(meta: dict[str, Any], wanted: str) -> str:
    name = wanted
    while name in meta:
        name += "_"
    return name
