"""mem0 and OpenMemory exports.

Read:
- OpenMemory's export zip (its backup router writes `memories.json`, the database's rows:
  user, apps, categories, memories with `state` and `category_ids`; and `memories.jsonl.gz`,
  one memory per line with its app and category names), or those files unzipped in a folder,
  or either file alone;
- a mem0 JSON export: a list of memories, or an object holding one under `results`,
  `memories`, `data` or `items` (`memory`, `categories`, `metadata`, `created_at`, …).

Each memory becomes a note with the memory text as its body; its mem0 id decides the note id.
Categories (resolved from their ids) become tags; a memory in the `preferences` category, or
whose metadata says `type: preference`, is a `preference`, the others `fact`s. States map as:
`active` → active; `paused` (OpenMemory serves it to no app until resumed) and `archived` →
archived, with `mem0_state` saying which; `deleted` → not imported (listed as skipped), and a
note an earlier import made of it is retired like any record a source no longer has.

An export that holds one id twice loses nothing (docs/sync.md): the same text twice is one
memory (the second listed as skipped, naming the first); a different text is imported too,
under the id `ID#2` (`#3`, …), as a `CLAUDE.md` heading used twice is.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.clock import parse_time
from memctl.core.errors import quoted
from memctl.core.note import NOTE_TYPES
from memctl.core.textfile import BINARY
from memctl.exchange.bundle import DECOMPRESS_ERRORS, Problem, read_zip_members
from memctl.exchange.importers.common import (
    MAX_SOURCE_BYTES,
    OPENMEMORY_FILES,
    Imported,
    file_time,
    make_note,
    raise_hazards,
    read_text_file,
    record_key,
    stable_id,
    text_field,
)

_STATES = {"active": "active", "paused": "archived", "archived": "archived"}
_PREFERENCE_CATEGORIES = {"preferences", "preference"}
_TAG_JUNK = re.compile(r"[^\w]+")


@dataclass
class _Memory:
    label: str  # where it is in the export, for messages
    record: dict[str, Any]
    categories: list[str] = field(default_factory=list)
    app: str | None = None


def import_mem0(source: Path, project: str) -> Imported:
    parts, problems = _read_parts(source)
    raise_hazards(source, problems)
    warnings: list[Problem] = []
    memories, user, problems = _memories(parts, source.name, warnings)
    scope = f"mem0:{user}" if user else f"mem0:{source.name}"
    # A problem met while reading (not JSON, no list, an entry that is no memory, a list
    # field that is not one) leaves out memories that cannot be named: retire none.
    imported = Imported(scope=scope, problems=problems, warnings=warnings, whole=not problems)
    fallback = file_time(source)
    deleted = 0
    imported.found = len(memories)
    # identity -> {text: where it was first}: what each identity already stands for.
    taken: dict[str, dict[str, str]] = {}
    # identity -> the first number `identity#n` not yet looked at: each is looked at once
    # (counting up from the start again for every repeat was quadratic in the repeats).
    next_number: dict[str, int] = {}
    for item in memories:
        record = item.record
        memory = record.get("memory") or record.get("text") or record.get("content")
        mem0_id = _plain(record, "id", item.label, imported.warnings)
        identity = str(mem0_id or _plain(record, "hash", item.label, imported.warnings)
                       or memory)
        key = record_key(scope, identity)
        if not isinstance(memory, str) or not memory.strip():
            imported.problems.append(Problem(item.label, "no memory text", hazard=False))
            imported.kept.add(key)
            continue
        if "\x00" in memory:
            # Named at its record, as a memory with no text is (`--skip-invalid` skips it):
            # the note it would make was refused whole, at a file not written yet.
            imported.problems.append(Problem(item.label, BINARY, hazard=False))
            imported.kept.add(key)
            continue
        texts = taken.setdefault(identity, {})
        first = texts.get(memory.strip())
        if first is not None:
            imported.skipped.append(Problem(item.label, f"the same memory as {first} (same id, same "
                                            "text): imported once", hazard=False))
            continue
        texts[memory.strip()] = item.label
        if len(texts) > 1:  # the id again with another text: a memory of its own, numbered
            # Every number below `next_number` was taken when it was looked at, and still is.
            number = max(len(texts), next_number.get(identity, 0))
            while f"{identity}#{number}" in taken:
                number += 1
            next_number[identity] = number + 1
            identity = f"{identity}#{number}"
            taken[identity] = {memory.strip(): item.label}
            key = record_key(scope, identity)
        state = str(record.get("state") or "active").strip().lower()
        if state == "deleted":
            deleted += 1
            continue
        if state not in _STATES:
            imported.problems.append(Problem(item.label, f"unknown state {state!r}", hazard=False))
            imported.kept.add(key)
            continue
        created = _time(record, "created_at", item.label, imported.warnings) or fallback
        updated = _time(record, "updated_at", item.label, imported.warnings) or created
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        categories = item.categories or _names(record.get("categories")) \
            or _names(metadata.get("categories"))
        kind = str(metadata.get("type") or metadata.get("memory_type") or "").strip().lower()
        if kind not in NOTE_TYPES:
            kind = "preference" if {c.lower() for c in categories} & _PREFERENCE_CATEGORIES else "fact"
        extra: dict[str, Any] = {"mem0_id": mem0_id or None,
                                 "mem0_state": state if state != "active" else None,
                                 "mem0_app": item.app, "mem0_user_id": user}
        for name in ("user_id", "agent_id", "run_id"):
            if name == "user_id" and user:
                continue
            if isinstance(record.get(name), (str, int)):
                extra[f"mem0_{name}"] = str(record[name])
        imported.notes.append(make_note(
            project=project, note_id=stable_id("mem0", project, identity),
            body=memory.strip() + "\n", note_type=kind,
            tags=["mem0"] + [tag for tag in (_tag(c) for c in categories) if tag],
            created=created, updated=updated, source_key=key, status=_STATES[state],
            extra=extra,
        ))
    if deleted:
        imported.skipped.append(Problem(source.name, f"{deleted} deleted "
                                        f"memor{'y' if deleted == 1 else 'ies'}: not imported",
                                        hazard=False))
    return imported


# --- reading the export -----------------------------------------------------------------------


def _read_parts(source: Path) -> tuple[dict[str, bytes], list[Problem]]:
    """The export's parts by name (`memories.json`, `memories.jsonl.gz`, or the one JSON file
    given), read within the size limits; hazards as problems."""
    if source.is_dir():
        parts: dict[str, bytes] = {}
        problems: list[Problem] = []
        for name in OPENMEMORY_FILES:
            if (source / name).exists():
                data, problem = _read_bytes(source / name, name)
                if problem is not None:
                    problems.append(problem)
                elif data is not None:
                    parts[name] = data
        return parts, problems
    if zipfile.is_zipfile(source) and not source.name.lower().endswith((".json", ".jsonl")):
        raw, problems = read_zip_members(source)
        found: dict[str, bytes] = {}
        for name, data in sorted(raw.items()):
            base = name.rsplit("/", 1)[-1]
            if base in OPENMEMORY_FILES and base not in found:
                found[base] = data
        return found, problems
    data, problem = _read_bytes(source, source.name)
    if problem is not None or data is None:
        return {}, [problem] if problem else []
    name = "memories.jsonl.gz" if source.name.lower().endswith(".gz") else source.name
    return {name: data}, []


def _read_bytes(path: Path, shown: str) -> tuple[bytes | None, Problem | None]:
    if path.name.lower().endswith(".gz"):
        try:
            info = path.lstat()
        except OSError as exc:
            return None, Problem(shown, f"cannot be read: {exc.strerror}")
        if path.is_symlink():
            return None, Problem(shown, "a symbolic link")
        if info.st_size > MAX_SOURCE_BYTES:
            return None, Problem(shown, f"over the {MAX_SOURCE_BYTES // 2**20} MB size limit")
        return path.read_bytes(), None
    text, problem = read_text_file(path, shown)
    return (text.encode("utf-8") if text is not None else None), problem


def _gunzip(data: bytes, shown: str) -> tuple[str | None, Problem | None]:
    """Decompressed text, never more than the size limit whatever the header says."""
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            while chunk := handle.read(64 * 1024):
                out.write(chunk)
                if out.tell() > MAX_SOURCE_BYTES:
                    return None, Problem(shown, f"expands over the {MAX_SOURCE_BYTES // 2**20} MB "
                                                "size limit")
    except DECOMPRESS_ERRORS as exc:
        return None, Problem(shown, f"not a gzip file: {exc}", hazard=False)
    try:
        return out.getvalue().decode("utf-8"), None
    except UnicodeDecodeError:
        return None, Problem(shown, "not text: invalid UTF-8", hazard=False)


def _loads(text: str) -> Any:
    """`json.loads`, refusing a string that JSON escapes make no text of (a lone surrogate,
    `"\\ud800"`): such a memory could be written nowhere (ValueError, as bad JSON is)."""
    value = json.loads(text)
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone surrogate escape (\\ud800 … \\udfff), "
                         "which is no text") from None
    return value


def _memories(parts: dict[str, bytes], shown: str,
              warnings: list[Problem]) -> tuple[list[_Memory], str | None, list[Problem]]:
    """Every memory of the export, categories and app resolved; the user it belongs to.
    A category or app whose name is not text is named in `warnings`."""
    problems: list[Problem] = []
    # Every memory, in the export's order: one id twice is two entries here, and
    # `import_mem0` decides what they are (never a dict by id, which would drop one).
    memories: list[_Memory] = []
    first_of: dict[str, _Memory] = {}  # id -> its first memory, for the .jsonl.gz lines
    user: str | None = None
    lines: list[_Memory] = []
    gz = parts.get("memories.jsonl.gz")
    if gz is not None:
        text, problem = _gunzip(gz, "memories.jsonl.gz")
        if problem is not None:
            problems.append(problem)
        for number, line in enumerate((text or "").splitlines(), 1):
            if not line.strip():
                continue
            label = f"memories.jsonl.gz:{number}"
            try:
                record = _loads(line)
            except (ValueError, RecursionError) as exc:
                problems.append(Problem(label, f"not JSON: {exc}", hazard=False))
                continue
            if not isinstance(record, dict):
                problems.append(Problem(label, "a memory must be an object", hazard=False))
                continue
            lines.append(_Memory(label, record, _names(record.get("categories")),
                                 record.get("app") if isinstance(record.get("app"), str) else None))
    for name, data in parts.items():
        if name == "memories.jsonl.gz":
            continue
        text = data.decode("utf-8", "replace")
        if name.lower().endswith(".jsonl"):
            values: Any = []
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    values.append(_loads(line))
                except (ValueError, RecursionError) as exc:
                    problems.append(Problem(f"{name}:{number}", f"not JSON: {exc}", hazard=False))
        else:
            try:
                values = _loads(text)
            except (ValueError, RecursionError) as exc:
                problems.append(Problem(name, f"not JSON: {exc}", hazard=False))
                continue
        found, owner = _from_json(values, name, problems, warnings)
        user = user or owner
        for item in found:
            if item.record.get("id"):
                first_of.setdefault(str(item.record["id"]), item)
            memories.append(item)
    # OpenMemory writes each memory to memories.json and again to memories.jsonl.gz, which
    # adds its categories and app: a line with the id of a memories.json entry completes it.
    for item in lines:
        known = first_of.get(str(item.record.get("id"))) if item.record.get("id") else None
        if known is not None:
            known.categories = known.categories or item.categories
            known.app = known.app or item.app
        else:
            memories.append(item)
    if not memories and not problems:
        problems.append(Problem(shown, "no memories found (expected a list, `results`/`memories` "
                                       "holding one, or OpenMemory's memories.json)", hazard=False))
    return memories, user, problems


def _from_json(value: Any, name: str, problems: list[Problem],
               warnings: list[Problem]) -> tuple[list[_Memory], str | None]:
    if isinstance(value, dict) and isinstance(value.get("memories"), list) \
            and ("categories" in value or "user" in value or "export_meta" in value):
        return _openmemory(value, name, problems, warnings)
    records = value if isinstance(value, list) else None
    if isinstance(value, dict):
        for key in ("results", "memories", "data", "items"):
            if isinstance(value.get(key), list):
                records = value[key]
                break
    if records is None:
        problems.append(Problem(name, "no list of memories found (expected a list, or "
                                      "`results`/`memories` holding one)", hazard=False))
        return [], None
    found = []
    for number, record in enumerate(records):
        label = f"{name}[{number}]"
        if not isinstance(record, dict):
            problems.append(Problem(label, "a memory must be an object", hazard=False))
            continue
        found.append(_Memory(label, record, _names(record.get("categories"))))
    users = {str(r.record["user_id"]) for r in found if isinstance(r.record.get("user_id"), (str, int))}
    return found, (users.pop() if len(users) == 1 else None)


def _openmemory(value: dict[str, Any], name: str, problems: list[Problem],
                warnings: list[Problem]) -> tuple[list[_Memory], str | None]:
    """OpenMemory's `memories.json`: category ids resolved through `categories` (and the
    `memory_categories` rows), app ids through `apps`. A name that is not text is left out
    with a warning (its Python notation would become a tag or `mem0_app`)."""
    categories = _named(_listed(value, "categories", name, problems), "categories", name, warnings)
    apps = _named(_listed(value, "apps", name, problems), "apps", name, warnings)
    links: dict[str, list[str]] = {}
    for row in _listed(value, "memory_categories", name, problems) or []:
        if isinstance(row, dict):
            links.setdefault(str(row.get("memory_id")), []).append(str(row.get("category_id")))
    user = value.get("user") if isinstance(value.get("user"), dict) else {}
    found = []
    for number, record in enumerate(value["memories"]):
        label = f"{name}: memories[{number}]"
        if not isinstance(record, dict):
            problems.append(Problem(label, "a memory must be an object", hazard=False))
            continue
        own = _listed(record, "category_ids", label, problems)
        if own is None:
            continue
        ids = [str(i) for i in own] + links.get(str(record.get("id")), [])
        names = [categories[i] for i in dict.fromkeys(ids) if i in categories]
        found.append(_Memory(label, record, names, apps.get(str(record.get("app_id")))))
    owner = user.get("user_id")
    return found, str(owner) if isinstance(owner, (str, int)) and str(owner) else None


def _listed(container: dict[str, Any], key: str, label: str,
            problems: list[Problem]) -> list[Any] | None:
    """`container[key]` when it is a list, [] when it is missing or null; anything else (a
    number, an object, a string) is named as a problem of the import (refused unless
    --skip-invalid, tests/test_importers_sources.py) and gives None."""
    value = container.get(key)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    problems.append(Problem(label, f"`{key}` must be a list, not {type(value).__name__}",
                            hazard=False))
    return None


def _plain(record: dict[str, Any], key: str, label: str, warnings: list[Problem]) -> str | None:
    """An id as text: a string or a whole number (an empty or zero one is no id)."""
    if not record.get(key):
        return None
    return text_field(record, key, label, warnings, whole_numbers=True)


def _named(rows: list[Any] | None, key: str, label: str, warnings: list[Problem]) -> dict[str, str]:
    """{id: name} of OpenMemory's `categories` or `apps` rows that have a name."""
    found: dict[str, str] = {}
    for number, row in enumerate(rows or []):
        if not isinstance(row, dict) or not row.get("name"):
            continue
        named = text_field(row, "name", f"{label}: {key}[{number}]", warnings)
        if named is not None:
            found[str(row.get("id"))] = named
    return found


def _names(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(item) for item in value if isinstance(item, (str, int)) and str(item).strip()]


def _tag(category: str) -> str:
    """A category as a tag: `AI, ML & Technology` → `ai-ml-technology`."""
    return _TAG_JUNK.sub("-", category.strip().lower()).strip("-")


def _time(record: dict[str, Any], key: str, label: str, warnings: list[Problem]) -> str | None:
    """`record[key]` when it is a time memctl reads; one that is not (`"not a date"`, a
    number) is left out with a warning naming it, as any other value it cannot take (the
    note is then dated by the export's file, or by `created_at`)."""
    value = record.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str) and parse_time(value) is not None:
        return value.strip()
    warnings.append(Problem(label, f"`{key}` is not a time memctl reads ({quoted(str(value))}): "
                            "left out", hazard=False))
    return None

