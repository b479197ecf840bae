"""Conflict copies: the versions that lost a merge, kept under `.conflicts/` until a person
decides. `keep` makes the copy the current version again (stamped now, so it wins the next
merge everywhere); `drop` deletes the copy. Either is one commit, and git history keeps both."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memctl.core import arguments
from memctl.core.clock import now
from memctl.core.errors import MemctlError, UsageError, quoted
from memctl.core.merge import CONFLICT_DIR, conflict_source
from memctl.core.note import monotonic_stamp, stamp, title_of
from memctl.core.noteformat import parse_text
from memctl.disk import gitops
from memctl.disk.atomic import atomic_write_bytes
from memctl.disk.layout import TOMBSTONE_DIR
from memctl.exchange.bundle import entry_for, kept_local
from memctl.store import Store


@dataclass
class ConflictCopy:
    number: int
    path: str  # of the copy
    original: str  # where the losing version lived
    note_id: str | None
    current: str | None  # where the winning version lives now (None: deleted)
    updated: str | None
    title: str

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "path": self.path, "original": self.original,
                "id": self.note_id, "current": self.current, "updated": self.updated,
                "title": self.title}


def list_conflicts(store: Store) -> list[ConflictCopy]:
    root = Path(store.root)
    folder = root / CONFLICT_DIR
    if not folder.is_dir():
        return []
    copies = []
    paths = sorted(p.relative_to(root).as_posix() for p in folder.rglob("*")
                   if p.is_file() and not p.is_symlink() and not p.name.startswith("."))
    for number, path in enumerate(paths, 1):
        data = (root / path).read_bytes()
        original = conflict_source(path)
        entry = entry_for(original, data)
        text = data.decode("utf-8", "replace")
        parsed = parse_text(text)
        note_id = entry.note_id
        current = _current_path(store, note_id) if note_id else (original if (root / original).is_file() else None)
        copies.append(ConflictCopy(number, path, original, note_id, current, entry.updated,
                                   title_of(parsed.meta, parsed.body)[:80]))
    return copies


def _current_path(store: Store, note_id: str) -> str | None:
    try:
        note = store.find_note(note_id)
    except MemctlError:
        return None
    return note.path if note.id == note_id else None


def find_copy(store: Store, ref: str) -> ConflictCopy:
    copies = list_conflicts(store)
    if not copies:
        raise MemctlError("there are no conflict copies")
    ref = ref.strip()
    number = arguments.as_number(ref)
    if number is not None and 1 <= number <= len(copies):
        return copies[number - 1]
    matches = [c for c in copies if c.path == ref or c.path == f"{CONFLICT_DIR}/{ref}"]
    if not matches and ref:
        matches = [c for c in copies if c.note_id and c.note_id.startswith(ref.lower())]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise MemctlError(f"{ref!r} matches {len(matches)} conflict copies; use the number or path "
                          "from `memctl conflicts`")
    raise MemctlError(f"no conflict copy {ref!r}; `memctl conflicts` lists them")


def diff_copy(store: Store, ref: str) -> tuple[ConflictCopy, str]:
    """The copy and a unified diff from the current (winning) version to the copy (the
    losing one); "" when they do not differ. A deleted current version diffs as empty."""
    copy = find_copy(store, ref)
    losing = store.resolve(copy.path).read_bytes().decode("utf-8", "replace")
    current_path = store.resolve(copy.current) if copy.current else None
    winning = current_path.read_bytes().decode("utf-8", "replace") \
        if current_path is not None and current_path.is_file() else ""
    return copy, unified_diff(winning, losing, copy.current or "/dev/null", copy.path)


# Beyond this many differing lines a side, the diff shows the differing part as removed and
# added whole: difflib's matcher can cost the product of the two sides' lines on hostile text.
MAX_MATCHED_LINES = 1000


def unified_diff(old: str, new: str, old_name: str, new_name: str, context: int = 3) -> str:
    """A unified diff of two texts, linear in their size past MAX_MATCHED_LINES."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if a == b:
        return ""
    for lines in (a, b):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    first = max(0, start - context)
    a_stop, b_stop = len(a) - max(0, end - context), len(b) - max(0, end - context)
    head = f"--- {old_name}\n+++ {new_name}\n"
    if max(len(a), len(b)) - start - end <= MAX_MATCHED_LINES:
        # difflib's matcher on the differing part alone, between the shared start and end:
        # on the whole texts its cost grew with the lines the two share, quadratic in a long
        # shared start of repeated lines (tests/test_linear_time.py). The shared lines are
        # matched as they are, so each hunk has its full context (tests/test_rough_edges.py).
        middle = difflib.SequenceMatcher(None, a[start:len(a) - end], b[start:len(b) - end])
        codes = [("equal", 0, start, 0, start)]
        codes += [(tag, a_from + start, a_to + start, b_from + start, b_to + start)
                  for tag, a_from, a_to, b_from, b_to in middle.get_opcodes()]
        codes.append(("equal", len(a) - end, len(a), len(b) - end, len(b)))
        return head + _hunks(a, b, _grouped(codes, context))
    hunk = (f"@@ -{_span(first, a_stop)} +{_span(first, b_stop)} @@\n"
            + "".join(" " + line for line in a[first:start])
            + "".join("-" + line for line in a[start:len(a) - end])
            + "".join("+" + line for line in b[start:len(b) - end])
            + "".join(" " + line for line in a[len(a) - end:a_stop]))
    return head + hunk


