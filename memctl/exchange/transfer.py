"""`memctl export` and `memctl import`: moving memory between machines without git.

Import is all or nothing. Everything is read and validated first (memctl.exchange.bundle); the merge
decides every file (memctl.core.merge); the new files are staged in `.memctl/txn-*/` next to a
journal; then each target is replaced with an atomic rename (the old file is kept as a
backup hard link), and one git commit seals it. A process killed half way leaves the
journal behind, and the next memctl command that takes the store lock (`recover_pending`)
puts every backup back, so the store is exactly as it was before the import.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.clock import latest_now, now
from memctl.core.errors import MemctlError, UsageError, arg
from memctl.core.ids import valid_id
from memctl.core.merge import (
    TOMBSTONE,
    Entry,
    MergeKey,
    MergeResult,
    dump_counters,
    future_horizon,
    instant,
    key_name,
    merge_counters,
    merge_key,
    merge_snapshots,
    one_side,
    retag,
)
from memctl.core.noteformat import parse_file
from memctl.core.secrets import carried, guard_files, mask_name, scan_name, secret_keys
from memctl.core.vocab import MAX_FILE_BYTES, valid_project_name
from memctl.disk import counters, gitops
from memctl.disk.atomic import fsync_dir
from memctl.disk.counters import machine_id
from memctl.disk.gitops import run_git
from memctl.disk.journal import JOURNAL, TXN_PREFIX, crash_point, keep_backup, roll_back
from memctl.disk.layout import CONFLICT, MEMORY_FILE, SCRATCHPAD_FILE, belongs_in_store
from memctl.disk.storefiles import CaseTwins, case_twin_problem, new_case_twin, twin_names_shown
from memctl.disk.templates import fill, load_template
from memctl.exchange import importers
from memctl.exchange.bundle import (
    COUNTERS,
    Bundle,
    BundleError,
    BundleFile,
    Limits,
    check_file,
    entry_for,
    kept_local,
    manifest_bytes,
    manifest_for,
    path_kind,
    path_problem,
    read_bundle,
    read_dir,
    size_problem,
    validate,
    write_zip,
)
from memctl.exchange.reimport import plan_reimport
from memctl.exchange.snapshot import (
    Snapshot,
    history_key,
    left_out_keys,
    project_of,
    read_store_files,
    snapshot,
)
from memctl.index.db import ParseError, open_index
from memctl.store import Store

# Bookkeeping that import reports do not list (they are written all the same).
_UNREPORTED = (CONFLICT, COUNTERS, "settings", "template", "file")


# --- counters ---------------------------------------------------------------------------------


def counter_files(store: Store, existing: dict[str, BundleFile]) -> dict[str, bytes]:
    """`.counters/<machine>.json` for every machine this store knows, merged with the files
    already in the store (this machine's rows from counters.sqlite are the freshest)."""
    out: dict[str, bytes] = {}
    for path, item in existing.items():
        if path.startswith(".counters/"):
            out[path] = item.data
    try:
        known = sorted(set(counters.machines(store)) | {counters.machine_id(store)})
    except (counters.CountersUnavailable, OSError):
        return out  # a read-only store: the committed counter files are all there is
    for machine in known:
        if not kept_name(machine):
            continue  # taken in before names were checked: it would be refused as a path
        path = f".counters/{machine}.json"
        data = dump_counters(kept_counts(counters.export_machine(store, machine)))
        out[path] = merge_counters(out[path], data) if path in out else data
    return out


def kept_name(name: str) -> bool:
    """Whether counts that came under the machine name or note id `name` are kept: a name
    that could be an id (`ids.valid_id`, never a path, no control character) and no likely
    secret (`secrets.scan_name`). A machine's name becomes the file name
    `.counters/<name>.json`, and a note's id a key in that file, of every later export and
    sync (docs/sync.md, rule 5)."""
    return valid_id(name) and not scan_name(name)


def kept_counts(data: dict[str, Any]) -> dict[str, Any]:
    """One machine's counters from counters.sqlite (`counters.export_machine`) without the
    notes whose id `kept_name` refuses: taken in by a memctl from before note ids were
    checked, they never leave this machine again (an export, this machine's file of a sync)."""
    notes = data.get("notes") or {}
    return {**data, "notes": {note_id: value for note_id, value in notes.items()
                              if kept_name(str(note_id))}}


@dataclass
class Absorbed:
    """What merging the counts that arrived came to, for the report to say."""

    # why none were merged (a counters database that cannot be written), or None
    not_merged: str | None = None
    # counts left out, each under a note id that is no id or a likely secret: one line
    refused: str | None = None


def absorb_counters(store: Store, files: dict[str, bytes]) -> Absorbed:
    """Merge counter files that arrived (import, pull) into this machine's counters.sqlite.
    Called once the change is committed: a counters database that cannot be written (a full
    disk) does not undo it; why the counts were not merged is returned instead, for the
    report to say (the next import or pull of the same files merges them). A count under a
    note id `kept_name` refuses is left out, and said (`refused`): the rest is merged."""
    result = Absorbed()
    refused: list[str] = []
    for path, data in sorted(files.items()):
        if not path.startswith(".counters/"):
            continue
        try:
            value = json.loads(data.decode("utf-8"))
            named = value.get("machine")  # a number or a list is no machine: the file's name is
            machine = named if isinstance(named, str) and named else path[10:-5]
            if not kept_name(machine):
                continue  # `../x`, a line break, a key: its counts are lost, nothing else
            notes = value.get("notes")
            if isinstance(notes, dict):
                kept = {note_id: count for note_id, count in notes.items()
                        if kept_name(note_id)}
                if len(kept) < len(notes):
                    refused += [note_id for note_id in notes if note_id not in kept]
                    value = {**value, "notes": kept}
            counters.import_machine(store, value, machine)
        except (ValueError, AttributeError, UnicodeDecodeError, RecursionError):
            continue  # a broken counter file costs only its counts
        except (sqlite3.Error, OSError, counters.CountersUnavailable) as exc:
            result.not_merged = f"the access counts that came with it were not merged: {exc}"
            break
    if refused:
        result.refused = _refused_counts(refused)
    return result


def _refused_counts(note_ids: list[str]) -> str:
    """The warning for counts left out under note ids that are no ids or likely secrets:
    each id shown masked (`mask_name`), escaped, cut at 40 characters, the first three."""
    unique = list(dict.fromkeys(note_ids))
    shown = []
    for note_id in unique[:3]:
        masked = mask_name(note_id)
        masked = masked if len(masked) <= 40 else masked[:40] + "…"
        shown.append(json.dumps(masked, ensure_ascii=True))
    more = f" and {len(unique) - 3} more" if len(unique) > 3 else ""
    count = len(note_ids)
    return (f"left out {count} access count{'s' if count != 1 else ''} that came with it under "
            f"note ids that are no ids or look like secrets ({', '.join(shown)}{more}); the "
            "rest was merged")


# --- export -----------------------------------------------------------------------------------


@dataclass
class ExportResult:
    path: str
    files: int
    bytes: int
    project: str | None
    skipped: list[str] = field(default_factory=list)  # unreadable, left out on request
    broken: list[ParseError] = field(default_factory=list)  # left out: import would refuse them
    secrets: list[dict[str, object]] = field(default_factory=list)  # likely secrets carried, masked
    # path of a broken note left out -> its id (None: not readable), never listed as removed
    left_out_ids: dict[str, str | None] = field(default_factory=dict)
    # a broken note of unknown id was left out: no note removal travels in this zip
    removals_withheld: bool = False
    # files left out that are over the 10 MB memctl reads (MAX_FILE_BYTES): no command opens
    # one (`memctl edit` finds no such note), so the fix is made in a text editor
    too_big_to_edit: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "files": self.files, "bytes": self.bytes,
                "project": self.project, "skipped": self.skipped,
                "broken": [{"path": p.path, "line": p.line, "message": p.message,
                            "id": self.left_out_ids.get(p.path)} for p in self.broken],
                "removals_withheld": self.removals_withheld,
                "secrets": self.secrets}


