"""Episodes: what happened in one task — goal, steps (action => result), outcome, summary,
and the notes it produced. One Markdown file each, under `<project>/episodes/<yyyy-mm>/`.

The front matter holds what programs need (id, goal, outcome, times, linked note ids); the
body, from the `episode.md` template, is what people and search read. A note points back to
the episode it came from with `source_episode: <episode id>`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memctl.core import arguments, sections
from memctl.core.clock import format_time, now, parse_time
from memctl.core.errors import ArgumentError, MemctlError, UsageError, arg, cmd, quoted
from memctl.core.ids import new_id
from memctl.core.note import Note, monotonic_stamp
from memctl.core.noteformat import compute_checksum, parse_file, render_note, set_fields
from memctl.core.secrets import guard, mask_name, masked_title
from memctl.disk.layout import EPISODE, EPISODES_DIR, classify, slugify
from memctl.disk.templates import fill, load_template
from memctl.store import Store

TEMPLATE_NAME = "episode.md"
STEP_SEPARATORS = ("=>", "→", "⇒")
_EPISODE_SECTIONS = {
    "steps": ("Steps", "步骤"),
    "outcome": ("Outcome", "结果"),
    "summary": ("Summary", "总结", "摘要"),
    "links": ("Linked notes", "相关笔记", "links"),
}
_STEP_LINE = re.compile(r"^\s{0,3}(?:\d{1,9}[.)]|[-*+])\s+(.*)$")


@dataclass(frozen=True)
class Step:
    action: str
    result: str = ""

    def render(self) -> str:
        return f"{self.action} => {self.result}" if self.result else self.action

    def to_dict(self) -> dict[str, str]:
        return {"action": self.action, "result": self.result}


@dataclass
class Episode:
    id: str
    project: str
    goal: str
    outcome: str
    created: str
    updated: str
    path: str
    steps: list[Step] = field(default_factory=list)
    summary: str = ""
    links: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    body: str = ""

    def to_dict(self, with_body: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "project": self.project,
            "goal": self.goal,
            "outcome": self.outcome,
            "created": self.created,
            "updated": self.updated,
            "steps": [step.to_dict() for step in self.steps],
            "summary": self.summary,
            "links": list(self.links),
            "tags": list(self.tags),
            "path": self.path,
        }
        if with_body:
            data["body"] = self.body
        return data


# --- pure ------------------------------------------------------------------------------------


def parse_step(text: str, option: str = "step") -> Step:
    """`action => result` (also `→`); a step without a result is just its action."""
    value = " ".join(str(text).split())
    for separator in STEP_SEPARATORS:
        if separator in value:
            action, result = value.split(separator, 1)
            action, result = action.strip(), result.strip()
            break
    else:
        action, result = value, ""
    if not action:
        raise ArgumentError(option, f"{quoted(text)} has no action (use 'action => result')")
    return Step(action, result)


def _clean(text: str | None) -> str:
    if text is None:
        return ""
    if "\x00" in text:
        raise UsageError("the text contains NUL bytes")
    return text.replace("\r\n", "\n").strip()


def render_body(
    template: str,
    *,
    goal: str,
    steps: Sequence[Step],
    outcome: str,
    summary: str,
    links: Sequence[tuple[str, str]],
    extra_sections: Sequence[tuple[str, Sequence[str]]] = (),
) -> str:
    """The episode body from the template; sections left empty are dropped, not left blank."""
    body = fill(
        template,
        TEMPLATE_NAME,
        goal=" ".join(goal.split()),
        steps="\n".join(f"{i}. {step.render()}" for i, step in enumerate(steps, 1)),
        outcome=outcome,
        summary="\n".join(sections.text_lines(summary, keep_blank=True)),
        links="\n".join(
            f"- {note_id}" + (f": {title}" if title else "") for note_id, title in links
        ),
    )
    for title, lines in extra_sections:
        if lines:
            body = (
                body.rstrip("\n") + f"\n\n## {title}\n" + "\n".join(f"- {line}" for line in lines)
            )
    body = _drop_empty_sections(body)
    return body.rstrip("\n") + "\n"


def _drop_empty_sections(text: str) -> str:
    """The text without its sections (below the title) whose body, sub-sections included,
    is blank; what is kept is joined once (a cut per section copied the whole text each time,
    tests/test_linear_time.py)."""
    kept, position = [], 0
    for section in sections.parse_sections(text, _EPISODE_SECTIONS):
        if section.start >= position and section.level > 1 \
                and not text[section.body_start : section.end].strip():
            kept.append(text[position : section.start])
            position = section.end  # its sub-sections go with it
    return re.sub(r"\n{3,}", "\n\n", "".join(kept) + text[position:])


def render_episode(
    *,
    episode_id: str,
    project: str,
    goal: str,
    outcome: str,
    created: str,
    steps: Sequence[Step],
    summary: str,
    links: Sequence[tuple[str, str]],
    tags: Sequence[str],
    source: str,
    template: str,
    extra_sections: Sequence[tuple[str, Sequence[str]]] = (),
) -> str:
    meta: dict[str, Any] = {
        "id": episode_id,
        "kind": "episode",
        "project": project,
        "goal": " ".join(goal.split()),
        "outcome": outcome,
        "created": created,
        "updated": created,
        "links": [note_id for note_id, _ in links] or None,
        "tags": list(tags) or None,
        "source": source,
    }
    body = render_body(
        template,
        goal=goal,
        steps=steps,
        outcome=outcome,
        summary=summary,
        links=links,
        extra_sections=extra_sections,
    )
    text = render_note(meta, body)
    # Stamped like notes, so sync can tell a later hand edit from memctl's own version.
    return set_fields(text, {"checksum": compute_checksum(text)})


def parse_episode(text: str, relpath: str, project: str) -> Episode:
    """Read an episode file, including one a person wrote or edited by hand."""
    parsed = parse_file(text)
    if parsed.problem is not None:
        raise MemctlError(f"{relpath}:{parsed.problem.line}: {parsed.problem.message}")
    meta = parsed.meta
    body = parsed.body
    heading = next((h.title for h in sections.parse_headings(body) if h.level == 1), "")
    steps_text = sections.section_body(body, "steps", _EPISODE_SECTIONS) or ""
    steps = []
    for _, _, content, _ in sections.split_lines(steps_text):
        match = _STEP_LINE.match(content)
        if match:
            steps.append(parse_step(match.group(1)) if match.group(1).strip() else Step(""))
    summary = "\n".join(sections.restore(line) for line in (
        sections.section_body(body, "summary", _EPISODE_SECTIONS) or "").strip().splitlines())
    outcome = (
        _text(meta.get("outcome"))
        or (sections.section_body(body, "outcome", _EPISODE_SECTIONS) or "").strip().lower()
    )
    episode_id = _text(meta.get("id")) or _id_from_name(relpath)
    return Episode(
        id=episode_id.lower(),
        project=_text(meta.get("project")) or project,
        goal=_text(meta.get("goal")) or heading,
        outcome=outcome,
        created=_text(meta.get("created")) or "",
        updated=_text(meta.get("updated")) or _text(meta.get("created")) or "",
        path=relpath,
        steps=[s for s in steps if s.action],
        summary=summary,
        links=_list(meta.get("links")),
        tags=_list(meta.get("tags")),
        body=body,
    )


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (list, dict)):
        return None
    return str(value).strip() or None


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _id_from_name(relpath: str) -> str:
    stem = relpath.rsplit("/", 1)[-1][: -len(".md")]
    return stem.rsplit("-", 1)[-1]


# --- store -----------------------------------------------------------------------------------


def episode_relpath(project: str, episode_id: str, goal: str, moment: datetime) -> str:
    local = moment.astimezone()
    # A goal written with allow_secret keeps its secret in the file only, never in the name
    # every clone carries (docs/security.md), as a note's title (`notes.add`).
    slug = slugify(mask_name(goal), 40)
    name = (
        f"{local:%Y-%m-%d}-{slug}-{episode_id}.md" if slug else f"{local:%Y-%m-%d}-{episode_id}.md"
    )
    return f"{project}/{EPISODES_DIR}/{local:%Y-%m}/{name}"


def prepare_episode(
    store: Store,
    project: str,
    *,
    goal: str,
    outcome: str | None,
    steps: Sequence[str | Step] = (),
    summary: str | None = None,
    links: Sequence[str] = (),
    tags: Sequence[str] = (),
    source: str = "cli",
    moment: datetime | None = None,
    extra_sections: Sequence[tuple[str, Sequence[str]]] = (),
    allow_secret: bool = False,
) -> tuple[str, str, Episode]:
    """Validate and render a new episode without writing it: (relpath, text, episode).

    Linked ids must name existing notes (a prefix is enough); they are stored in full."""
    project = arguments.scope_name(project)
    goal = " ".join(_clean(goal).split())
    if not goal:
        raise UsageError(f"{arg('goal')} is required: what was the task trying to achieve?")
    outcome = arguments.outcome(outcome)
    parsed_steps = [s if isinstance(s, Step) else parse_step(s) for s in steps]

    guard({"goal": goal, "summary": summary, "step": [s.render() for s in parsed_steps],
           "tags": tags, "link": links}, allow_secret)
    resolved: dict[str, str] = {}  # id -> title, in the order given (a set look-up per link)
    for ref in links:
        note = _linked_note(store, ref)
        resolved.setdefault(note.id, " ".join(note.title.split())[:80])
    moment = moment or now()
    episode_id = new_id()
    created = format_time(moment)
    relpath = episode_relpath(project, episode_id, goal, moment)
    text = render_episode(
        episode_id=episode_id,
        project=project,
        goal=goal,
        outcome=outcome,
        created=created,
        steps=parsed_steps,
        summary=_clean(summary),
        links=list(resolved.items()),
        tags=[t.strip() for t in tags if t.strip()],
        source=source,
        template=load_template(store, TEMPLATE_NAME),
        extra_sections=extra_sections,
    )
    return relpath, text, parse_episode(text, relpath, project)


def add_episode(store: Store, project: str, **kwargs: Any) -> Episode:
    """Write one episode (see `prepare_episode` for the arguments) and commit it."""
    relpath, text, episode = prepare_episode(store, project, **kwargs)
    arguments.within_text_size(text, "the episode")  # as a note (docs/reliability.md)
    with store.lock("episode add"):
        store.write_text(relpath, text)
        store.commit(f"episode {episode.id} ({episode.outcome}): {masked_title(episode.goal)}", [relpath])
    return episode


def _episode_files(store: Store, projects: Sequence[str] | None) -> list[str]:
    found = []
    for memory_file in store.walk():
        if memory_file.kind != EPISODE:
            continue
        if projects is not None and memory_file.project not in projects:
            continue
        found.append(memory_file.relpath)
    return found


def _read(store: Store, relpath: str) -> Episode:
    kind = classify(relpath)
    text, _info = store.read_text(relpath)
    return parse_episode(text, relpath, kind[1] if kind else "")


def read_episode(store: Store, relpath: str) -> Episode:
    """The episode in this file (its path as the index gives it): `memctl show` of an
    episode's id reads its one file, no walk (memctl.services.showing)."""
    return _read(store, relpath)


