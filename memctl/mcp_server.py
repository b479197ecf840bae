"""`memctl mcp`: the same memory operations for MCP clients, over stdio.

Built on the official MCP Python SDK (2.x, `MCPServer`), an optional extra: the SDK is
imported only when `memctl mcp` starts, and a missing SDK is a one-line error saying what to
install.
Every tool calls the same services as the CLI (`memctl.services`), so the same checks apply
(duplicates, supersession, secrets, names, budgets, ids that must exist). Errors a caller can
cause come back to the model as tool errors worded for it (`MCP_WORDING`: tool arguments and
tool names, never CLI flags); stdout carries only the protocol.

This file deliberately has no `from __future__ import annotations`: the SDK reads the tool
functions' annotations to build their schemas, and they must be real objects.
"""

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, Optional

from memctl import __version__
from memctl.core import arguments
from memctl.core.errors import Front, MemctlError
from memctl.core.vocab import GLOBAL, NOTE_TYPES, OUTCOMES
from memctl.services import notes, retrieval, working
from memctl.services import recall as recalling
from memctl.services.stores import Store

INSTALL_HINT = "pip install 'memctl[mcp]'"

INSTRUCTIONS = """\
memctl is long-term memory kept as Markdown files in git, shared with the user (they read and
edit the same files). Use it like this:
- At the start of a task, call `recall` (with a few words about the task as `query`) and treat
  what it returns as context: project constraints, decisions, progress, lessons, your working
  scratchpad, and the notes that matter most. Corrections come first: obey them.
- When you learn something worth keeping beyond this session — a fact about the project, a
  user preference, a rule, a decision and its reason, a pitfall, a procedure that worked —
  call `remember` once, with one self-contained statement. Do not store secrets or chat.
- When the user corrects you, `remember` it with type `correction` (and `corrects` = the id).
- When a topic comes up that memory may know about, call `search` before guessing; `show`
  gives a whole note.
- Keep `update_scratchpad` current on long tasks; record finished task phases with
  `add_episode`; put lasting project-level decisions, constraints, progress and lessons in
  `project_memory` (action `add`).
"""

NOTE_TYPE_HELP = (
    "fact (how things are), preference (what the user likes), rule (must/never), decision "
    "(a choice and why), correction (you were wrong; this is right), skill (how to do a "
    "task), error (a pitfall and its fix), experience (a procedure that worked)"
)


class McpWording(Front):
    """Errors worded for a model: tool arguments and tools, not CLI options and commands."""

    ARGUMENTS = {"step": "steps", "link": "links", "global": "scope"}
    TOOLS = {"list": "the `search` tool", "search": "the `search` tool",
             "show": "the `show` tool", "show ID": "the `show` tool",
             "add": "the `remember` tool", "forget": "the `forget` tool",
             "scratch show": "the `update_scratchpad` tool (action show)",
             "episode list": "the `search` tool (type episode)",
             "project edit": "the `project_memory` tool (action replace)",
             "project replace": "the `project_memory` tool (action replace)"}

    def option(self, name: str) -> str:
        return f"`{self.ARGUMENTS.get(name, name)}`"

    def command(self, name: str) -> str:
        tool = self.TOOLS.get(name)
        if tool is not None:
            return tool
        return f"`memctl {name}` (a command for the user to run)"


MCP_WORDING = McpWording()


def _require_sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise MemctlError(
            f"`memctl mcp` needs the MCP Python SDK (version 2): {INSTALL_HINT}"
        ) from None
    return MCPServer


def serve(store: Store, default_project: str) -> None:
    """Run the server on stdin/stdout until the client goes away."""
    server = build_server(store, default_project)
    server.run("stdio")


