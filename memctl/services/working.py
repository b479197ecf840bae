"""Working memory an agent keeps for itself: the scratchpad, episodes and the project's L2
`MEMORY.md`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memctl.core import arguments
from memctl.core.errors import ArgumentError, MemctlError, UsageError, arg
from memctl.core.ids import id_argument
from memctl.core.sections import section_key
from memctl.memory import episodes, project_memory
from memctl.memory import scratchpad as scratch
from memctl.memory.episodes import Episode
from memctl.memory.project_memory import MemoryView
from memctl.memory.scratchpad import ScratchView
from memctl.store import Store

__all__ = ["SCRATCH_ACTIONS", "AgentFile", "Episode", "MemoryView", "ScratchView", "add_episode",
           "agent_files", "check_project_memory_arguments", "edit_project_memory", "find_episode",
           "finish_episode", "list_episodes",
           "project_memory_add",
           "project_memory_replace", "project_memory_section", "project_memory_show", "scratchpad",
           "update_episode"]

SCRATCH_ACTIONS = ("show", "focus", "question", "next", "done", "note", "resolve", "clear")
# What each action takes besides the project: an argument given to an action that does not
# take it is refused, never dropped (an MCP client sends any of them with any action:
# docs/agents.md).
_SCRATCH_TAKES = {action: ("text",) for action in SCRATCH_ACTIONS} | {
    "show": (), "clear": ("archive", "outcome", "goal", "summary"),
    "resolve": ("text", "answer")}
_MEMORY_TAKES = {"show": (), "add": ("section", "text"), "replace": ("text",)}


def _only_what_it_takes(action: str, takes: dict[str, tuple[str, ...]], **given: object) -> None:
    """Refuse an argument given (not None, not False) to an action that does not take it,
    naming the actions that do."""
    for name, value in given.items():
        if value is not None and value is not False and name not in takes[action]:
            others = ", ".join(other for other, names in takes.items() if name in names)
            raise UsageError(f"{arg(name)} does not go with {action} (it goes with {others})")


def _utf8(**texts: str | Sequence[str] | None) -> None:
    """Each text given (a string, or strings) is UTF-8 text: `arguments.utf8_text`."""
    for name, value in texts.items():
        for text in [value] if isinstance(value, str) else value or ():
            arguments.utf8_text(text, name.replace("_", " "))


def scratchpad(store: Store, project: str, action: str, text: str | None = None, *,
               archive: bool = False, outcome: str | None = None, goal: str | None = None,
               summary: str | None = None, allow_secret: bool = False,
               answer: str | None = None) -> ScratchView:
    """One scratchpad action (`SCRATCH_ACTIONS`); every one but show and clear takes text.
    `resolve` takes the question's number or words as text, and an optional `answer`."""
    # Case-insensitive, as every other word from a fixed set (`arguments.choice`).
    action = arguments.choice(action, SCRATCH_ACTIONS, "action")
    _only_what_it_takes(action, _SCRATCH_TAKES, text=text, archive=archive, outcome=outcome,
                        goal=goal, summary=summary, answer=answer)
    _utf8(text=text, goal=goal, summary=summary, answer=answer, outcome=outcome)
    if action == "show":
        return scratch.show(store, project)
    if action == "clear":
        return scratch.clear(store, project, archive=archive, outcome=outcome, goal=goal,
                             summary=summary, allow_secret=allow_secret)
    return scratch.update(store, project, action, text or "", allow_secret=allow_secret,
                          answer=answer)


def _links(links: Sequence[str]) -> list[str]:
    """The ids an episode links, each through the one id validator; at most MAX_LINKS."""
    if len(links) > arguments.MAX_LINKS:
        raise ArgumentError("link", f"{len(links)} links; one call links at most "
                                    f"{arguments.MAX_LINKS} notes")
    return [id_argument(link, "link") for link in links]


def add_episode(store: Store, project: str, *, goal: str, outcome: str,
                steps: Sequence[str] = (), summary: str | None = None,
                links: Sequence[str] = (), tags: Sequence[str] | str | None = None,
                allow_secret: bool = False, source: str = "cli") -> Episode:
    _utf8(goal=goal, summary=summary, step=steps)
    return episodes.add_episode(store, project, goal=goal, outcome=outcome, steps=list(steps),
                                summary=summary,
                                links=_links(links),
                                tags=arguments.tags(tags),
                                allow_secret=allow_secret, source=source)


