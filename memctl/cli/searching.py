"""What `memctl search` does once its arguments are parsed: shared by the typer command and
the fast path (`memctl.cli.fast`), and free of typer so the fast path never imports it."""

from __future__ import annotations

import sys

from memctl.cli.context import current_project, get_store
from memctl.cli.output import console, emit_json, report_parse_errors, warn
from memctl.core.query import parse
from memctl.services import retrieval
from memctl.services.retrieval import CLOSE, OPEN

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from rich.text import Text

    from memctl.services.retrieval import Hit


def run_search(query: str, *, project: str | None = None, all_projects: bool = False,
               types: list[str], tags: list[str], since: str | None = None,
               limit: int | None = None, include_stale: bool = False, explain: bool = False,
               json_output: bool = False) -> None:
    """Search and print: JSON on stdout, or a table for people; messages on stderr."""
    parsed = parse(query)  # bad syntax is bad usage before the store is opened
    scope = None if all_projects else current_project(project)
    found = retrieval.search(get_store(), parsed, project=scope, all_projects=all_projects,
                             types=types, tags=tags, since=since, limit=limit,
                             include_stale=include_stale, explain=explain)
    report_parse_errors(found.parse_errors)
    if found.truncated:
        warn("the query was long: only its first words were used")
    if json_output:
        emit_json([hit.to_dict() for hit in found.hits])
        return
    if not found.hits:
        sys.stderr.write("no matches\n")
        return
    if found.hits[0].fuzzy:
        sys.stderr.write("no exact matches; showing close ones\n")
    _print_table(found.hits, explain)


def _marked(text: str) -> Text:
    from rich.text import Text

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


def _print_table(hits: list[Hit], explain: bool) -> None:
    from rich.table import Table
    from rich.text import Text

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
                    f"{e['recency_factor']} (age {e['age_days']} d) × type {e['type_factor']}")
            if "coverage" in e:
                line += f" × coverage {e['coverage']}²"
                line += f" × exact {e['exact_factor']}" if e.get("exact") else ""
                line += f" × fact {e['fact_factor']}" if e.get("fact") else ""
                line += f" (matched: {', '.join(e.get('matched') or []) or '-'})"
            line += f" = {hit.score:.4f}"
            if e.get("placed_ahead_of"):
                line += f"; placed ahead of {', '.join(e['placed_ahead_of'])}, which it corrects"
            if e.get("fuzzy"):
                line += "; fuzzy: " + ", ".join(f"{k} → {'/'.join(v)}" for k, v in e["fuzzy"].items())
            cell.append(line, style="cyan")
        grid.add_row(str(number), hit.id, hit.type, hit.project, cell)
    console().print(grid)
