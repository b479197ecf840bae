"""The merge core shared by `import` and `sync`: which version of a note (or whole file) wins.

Pure: versions are plain data (`Entry`), nothing here reads or writes the store. The I/O
layers (memctl.exchange.transfer, memctl.exchange.sync) build entries from files or git objects, call
`merge_snapshots`, and write what comes back.

The rules (docs/sync.md explains them for users):
- Notes and episodes are matched by id, every other file by its path.
- If one side is known to descend from the other (the other's version is in its history,
  or is the git merge base), the descendant is taken and no conflict copy is needed: the
  old version stays in git history.
- Otherwise both sides changed since they last agreed: the newer `updated` wins, compared
  as UTC instants; at equal times a hand edit (stamp missing or not matching) beats the
  stamped version it edited, a tombstone beats both, and the content's hash settles the
  rest, so every machine picks the same winner. The losing version is returned as a
  conflict copy unless it is a tombstone or differs from the winner only in its stamp.
- A side that does not have a key either never had it (the other side's version is taken)
  or deleted it (the other side's version is in its history: it stays deleted).
- The path of a note both sides have is merged three-way, apart from its content: a side
  that only moved the file keeps its path whatever content wins; a move that came with an
  edit goes with it; when both moved it, the winner's path (`_kept_path`).
- Access counter files merge by taking, per note, the larger count and the later time.
- The same id with two different `created` times is two notes that happen to share an id:
  both are kept, and the later-created one gets a new id derived from (id, created), so
  every machine renames it the same way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from memctl.core.clock import format_time, parse_time
from memctl.core.noteformat import compute_checksum, parse_text, set_fields

TOMBSTONE = "tombstone"
CONFLICT = "conflict"
COUNTERS = "counters"
CONFLICT_DIR = ".conflicts"
COUNTERS_DIR = ".counters"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NEVER = -(1 << 62)
# Stamps: `updated`, `checksum`, and the time of a TTL demotion (`demoted`), which the
# sweeps of two machines write alike but for their own time (tests/test_sync.py).
_STAMP_LINE = re.compile(rb"^(?:updated|checksum|demoted)[ \t]*:.*(?:\r?\n|$)", re.MULTILINE)
_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def git_oid(data: bytes) -> str:
    """git's blob id of these bytes: the same hash git history records for a file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def instant(text: str | None) -> int | None:
    """A time stamp as microseconds since 1970 UTC (None when it is not a time)."""
    if not text:
        return None
    moment = parse_time(text)
    if moment is None:
        return None
    return (moment - _EPOCH) // timedelta(microseconds=1)


class MergeKey(str):
    """What matches two versions of one thing across stores: `id:<id>` for notes, episodes
    and their tombstones (a note keeps its key through renames), `path:<relpath>` for any
    other file. A `str`, so it keys dicts and JSON as before; built and read only here."""

    __slots__ = ()

    @classmethod
    def for_id(cls, note_id: str) -> MergeKey:
        return cls(f"id:{note_id}")

    @classmethod
    def for_path(cls, path: str) -> MergeKey:
        return cls(f"path:{path}")

    @property
    def is_id(self) -> bool:
        return self.startswith("id:")

    @property
    def name(self) -> str:
        """The id, or the path."""
        return self[3:] if self.is_id else self[5:]


def key_name(key: str) -> str:
    """The id or path a merge key (typed, or read back as a plain string) names."""
    return MergeKey(key).name


def add_entry(entries: dict[str, Entry], entry: Entry) -> Entry:
    """Put `entry` into one side's entries. The one rule for two files claiming one id (a
    hand copy, a bad merge): both are kept, the second by its path, so neither is lost and
    health names the pair. Returns the entry as added."""
    if entry.key in entries:
        entry = Entry(key=MergeKey.for_path(entry.path), path=entry.path, data=entry.data,
                      kind=entry.kind, updated=entry.updated, created=entry.created,
                      stamped=entry.stamped)
    entries[entry.key] = entry
    return entry