def export_store(store: Store, target: Path, project: str | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 skip_unreadable: bool = False, limits: Limits | None = None) -> ExportResult:
    """Write the store (or one project) to a zip. Reads only: the store is not changed. A file
    that cannot be read stops the export, naming it (or, with `skip_unreadable`, is left out
    and named in `skipped`): an export never loses a note silently. A file that memctl's
    import would refuse (a note whose front matter does not parse) is left out and named in
    `broken` with its line: the zip always imports, and the other machine keeps the version
    it has (docs/sync.md). A zip too big for an import (`limits`, the import's by default) is
    not written."""
    unreadable: list[str] = []
    with store.read_lock("export"):
        snap = snapshot(store.root, read_store_files(store.root, unreadable), keep_pass=True)
        unreadable = [path for path in unreadable
                      if _in_export(BundleFile(path, b""), project)]
        if unreadable and not skip_unreadable:
            raise MemctlError(
                f"cannot read {', '.join(unreadable[:5])}{' …' if len(unreadable) > 5 else ''}: "
                f"nothing was exported. Fix the file's permissions, or pass "
                f"{arg('skip_unreadable')} to export without it")
        by_path = {f.path: f for f in snap.files.values() if _in_export(f, project)}
        if project and not any(not p.startswith(".counters/") for p in by_path):
            raise MemctlError(f"project {project!r} has nothing to export; `memctl list "
                              "--all-projects` shows the projects")
        for path, data in counter_files(store, snap.files).items():
            by_path[path] = BundleFile(path, data, None, ())
    broken = [problem for problem in (_unimportable(f.path, f.data) for f in by_path.values())
              if problem is not None]
    left_out = {problem.path for problem in broken}
    # A file left out is not a file removed: its id must not travel in `removed`, or the
    # other machine would delete the note. Known by its id, not its file name: a note renamed
    # by hand keeps its id (tests/test_broken_files.py).
    kept_keys = {entry.key for entry in snap.entries.values() if entry.path in left_out}
    left_out_ids: dict[str, str | None] = {}
    unknown = False
    for path in sorted(left_out):
        keys, note_id = left_out_keys(path, by_path[path].data)
        kept_keys |= keys
        unknown = unknown or note_id is None
        left_out_ids[path] = note_id or None
    if unknown:  # a note of unknown id left out: any removed note could be it
        kept_keys |= {key for key in snap.removed if MergeKey(key).is_id}
    files = sorted((f for f in by_path.values() if f.path not in left_out), key=lambda f: f.path)
    times = [(instant(f.updated), f.updated) for f in files if f.updated and instant(f.updated) is not None]
    newest = max(times)[1] if times else "1970-01-01T00:00:00.000Z"
    removed = {key: {"path": path, "history": list(oids)} for key, (path, oids) in snap.removed.items()
               if _in_export(BundleFile(path, b""), project) and key not in kept_keys}
    try:
        machine = machine_id(store)
    except OSError:
        machine = "read-only"  # a read-only store cannot keep an id of its own
    manifest = manifest_for(files, machine=machine, time=newest,
                            extra={"project": project, "removed": removed})
    manifest_data = manifest_bytes(manifest)  # (for 100k notes ~20 MB of JSON: made once)
    too_big = size_problem(files, manifest_data, limits)
    if too_big is not None:
        what = f"project {project!r}" if project else "the store"
        hint = ("" if project else f"; export one project at a time ({arg('project')} NAME)")
        raise MemctlError(f"nothing was exported: a zip of {what} would hold {too_big}{hint}")
    target = Path(target)
    write_zip(target, files, manifest_data, (lambda done: progress(done, len(files))) if progress else None)
    return ExportResult(str(target), len(files), target.stat().st_size, project,
                        skipped=unreadable, broken=sorted(broken, key=lambda p: p.path),
                        secrets=carried({f.path: f.data for f in files}),
                        left_out_ids=left_out_ids, removals_withheld=unknown,
                        too_big_to_edit=sorted(path for path in left_out
                                               if len(by_path[path].data) > MAX_FILE_BYTES))


