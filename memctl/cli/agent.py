"""Agent-facing commands: `project` (L2 MEMORY.md), `scratch` (working memory), `episode`
and `recall` (`mcp` is in `memctl.cli.mcp`)."""

from __future__ import annotations

from typing import Literal, Optional

import typer

from memctl.cli.base import (
    JSON_OPTION,
    LIMIT_OPTION,
    PROJECT_OPTION,
    app,
    checked,
    current_project,
    examples,
    get_store,
)
from memctl.cli.output import (
    emit_json,
    info,
    print_episode,
    read_text_argument,
    read_text_input,
    table,
    warn,
    write,
)
from memctl.core import arguments
from memctl.core.errors import MemctlError, UsageError
from memctl.core.secrets import mask_secrets
from memctl.core.sections import section_key
from memctl.core.vocab import OUTCOMES
from memctl.services import recall as recalling
from memctl.services import working

Outcome = Literal[OUTCOMES]  # type: ignore[valid-type]
# How a finished episode ended: `episode finish --help` offers no `in_progress`, which it refuses.
Ending = Literal[tuple(outcome for outcome in OUTCOMES if outcome != "in_progress")]  # type: ignore[valid-type]

project_app = typer.Typer(
    help="The L2 project memory MEMORY.md: constraints, decisions, progress, lessons.",
    no_args_is_help=True,
    epilog=examples("memctl project show", "memctl project add decisions 'Cache rendered posts in Redis'"),
)
scratch_app = typer.Typer(
    help="Working memory SCRATCHPAD.md: focus, open questions, next steps, done, notes.",
    no_args_is_help=True,
    epilog=examples("memctl scratch focus 'Move the post cache to Redis'",
                    "memctl scratch next 'Measure the cold start'", "memctl scratch show"),
)
episode_app = typer.Typer(
    help="Episodes: what happened in one task (goal, steps, outcome, linked notes).",
    no_args_is_help=True,
    epilog=examples("memctl episode add --goal 'Fix the flaky deploy' --outcome completed "
                    "--step 'pin the runner image => green'", "memctl episode list"),
)
app.add_typer(project_app, name="project")
app.add_typer(scratch_app, name="scratch")
app.add_typer(episode_app, name="episode")

GLOBAL_OPTION = typer.Option(False, "--global", "-g", help="The global scope instead of a project.")
ALLOW_SECRET_OPTION = typer.Option(
    False, "--allow-secret", help="Write even if the text looks like a secret."
)


def _write(text: str) -> None:
    write(text if text.endswith("\n") else text + "\n")


# --- project ---------------------------------------------------------------------------------


@project_app.command("show", epilog=examples(
    "memctl project show",
    "memctl project show --section decisions --json"))
