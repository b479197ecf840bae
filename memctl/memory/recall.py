"""`memctl recall`: the compact block an agent reads at the start of a session.

L2 `MEMORY.md`, the scratchpad, then the notes that matter now — within a budget, because
context is the agent's scarcest resource. How the notes are chosen, in order:

1. only live notes of the project and `global` (never superseded, archived or expired),
   and never one whose file looks like it holds a secret (counted in `secrets_left_out`);
2. without a query: corrections, then rules, then the rest by importance and recency;
3. with a query: the notes it really matches first (search hits covering at least half of
   the query: corrections, then rules, then the others in search order), then only the notes
   that always come (corrections, rules, pinned, importance 8 and up): nothing rather than
   noise.
   A query that matches no note says so in the block;
4. at most `max_notes`, each cut to `note_chars` on a word (or, in Chinese, character)
   boundary.

When the whole block would pass `total_chars`, it is cut from the least valuable end:
notes are dropped lowest-ranked first down to three, then the scratchpad, then MEMORY.md
are shortened at a line boundary, then the last note is cut to the room left (at least
MIN_CUT_NOTE_CHARS) or goes, and so on. `truncated` says anything was cut.
Every note shown has its access counter bumped, and says when it was last written (its
`updated`, else `created`, as a date), which live corrections it has, and which notes of the
block it may contradict (the comparison `health` makes, among the block's notes only).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memctl.core import arguments
from memctl.core.clock import now, parse_time
from memctl.core.errors import CLI, Front, MemctlError, NoteFormatError
from memctl.core.markers import conflict_markers
from memctl.core.noteformat import BOM
from memctl.core.query import SHOWN_QUERY_CHARS, shown_query
from memctl.core.secrets import mask_secrets, scan, scan_name
from memctl.core.sections import fence_after, parse_sections, strip_comments
from memctl.core.similarity import compare, similar_pairs
from memctl.disk.counters import record_access as record
from memctl.disk.layout import GLOBAL
from memctl.index.db import Index, ParseError, ensure_fresh
from memctl.index.search import search
from memctl.memory import project_memory, scratchpad
from memctl.store import Store

ELLIPSIS = "…"
HALF_LIFE_DAYS = 30.0  # recall's recency: a note a month old counts 3/4 of one from today
MIN_NOTES_BEFORE_CUTTING_FILES = 3
# The shortest a note is cut to, to fit the block's last room, rather than left out.
MIN_CUT_NOTE_CHARS = 40
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
_TYPE_TIER = {"correction": 0, "rule": 1}
ALWAYS_IMPORTANCE = 8  # notes this important come with every recall, query or not
RECALL_MIN_COVERAGE = 0.5  # a search hit must cover half the query to count as a match


@dataclass
class Budget:
    max_notes: int = 8
    note_chars: int = 100
    total_chars: int = 6000

    def validate(self) -> Budget:
        arguments.at_least(self.max_notes, 0, "limit")
        arguments.at_least(self.note_chars, 10, "note_chars")
        arguments.at_least(self.total_chars, 200, "max_chars")
        return self


@dataclass
class Candidate:
    """A live note that may be recalled, with what ranking needs."""

    id: str
    type: str
    project: str
    importance: int
    updated: datetime | None
    text: str  # the whole body, one line
    path: str = ""
    title: str = ""
    search_rank: int | None = None  # 0 = best hit for the query; None = not a hit
    date: str = ""  # YYYY-MM-DD of `updated` (else `created`), shown to the agent
    pinned: bool = False
    corrects: str | None = None  # for a correction: the note it corrects
    corrected_by: list[str] = field(default_factory=list)  # live corrections of this note
    contradicts: list[str] = field(default_factory=list)  # notes of the block it may contradict
    markers: int | None = None  # the line of git conflict markers left in its file


@dataclass
class RecalledNote:
    id: str
    type: str
    project: str
    importance: int
    text: str
    cut: bool
    path: str
    reason: str
    date: str = ""  # YYYY-MM-DD of `updated` (else `created`)
    corrected_by: list[str] = field(default_factory=list)
    contradicts: list[str] = field(default_factory=list)
    markers: int | None = None  # line of git conflict markers in its file (docs/health.md)
    cut_to_fit: bool = False  # cut shorter than `note_chars` to fit the block (once)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "date": self.date or None,
            "type": self.type,
            "text": self.text,
            "project": self.project,
            "importance": self.importance,
            "cut": self.cut,
            "path": self.path,
            "reason": self.reason,
            "corrected_by": list(self.corrected_by),
            "contradicts": list(self.contradicts),
            "conflict_markers": self.markers,
        }


@dataclass
class RecallResult:
    project: str
    query: str | None
    memory_md: str | None
    scratchpad: str | None
    notes: list[RecalledNote]
    truncated: bool
    markdown: str
    budget: Budget
    memory_path: str = ""
    scratchpad_path: str = ""
    omitted: int = 0  # live notes that did not get a slot
    memory_md_cut: bool = False
    scratchpad_cut: bool = False
    warnings: list[str] = field(default_factory=list)
    no_match: bool = False  # a query was given and no note matches it
    secrets_left_out: int = 0  # notes left out because they look like they hold a secret

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "query": shown_query(self.query) if self.query else self.query,
            "no_match": self.no_match,
            "secrets_left_out": self.secrets_left_out,
            "memory_md": self.memory_md,
            "scratchpad": self.scratchpad,
            "notes": [note.to_dict() for note in self.notes],
            "truncated": self.truncated,
            "omitted": self.omitted,
            "memory_md_cut": self.memory_md_cut,
            "scratchpad_cut": self.scratchpad_cut,
            "budget": {
                "max_notes": self.budget.max_notes,
                "note_chars": self.budget.note_chars,
                "total_chars": self.budget.total_chars,
                "used_chars": len(self.markdown),
            },
            "warnings": list(self.warnings),
        }


# --- text ------------------------------------------------------------------------------------


def one_line(body: str) -> str:
    """A note body as one line: heading marks and comments dropped, whitespace collapsed. A
    line of a fenced code block keeps its `#` (a shell or Python comment, no heading)."""
    text = strip_comments(body, " ")
    lines = []
    fence: str | None = None
    for line in text.splitlines():
        in_code = fence is not None
        fence = fence_after(fence, line)
        stripped = line.strip()
        if stripped.startswith("#") and not in_code:
            stripped = stripped.lstrip("#").strip()
        if stripped:
            lines.append(stripped)
    return " ".join(" ".join(lines).split())


def _is_joiner(ch: str) -> bool:
    return (
        bool(unicodedata.combining(ch))
        or ch in "\u200d\ufe0e\ufe0f"
        or ("\U0001f3fb" <= ch <= "\U0001f3ff")
    )


def cut_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut to at most `limit` characters, ellipsis included, on a word boundary for words and
    a character boundary for Chinese/Japanese/Korean. Returns (text, was it cut)."""
    if len(text) <= limit:
        return text, False
    room = max(1, limit - len(ELLIPSIS))
    cut = room
    # Never split a character from its combining marks or an emoji sequence.
    while cut > 0 and _is_joiner(text[cut]):
        cut -= 1
    head = text[:cut]
    next_char = text[cut] if cut < len(text) else " "
    last_char = head[-1:] or " "
    mid_word = not next_char.isspace() and not last_char.isspace()
    if mid_word and not (_WIDE.match(last_char) or _WIDE.match(next_char)):
        space = max(head.rfind(" "), head.rfind("\t"))
        wide_break = max((i for i, ch in enumerate(head) if _WIDE.match(ch)), default=-1)
        boundary = max(space, wide_break + 1 if wide_break >= 0 else -1)
        # A single huge word (a URL, a hash) is cut inside rather than dropped whole.
        if boundary >= room * 0.5:
            head = head[:boundary]
    head = head.rstrip(" \t,;:.-—–、，。；：")
    return (head or text[:cut]) + ELLIPSIS, True