def list_episodes(
    store: Store,
    projects: Sequence[str] | None,
    *,
    outcome: str | None = None,
    limit: int | None = None,
) -> tuple[list[Episode], list[str]]:
    """Episodes newest first, and the problems met (`path:line: message`) for stderr."""
    wanted = arguments.outcome(outcome) if outcome else None
    episodes: list[Episode] = []
    problems: list[str] = []
    for relpath in _episode_files(store, projects):
        try:
            episode = _read(store, relpath)
        except MemctlError as exc:
            problems.append(str(exc))
            continue
        if wanted and episode.outcome != wanted:
            continue
        episodes.append(episode)
    episodes.sort(key=lambda e: (_sort_time(e), e.id), reverse=True)
    return (episodes[:limit] if limit else episodes), problems


def _sort_time(episode: Episode) -> float:
    moment = parse_time(episode.created)
    return moment.timestamp() if moment else 0.0


def _linked_note(store: Store, ref: str) -> Note:
    """The note a link names. An episode's id is refused naming what a link is (the notes a
    task produced or used), not with `read_note`'s word for a note's commands, which named
    the very command that was run (`memctl episode update` changes it)."""
    entry = store.find_entry(ref)
    kind = classify(entry["path"])
    if kind is not None and kind[0] == EPISODE:
        raise MemctlError(f"{entry['path']} is an episode: a {arg('link')} names a note the "
                          "task produced or used, not another episode")
    return store.read_note(entry["path"])


