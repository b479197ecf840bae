"""`memctl search` and `memctl reindex`."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from typer.core import TyperCommand

from memctl.cli.base import JSON_OPTION, PROJECT_OPTION, app, as_option_check, checked, examples, get_store
from memctl.cli.fast import query_words_last
from memctl.cli.output import emit_json, err_console, visible
from memctl.cli.searching import run_search
from memctl.core import arguments
from memctl.core.vocab import KIND_TYPES, NOTE_TYPES
from memctl.services.indexing import reindex as rebuild_index


def _check_types(values: Optional[list[str]]) -> list[str]:
    """Validated at parse time, so `--type banana` is bad usage (exit 2) naming the option."""
    return [as_option_check(arguments.search_type, value) for value in values or ()]


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {visible(message)}\n")


class SearchCommand(TyperCommand):
    """`memctl search -mysql`: a word after one `-` that is not short options of the command
    is the query, as the fast path reads it (memctl.cli.fast.is_query_word), not an unknown
    option; `--` still ends the options."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, query_words_last(args))


@app.command(cls=SearchCommand, epilog=examples(
    "memctl search postgres",
    "memctl search '\"connection pool\" OR pgbouncer' --all-projects",
    "memctl search 'deploy*' --type skill --since 30d --json"))
def search(
    query: str = typer.Argument(..., metavar="QUERY", help=(
        'Words (notes with all of them first), "a phrase" (required), a OR b, -word, '
        "prefix*, tag:x, type:x; Chinese by any substring. May start with -: -mysql.")),
    project: Optional[str] = PROJECT_OPTION,
    all_projects: bool = typer.Option(False, "--all-projects", "-a",
                                      help="Every project, not just this one and global."),
    types: Optional[list[str]] = typer.Option(
        None, "--type", "-t", callback=_check_types,
        help=f"Only this type (repeatable): {', '.join(NOTE_TYPES + KIND_TYPES)}."),
    tags: Optional[list[str]] = typer.Option(None, "--tag", help="Only with this tag (repeatable)."),
    since: Optional[str] = typer.Option(None, "--since", help="Updated since a date, a span (7d), today or yesterday."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", callback=checked(arguments.limit),
                                        help="At most N hits (default: the search.default_limit setting, 20)."),
    include_stale: bool = typer.Option(False, "--include-stale",
                                       help="Also superseded, archived and expired notes."),
    explain: bool = typer.Option(False, "--explain", help="Show why each hit ranks where it does."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Ranked full-text search in English and Chinese."""
    run_search(query, project=project, all_projects=all_projects, types=types or [],
               tags=tags or [], since=since, limit=limit, include_stale=include_stale,
               explain=explain, json_output=json_output)


@app.command(epilog=examples("memctl reindex", "memctl reindex --json"))
def reindex(json_output: bool = JSON_OPTION) -> None:
    """Rebuild the search index from the files (with a progress bar on stderr)."""
    store = get_store()
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(), console=err_console(),
                      transient=True) as bar:
            task = bar.add_task("indexing", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            stats, counts = rebuild_index(store, progress=progress)
    else:
        stats, counts = rebuild_index(store)
    for path, line, message in stats.errors:
        _warn(f"{path}:{line}: {message} (not indexed)")
    if json_output:
        emit_json({"files": stats.files_changed + stats.unchanged, **counts,
                   "errors": [{"path": p, "line": n, "message": m} for p, n, m in stats.errors],
                   "elapsed_ms": round(stats.elapsed_ms, 1)})
        return
    sys.stderr.write(
        f"indexed {counts['note']} notes, {counts['episode']} episodes, {counts['memory']} "
        f"MEMORY.md sections, {counts['scratchpad']} scratchpads in "
        f"{stats.elapsed_ms / 1000:.2f} s"
        + (f"; {len(stats.errors)} file{'s do' if len(stats.errors) > 1 else ' does'} not parse"
           if stats.errors else "") + "\n")