def compact(text: str) -> str:
    """A file as shown in the block: comments and empty sections dropped (they cost the
    agent context and say nothing); everything else as written."""
    # A BOM on top of the file (MEMORY.md saved by some Windows editors) is no text to show:
    # in the block it would sit, unseen, in front of the file's first heading.
    text = strip_comments(strip_comments(text.removeprefix(BOM), whole_lines=True))
    # The sections without sub-sections never overlap: what is kept is joined once (a cut
    # per section copied the whole text each time, tests/test_linear_time.py).
    kept, position = [], 0
    for section in parse_sections(text, {}):
        if section.level > 1 and section.own_end >= section.end \
                and not text[section.body_start : section.end].strip():
            kept.append(text[position : section.start])
            position = section.end
    text = "".join(kept) + text[position:]
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", text).strip("\n")


def _open_fence(lines: Sequence[str]) -> str | None:
    """The fence (```, ~~~…) of a code block these lines open and leave open, else None."""
    fence: str | None = None
    for line in lines:
        fence = fence_after(fence, line)
    return fence


def _cut_lines(text: str, allowance: int, marker: str) -> str | None:
    """The largest prefix of whole lines that fits with `marker` after it, or None. A code
    block the cut falls in is closed before the marker: left open, it took the marker and
    every section after it (the notes) into the code."""
    if allowance <= len(marker) + 20:
        return None
    room = allowance - len(marker) - 1
    kept: list[str] = []
    used = 0
    for line in text.splitlines():
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    while True:
        while kept and not kept[-1].strip():
            used -= len(kept.pop()) + 1
        fence = _open_fence(kept)
        if fence is None or not kept or used + len(fence) + 1 <= room:
            break
        used -= len(kept.pop()) + 1
    if not kept:
        return None
    if fence is not None:
        kept.append(fence)
    return "\n".join(kept) + "\n" + marker


