"""Moving memory between machines: export, import, sync, log, conflicts, and git's merge
driver entry point (merge-file)."""

from __future__ import annotations

from typing import Literal, Optional

import typer

from memctl.cli.base import (
    JSON_OPTION,
    PROJECT_OPTION,
    app,
    current_project,
    examples,
    get_store,
    project_callback,
)
from memctl.cli.output import emit_json, err_console, info, table, warn, write
from memctl.core import arguments
from memctl.core.errors import UsageError, arg
from memctl.core.vocab import MAX_FILE_BYTES, MERGE_DRIVER_IDENTITY
from memctl.services import exchange
from memctl.services.exchange import (
    diff_copy,
    export_store,
    find_copy,
    import_into,
    list_conflicts,
    note_log,
    resolve,
)
from memctl.services.exchange import merge_file as run

ImporterChoice = Literal["auto", "bundle", "markdown", "agents", "cline", "claude-memory", "mem0"]
PROGRESS_FROM = 200  # files; smaller exports finish before a bar is worth drawing


def _how_to_fix(path: str, too_big: bool) -> str:
    """How to fix a file that does not parse: `memctl edit` opens a note as it is, but not one
    over the 10 MB memctl reads (no such note is known to it)."""
    if too_big:
        return (f"shorten it to under {MAX_FILE_BYTES // 2**20} MB in a text editor, opened by "
                f"its path (memctl neither indexes nor opens a file over "
                f"{MAX_FILE_BYTES // 2**20} MB, so `memctl edit` cannot)")
    return "fix it" + (" (`memctl edit` with the note's id opens it as it is)"
                       if path.endswith(".md") else "")


