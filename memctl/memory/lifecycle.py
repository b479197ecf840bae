"""Forgetting (docs/lifecycle.md): the TTL sweep of `memctl archive`, and `memctl restore`.

The plan is pure (notes, counters and a time in; a list of actions out), so `--dry-run` shows
exactly what a real sweep does. Rules (settings in `memctl.toml`, section `[ttl]`):

- a note's *last activity* is its last recall (the access counters) or, when it was never
  recalled or written to since, its `updated` (else `created`) time;
- **demote**: idle for `demote_after_days` and importance below `demote_below_importance` →
  importance minus one (never below 1) and a `demoted:` stamp. The stamp keeps a note from
  being demoted again until it has been recalled or updated since. Demotion does not touch
  `updated`, so it does not restart the archive clock;
- **archive**: idle for `archive_after_days`, or past `expires` → moved from
  `<project>/notes/…` to `<project>/archive/<type>/…` with `status: archived` and `updated`
  stamped (the archive time); a note that was not at `<project>/notes/<type>/` also gets
  `archived_from:` (where it was). Id, body and git history (a rename) are kept;
- pinned notes and notes of importance `protect_importance` or more are never archived or
  demoted automatically; they are listed as `kept` so a person can decide;
- only `active` notes are swept (superseded ones are already out of everyday search).

`restore ID` moves an archived note back to where it was (`archived_from`, else
`<project>/notes/<type>/`) as `active`, or makes a superseded note active again; an `expires`
already past is removed (else the note would disappear again at once).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memctl.core.clock import ahead, format_time, now, parse_time
from memctl.core.errors import MemctlError, NoteFormatError, UsageError
from memctl.core.ids import valid_id
from memctl.core.note import Note, stamp
from memctl.core.noteformat import compute_checksum, set_fields
from memctl.core.secrets import masked_title
from memctl.disk.atomic import atomic_write_text, move_file
from memctl.disk.counters import get_counters
from memctl.disk.gitops import commits_starting, put_back_reason
from memctl.disk.layout import ARCHIVED, NOTE, classify
from memctl.store import Store

ARCHIVE = "archive"
DEMOTE = "demote"
SWEEP_SUBJECT = "archive sweep: "  # how a sweep's commit starts (`restore --last-sweep` finds it)


@dataclass(frozen=True)
class TtlRules:
    demote_after_days: float = 90
    demote_below_importance: int = 5
    archive_after_days: float = 180
    protect_importance: int = 9

    @classmethod
    def from_settings(cls, settings: Any) -> TtlRules:
        return cls(
            demote_after_days=settings.get("ttl.demote_after_days"),
            demote_below_importance=settings.get("ttl.demote_below_importance"),
            archive_after_days=settings.get("ttl.archive_after_days"),
            protect_importance=settings.get("ttl.protect_importance"),
        )


@dataclass
class SweepItem:
    id: str
    path: str
    project: str
    action: str  # archive | demote | keep
    reason: str
    importance: int
    new_importance: int | None = None
    target: str | None = None  # where an archived note goes

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "path": self.path, "project": self.project, "reason": self.reason,
            "importance": self.importance,
        }
        if self.new_importance is not None:
            data["new_importance"] = self.new_importance
        if self.target is not None:
            data["target"] = self.target
        return data


@dataclass
class SweepPlan:
    archive: list[SweepItem] = field(default_factory=list)
    demote: list[SweepItem] = field(default_factory=list)
    kept: list[SweepItem] = field(default_factory=list)  # protected notes a rule would take
    commit: str | None = None

    @property
    def empty(self) -> bool:
        return not self.archive and not self.demote

    def to_dict(self, dry_run: bool) -> dict[str, Any]:
        return {
            "archived": [item.id for item in self.archive],
            "demoted": [item.id for item in self.demote],
            "dry_run": dry_run,
            "plan": {
                "archive": [item.to_dict() for item in self.archive],
                "demote": [item.to_dict() for item in self.demote],
                "kept": [item.to_dict() for item in self.kept],
            },
            "commit": self.commit,
        }


def last_active(note: Note, last_accessed: Any = None,
                moment: datetime | None = None) -> datetime | None:
    """The later of the last recall and the last write: `updated`, else `created`
    (docs/lifecycle.md). Not the later of `updated` and `created`: a note without `created:`
    takes its file's time for it, which each clone, checkout or pull renews, and such a note
    was never idle however old its `updated` (tests/test_lifecycle.py). A time more than a
    day ahead of `moment` proves nothing (`clock.ahead`): a typed `updated: 2062-…` or one
    pushed from a remote kept the note from every sweep."""
    written = next((time for time in (parse_time(note.updated), parse_time(note.created))
                    if time is not None and not (moment is not None and ahead(time, moment))), None)
    times = [parse_time(last_accessed) if last_accessed else None, written]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def stamps_ahead(note: Note, moment: datetime) -> list[str]:
    """The note's `updated` and `created` fields, as its file writes them (not a time taken
    from the file's own), that are more than a day ahead of `moment`, as `health` names them."""
    return [f"{name} {value} is more than a day ahead of this clock: it does not count as "
            f"the note's last activity" for name, value in (("updated", note.updated),
                                                             ("created", note.created))
            if name in note.meta and (time := parse_time(value)) is not None
            and ahead(time, moment)]