# --- choosing --------------------------------------------------------------------------------


def base_score(
    candidate: Candidate, moment: datetime, half_life_days: float = HALF_LIFE_DAYS
) -> float:
    """Importance weighted by recency: a note updated today counts double one a month old."""
    age_days = 3650.0
    if candidate.updated is not None:
        age_days = max(0.0, (moment - candidate.updated).total_seconds() / 86400)
    recency = 0.5 + 0.5 * math.pow(0.5, age_days / half_life_days)
    return candidate.importance / 10 * recency


def always_comes(candidate: Candidate) -> bool:
    """Corrections, rules, pinned notes and notes of importance ALWAYS_IMPORTANCE and up:
    recalled whatever the query."""
    return candidate.type in _TYPE_TIER or candidate.importance >= ALWAYS_IMPORTANCE \
        or candidate.pinned


def choose(
    candidates: Sequence[Candidate], max_notes: int, moment: datetime, *, queried: bool = False
) -> tuple[list[tuple[Candidate, str]], int]:
    """Pick and order the notes. Returns [(candidate, reason)] and how many were left out.
    With a query, the slots its hits leave are filled only by notes that always come."""
    by_base = sorted(
        (c for c in candidates if not queried or always_comes(c)),
        key=lambda c: (_TYPE_TIER.get(c.type, 2), -base_score(c, moment), c.id),
    )
    hits = sorted(
        (c for c in candidates if c.search_rank is not None),
        key=lambda c: (_TYPE_TIER.get(c.type, 2), c.search_rank, c.id),
    )
    chosen: list[tuple[Candidate, str]] = []
    seen: set[str] = set()
    for candidate in hits:
        if len(chosen) >= max_notes:
            break
        chosen.append((candidate, "query"))
        seen.add(candidate.id)
    for candidate in by_base:
        if len(chosen) >= max_notes:
            break
        if candidate.id in seen:
            continue
        reason = candidate.type if candidate.type in _TYPE_TIER else "important"
        chosen.append((candidate, reason))
        seen.add(candidate.id)
    return chosen, max(0, len(candidates) - len(chosen))


# --- the block -------------------------------------------------------------------------------