def one_side(versions: Iterable[Entry]) -> tuple[dict[str, Entry], list[tuple[Entry, Entry]]]:
    """One side's files keyed for a merge (`versions` in path order), with rule 6 of
    docs/sync.md applied inside the side as well: of the files claiming one id with different
    `created` times (a plain git push that reuses an id beside the note that has it), the
    earliest-created keeps the id and each later one gets `collision_id`, exactly as when the
    two come from the two sides (`_split_collisions`), so every machine renames it alike.
    Files with one id and one `created` time (a hand copy) are kept by their path
    (`add_entry`). Returns the entries and each (file, the same file renamed)."""
    claims: dict[str, list[Entry]] = {}
    for version in versions:
        claims.setdefault(version.key, []).append(version)
    entries: dict[str, Entry] = {}
    renames: list[tuple[Entry, Entry]] = []
    for key in sorted(claims):
        group = claims[key]
        dated = [v for v in group if not v.is_tombstone and instant(v.created) is not None]
        keeper = min(dated, key=lambda v: (instant(v.created), v.oid)) if dated else None
        if keeper is None or not any(_created_differs(keeper, v) for v in group):
            for version in group:
                add_entry(entries, version)
            continue
        # The keeper first, so the id is its own whatever the order of the paths: a later
        # file that cannot take its new id (a hand copy of it took it) falls to its path,
        # never onto the id (tests/test_merge.py).
        add_entry(entries, keeper)
        for version in group:
            if version is keeper:
                continue
            if _created_differs(keeper, version):
                assert version.created is not None
                moved = retag(version, collision_id(key_name(key), version.created))
                if moved.key not in claims and moved.key not in entries:
                    entries[moved.key] = moved
                    renames.append((version, moved))
                    continue
            add_entry(entries, version)  # its new id is taken too: kept by its path
    return entries, renames


@dataclass(frozen=True)
class Entry:
    """One version of one note or file.

    key: `id:<id>` for notes, episodes and their tombstones, `path:<relpath>` for the rest.
    updated: the version's time (for a tombstone, when it was deleted), ISO 8601.
    stamped: False for a hand edit (the `checksum` stamp is missing or does not match).
    """

    key: str
    path: str
    data: bytes
    kind: str = "note"
    updated: str | None = None
    created: str | None = None
    stamped: bool = True
    oid: str = ""

    def __post_init__(self) -> None:
        if not self.oid:
            object.__setattr__(self, "oid", git_oid(self.data))

    @property
    def is_tombstone(self) -> bool:
        return self.kind == TOMBSTONE

    @property
    def note_id(self) -> str | None:
        key = MergeKey(self.key)
        return key.name if key.is_id else None

    def order(self) -> tuple[int, int, str]:
        """The total order that picks the newest version, identical on every machine."""
        moment = instant(self.updated)
        rank = 2 if self.is_tombstone else (0 if self.stamped else 1)
        return (_NEVER if moment is None else moment, rank, self.oid)

    def with_data(self, data: bytes, path: str | None = None, key: str | None = None) -> Entry:
        return Entry(
            key=key or self.key, path=path or self.path, data=data, kind=self.kind,
            updated=self.updated, created=self.created, stamped=self.stamped,
        )


@dataclass(frozen=True)
class Outcome:
    """What one key became: `taken` is "ours", "theirs" or "merged" (counters)."""

    result: Entry | None
    taken: str
    copy: Entry | None = None
    diverged: bool = False
    revived: bool = False  # a deletion on one side lost to an edit stamped later on the other


@dataclass
class MergeResult:
    entries: dict[str, Entry]
    outcomes: dict[str, Outcome]
    conflicts: list[Entry] = field(default_factory=list)
    # id of the note that had to give way in an id collision -> its new id
    renamed: dict[str, str] = field(default_factory=dict)


Seen = Mapping[str, frozenset[str]]


def future_horizon(moment: datetime, tolerance: timedelta = timedelta(days=1)) -> int:
    """The latest `updated` (microseconds since 1970) a version may claim in a merge on this
    machine at `moment`. A later stamp proves nothing (a clock days ahead, a forged
    `9999-12-31`): it counts as no time at all, so it never wins on its date alone
    (docs/sync.md)."""
    return instant(format_time(moment + tolerance)) or 0


