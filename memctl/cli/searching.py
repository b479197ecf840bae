"""What `memctl search` does once its arguments are parsed: shared by the typer command and
the fast path (`memctl.cli.fast`), and free of typer so the fast path never imports it."""

from __future__ import annotations

import sys

from memctl.cli.context import current_project, get_store
from memctl.cli.output import (
    console,
    console_made,
    emit_json,
    report_parse_errors,
    visible,
    warn,
)
from memctl.cli.plaintext import PlainText, plain_console
from memctl.cli.plaintext import cell_len as plain_cell_len
from memctl.core.query import parse
from memctl.core.vocab import GLOBAL
from memctl.services import retrieval
from memctl.services.retrieval import CLOSE, OPEN

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console
    from rich.containers import Lines
    from rich.text import Text

    from memctl.cli.plaintext import PlainConsole
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
    if not found.hits and (found.stale_matches or found.other_project_matches
                           or not json_output):
        # With --json only when something else matches (on stderr: stdout stays the array).
        sys.stderr.write(no_matches(found.stale_matches, found.other_project_matches,
                                    scope) + "\n")
    if json_output:
        emit_json([hit.to_dict() for hit in found.hits])
        return
    if not found.hits:
        return
    if found.hits[0].fuzzy:
        sys.stderr.write("no exact matches; showing close ones\n")
    _print_hits(found.hits, explain)


def no_matches(stale: int, elsewhere: int = 0, project: str | None = None) -> str:
    """What a search that found nothing says, naming the stale entries that match and the
    matches in other projects than `project` (and global)."""
    said = "no matches among live notes" if stale else "no matches"
    if elsewhere and project:
        said += " in global" if project == GLOBAL else f" in project {project} or global"
    if stale:
        said += (f"; {stale} stale {_noun(stale)} (superseded, archived or expired):"
                 f" --include-stale shows {_them(stale)}")
    if elsewhere:
        said += (f"; {elsewhere} {_noun(elsewhere)} in other projects: --all-projects shows"
                 f" {_them(elsewhere)}")
    return said


def _noun(count: int) -> str:
    return "match" if count == 1 else "matches"


def _them(count: int) -> str:
    return "it" if count == 1 else "them"


def _marked(text: str, text_type: type[Text]) -> Text:
    out = text_type()
    bold = False
    start = 0
    for position, ch in enumerate(text):
        if ch in (OPEN, CLOSE):
            out.append(text[start:position], style="bold yellow" if bold else None)
            bold = ch == OPEN
            start = position + 1
    out.append(text[start:], style="bold yellow" if bold else None)
    return out


# Each hit takes at most this many lines (its --explain line apart): a number, the id, type and
# project, then the title and snippet flowing after them, cut with "…" (tests/test_output.py).
HIT_LINES = 3
_TITLE_CELLS = 60  # a title shown before a snippet from further into the note is cut to this


def _print_hits(hits: list[Hit], explain: bool) -> None:
    """The hits, laid out by rich on a terminal (with colours) or for text rich must measure;
    else by `memctl.cli.plaintext`, the same bytes without importing rich (~30 ms of start-up;
    tests/test_plaintext.py holds the two equal)."""
    hits = [_visible_hit(hit) for hit in hits]
    rows = [(str(number), _shown_id(hit), hit.type, hit.project)
            for number, hit in enumerate(hits, 1)]
    explained = [visible(_explained(hit)) if explain and hit.explain else None for hit in hits]
    shown = [*(cell for row in rows for cell in row), *(hit.status for hit in hits),
             *(line for line in explained if line), *(" ".join(hit.title.split()) for hit in hits),
             *(" ".join(hit.snippet_marked.split()).replace(OPEN, "").replace(CLOSE, "")
               for hit in hits)]
    plain = None if console_made() else plain_console(shown)
    if plain is None:
        from rich.cells import cell_len
        from rich.text import Text

        lay_out_hits(hits, rows, explained, console(), Text, cell_len)
    else:
        lay_out_hits(hits, rows, explained, plain, PlainText, plain_cell_len)
        plain.flush()


def lay_out_hits(hits: list[Hit], rows: list[tuple[str, str, str, str]],
                 explained: list[str | None], out: Console | PlainConsole,
                 text_type: type[Text], cell_len: Callable[[str], int]) -> None:
    """Print each hit (its number, id, type and project in `rows`, its --explain line or None)
    on `out` with `text_type`: rich's console and Text, or their plain counterparts."""
    sizes = [max(cell_len(row[column]) for row in rows) for column in range(4)]
    indent = sizes[0] + 2
    # The text is wrapped to what the margin leaves, never wider: a line wider than that was
    # cut at the terminal's edge, and what it lost was not on the next line either.
    room = max(1, out.width - indent)
    for hit, (number, shown_id, kind, project), explanation in zip(hits, rows, explained,
                                                                   strict=True):
        lead = text_type()
        lead.append(shown_id + " " * (sizes[1] - cell_len(shown_id) + 2), style="bold")
        lead.append(kind + " " * (sizes[2] - cell_len(kind) + 2))
        lead.append(project + " " * (sizes[3] - cell_len(project) + 2), style="dim")
        if hit.status != "active":
            lead.append(f"[{hit.status}]  ", style="red")
        if hit.expired:
            lead.append("[expired]  ", style="red")
        lines = _flow(out, lead, _content(hit, text_type), room, text_type)
        if explanation:
            lines.extend(text_type(explanation, style="cyan").wrap(out, room))
        for position, line in enumerate(lines):
            margin = number.rjust(sizes[0]) + "  " if position == 0 else " " * indent
            out.print(text_type(margin) + line, no_wrap=True, overflow="ellipsis")