def find_episode(store: Store, ref: str) -> Episode:
    """An episode by id or unambiguous id prefix, in any project."""
    wanted = ref.strip().lower()
    if not wanted:
        raise UsageError("an episode id is required")
    exact, prefixed = [], []
    for relpath in _episode_files(store, None):
        try:
            episode = _read(store, relpath)
        except MemctlError:
            continue
        if episode.id == wanted:
            exact.append(episode)
        elif episode.id.startswith(wanted):
            prefixed.append(episode)
    matches = exact or prefixed
    if not matches:
        raise MemctlError(f"no episode with id {ref!r}; {cmd('episode list')} shows ids")
    ids = sorted({e.id for e in matches})
    if len(ids) > 1:
        raise MemctlError(f"episode id prefix {ref!r} is ambiguous: {', '.join(ids[:5])}")
    return matches[0]




# --- changing an episode ---------------------------------------------------------------------

_SECTION_ORDER = ("steps", "outcome", "summary", "links")


def _splice_section(body: str, key: str, lines: Sequence[str], *, replace: bool) -> str:
    """Replace (or add to) the own text of one section of an episode's body; a missing section
    is added before the first section that comes after it in the template's order (else at
    the end). Every other byte of the body stays."""
    if sections.find_section(body, key, _EPISODE_SECTIONS) is not None:
        if replace:
            return sections.replace_own_body(body, key, lines, _EPISODE_SECTIONS)
        return sections.insert_lines(body, key, lines, _EPISODE_SECTIONS)
    eol = sections.dominant_eol(body)
    block = f"## {_EPISODE_SECTIONS[key][0]}{eol}" + eol.join(lines) + eol + eol
    for later in _SECTION_ORDER[_SECTION_ORDER.index(key) + 1:]:
        section = sections.find_section(body, later, _EPISODE_SECTIONS)
        if section is not None:
            return body[: section.start] + block + body[section.start:]
    return sections.insert_lines(body, key, lines, _EPISODE_SECTIONS)


