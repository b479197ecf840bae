"""A mem0 export (JSON): a list of memories, or an object holding one under `results`,
`memories` or `data`. Each memory becomes a `fact` note with the memory text as its body;
its categories become tags and its mem0 id decides the note id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memctl.core.clock import parse_time
from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.common import file_time, make_note, raise_hazards, read_text_file, stable_id


def _records(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("results", "memories", "data", "items"):
            if isinstance(value.get(key), list):
                return value[key]
    return None


def import_mem0(source: Path, project: str) -> tuple[list[BundleFile], list[Problem]]:
    text, problem = read_text_file(source, source.name)
    if problem is not None:
        return [], raise_hazards(source, [problem])
    assert text is not None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return [], [Problem(source.name, f"not JSON: {exc}", hazard=False)]
    records = _records(value)
    if records is None:
        return [], [Problem(source.name, "no list of memories found (expected a list, or "
                                         "`results`/`memories` holding one)", hazard=False)]
    fallback = file_time(source)
    files: list[BundleFile] = []
    problems: list[Problem] = []
    for number, record in enumerate(records):
        label = f"{source.name}[{number}]"
        if not isinstance(record, dict):
            problems.append(Problem(label, "a memory must be an object", hazard=False))
            continue
        memory = record.get("memory") or record.get("text") or record.get("content")
        if not isinstance(memory, str) or not memory.strip():
            problems.append(Problem(label, "no memory text", hazard=False))
            continue
        identity = str(record.get("id") or record.get("hash") or memory)
        created = _time(record.get("created_at"), parse_time) or fallback
        updated = _time(record.get("updated_at"), parse_time) or created
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        categories = record.get("categories") or metadata.get("categories") or []
        tags = ["mem0"] + [str(c) for c in categories if isinstance(c, (str, int))] \
            if isinstance(categories, list) else ["mem0"]
        note_type = str(metadata.get("type") or "fact").lower()
        extra: dict[str, Any] = {"mem0_id": str(record["id"]) if record.get("id") else None}
        for key in ("user_id", "agent_id", "run_id"):
            if isinstance(record.get(key), (str, int)):
                extra[f"mem0_{key}"] = str(record[key])
        files.append(make_note(
            project=project, note_id=stable_id("mem0", project, identity),
            body=memory.strip() + "\n", note_type=note_type, tags=tags,
            created=created, updated=updated, extra=extra,
        ))
    return files, raise_hazards(source, problems)


def _time(value: Any, parse_time: Any) -> str | None:
    if isinstance(value, str) and parse_time(value) is not None:
        return value.strip()
    return None
