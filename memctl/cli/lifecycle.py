"""Lifecycle commands: `supersede`, `archive` (the TTL sweep), `restore` and `health`."""

from __future__ import annotations

from typing import Any, Optional

import typer

from memctl.cli.base import JSON_OPTION, app, examples, get_store
from memctl.cli.output import console, emit_json, info, table, visible, write
from memctl.core import arguments
from memctl.core.clock import format_time
from memctl.core.errors import MemctlError, UsageError, arg
from memctl.services import notes, upkeep
from memctl.services.upkeep import LastSweep, SweepItem, bar, report_month

SHOWN_PAIRS = 20  # pairs of each kind shown, as for idle notes (`--json` has all those listed)


@app.command(epilog=examples("memctl supersede 01kd3q 01m2x7", "memctl supersede 01kd3q 01m2x7 --json"))
def supersede(
    old: str = typer.Argument(..., metavar="OLD", help="The note that is no longer true."),
    new: str = typer.Argument(..., metavar="NEW", help="The note that replaces it."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Mark OLD as replaced by NEW (it leaves default search; it stays on disk and in git)."""
    old_note, new_note = notes.supersede(get_store(), old, new)
    if json_output:
        emit_json({"id": old_note.id, "path": old_note.path, "status": old_note.status,
                   "superseded_by": new_note.id})
    else:
        kept = ", kept in the archive" if old_note.status == "archived" else ""
        info(f"{old_note.id} is superseded by {new_note.id}{kept}  ({old_note.path})")


@app.command(epilog=examples("memctl archive --dry-run", "memctl archive --json"))
def archive(
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan; change nothing."),
    json_output: bool = JSON_OPTION,
) -> None:
    """TTL sweep: demote idle low-importance notes, archive idle and expired ones."""
    plan = upkeep.archive(get_store(), dry_run=dry_run)
    if json_output:
        emit_json(plan.to_dict(dry_run))
        return
    rows = [[i.id, "archive", i.project, i.reason, _moves_to(i)] for i in plan.archive]
    rows += [[i.id, f"demote {i.importance}→{i.new_importance}", i.project, i.reason, ""]
             for i in plan.demote]
    rows += [[i.id, "keep", i.project, i.reason, ""] for i in plan.kept]
    if rows:
        table(["id", "action", "project", "why", "moves to"], _cells(rows),
              title="archive plan (dry run)" if dry_run else "archive sweep")
    summary = f"{len(plan.archive)} archived, {len(plan.demote)} demoted"
    if dry_run:
        info(f"dry run: would have {summary}; nothing changed")
    elif plan.empty:
        info("nothing to archive or demote")
    else:
        info(summary + (f" (commit {plan.commit[:10]})" if plan.commit else ""))


def _moves_to(item: SweepItem) -> str:
    """Where an archived note goes, as short as says it: the folder within its project
    (`archive/fact/`) when it keeps its file name, else the whole path (--json: always)."""
    target = item.target or ""
    folder, _, name = target.rpartition("/")
    if name == item.path.rpartition("/")[2] and folder.startswith(item.project + "/"):
        return folder[len(item.project) + 1:] + "/"
    return target


@app.command(epilog=examples("memctl restore 01kd3q", "memctl restore --last-sweep"))
def restore(
    note_ids: Optional[list[str]] = typer.Argument(
        None, metavar="ID...", help="Archived or superseded notes (one commit for all)."),
    last_sweep: bool = typer.Option(
        False, "--last-sweep", help="Every note the newest archive sweep archived."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Bring archived (or superseded) notes back to active."""
    result = upkeep.restore_many(get_store(), note_ids or [], last_sweep=last_sweep)
    restored = [{"id": note.id, "path": note.path, "from": old_path, "status": note.status}
                for note, old_path in result.notes]
    if json_output:
        if len(note_ids or []) == 1:
            emit_json(restored[0])  # one id: one object, as before bulk restore existed
        else:
            emit_json({"restored": restored, "commit": result.commit,
                       "skipped": [{"id": i, "why": why} for i, why in result.skipped],
                       **({"sweep": result.sweep.to_dict()} if result.sweep else {})})
        return
    if result.sweep is not None:
        info(_sweep_undone(result.sweep))
    for entry in restored:
        moved = entry["from"] != entry["path"]  # a superseded note stays where it is
        info(f"restored {entry['id']}  " + (f"{entry['from']} → {entry['path']}" if moved
                                             else entry["path"]))
    for note_id, why in result.skipped:
        info(f"skipped {note_id}: {why}")


def _sweep_undone(sweep: LastSweep) -> str:
    """Which sweep `restore --last-sweep` undid, and the killed one it passed over."""
    when = format_time(sweep.at) if sweep.at else "an unknown time"
    said = (f"undid the archive sweep of {when} (commit {sweep.commit[:10]})" if sweep.commit
            else f"undid the archive sweep of {when}, killed on this machine before its commit")
    if sweep.passed_over is not None:
        said += (f"; not the one killed on this machine at {format_time(sweep.passed_over)}, "
                 "which is older: `memctl list --status archived` shows its notes, "
                 "`memctl restore ID...` brings them back")
    return said


@app.command(epilog=examples("memctl health", "memctl health --markdown ~/reports --strict"))
def health(
    json_output: bool = JSON_OPTION,
    markdown: Optional[str] = typer.Option(
        None, "--markdown", metavar="FILE",
        help="Write the report as Markdown to FILE (a folder gets health-YYYY-MM.md; - is stdout).",
    ),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any problem is found."),
) -> None:
    """The health report: totals, recall, contradictions, duplicates, secrets, drift, git."""
    if markdown == "-" and json_output:
        raise UsageError(f"{arg('markdown')} - and {arg('json')} both print on stdout; choose one")
    arguments.not_empty(markdown, arg("markdown"), "give a file, a folder or - for stdout")
    report = upkeep.health(get_store())
    if markdown:
        _write_markdown(report, markdown)
    if json_output:
        emit_json(report)
    elif not markdown:
        _render(report)
    if strict and report["problems"]:
        import sys

        listed = "; ".join(p["message"] for p in report["problems"])
        sys.stderr.write(f"error: health found problems: {listed}\n")
        raise typer.Exit(1)


def _write_markdown(report: dict[str, Any], target: str) -> None:
    from pathlib import Path

    if target == "-":  # stdout, as for every other FILE argument of memctl

        write(upkeep.health_markdown(report))
        return
    path = Path(target).expanduser()
    if path.is_dir():
        path = path / f"health-{report_month(report)}.md"
    try:
        upkeep.write_health_markdown(report, path)
    except OSError as exc:
        raise MemctlError(f"cannot write {path}: {exc.strerror}") from None
    info(f"wrote {path}")


def _render(report: dict[str, Any]) -> None:
    from rich.markup import escape

    out = console()
    totals = report["totals"]
    out.print(f"[bold]memctl health[/]  {escape(visible(report['store']))}  ({report['generated']})")
    out.print(f"{_plural(totals['notes'], 'note')}, {_plural(totals['episodes'], 'episode')}")
    if totals.get("last_good"):
        out.print(f"and {_plural(totals['last_good'], 'note')} listed and searched from "
                  "its last good version: its file does not parse (below)")
    largest = max(totals["by_type"].values(), default=0)
    table(["type", "notes", ""],
          _cells([[k, v, bar(v, largest)] for k, v in totals["by_type"].items()]),
          title="by type")
    table(["project", "notes"], _cells([[k, v] for k, v in totals["by_project"].items()]),
          title="by project")
    table(["status", "notes"], _cells([[k, v] for k, v in totals["by_status"].items()]),
          title="by status")
    # The access counters count both search hits and recalls (memctl/disk/counters.py): the
    # words say so, whatever the older JSON keys are called (docs/health.md).
    _section(f"most accessed by search or recall, last 30 days ({len(report['top_recalled'])})",
             ["id", "project", "accesses", "title"],
             [[e["id"], e["project"], e["accesses_30d"], e["title"]]
              for e in report["top_recalled"]])
    unrecalled = report["unrecalled"]
    _section(f"idle {report['unrecalled_days']:g}+ days: no search hit, recall or edit "
             f"({len(unrecalled)})",
             ["id", "project", "days", "title"],
             [[e["id"], e["project"], e["days"], e["title"]] for e in unrecalled[:20]],
             more=len(unrecalled) - 20)
    for key, title in (("contradictions", "possible contradictions"),
                       ("near_duplicates", "near-duplicates")):
        # Counted by note; the most alike pairs listed (docs/health.md), the first 20 here.
        pairs = report[key]
        notes = report.get("pair_counts", {}).get(key, {}).get("notes", 0)
        _section(f"{title} ({notes} notes; the {len(pairs)} most alike pairs)" if notes
                 else f"{title} (0)", ["a", "b", "score", "why", "texts"],
                 [[e["a"]["id"], e["b"]["id"], e["score"], ", ".join(e["reasons"]),
                   f"{e['a']['title']}\n{e['b']['title']}"] for e in pairs[:SHOWN_PAIRS]],
                 more=len(pairs) - SHOWN_PAIRS)
    _section(f"expired, not archived ({len(report['expired'])})",
             ["id", "project", "expires", "kept because", "title"],
             [[e["id"], e["project"], e["expires"], e["kept_because"] or "", e["title"]]
              for e in report["expired"]])
    _section(f"files that do not parse ({len(report['parse_errors'])})", ["where", "problem"],
             [[f"{e['path']}:{e['line']}", e["message"]] for e in report["parse_errors"]])
    _section(f"values memctl cannot read ({len(report['field_warnings'])})",
             ["id", "path", "warnings"],
             [[e["id"], e["path"], "; ".join(e["warnings"])] for e in report["field_warnings"]])
    _section(f"likely secrets, masked ({len(report['secrets'])})", ["where", "kind", "text"],
             [[f"{e['path']}:{e['line']}", e["kind"], e["masked"]] for e in report["secrets"]])
    _section(f"symbolic links, never followed ({len(report['links'])})", ["path", "points to"],
             [[e["path"], e["target"]] for e in report["links"]])
    _section(f"note templates to fix ({len(report['templates'])})", ["path", "problem"],
             [[e["path"], e["problem"]] for e in report["templates"]])
    _section(f"ids that are not valid ({len(report['invalid_ids'])})", ["path", "problem"],
             [[e["path"], e["warning"]] for e in report["invalid_ids"]])
    _section(f"ids used by more than one file ({len(report['duplicate_ids'])})", ["id", "files"],
             [[e["id"], ", ".join(e["paths"])] for e in report["duplicate_ids"]])
    _section(f"git conflict markers ({len(report['conflict_markers'])})", ["where", "problem"],
             [[f"{e['path']}:{e['line']}", e["message"]] for e in report["conflict_markers"]])
    _section(f"supersessions that lead nowhere ({len(report['supersession'])})",
             ["id", "path", "problem"],
             [[e["id"], e["path"], e["message"]] for e in report["supersession"]])
    _section(f"facts stated by more than one active note ({len(report['same_fact'])})",
             ["notes", "problem"],
             [[", ".join(e["ids"]), e["message"]] for e in report["same_fact"]])
    _section(f"live notes beside their tombstone ({len(report['tombstoned_notes'])})",
             ["id", "path", "tombstone"],
             [[e["id"], e["path"], e["tombstone"]] for e in report["tombstoned_notes"]])
    _section(f"projects whose names differ only in case ({len(report['case_twins'])})",
             ["projects", "problem"],
             [[", ".join(e["projects"]), e["message"]] for e in report["case_twins"]])
    _section(f"settings memctl does not know ({len(report['unknown_settings'])})",
             ["setting", "problem"],
             [[e["setting"], e["message"]] for e in report["unknown_settings"]])
    _section(f"folders memctl does not read ({len(report['ignored'])})", ["folder"],
             [[path] for path in report["ignored"]])
    _section(f"MEMORY.md over budget ({len(report['memory_over_budget'])})",
             ["path", "bytes", "limit"],
             [[e["path"], e["bytes"], e["limit"]] for e in report["memory_over_budget"]])
    _section(f"conflict copies ({len(report['conflicts'])})", ["path", "project"],
             [[e["path"], e["project"]] for e in report["conflicts"]])
    index, git = report["index"], report["git"]
    out.print(f"index: {index['indexed_docs']} notes indexed, {index['drifted']} files differ "
              "from the files on disk")
    watcher = report["watcher"]
    out.print("watcher: " + (f"running (pid {watcher['pid']}), index kept fresh" if watcher["live"]
                             else "not running (each command checks the files itself)"))
    pushed = "" if git["unpushed"] is None else f", {git['unpushed']} unpushed commits"
    out.print(f"git: branch {escape(visible(git['branch'] or '-'))}, {len(git['uncommitted'])} "
              f"uncommitted changes, remote {escape(visible(git['remote'] or 'none'))}{pushed}")
    if git["error"]:
        out.print(f"git error: {escape(visible(git['error']))}")
    if report["problems"]:
        out.print("[bold red]problems:[/] "
                  + escape(visible("; ".join(p["message"] for p in report["problems"]))))
    else:
        out.print("[bold green]no problems found[/]")


def _cells(rows: list[list[Any]]) -> list[list[str]]:
    """Rows as text for `table` (which never reads markup: "[x]" in a title shows as written)."""
    return [["" if cell is None else str(cell) for cell in row] for row in rows]


def _section(title: str, columns: list[str], rows: list[list[Any]], more: int = 0) -> None:
    if not rows:
        console().print(f"{title}: none")
        return
    table(columns, _cells(rows), title=title)
    if more > 0:
        console().print(f"… and {more} more (--json lists all)")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