def folder_project(note: Note) -> str:
    return note.path.split("/", 1)[0]


def archive_relpath(note: Note) -> str:
    name = note.path.rsplit("/", 1)[-1]
    return f"{folder_project(note)}/archive/{note.type}/{name}"


def notes_relpath(note: Note) -> str:
    name = note.path.rsplit("/", 1)[-1]
    return f"{folder_project(note)}/notes/{note.type}/{name}"


def _days(delta: timedelta) -> int:
    return int(delta.total_seconds() // 86400)


def plan_sweep(
    notes: Iterable[Note],
    last_accessed: Mapping[str, Any],
    moment: datetime,
    rules: TtlRules,
) -> SweepPlan:
    """What a sweep at `moment` does. `last_accessed`: id -> time of the last recall."""
    plan = SweepPlan()
    for note in sorted(notes, key=lambda n: (n.path, n.id)):
        if note.status != "active":
            continue
        seen = last_active(note, last_accessed.get(note.id), moment)
        idle = _days(moment - seen) if seen is not None else None
        protected = note.pinned or note.importance >= rules.protect_importance
        why_protected = "pinned" if note.pinned else f"importance {note.importance}"

        reason = None
        if note.is_expired(moment):
            reason = f"expired {note.expires}"
        elif idle is not None and idle >= rules.archive_after_days:
            reason = f"not recalled for {idle} days"
        if reason is not None:
            item = SweepItem(note.id, note.path, note.project, ARCHIVE, reason, note.importance)
            if protected:
                item.action = "keep"
                item.reason = f"{reason}; kept: {why_protected}"
                plan.kept.append(item)
            else:
                item.target = archive_relpath(note)
                plan.archive.append(item)
            continue

        if (
            idle is not None
            and idle >= rules.demote_after_days
            and note.importance < rules.demote_below_importance
            and note.importance > 1
            and not protected
            and not _demoted_since(note, seen)
        ):
            plan.demote.append(SweepItem(
                note.id, note.path, note.project, DEMOTE, f"not recalled for {idle} days",
                note.importance, new_importance=note.importance - 1,
            ))
    return plan


def unchangeable(store: Store, note: Note, moment: datetime) -> str | None:
    """Why a sweep would keep this note rather than archive it, as `_prepare_sweep` says it
    (front matter of a shape memctl's line edits do not handle, a file it cannot read), or
    None: the health report's `kept_because` of an expired note (docs/health.md)."""
    try:
        text, _info = store.read_text(note.path)
        stamp(text, {"status": "archived"}, moment, note)
    except (MemctlError, OSError) as exc:
        return f"memctl cannot change it ({exc})"
    return None


def _demoted_since(note: Note, seen: datetime | None) -> bool:
    stamp = parse_time(note.meta.get("demoted")) if note.meta.get("demoted") else None
    return stamp is not None and seen is not None and stamp >= seen


# --- I/O: running a sweep and restoring --------------------------------------------------------


def _last_accessed(store: Store, ids: list[str]) -> dict[str, Any]:
    return {note_id: last for note_id, (_count, last) in get_counters(store, ids).items() if last}


# Why a sweep moves a note already archived: an earlier sweep stopped between writing its new
# fields and moving it (`_move`), or a person wrote `status: archived` by hand.
LEFT_IN_NOTES = "archived, but still among the notes: moved to the archive"


def compute_plan(store: Store, moment: datetime) -> SweepPlan:
    """The sweep at `moment` (`plan_sweep`), and the move of every note that says it is
    archived but is still among the notes (`LEFT_IN_NOTES`), which finishes a sweep that
    stopped halfway (docs/reliability.md)."""
    in_notes = list(store.iter_notes(include_archived=False))
    notes = [note for note in in_notes if note.status == "active"]
    plan = plan_sweep(notes, _last_accessed(store, [n.id for n in notes]), moment,
                      TtlRules.from_settings(store.settings))
    plan.archive += [SweepItem(note.id, note.path, note.project, ARCHIVE, LEFT_IN_NOTES,
                               note.importance, target=archive_relpath(note))
                     for note in in_notes if note.status == "archived"]
    return plan


@dataclass
class _Step:
    """One note's change, worked out before any file is written: its new text, and where
    it goes (`target == source` when it stays)."""
    source: str
    target: str
    original: str
    text: str
    created: list[Any] = field(default_factory=list)  # folders made for it (undone too)
    # Written where it is before the move, `text` then written at its target: what a move
    # needs to be done again must stay in the file until it has moved (`_restore_one`).
    before: str | None = None


def _prepare_sweep(store: Store, plan: SweepPlan, moment: datetime) -> list[_Step]:
    """Read every note of the plan and work out its new text, writing nothing. A note memctl
    cannot change in place (front matter of a shape its line edits do not handle, a file it
    cannot read) leaves the plan for `kept`, with why: the rest of the sweep goes on
    (docs/lifecycle.md)."""
    steps: list[_Step] = []
    taken: set[str] = set()
    for action, items in ((DEMOTE, plan.demote), (ARCHIVE, plan.archive)):
        # The notes that stay in the plan, rebuilt in one pass: a removal per note that
        # cannot be changed scanned the list each time, quadratic in the failures
        # (tests/test_lifecycle.py).
        changeable: list[SweepItem] = []
        for item in items:
            try:
                step = (_demote(store, item, moment) if action == DEMOTE
                        else _archive(store, item, moment, taken))
            except (MemctlError, OSError) as exc:
                item.action = "keep"
                item.target = item.new_importance = None
                item.reason = f"{item.reason}; kept: memctl cannot change it ({exc})"
                plan.kept.append(item)
                continue
            changeable.append(item)
            taken.add(step.target)
            steps.append(step)
        items[:] = changeable
    return steps


def run_sweep(store: Store, *, dry_run: bool = False) -> SweepPlan:
    """Plan the sweep and, unless `dry_run`, apply it with one commit: all or nothing."""
    if dry_run:
        moment = now()
        plan = compute_plan(store, moment)
        _prepare_sweep(store, plan, moment)
        _finishing(store, plan)  # what the run would finish of a killed sweep, shown too
        return plan
    with store.lock("archive"):
        moment = now()
        plan = compute_plan(store, moment)
        steps = _prepare_sweep(store, plan, moment)
        finished = _finishing(store, plan)
        if plan.empty:
            # Nothing to archive, nothing a killed sweep left archived. The record of a killed
            # sweep `restore --last-sweep` undid stays: it is still the last sweep, and the
            # next restore has nothing to undo, as after a committed sweep undone (it was
            # removed here, and the sweep before it undone). Any other is done with: a
            # record left stale or edited by hand, a sweep that moved nothing.
            if not _record_undone(store):
                _sweep_done(store)
            return plan
        _record_sweep(store, plan, finished, moment)
        # One `archive <id>: <reason>` line per note: `restore --last-sweep` reads them.
        lines = [f"archive {item.id}: {item.reason}" for item in plan.archive]
        lines += [f"demote {item.id} to {item.new_importance}: {item.reason}"
                  for item in plan.demote]
        title = f"{SWEEP_SUBJECT}{len(plan.archive)} archived, {len(plan.demote)} demoted"
        moved = [path for item in finished for path in (item.path, item.target or item.path)]
        try:
            plan.commit = _apply(store, steps, title + "\n\n" + "\n".join(lines), moved,
                                 allow_empty=bool(finished))
        except BaseException:
            # Every move was put back (`_apply`): the record named notes no sweep archived,
            # and `restore --last-sweep` took it for the newest sweep ("nothing to undo")
            # until the next `archive`. It stays only for what a killed sweep left archived.
            if not _interrupted_sweep(store):
                _sweep_done(store)
            raise
        _sweep_done(store)
    return plan


# The notes a sweep is archiving, written down (machine-local) before it moves the first one
# and removed once its commit is made: a sweep killed in between (`kill -9`) leaves it, and
# the next sweep names those notes in its commit (`run_sweep`).
SWEEP_RECORD = "sweep.json"


def _record_sweep(store: Store, plan: SweepPlan, finished: list[SweepItem],
                  moment: datetime) -> None:
    """Write `SWEEP_RECORD`: when the sweep runs (`at`: `restore --last-sweep` undoes the newer
    of it and the newest sweep in the history, which another machine may have made), and
    each note it archives. A note still active is written down with the hash of its file
    (`before`): that file unchanged later proves the sweep never wrote it, so a sweep killed
    before its first move is no sweep to undo (`_stopped_sweep`). The notes an earlier
    killed sweep moved or marked (`finished`, `LEFT_IN_NOTES`) have none: they were changed."""
    done = {item.id for item in finished}
    entries = []
    for item in plan.archive:
        entry: dict[str, Any] = {"id": item.id, "path": item.path, "target": item.target,
                                 "reason": item.reason}
        if item.id not in done and item.reason != LEFT_IN_NOTES:
            before = _file_hash(store, item.path)
            if before is not None:
                entry["before"] = before
        entries.append(entry)
    atomic_write_text(store.state_dir / SWEEP_RECORD,
                      json.dumps({"at": format_time(moment), "archive": entries}))


def _mark_undone(store: Store) -> None:
    """Mark `SWEEP_RECORD` as undone by `restore --last-sweep` (`undone`)."""
    path = store.state_dir / SWEEP_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict):
            record["undone"] = True
            atomic_write_text(path, json.dumps(record))
    except (OSError, ValueError):
        pass  # unmarked, the next archive with nothing to do removes it: as before


