"""Everyday commands: init, add, show, list, edit, forget."""

from __future__ import annotations

from typing import Literal, Optional

import typer

from memctl.cli.adding import run_add
from memctl.cli.base import (
    JSON_OPTION,
    LIMIT_OPTION,
    PROJECT_OPTION,
    app,
    checked,
    current_project,
    examples,
    get_store,
    store_path_option,
)
from memctl.cli.output import (
    emit_json,
    info,
    report_parse_errors,
    table,
    warn,
    write,
)
from memctl.cli.showing import run_show
from memctl.core import arguments
from memctl.core.errors import CLI, arg
from memctl.core.secrets import mask_secrets
from memctl.core.vocab import NOTE_TYPES, STATUSES
from memctl.services import notes

NoteType = Literal[NOTE_TYPES]  # type: ignore[valid-type]
StatusChoice = Literal[STATUSES + ("any",)]  # type: ignore[valid-type]
SortChoice = Literal["updated", "created", "importance", "type", "project"]


@app.command(epilog=examples(
    "memctl init", "memctl init --clone git@github.com:me/memory.git"))
def init(
    path: Optional[str] = typer.Argument(None, help="Where to create the store (default: --store, $MEMCTL_STORE, or the default)."),
    clone: Optional[str] = typer.Option(None, "--clone", metavar="URL", help="Make this machine's copy of an existing store from its git remote."),
    force: bool = typer.Option(False, "--force", help="Make a store even of a folder or git repository holding other files than memory (a code repository: memctl commits into its history)."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Create a store (git init, settings, layout). Safe to run again."""
    from pathlib import Path

    arguments.not_empty(path, "the store's folder", "give a folder, or leave it out for --store, "
                        "$MEMCTL_STORE or the default store")
    arguments.not_empty(clone, arg("clone"), "give the URL of the store's git remote")
    root = Path(path).expanduser().absolute() if path else store_path_option()
    # Lazy: the clone (all of sync) costs `add` and `show` ~15 ms of imports that only
    # `init` needs here (tests/test_layers.py, bench/bench_write.py).
    from memctl.services.creation import create_store

    store, created, warnings = create_store(root, clone, force=force)
    for warning in warnings:
        warn(warning)
    if json_output:
        emit_json({"store": str(store.root), "created": created})
    else:
        info(f"{'created' if created else 'already a store:'} {store.root}")


@app.command(epilog=examples(
    'memctl add "Use PostgreSQL 16, no ORM" --type decision --tags db',
    'memctl add "The API allows 100 requests a minute" --subject api --predicate rate-limit',
    "git log -1 --format=%B | memctl add - --type experience"))
def add(
    text: str = typer.Argument(..., metavar="TEXT", help="The note text, or - to read it from stdin."),
    note_type: NoteType = typer.Option("fact", "--type", "-t", case_sensitive=False, help="Note type."),
    project: Optional[str] = PROJECT_OPTION,
    global_scope: bool = typer.Option(False, "--global", "-g", help="Store in the global scope (seen by every project)."),
    importance: Optional[int] = typer.Option(None, "--importance", "-i", callback=checked(arguments.importance), help="1-10 (default: from the text and type)."),
    tags: Optional[str] = typer.Option(None, "--tags", help="Comma-separated tags."),
    subject: Optional[str] = typer.Option(None, "--subject", help="What the note is about (with --predicate: replaces an older note on the same)."),
    predicate: Optional[str] = typer.Option(None, "--predicate", help="Which property of the subject."),
    expires: Optional[str] = typer.Option(None, "--expires", help="A date (2027-03-01), a time (2027-03-01T09:30Z), a span (90min, 12h, 30d, 6w, 3m: months, 1y) or tomorrow."),
    corrects: Optional[str] = typer.Option(None, "--corrects", metavar="ID", help="For a correction: the note it corrects."),
    source_episode: Optional[str] = typer.Option(None, "--source-episode", metavar="ID", help="The episode this note came from."),
    force: bool = typer.Option(False, "--force", help="Write even if a near-duplicate exists."),
    allow_secret: bool = typer.Option(False, "--allow-secret", help="Write even if the text looks like a secret."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Write one note (checks for duplicates and conflicts first)."""
    # Also what the fast path runs (cli/fast.py).
    run_add(text, note_type=note_type, project=project, global_scope=global_scope,
            importance=importance, tags=tags, subject=subject, predicate=predicate,
            expires=expires, corrects=corrects, source_episode=source_episode, force=force,
            allow_secret=allow_secret, json_output=json_output)


@app.command(epilog=examples("memctl show 01m8p0bq", "memctl show 01m8p0bq --json"))
def show(
    note_id: str = typer.Argument(..., metavar="ID", help="A note id or an unambiguous prefix."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show one note (or episode)."""
    run_show(note_id, json_output=json_output)  # also what the fast path runs (cli/fast.py)






@app.command(epilog=examples("memctl get blog-backend database", "memctl get api rate-limit --json"))
def get(
    subject: str = typer.Argument(..., metavar="SUBJECT", help="What the fact is about (the notes' `subject`)."),
    predicate: Optional[str] = typer.Argument(None, metavar="[PREDICATE]", help="Which property of it (the notes' `predicate`)."),
    project: Optional[str] = PROJECT_OPTION,
    all_projects: bool = typer.Option(False, "--all-projects", "-a", help="Every project, not just this one and global."),
    json_output: bool = JSON_OPTION,
) -> None:
    """The exact fact: the active note about SUBJECT (and PREDICATE), in one step."""
    scope = None if all_projects else current_project(project)
    found = notes.get(get_store(), subject, predicate, project=scope)
    if json_output:
        emit_json([fact.to_dict() for fact in found])
        return
    for number, fact in enumerate(found):
        note = fact.note
        if number:
            write("\n")
        corrected = (f"  [corrected by {', '.join(fact.corrected_by)}]"
                     if fact.corrected_by else "")
        info(f"{note.id}  {note.subject} / {note.predicate or '-'}  {note.type}  "
             f"updated {(note.updated or note.created or '')[:10]}  {note.path}{corrected}")
        if fact.problem is not None:
            warn(f"{fact.problem} (its last good version is used)")
        write(note.body.strip("\n") + "\n")


@app.command("list", epilog=examples(
    "memctl list --type decision --since 30d", "memctl list --all-projects --sort importance -n 20"))
def list_notes(
    note_type: Optional[NoteType] = typer.Option(None, "--type", "-t", case_sensitive=False, help="Only this type."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Only notes with this tag."),
    project: Optional[str] = PROJECT_OPTION,
    all_projects: bool = typer.Option(False, "--all-projects", "-a", help="Every project, not just this one and global."),
    status: Optional[StatusChoice] = typer.Option(None, "--status", help="Only this status, or any (default: active)."),
    since: Optional[str] = typer.Option(None, "--since", help="Updated since a date, a span (7d, 2w), today or yesterday."),
    sort: SortChoice = typer.Option("updated", "--sort", help="Sort order (newest/highest first)."),
    limit: Optional[int] = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """List notes with filters."""
    scope = None if all_projects else current_project(project)
    found, index = notes.list_notes(get_store(), project=scope, note_type=note_type, tag=tag,
                                    status=status or "active", since=since, sort=sort, limit=limit)
    report_parse_errors(index.parse_errors())
    if json_output:
        emit_json(found)
        return
    table(["id", "type", "imp", "project", "updated", "title"],
          [[n["id"], n["type"], n["importance"], n["project"], (n.get("updated") or "")[:10], n["title"]]
           for n in found])
    info(f"{len(found)} note{'s' if len(found) != 1 else ''}")


@app.command(epilog=examples("memctl edit 01m8p0bq", "EDITOR=nano memctl edit 01m8p0bq"))
def edit(
    note_id: str = typer.Argument(..., metavar="ID", help="A note id or an unambiguous prefix."),
    fresh: bool = typer.Option(False, "--fresh", help="Drop the edit a failed save kept and start again from the note."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Open a note in $EDITOR; validated on save, `updated` stamped.

    A save that does not validate keeps your edit; the next `memctl edit ID` opens it again,
    with the reason at its top (--fresh starts again from the note)."""
    result = notes.edit(get_store(), note_id, fresh=fresh)
    if result.broken is not None:
        warn(f"{result.broken}; the file is unchanged and still does not parse")
    if json_output:
        emit_json(result.to_dict())
    else:
        note = result.note
        kept = " (from your kept edit)" if result.reopened and result.changed else ""
        info(f"{'saved' if result.changed else 'unchanged:'} {note.id}  {note.path}{kept}")
        if result.kept_text:
            info(f"the note's text it replaced (changed by hand since this edit began, never "
                 f"committed) was copied to {result.kept_text}")


@app.command(epilog=examples("memctl forget 01m8p0bq"))
def forget(
    note_id: str = typer.Argument(..., metavar="ID", help="A note id or an unambiguous prefix."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Delete a note, leaving a tombstone so no sync brings it back."""
    # A kept `memctl edit` draft of it is set aside, never deleted (docs/format.md).
    done = notes.forget(get_store(), note_id)
    note, kept = done.note, done.kept_edit
    if json_output:
        emit_json({"id": note.id, "path": note.path, "action": "forgotten", "kept_edit": kept,
                   "successor": done.successor, "repointed": done.repointed,
                   "left_superseded": done.left_superseded, "unreadable": done.unreadable,
                   "kept_text": done.kept_text})
        return
    info(f"forgot {note.id}  {mask_secrets(note.title)}")
    if kept:
        info(f"your kept edit of {note.id} was moved to {kept}")
    for message in done.messages():
        info(CLI.render(message))
