"""A Cline-style `memory-bank/` folder: projectbrief.md, productContext.md,
activeContext.md, systemPatterns.md, techContext.md, progress.md and any other Markdown file
in it, mapped onto memctl's own files by the headings of their sections:

| section heading says | goes to |
|---|---|
| current focus / current work | `SCRATCHPAD.md` Focus |
| next steps, what's left (to build), todo | `SCRATCHPAD.md` Next steps |
| open questions | `SCRATCHPAD.md` Open questions |
| progress, what works, (current) status, recent changes | `MEMORY.md` Progress |
| decisions (active, key technical, evolution of) | `MEMORY.md` Decisions |
| constraints, limitations | `MEMORY.md` Constraints |
| known issues, lessons, learnings, insights | `MEMORY.md` Lessons |

The rest of each file becomes one note, typed by the file: projectbrief, productContext and
techContext are `fact`s, systemPatterns a `decision`. Claude Code's auto-memory (claudemem.py)
maps its `MEMORY.md` the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

from memctl.core import sections
from memctl.exchange.bundle import Problem
from memctl.exchange.importers.agents import split_sections
from memctl.exchange.importers.common import (
    Block,
    Imported,
    file_time,
    has_text,
    make_note,
    raise_hazards,
    read_text_file,
    record_key,
    stable_id,
    walk_markdown,
)

_KINDS = {
    "projectbrief": ("fact", 8),
    "productcontext": ("fact", 7),
    "activecontext": ("fact", 6),
    "systempatterns": ("decision", 7),
    "techcontext": ("fact", 7),
    "progress": ("fact", 6),
}
# (file, section) a heading is mapped to, by words it contains; the first match wins.
_TARGETS = (
    (("scratchpad", "focus"), ("current focus", "current work", "work focus", "current task",
                               "working on", "当前焦点", "当前任务")),
    (("scratchpad", "next"), ("next step", "what's left", "whats left", "left to build",
                              "todo", "to do", "remaining work", "下一步", "待办")),
    (("scratchpad", "questions"), ("open question", "questions", "unknowns", "待解决问题")),
    (("memory", "progress"), ("progress", "what works", "current status", "status",
                              "recent changes", "milestone", "进度")),
    (("memory", "decisions"), ("decision", "决策")),
    (("memory", "constraints"), ("constraint", "limitation", "约束")),
    (("memory", "lessons"), ("known issue", "lesson", "learning", "insight", "pitfall",
                             "gotcha", "教训")),
)
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def target_of(heading: str) -> tuple[str, str] | None:
    lowered = heading.lower().replace("’", "'")
    for target, words in _TARGETS:
        if any(word in lowered for word in words):
            return target
    return None


def items_of(body: str) -> list[str]:
    """A section's text (heading line excluded) as list-item lines: each list item with its
    indented continuation lines, each paragraph as one item, a sub-heading as the prefix of
    the items under it, code blocks kept as continuation lines."""
    items: list[list[str]] = []
    # The words of each item's first line (a paragraph's lines join it), joined once at the
    # end: adding to a string in a list copies it, and a long paragraph took quadratic time.
    heads: list[list[str]] = []
    prefix = ""
    current: list[str] | None = None
    paragraph = False  # the current item is a paragraph: its next line joins it
    fence: str | None = None

    def add(part: str) -> None:
        nonlocal current
        if current is None:
            current = [prefix + part.strip()]
            items.append(current)
            heads.append([current[0]])
        else:
            current.append(part.rstrip())

    for line in body.splitlines():
        stripped = line.strip()
        opened = _FENCE.match(line)
        if fence is not None:
            add(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not stripped.lstrip(fence[0]):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            add(line)
            paragraph = False
            continue
        if not stripped or (stripped.startswith("<!--") and stripped.endswith("-->")):
            if paragraph:
                current, paragraph = None, False
            continue
        found = sections.heading(line)
        if found is not None:
            prefix = f"{found[1]}: " if found[1] else ""
            current, paragraph = None, False
            continue
        listed = _LIST_ITEM.match(line)
        if listed:
            current = None
            add(listed.group(1))
            paragraph = False
        elif current is not None and paragraph:
            heads[-1].append(stripped)  # (current is the last item)
        elif current is not None and line[:1] in " \t":
            current.append(stripped)
        else:
            current = None
            add(stripped)
            paragraph = True
    lines: list[str] = []
    for item, head in zip(items, heads, strict=True):
        lines.append(f"- {' '.join(head)}")
        lines.extend(f"  {part}" for part in item[1:])
    return lines


def focus_lines(body: str) -> list[str]:
    """The Focus paragraph: the section's lines as written, blank and comment lines left out,
    each made `sections.inert`: a sub-heading or a fence of the source's section never cuts
    the scratchpad's Focus (docs/format.md, "Text inside a section")."""
    return [sections.inert(line.rstrip()) for line in body.splitlines()
            if line.strip() and not (line.strip().startswith("<!--") and line.strip().endswith("-->"))]


def map_sections(text: str, rel: str, scope: str) -> tuple[list[Block], str]:
    """The blocks the mapped sections of a file give, and the text of the rest (preamble
    included), to be kept as a note when it holds more than headings."""
    blocks: list[Block] = []
    rest: list[str] = []
    seen: dict[str, int] = {}
    for heading, body in split_sections(text):
        target = target_of(heading) if heading else None
        if target is None:
            rest.append(body.strip("\n") + "\n")
            continue
        seen[heading] = seen.get(heading, 0) + 1
        inner = body.split("\n", 1)[1] if "\n" in body else ""
        lines = focus_lines(inner) if target == ("scratchpad", "focus") else items_of(inner)
        if lines:
            blocks.append(Block(target[0], target[1], record_key(scope, rel, f"{heading}#{seen[heading]}"),
                                tuple(lines)))
    return blocks, "\n".join(rest)


def import_cline(source: Path, project: str) -> Imported:
    folder = source / "memory-bank" if (source / "memory-bank").is_dir() else source
    imported = Imported(scope=f"cline:{folder.name}")
    for path, rel in walk_markdown(folder):
        imported.found += 1
        text, problem = read_text_file(path, rel)
        if problem is not None:
            imported.problems.append(problem)
            continue
        assert text is not None
        if not text.strip():
            imported.skipped.append(Problem(rel, "empty file", hazard=False))
            continue
        blocks, rest = map_sections(text, rel, imported.scope)
        imported.blocks.extend(blocks)
        if not has_text(rest):
            continue
        stem = rel.rsplit("/", 1)[-1][:-3]
        note_type, importance = _KINDS.get(stem.lower(), ("fact", 5))
        body = rest if rest.lstrip().startswith("#") else f"# {stem}\n\n{rest}"
        when = file_time(path)
        imported.notes.append(make_note(
            project=project, note_id=stable_id("cline", project, rel), body=body,
            note_type=note_type, tags=["cline", stem], created=when, updated=when,
            importance=importance, source_key=record_key(imported.scope, rel),
            extra={"imported_from": f"{folder.name}/{rel}"},
        ))
    raise_hazards(source, imported.problems)
    return imported