def _unimportable(path: str, data: bytes) -> ParseError | None:
    """Why memctl's import would refuse this file, as `path:line: problem` (the line the
    index and `memctl show` name too); None when it would take it."""
    named = path_problem(path)
    if named:  # a name made by hand or by plain git (a remote's is refused: docs/sync.md)
        return ParseError(path, 1, named)
    limit = Limits().max_entry_bytes
    if len(data) > limit:  # import refuses the whole zip for it (bundle.Limits)
        return ParseError(path, 1, f"{len(data) / 2**20:.1f} MB, over the {limit // 2**20} MB "
                                   "an import takes of one file")
    problems, text = check_file(path, data)
    if not problems:
        return None
    line, message = problems[0].line or 1, problems[0].reason
    if text is not None:
        parsed = parse_file(text)
        if parsed.problem is not None:
            line, message = parsed.problem.line, parsed.problem.message
    return ParseError(path, line, message)


def _in_export(item: BundleFile, project: str | None) -> bool:
    if not project:
        return True
    owner = project_of(item)
    return owner == project if owner is not None else item.path.startswith(".counters/")


# --- import -----------------------------------------------------------------------------------


@dataclass
class ImportReport:
    source: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflict_copies: list[str] = field(default_factory=list)  # paths of the copies made
    # conflict copies the bundle itself carried (made on another machine), written here
    carried_copies: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)  # deleted on one side, edited later on the other
    # a note that gave its id to an earlier-created one: {"id", "to", "path"} (rule 6)
    renamed: list[dict[str, str]] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)  # settings and templates not applied
    rejected: list[dict[str, str]] = field(default_factory=list)
    # Importers of other tools' formats (memctl.exchange.reimport): notes archived because the
    # source no longer has them, and what was left out on purpose, with the reason.
    retired: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    # What an importer of another tool's format imported with a value of the source left out
    # or corrected (`{"path", "reason"}`): each one warning line.
    warnings: list[dict[str, str]] = field(default_factory=list)
    # The source's entries that are no memory memctl imports (a `.gitattributes`, a
    # picture): left out, and named, so an import that takes nothing says why.
    ignored: list[str] = field(default_factory=list)
    writes: dict[str, bytes] = field(default_factory=dict)
    removes: list[str] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False
    counters_not_merged: str | None = None  # why, when the committed import's counts were not
    # counts left out under note ids that are no ids or likely secrets (`absorb_counters`)
    counters_refused: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "unchanged": self.unchanged,
                "deleted": self.deleted, "conflicts": self.conflicts,
                "conflict_copies": self.conflict_copies,
                "carried_copies": self.carried_copies, "revived": self.revived,
                "renamed": self.renamed,
                "held_back": self.held_back, "rejected": self.rejected,
                "retired": self.retired, "skipped": self.skipped, "warnings": self.warnings,
                "ignored": self.ignored,
                **({"counters_not_merged": self.counters_not_merged}
                   if self.counters_not_merged else {}),
                **({"counters_refused": self.counters_refused}
                   if self.counters_refused else {})}

    def strays(self) -> list[str]:
        """The ignored entries that are no part of any store either (a picture, a text file
        in a project), where a store's own files (`.gitignore`, `.gitkeep`, …) come with
        every store and zip: what the import's text names when it takes something."""
        return [path for path in self.ignored if not belongs_in_store(path)]

    def changes(self) -> list[tuple[str, str]]:
        """(action, path) of every file the import writes or removes, sorted by path."""
        rows = [("write", p) for p in self.writes] + [("remove", p) for p in self.removes]
        return sorted(rows, key=lambda r: (r[1], r[0]))