def update_episode(
    store: Store,
    ref: str,
    *,
    outcome: str | None = None,
    summary: str | None = None,
    steps: Sequence[str] = (),
    links: Sequence[str] = (),
    tags: Sequence[str] = (),
    finish: bool = False,
    allow_secret: bool = False,
) -> Episode:
    """Change an episode in place, with one commit: a new `outcome` (front matter and the
    Outcome section), `summary` (replaces the Summary section), `steps` appended to Steps,
    `links` (note ids, resolved like `add`'s) and `tags` added. `updated` and `checksum` are
    stamped; every other byte of the file (hand edits) stays.

    `finish` is the end of an `in_progress` episode: the outcome is required and must be a
    final one, and an episode that already ended is refused."""
    new_outcome = arguments.outcome(outcome) if outcome is not None or finish else None
    if finish and new_outcome == "in_progress":
        raise ArgumentError("outcome", "finishing an episode needs how it ended "
                                       "(completed, partial or failed)")
    new_summary = _clean(summary) or None
    parsed_steps = [parse_step(step) for step in steps]
    clean_tags = [tag.strip() for tag in tags if tag.strip()]
    if new_outcome is None and new_summary is None and not parsed_steps and not links \
            and not clean_tags:
        raise UsageError(f"nothing to change: give {arg('outcome')}, {arg('summary')}, "
                         f"{arg('step')}, {arg('link')} or {arg('tags')}")
    guard({"summary": new_summary, "step": [s.render() for s in parsed_steps],
           "tags": clean_tags, "link": list(links)}, allow_secret)
    linked = [_linked_note(store, link) for link in links]

    with store.lock("episode update"):
        episode = find_episode(store, ref)
        if finish and episode.outcome != "in_progress":
            raise MemctlError(f"episode {episode.id} has already ended ({episode.outcome or 'no outcome'}); "
                              f"{cmd('episode update')} changes it")
        text, _info = store.read_text(episode.path)
        parsed = parse_file(text)
        if parsed.problem is not None:
            raise MemctlError(f"{episode.path}:{parsed.problem.line}: {parsed.problem.message}")
        body = parsed.body
        if new_outcome is not None:
            body = _splice_section(body, "outcome", [new_outcome], replace=True)
        if new_summary is not None:
            body = _splice_section(body, "summary", sections.text_lines(new_summary, keep_blank=True)
                                   or [""], replace=True)
        if parsed_steps:
            first = len(episode.steps) + 1
            body = _splice_section(body, "steps", [f"{number}. {step.render()}" for number, step
                                                   in enumerate(parsed_steps, first)], replace=False)
        new_links, seen = [], set(episode.links)
        for note in linked:
            if note.id not in seen:
                seen.add(note.id)
                new_links.append(note)
        if new_links:
            body = _splice_section(body, "links", [
                f"- {note.id}: {' '.join(note.title.split())[:80]}" for note in new_links],
                replace=False)
        fields: dict[str, Any] = {}
        if not parsed.meta.get("id"):
            fields["id"] = episode.id  # the id it was known by survives the change
        if new_outcome is not None and new_outcome != _text(parsed.meta.get("outcome")):
            fields["outcome"] = new_outcome
        if new_links:
            fields["links"] = [*episode.links, *(note.id for note in new_links)]
        merged = arguments.merged_tags(
            episode.tags, clean_tags, f"episode {episode.id}",
            f"remove some of the tags in {episode.path} first")
        if merged != episode.tags:
            fields["tags"] = merged
        if not fields and body == parsed.body:
            return episode  # nothing to change (a link or tag it has): no stamp, no commit
        fields["updated"] = format_time(monotonic_stamp(now(), episode.updated))
        try:
            changed = set_fields(text[: len(text) - len(parsed.body)] + body, fields)
            changed = set_fields(changed, {"checksum": compute_checksum(changed)})
        except ValueError as exc:
            raise MemctlError(f"{episode.path}: cannot change its fields safely ({exc}); "
                              "edit the file by hand") from None
        arguments.file_within_size(changed, text, "the episode with this",
                                   "finish it and start another episode for the rest")
        store.write_text(episode.path, changed)
        final = parse_episode(changed, episode.path, episode.project)
        verb = "finished" if finish else "updated"
        store.commit(f"episode {final.id} {verb} ({final.outcome}): {masked_title(final.goal)}",
                     [episode.path])
    return final