def _note_line(note: RecalledNote, project: str) -> str:
    where = "" if note.project == project else f", {note.project}"
    when = f", {note.date}" if note.date else ""
    marks = [f"⚠ contradicts {', '.join(f'`{other}`' for other in note.contradicts)}"
             ] if note.contradicts else []
    if note.corrected_by:
        marks.append(f"corrected by {', '.join(f'`{other}`' for other in note.corrected_by)}")
    if note.markers is not None:
        # Both sides of a merge left in the file: neither is the note's word (docs/health.md).
        marks.append(f"⚠ git conflict markers at {note.path}:{note.markers}: both sides shown,"
                     " not settled")
    return (f"- `{note.id}` ({note.type}{where}{when}) {note.text}"
            + "".join(f" [{mark}]" for mark in marks))


def render(
    project: str,
    memory_md: str | None,
    scratchpad: str | None,
    notes: Sequence[RecalledNote],
    *,
    memory_path: str,
    scratchpad_path: str,
    warnings: Sequence[str] = (),
    query: str | None = None,
    wording: Front = CLI,
    no_match: bool = False,
    left_out: int = 0,
    over_budget: int = 0,
    total_chars: int = 0,
) -> str:
    """The block. `left_out`: live notes in scope that did not fit the budget (with none
    shown, the block says so rather than that there are none); `over_budget`: those of them
    left out for want of characters (of `total_chars`), not by the limit on notes."""
    # The heading repeats at most an eighth of a small budget of the query: at the smallest
    # (200 characters) a long question left room for the heading alone.
    shown = shown_query(query, min(SHOWN_QUERY_CHARS, max(20, total_chars // 8))
                        if total_chars else SHOWN_QUERY_CHARS) if query else ""
    parts = [f"# Memory for project `{project}`" + (f" (query: {shown})" if query else "")]
    for warning in warnings:
        parts.append(f"> warning: {warning}")
    if memory_md:
        parts.append(f"## Project memory ({memory_path})\n\n{memory_md}")
    if scratchpad:
        parts.append(f"## Working memory ({scratchpad_path})\n\n{scratchpad}")
    if notes:
        lines = [_note_line(note, project) for note in notes]
        nothing = ("(no note matches the query; these are the notes that always come)\n\n"
                   if no_match else "")
        parts.append(
            "## Relevant notes\n\n" + nothing
            + "\n".join(lines)
            + f"\n\nA cut note ends with …; {wording.command('show ID')} prints it whole."
        )
    elif no_match:
        parts.append(f"## Relevant notes\n\n(no note matches the query; {wording.command('search')}"
                     " with other words may find one)")
    elif over_budget:
        # The notes were chosen and the characters ran out (the files took them, or a note
        # could not be cut to the room left): a larger budget shows some, not `limit`.
        parts.append(f"## Relevant notes\n\n(none shown: {over_budget} live "
                     f"note{'s' if over_budget != 1 else ''} did not fit the budget of "
                     f"{total_chars} characters; a larger "
                     + (wording.option("max_chars") if wording is CLI
                        else "setting recall.total_chars") + " shows some)")
    elif left_out:
        parts.append(f"## Relevant notes\n\n(none shown: {left_out} live "
                     f"note{'s' if left_out != 1 else ''} did not fit the budget; "
                     f"{wording.option('limit')} above 0 shows some)")
    else:
        parts.append(
            f"## Relevant notes\n\n(none yet: {wording.command('add')} records one)"
        )
    return "\n\n".join(parts) + "\n"


def assemble(
    project: str,
    memory_md: str | None,
    scratchpad: str | None,
    chosen: Sequence[tuple[Candidate, str]],
    budget: Budget,
    *,
    memory_path: str = "",
    scratchpad_path: str = "",
    omitted: int = 0,
    warnings: Sequence[str] = (),
    query: str | None = None,
    scratchpad_has_content: bool = True,
    wording: Front = CLI,
    no_match: bool = False,
) -> RecallResult:
    """Cut notes to their length, then fit the whole block into the total cap."""
    notes = []
    any_cut = False
    for candidate, reason in chosen:
        text, was_cut = cut_text(candidate.text or candidate.title, budget.note_chars)
        any_cut = any_cut or was_cut
        notes.append(
            RecalledNote(
                candidate.id,
                candidate.type,
                candidate.project,
                candidate.importance,
                text,
                was_cut,
                candidate.path,
                reason,
                candidate.date,
                list(candidate.corrected_by),
                list(candidate.contradicts),
                candidate.markers,
            )
        )
    memory_shown = compact(memory_md) if memory_md else None
    scratch_shown = compact(scratchpad) if scratchpad and scratchpad_has_content else None
    state = {"memory_cut": False, "scratch_cut": False}

    dropped = 0

    def build() -> str:
        return render(
            project,
            memory_shown,
            scratch_shown,
            notes,
            memory_path=memory_path,
            scratchpad_path=scratchpad_path,
            warnings=warnings,
            query=query,
            wording=wording,
            no_match=no_match,
            left_out=omitted + dropped,
            over_budget=dropped,
            total_chars=budget.total_chars,
        )

    block = build()
    while len(block) > budget.total_chars and len(notes) > MIN_NOTES_BEFORE_CUTTING_FILES:
        notes.pop()
        dropped += 1
        block = build()
    for which in ("scratch", "memory"):
        if len(block) <= budget.total_chars:
            break
        current = scratch_shown if which == "scratch" else memory_shown
        if not current:
            continue
        excess = len(block) - budget.total_chars
        # Worded for the reader: an MCP client is told the tool, not a CLI command.
        command = wording.command("scratch show" if which == "scratch" else "project show")
        marker = f"[… cut to fit the recall budget; {command} has it all]"
        shortened = _cut_lines(current, len(current) - excess, marker) or marker
        if len(shortened) >= len(current):
            # The marker alone is no shorter than the file (a scratchpad of one focus line):
            # swapping it in lost the file and made the block longer.
            continue
        if which == "scratch":
            scratch_shown, state["scratch_cut"] = shortened, True
        else:
            memory_shown, state["memory_cut"] = shortened, True
        block = build()
    while len(block) > budget.total_chars and notes:
        # The last note is cut shorter to what room is left before it goes: notes longer
        # than the block (`--note-chars` above `--max-chars`) left the block with none.
        last = notes[-1]
        room = len(last.text) - (len(block) - budget.total_chars)
        if room >= min(MIN_CUT_NOTE_CHARS, budget.note_chars) and not last.cut_to_fit:
            text, _ = cut_text(last.text, room)
            notes[-1] = replace(last, text=text, cut=True, cut_to_fit=True)
            any_cut = True
        else:
            notes.pop()
            dropped += 1
        block = build()
    if len(block) > budget.total_chars:
        block = cut_text(block, budget.total_chars)[0]
    truncated = any_cut or dropped > 0 or omitted > 0 or state["memory_cut"] or state["scratch_cut"]
    return RecallResult(
        project=project,
        query=query,
        # A program gets the files as they are, unless the cap cut them: then what fits.
        memory_md=memory_shown if state["memory_cut"] else memory_md,
        scratchpad=scratch_shown if state["scratch_cut"] else scratchpad,
        notes=notes,
        truncated=truncated,
        markdown=block,
        budget=budget,
        memory_path=memory_path,
        scratchpad_path=scratchpad_path,
        omitted=omitted + dropped,
        memory_md_cut=state["memory_cut"],
        scratchpad_cut=state["scratch_cut"],
        warnings=list(warnings),
        no_match=no_match,
    )


# --- the store -------------------------------------------------------------------------------


def budget_from_settings(
    store: Store,
    max_notes: int | None = None,
    note_chars: int | None = None,
    total_chars: int | None = None,
) -> Budget:
    settings = store.settings
    return Budget(
        max_notes=int(settings.get("recall.max_notes") if max_notes is None else max_notes),
        note_chars=int(settings.get("recall.note_chars") if note_chars is None else note_chars),
        total_chars=int(settings.get("recall.total_chars") if total_chars is None else total_chars),
    ).validate()


def _candidate(row: dict[str, Any], rank: int | None) -> Candidate:
    try:
        importance = int(row.get("importance") or 5)
    except (TypeError, ValueError):
        importance = 5
    return Candidate(
        id=str(row["id"]),
        type=str(row.get("type") or "fact"),
        project=str(row.get("project") or ""),
        importance=importance,
        updated=parse_time(row.get("updated")),
        text="",
        path=str(row.get("path") or ""),
        title=str(row.get("title") or ""),
        search_rank=rank,
        date=str(row.get("updated") or row.get("created") or "")[:10],
        pinned=row.get("pinned") is True,
        corrects=str(row["corrects"]) if row.get("corrects") else None,
    )


def _readable(read: Callable[[], str | None], warnings: list[str]) -> str | None:
    """MEMORY.md or the scratchpad, or None with a warning when it cannot be read (a file
    that is a link is refused, never followed: docs/security.md): the rest is still recalled."""
    try:
        return read()
    except MemctlError as exc:
        warnings.append(f"{exc} (left out of this block)")
        return None


def _masked(text: str | None, path: str, warnings: list[str], wording: Front) -> str | None:
    """MEMORY.md or the scratchpad with each likely secret masked (`ghp_****`): a key let in
    with --allow-secret stays in the file, never in an agent's context (a note holding one is
    left out of the block: `_without_secrets`)."""
    if not text or not scan(text):
        return text
    warnings.append(f"{path}: a likely secret is shown masked ({wording.command('health')} lists it)")
    return mask_secrets(text)


def _last_good(store: Store, path: str) -> tuple[ParseError, str] | None:
    """The problem of a note file that does not parse, and its last good body (the index's)."""
    with ensure_fresh(store) as index:
        return index.last_good(path)


def _without_secrets(store: Store, readable: list[tuple[Candidate, str]]
                     ) -> tuple[list[tuple[Candidate, str]], int]:
    """The notes to show, and how many were left out because their file looks like it holds
    a secret: the scan `memctl health` runs (memctl.core.secrets, docs/security.md), since a
    recall block goes into an agent's context and from there anywhere. A note kept whose
    file holds git conflict markers is marked with their line (`health` lists it too)."""
    kept = []
    for candidate, reason in readable:
        try:
            text = store.read_text(candidate.path)[0]
        except MemctlError:
            text = candidate.text  # unreadable now: what the block would show
        if not scan(text) and not scan_name(candidate.path):  # its path is in the block too
            candidate.markers = conflict_markers(text)
            kept.append((candidate, reason))
    return kept, len(readable) - len(kept)


def _mark_known_conflicts(store: Store, notes: Sequence[Candidate],
                          corrections: dict[str, list[str]]) -> None:
    """Mark what `add` and `health` know about the notes of the block: the live corrections
    of each note, and the pairs that may contradict each other (the comparison `health`
    makes, docs/lifecycle.md), among these few notes only, never the store. A correction and
    the note it corrects are linked by that, not marked as a contradiction."""
    by_id = {candidate.id: candidate for candidate in notes}
    for candidate in notes:
        candidate.corrected_by = list(corrections.get(candidate.id, []))
    settings = store.settings
    similar = float(settings.get("duplicates.similar_threshold"))
    duplicate = float(settings.get("duplicates.merge_threshold"))
    for a, b, _score in similar_pairs([(c.id, c.text) for c in notes], threshold=similar):
        first, second = by_id[a], by_id[b]
        if first.corrects == b or second.corrects == a:
            continue
        if compare(first.text, second.text, duplicate_threshold=duplicate,
                   similar_threshold=similar).similar:
            first.contradicts.append(b)
            second.contradicts.append(a)


def _query_ranks(store: Store, index: Index, project: str, query: str, limit: int) -> dict[str, int]:
    """Search rank of each live note the query really matches (0 = best): hits covering at
    least RECALL_MIN_COVERAGE of the query."""
    hits = search(store, query, projects=[project], limit=limit, kinds=("note",), index=index)
    ranks: dict[str, int] = {}
    for hit in hits:
        if hit.coverage >= RECALL_MIN_COVERAGE:
            ranks.setdefault(hit.id, len(ranks))
    return ranks


def recall(
    store: Store,
    project: str,
    query: str | None = None,
    *,
    max_notes: int | None = None,
    note_chars: int | None = None,
    total_chars: int | None = None,
    record_access: bool = True,
    wording: Front = CLI,
) -> RecallResult:
    """The recall block for `project` (see the module doc for how notes are chosen)."""
    if project != GLOBAL:
        arguments.project_name(project)
    query = query.strip() if query and query.strip() else None
    budget = budget_from_settings(store, max_notes, note_chars, total_chars)
    moment = now()
    scopes = [project] if project == GLOBAL else [project, GLOBAL]
    limit = max(50, budget.max_notes * 5)

    def read(index: Index) -> tuple[dict[str, int], list[dict[str, Any]], int,
                                    dict[str, list[str]]]:
        ranks = _query_ranks(store, index, project, query, limit) if query else {}
        rows, live = index.recall_candidates(scopes, budget.max_notes, list(ranks),
                                             moment.timestamp(), HALF_LIFE_DAYS)
        corrections = index.corrections_of([str(row["id"]) for row in rows], moment.timestamp())
        return ranks, rows, live, corrections

    with ensure_fresh(store) as index:
        # One state of the index for the ranks and the rows they pick (Index.consistently).
        ranks, rows, live, corrections = index.consistently(read)
    candidates = [
        _candidate(row, ranks.get(str(row["id"])))
        for row in rows
        if row.get("status", "active") == "active"
    ]
    chosen, _ = choose(candidates, budget.max_notes, moment, queried=query is not None)
    omitted = max(0, live - len(chosen))
    readable = []
    warnings: list[str] = []
    for candidate, reason in chosen:
        try:
            note = store.read_note(candidate.path)
        except NoteFormatError:
            # A file that does not parse is recalled by its last good version, as search finds
            # it by its index entry; the block names the file to fix (docs/format.md).
            kept = _last_good(store, candidate.path)
            if kept is not None:
                candidate.text = one_line(kept[1]) or candidate.title
                readable.append((candidate, reason))
                warnings.append(f"{kept[0]} (its last good version is recalled)")
            continue
        except MemctlError:
            continue  # changed under us or unreadable now; the next recall sees it again
        if note.is_stale(moment):
            continue
        candidate.text = one_line(note.body) or note.title
        readable.append((candidate, reason))

    readable, secrets_left_out = _without_secrets(store, readable)
    if secrets_left_out:
        one = secrets_left_out == 1
        warnings.append(
            f"{secrets_left_out} {'note was' if one else 'notes were'} left out: "
            f"{'it looks like it holds' if one else 'they look like they hold'} a secret "
            f"({wording.command('health')} lists {'it' if one else 'them'})")
    _mark_known_conflicts(store, [candidate for candidate, _ in readable], corrections)
    memory_text = _readable(lambda: project_memory.read_memory(store, project), warnings)
    scratch_text = _readable(lambda: scratchpad.read_scratch(store, project), warnings)
    for text, path in ((memory_text, project_memory.memory_relpath(project)),
                       (scratch_text, scratchpad.scratch_relpath(project))):
        # On the file's own text: a masked key of several lines (a PEM block) is one line.
        line = conflict_markers(text) if text else None
        if line is not None:
            warnings.append(f"{path}:{line}: git conflict markers: both sides are shown "
                            "below, neither settled; keep one and delete the marker lines")
    memory_text = _masked(memory_text, project_memory.memory_relpath(project), warnings,
                          wording)
    scratch_text = _masked(scratch_text, scratchpad.scratch_relpath(project), warnings, wording)
    view = project_memory.show(store, project) if memory_text is not None else None
    if view is not None and view.warning(wording):
        warnings.append(view.warning(wording))
    result = assemble(
        project,
        memory_text,
        scratch_text,
        readable,
        budget,
        memory_path=project_memory.memory_relpath(project),
        scratchpad_path=scratchpad.scratch_relpath(project),
        omitted=omitted,
        warnings=warnings,
        query=query,
        scratchpad_has_content=scratch_text is not None
        and not scratchpad.parse(scratch_text).is_empty(),
        wording=wording,
        no_match=query is not None and not ranks,
    )
    result.secrets_left_out = secrets_left_out
    if record_access and result.notes:
        record(store, [note.id for note in result.notes], moment)
    return result
