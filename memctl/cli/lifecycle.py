"""Lifecycle commands: `supersede`, `archive` (the TTL sweep), `restore` and `health`."""

from __future__ import annotations

from typing import Any, Optional

import typer

from memctl.cli.base import JSON_OPTION, app, get_store
from memctl.cli.output import console, emit_json, info, table
from memctl.core.errors import MemctlError
from memctl.services import notes, upkeep
from memctl.services.upkeep import bar, report_month


@app.command()
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
        info(f"{old_note.id} is superseded by {new_note.id}  ({old_note.path})")


@app.command()
def archive(
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan; change nothing."),
    json_output: bool = JSON_OPTION,
) -> None:
    """TTL sweep: demote idle low-importance notes, archive idle and expired ones."""
    plan = upkeep.archive(get_store(), dry_run=dry_run)
    if json_output:
        emit_json(plan.to_dict(dry_run))
        return
    rows = [[i.id, "archive", i.project, i.reason, i.target or ""] for i in plan.archive]
    rows += [[i.id, f"demote {i.importance}→{i.new_importance}", i.project, i.reason, ""]
             for i in plan.demote]
    rows += [[i.id, "keep", i.project, i.reason, ""] for i in plan.kept]
    if rows:
        table(["id", "action", "project", "why", "moves to"], _escaped(rows),
              title="archive plan (dry run)" if dry_run else "archive sweep")
    summary = f"{len(plan.archive)} archived, {len(plan.demote)} demoted"
    if dry_run:
        info(f"dry run: would have {summary}; nothing changed")
    elif plan.empty:
        info("nothing to archive or demote")
    else:
        info(summary + (f" (commit {plan.commit[:10]})" if plan.commit else ""))


@app.command()
def restore(
    note_id: str = typer.Argument(..., metavar="ID", help="An archived or superseded note."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Bring an archived (or superseded) note back to active."""
    note, old_path = upkeep.restore(get_store(), note_id)
    if json_output:
        emit_json({"id": note.id, "path": note.path, "from": old_path, "status": note.status})
    else:
        info(f"restored {note.id}  {old_path} → {note.path}")


@app.command()
def health(
    json_output: bool = JSON_OPTION,
    markdown: Optional[str] = typer.Option(
        None, "--markdown", metavar="FILE",
        help="Write the report as Markdown to FILE (a folder gets health-YYYY-MM.md).",
    ),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any problem is found."),
) -> None:
    """The health report: totals, recall, contradictions, duplicates, secrets, drift, git."""
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
    out.print(f"[bold]memctl health[/]  {escape(report['store'])}  ({report['generated']})")
    out.print(f"{_plural(totals['notes'], 'note')}, {_plural(totals['episodes'], 'episode')}")
    largest = max(totals["by_type"].values(), default=0)
    table(["type", "notes", ""],
          _escaped([[k, v, bar(v, largest)] for k, v in totals["by_type"].items()]),
          title="by type")
    table(["project", "notes"], _escaped([[k, v] for k, v in totals["by_project"].items()]),
          title="by project")
    table(["status", "notes"], _escaped([[k, v] for k, v in totals["by_status"].items()]),
          title="by status")
    _section(f"most recalled, last 30 days ({len(report['top_recalled'])})",
             ["id", "project", "recalls", "title"],
             [[e["id"], e["project"], e["recalls_30d"], e["title"]]
              for e in report["top_recalled"]])
    unrecalled = report["unrecalled"]
    _section(f"not recalled in {report['unrecalled_days']:g} days ({len(unrecalled)})",
             ["id", "project", "days", "title"],
             [[e["id"], e["project"], e["days"], e["title"]] for e in unrecalled[:20]],
             more=len(unrecalled) - 20)
    for key, title in (("contradictions", "possible contradictions"),
                       ("near_duplicates", "near-duplicates")):
        _section(f"{title} ({len(report[key])})", ["a", "b", "score", "why", "texts"],
                 [[e["a"]["id"], e["b"]["id"], e["score"], ", ".join(e["reasons"]),
                   f"{e['a']['title']}\n{e['b']['title']}"] for e in report[key]])
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
    _section(f"ids that are not valid ({len(report['invalid_ids'])})", ["path", "problem"],
             [[e["path"], e["warning"]] for e in report["invalid_ids"]])
    _section(f"ids used by more than one file ({len(report['duplicate_ids'])})", ["id", "files"],
             [[e["id"], ", ".join(e["paths"])] for e in report["duplicate_ids"]])
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
    out.print(f"git: branch {git['branch'] or '-'}, {len(git['uncommitted'])} uncommitted "
              f"changes, remote {git['remote'] or 'none'}{pushed}")
    if git["error"]:
        out.print(f"git error: {escape(git['error'])}")
    if report["problems"]:
        out.print("[bold red]problems:[/] " + "; ".join(p["message"] for p in report["problems"]))
    else:
        out.print("[bold green]no problems found[/]")


def _escaped(rows: list[list[Any]]) -> list[list[str]]:
    """Note text must not be read as rich markup ("[x]" in a title would vanish)."""
    from rich.markup import escape

    return [[escape("" if cell is None else str(cell)) for cell in row] for row in rows]


def _section(title: str, columns: list[str], rows: list[list[Any]], more: int = 0) -> None:
    if not rows:
        console().print(f"{title}: none")
        return
    table(columns, _escaped(rows), title=title)
    if more > 0:
        console().print(f"… and {more} more (--json lists all)")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