def load_source(source: Path, *, importer: str | None = None, project: str = "default") -> Bundle:
    """Read what is to be imported: a memctl zip, a folder, another store, or a foreign
    format through an importer. Raises BundleError for any hazard."""
    source = Path(source).expanduser()
    if not source.exists():
        raise MemctlError(f"{source} does not exist")
    kind = importer or importers.detect(source)
    if kind and kind not in ("bundle", "store"):
        return load_foreign(source, kind, project)[0]
    if kind == "store":
        raw, problems = read_dir(source, Limits())
        if problems:
            raise BundleError(str(source), problems)
        memory = {p: (d, (source / p).stat().st_mtime) for p, d in raw.items() if path_kind(p)}
        snap = snapshot(source, raw=memory)
        extra = {p: (f.updated, f.history) for p, f in snap.files.items()}
        bundle = validate(str(source), {p: f.data for p, f in snap.files.items()} | {
            p: d for p, d in raw.items() if p not in snap.files}, extra=extra)
        bundle.removed = {key: frozenset(oids) for key, (_path, oids) in snap.removed.items()}
        return bundle
    return read_bundle(source)


def load_foreign(source: Path, kind: str, project: str) -> tuple[Bundle, importers.Imported]:
    """Another tool's memory through its importer: the notes it makes, validated like a
    bundle's files (hazards raise BundleError), and what else the importer found."""
    imported = importers.run(kind, source, project)
    raw = {f.path: f.data for f in imported.notes}
    extra = {f.path: (f.updated, f.history) for f in imported.notes}
    bundle = validate(str(source), raw, extra=extra)
    bundle.invalid.extend(imported.problems)
    return bundle, imported


def plan_import(local: Snapshot, bundle: Bundle) -> tuple[ImportReport, MergeResult]:
    """Merge the bundle into the local snapshot and work out every file to write or remove."""
    versions: list[Entry] = []
    for path in sorted(bundle.files):
        item = bundle.files[path]
        entry = entry_for(path, item.data, item.updated)
        if entry.kind == COUNTERS:
            continue  # counts go into counters.sqlite (absorb_counters), not into the files
        versions.append(entry)
    # Two of the bundle's notes with one id: the later-created one gets a new id (rule 6,
    # docs/sync.md), as sync does inside one side, so the import never leaves two files with
    # one id (tests/test_trust_boundary.py).
    incoming, moved = one_side(versions)
    # Settings, templates and conflict copies of either are never written from a bundle,
    # whichever side is newer (docs/security.md): they stay out of the merge, so none of
    # them becomes a conflict copy here either, and `held_back` names the ones the merge
    # would have changed (tests/test_trust_boundary.py).
    guarded = {key: incoming.pop(key) for key in sorted(incoming) if kept_local(incoming[key].path)}
    came_from = {after.path: before.path for before, after in moved}
    seen_in = {key: frozenset(bundle.files[came_from.get(entry.path, entry.path)].history)
               for key, entry in incoming.items()}
    for before, after in moved:
        # What an earlier import wrote here for this note carries the new id, which the
        # sender never had: it is a version the sender had, renamed alike (`retag` only sets
        # the id), so it was seen, not a clash (tests/test_trust_boundary.py).
        mine = local.entries.get(after.key)
        if mine is not None and before.note_id and mine.oid not in seen_in[after.key] \
                and retag(mine, before.note_id).oid in seen_in[after.key] | {before.oid}:
            seen_in[after.key] = seen_in[after.key] | {mine.oid}
    # A file the import leaves out (`skip_invalid`) is not one the sender removed: a bundle
    # from an older export lists a broken note's id as removed (tests/test_broken_files.py).
    # Known by its id, not its file name (a note renamed by hand); one whose id cannot be read
    # keeps every note the bundle lists as removed (snapshot.left_out_keys).
    left_out = {history_key(problem.path) for problem in bundle.invalid}
    for path, data in bundle.invalid_data.items():
        keys, note_id = left_out_keys(path, data)
        left_out |= keys
        if note_id is None:
            left_out |= {key for key in bundle.removed if MergeKey(key).is_id}
    removed_there: set[str] = set()
    guarded_removed: dict[str, frozenset[str]] = {}
    for key, oids in bundle.removed.items():
        if key in incoming or key in left_out or key in guarded:
            continue
        mine = local.entries.get(key)
        if mine is not None and kept_local(mine.path):
            guarded_removed[key] = oids
        else:
            seen_in[key] = oids
            removed_there.add(key)
    horizon = future_horizon(latest_now())
    # A bundle carries no earlier paths: only a move made in this store is known as one.
    result = merge_snapshots(local.entries, incoming, local.seen, seen_in, horizon, local.paths)
    report = ImportReport(source=bundle.source, ignored=sorted(bundle.ignored))
    report.held_back = _held_back(local, guarded, guarded_removed, bundle, horizon)
    renames = {(key_name(before.key), key_name(after.key)) for before, after in moved}
    renames.update(result.renamed.items())
    # Said once, by the import that brings the renamed note here (the same zip again
    # renames it again, alike, and has nothing new to say).
    report.renamed = [{"id": old_id, "to": new_id,
                       "path": result.entries[MergeKey.for_id(new_id)].path}
                      for old_id, new_id in sorted(renames)
                      if MergeKey.for_id(new_id) in result.entries
                      and MergeKey.for_id(new_id) not in local.entries]
    report.rejected = [p.to_dict() for p in bundle.invalid]
    for key in sorted(set(result.entries) | set(local.entries)):
        before, after = local.entries.get(key), result.entries.get(key)
        same = before is not None and after is not None and before.oid == after.oid \
            and before.path == after.path
        if after is not None and not same and local.disk_oid.get(after.path) != after.oid:
            report.writes[after.path] = after.data
        if before is not None and (after is None or after.path != before.path):
            report.removes.append(before.path)
        if after is not None and after.kind == CONFLICT and key in incoming \
                and after.path in report.writes:
            report.carried_copies.append(after.path)
        if any(e is not None and e.kind in _UNREPORTED for e in (before, after)):
            continue
        if key not in incoming:
            # A note the sender removed (by hand, without a tombstone) and this import
            # deletes is reported like any deletion (tests/test_exchange.py); one edited
            # here since stays, as it was, and is no news.
            if key in removed_there and before is not None and before.kind != TOMBSTONE \
                    and after is None:
                report.deleted.append(key_name(key))
            continue
        name = key_name(key)
        was_live = before is not None and before.kind != TOMBSTONE
        is_live = after is not None and after.kind != TOMBSTONE
        if same:
            report.unchanged.append(name)
        elif is_live and not was_live:
            report.added.append(name)
        elif was_live and not is_live or before is None:
            report.deleted.append(name)
        else:
            report.updated.append(name)
    report.removes = sorted(set(report.removes) - set(report.writes))
    for key, outcome in sorted(result.outcomes.items()):
        if outcome.copy is not None and outcome.copy.key in result.entries:
            # The same losing version kept already (the same bundle imported again) is no news.
            kept = local.entries.get(outcome.copy.key)
            if kept is None or kept.oid != outcome.copy.oid:
                report.conflicts.append(key_name(key))
                report.conflict_copies.append(outcome.copy.path)
        elif outcome.revived:
            report.revived.append(key_name(key))
    # A copy this merge keeps that the bundle carries too (this store's own losing version,
    # kept there when the other machine imported it) is this import's conflict, named once:
    # it was counted again as a carried copy (tests/test_bundle.py).
    made = set(report.conflict_copies)
    report.carried_copies = [path for path in report.carried_copies if path not in made]
    return report, result


