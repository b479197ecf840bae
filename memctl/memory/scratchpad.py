"""Working memory: `<project>/SCRATCHPAD.md`, the task at hand.

The file is plain Markdown a person edits freely; every command here is a splice into one
section (see `memctl.core.sections`), so hand edits elsewhere survive byte for byte. Sections are
found by heading, in English or Chinese; a missing one is added at the end.

    ## Focus            one paragraph, replaced by `scratch focus`
    ## Open questions   `- question`
    ## Next steps       `1. step` (numbered, so `scratch done 2` has something to point at)
    ## Done             `- [x] [2026-11-30 10:12] step`
    ## Notes            `- [2026-11-30 10:15] observation`

Stamps carry the year; items written before they did (`[11-30 10:12]`) read the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memctl.core import arguments, sections
from memctl.core.clock import now
from memctl.core.errors import MemctlError, UsageError, arg, cmd, quoted
from memctl.core.noteformat import FrontMatterTooLarge
from memctl.core.secrets import masked_title
from memctl.disk.layout import SCRATCHPAD_FILE
from memctl.disk.templates import fill, load_template
from memctl.memory import episodes
from memctl.memory.project_memory import check_secrets

if TYPE_CHECKING:
    from memctl.store import Store

FILE_NAME = "SCRATCHPAD.md"
TEMPLATE_NAME = "SCRATCHPAD.md"

ALIASES: Mapping[str, Sequence[str]] = sections.SCRATCHPAD_ALIASES

_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$")
_CHECKBOX = re.compile(r"^\[[ xX]\][ \t]*")
# `[2026-11-30 10:12]`, and the year-less `[11-30 10:12]` / `[11-30]` of older files.
_STAMP = re.compile(r"^\[(?:\d{4}-)?\d\d-\d\d(?: \d\d:\d\d)?\][ \t]*")


@dataclass(frozen=True)
class Item:
    """One top-level list item of a section: its text and where its lines are in the file."""

    number: int  # 1-based position in the section
    text: str  # marker, checkbox and stamp removed; continuation lines joined by spaces
    start: int
    end: int  # after its last non-blank line (with that line's ending)
    marker: str


@dataclass
class Scratchpad:
    focus: str = ""
    questions: list[str] = field(default_factory=list)
    next: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.focus or self.questions or self.next or self.done or self.notes)

    def to_dict(self) -> dict[str, object]:
        return {
            "focus": self.focus,
            "questions": list(self.questions),
            "next": list(self.next),
            "done": list(self.done),
            "notes": list(self.notes),
        }


def time_stamp(moment: datetime) -> str:
    """`2026-11-30 10:12`, local time: a scratchpad outlives a year-end."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def items(text: str, key: str) -> list[Item]:
    section = sections.find_section(text, key, ALIASES)
    if section is None:
        return []
    result: list[Item] = []
    current: dict[str, object] | None = None
    fence = False
    for start, end, content, _eol in sections.split_lines(
        text[section.body_start : section.own_end]
    ):
        start += section.body_start
        end += section.body_start
        if content.lstrip().startswith(("```", "~~~")):
            fence = not fence
        match = None if fence else _ITEM.match(content)
        if match and current is not None and len(match.group(1)) >= current["inner"]:  # type: ignore[operator]
            # Indented to the item's text (`1. write` then `   1. add a column`): an item of
            # its own list, so one of its lines, as Markdown reads it; `done` moves it along.
            match = None
        if match:
            if current:
                result.append(_finish(current, len(result) + 1))
            current = {
                "start": start,
                "end": end,
                "marker": match.group(2),
                "parts": [match.group(4)],
                "inner": _inner(match),
            }
        elif current is not None and content.strip():
            if content[:1] in " \t" or fence:
                current["end"] = end
                current["parts"].append(  # type: ignore[union-attr]
                    sections.restore(content.strip(), item=True))
            else:
                result.append(_finish(current, len(result) + 1))
                current = None
    if current:
        result.append(_finish(current, len(result) + 1))
    return result