def project_show(
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = GLOBAL_OPTION,
    section: Optional[str] = typer.Option(
        None,
        "--section",
        "-s",
        help="Only this section (constraints, decisions, progress, lessons).",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Print MEMORY.md (or one section of it)."""
    store = get_store()
    scope = current_project(project, global_scope)
    view = working.project_memory_show(store, scope)
    if section is not None:
        key, body = working.project_memory_section(store, scope, section)
        if json_output:
            emit_json({"project": scope, "path": view.path, "section": key, "text": body})
        elif body is None:
            info(f"{view.path} has no {key} section")
        else:
            _write(body.strip("\n"))
        return
    if json_output:
        emit_json(view.to_dict())
    elif view.text is None:
        info(
            f"no {view.path} yet; `memctl project add SECTION TEXT` or `memctl project edit` "
            "creates it"
        )
    else:
        _write(view.text)
    if view.warning() and not json_output:
        warn(view.warning())


@project_app.command("edit", epilog=examples(
    "memctl project edit",
    "memctl project edit --project blog-backend"))
def project_edit(
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = GLOBAL_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Open MEMORY.md in $EDITOR (created from the template if missing)."""
    store = get_store()
    view = working.edit_project_memory(store, current_project(project, global_scope))
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"{'saved' if view.changed else 'unchanged'}: {view.path}")
    if view.warning():
        warn(view.warning())


@project_app.command("add", epilog=examples(
    "memctl project add decisions 'Cache rendered posts in Redis'",
    "memctl project add lessons 'Run migrations before the deploy' --global"))
def project_add(
    section: str = typer.Argument(
        ...,
        metavar="SECTION",
        callback=checked(lambda name: section_key(name, argument="SECTION")),
        help="constraints, decisions, progress or lessons (技术约束, 关键决策, 当前进度, 教训).",
    ),
    text: str = typer.Argument(..., metavar="TEXT", help="The item, or - to read it from stdin."),
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = GLOBAL_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Append a dated item (`- [11-30] …`) to a section of MEMORY.md."""
    store = get_store()
    view = working.project_memory_add(
        store,
        current_project(project, global_scope),
        section,
        read_text_argument(text),
        allow_secret=allow_secret,
    )
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"added to {view.section}: {mask_secrets(view.item)}  ({view.path})")
    if view.warning():
        warn(view.warning())


@project_app.command("replace", epilog=examples(
    "memctl project replace MEMORY.md",
    "memctl project replace - --project blog-backend"))
def project_replace(
    source: str = typer.Argument(
        "-", metavar="FILE", help="The new MEMORY.md (default: - for stdin)."
    ),
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = GLOBAL_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Replace MEMORY.md whole, e.g. with a distilled version at a milestone."""
    from pathlib import Path

    if source == "-":
        text = read_text_argument("-")
    else:
        try:
            with Path(source).open("rb") as stream:
                text = read_text_input(stream, source)
        except FileNotFoundError:
            raise UsageError(f"invalid value for FILE: {source} does not exist") from None
        except OSError as exc:
            raise MemctlError(f"cannot read {source}: {exc.strerror}") from None
    store = get_store()
    view = working.project_memory_replace(
        store, current_project(project, global_scope), text, allow_secret=allow_secret
    )
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"{'replaced' if view.changed else 'unchanged'}: {view.path} ({view.size} bytes)")
    if view.warning():
        warn(view.warning())


# --- scratch ---------------------------------------------------------------------------------


def _scratch_update(
    action: str, text: str, project: Optional[str], json_output: bool, allow_secret: bool
) -> None:
    store = get_store()
    view = working.scratchpad(
        store, current_project(project), action, read_text_argument(text), allow_secret=allow_secret
    )
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"{view.message}  ({view.path})" if view.changed
             else f"unchanged: {view.path} already says that")


@scratch_app.command("show", epilog=examples("memctl scratch show", "memctl scratch show --json"))
def scratch_show(project: Optional[str] = PROJECT_OPTION, json_output: bool = JSON_OPTION) -> None:
    """Print SCRATCHPAD.md."""
    view = working.scratchpad(get_store(), current_project(project), "show")
    if json_output:
        emit_json(view.to_dict())
    elif view.text is None:
        info(f"no {view.path} yet; `memctl scratch focus TEXT` starts one")
    else:
        _write(view.text)


@scratch_app.command("focus", epilog=examples(
    "memctl scratch focus 'Move the post cache to Redis'"))