def _held_back(local: Snapshot, guarded: dict[str, Entry], removed: dict[str, frozenset[str]],
               bundle: Bundle, horizon: int) -> list[str]:
    """The bundle's files `kept_local` (and its removals of them) that a merge would have
    taken or kept as a conflict copy: the paths named as held back. A version this store has
    already, or has moved past, is no news (the same bundle imported again says the same)."""
    empty: frozenset[str] = frozenset()
    held: list[str] = []
    for key, theirs in guarded.items():
        seen = frozenset(bundle.files[theirs.path].history) if theirs.path in bundle.files else empty
        outcome = merge_key(local.entries.get(key), theirs, local.seen.get(key, empty), seen, horizon)
        if outcome.taken != "ours" or outcome.copy is not None:
            held.append(theirs.path)
    for key, oids in removed.items():
        outcome = merge_key(local.entries[key], None, local.seen.get(key, empty), oids, horizon)
        if outcome.taken != "ours":
            held.append(local.entries[key].path)
    return sorted(held)


def import_into(store: Store, source: Path, *, dry_run: bool = False, skip_invalid: bool = False,
                importer: str | None = None, project: str = "default",
                allow_secret: bool = False) -> ImportReport:
    path = Path(source).expanduser()
    if path.name in ("", ".."):
        # `.` or `..` names no folder: the source's name (its notes' `source_key`, the commit
        # message) is that of the folder they stand for, so `import .` from inside a vault
        # and `import vault` are the same source (they were `markdown:` and `markdown:vault`).
        path = source = Path(os.path.abspath(path))
    kind = importer or (importers.detect(path) if path.exists() else None)
    refuse_the_store_itself(store, path, kind)
    if kind not in (None, "bundle", "store"):
        return _import_foreign(store, path, kind, dry_run=dry_run, skip_invalid=skip_invalid,
                               project=project, allow_secret=allow_secret)
    bundle = load_source(source, importer=importer, project=project)
    if bundle.manifest is None and not (bundle.files or bundle.invalid or bundle.removed):
        # A zip or folder with no memctl file in it: saying "nothing to do" would hide that
        # nothing in it was understood (an OpenMemory zip read as a bundle did exactly that).
        shown = ", ".join(bundle.ignored[:5]) + (" …" if len(bundle.ignored) > 5 else "")
        raise MemctlError(f"nothing in {source} is memory memctl can import: no memctl bundle "
                          f"entries{f' ({shown})' if shown else ''} and no format an importer "
                          f"reads; name the format with {arg('from')} if it is one "
                          f"({', '.join(importers.KINDS)})")
    if bundle.invalid and not skip_invalid:
        raise BundleError(bundle.source, bundle.invalid)
    with store.lock("import"):
        local = snapshot(store.root, keep_pass=True)
        report, _result = plan_import(local, bundle)
        wrote = _write(store, report, source, dry_run=dry_run, allow_secret=allow_secret)
    ahead = stamped_ahead(bundle)
    if ahead:
        report.warnings.append({"path": str(source), "reason": ahead})
    if dry_run:
        return report
    # The counts are merged whether or not a file changed: a zip whose only news is that the
    # other machine recalled notes this store has as they are must still bring those counts
    # (docs/sync.md, rule 5); they were dropped when every note was unchanged.
    absorbed = absorb_counters(
        store, {p: f.data for p, f in bundle.files.items() if p.startswith(".counters/")})
    report.counters_not_merged, report.counters_refused = absorbed.not_merged, absorbed.refused
    if wrote:
        refresh_index(store, list(report.writes) + report.removes)
    return report