def newer(a: Entry, b: Entry, horizon: int | None = None) -> Entry:
    if horizon is None:
        return a if a.order() >= b.order() else b
    return a if _capped(a.order(), horizon) >= _capped(b.order(), horizon) else b


def _capped(order: tuple[int, int, str], horizon: int) -> tuple[int, int, str]:
    return (_NEVER,) + order[1:] if order[0] > horizon else order


def same_content(a: Entry, b: Entry) -> bool:
    """True when two versions differ at most in their `updated`/`checksum`/`demoted` stamp."""
    if a.oid == b.oid:
        return True
    return _without_stamp(a.data) == _without_stamp(b.data)


def _without_stamp(data: bytes) -> bytes:
    end = _front_matter_end(data)
    return _STAMP_LINE.sub(b"", data[:end]).replace(b"\r\n", b"\n") + data[end:].replace(b"\r\n", b"\n")


def _front_matter_end(data: bytes) -> int:
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    offset = len(data) - len(body)
    lines = body.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != b"---":
        return 0
    position = offset + len(lines[0])
    for line in lines[1:]:
        position += len(line)
        if line.rstrip() in (b"---", b"..."):
            return position
    return 0


def conflict_path(path: str, oid: str) -> str:
    """Where the losing version of `path` is kept: `.conflicts/<path>` with the version's
    hash before the extension, so each losing version has its own stable name."""
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    tagged = f"{stem}.{oid[:12]}" + (f".{suffix}" if suffix else "")
    return "/".join(part for part in (CONFLICT_DIR, folder, tagged) if part)


# The version's hash `conflict_path` puts before a copy's extension.
_COPY_TAG = re.compile(r"\.([0-9a-f]{12})(?=(\.[^./]*)?$)")


def conflict_source(copy_path: str) -> str:
    """The path a conflict copy keeps a version of: `conflict_path` undone."""
    inner = copy_path[len(CONFLICT_DIR) + 1:] if copy_path.startswith(CONFLICT_DIR + "/") else copy_path
    folder, _, name = inner.rpartition("/")
    name = _COPY_TAG.sub("", name, count=1)
    return f"{folder}/{name}" if folder else name


def conflict_copy(loser: Entry) -> Entry:
    """The losing version kept under `.conflicts/`. A conflict copy that lost (both machines
    edited it by hand) is kept too, as one more copy of the same file beside it, never a copy
    of a copy (tests/test_merge.py)."""
    source = conflict_source(loser.path) if loser.kind == CONFLICT else loser.path
    path = conflict_path(source, loser.oid)
    return Entry(key=MergeKey.for_path(path), path=path, data=loser.data, kind=CONFLICT,
                 updated=loser.updated, created=loser.created, stamped=loser.stamped)


def merge_key(ours: Entry | None, theirs: Entry | None,
              seen_ours: frozenset[str] = frozenset(),
              seen_theirs: frozenset[str] = frozenset(), horizon: int | None = None,
              paths_ours: frozenset[str] = frozenset(),
              paths_theirs: frozenset[str] = frozenset()) -> Outcome:
    """Merge one key. `seen_*` are the versions (git blob ids) each side had before its
    current one: its history, or just the merge base. `horizon` (`future_horizon`) caps the
    times versions claim. `paths_*` are the paths each side's note had before (the merge
    base's path, or this store's history): they tell which side moved the file
    (`_kept_path`)."""
    outcome = _merge_versions(ours, theirs, seen_ours, seen_theirs, horizon)
    result = outcome.result
    if result is None or ours is None or theirs is None or ours.path == theirs.path \
            or not MergeKey(result.key).is_id or ours.is_tombstone or theirs.is_tombstone:
        return outcome
    path = _kept_path(ours, theirs, result, seen_ours, seen_theirs, paths_ours, paths_theirs)
    if path == result.path:
        return outcome
    return replace(outcome, result=result.with_data(result.data, path=path))