def scratch_focus(
    text: str = typer.Argument(..., metavar="TEXT", help="What you are working on now."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Set the current focus (replaces the previous one)."""
    _scratch_update("focus", text, project, json_output, allow_secret)


@scratch_app.command("question", epilog=examples(
    "memctl scratch question 'Does the CDN cache drafts?'"))
def scratch_question(
    text: str = typer.Argument(..., metavar="TEXT", help="An open question."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Add an open question."""
    _scratch_update("question", text, project, json_output, allow_secret)


@scratch_app.command("next", epilog=examples(
    "memctl scratch next 'Add the Redis client to the API'"))
def scratch_next(
    text: str = typer.Argument(..., metavar="TEXT", help="A next step."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Add a numbered next step."""
    _scratch_update("next", text, project, json_output, allow_secret)


@scratch_app.command("done", epilog=examples(
    "memctl scratch done 1",
    "memctl scratch done 'Redis client'"))
def scratch_done(
    step: str = typer.Argument(
        ..., metavar="N|TEXT", help="The next step's number, or words of it."
    ),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Move a next step to Done, with the time."""
    _scratch_update("done", step, project, json_output, allow_secret)


@scratch_app.command("note", epilog=examples("memctl scratch note 'p95 dropped from 420 to 90 ms'"))
def scratch_note(
    text: str = typer.Argument(..., metavar="TEXT", help="An observation or result."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Add a timed note (an observation, a result)."""
    _scratch_update("note", text, project, json_output, allow_secret)


@scratch_app.command("resolve", epilog=examples(
    "memctl scratch resolve 1 --answer 'No: drafts bypass it'"))
def scratch_resolve(
    question: str = typer.Argument(
        ..., metavar="N|TEXT", help="The open question's place in the list (1 = the first), or words of it."
    ),
    answer: Optional[str] = typer.Option(None, "--answer", help="What the answer turned out to be."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Take an open question off the list; it is kept as a timed note (with the answer)."""
    view = working.scratchpad(get_store(), current_project(project), "resolve",
                              read_text_argument(question), answer=answer,
                              allow_secret=allow_secret)
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"{view.message}  ({view.path})")


@scratch_app.command("clear", epilog=examples(
    "memctl scratch clear",
    "memctl scratch clear --archive --outcome completed --goal 'Move the post cache to Redis'"))
def scratch_clear(
    archive: bool = typer.Option(
        False, "--archive", help="First keep the finished state as an episode."
    ),
    outcome: Optional[Outcome] = typer.Option(
        None, "--outcome", help="With --archive (required there): how the task ended."
    ),
    goal: Optional[str] = typer.Option(
        None, "--goal", help="With --archive: the goal (default: the focus)."
    ),
    summary: Optional[str] = typer.Option(None, "--summary", help="With --archive: a summary."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Empty the scratchpad (its old text stays in git history)."""
    view = working.scratchpad(
        get_store(),
        current_project(project),
        "clear",
        archive=archive,
        outcome=outcome,
        goal=goal,
        summary=summary,
        allow_secret=allow_secret,
    )
    if json_output:
        emit_json(view.to_dict())
    else:
        info(f"{view.message}  ({view.path})")


# --- episode ---------------------------------------------------------------------------------


@episode_app.command("add", epilog=examples(
    "memctl episode add --goal 'Fix the flaky deploy' --outcome completed --step 'pinned the runner => green'"))
def episode_add(
    goal: str = typer.Option(..., "--goal", help="What the task set out to do."),
    outcome: Outcome = typer.Option(..., "--outcome", help="How it ended (no default: say it)."),
    step: Optional[list[str]] = typer.Option(
        None, "--step", help="'action => result'; repeat for each step, in order."
    ),
    summary: Optional[str] = typer.Option(None, "--summary", help="What to remember about it."),
    link: Optional[list[str]] = typer.Option(
        None, "--link", metavar="ID", help="A note this task produced or used; repeatable."
    ),
    tags: Optional[str] = typer.Option(None, "--tags", help="Comma-separated tags."),
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = GLOBAL_OPTION,
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Record an episode."""
    store = get_store()
    episode = working.add_episode(
        store,
        current_project(project, global_scope),
        allow_secret=allow_secret,
        goal=goal,
        outcome=outcome,
        steps=step or [],
        summary=summary,
        links=link or [],
        tags=tags,
        source="cli",
    )
    if json_output:
        emit_json(episode.to_dict())
    else:
        info(f"added episode {episode.id}  {episode.path}")


@episode_app.command("list", epilog=examples(
    "memctl episode list",
    "memctl episode list --all-projects --outcome failed"))
def episode_list(
    project: Optional[str] = PROJECT_OPTION,
    all_projects: bool = typer.Option(False, "--all-projects", "-a", help="Every project."),
    outcome: Optional[Outcome] = typer.Option(None, "--outcome", help="Only this outcome."),
    limit: Optional[int] = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """List episodes, newest first."""
    store = get_store()
    projects = None if all_projects else [current_project(project)]
    found, problems = working.list_episodes(store, projects, outcome=outcome, limit=limit)
    for problem in problems:
        warn(problem)
    if json_output:
        emit_json([e.to_dict(with_body=False) for e in found])
        return
    if not found:
        info("no episodes")
        return
    table(
        ["id", "created", "project", "outcome", "steps", "goal"],
        [
            [e.id, e.created[:16].replace("T", " "), e.project, e.outcome, len(e.steps), e.goal]
            for e in found
        ],
    )


@episode_app.command("show", epilog=examples(
    "memctl episode show 01m8p0bq",
    "memctl episode show 01m8p0bq --json"))
def episode_show(
    episode_id: str = typer.Argument(
        ..., metavar="ID", help="An episode id or unambiguous prefix."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show one episode (as `memctl show ID` does)."""
    print_episode(working.find_episode(get_store(), episode_id), json_output)


STEP_OPTION = typer.Option(None, "--step", help="'action => result', added after the steps so far; repeatable.")
LINK_OPTION = typer.Option(None, "--link", metavar="ID", help="A note this task produced or used; repeatable.")


@episode_app.command("finish", epilog=examples(
    "memctl episode finish 01m8p0bq --outcome completed --summary 'Pinned the runner image'"))
def episode_finish(
    episode_id: str = typer.Argument(..., metavar="ID", help="An in_progress episode's id or prefix."),
    outcome: Ending = typer.Option(..., "--outcome", help="How it ended: completed, partial or failed."),
    summary: Optional[str] = typer.Option(None, "--summary", help="What to remember about it (replaces the summary)."),
    step: Optional[list[str]] = STEP_OPTION,
    link: Optional[list[str]] = LINK_OPTION,
    tags: Optional[str] = typer.Option(None, "--tags", help="Comma-separated tags to add."),
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """End an in_progress episode: its outcome, and the last steps, summary and links."""
    episode = working.finish_episode(get_store(), episode_id, outcome=outcome, summary=summary,
                                     steps=step or [], links=link or [], tags=tags,
                                     allow_secret=allow_secret)
    if json_output:
        emit_json(episode.to_dict())
    else:
        info(f"finished episode {episode.id} ({episode.outcome})  {episode.path}")


@episode_app.command("update", epilog=examples("memctl episode update 01m8p0bq --outcome partial"))
def episode_update(
    episode_id: str = typer.Argument(..., metavar="ID", help="An episode id or unambiguous prefix."),
    outcome: Optional[Outcome] = typer.Option(None, "--outcome", help="A new outcome."),
    summary: Optional[str] = typer.Option(None, "--summary", help="A new summary (replaces it)."),
    step: Optional[list[str]] = STEP_OPTION,
    link: Optional[list[str]] = LINK_OPTION,
    tags: Optional[str] = typer.Option(None, "--tags", help="Comma-separated tags to add."),
    allow_secret: bool = ALLOW_SECRET_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """Change an episode: outcome, summary; add steps, linked notes, tags."""
    episode = working.update_episode(get_store(), episode_id, outcome=outcome, summary=summary,
                                     steps=step or [], links=link or [], tags=tags,
                                     allow_secret=allow_secret)
    if json_output:
        emit_json(episode.to_dict())
    else:
        info(f"updated episode {episode.id} ({episode.outcome})  {episode.path}")


# --- recall --------------------------------------------------------------------------------


@app.command(epilog=examples(
    'memctl recall "fix the flaky login test"', "memctl recall --max-chars 4000 --json"))
def recall(
    query: Optional[str] = typer.Argument(
        None, metavar="QUERY", help="What the session is about."
    ),
    project: Optional[str] = PROJECT_OPTION,
    limit: Optional[int] = typer.Option(
        None, "--limit", "-n", callback=checked(lambda n: arguments.limit(n, low=0)), help="At most N notes (default: setting recall.max_notes, 8)."
    ),
    note_chars: Optional[int] = typer.Option(
        None, "--note-chars", callback=checked(lambda n: arguments.at_least(n, 10, "note_chars")), help="Cut each note to N characters (default: setting recall.note_chars, 100)."
    ),
    max_chars: Optional[int] = typer.Option(
        None,
        "--max-chars",
        callback=checked(lambda n: arguments.at_least(n, 200, "max_chars")),
        help="Cap for the whole block (default: setting recall.total_chars).",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Print the budgeted memory block for an agent: MEMORY.md, scratchpad, the best notes."""
    result = recalling.recall(
        get_store(),
        current_project(project),
        query,
        max_notes=limit,
        note_chars=note_chars,
        total_chars=max_chars,
    )
    for warning in result.warnings:
        warn(warning)
    if json_output:
        emit_json(result.to_dict())
    else:
        _write(result.markdown)