def list_episodes(store: Store, projects: list[str] | None, *, outcome: str | None = None,
                  limit: int | None = None) -> tuple[list[Episode], list[str]]:
    if limit is not None:
        arguments.limit(limit)
    for project in projects or ():
        arguments.scope_name(project)
    return episodes.list_episodes(store, projects, outcome=outcome, limit=limit)


def find_episode(store: Store, ref: str) -> Episode:
    return episodes.find_episode(store, id_argument(ref))


def update_episode(store: Store, ref: str, *, outcome: str | None = None,
                   summary: str | None = None, steps: Sequence[str] = (),
                   links: Sequence[str] = (), tags: Sequence[str] | str | None = None,
                   allow_secret: bool = False) -> Episode:
    """Change an episode in place (docs/agents.md): a new outcome, a new summary, steps and
    linked notes added, tags added. One commit; hand edits of the file stay."""
    _utf8(summary=summary, step=steps)
    return episodes.update_episode(
        store, id_argument(ref), outcome=outcome, summary=summary, steps=list(steps),
        links=_links(links), tags=arguments.tags(tags),
        allow_secret=allow_secret)


def finish_episode(store: Store, ref: str, *, outcome: str | None,
                   summary: str | None = None, steps: Sequence[str] = (),
                   links: Sequence[str] = (), tags: Sequence[str] | str | None = None,
                   allow_secret: bool = False) -> Episode:
    """End an `in_progress` episode: `outcome` (completed, partial or failed) is required;
    the rest as `update_episode`. An episode that already ended is refused."""
    _utf8(summary=summary, step=steps)
    return episodes.update_episode(
        store, id_argument(ref), outcome=outcome, summary=summary, steps=list(steps),
        links=_links(links), tags=arguments.tags(tags),
        allow_secret=allow_secret, finish=True)


@dataclass
class AgentFile:
    """A project's `MEMORY.md` or `SCRATCHPAD.md` that exists (the MCP server lists them)."""

    project: str
    kind: str  # "memory" or "scratchpad"
    path: str  # relative to the store
    size: int  # bytes


def agent_files(store: Store) -> list[AgentFile]:
    """Every project's `MEMORY.md` and `SCRATCHPAD.md` that exists, by project. A link in
    their place is left out (memctl never follows one: docs/security.md)."""
    found: list[AgentFile] = []
    for project in store.projects():
        for kind, relpath in (("memory", project_memory.memory_relpath(project)),
                              ("scratchpad", scratch.scratch_relpath(project))):
            try:
                path = store.resolve(relpath)
                if path.is_file():
                    found.append(AgentFile(project, kind, relpath, path.stat().st_size))
            except (MemctlError, OSError):
                continue
    return found


def check_project_memory_arguments(action: str, *, section: str | None,
                                   text: str | None) -> None:
    """An MCP call of `project_memory` gives its action any of these: refused where the
    action does not take it (`show` of one section is the CLI's `project show --section`)."""
    _only_what_it_takes(action, _MEMORY_TAKES, section=section, text=text)


def project_memory_show(store: Store, project: str) -> MemoryView:
    return project_memory.show(store, project)


def project_memory_section(store: Store, project: str, section: str) -> tuple[str, str | None]:
    """(the section's canonical name, its text or None when the file has no such section)."""
    key = section_key(section)
    return key, project_memory.section_text(store, project, key)


def project_memory_add(store: Store, project: str, section: str | None, text: str,
                       allow_secret: bool = False) -> MemoryView:
    if not section:
        raise UsageError(f"adding to project memory needs a section ({arg('section')})")
    _utf8(section=section, text=text)
    return project_memory.add_item(store, project, section, text, allow_secret=allow_secret)


def project_memory_replace(store: Store, project: str, text: str,
                           allow_secret: bool = False) -> MemoryView:
    _utf8(text=text)
    return project_memory.replace(store, project, text, allow_secret=allow_secret)


def edit_project_memory(store: Store, project: str) -> MemoryView:
    return project_memory.edit(store, project)