def _grouped(codes: list[tuple[str, int, int, int, int]],
             context: int) -> list[list[tuple[str, int, int, int, int]]]:
    """The opcodes (difflib's: tag, a from, a to, b from, b to) in hunks as
    `SequenceMatcher.get_grouped_opcodes` makes them: each change with `context` equal lines
    around it, and changes closer than twice that in one hunk."""
    merged: list[tuple[str, int, int, int, int]] = []
    for code in codes:
        if code[1] == code[2] and code[3] == code[4]:
            continue  # nothing on either side (an empty shared start or end)
        if merged and code[0] == "equal" == merged[-1][0]:
            merged[-1] = ("equal", merged[-1][1], code[2], merged[-1][3], code[4])
        else:
            merged.append(code)
    groups: list[list[tuple[str, int, int, int, int]]] = []
    group: list[tuple[str, int, int, int, int]] = []
    for position, (tag, a_from, a_to, b_from, b_to) in enumerate(merged):
        if tag == "equal":
            if position == 0:  # before the first change: its last lines only
                a_from, b_from = max(a_from, a_to - context), max(b_from, b_to - context)
            elif position == len(merged) - 1:  # after the last: its first lines only
                a_to, b_to = min(a_to, a_from + context), min(b_to, b_from + context)
            elif a_to - a_from > 2 * context:  # between two changes, far apart: two hunks
                group.append((tag, a_from, a_from + context, b_from, b_from + context))
                groups.append(group)
                group = []
                a_from, b_from = a_to - context, b_to - context
        group.append((tag, a_from, a_to, b_from, b_to))
    if any(code[0] != "equal" for code in group):
        groups.append(group)
    return groups


def _hunks(a: list[str], b: list[str],
           groups: list[list[tuple[str, int, int, int, int]]]) -> str:
    """The hunks of `groups` (`_grouped`) as `difflib.unified_diff` writes them."""
    out: list[str] = []
    for group in groups:
        out.append(f"@@ -{_range(group[0][1], group[-1][2])} "
                   f"+{_range(group[0][3], group[-1][4])} @@\n")
        for tag, a_from, a_to, b_from, b_to in group:
            if tag == "equal":
                out.extend(" " + line for line in a[a_from:a_to])
                continue
            if tag in ("replace", "delete"):
                out.extend("-" + line for line in a[a_from:a_to])
            if tag in ("replace", "insert"):
                out.extend("+" + line for line in b[b_from:b_to])
    return "".join(out)