def build_server(store: Store, default_project: str) -> Any:  # noqa: C901 - one closure per tool
    MCPServer = _require_sdk()
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import Field

    NoteType = Literal[NOTE_TYPES]  # type: ignore[valid-type]
    Outcome = Literal[OUTCOMES]  # type: ignore[valid-type]
    AllowSecretArg = Annotated[
        bool, Field(description="Write although the text looks like a secret: only when the "
                                "user confirmed it is not one.")
    ]
    ProjectArg = Annotated[
        Optional[str],
        Field(description=f"Project name; default {default_project!r} (the current project)."),
    ]

    server = MCPServer(
        "memctl",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    # The SDK runs plain functions on worker threads; one call at a time keeps the store's
    # lock, git and the index connection simple.
    serial = threading.Lock()

    @contextmanager
    def guarded() -> Iterator[None]:
        with serial:
            try:
                yield
            except MemctlError as exc:
                raise ToolError(exc.render(MCP_WORDING)) from exc

    def resolve(project: Optional[str], global_scope: bool = False) -> str:
        if global_scope:
            return GLOBAL
        if not project:
            return default_project
        return arguments.scope_name(project)

    def tool(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return server.tool(description=description, structured_output=False)

    def as_json(data: Any) -> str:
        return json.dumps(data, ensure_ascii=False, indent=1, default=str)

    @tool(
        "Store one durable memory: a fact, preference, rule, decision, correction, skill, error "
        "or experience, as one self-contained statement (say what it is about; no 'it' or "
        "'this'). memctl checks first: a near-duplicate is not stored twice (action 'merged', "
        "the existing id comes back); a note with the same subject+predicate replaces the old "
        "one (listed in 'superseded'); a similar note that may contradict it is listed in "
        "'similar' (check it with `show`). Text that looks like a secret is refused."
    )
    def remember(
        text: Annotated[str, Field(description="The memory, one statement; Markdown allowed.")],
        type: Annotated[NoteType, Field(description=NOTE_TYPE_HELP)] = "fact",
        importance: Annotated[
            Optional[int],
            Field(
                description="1-10; leave out to let memctl judge "
                "(rules and corrections rank higher).",
                ge=1, le=10,
            ),
        ] = None,
        tags: Annotated[Optional[list[str]], Field(description="A few lowercase tags.")] = None,
        subject: Annotated[
            Optional[str],
            Field(
                description="What the note is about (e.g. 'blog-backend'); with predicate, a "
                "newer note on the same subject+predicate supersedes the older one."
            ),
        ] = None,
        predicate: Annotated[
            Optional[str], Field(description="Which property of the subject (e.g. 'database').")
        ] = None,
        expires: Annotated[
            Optional[str],
            Field(description="When it stops being true: a date or a span (30d, 6m)."),
        ] = None,
        scope: Annotated[
            Literal["project", "global"],
            Field(
                description="'global' for the user's cross-project memory (preferences that "
                "hold everywhere); 'project' (default) for the current project."
            ),
        ] = "project",
        project: ProjectArg = None,
        corrects: Annotated[
            Optional[str], Field(description="For a correction: the id of the note it corrects.")
        ] = None,
        source_episode: Annotated[
            Optional[str], Field(description="The id of the episode this was learnt in.")
        ] = None,
        force: Annotated[
            bool, Field(description="Write even when a near-duplicate exists (rarely right).")
        ] = False,
        allow_secret: AllowSecretArg = False,
    ) -> str:
        with guarded():
            result = notes.remember(
                store, text, note_type=type, project=resolve(project, scope == "global"),
                importance=importance, tags=tags or [], subject=subject, predicate=predicate,
                expires=expires, corrects=corrects, source_episode=source_episode, force=force,
                allow_secret=allow_secret, source="mcp")
            return as_json(result.to_dict())

    @tool(
        "The compact memory block for the current project: MEMORY.md (constraints, decisions, "
        "progress, lessons), the working scratchpad, and the most relevant notes (corrections "
        "and rules first), each with its id, within a size budget. Call it at the start of a "
        "task; pass a few words about the task as `query` to steer which notes come back. A "
        "note ending in … was cut: `show` it for the whole text."
    )
    def recall(
        query: Annotated[
            Optional[str], Field(description="What the task is about, a few keywords.")
        ] = None,
        project: ProjectArg = None,
        max_notes: Annotated[
            Optional[int], Field(description="At most this many notes (default 8).", ge=0, le=50)
        ] = None,
    ) -> str:
        with guarded():
            return recalling.recall(store, resolve(project), query, max_notes=max_notes,
                                    wording=MCP_WORDING).markdown

    @tool(
        'Ranked full-text search of memory (English and Chinese; words, prefixes, "quoted '
        'phrases"), in the current project and global memory. Returns hits best first with '
        "id, type, title and a snippet; `show` an id for the whole note. Superseded, expired "
        "and archived notes are left out unless include_stale is true."
    )
    def search(
        query: Annotated[str, Field(description="Words to look for.")],
        project: ProjectArg = None,
        all_projects: Annotated[bool, Field(description="Search every project.")] = False,
        type: Annotated[Optional[NoteType], Field(description="Only notes of this type.")] = None,
        limit: Annotated[int, Field(description="At most this many hits.", ge=1, le=100)] = 10,
        include_stale: Annotated[
            bool, Field(description="Also superseded, expired and archived notes.")
        ] = False,
    ) -> str:
        with guarded():
            found = retrieval.search(
                store, query, project=None if all_projects else resolve(project),
                all_projects=all_projects, types=[type] if type else [], limit=limit,
                include_stale=include_stale)
            return as_json([hit.to_dict() for hit in found.hits])

    @tool(
        "The exact fact, in one step: the active note(s) about `subject` (and `predicate`), "
        "newest first, with their fields and body. Use it when you know what the fact is about "
        "(e.g. subject 'blog-backend', predicate 'database'); `search` finds notes by words."
    )
    def get(
        subject: Annotated[str, Field(description="What the fact is about, as stored in notes' subject.")],
        predicate: Annotated[
            Optional[str], Field(description="Which property of the subject (e.g. 'database').")
        ] = None,
        project: ProjectArg = None,
    ) -> str:
        with guarded():
            found = notes.get(store, subject, predicate, project=resolve(project))
            return as_json([note.to_dict() for note in found])

    @tool("One note (or episode) in full, by id or an unambiguous id prefix: its fields and body.")
    def show(
        id: Annotated[str, Field(description="A note or episode id, or its first characters.")],
    ) -> str:
        with guarded():
            return as_json(notes.show(store, id).to_dict())

    @tool(
        "Delete a note that is wrong or no longer wanted (a tombstone keeps sync from bringing "
        "it back; git history keeps the text). To replace outdated knowledge, prefer "
        "`remember` with the same subject+predicate, or a correction."
    )
    def forget(
        id: Annotated[str, Field(description="The note's id (or an unambiguous prefix).")],
    ) -> str:
        with guarded():
            note = notes.forget(store, id)
            return as_json({"forgotten": note.id, "title": note.title, "path": note.path})

    @tool(
        "Your working memory for the task at hand (SCRATCHPAD.md, also read by the user). "
        "Actions: show; focus (replace the current focus with text); question (add an open "
        "question); next (add a numbered next step); done (text = the step's number or words: "
        "moves it to Done with the time); note (add a timed observation); clear (empty it "
        "when the task is over; with archive=true and an outcome it is kept as an episode)."
    )
    def update_scratchpad(
        action: Annotated[
            Literal["show", "focus", "question", "next", "done", "note", "clear"],
            Field(description="What to do."),
        ],
        text: Annotated[
            Optional[str],
            Field(description="The text for focus/question/next/note, or N for done."),
        ] = None,
        project: ProjectArg = None,
        archive: Annotated[
            bool, Field(description="With clear: keep the finished state as an episode first.")
        ] = False,
        outcome: Annotated[
            Optional[Outcome], Field(description="With clear and archive: how the task ended.")
        ] = None,
        goal: Annotated[
            Optional[str], Field(description="With clear and archive: the goal (default: the focus).")
        ] = None,
        summary: Annotated[
            Optional[str], Field(description="With clear and archive: what to remember about it.")
        ] = None,
        allow_secret: AllowSecretArg = False,
    ) -> str:
        with guarded():
            view = working.scratchpad(store, resolve(project), action, text, archive=archive,
                                      outcome=outcome, goal=goal, summary=summary,
                                      allow_secret=allow_secret)
            data = view.to_dict()
            data.pop("exists", None)
            return as_json(data)

    @tool(
        "Record an episode: what happened in one task or task phase, for later search. Give "
        "the goal, the steps as 'action => result', the outcome (say it honestly: completed, "
        "partial, in_progress or failed), a short summary, and the ids of notes it produced."
    )
    def add_episode(
        goal: Annotated[str, Field(description="What the task set out to do.")],
        outcome: Annotated[Outcome, Field(description="How it ended.")],
        steps: Annotated[
            Optional[list[str]], Field(description="In order, each 'action => result'.")
        ] = None,
        summary: Annotated[Optional[str], Field(description="What to remember about it.")] = None,
        links: Annotated[
            Optional[list[str]], Field(description="Ids of notes this task produced or used.")
        ] = None,
        tags: Annotated[Optional[list[str]], Field(description="A few tags.")] = None,
        project: ProjectArg = None,
        allow_secret: AllowSecretArg = False,
    ) -> str:
        with guarded():
            episode = working.add_episode(
                store, resolve(project), goal=goal, outcome=outcome, steps=steps or [],
                summary=summary, links=links or [], tags=tags or [], source="mcp",
                allow_secret=allow_secret)
            return as_json(episode.to_dict())

    @tool(
        "The project's L2 memory, MEMORY.md: constraints, decisions, progress, lessons — read "
        "whole every session, so keep items short and lasting. Actions: show; add (append a "
        "dated item to `section`: constraints, decisions, progress or lessons); replace (the "
        "whole file becomes `text`: use it to distil the file when it grows past 8 KB)."
    )
    def project_memory(
        action: Annotated[Literal["show", "add", "replace"], Field(description="What to do.")],
        section: Annotated[
            Optional[str],
            Field(description="For add: constraints, decisions, progress or lessons (also "
                              "技术约束, 关键决策, 当前进度, 教训)."),
        ] = None,
        text: Annotated[
            Optional[str], Field(description="For add: the item. For replace: the whole file.")
        ] = None,
        project: ProjectArg = None,
        allow_secret: AllowSecretArg = False,
    ) -> str:
        with guarded():
            name = resolve(project)
            if action == "show":
                view = working.project_memory_show(store, name)
            elif action == "add":
                view = working.project_memory_add(store, name, section, text or "",
                                                  allow_secret=allow_secret)
            else:
                view = working.project_memory_replace(store, name, text or "",
                                                      allow_secret=allow_secret)
            data = view.to_dict()
            warning = view.warning(MCP_WORDING)
            if warning:
                data["warning"] = warning
            return as_json(data)

    return server