def _inner(match: re.Match[str]) -> int:
    """Where the text of a list item (an `_ITEM` match) begins: a line indented this far is
    inside the item, as Markdown reads it."""
    return len(match.group(1)) + len(match.group(2)) + max(1, len(match.group(3)))


def _finish(current: dict[str, object], number: int) -> Item:
    parts = [p for p in current["parts"] if p]  # type: ignore[union-attr]
    text = " ".join(parts)
    text = _CHECKBOX.sub("", text, count=1)
    text = _STAMP.sub("", text, count=1).strip()
    if text.startswith("\\") and text.lstrip("\\").startswith("["):
        text = text[1:]  # the text's own `[`, escaped when written (`_own_bracket`)
    return Item(number, text, current["start"], current["end"], current["marker"])  # type: ignore[arg-type]


def _paragraph(text: str, key: str) -> str:
    section = sections.find_section(text, key, ALIASES)
    if section is None:
        return ""
    lines = []
    # A guiding comment is no focus, over several lines too (as the templates' comments run):
    # its lines were read as the focus, and archived as an episode's goal.
    own = sections.strip_comments(text[section.body_start : section.own_end], whole_lines=True)
    for _, _, content, _ in sections.split_lines(own):
        stripped = content.strip()
        if stripped and not (stripped.startswith("<!--") and stripped.endswith("-->")):
            lines.append(sections.restore(stripped))
    return "\n".join(lines)


def parse(text: str) -> Scratchpad:
    return Scratchpad(
        focus=_paragraph(text, "focus"),
        questions=[i.text for i in items(text, "questions")],
        next=[i.text for i in items(text, "next")],
        done=[i.text for i in items(text, "done")],
        notes=[i.text for i in items(text, "notes")],
    )


def _one_line(value: str, what: str) -> list[str]:
    lines = [line.rstrip() for line in value.strip().splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"the {what} is empty")
    return lines


def set_focus(text: str, focus: str) -> str:
    _one_line(focus, "focus")
    return sections.replace_own_body(text, "focus", sections.text_lines(focus), ALIASES)


def _own_bracket(item: str) -> str:
    """An item's text as written after memctl's own checkbox and stamp: a text that starts
    with `[` (`[x] is the flag needed?`) gets a backslash in front, so the reader (`_finish`)
    never takes it for a checkbox or a stamp and gives it back as it was (one backslash
    more for a text that starts with backslashes and `[`, as `sections.inert` does)."""
    text = item.strip()
    return "\\" + text if text.lstrip("\\").startswith("[") else text


def add_question(text: str, question: str) -> str:
    _one_line(question, "question")
    return sections.insert_lines(text, "questions",
                                 sections.format_item(_own_bracket(question)), ALIASES)


def add_next(text: str, step: str) -> str:
    _one_line(step, "step")
    step = _own_bracket(step)
    existing = items(text, "next")
    marker = f"{len(existing) + 1}."
    if existing and not existing[-1].marker[0].isdigit():
        marker = existing[-1].marker
    elif existing:
        marker = f"{len(existing) + 1}{existing[-1].marker[-1]}"
    if existing and _CHECKBOX.match(_item_head(text, existing[-1])):
        step = "[ ] " + step.strip()  # follow a hand-made checklist's style
    return sections.insert_lines(text, "next", sections.format_item(step, marker=marker), ALIASES)


def _item_head(text: str, item: Item) -> str:
    """The first line of an item after its list marker."""
    match = _ITEM.match(text[item.start : item.end].splitlines()[0])
    return match.group(4) if match else ""


def add_note(text: str, note: str, moment: datetime) -> str:
    _one_line(note, "note")
    return sections.insert_lines(
        text, "notes", sections.format_item(_own_bracket(note), time_stamp(moment)), ALIASES
    )