@app.command(epilog=examples("memctl export memory.zip", "memctl export blog.zip --project blog-backend"))
def export(
    target: str = typer.Argument(..., metavar="FILE.zip", help="The zip file to write."),
    project: Optional[str] = typer.Option(None, "--project", "-p", callback=project_callback,
                                          help="Only this project (default: the whole store)."),
    all_projects: bool = typer.Option(False, "--all", help="The whole store (the default)."),
    skip_unreadable: bool = typer.Option(False, "--skip-unreadable", help="Leave out (and name) files that cannot be read, instead of stopping."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Write the store (or one project) to a zip for `memctl import` on another machine."""
    from pathlib import Path

    if project and all_projects:
        raise typer.BadParameter("--project and --all exclude each other", param_hint="--all")
    arguments.not_empty(target, "the zip file name", "give the path of the zip to write")
    store = get_store()
    with _progress("exporting") as update:
        result = export_store(store, Path(target).expanduser(), project=project, progress=update,
                              skip_unreadable=skip_unreadable)
    for path in result.skipped:
        warn(f"{path}: cannot be read; left out of the zip")
    for item in result.secrets:
        warn(f"{item['path']}:{item['line']}: likely {item['kind']} {item['masked']} goes into the zip")
    for problem in result.broken:
        note_id = result.left_out_ids.get(problem.path)
        kept = f"; the other machine keeps its version of {note_id}" if note_id else ""
        fix = _how_to_fix(problem.path, problem.path in result.too_big_to_edit)
        warn(f"{problem}; left out of the zip (memctl import would refuse it{kept}): {fix}, "
             f"then export again")
    if result.removals_withheld:
        warn("a note left out above does not say its id (a file renamed by hand, its `id:` "
             "line not readable): any removed note could be it, so this zip carries no note "
             "removals; fix the file and export again to pass them on")
    if json_output:
        emit_json(result.to_dict())
    else:
        scope = f"project {project}" if project else "the whole store"
        info(f"exported {scope}: {result.files} files, {result.bytes / 1024:.1f} KB -> {result.path}")


class _progress:
    """A rich progress bar on stderr once there is enough to show; silent otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar = None
        self.task = None

    def __enter__(self):
        def update(done: int, total: int) -> None:
            if total < PROGRESS_FROM:
                return
            if self.bar is None:
                from rich.progress import Progress

                self.bar = Progress(console=err_console(), transient=True)
                self.bar.start()
                self.task = self.bar.add_task(self.label, total=total)
            self.bar.update(self.task, completed=done)

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


@app.command("import", epilog=examples(
    "memctl import memory.zip --dry-run", "memctl import ~/old-notes --from markdown"))
def import_command(
    source: str = typer.Argument(..., metavar="FILE.zip|DIR|STORE",
                                 help="A memctl zip, a folder, another store, or a file to import."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show exactly what would change; change nothing."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid",
                                      help="Import the valid entries and list the invalid ones as rejected."),
    importer: ImporterChoice = typer.Option("auto", "--from",
                                            help="Read SOURCE as this format (default: detect)."),
    project: Optional[str] = PROJECT_OPTION,
    allow_secret: bool = typer.Option(False, "--allow-secret", help="Import even files that look like they contain a secret."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Merge memory from another machine or tool: newest version wins, nothing is lost."""
    from pathlib import Path

    arguments.not_empty(source, "what to import", "give a zip, a folder or a store")
    store = get_store()
    kind = None if importer == "auto" else importer
    report = import_into(store, Path(source), dry_run=dry_run, skip_invalid=skip_invalid,
                         importer=kind, project=current_project(project), allow_secret=allow_secret)
    if json_output:
        emit_json(report.to_dict())
        return
    changes = report.changes()
    shown = changes if dry_run else changes[:20]
    for action, path in shown:
        info(f"{'would ' if dry_run else ''}{action} {path}")
    if len(changes) > len(shown):
        info(f"… and {len(changes) - len(shown)} more files")
    labels = {"conflicts": ("conflict", "conflicts"),
              "carried_copies": ("carried conflict copy", "carried conflict copies"),
              "held_back": ("held back", "held back")}
    counts = ", ".join(f"{len(v)} {labels.get(k, (k, k))[len(v) != 1]}"
                       for k, v in report.to_dict().items()
                       # (lists only: `counters_not_merged` and `counters_refused` are lines
                       # of their own, counted by their length)
                       if v and isinstance(v, list)
                       and k not in ("conflict_copies", "ignored", "warnings"))
    for item in report.rejected:
        info(f"rejected {item['path']}: {item['reason']}")
    for item in report.warnings:
        warn(f"{item['path']}: {item['reason']}")
    for item in report.skipped[:20]:
        info(f"skipped {item['path']}: {item['reason']}")
    if len(report.skipped) > 20:
        info(f"… and {len(report.skipped) - 20} more skipped (`--json` lists them all)")
    for note_id in report.retired:
        info(f"retired {note_id}: the source no longer has it (archived; `memctl restore "
             f"{note_id}` brings it back)")
    _name_copies(report.conflict_copies, dry_run)
    _name_renamed_and_revived(report.renamed, report.revived, report.counters_not_merged,
                              report.counters_refused)
    if report.held_back:
        warn(f"kept this store's own settings and templates; not applied from {source}: "
             f"{', '.join(report.held_back)} (copy what you want by hand)")
    # What the source held that is no memory: named whenever the import takes nothing else
    # (else a zip of only such entries said "nothing to do" and no more), and otherwise
    # unless it is a store's own file, which every store and zip holds.
    ignored = report.strays() if counts else report.ignored
    if ignored:
        more = f" and {len(ignored) - 5} more (`--json` lists them all)" if len(ignored) > 5 else ""
        info(f"ignored, as no memory memctl imports: {', '.join(ignored[:5])}{more}")
    info(f"{'dry run: ' if dry_run else ''}{counts or 'nothing to do'}")


def _name_renamed_and_revived(renamed: list[dict[str, str]], revived: list[str],
                              counters_not_merged: str | None,
                              counters_refused: str | None = None) -> None:
    """What a merge (sync or import) decided for the person to know: ids given up by rule 6
    (docs/sync.md), notes an edit brought back from a deletion, and counts not merged or
    left out."""
    if counters_not_merged:
        warn(counters_not_merged)
    if counters_refused:
        warn(counters_refused)
    for item in renamed:
        warn(f"{item['id']} was the id of two notes: the later-created one is now {item['to']} "
             f"({item['path']}), alike on every machine; both were kept")
    for note_id in revived:
        warn(f"{note_id} was deleted on one side and edited later on the other: the edit was "
             f"kept (`memctl forget {note_id}` deletes it again)")


def _name_copies(paths: list[str], dry_run: bool = False) -> None:
    """The conflict copies a merge made, one per line: a count alone says nothing to act on."""
    if not paths:
        return
    info(f"{len(paths)} conflict {'copy' if len(paths) == 1 else 'copies'} "
         f"{'would be ' if dry_run else ''}kept (the losing versions; `memctl conflicts diff "
         f"PATH` shows what differs):")
    for path in paths:
        info(f"  {path}")


@app.command(epilog=examples(
    "memctl sync --remote git@github.com:me/memory.git", "memctl sync --no-push"))
def sync(
    remote: Optional[str] = typer.Option(None, "--remote", metavar="URL",
                                         help="Set the store's git remote (only when it has none)."),
    no_push: bool = typer.Option(False, "--no-push", help="Commit, fetch and merge, but do not push."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Commit local changes, fetch, merge (newest wins, losers kept), push. Never forces."""
    arguments.not_empty(remote, arg("remote"), "give the remote's URL, or leave it out")
    report = exchange.sync(get_store(), remote=remote, push=not no_push)
    for item in report.received_secrets:
        warn(f"{item['path']}:{item['line']}: likely {item['kind']} {item['masked']} came from "
             f"the remote (a collaborator pushed it; `memctl edit` removes it here, the remote's "
             f"history keeps it: rotate the key)")
    for problem in report.broken:
        served = ("memctl reads its last good version" if problem.has_last_good
                  else "memctl leaves it out")
        warn(f"{problem}; {'synced' if report.pushed else 'committed'} as it is ({served} until "
             f"it is fixed); {_how_to_fix(problem.path, problem.path in report.too_big_to_edit)}")
    if json_output:
        emit_json(report.to_dict())
        return
    if report.committed:
        info("committed local changes")
    if report.merged:
        info(f"merged {len(report.pulled)} change(s) from {report.remote}")
    else:
        info("nothing new on the remote")
    _name_copies(report.conflicts)
    for item in report.moved_aside:
        warn(f"{item['path']} is a file here or on the remote and a folder on the other side: "
             f"the file was moved aside to {item['to']}, nothing was lost")
    _name_renamed_and_revived(report.renamed, report.revived, report.counters_not_merged,
                              report.counters_refused)
    if report.refused:
        warn(f"refused {len(report.refused)} path(s) from remote commit "
             f"{(report.refused_from or '')[:10]} (links, .memctl/ or .git* files, settings and "
             f"templates a remote may not change; kept as they are here): "
             f"{', '.join(report.refused)}")
    for item in report.secrets:
        warn(f"{item['path']}:{item['line']}: likely {item['kind']} {item['masked']} "
             f"{'was pushed' if report.pushed else 'is in the commits to push'}")
    info(f"pushed to {report.remote} ({report.branch})" if report.pushed else
         "nothing to push: the remote has every commit of this store" if report.nothing_to_push
         else "not pushed")


@app.command(epilog=examples("memctl log 01kd3q", "memctl log 01kd3q --json"))
def log(
    note_id: str = typer.Argument(..., metavar="ID", help="The note (an unambiguous id prefix is enough)."),
    json_output: bool = JSON_OPTION,
) -> None:
    """A note's history in git, newest first, through renames, archiving and deletion."""
    rows = note_log(get_store(), note_id)
    if json_output:
        emit_json(rows)
        return
    table(["commit", "time", "message"], [[r["commit"][:10], r["time"], r["message"]] for r in rows])


conflicts_app = typer.Typer(help="List and resolve conflict copies (versions that lost a merge).",
                            invoke_without_command=True, no_args_is_help=False,
                            epilog=examples("memctl conflicts", "memctl conflicts diff 1",
                                            "memctl conflicts keep 1"))
app.add_typer(conflicts_app, name="conflicts")


@conflicts_app.callback()
def conflicts(ctx: typer.Context, json_output: bool = JSON_OPTION) -> None:
    """List conflict copies (with no subcommand)."""
    if ctx.invoked_subcommand is not None:
        return

    copies = list_conflicts(get_store())
    if json_output:
        emit_json([c.to_dict() for c in copies])
        return
    if not copies:
        info("no conflict copies")
        return
    # One block per copy, each path on a line of its own: two long paths side by side in a
    # table fold into a dozen lines at 80 columns (tests/test_output.py).
    for copy in copies:
        write(f"{copy.number}  {copy.note_id or '(no id)'}  {copy.updated or ''}  "
              f"{copy.title or ''}".rstrip() + "\n")
        write(f"   copy:    {copy.path}\n")
        write(f"   current: {copy.current or '(deleted)'}\n")
    info("`memctl conflicts diff N` shows what differs; resolve with `memctl conflicts keep N` "
         "(use the copy) or `memctl conflicts drop N`")


@conflicts_app.command("show", epilog=examples("memctl conflicts show 1",
                                                 "memctl conflicts show 1 --json"))
def conflicts_show(ref: str = typer.Argument(..., metavar="N|PATH|ID"),
                   json_output: bool = JSON_OPTION) -> None:
    """Print a conflict copy."""

    store = get_store()
    copy = find_copy(store, ref)
    text = (store.root / copy.path).read_text(encoding="utf-8", errors="replace")
    if json_output:
        emit_json({**copy.to_dict(), "text": text})
    else:
        write(text)


@conflicts_app.command("diff", epilog=examples(
    "memctl conflicts diff 1",
    "memctl conflicts diff 1 --json"))
def conflicts_diff(ref: str = typer.Argument(..., metavar="N|PATH|ID"),
                   json_output: bool = JSON_OPTION) -> None:
    """What differs between the current version (---) and the conflict copy (+++)."""

    copy, diff = diff_copy(get_store(), ref)
    if json_output:
        emit_json({**copy.to_dict(), "diff": diff})
    elif diff:
        write(diff)
    else:
        info(f"{copy.path} does not differ from {copy.current}")


@conflicts_app.command("keep", epilog=examples("memctl conflicts keep 1"))
def conflicts_keep(ref: str = typer.Argument(..., metavar="N|PATH|ID"),
                   json_output: bool = JSON_OPTION) -> None:
    """Make the conflict copy the current version (and delete the copy)."""
    _resolve(ref, "keep", json_output)


@conflicts_app.command("drop", epilog=examples(
    "memctl conflicts drop 1",
    "memctl conflicts drop 1 --json"))
def conflicts_drop(ref: str = typer.Argument(..., metavar="N|PATH|ID"),
                   json_output: bool = JSON_OPTION) -> None:
    """Delete the conflict copy; the current version stays."""
    _resolve(ref, "drop", json_output)


def _resolve(ref: str, action: str, json_output: bool) -> None:
    copy = resolve(get_store(), ref, action)
    if json_output:
        emit_json({"action": action, **copy.to_dict()})
    else:
        info(f"{'kept' if action == 'keep' else 'dropped'} {copy.path}")


@app.command("merge-file", hidden=True)
def merge_file(
    base: str | None = typer.Argument(None), ours: str | None = typer.Argument(None),
    theirs: str | None = typer.Argument(None), path: str | None = typer.Argument(None),
    identify: bool = typer.Option(False, "--identify", hidden=True),
) -> None:
    """git's merge driver (%O %A %B %P): resolves a note like `memctl sync` does."""
    from pathlib import Path

    if identify:
        typer.echo(MERGE_DRIVER_IDENTITY)
        return
    if base is None or ours is None or theirs is None or path is None:
        raise UsageError("merge-file takes four paths (git's %O %A %B %P)")
    raise typer.Exit(run(Path(base), Path(ours), Path(theirs), path))