def _visible_hit(hit: Hit) -> Hit:
    """A copy of `hit` whose text a terminal shows as it is (`output.visible`)."""
    import copy

    shown = copy.copy(hit)
    for name in ("id", "path", "project", "type", "status", "title"):
        setattr(shown, name, visible(getattr(hit, name)))
    # The marks around the matches (OPEN, CLOSE: control characters) stay marks.
    shown.snippet_marked = OPEN.join(CLOSE.join(visible(piece) for piece in part.split(CLOSE))
                                     for part in hit.snippet_marked.split(OPEN))
    return shown


def _shown_id(hit: Hit) -> str:
    """The id to show: a note's or episode's own; for a MEMORY.md section its file and line
    (its id, `<project>/MEMORY.md#<section>`, would take the room of the text; --json has it);
    for a scratchpad its file name."""
    name = hit.path.rsplit("/", 1)[-1]
    if hit.kind == "memory":
        return f"{name}:{hit.line}"
    return name if hit.kind == "scratchpad" else hit.id


def _content(hit: Hit, text_type: type[Text]) -> Text:
    """The title (bold) and the snippet with its matches marked, on one line: the title once
    when the snippet begins with it."""
    snippet = _marked(" ".join(hit.snippet_marked.split()), text_type)
    plain = snippet.plain
    start = len(plain) - len(plain.lstrip("# "))  # a MEMORY.md section starts with its heading
    title = " ".join(hit.title.split())
    body = plain[start:].rstrip("…")
    if not title or plain[start:].startswith(title) or (body and title.startswith(body)):
        snippet = snippet[start:]
        if title and len(title) <= _TITLE_CELLS and plain[start:].startswith(title):
            snippet.stylize("bold", 0, len(title))
        return snippet
    shown = title if len(title) <= _TITLE_CELLS else title[:_TITLE_CELLS - 1].rstrip() + "…"
    return text_type(shown, style="bold") + text_type("  ") + snippet


def _flow(out: Console | PlainConsole, lead: Text, content: Text, room: int,
          text_type: type[Text]) -> list[Text]:
    """`lead` then `content` wrapped into lines `room` cells wide, at most HIT_LINES of them,
    the last cut with "…" when there is more."""
    width = lead.cell_len
    if width > room // 2:  # too little room left on the first line: the text starts below it
        lead.rstrip()
        lead.truncate(room, overflow="ellipsis")
        return [lead, *_at_most(content.wrap(out, room), HIT_LINES - 1, room)]
    # The lead is ASCII (ids, types, project names, statuses): a placeholder word as wide
    # keeps its place on the first line while the text is wrapped.
    lines = list((text_type("x" * (width - 1) + " ") + content).wrap(out, room))
    lines[0] = lead + lines[0][width:]
    return _at_most(lines, HIT_LINES, room)


def _at_most(lines: Lines, count: int, room: int) -> list[Text]:
    kept = list(lines)[:count]
    if len(lines) > count:
        last = kept[-1]
        last.rstrip()
        if last.cell_len >= room:
            last.truncate(room - 1)
        last.append("…")
    return kept


_POWERS = {1: "", 2: "²", 3: "³", 4: "⁴"}


def _explained(hit: Hit) -> str:
    """Each factor of the hit's score, on one line."""
    e = hit.explain
    if e.get("brought_in_for"):
        return (f"brought in for {e['brought_in_for']}, which it corrects (it matches none of "
                f"the query) = {hit.score:.4f}, the score of the hit it is placed ahead of")
    bm25 = "filter" if e.get("bm25") is None else f"bm25 {e['bm25']:.3f}"
    line = (f"{bm25} × importance {e['importance_factor']} × recency "
            f"{e['recency_factor']} (age {e['age_days']} d) × type {e['type_factor']}")
    if "coverage" in e:
        power = e.get("coverage_power", 1)
        line += f" × coverage {e['coverage']}{_POWERS.get(power, f'^{power:g}')}"
        line += f" × exact {e['exact_factor']}" if e.get("exact") else ""
        line += f" × fact {e['fact_factor']}" if e.get("fact") else ""
        line += f" (matched: {', '.join(e.get('matched') or []) or '-'})"
    line += f" = {hit.score:.4f}"
    if e.get("placed_ahead_of"):
        line += f"; placed ahead of {', '.join(e['placed_ahead_of'])}, which it corrects"
    if e.get("scope_words"):
        line += f"; not ranked: {', '.join(e['scope_words'])} (the project searched)"
    if e.get("fuzzy"):
        line += "; fuzzy: " + ", ".join(f"{k} → {'/'.join(v)}" for k, v in e["fuzzy"].items())
    return line