def find_item(text: str, key: str, ref: str, what: str) -> Item | None:
    """An item of a section (`next`, `questions`) by its position (`2`) or by its words
    (exact, else the one item containing them). `what` names the items in messages.

    None when nothing matches; an ambiguous reference is an error naming the candidates."""
    found = items(text, key)
    ref = ref.strip()
    number = arguments.as_number(ref)
    if number is not None:
        if not 1 <= number <= len(found):
            # As words that match no item: a lookup that finds nothing (exit 1), not usage.
            raise MemctlError(
                f"there is no {what} {number}; the scratchpad has {len(found)} "
                f"(see {cmd('scratch show')})"
            )
        return found[number - 1]
    wanted = " ".join(ref.lower().split())
    exact = [s for s in found if " ".join(s.text.lower().split()) == wanted]
    if exact:
        return exact[0]
    partial = [s for s in found if wanted and wanted in s.text.lower()]
    if len(partial) > 1:
        listed = "; ".join(f"{s.number}. {s.text}" for s in partial)
        raise MemctlError(f"{ref!r} matches several {what}s ({listed}); give its number")
    return partial[0] if partial else None


def find_step(text: str, ref: str) -> Item | None:
    """A next step by number (`2`) or by its words (see `find_item`)."""
    return find_item(text, "next", ref, "next step")


def mark_done(text: str, ref: str, moment: datetime) -> tuple[str, str]:
    """Move a next step to Done with the time. Returns (new text, the step).

    A reference that matches no step is an error: recording it anyway turned a mistyped
    reference into a made-up Done item (`scratch note` records work never planned)."""
    step = find_step(text, ref)
    if step is None:
        raise MemctlError(f"{ref.strip()!r} is not one of the next steps (see {cmd('scratch show')}); "
                          f"to record work that was never planned, use {cmd('scratch note')}")
    original_lines = text[step.start : step.end]
    text = _renumber(text[: step.start] + text[step.end :])
    first, *rest = original_lines.splitlines()
    opened = _ITEM.match(first)
    inner = _inner(opened) if opened else 0
    continuation: list[str] = []
    nested: list[str] = []
    for line in rest:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if nested or (indent >= inner and _ITEM.match(line.lstrip(" "))):
            # The step's own list (`   1. add a column`), and what follows it: kept a list,
            # indented under the Done item as it was under the step.
            nested.append("  " + " " * max(0, indent - inner) + line.lstrip(" "))
        else:
            continuation.append(sections.restore(line.strip(), item=True))
    lines = sections.format_item(
        "\n".join([f"[x] [{time_stamp(moment)}] {_first_line_text(original_lines)}"]
                  + continuation)
    )
    return sections.insert_lines(text, "done", lines + nested, ALIASES), step.text


def resolve_question(text: str, ref: str, answer: str | None, moment: datetime) -> tuple[str, str]:
    """Take an open question off the list and keep it, with its answer when given, as a
    timed note (`- [time] resolved: question → answer`). Returns (new text, the question)."""
    question = find_item(text, "questions", ref, "open question")
    if question is None:
        raise MemctlError(f"{ref.strip()!r} is not one of the open questions "
                          f"(see {cmd('scratch show')})")
    text = _renumber(text[: question.start] + text[question.end :], "questions")
    record = f"resolved: {question.text}"
    if answer is not None and answer.strip():
        record += f" → {answer.strip()}"
    return add_note(text, record, moment), question.text


def _first_line_text(lines: str) -> str:
    first = lines.splitlines()[0]
    match = _ITEM.match(first)
    value = match.group(4) if match else first.strip()
    return _CHECKBOX.sub("", value, count=1).strip()


