"""`memctl search` and `memctl reindex`."""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from memctl.cli.app import JSON_OPTION, PROJECT_OPTION, app, current_project, get_store
from memctl.query import KIND_TYPES
from memctl.vocab import NOTE_TYPES


def _check_types(values: Optional[list[str]]) -> list[str]:
    """Validated at parse time, so `--type banana` is bad usage (exit 2) naming the option."""
    chosen = [value.strip().lower() for value in values or ()]
    for value in chosen:
        if value not in NOTE_TYPES + KIND_TYPES:
            raise typer.BadParameter(
                f"{value!r} is not a type (choose from {', '.join(NOTE_TYPES + KIND_TYPES)})")
    return chosen


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


@app.command()
def search(
    query: str = typer.Argument(..., metavar="QUERY", help=(
        'Words (all must match), "a phrase", a OR b, -word, prefix*, tag:x, type:x; '
        "Chinese by any substring.")),
    project: Optional[str] = PROJECT_OPTION,
    all_projects: bool = typer.Option(False, "--all-projects", "-a",
                                      help="Every project, not just this one and global."),
    types: Optional[list[str]] = typer.Option(
        None, "--type", "-t", callback=_check_types,
        help=f"Only this type (repeatable): {', '.join(NOTE_TYPES + KIND_TYPES)}."),
    tags: Optional[list[str]] = typer.Option(None, "--tag", help="Only with this tag (repeatable)."),
    since: Optional[str] = typer.Option(None, "--since", help="Updated since a date or a span (7d)."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1,
                                        help="At most N hits (default: the search.default_limit setting, 20)."),
    include_stale: bool = typer.Option(False, "--include-stale",
                                       help="Also superseded, archived and expired notes."),
    explain: bool = typer.Option(False, "--explain", help="Show why each hit ranks where it does."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Ranked full-text search in English and Chinese."""
    from memctl.counters import record_access
    from memctl.index import ensure_fresh
    from memctl.query import parse
    from memctl.search import search as run_search

    parsed = parse(query)  # bad syntax is bad usage before any work is done
    store = get_store()
    scope = None if all_projects else current_project(project)
    if limit is None:
        limit = int(store.settings.get("search.default_limit"))
    index = ensure_fresh(store)
    from memctl.cli.output import report_parse_errors

    report_parse_errors(index)
    hits = run_search(store, parsed, project=scope, all_projects=all_projects,
                      types=types or (), tags=tags or (), since=since,
                      limit=limit, include_stale=include_stale, explain=explain, index=index)
    if parsed.truncated:
        _warn("the query was long: only its first words were used")
    record_access(store, [hit.id for hit in hits if hit.kind in ("note", "episode")])
    if json_output:
        from memctl.cli.output import emit_json

        emit_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        sys.stderr.write("no matches\n")
        return
    if hits[0].fuzzy:
        sys.stderr.write("no exact matches; showing close ones\n")
    _print_table(hits, explain)


def _marked(text: str) -> Any:
    from rich.text import Text

    from memctl.search import CLOSE, OPEN

    out = Text()
    bold = False
    start = 0
    for position, ch in enumerate(text):
        if ch in (OPEN, CLOSE):
            out.append(text[start:position], style="bold yellow" if bold else None)
            bold = ch == OPEN
            start = position + 1
    out.append(text[start:], style="bold yellow" if bold else None)
    return out


def _print_table(hits: list[Any], explain: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    from memctl.cli.output import console
    from memctl.search import CLOSE, OPEN

    grid = Table(show_lines=True, header_style="bold")
    grid.add_column("#", justify="right")
    grid.add_column("id", overflow="fold", no_wrap=True)
    grid.add_column("type")
    grid.add_column("project")
    grid.add_column("match", ratio=1)
    for number, hit in enumerate(hits, 1):
        plain = hit.snippet_marked.replace(OPEN, "").replace(CLOSE, "")
        cell = Text()
        title = " ".join(hit.title.split())
        if title and not plain.startswith(title[:40]):
            # A note's title is usually its first line, already in the snippet.
            cell.append(title[:100] + ("…" if len(title) > 100 else "") + "\n", style="bold")
        cell.append_text(_marked(hit.snippet_marked))
        where = hit.path + (f":{hit.line}" if hit.kind == "memory" else "")
        cell.append(f"\n{where}", style="dim")
        if hit.status != "active":
            cell.append(f"  [{hit.status}]", style="red")
        if explain and hit.explain:
            e = hit.explain
            bm25 = "filter" if e.get("bm25") is None else f"bm25 {e['bm25']:.3f}"
            line = (f"\n{bm25} × importance {e['importance_factor']} × recency "
                    f"{e['recency_factor']} (age {e['age_days']} d) × type {e['type_factor']}"
                    f" = {hit.score:.4f}")
            if e.get("placed_ahead_of"):
                line += f"; placed ahead of {', '.join(e['placed_ahead_of'])}, which it corrects"
            if e.get("fuzzy"):
                line += "; fuzzy: " + ", ".join(f"{k} → {'/'.join(v)}" for k, v in e["fuzzy"].items())
            cell.append(line, style="cyan")
        grid.add_row(str(number), hit.id, hit.type, hit.project, cell)
    console().print(grid)


@app.command()
def reindex(json_output: bool = JSON_OPTION) -> None:
    """Rebuild the search index from the files (with a progress bar on stderr)."""
    from memctl.index import open_index

    store = get_store()
    index = open_index(store)
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from memctl.cli.output import err_console

        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(), console=err_console(),
                      transient=True) as bar:
            task = bar.add_task("indexing", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            stats = index.rebuild(progress=progress)
    else:
        stats = index.rebuild()
    for path, line, message in stats.errors:
        _warn(f"{path}:{line}: {message} (not indexed)")
    counts = {kind: index.count(kind) for kind in ("note", "episode", "memory", "scratchpad")}
    if json_output:
        from memctl.cli.output import emit_json

        emit_json({"files": stats.files_changed + stats.unchanged, **counts,
                   "errors": [{"path": p, "line": n, "message": m} for p, n, m in stats.errors],
                   "elapsed_ms": round(stats.elapsed_ms, 1)})
        return
    sys.stderr.write(
        f"indexed {counts['note']} notes, {counts['episode']} episodes, {counts['memory']} "
        f"MEMORY.md sections, {counts['scratchpad']} scratchpads in "
        f"{stats.elapsed_ms / 1000:.2f} s"
        + (f"; {len(stats.errors)} files do not parse" if stats.errors else "") + "\n")
