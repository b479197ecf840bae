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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.clock import latest_now
from memctl.core.errors import MemctlError, arg
from memctl.core.merge import (
    TOMBSTONE,
    Entry,
    MergeResult,
    add_entry,
    dump_counters,
    future_horizon,
    instant,
    key_name,
    merge_counters,
    merge_snapshots,
    same_content,
)
from memctl.core.noteformat import compute_checksum, set_fields
from memctl.core.secrets import carried, guard
from memctl.disk import counters, gitops
from memctl.disk.atomic import fsync_dir
from memctl.disk.counters import machine_id
from memctl.disk.gitops import run_git
from memctl.disk.journal import JOURNAL, TXN_PREFIX, crash_point, keep_backup, roll_back
from memctl.exchange import importers
from memctl.exchange.bundle import (
    COUNTERS,
    SETTINGS,
    TEMPLATE,
    Bundle,
    BundleError,
    BundleFile,
    Limits,
    check_file,
    entry_for,
    manifest_for,
    path_kind,
    read_bundle,
    read_dir,
    validate,
    write_zip,
)
from memctl.exchange.snapshot import Snapshot, project_of, read_store_files, snapshot
from memctl.index.db import open_index
from memctl.store import Store

# Bookkeeping that import reports do not list (they are written all the same).
_UNREPORTED = ("conflict", COUNTERS, "settings", "template", "file")


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
        path = f".counters/{machine}.json"
        data = dump_counters(counters.export_machine(store, machine))
        out[path] = merge_counters(out[path], data) if path in out else data
    return out


def absorb_counters(store: Store, files: dict[str, bytes]) -> None:
    """Merge counter files that arrived (import, pull) into this machine's counters.sqlite."""
    for path, data in sorted(files.items()):
        if not path.startswith(".counters/"):
            continue
        try:
            value = json.loads(data.decode("utf-8"))
            counters.import_machine(store, value, value.get("machine") or path[10:-5])
        except (ValueError, AttributeError, UnicodeDecodeError, RecursionError):
            continue  # a broken counter file costs only its counts


# --- export -----------------------------------------------------------------------------------


@dataclass
class ExportResult:
    path: str
    files: int
    bytes: int
    project: str | None
    skipped: list[str] = field(default_factory=list)  # unreadable, left out on request
    refusable: list[str] = field(default_factory=list)  # files import would refuse
    secrets: list[dict[str, object]] = field(default_factory=list)  # likely secrets carried, masked

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "files": self.files, "bytes": self.bytes,
                "project": self.project, "skipped": self.skipped, "refusable": self.refusable,
                "secrets": self.secrets}


def export_store(store: Store, target: Path, project: str | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 skip_unreadable: bool = False) -> ExportResult:
    """Write the store (or one project) to a zip. Reads only: the store is not changed. A file
    that cannot be read stops the export, naming it (or, with `skip_unreadable`, is left out
    and named in `skipped`): an export never loses a note silently."""
    unreadable: list[str] = []
    with store.read_lock("export"):
        snap = snapshot(store.root, read_store_files(store.root, unreadable))
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
    files = sorted(by_path.values(), key=lambda f: f.path)
    times = [(instant(f.updated), f.updated) for f in files if f.updated and instant(f.updated) is not None]
    newest = max(times)[1] if times else "1970-01-01T00:00:00.000Z"
    removed = {key: {"path": path, "history": list(oids)} for key, (path, oids) in snap.removed.items()
               if _in_export(BundleFile(path, b""), project)}
    try:
        machine = machine_id(store)
    except OSError:
        machine = "read-only"  # a read-only store cannot keep an id of its own
    manifest = manifest_for(files, machine=machine, time=newest,
                            extra={"project": project, "removed": removed})
    target = Path(target)
    # What this memctl's own import would refuse (a note that does not parse) is named, so a
    # bundle is never found to be useless only on the other machine.
    refusable = [f"{path}: {problem.reason}" for path, data in ((f.path, f.data) for f in files)
                 for problem in check_file(path, data)[0]]
    write_zip(target, files, manifest, (lambda done: progress(done, len(files))) if progress else None)
    return ExportResult(str(target), len(files), target.stat().st_size, project,
                        skipped=unreadable, refusable=refusable,
                        secrets=carried({f.path: f.data for f in files}))


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
    revived: list[str] = field(default_factory=list)  # deleted on one side, edited later on the other
    held_back: list[str] = field(default_factory=list)  # settings and templates not applied
    rejected: list[dict[str, str]] = field(default_factory=list)
    writes: dict[str, bytes] = field(default_factory=dict)
    removes: list[str] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "unchanged": self.unchanged,
                "deleted": self.deleted, "conflicts": self.conflicts, "revived": self.revived,
                "held_back": self.held_back, "rejected": self.rejected}

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
        raw_files, invalid = importers.run(kind, source, project)
        raw = {f.path: f.data for f in raw_files}
        extra = {f.path: (f.updated, f.history) for f in raw_files}
        bundle = validate(str(source), raw, extra=extra)
        bundle.invalid.extend(invalid)
        return bundle
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