def stamped_ahead(bundle: Bundle) -> str | None:
    """What to say of a bundle whose notes are stamped more than a day ahead of this clock,
    or None. Such a time counts as no time in the merge here (docs/sync.md, rule 2) but as
    the present on the machine whose clock wrote it: a note edited on both machines can then
    stay one version here and another there, each import keeping its own, and once the
    conflict copies are dropped nothing shows it. Said, the clock can be set right."""
    horizon = future_horizon(latest_now())
    stamps = [item.updated for item in bundle.files.values()
              if item.updated and (instant(item.updated) or 0) > horizon]
    if not stamps:
        return None
    return (f"{len(stamps)} file{'s' if len(stamps) != 1 else ''} of it "
            f"{'are' if len(stamps) != 1 else 'is'} stamped more than a day ahead of this "
            f"machine's clock (the latest {max(stamps)}): the clock of the machine that wrote "
            f"{'them' if len(stamps) != 1 else 'it'} is ahead, or this one is behind; such a "
            f"time counts for nothing here, so a note edited on both machines can stay "
            f"different on each: set the wrong clock right")


def refuse_the_store_itself(store: Store, source: Path, kind: str | None) -> None:
    """Refuse a source that is the store, lies inside it, or holds it where the reader would
    walk into it (bad usage): read as Markdown or another tool's memory, every note would
    come back as a copy of itself, on every run; read as a bundle, a folder inside the store
    puts its files at the wrong paths. A zip inside the store is a bundle like any other
    (docs/sync.md, tests/test_importers.py)."""
    try:
        target, root = source.resolve(), Path(store.root).resolve()
    except (OSError, RuntimeError):
        return  # a path that cannot be resolved is named by the reader's own error
    bundle = kind in (None, "bundle", "store")
    if target == root:
        where = "is this store's folder"
    elif root in target.parents and not (bundle and source.is_file()):
        where = f"is inside this store ({root})"
    elif target in root.parents and _walks_into(kind, root.relative_to(target)):
        where = f"holds this store ({root})"
    else:
        return
    raise UsageError(f"{source} {where}: importing it would copy the store's notes into the "
                     f"store again; choose a file or folder outside the store")


def _walks_into(kind: str | None, below: Path) -> bool:
    """Whether reading a folder as `kind` reaches the folder `below` it: a bundle folder is
    read whole; mem0 reads only its export's files; the other importers never enter a dot
    folder (importers.common.walk_files), such as the default store's `~/.local/share`."""
    if kind in (None, "bundle", "store"):
        return True
    return kind != "mem0" and not any(part.startswith(".") for part in below.parts)


def _adding_secrets(store: Store, report: ImportReport, texts: dict[str, str]) -> set[str]:
    """The files of `texts` (the `.md` files an import writes) that hold a likely secret the
    store's files it replaces or removes do not hold now (each as many times as they hold
    it: a second copy of one counts as added). A file's own secrets are first matched with
    those of the file it replaces: the one it writes over, or the one it moves (a retired
    note keeps its file name in archive/); only what is left is matched with the rest. So
    the file named is the one that adds the secret, not an edit or a move of a note that
    held it while another file took it up."""
    old: dict[str, Counter[tuple[str, str]]] = {}
    for path in {*report.removes, *report.writes}:
        if not path.endswith(".md"):
            continue
        try:
            text = store.resolve(path).read_bytes().decode("utf-8", "replace")
        except (OSError, MemctlError):
            continue  # not there (a new file), or no file the resolver takes
        old[path] = Counter(secret_keys(text))
    own: dict[str, Counter[tuple[str, str]]] = {}
    moved = {path.rsplit("/", 1)[-1]: path for path in report.removes if path in old}
    for path in texts:
        source = path if path in old else moved.pop(path.rsplit("/", 1)[-1], None)
        if source is not None and source in old:
            own[path] = old.pop(source)
    left: dict[str, list[tuple[str, str]]] = {}
    for path, text in texts.items():
        held = own.get(path, Counter())
        for key in secret_keys(text):
            if held[key] > 0:
                held[key] -= 1
            else:
                left.setdefault(path, []).append(key)
    pool: Counter[tuple[str, str]] = Counter()
    for counter in (*old.values(), *own.values()):
        pool.update({key: count for key, count in counter.items() if count > 0})
    adding: set[str] = set()
    for path in sorted(left):
        for key in left[path]:
            if pool[key] <= 0:
                adding.add(path)
            else:
                pool[key] -= 1
    return adding


