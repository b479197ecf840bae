"""L2 project memory: `<project>/MEMORY.md`, the constraints, decisions, progress and lessons
an agent reads whole at the start of every session.

Shared by the CLI and the MCP server. Each write takes the store lock, writes atomically and
makes one commit. A missing file is created from the `MEMORY.md` template on first write.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memctl.core import arguments, sections
from memctl.core.clock import now
from memctl.core.errors import CLI, Front, MemctlError, UsageError, cmd
from memctl.core.secrets import added_secrets, masked_title, refuse_secrets
from memctl.core.textfile import decode_file
from memctl.core.vocab import MAX_NOTE_BYTES
from memctl.disk.atomic import atomic_write_bytes, make_dirs
from memctl.disk.layout import MEMORY_FILE
from memctl.disk.templates import fill, load_template
from memctl.memory.editor import edited_copy, editor_command, read_edited, run_editor
from memctl.store import Store

TEMPLATE_NAME = "MEMORY.md"


@dataclass
class MemoryView:
    project: str
    path: str  # relative to the store
    text: str | None  # None when the file does not exist yet
    size: int  # bytes (UTF-8)
    max_bytes: int
    changed: bool = False
    section: str | None = None
    item: str | None = None

    @property
    def over_budget(self) -> bool:
        return self.size > self.max_bytes

    def warning(self, wording: Front = CLI) -> str | None:
        """The over-budget warning, in the words of one front end."""
        if not self.over_budget:
            return None
        return wording.render(
            f"{self.path} is {self.size / 1024:.1f} KB, over the {self.max_bytes / 1024:.0f} KB "
            "budget; distil it (merge old items, move details into notes) with "
            f"{cmd('project edit')} or {cmd('project replace')}"
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "project": self.project,
            "path": self.path,
            "exists": self.text is not None,
            "text": self.text,
            "size": self.size,
            "max_bytes": self.max_bytes,
            "over_budget": self.over_budget,
        }
        if self.section is not None:
            data["section"] = self.section
            data["item"] = self.item
        data["changed"] = self.changed
        return data


def check_secrets(text: str, allow: bool = False) -> None:
    refuse_secrets(text, allow)


def memory_relpath(project: str) -> str:
    return f"{_project(project)}/{MEMORY_FILE}"


def _project(project: str) -> str:
    return arguments.scope_name(project)


def max_bytes(store: Store) -> int:
    return int(store.settings.get("memory.max_bytes"))


def read_memory(store: Store, project: str) -> str | None:
    relpath = memory_relpath(project)
    if not store.resolve(relpath).exists():  # a link is refused, never followed
        return None
    return store.read_text(relpath)[0]


def _view(store: Store, project: str, text: str | None, budget: int | None = None,
          **extra: Any) -> MemoryView:
    """`budget`: the settings' `memory.max_bytes`, read before a write (settings that do not
    parse then stop the write, not its report once it is committed)."""
    size = len(text.encode("utf-8")) if text is not None else 0
    return MemoryView(project, memory_relpath(project), text, size,
                      max_bytes(store) if budget is None else budget, **extra)


def show(store: Store, project: str) -> MemoryView:
    return _view(store, project, read_memory(store, project))


def template_text(store: Store, project: str) -> str:
    return fill(load_template(store, TEMPLATE_NAME), TEMPLATE_NAME, project=project)


def section_text(store: Store, project: str, section: str) -> str | None:
    """The text under one section's heading, or None when the file or section is missing.
    A file with two sections of that name (two `## Decisions`, a merge or a hand can make
    them) gives both, the second under its own heading: only the first was shown."""
    key = sections.section_key(section)
    text = read_memory(store, project)
    if text is None:
        return None
    found = [part for part in sections.parse_sections(text, sections.L2_ALIASES)
             if part.key == key]
    if not found:
        return None
    # A section of that name inside one already given (`### Decisions` under `## Decisions`)
    # is in its text: given again, it was shown twice.
    kept = [found[0]]
    for part in found[1:]:
        if part.start >= kept[-1].end:
            kept.append(part)
    first, *others = kept
    return "".join([text[first.body_start:first.end],
                    *(text[other.start:other.end] for other in others)])


def add_item(
    store: Store,
    project: str,
    section: str,
    item: str,
    moment: datetime | None = None,
    allow_secret: bool = False,
) -> MemoryView:
    """Append `- [11-30] item` to a section; the rest of the file stays byte for byte."""
    key = sections.section_key(section)
    if "\x00" in item:
        raise UsageError("the text contains NUL bytes")
    if not item.strip():
        raise UsageError("the text is empty")
    arguments.within_text_size(item, "the item")
    check_secrets(item, allow_secret)
    moment = moment or now()
    relpath = memory_relpath(project)
    budget = max_bytes(store)
    with store.lock("project add"):
        current = read_memory(store, project)
        base = current if current is not None else template_text(store, project)
        updated = sections.append_dated_item(base, key, item, moment)
        # The file at most as large as `replace` takes it: items added one by one passed it.
        arguments.file_within_size(updated, base, "MEMORY.md with this item",
                                   f"make room first ({cmd('project replace')} or "
                                   f"{cmd('project edit')})")
        store.write_text(relpath, updated)
        first_line = item.strip().splitlines()[0]
        store.commit(f"project {project}: add to {key}: {masked_title(first_line)}", [relpath])
    line = sections.format_item(item, sections.day_stamp(moment))[0]
    return _view(store, project, updated, budget, changed=True, section=key, item=line)


def replace(store: Store, project: str, text: str, allow_secret: bool = False) -> MemoryView:
    """Replace the whole file (the milestone rewrite that distils it), exactly as given."""
    if "\x00" in text:
        raise UsageError("the new MEMORY.md contains NUL bytes; it must be text")
    if not text.strip():
        raise UsageError(
            "the new MEMORY.md is empty; refusing to wipe the project memory: to remove "
            f"items, give the whole text without them ({cmd('project edit')})"
        )
    arguments.within_text_size(text, "the new MEMORY.md")
    check_secrets(text, allow_secret)
    relpath = memory_relpath(project)
    budget = max_bytes(store)
    with store.lock("project replace"):
        current = read_memory(store, project)
        if current == text:
            return _view(store, project, current, budget)
        store.write_text(relpath, text)
        store.commit(f"project {project}: rewrite MEMORY.md", [relpath])
    return _view(store, project, text, budget, changed=True)


def ensure_exists(store: Store, project: str) -> tuple[str, bool]:
    """Create MEMORY.md from the template when missing. Returns (relpath, created)."""
    relpath = memory_relpath(project)
    with store.lock("project create"):
        if store.resolve(relpath).exists():
            return relpath, False
        store.write_text(relpath, template_text(store, project))
        store.commit(f"project {project}: create MEMORY.md", [relpath])
    return relpath, True


def edit(store: Store, project: str, editor: str | None = None) -> MemoryView:
    """Open a copy of MEMORY.md (created from the template first) in $EDITOR, and save and
    commit what the editor left in it.

    The copy is `.memctl/edit/PROJECT.MEMORY.md` (`-2`, `-3`… beside a copy kept from an
    earlier edit): MEMORY.md itself is only written by memctl, under the store lock, so a
    `project add` made while the editor is open is never undone. What a write would refuse
    (not UTF-8 or NUL bytes, over 1 MB, a secret the edit adds), an editor that fails, and
    a MEMORY.md that changed meanwhile leave MEMORY.md as it is and the copy kept, named in
    the error: nothing typed is lost, nothing refused is committed."""
    budget = max_bytes(store)
    command = editor_command(editor)  # an unreadable $EDITOR before anything is made
    relpath = memory_relpath(project)
    # A MEMORY.md not there yet is written, from the template, only with what the editor
    # left: one commit for the command, none when the editor changed nothing or failed (a
    # commit of the template alone came first, and stayed).
    existed = store.resolve(relpath).exists()
    before = store.read_text(relpath)[0] if existed else template_text(store, project)
    original = before.encode("utf-8")
    copy = edited_copy(store.state_dir / "edit", f"{project}.{MEMORY_FILE}", original)
    try:
        returncode = run_editor(command, copy, "MEMORY.md is unchanged")
    except MemctlError:
        copy.unlink(missing_ok=True)  # nothing was typed
        raise
    with store.lock("project edit"):
        data = None
        problem = f"editor exited with {returncode}" if returncode else None
        if problem is None:
            try:
                data = read_edited(copy, MAX_NOTE_BYTES)
            except MemctlError as exc:
                problem = str(exc)
        if data is not None:
            problem = _edit_problem(before, data)
        if problem is None:
            problem = _changed_meanwhile(store, relpath, before if existed else None)
        if problem is not None:
            raise MemctlError(f"{problem}; {_kept(copy, original, project)}")
        after = decode_file(data)  # checked by `_edit_problem`
        assert isinstance(after, str) and data is not None
        if after != before:
            if not existed:
                make_dirs(store.resolve(relpath).parent)
            atomic_write_bytes(store.resolve(relpath), data)
            store.commit(f"project {project}: {'edit' if existed else 'create'} MEMORY.md",
                         [relpath])
    copy.unlink(missing_ok=True)
    return _view(store, project, after, budget, changed=after != before)


def _changed_meanwhile(store: Store, relpath: str, before: str | None) -> str | None:
    """Why MEMORY.md as it is now must not be saved over, or None when it is as the editor
    found it (`before`; None: not there). Removed, replaced by a link or made unreadable
    meanwhile is a change too: the error then still names the kept copy."""
    if before is None:
        if os.path.lexists(store.resolve(relpath)):
            return ("MEMORY.md was made while you edited it (another command, or a sync); "
                    "nothing was saved over it")
        return None
    try:
        now = store.read_text(relpath)[0]
    except MemctlError as exc:
        return f"MEMORY.md cannot be read now ({exc}); nothing was saved"
    if now != before:
        return ("MEMORY.md changed while you edited it (another command, or a sync); "
                "nothing was saved over it")
    return None


def _edit_problem(before: str, data: bytes) -> str | None:
    """Why the edited MEMORY.md cannot be saved: the write paths' own checks (text, size,
    the secret guard for what the edit adds, as `memctl edit` does), or None."""
    if len(data) > MAX_NOTE_BYTES:
        return f"the edited MEMORY.md is larger than {MAX_NOTE_BYTES // 1024} KB"
    after = decode_file(data)
    if not isinstance(after, str):
        line, message = after
        return f"the edited MEMORY.md, line {line}: {message}"
    added = added_secrets(before, after)
    if added:
        shown = ", ".join(f"{f.kind} {f.masked} (line {f.line})" for f in added[:3])
        return (f"the edit adds what looks like a secret: {shown}; the store is synced "
                "through git, so it was not saved")
    return None


def _kept(copy: Path, original: bytes, project: str) -> str:
    """What the error says of the editor's copy: dropped when it holds nothing new, else
    kept and named, with the command that saves it once fixed."""
    try:
        unchanged = read_edited(copy, len(original)) == original
    except MemctlError:
        unchanged = False
    if unchanged:
        copy.unlink(missing_ok=True)
        return "MEMORY.md is unchanged"
    return (f"MEMORY.md is unchanged, and your edit is kept in {copy}: fix it there, then "
            f"{cmd(f'project replace {copy} -p {project}')}")