def _kept_path(ours: Entry, theirs: Entry, result: Entry, seen_ours: frozenset[str],
               seen_theirs: frozenset[str], paths_ours: frozenset[str],
               paths_theirs: frozenset[str]) -> str:
    """Where a note both sides have, at two paths, is kept: the path is merged three-way.
    A side whose note sits where the other side's note used to be did not move it; the other
    side did. A side that only moved the file (its content is one the other side had
    before) keeps its new path whatever content wins: a rename by hand or a move to another
    project is never undone by an edit made elsewhere (docs/sync.md, tests/test_merge.py).
    A move that came with an edit of its own goes with that edit: if the edit loses, so
    does the move (an archiving, which moves the file and changes its status, loses to a
    later edit as a whole, and the losing version, at its path, is the conflict copy). When
    both moved it, or nothing tells who did, the winner's path is kept."""
    ours_moved = theirs.path in paths_ours and ours.path not in paths_theirs
    theirs_moved = ours.path in paths_theirs and theirs.path not in paths_ours
    if ours_moved and (result.oid == ours.oid or ours.oid in seen_theirs):
        return ours.path
    if theirs_moved and (result.oid == theirs.oid or theirs.oid in seen_ours):
        return theirs.path
    return result.path


def _merge_versions(ours: Entry | None, theirs: Entry | None, seen_ours: frozenset[str],
                    seen_theirs: frozenset[str], horizon: int | None) -> Outcome:
    """Which version's content wins (`merge_key` then settles its path)."""
    if theirs is None:
        if ours is not None and ours.oid in seen_theirs:
            return Outcome(None, "theirs")  # they deleted what we still have unchanged
        return Outcome(ours, "ours")
    if ours is None:
        if theirs.oid in seen_ours:
            return Outcome(None, "ours")
        return Outcome(theirs, "theirs")
    if ours.oid == theirs.oid:
        return Outcome(ours, "ours")
    if ours.kind == COUNTERS and theirs.kind == COUNTERS:
        merged = merge_counters(ours.data, theirs.data)
        if merged == ours.data:
            return Outcome(ours, "ours")
        if merged == theirs.data:
            return Outcome(theirs, "theirs")
        return Outcome(ours.with_data(merged), "merged")
    theirs_is_old = theirs.oid in seen_ours
    ours_is_old = ours.oid in seen_theirs
    if theirs_is_old and not ours_is_old:
        return Outcome(ours, "ours")
    if ours_is_old and not theirs_is_old:
        return Outcome(theirs, "theirs")
    winner = newer(ours, theirs, horizon)
    loser = theirs if winner is ours else ours
    copy = None
    if not loser.is_tombstone and not same_content(loser, winner):
        copy = conflict_copy(loser)
    # A deletion that loses to a later edit is a conflict too, never a silent resurrection.
    revived = loser.is_tombstone and not winner.is_tombstone
    return Outcome(winner, "ours" if winner is ours else "theirs", copy, diverged=True,
                   revived=revived)


def merge_snapshots(ours: Mapping[str, Entry], theirs: Mapping[str, Entry],
                    seen_ours: Seen | None = None, seen_theirs: Seen | None = None,
                    horizon: int | None = None, paths_ours: Seen | None = None,
                    paths_theirs: Seen | None = None) -> MergeResult:
    """Merge two whole sets of entries (key -> entry). Symmetric: swapping the sides gives
    the same entries (only the `taken` labels swap). `paths_*`: key -> the paths each side
    had for it before (`paths_from_base`), so a note moved on one side only stays moved."""
    seen_ours = seen_ours or {}
    seen_theirs = seen_theirs or {}
    paths_ours = paths_ours or {}
    paths_theirs = paths_theirs or {}
    mine, other = dict(ours), dict(theirs)
    renamed = _split_collisions(mine, other, seen_ours, seen_theirs)
    empty: frozenset[str] = frozenset()
    outcomes: dict[str, Outcome] = {}
    entries: dict[str, Entry] = {}
    conflicts: list[Entry] = []
    for key in sorted(set(mine) | set(other)):
        outcome = merge_key(mine.get(key), other.get(key),
                            seen_ours.get(key, empty), seen_theirs.get(key, empty), horizon,
                            paths_ours.get(key, empty), paths_theirs.get(key, empty))
        outcomes[key] = outcome
        if outcome.result is not None:
            entries[key] = outcome.result
    for key in sorted(outcomes):
        copy = outcomes[key].copy
        if copy is not None and copy.key not in entries:
            # A copy deleted on one side (resolved) is not brought back by the same conflict.
            if copy.oid in seen_ours.get(copy.key, empty) | seen_theirs.get(copy.key, empty):
                continue
            entries[copy.key] = copy
            conflicts.append(copy)
    _separate_paths(entries)
    return MergeResult(entries=entries, outcomes=outcomes, conflicts=conflicts, renamed=renamed)