def _renumber(text: str, key: str = "next") -> str:
    """Number the numbered items of a section 1, 2, 3 again; only their digits change, and
    the indentation of what is nested under an item whose number got wider or narrower
    (`1.` → `10.`, in a list numbered `1.` throughout): a sub-list indented to the old
    item's text would otherwise fall out of it and become an item of its own. One parse,
    one join: a parse again after each change made it quadratic (2,000 steps: 12 s;
    tests/test_linear_time.py)."""
    pieces: list[str] = []
    position = 0
    for expected, step in enumerate(items(text, key), start=1):
        number = str(expected)
        if not step.marker[0].isdigit() or step.marker[:-1] == number:
            continue
        first, *rest = text[step.start : step.end].splitlines(keepends=True)
        digits_start = step.start + len(first) - len(first.lstrip(" "))
        pieces += [text[position:digits_start], number]
        position = digits_start + len(step.marker) - 1
        opened = _ITEM.match(first.rstrip("\r\n"))
        wider = len(number) - (len(step.marker) - 1)
        if not wider or opened is None or not rest:
            continue
        inner = _inner(opened)
        pieces.append(text[position : step.start + len(first)])
        for line in rest:
            indent = len(line) - len(line.lstrip(" "))
            if indent >= inner and line.strip():
                line = " " * (indent + wider) + line[indent:]
            pieces.append(line)
        position = step.end
    return "".join(pieces) + text[position:] if pieces else text


# --- the file in the store -----------------------------------------------------------------

ACTIONS = ("focus", "question", "next", "done", "note", "resolve")


@dataclass
class ScratchView:
    project: str
    path: str
    text: str | None
    message: str = ""
    changed: bool = False
    episode: dict[str, Any] | None = None

    @property
    def state(self) -> Scratchpad:
        return parse(self.text or "")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "project": self.project,
            "path": self.path,
            "exists": self.text is not None,
            "text": self.text,
            **self.state.to_dict(),
            "changed": self.changed,
        }
        if self.message:
            data["message"] = self.message
        if self.episode is not None:
            data["episode"] = self.episode
        return data


def scratch_relpath(project: str) -> str:
    name = arguments.scope_name(project)
    return f"{name}/{SCRATCHPAD_FILE}"


def read_scratch(store: Store, project: str) -> str | None:
    relpath = scratch_relpath(project)
    if not store.resolve(relpath).exists():  # a link is refused, never followed
        return None
    return store.read_text(relpath)[0]


def template_text(store: Store, project: str) -> str:
    return fill(load_template(store, TEMPLATE_NAME), TEMPLATE_NAME, project=project)


def show(store: Store, project: str) -> ScratchView:
    return ScratchView(project, scratch_relpath(project), read_scratch(store, project))


def update(
    store: Store,
    project: str,
    action: str,
    text: str,
    moment: datetime | None = None,
    allow_secret: bool = False,
    answer: str | None = None,
) -> ScratchView:
    """One scratchpad change: focus, question, next, done (number or words), note, resolve
    (a question by number or words, with an optional `answer`)."""
    action = action.strip().lower()
    if action not in ACTIONS:
        raise UsageError(f"invalid action {quoted(action)} (choose from {', '.join(ACTIONS)})")
    if answer is not None and action != "resolve":
        raise UsageError(f"{arg('answer')} only goes with resolving a question")
    if "\x00" in text or "\x00" in (answer or ""):
        raise UsageError("the text contains NUL bytes")

    check_secrets(text + "\n" + (answer or ""), allow_secret)
    moment = moment or now()
    relpath = scratch_relpath(project)
    with store.lock(f"scratch {action}"):
        current = read_scratch(store, project)
        base = current if current is not None else template_text(store, project)
        if action == "focus":
            new, message = set_focus(base, text), f"focus: {masked_title(text)}"
        elif action == "question":
            new, message = add_question(base, text), f"question: {masked_title(text)}"
        elif action == "next":
            new = add_next(base, text)
            message = f"next step {len(items(new, 'next'))}: {masked_title(text)}"
        elif action == "done":
            new, step = mark_done(base, text, moment)
            message = f"done: {masked_title(step)}"
        elif action == "resolve":
            new, question = resolve_question(base, text, answer, moment)
            message = f"resolved: {masked_title(question)}"
        else:
            new, message = add_note(base, text, moment), f"note: {masked_title(text)}"
        # The whole file at most as large as a note or MEMORY.md (docs/reliability.md): an
        # agent's 5 MB notes made one of 15 MB, which the index then refused to read. A step
        # done or a question resolved moves an item (with its date, or an answer of at most
        # 1 MB): a scratchpad grown past the size by hand or by a sync can be worked down.
        if action not in ("done", "resolve"):
            arguments.file_within_size(new, base, "the scratchpad with this",
                                       f"{cmd('scratch clear')} with {arg('archive')} moves it "
                                       "into an episode and starts it afresh")
        changed = new != current  # (the same focus again changes nothing: no commit)
        if changed:
            store.write_text(relpath, new)
            store.commit(f"scratch {project}: {message}", [relpath])
    return ScratchView(project, relpath, new, message=message, changed=changed)