def _record_undone(store: Store) -> bool:
    """Whether `SWEEP_RECORD` is of a killed sweep `restore --last-sweep` undid."""
    try:
        record = json.loads((store.state_dir / SWEEP_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("undone") is True


def _file_hash(store: Store, relpath: object) -> str | None:
    """The SHA-256 of a file of the store, or None when it cannot be read (or `relpath` is
    not a path of the store: a record edited by hand)."""
    if not isinstance(relpath, str):
        return None
    try:
        return hashlib.sha256(store.path(relpath).read_bytes()).hexdigest()
    except (OSError, MemctlError, ValueError):
        return None


def _untouched(store: Store, entry: Mapping[str, Any]) -> bool:
    """Whether the file of a record's note holds, where it was, the very bytes it held when
    the sweep wrote the record down: the sweep never wrote it (its first write, `_move`,
    changes `status`), and nothing else did since. A restore since changed it (`status`,
    `updated`): not untouched."""
    before = entry.get("before")
    return isinstance(before, str) and _file_hash(store, entry.get("path")) == before


def _sweep_done(store: Store) -> None:
    try:
        (store.state_dir / SWEEP_RECORD).unlink(missing_ok=True)
    except OSError:
        pass


def _sweep_record(store: Store) -> list[dict[str, Any]]:
    """The entries of `SWEEP_RECORD` (none when no sweep was killed before its commit, or
    the next one finished it, or the file is not one a sweep wrote)."""
    return _read_record(store)[1]


def _read_record(store: Store) -> tuple[datetime | None, list[dict[str, Any]]]:
    """`SWEEP_RECORD`: when its sweep ran, and its entries. The time is its `at`, or when
    that is missing, not a time, or more than a day ahead of this clock (a record of an
    earlier version, or edited by hand), the time the file was written."""
    path = store.state_dir / SWEEP_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        entries = record["archive"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, []
    if not isinstance(entries, list):
        return None, []
    at = parse_time(record.get("at")) if isinstance(record.get("at"), str) else None
    if at is None or ahead(at):
        try:
            at = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
        except OSError:
            at = None
    return at, [entry for entry in entries if isinstance(entry, dict)]


@dataclass
class LastSweep:
    """The sweep `restore --last-sweep` undoes: the newest sweep in the history that archived
    a note (`commit`), or this machine's sweep killed before its commit (`commit` None;
    `entries`: its record's, by id)."""
    ids: list[str]
    commit: str | None
    at: datetime | None
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    passed_over: datetime | None = None  # this machine's stopped sweep, older: not undone

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "at": format_time(self.at) if self.at else None,
                "stopped_before_commit": self.commit is None,
                "passed_over_stopped_sweep": (format_time(self.passed_over)
                                              if self.passed_over else None)}


def _stopped_sweep(store: Store) -> LastSweep | None:
    """This machine's sweep killed before its commit (`SWEEP_RECORD`), or None: no record, or
    one whose every note is untouched (`_untouched`): killed before its first move, it
    archived nothing, and the sweep before it is still the last one (tests/test_lifecycle.py).
    Call under the store lock."""
    at, record = _read_record(store)
    entries = {entry["id"]: entry for entry in record if isinstance(entry.get("id"), str)}
    if not entries or all(_untouched(store, entry) for entry in entries.values()):
        return None
    return LastSweep(list(entries), None, at, entries)


def _committed_sweep(store: Store) -> LastSweep | None:
    """The newest sweep in the history that archived any note (`last_sweep_ids`)."""
    for commit, date, message in commits_starting(store.root, SWEEP_SUBJECT):
        ids = _archived_ids(message)
        if ids:
            return LastSweep(ids, commit, parse_time(date))
    return None


def newest_sweep(store: Store) -> LastSweep | None:
    """The sweep `restore --last-sweep` undoes: the newer by time of this machine's sweep
    killed before its commit and the newest sweep in the history (one `memctl sync` brought
    from another machine may be newer than the record: it was undone the record's notes
    instead, tests/test_lifecycle.py); at equal or unknown times, the killed one. Call under the
    store lock."""
    stopped, committed = _stopped_sweep(store), _committed_sweep(store)
    if stopped is None or committed is None:
        return stopped or committed
    if committed.at is not None and stopped.at is not None and committed.at > stopped.at:
        committed.passed_over = stopped.at
        return committed
    return stopped


def _interrupted_sweep(store: Store) -> list[SweepItem]:
    """The notes a killed sweep archived that are archived still, where it put them
    (`SWEEP_RECORD`); none when no sweep was killed. Call under the store lock."""
    items: list[SweepItem] = []
    if _record_undone(store):
        return items  # undone: nothing of it is left to finish, whoever archived its notes since
    for entry in _sweep_record(store):
        try:
            note_id, source, target = entry["id"], entry["path"], entry["target"]
            if not isinstance(source, str) or not isinstance(target, str):
                continue  # not a record a sweep wrote (`null`: a traceback on every archive)
            note = store.read_note(target)
        except (OSError, MemctlError, KeyError, TypeError):
            continue  # not moved, or restored, forgotten or changed since
        # Where it came from is a note's path of its project too: the next sweep commits
        # it, and a record edited by hand must not have it commit any other file, or name
        # one outside the store (git refused it: every `archive` then failed).
        if note.id == note_id and note.status == "archived" and target != source \
                and classify(target) == (ARCHIVED, folder_project(note)) \
                and classify(source) == (NOTE, folder_project(note)):
            items.append(SweepItem(note.id, source, note.project, ARCHIVE,
                                   str(entry.get("reason") or LEFT_IN_NOTES),
                                   note.importance, target=target))
    return items


def _finishing(store: Store, plan: SweepPlan) -> list[SweepItem]:
    """The notes a sweep killed before its commit had already moved, put first in `plan`:
    this sweep finishes it, so its commit names them too, and `restore --last-sweep` brings
    back the whole sweep, not only the notes the finishing run moved
    (tests/test_lifecycle.py)."""
    planned = {item.id for item in plan.archive}
    finished = [item for item in _interrupted_sweep(store) if item.id not in planned]
    plan.archive = finished + plan.archive
    return finished


def _apply(store: Store, steps: list[_Step], message: str, also: list[str] | None = None,
           *, allow_empty: bool = False) -> str | None:
    """Write every step, then make one commit (of `also` too: files moved before). Any
    failure (a folder memctl may not write, a full disk, a failed commit) puts back every
    file already changed, so the store is exactly as it was, and the error is raised
    (tests/test_lifecycle.py). `allow_empty`: the commit is made even when no file changed
    (its message is what `restore --last-sweep` reads)."""
    done: list[_Step] = []
    try:
        for step in steps:
            done.append(step)
            _move(store, step)
        changed: list[str] = list(also or ())
        for step in steps:
            changed += [step.source] if step.target == step.source else [step.source, step.target]
        try:
            return store.commit(message, changed, allow_empty=allow_empty)
        except (OSError, MemctlError) as exc:
            if isinstance(exc, UsageError):
                raise
            # Put back below: the commit's "your change is on disk; `memctl sync` commits
            # it" would be false, and a sync would then commit nothing of it.
            raise MemctlError(f"the commit failed ({put_back_reason(exc)}); every file was "
                              "put back, nothing changed: run the command again once that "
                              "is fixed") from None
    except BaseException:
        for step in reversed(done):
            _undo(store, step)
        raise


def _undo(store: Store, step: _Step) -> None:
    """Put one step's note back as it was (best effort: the first error is the one told)."""
    import os

    try:
        source, target = store.path(step.source), store.path(step.target)
        if step.target != step.source and target.exists() and not source.exists():
            os.rename(target, source)
        if source.read_text(encoding="utf-8") != step.original:
            store.write_text(step.source, step.original)
        for folder in reversed(step.created):
            os.rmdir(folder)
    except (OSError, MemctlError):
        pass


def _surgical(text: str, updates: dict[str, Any], note: Note) -> str:
    """Change fields without stamping `updated`; keep a hand edit recognisable as one."""
    changes = dict(updates)
    if not note.has_id:
        changes["id"] = note.id
    try:
        text = set_fields(text, changes)
        if note.stamped:
            text = set_fields(text, {"checksum": compute_checksum(text)})
    except ValueError as exc:
        raise MemctlError(f"{note.path}: cannot change a file that does not parse ({exc})") from exc
    return text


def _demote(store: Store, item: SweepItem, moment: datetime) -> _Step:
    note = store.read_note(item.path)
    text, _info = store.read_text(item.path)
    return _Step(item.path, item.path, text, _surgical(
        text, {"importance": item.new_importance, "demoted": format_time(moment)}, note))


def _free_path(store: Store, wanted: str, note_id: str, taken: set[str] | None = None) -> str:
    """`wanted`, or a name beside it no file has and no other step of this change takes."""
    taken = taken or set()

    def used(relpath: str) -> bool:
        return relpath in taken or store.path(relpath).exists()

    if not used(wanted):
        return wanted
    stem = wanted[:-3] if wanted.endswith(".md") else wanted
    candidate = f"{stem}-{note_id}.md"
    number = 2
    while used(candidate):
        candidate = f"{stem}-{note_id}-{number}.md"
        number += 1
    return candidate


def _move(store: Store, step: _Step) -> None:
    """Write the note's new fields where it is, then move it to its target with one rename.

    Each step is atomic, so a crash (`kill -9`) leaves exactly one copy, never two notes with
    one id: as it was; where it was with its new fields (`status: archived`, so archived for
    every reader, its id and where it came from written down; the next sweep moves it:
    `LEFT_IN_NOTES`); or at its target, whole. Moved first, a crash left it in the archive
    with its old fields: a hand-made note then lost its id (made from its path) and the path
    `restore` puts it back at (tests/test_lifecycle.py). A step with `before` writes that
    first, and its new fields at the target once moved (`_restore_one`)."""
    store.write_text(step.source, step.text if step.before is None else step.before)
    if step.target != step.source:
        step.created = move_file(store.path(step.source), store.path(step.target))
    if step.before is not None:
        store.write_text(step.target, step.text)


def _archive(store: Store, item: SweepItem, moment: datetime, taken: set[str]) -> _Step:
    note = store.read_note(item.path)
    text, _info = store.read_text(item.path)
    target = _free_path(store, item.target or archive_relpath(note), note.id, taken)
    # Few changed lines, so git still sees a rename and `git log --follow` keeps the history;
    # where it came from is only written down when restore could not work it out.
    changes: dict[str, Any] = {"status": "archived"}
    if note.path != notes_relpath(note):
        changes["archived_from"] = note.path
    updated = stamp(text, changes, moment, note)
    item.target = target
    return _Step(note.path, target, text, updated)


def restore_note(store: Store, ref: str) -> tuple[Note, str]:
    """Bring an archived (or superseded) note back to active. Returns it and its old path."""
    restored = restore_notes(store, [ref])
    return restored.notes[0]


@dataclass
class RestoreResult:
    notes: list[tuple[Note, str]] = field(default_factory=list)  # (restored note, old path)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, why), --last-sweep only
    commit: str | None = None
    sweep: LastSweep | None = None  # --last-sweep: the sweep undone


def last_sweep_ids(store: Store) -> list[str]:
    """The ids the newest archive sweep that archived any note archived, read from its
    commit (`run_sweep` writes one `archive <id>: <reason>` line per note); none when no
    sweep archived anything. A sweep that only demoted is passed over: it archived nothing
    to undo, and it hid the sweep before it (tests/test_lifecycle.py)."""
    found = _committed_sweep(store)
    return found.ids if found else []


def _archived_ids(message: str) -> list[str]:
    ids = []
    for line in message.splitlines()[1:]:
        words = line.split(" ", 2)
        if len(words) >= 2 and words[0] == "archive" and words[1].endswith(":"):
            ids.append(words[1][:-1])
    return ids


def restore_notes(store: Store, refs: list[str], *, sweep: bool = False) -> RestoreResult:
    """Bring archived (or superseded) notes back to active, with one commit. Every id is
    resolved and checked first: an unknown or active one is an error and nothing changes.
    `sweep`: `refs` are the ids a sweep archived (none: the newest sweep's, read under the
    lock); those no longer archived are skipped."""
    result = RestoreResult()
    with store.lock("restore"):
        if sweep and not refs:
            # The newest sweep as it is once this holds the lock: read before, a sweep that
            # ran while this waited for it was passed over, and the one before it undone
            # (tests/test_lifecycle.py). A sweep killed before its commit, and not finished
            # since, is the newest, unless a newer one came from another machine (`sync`):
            # its record names its notes (the history, the sweep before).
            result.sweep = newest_sweep(store)
            if result.sweep is None:
                raise MemctlError("no archive sweep in this store's history archived a note; "
                                  "nothing to undo")
            refs = result.sweep.ids
        entries = result.sweep.entries if result.sweep else {}
        # Resolved under the lock: a note another command moved or forgot while this waited
        # for it is seen where it is now (tests/test_lifecycle.py).
        notes: dict[str, Note] = {}
        for ref in refs:
            if sweep:
                entry = entries.get(ref)
                if entry is not None and _untouched(store, entry):
                    result.skipped.append((ref, "the sweep was killed before it changed it"))
                    continue
                found, why = _still_swept(store, ref)
                if found is not None and entry is not None \
                        and found.path not in (entry.get("path"), entry.get("target")):
                    # Archived, but not where the killed sweep put it: by another sweep (a
                    # record left stale, or edited by hand, moves no other sweep's note).
                    found, why = None, (f"archived at {found.path}, not where the killed sweep "
                                        f"put it: `memctl restore {ref}` brings it back anyway")
                if found is None:
                    result.skipped.append((ref, why))
                    continue
                note = found
            else:
                note = store.find_note(ref)
            if note.status == "active":
                raise MemctlError(f"note {note.id} is already active ({note.path}); nothing to restore")
            notes.setdefault(note.id, note)
        if not notes and sweep:
            why = "; ".join(dict.fromkeys(reason for _ref, reason in result.skipped))
            raise MemctlError(f"no note the last archive sweep archived ({len(refs)}) can be "
                              f"restored ({why}); nothing to undo")
        if not notes:
            raise MemctlError("no note to restore")
        moment = now()
        steps: list[_Step] = []
        taken: set[str] = set()
        for note in notes.values():
            step = _restore_one(store, note, moment, taken)
            taken.add(step.target)
            steps.append(step)
            result.notes.append((note, step.target))
        if len(notes) == 1:
            note = next(iter(notes.values()))
            message = f"restore {note.id}: {masked_title(note.title)}"
        else:
            message = f"restore {len(notes)} notes\n\n" + "\n".join(
                f"restore {note.id}: {masked_title(note.title)}" for note in notes.values())
        result.commit = _apply(store, steps, message)
        if sweep and result.sweep is not None and result.sweep.commit is None:
            _mark_undone(store)  # a killed sweep undone: still the last one (`run_sweep`)
    result.notes = [(store.read_note(target), note.path) for note, target in result.notes]
    return result


def restore_last_sweep(store: Store) -> RestoreResult:
    """Undo the newest archive sweep: restore, with one commit, the notes it archived that
    are still archived. Those restored, forgotten or changed since are listed as skipped:
    looked at under the lock, so one forgotten or restored while this waited for it is
    skipped too (it made the whole restore fail: `no note with id …`). The sweep is found
    under the lock too: the newest once any sweep that held it is done."""
    return restore_notes(store, [], sweep=True)


def _still_swept(store: Store, note_id: str) -> tuple[Note | None, str]:
    """The note a sweep archived, when it is still archived; else None and why it is skipped."""
    if not valid_id(note_id):
        # An id that looks like a key (a note dropped in by hand) is masked in every commit
        # message (gitops.clean_message, `ghp_****`: no id), so the sweep's commit cannot
        # name it back.
        return None, ("its id looks like a key, masked in the sweep's commit: `memctl list "
                      "--status archived` shows it; restore it by its id")
    try:
        note = store.find_note(note_id)
    except NoteFormatError as exc:
        # Still there, archived, but no field of it can be changed: not "forgotten".
        return None, (f"its file does not parse ({exc}): fix it "
                      f"(`memctl edit {note_id}`), then `memctl restore {note_id}`")
    except MemctlError:
        return None, "not found (forgotten since?)"
    if note.status != "archived":
        return None, f"{note.status} now"
    if note.superseded_by:
        # Superseded since, in the archive (`memctl supersede` of an archived note): made
        # active again, its `superseded_by` dropped, the replaced fact stood again beside
        # the note that replaces it (tests/test_lifecycle.py).
        return None, (f"superseded by {note.superseded_by} now: `memctl restore {note_id}` "
                      "brings it back anyway")
    return note, ""


def _restore_one(store: Store, note: Note, moment: datetime, taken: set[str]) -> _Step:
    """How one note moves back and becomes active (under the lock; nothing written yet)."""
    text, _info = store.read_text(note.path)
    updates: dict[str, Any] = {"status": "active", "archived_from": None,
                               "superseded_by": None}
    # A note restored while past its expiry would vanish from search again at once.
    if note.is_expired(moment):
        updates["expires"] = None
    target = note.path
    if classify(note.path) == (ARCHIVED, folder_project(note)):
        wanted = str(note.meta.get("archived_from") or "")
        if not wanted or classify(wanted) != (NOTE, folder_project(note)):
            wanted = notes_relpath(note)
        target = _free_path(store, wanted, note.id, taken)
    step = _Step(note.path, target, text, stamp(text, updates, moment, note))
    if target != note.path and note.meta.get("archived_from"):
        # `archived_from` stays until the note has moved: a restore killed in between left
        # it in the archive without it, and the next restore put a hand-dropped note at
        # `<project>/notes/<type>/`, not where it came from (tests/test_lifecycle.py).
        step.before = stamp(text, {**updates, "archived_from": note.meta["archived_from"]},
                            moment, note)
    return step


