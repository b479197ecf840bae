"""What `memctl add` does once its arguments are parsed: shared by the typer command and the
fast path (`memctl.cli.fast`), and free of typer so the fast path never imports it."""

from __future__ import annotations

from memctl.cli.context import current_project, get_store
from memctl.cli.output import emit_json, info, read_text_argument, warn
from memctl.services import notes


def run_add(text: str, *, note_type: str = "fact", project: str | None = None,
            global_scope: bool = False, importance: int | None = None, tags: str | None = None,
            subject: str | None = None, predicate: str | None = None,
            expires: str | None = None, corrects: str | None = None,
            source_episode: str | None = None, force: bool = False,
            allow_secret: bool = False, json_output: bool = False) -> None:
    """Write one note after the write-time checks, and say what was done: JSON on stdout, or
    lines for people on stderr."""
    store = get_store()
    result = notes.remember(
        store, read_text_argument(text), note_type=note_type.lower(),
        project=current_project(project, global_scope), importance=importance, tags=tags,
        subject=subject, predicate=predicate, expires=expires, corrects=corrects,
        source_episode=source_episode, force=force, allow_secret=allow_secret, source="cli")
    if json_output:
        emit_json(result.to_dict())
        return
    # The words of the JSON `action` (docs/format.md): "created", or "merged" into a near-duplicate
    verb = "merged into" if result.action == "merged" else "created"
    info(f"{verb} {result.id}  {result.path}")
    for old in result.superseded:
        info(f"  supersedes {old}")
    for old in result.not_superseded:
        warn(f"{old} has the same subject and predicate but its file does not parse, so it "
             f"was not superseded: fix it (`memctl edit {old}`), then "
             f"`memctl supersede {old} {result.id}`")
    if result.corrects:
        info(f"  correction of {result.corrects}: {result.corrects} stays active, the correction "
             "ranks ahead of it")
    for other in result.similar:
        info(f"  similar to {other} (may contradict it: check with `memctl show {other}`)")