def clear(
    store: Store,
    project: str,
    *,
    archive: bool = False,
    outcome: str | None = None,
    goal: str | None = None,
    summary: str | None = None,
    moment: datetime | None = None,
    allow_secret: bool = False,
) -> ScratchView:
    """Empty the scratchpad (back to the template). With `archive`, first keep the finished
    state as an episode: focus as goal, done items as steps, the rest as sections; the
    episode meets the secret guard, `allow_secret` its override (a step or focus written
    with it, or a goal or summary given now)."""
    moment = moment or now()
    relpath = scratch_relpath(project)
    if not archive and (outcome or goal or summary):
        raise UsageError(f"{arg('outcome')}, {arg('goal')} and {arg('summary')} only go with {arg('archive')}")
    with store.lock("scratch clear"):
        # Read under the lock: a note written between a read made before it and the clear
        # was in neither the episode nor the file (it was wiped unarchived).
        current = read_scratch(store, project)
        state = parse(current or "")
        files = [relpath]
        episode_data = None
        episode_file = None
        if archive:
            episode_file = _archived_episode(store, project, state, outcome=outcome, goal=goal,
                                             summary=summary, moment=moment,
                                             allow_secret=allow_secret)
            files.append(episode_file[0])
            episode_data = episode_file[2].to_dict(with_body=False)
        # The template before any write: one that cannot be read stops the clear with
        # nothing written (an episode written first was left uncommitted, and made twice
        # by the retry).
        new = template_text(store, project)
        if episode_file is None and current in (None, new):
            return ScratchView(project, relpath, current,
                               message="the scratchpad is already empty")
        if episode_file is not None:
            store.write_text(episode_file[0], episode_file[1])
        store.write_text(relpath, new)
        message = "cleared"
        if episode_file is not None:
            message += f"; archived as episode {episode_file[2].id}"
        store.commit(f"scratch {project}: {message}", files)
    return ScratchView(project, relpath, new, message=message, changed=True, episode=episode_data)


def _archived_episode(store: Store, project: str, state: Scratchpad, *, outcome: str | None,
                      goal: str | None, summary: str | None, moment: datetime,
                      allow_secret: bool = False) -> tuple[str, str, episodes.Episode]:
    """The episode `clear --archive` keeps of the scratchpad's state: (relpath, text, episode)."""
    if state.is_empty() and not goal:
        raise MemctlError("the scratchpad is empty; there is nothing to archive as an episode")
    episode_goal = goal or state.focus.replace("\n", " ") or f"work on {project}"
    try:
        return episodes.prepare_episode(
            store,
            project,
            goal=episode_goal,
            outcome=outcome,
            steps=[episodes.Step(step) for step in state.done],
            summary=summary,
            moment=moment,
            allow_secret=allow_secret,
            extra_sections=[
                ("Notes", state.notes),
                ("Open questions", state.questions),
                ("Left to do", state.next),
            ],
        )
    except FrontMatterTooLarge as exc:
        if goal:
            raise
        # The field named is the episode's, which the person never typed: say where it
        # came from and how to archive anyway.
        raise FrontMatterTooLarge(f"{exc.raw_message}; the episode's goal is the "
                                  f"scratchpad's focus: give a shorter {arg('goal')}") from None