def plan_import(local: Snapshot, bundle: Bundle) -> tuple[ImportReport, MergeResult]:
    """Merge the bundle into the local snapshot and work out every file to write or remove."""
    incoming: dict[str, Entry] = {}
    seen_in: dict[str, frozenset[str]] = {}
    for path in sorted(bundle.files):
        item = bundle.files[path]
        entry = entry_for(path, item.data, item.updated)
        if entry.kind == COUNTERS:
            continue  # counts go into counters.sqlite (absorb_counters), not into the files
        entry = add_entry(incoming, entry)
        seen_in[entry.key] = frozenset(item.history)
    for key, oids in bundle.removed.items():
        if key not in incoming:
            seen_in[key] = oids
    result = merge_snapshots(local.entries, incoming, local.seen, seen_in, future_horizon(latest_now()))
    report = ImportReport(source=bundle.source)
    report.rejected = [p.to_dict() for p in bundle.invalid]
    for key in sorted(set(result.entries) | set(local.entries)):
        before, after = local.entries.get(key), result.entries.get(key)
        same = before is not None and after is not None and before.oid == after.oid \
            and before.path == after.path
        if after is not None and not same and local.disk_oid.get(after.path) != after.oid:
            report.writes[after.path] = after.data
        if before is not None and (after is None or after.path != before.path):
            report.removes.append(before.path)
        if key not in incoming or any(e is not None and e.kind in _UNREPORTED for e in (before, after)):
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
    # Settings and templates from elsewhere are never applied silently: this store keeps its
    # own, and the report names what was held back (docs/security.md).
    for path in sorted(set(report.writes) | set(report.removes)):
        if path_kind(path) in (SETTINGS, TEMPLATE) and path in bundle.files:
            report.writes.pop(path, None)
            report.held_back.append(path)
    report.removes = [path for path in report.removes if path not in report.held_back]
    report.removes = sorted(set(report.removes) - set(report.writes))
    for key, outcome in sorted(result.outcomes.items()):
        if outcome.copy is not None and outcome.copy.key in result.entries:
            report.conflicts.append(key_name(key))
        elif outcome.revived:
            report.revived.append(key_name(key))
    return report, result


def import_into(store: Store, source: Path, *, dry_run: bool = False, skip_invalid: bool = False,
                importer: str | None = None, project: str = "default",
                allow_secret: bool = False) -> ImportReport:
    bundle = load_source(source, importer=importer, project=project)
    foreign = (importer or importers.detect(Path(source).expanduser())) not in ("bundle", "store", None)
    if bundle.invalid and not skip_invalid:
        raise BundleError(bundle.source, bundle.invalid)
    with store.lock("import"):
        local = snapshot(store.root)
        if foreign:
            _adopt_created(bundle, local)
        report, _result = plan_import(local, bundle)
        report.dry_run = dry_run
        # The one secret guard, for every file the import would write (docs/security.md).
        guard({path: data.decode("utf-8", "replace") for path, data in sorted(report.writes.items())
               if path.endswith(".md")}, allow_secret)
        if dry_run or not (report.writes or report.removes):
            return report
        summary = ", ".join(f"{len(v)} {k}" for k, v in (
            ("added", report.added), ("updated", report.updated), ("deleted", report.deleted),
            ("conflicts", report.conflicts)) if v) or "counters"
        message = f"import {Path(source).name}: {summary}"
        report.commit = apply_changes(store, report.writes, report.removes, message)
    absorb_counters(store, {p: f.data for p, f in bundle.files.items() if p.startswith(".counters/")})
    refresh_index(store, list(report.writes) + report.removes)
    return report


def _adopt_created(bundle: Bundle, local: Snapshot) -> None:
    """An importer dates a note by its source file, which changes when the file is edited; a
    note it made before keeps its first `created`, so the next import updates that note
    instead of being taken for a different note that happens to share the id."""
    for path, item in list(bundle.files.items()):
        entry = entry_for(path, item.data)
        mine = local.entries.get(entry.key)
        if mine is None or mine.kind != "note" or not mine.created:
            continue
        data = item.data
        if mine.created != entry.created:
            text = set_fields(data.decode("utf-8"), {"created": mine.created})
            data = set_fields(text, {"checksum": compute_checksum(text)}).encode("utf-8")
        if same_content(mine.with_data(mine.data), entry.with_data(data)) and mine.path == path:
            data = mine.data  # the source did not change this note: nothing to update
        bundle.files[path] = BundleFile(path, data, item.updated, item.history)


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


def apply_changes(store: Store, writes: dict[str, bytes], removes: list[str], message: str) -> str | None:
    """Replace and remove files as one transaction, then make one commit."""
    root = Path(store.root)
    for path in sorted(set(writes) | set(removes)):
        store.resolve(path)  # every target inside the store, through no link: before any write
    txn = store.state_dir / f"{TXN_PREFIX}{secrets.token_hex(6)}"
    (txn / "new").mkdir(parents=True)
    (txn / "old").mkdir()
    ops: list[dict[str, Any]] = []
    for number, path in enumerate(sorted(set(writes) | set(removes))):
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
    crash_point("import-journal")
    for number, op in enumerate(ops):
        target = root / op["path"]
        if op["existed"]:
            keep_backup(target, txn / op["old"], moving=op["new"] is None)
        if op["new"] is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(txn / op["new"], target)
        crash_point(f"import-op-{number}")
    for folder in {(root / op["path"]).parent for op in ops}:
        if folder.exists():
            fsync_dir(folder)
    crash_point("import-applied")

    listed = run_git(root, "ls-files", "-z").stdout.split("\0") if removes else []
    untracked_removed = set(removes) - set(listed)  # `git add` would fail on a path git never knew
    try:
        commit = store.commit(message, [op["path"] for op in ops if op["path"] not in untracked_removed])
    except BaseException:
        roll_back(root, txn, journal)
        raise
    crash_point("import-committed")
    shutil.rmtree(txn, ignore_errors=True)
    return commit