def seen_from_base(base: Mapping[str, Entry]) -> dict[str, frozenset[str]]:
    """For a three-way merge: each side has moved past the base version of every key."""
    return {key: frozenset({entry.oid}) for key, entry in base.items()}


def paths_from_base(base: Mapping[str, Entry]) -> dict[str, frozenset[str]]:
    """For a three-way merge: each side had every key at its base path."""
    return {key: frozenset({entry.path}) for key, entry in base.items()}


def seen_from_history(pairs: Iterable[tuple[str, str]]) -> dict[str, frozenset[str]]:
    """(key, blob id) pairs from a history walk -> key -> every version it had."""
    grouped: dict[str, set[str]] = {}
    for key, oid in pairs:
        grouped.setdefault(key, set()).add(oid)
    return {key: frozenset(oids) for key, oids in grouped.items()}


# --- id collisions ---------------------------------------------------------------------------


def collision_id(note_id: str, created: str) -> str:
    """The new id of a note that lost an id collision: derived from (id, created) only, so
    every machine gives the same note the same new id, whatever its content by then."""
    moment = instant(created)
    digest = hashlib.sha256(f"{note_id}|{moment if moment is not None else created}".encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    tail = "".join(_ID_ALPHABET[(number >> (5 * i)) & 31] for i in range(6))
    if len(note_id) == 16 and all(ch in _ID_ALPHABET for ch in note_id):
        return note_id[:10] + tail  # keep the time part so ids still sort by creation
    return f"{note_id}-{tail}"


def retag(entry: Entry, new_id: str) -> Entry:
    """The same note under a new id: the `id` field and the file name change, nothing else
    (a checksum stamp is renewed so the renamed note does not look hand-edited)."""
    old_id = entry.note_id or ""
    data = entry.data
    try:
        text = data.decode("utf-8")
        text = set_fields(text, {"id": new_id})
        if "checksum" in parse_text(text).meta and entry.stamped:
            text = set_fields(text, {"checksum": compute_checksum(text)})
        data = text.encode("utf-8")
    except ValueError:  # UnicodeDecodeError too: a body that is not UTF-8 is kept byte for byte
        pass  # unreadable front matter: the file name alone carries the new id
    folder, _, name = entry.path.rpartition("/")
    stem = name[:-3] if name.endswith(".md") else name
    if old_id and stem.endswith(old_id):
        stem = stem[: len(stem) - len(old_id)] + new_id
    else:
        stem = f"{stem}-{new_id}"
    path = f"{folder}/{stem}.md" if folder else f"{stem}.md"
    return Entry(key=MergeKey.for_id(new_id), path=path, data=data, kind=entry.kind,
                 updated=entry.updated, created=entry.created, stamped=entry.stamped)


def _created_differs(a: Entry, b: Entry) -> bool:
    if a.is_tombstone or b.is_tombstone or a.oid == b.oid:
        return False
    first, second = instant(a.created), instant(b.created)
    return first is not None and second is not None and first != second


def _split_collisions(mine: dict[str, Entry], other: dict[str, Entry], seen_mine: Seen,
                      seen_other: Seen) -> dict[str, str]:
    """Rule 6 of docs/sync.md between the sides: two notes with one id and different
    `created` times, neither side having seen the other's, are two notes; the later-created
    one gets `collision_id`. Versions with a history in common (one side has seen the other's
    version, or both have seen one version of that id: a base, an export's history) are one
    note whose `created` was edited, merged as any edit (tests/test_merge.py)."""
    renamed: dict[str, str] = {}
    empty: frozenset[str] = frozenset()
    for key in sorted(set(mine) & set(other)):
        a, b = mine[key], other[key]
        if not MergeKey(key).is_id or not _created_differs(a, b):
            continue
        keep_ours = (instant(a.created), a.oid) <= (instant(b.created), b.oid)
        keeper, mover = (a, b) if keep_ours else (b, a)
        side = other if keep_ours else mine
        assert mover.created is not None
        new_id = collision_id(key_name(key), mover.created)
        seen_a, seen_b = seen_mine.get(key, empty), seen_other.get(key, empty)
        split_before = MergeKey.for_id(new_id) in mine or MergeKey.for_id(new_id) in other
        if not split_before and (a.oid in seen_b or b.oid in seen_a
                                 or not seen_a.isdisjoint(seen_b)):
            continue  # one note, its `created` edited on one side or both
        # (A side that holds the later-created one's new id already split this pair: the
        # base then holds the renamed note's old version under the id, which is history of
        # the renamed note, not of the one that kept the id.)
        moved = retag(mover, new_id)
        existing = side.get(moved.key)
        side[moved.key] = moved if existing is None else newer(existing, moved)
        side[key] = keeper
        renamed[key_name(key)] = new_id
    return renamed


def _separate_paths(entries: dict[str, Entry]) -> None:
    """Two different keys must not land on one path: path-keyed files keep their path
    (it is their identity), then the smallest key; the others get a hash-tagged name."""
    by_path: dict[str, list[str]] = {}
    for key, entry in entries.items():
        by_path.setdefault(entry.path, []).append(key)
    for path, keys in sorted(by_path.items()):
        if len(keys) < 2:
            continue
        keys.sort(key=lambda k: (MergeKey(k).is_id, k))
        taken = set(entries[k].path for k in entries)
        for key in keys[1:]:
            entry = entries[key]
            folder, _, name = path.rpartition("/")
            stem, _, suffix = name.rpartition(".")
            candidate = f"{stem}.{entry.oid[:8]}.{suffix}" if stem else f"{name}.{entry.oid[:8]}"
            moved_path = f"{folder}/{candidate}" if folder else candidate
            while moved_path in taken:
                moved_path = moved_path + "_"
            taken.add(moved_path)
            entries[key] = entry.with_data(entry.data, path=moved_path)


# --- access counters ---------------------------------------------------------------------------


def merge_counters(a: bytes, b: bytes) -> bytes:
    """Per-machine counter files: counts only grow on their own machine, so the larger count
    and the later time are the newest; taking them never counts an access twice."""
    first, second = _load_counters(a), _load_counters(b)
    if first is None or second is None:
        if first is None and second is None:
            return max(a, b)
        return b if first is None else a
    notes: dict[str, dict[str, object]] = {}
    for source in (first, second):
        for note_id, value in source.get("notes", {}).items():
            if not isinstance(value, dict):
                continue
            current = notes.setdefault(note_id, {"count": 0, "last": None})
            count = value.get("count")
            if isinstance(count, int) and count > int(current["count"] or 0):  # type: ignore[arg-type]
                current["count"] = count
            current["last"] = _later(current.get("last"), value.get("last"))  # type: ignore[arg-type]
    merged: dict[str, object] = {}
    for key in sorted(set(first) | set(second)):
        values = [side[key] for side in (first, second) if key in side]
        merged[key] = max(values, key=lambda v: json.dumps(v, sort_keys=True))
    merged["notes"] = notes
    return dump_counters(merged)


def _later(a: str | None, b: str | None) -> str | None:
    if not a:
        return b if isinstance(b, str) else None
    if not b or not isinstance(b, str):
        return a
    first, second = instant(a), instant(b)
    return a if (first or _NEVER, a) >= (second or _NEVER, b) else b


def _load_counters(data: bytes) -> dict[str, object] | None:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("notes", {}), dict):
        return None
    return value


def dump_counters(value: Mapping[str, object]) -> bytes:
    return (json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