def _write(store: Store, report: ImportReport, source: Path, *, dry_run: bool,
           allow_secret: bool) -> bool:
    """Guard, then apply and commit what an import planned (under the store lock). False when
    nothing is written (a dry run, or nothing to do)."""
    report.dry_run = dry_run
    # The one secret guard, for every file the import would write (docs/security.md), but
    # for those holding no secret the store's files it replaces or retires did not hold: a
    # note imported with --allow-secret and retired by the next import (moved to archive/)
    # was refused again, as an edit of it is not (`added_secrets`).
    # (Such a file's text is not scanned again; its name is, as every file's.)
    texts = {path: data.decode("utf-8", "replace") for path, data in report.writes.items()
             if path.endswith(".md")}
    adding = _adding_secrets(store, report, texts)
    guard_files({path: text if path in adding else "" for path, text in texts.items()},
                allow_secret)
    if dry_run:  # it says too whether the import could be done (apply_changes checks the rest)
        check_targets(store, report.writes, report.removes)
    if dry_run or not (report.writes or report.removes):
        return False
    copies = "conflict copy" if len(report.conflicts) == 1 else "conflict copies"
    summary = ", ".join(f"{len(v)} {k}" for k, v in (
        ("added", report.added), ("updated", report.updated), ("deleted", report.deleted),
        ("retired", report.retired), (copies, report.conflicts),
        ("carried conflict " + ("copy" if len(report.carried_copies) == 1 else "copies"),
         report.carried_copies)) if v) or "counters"
    message = f"import {Path(source).name}: {summary}"
    report.commit = apply_changes(store, report.writes, report.removes, message)
    return True


def _import_foreign(store: Store, source: Path, kind: str, *, dry_run: bool, skip_invalid: bool,
                    project: str, allow_secret: bool) -> ImportReport:
    """Another tool's memory: its notes and `MEMORY.md`/`SCRATCHPAD.md` items, planned against
    what earlier imports of the same source made (memctl.exchange.reimport)."""
    bundle, imported = load_foreign(source, kind, project)
    if not imported.recognised():
        raise MemctlError(f"found nothing to import in {source} as {kind!r} (no notes, no "
                          f"memories); check the path, or name the format with {arg('from')} "
                          f"({', '.join(importers.KINDS)})")
    # Nothing valid beside what is refused (an export that is `[]`, holds no list of
    # memories, or only memories left out): nothing it can read, so it stops (docs/sync.md),
    # `--skip-invalid` or not, and its error does not offer that option.
    skippable = bool(bundle.files or imported.blocks or imported.skipped)
    if bundle.invalid and (not skip_invalid or not skippable):
        raise BundleError(bundle.source, bundle.invalid, skippable=skippable)
    templates = {kind: fill(load_template(store, name), name, project=project)
                 for kind, name in (("memory", MEMORY_FILE), ("scratchpad", SCRATCHPAD_FILE))}
    with store.lock("import"):
        local = snapshot(store.root, keep_pass=True)
        plan = plan_reimport(local, list(bundle.files.values()), imported.blocks,
                             scope=imported.scope, kept=imported.kept, project=project,
                             moment=now(), templates=templates, retire=imported.whole)
        report = ImportReport(source=bundle.source, added=plan.added, updated=plan.updated,
                              unchanged=plan.unchanged, conflicts=plan.conflicts,
                              conflict_copies=plan.conflict_copies, retired=plan.retired,
                              rejected=[p.to_dict() for p in bundle.invalid],
                              skipped=[p.to_dict() for p in imported.skipped],
                              warnings=[p.to_dict() for p in imported.warnings],
                              writes=plan.writes, removes=plan.removes)
        if not _write(store, report, source, dry_run=dry_run, allow_secret=allow_secret):
            return report
    refresh_index(store, list(report.writes) + report.removes)
    return report


def refresh_index(store: Store, paths: list[str]) -> None:
    try:
        index = open_index(store)
        try:
            index.refresh(paths or None)
        finally:
            index.close()
    except Exception:  # noqa: BLE001 - the index is derived; the next read rebuilds it
        pass


# --- all-or-nothing apply ---------------------------------------------------------------------


def check_targets(store: Store, writes: dict[str, bytes] | list[str], removes: list[str]) -> None:
    """Refuse, before anything is staged or written, an import that could not finish: a target
    outside the store or through a link (`resolve`), a file standing where the import must
    make a folder (`zeta` where `zeta/notes/z.md` goes), a folder or special file where it
    must write or remove a file, a project folder beside one whose name differs only in
    case (`StoreFiles.case_twin`), or any other new file or folder beside one whose name
    differs only in case or Unicode form (`new_case_twin`). The store is left exactly as it was (docs/sync.md,
    tests/test_exchange.py, tests/test_project_names.py)."""
    root = Path(store.root)
    present = store.top_folders()
    made: set[str] = set()  # the project folders the import makes
    present_twins, made_twins = CaseTwins(present), CaseTwins()
    for path in sorted(writes):
        top, slash, _rest = path.partition("/")
        if not slash or top in present or top in made or not valid_project_name(top):
            continue
        twin = present_twins.twin(top) or made_twins.twin(top)
        if twin is not None:
            problem = case_twin_problem(path, twin, existing=twin in present)
            raise MemctlError(
                f"cannot import: {problem}; nothing was changed. Another tool's files go into "
                f"the project {arg('project')} names: give {twin}. A memctl export's or "
                f"store's projects keep their names: rename one of the two folders, then "
                f"import again")
        made.add(top)
        made_twins.add(top)
    twin = new_case_twin(root, writes, removes)
    if twin is not None:
        path, other, existing = twin
        path, other = twin_names_shown(path, other)
        raise MemctlError(
            f"cannot import: {path} differs from the {'existing ' if existing else ''}{other} "
            f"only in case or Unicode form: a disk that ignores those (macOS, Windows) cannot "
            f"keep them apart, one would overwrite the other; nothing was changed: rename one "
            f"of the two, then import again")
    for path in sorted(set(writes) | set(removes)):
        store.resolve(path)
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            where = "/".join(parts[:depth])
            try:
                mode = os.lstat(root / where).st_mode
            except FileNotFoundError:
                break  # nothing there yet: the import makes it
            except OSError:
                break  # unreadable: the write itself reports it (and the import rolls back)
            if depth < len(parts) and not stat.S_ISDIR(mode):
                raise MemctlError(
                    f"cannot import: {where} is a file where the import must make a folder "
                    f"(for {path}); nothing was changed: move or rename {where}, then import again")
            if depth == len(parts) and not stat.S_ISREG(mode):
                what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
                raise MemctlError(
                    f"cannot import: {path} is {what} where the import must "
                    f"{'write' if path in writes else 'remove'} a note file; nothing was "
                    f"changed: move or rename it, then import again")