def _range(start: int, stop: int) -> str:
    """A hunk's range as difflib writes it: `5` for one line, `4,0` for none, else `5,3`."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _span(first: int, stop: int) -> str:
    length = stop - first
    return f"{first + 1 if length else first},{length}"


def _refuse_uncommitted(store: Store, target: str, copy: ConflictCopy) -> None:
    """Keeping a copy puts it in the place of the current version: a hand edit of that
    version made since its last commit is in no version git keeps, and was lost without a
    word (docs/sync.md, "nothing lost"). The keep is refused until it is committed or undone."""
    try:
        current = store.resolve(target).read_bytes()
    except FileNotFoundError:
        return
    if not gitops.committed_as(store.root, target, current):
        raise MemctlError(
            f"{target} has changes made since its last commit, which keeping the copy would "
            f"replace; nothing was changed: commit them (git -C {store.root} add -- {target}, "
            f"then git -C {store.root} commit -m 'hand edit' -- {target}) or move the file "
            f"aside, then `memctl conflicts keep {copy.number}` again")


def _after_replaced(store: Store, paths: list[str]) -> datetime:
    """The time a kept copy is stamped with: now, or 1 ms after the version it replaces (the
    current note's `updated`, its tombstone's `deleted`) when that is later, as every edit
    memctl makes (`monotonic_stamp`; docs/sync.md: "memctl's stamps never go backwards").
    Stamped with this clock alone, a keep on a machine whose clock is behind dated the
    person's decision before the version it replaced."""
    moment = now()
    for path in paths:
        try:
            meta = parse_text(store.resolve(path).read_text(encoding="utf-8")).meta
        except (OSError, UnicodeDecodeError):
            continue
        for name in ("updated", "deleted"):
            value = meta.get(name)
            if isinstance(value, str):
                moment = monotonic_stamp(moment, value)
    return moment


def resolve(store: Store, ref: str, action: str) -> ConflictCopy:
    """`keep` the copy as the current version, or `drop` it."""
    if action not in ("keep", "drop"):
        raise UsageError(f"invalid action {quoted(action)} (keep or drop)")
    copy = find_copy(store, ref)
    if action == "keep" and kept_local(copy.path):
        # No merge makes one (settings and templates are never merged): a copy here came from
        # elsewhere (an older memctl's import, a hand-dropped file), and keeping it would
        # install another store's settings or template (docs/security.md).
        raise MemctlError(f"{copy.path} is a copy of {copy.original}, which memctl never takes "
                          f"from elsewhere; nothing was changed: compare it by hand "
                          f"(`memctl conflicts diff {copy.number}`), copy what you want into "
                          f"{copy.original} yourself, then `memctl conflicts drop {copy.number}`")
    with store.lock(f"conflicts {action}"):
        changed = [copy.path]
        if action == "keep":
            data = store.resolve(copy.path).read_bytes()
            target = copy.current or copy.original
            # Refused before anything changes: the note's tombstone (below) stayed deleted.
            _refuse_uncommitted(store, target, copy)
            if copy.note_id:
                tomb = f"{TOMBSTONE_DIR}/{copy.note_id}.md"
                try:
                    moment = _after_replaced(store, [target, tomb])
                    data = stamp(data.decode("utf-8"), {}, moment).encode("utf-8")
                except (MemctlError, UnicodeDecodeError):
                    pass  # kept as it is, byte for byte (a decode with "replace" changed it)
                if store.resolve(tomb).exists():
                    store.resolve(tomb).unlink()
                    changed.append(tomb)

            atomic_write_bytes(store.resolve(target), data)
            changed.append(target)
        store.resolve(copy.path).unlink()
        what = copy.note_id or copy.original
        verb = "keep the conflict copy of" if action == "keep" else "drop the conflict copy of"
        store.commit(f"conflicts: {verb} {what}", changed)
    return copy
