"""`CLAUDE.md` / `AGENTS.md`: the instructions file of a coding agent.

Each `##` section (or `#` section when the file has no `##`) becomes one note holding the
section's text as written, heading included; text before the first heading becomes a note of
its own. The heading decides the type: rules and conventions become `rule`, commands and
workflows `skill`, pitfalls and gotchas `error`, architecture and decisions `decision`,
preferences `preference`, anything else `fact`.
"""

from __future__ import annotations

import re
from pathlib import Path

from memctl.exchange.bundle import BundleFile, Problem
from memctl.exchange.importers.common import file_time, make_note, raise_hazards, read_text_file, stable_id

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
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


def guess_type(heading: str) -> str:
    lowered = heading.lower()
    for note_type, words in _TYPES:
        if any(word in lowered for word in words):
            return note_type
    return "fact"


def split_sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) per top section, fenced code blocks respected."""
    lines = text.splitlines(keepends=True)
    headings: list[tuple[int, int, str]] = []
    fenced = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line.rstrip("\r\n"))
        if match:
            headings.append((number, len(match.group(1)), match.group(2).strip()))
    levels = sorted({level for _, level, _ in headings})
    split_level = 2 if 2 in levels else (levels[0] if levels else 0)
    cuts = [(n, title) for n, level, title in headings if level == split_level]
    sections: list[tuple[str, str]] = []
    start = cuts[0][0] if cuts else len(lines)
    preamble = "".join(lines[:start])
    if preamble.strip():
        sections.append(("", preamble))
    for index, (line_number, title) in enumerate(cuts):
        end = cuts[index + 1][0] if index + 1 < len(cuts) else len(lines)
        body = "".join(lines[line_number:end])
        if body.strip():
            sections.append((title, body))
    return sections


def import_agents_md(source: Path, project: str) -> tuple[list[BundleFile], list[Problem]]:
    text, problem = read_text_file(source, source.name)
    if problem is not None:
        return [], raise_hazards(source, [problem])
    assert text is not None
    origin = source.name
    tag = origin.lower().replace(".", "-")
    when = file_time(source)
    files = []
    seen: dict[str, int] = {}
    for heading, body in split_sections(text):
        name = heading or "(preamble)"
        seen[name] = seen.get(name, 0) + 1
        identity = f"{name}#{seen[name]}"
        note_type = guess_type(heading) if heading else "fact"
        files.append(make_note(
            project=project, note_id=stable_id("agents", project, origin, identity),
            body=body.strip("\n") + "\n", note_type=note_type, tags=[tag],
            created=when, updated=when, importance=7 if note_type == "rule" else 6,
            title=None if heading else f"{origin} (introduction)",
            extra={"imported_from": f"{origin}: {name}"},
        ))
    return files, []