def _stage(root: Path, txn: Path, writes: dict[str, bytes], removes: list[str],
           message: str) -> dict[str, Any]:
    """Every new file written into the transaction's folder `txn`, then its journal (the ops in
    order): what `roll_back` and `recover_pending` read. Only `txn` is written."""
    (txn / "new").mkdir(parents=True)
    (txn / "old").mkdir()
    ops: list[dict[str, Any]] = []
    # Removals first: on a disk that ignores case, a note renamed from `deploy.md` to
    # `Deploy.md` is one file, and writing it before removing the old name removed the note
    # (`new_case_twin` lets such a rename through).
    ordered = sorted(set(removes) - set(writes)) + sorted(writes)
    for number, path in enumerate(ordered):
        op: dict[str, Any] = {"path": path, "new": None, "old": f"old/{number}",
                              "existed": (root / path).exists()}
        if path in writes:
            (txn / "new" / str(number)).write_bytes(writes[path])
            op["new"] = f"new/{number}"
            op["sha256"] = hashlib.sha256(writes[path]).hexdigest()
        ops.append(op)
    os.sync()  # one flush for every staged file (an fsync each costs seconds on big imports)
    journal = {"head": gitops.head(root), "message": message, "ops": ops}
    temp = txn / f".{JOURNAL}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(journal, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, txn / JOURNAL)
    fsync_dir(txn)
    return journal


def apply_changes(store: Store, writes: dict[str, bytes], removes: list[str], message: str) -> str | None:
    """Replace and remove files as one transaction, then make one commit. A failure half way
    (a disk that fills up, a permission) puts back every file before the error is raised:
    the store is as it was, with no need for the next command's `recover_pending`."""
    root = Path(store.root)
    check_targets(store, writes, removes)  # before any write
    refusal = gitops.commit_refusal(root)  # (a detached HEAD: the commit would be refused)
    if refusal:
        raise MemctlError(f"cannot import: {refusal}; nothing was changed")
    txn = store.state_dir / f"{TXN_PREFIX}{secrets.token_hex(6)}"
    try:
        journal = _stage(root, txn, writes, removes, message)
    except OSError as exc:  # a disk that fills up while staging: no store file was touched yet
        shutil.rmtree(txn, ignore_errors=True)
        raise MemctlError(f"cannot import: {exc.filename or root}: {exc.strerror or exc}; "
                          "nothing was changed") from None
    ops: list[dict[str, Any]] = journal["ops"]
    crash_point("import-journal")
    try:
        for number, op in enumerate(ops):
            target = root / op["path"]
            # (A write whose name a removal before it freed has nothing left to keep: the
            # removal kept it, on a disk that ignores case.)
            if op["existed"] and (op["new"] is None or os.path.lexists(target)):
                keep_backup(target, txn / op["old"], moving=op["new"] is None)
            if op["new"] is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(txn / op["new"], target)
            crash_point(f"import-op-{number}")
        for folder in {(root / op["path"]).parent for op in ops}:
            if folder.exists():
                fsync_dir(folder)
    except BaseException as exc:
        roll_back(root, txn, journal)
        shutil.rmtree(txn, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, MemctlError):
            raise MemctlError(f"cannot import: {exc.filename or root}: {exc.strerror or exc}; "
                              "every file was put back, the store is as it was") from None
        raise
    crash_point("import-applied")

    listed = run_git(root, "ls-files", "-z").stdout.split("\0") if removes else []
    untracked_removed = set(removes) - set(listed)  # `git add` would fail on a path git never knew
    try:
        commit = store.commit(message, [op["path"] for op in ops if op["path"] not in untracked_removed])
    except BaseException as exc:
        roll_back(root, txn, journal)
        shutil.rmtree(txn, ignore_errors=True)  # rolled back: nothing is left to recover
        if isinstance(exc, (OSError, MemctlError)) and not isinstance(exc, UsageError):
            why = gitops.put_back_reason(exc)
            raise MemctlError(f"cannot import: the commit failed ({why}); every file was put "
                              "back, the store is as it was") from None
        raise
    crash_point("import-committed")
    shutil.rmtree(txn, ignore_errors=True)
    return commit
