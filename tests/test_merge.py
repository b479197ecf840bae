"""The merge core: who wins, what is kept, and that every machine reaches the same answer."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memctl.core.merge import (
    COUNTERS,
    TOMBSTONE,
    Entry,
    collision_id,
    conflict_path,
    merge_counters,
    merge_key,
    merge_snapshots,
    newer,
    one_side,
    paths_from_base,
    seen_from_base,
)

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def iso(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def note(note_id: str, body: str, updated: str | float, *, created: str | float = 0,
         stamped: bool = True, path: str | None = None) -> Entry:
    updated_text = iso(updated) if not isinstance(updated, str) else updated
    created_text = iso(created) if not isinstance(created, str) else created
    text = (f"---\nid: {note_id}\ntype: fact\ncreated: {created_text}\nupdated: {updated_text}\n"
            f"checksum: {'x' if stamped else 'y'}\n---\n{body}\n")
    return Entry(key=f"id:{note_id}", path=path or f"p/notes/fact/n-{note_id}.md",
                 data=text.encode(), updated=updated_text, created=created_text, stamped=stamped)


def tomb(note_id: str, deleted: float) -> Entry:
    text = f"---\nid: {note_id}\ndeleted: {iso(deleted)}\n---\ngone\n"
    return Entry(key=f"id:{note_id}", path=f".tombstones/{note_id}.md", data=text.encode(),
                 kind=TOMBSTONE, updated=iso(deleted))


def both_ways(a: Entry | None, b: Entry | None, **kw):
    forward = merge_key(a, b, kw.get("seen_a", frozenset()), kw.get("seen_b", frozenset()))
    backward = merge_key(b, a, kw.get("seen_b", frozenset()), kw.get("seen_a", frozenset()))
    assert forward.result == backward.result, "both machines must reach the same answer"
    assert forward.copy == backward.copy
    return forward


# --- every newest-wins case ------------------------------------------------------------------

def test_newer_remote_wins_and_older_local_is_kept_as_conflict_copy():
    local = note("a1", "local text", 10)
    remote = note("a1", "remote text", 20)
    outcome = merge_key(local, remote)
    assert outcome.result == remote and outcome.taken == "theirs"
    assert outcome.copy is not None and outcome.copy.data == local.data
    assert outcome.copy.path.startswith(".conflicts/p/notes/fact/n-a1.")


def test_newer_local_wins():
    local = note("a1", "local text", 30)
    remote = note("a1", "remote text", 20)
    outcome = both_ways(local, remote)
    assert outcome.result == local


def test_times_compare_as_instants_not_strings():
    # 10:00 in +08:00 is 02:00 UTC: older than 03:00Z although it sorts later as text.
    shanghai = note("a1", "shanghai", "2026-11-30T10:00:00+08:00")
    utc = note("a1", "utc", "2026-11-30T03:00:00Z")
    assert both_ways(shanghai, utc).result == utc


def test_hand_edit_beats_the_stamped_version_it_edited():
    stamped = note("a1", "as memctl wrote it", 10)
    hand = note("a1", "edited by hand", 10, stamped=False)
    assert both_ways(stamped, hand).result == hand


def test_equal_stamps_resolve_the_same_everywhere_and_keep_the_loser():
    one = note("a1", "version one", 10)
    two = note("a1", "version two", 10)
    outcome = both_ways(one, two)
    assert outcome.result in (one, two)
    assert outcome.copy is not None


def test_tombstone_beats_an_older_version_without_resurrection():
    old = note("a1", "old", 10)
    deletion = tomb("a1", 20)
    assert both_ways(old, deletion).result == deletion


def test_edit_after_deletion_beats_the_tombstone():
    deletion = tomb("a1", 20)
    later = note("a1", "written after the delete", 30)
    outcome = both_ways(deletion, later)
    assert outcome.result == later and outcome.copy is None


def test_only_one_side_changed_since_base_needs_no_conflict_copy():
    base = note("a1", "base", 10)
    changed = note("a1", "changed", 5)  # even an older stamp: the other side did not move
    outcome = merge_key(base, changed, frozenset({base.oid}), frozenset({base.oid}))
    assert outcome.result == changed and outcome.copy is None


def test_a_move_on_one_side_and_an_edit_on_the_other_are_both_kept():
    """docs/sync.md: only one side changed the path, only the other the content: the merge
    took the edit whole, its old path too, and the rename was undone without a word."""
    base = note("a1", "base", 10)
    moved = note("a1", "base", 10, path="p/notes/fact/shorter.md")
    edited = note("a1", "edited", 20)
    seen, paths = seen_from_base({base.key: base}), paths_from_base({base.key: base})
    for ours, theirs in ((moved, edited), (edited, moved)):
        result = merge_snapshots({ours.key: ours}, {theirs.key: theirs}, seen, seen, None,
                                 paths, paths)
        assert result.entries == {base.key: edited.with_data(edited.data, path=moved.path)}
        assert result.conflicts == []


def test_deleting_an_unchanged_note_wins_but_an_edit_beats_a_plain_delete():
    base = note("a1", "base", 10)
    seen = frozenset({base.oid})
    assert merge_key(None, base, seen, seen).result is None
    edited = note("a1", "edited", 20)
    assert merge_key(None, edited, seen, seen).result == edited


def test_a_version_differing_only_in_its_stamp_leaves_no_copy():
    a = note("a1", "same body", 10)
    b = note("a1", "same body", 20)
    outcome = both_ways(a, b)
    assert outcome.result == b and outcome.copy is None


def test_counters_merge_by_max_per_machine_without_double_counting():
    a = json.dumps({"machine": "m1", "notes": {"x": {"count": 3, "last": iso(5)},
                                               "y": {"count": 1, "last": iso(1)}}}).encode()
    b = json.dumps({"machine": "m1", "notes": {"x": {"count": 2, "last": iso(9)}}}).encode()
    ea = Entry(key="path:.counters/m1.json", path=".counters/m1.json", data=a, kind=COUNTERS)
    eb = Entry(key="path:.counters/m1.json", path=".counters/m1.json", data=b, kind=COUNTERS)
    merged = json.loads(both_ways(ea, eb).result.data)
    assert merged["notes"]["x"] == {"count": 3, "last": iso(9)}
    assert merged["notes"]["y"]["count"] == 1
    assert merge_counters(a, merge_counters(a, b)) == merge_counters(a, b)


def test_id_collision_keeps_both_notes_with_a_deterministic_new_id():
    first = note("01jdz4k2m8x7b3qv", "first note", 10, created=1)
    second = note("01jdz4k2m8x7b3qv", "another note entirely", 12, created=2)
    forward = merge_snapshots({first.key: first}, {second.key: second})
    backward = merge_snapshots({second.key: second}, {first.key: first})
    assert forward.entries == backward.entries
    assert forward.entries[first.key] == first
    new_id = collision_id("01jdz4k2m8x7b3qv", second.created)
    moved = forward.entries[f"id:{new_id}"]
    assert f"id: {new_id}" in moved.data.decode() and b"another note entirely" in moved.data
    assert moved.path.endswith(f"-{new_id}.md")
    assert new_id[:10] == "01jdz4k2m8" and len(new_id) == 16


def test_one_id_twice_in_one_side_gives_the_later_created_note_the_collision_id():
    """Rule 6 inside one side's tree (a plain git push reusing an id beside the note that has
    it): the earliest-created keeps the id, each later one gets `collision_id`, whatever the
    order the files are met in; the same note meeting the same fate from the other side
    merges with it, so nothing is lost and nothing is doubled."""
    own = note("01jdz4k2m8x7b3qv", "our note", 10, created=1, path="demo/notes/fact/a.md")
    reused = note("01jdz4k2m8x7b3qv", "pushed over it", 5, created=3, path="other/notes/fact/b.md")
    third = note("01jdz4k2m8x7b3qv", "and again", 5, created=2, path="x/notes/fact/c.md")
    outcomes = []
    for order in itertools.permutations([own, reused, third]):
        entries, renames = one_side(order)
        outcomes.append((entries, sorted((a.path, b.key) for a, b in renames)))
    entries, renames = outcomes[0]
    assert all(outcome == outcomes[0] for outcome in outcomes)
    assert entries[own.key] == own
    assert renames == [("other/notes/fact/b.md", f"id:{collision_id(own.note_id, reused.created)}"),
                       ("x/notes/fact/c.md", f"id:{collision_id(own.note_id, third.created)}")]
    assert sorted(e.data.split(b"---\n")[-1] for e in entries.values()) == [
        b"and again\n", b"our note\n", b"pushed over it\n"]
    merged = merge_snapshots({own.key: own}, entries)
    assert merged.entries == entries and not merged.conflicts
    copy = note("01jdz4k2m8x7b3qv", "a hand copy", 10, created=1, path="demo/notes/fact/z.md")
    kept, moved = one_side([own, copy])
    assert not moved and kept[own.key] == own and kept["path:demo/notes/fact/z.md"].data == copy.data


def test_one_id_three_times_in_one_side_loses_nothing_whatever_the_paths():
    """The original, a note reusing its id (later `created`) and a hand copy of that one
    (same later `created`, edited): the keeper's path sorting last let the hand copy take
    the id and the merge then drop a version (tests/test_trust_boundary.py pushes it)."""
    own = note("01jdz4k2m8x7b3qv", "our note", 10, created=1, path="z/notes/fact/a.md")
    reused = note("01jdz4k2m8x7b3qv", "pushed over it", 5, created=3, path="b/notes/fact/b.md")
    copy = note("01jdz4k2m8x7b3qv", "hand copy, edited", 6, created=3, path="c/notes/fact/c.md")
    bodies = [b"hand copy, edited\n", b"our note\n", b"pushed over it\n"]
    for order in itertools.permutations([own, reused, copy]):
        entries, _ = one_side(order)
        assert entries[own.key] == own
        assert sorted(e.data.split(b"---\n")[-1] for e in entries.values()) == bodies
        merged = merge_snapshots({own.key: own}, entries)
        assert merged.entries[own.key] == own
        assert sorted(e.data.split(b"---\n")[-1] for e in merged.entries.values()) == bodies


def test_conflict_copy_names_are_stable_and_stay_under_conflicts():
    assert conflict_path("p/MEMORY.md", "abcdef0123456789") == ".conflicts/p/MEMORY.abcdef012345.md"
    assert conflict_path("memctl.toml", "abcdef0123456789") == ".conflicts/memctl.abcdef012345.toml"


def test_a_resolved_conflict_copy_is_not_brought_back():
    copy_path = ".conflicts/p/x.123456789012.md"
    copy = Entry(key=f"path:{copy_path}", path=copy_path, data=b"old\n", kind="conflict")
    result = merge_snapshots({}, {copy.key: copy}, {copy.key: frozenset({copy.oid})}, {})
    assert copy.key not in result.entries



def test_a_conflict_copy_edited_on_both_sides_keeps_both_edits():
    """Both machines hand-edit the same conflict copy (merging text into it before `conflicts
    keep`): the newer edit stays at the copy's path, the other is kept as one more copy of
    the same note beside it, never dropped and never a copy of a copy."""
    copy_path = ".conflicts/p/notes/fact/n-a1.123456789012.md"
    base = Entry(key=f"path:{copy_path}", path=copy_path, data=b"copy\n", kind="conflict",
                 updated=iso(0))
    mine = Entry(key=base.key, path=copy_path, data=b"copy\nedit a\n", kind="conflict",
                 updated=iso(10))
    theirs = Entry(key=base.key, path=copy_path, data=b"copy\nedit b\n", kind="conflict",
                   updated=iso(20))
    seen = {base.key: frozenset({base.oid})}
    for ours, other in ((mine, theirs), (theirs, mine)):
        result = merge_snapshots({ours.key: ours}, {other.key: other}, seen, seen)
        assert result.entries[base.key] == theirs, "the newer edit keeps the copy's path"
        [kept] = result.conflicts
        assert kept.data == mine.data
        assert kept.path == conflict_path("p/notes/fact/n-a1.md", mine.oid)


# --- properties ---------------------------------------------------------------------------------

IDS = ["a", "b", "c"]


@st.composite
def versions(draw, note_id: str, created_edited: bool = False) -> Entry | None:
    kind = draw(st.sampled_from(["none", "note", "note", "hand", "tomb"]))
    updated = draw(st.integers(0, 6))
    if kind == "none":
        return None
    if kind == "tomb":
        return tomb(note_id, updated)
    body = draw(st.sampled_from(["alpha", "beta", "gamma", "delta"]))
    # `created` corrected by hand or by `memctl edit` (a note's one id, another time)
    created = draw(st.sampled_from([0, -86400, 3600])) if created_edited else 0
    return note(note_id, body, updated, created=created, stamped=kind != "hand")


@st.composite
def snapshots(draw, created_edited: bool = False) -> dict[str, Entry]:
    out = {}
    for note_id in IDS:
        entry = draw(versions(note_id, created_edited))
        if entry is not None:
            out[entry.key] = entry
    return out


def live(entries: dict[str, Entry]) -> dict[str, Entry]:
    return {k: v for k, v in entries.items() if v.kind != "conflict"}


def content_of(entry: Entry) -> bytes:
    from memctl.core.merge import _without_stamp

    return _without_stamp(entry.data)


@settings(max_examples=300, deadline=None)
@given(snapshots(), snapshots())
def test_merge_is_commutative(a, b):
    assert merge_snapshots(a, b).entries == merge_snapshots(b, a).entries


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_merge_is_idempotent(a):
    assert merge_snapshots(a, a).entries == a


@settings(max_examples=300, deadline=None)
@given(snapshots(), snapshots(), snapshots())
def test_winners_are_associative_and_nothing_is_lost(a, b, c):
    left = merge_snapshots(merge_snapshots(a, b).entries, c).entries
    right = merge_snapshots(a, merge_snapshots(b, c).entries).entries
    assert live(left) == live(right)
    for merged in (left, right):
        kept = {content_of(e) for e in merged.values()}
        for key in IDS:
            inputs = [s[f"id:{key}"] for s in (a, b, c) if f"id:{key}" in s]
            if not inputs:
                continue
            newest = max(inputs, key=Entry.order)
            # never loses the newest version, never resurrects what a newer tombstone deleted
            assert merged[f"id:{key}"] == newest
            for version in inputs:
                if version.kind == "note":
                    assert content_of(version) in kept, "a losing version must be kept"


@settings(max_examples=200, deadline=None)
@given(snapshots(), snapshots(), snapshots())
def test_three_way_merge_takes_the_only_change(base, a, b):
    seen = seen_from_base(base)
    result = merge_snapshots(a, b, seen, seen).entries
    for key in set(a) | set(b) | set(base):
        old, left, right = base.get(key), a.get(key), b.get(key)
        if left == old and right != old:
            assert result.get(key) == right
        if right == old and left != old:
            assert result.get(key) == left


@settings(max_examples=300, deadline=None)
@given(snapshots(created_edited=True), snapshots(created_edited=True),
       snapshots(created_edited=True))
def test_a_note_whose_created_was_edited_stays_one_note(base, a, b):
    """Both sides had the base's version of each of its ids: whatever `created` each side
    gives a note since (an edit of the note, never a second note with its id), the merge
    takes the only change, renames nothing, and keeps every losing text as a conflict copy."""
    seen = seen_from_base(base)
    result = merge_snapshots(a, b, seen, seen)
    assert not any(f"id:{old}" in base for old in result.renamed), result.renamed
    kept = {content_of(entry) for entry in result.entries.values()}
    for key in set(a) | set(b) | set(base):
        old, left, right = base.get(key), a.get(key), b.get(key)
        if left == old and right != old:
            assert result.entries.get(key) == right
        if right == old and left != old:
            assert result.entries.get(key) == left
        if key in base:
            for version in (left, right):
                if version is not None and version.kind == "note" and version != old:
                    assert content_of(version) in kept, "an edit must be kept"


def test_created_corrected_on_one_side_is_an_edit_not_a_second_note():
    """One side corrects when a decision was made (`created`); the other changed nothing, or
    edited the body: one note either way, never the old version back under a new id."""
    base = note("01jdz4k2m8x7b3qv", "We chose PostgreSQL 16", 10, created=10)
    corrected = note("01jdz4k2m8x7b3qv", "We chose PostgreSQL 16", 20, created=-86400)
    edited = note("01jdz4k2m8x7b3qv", "We chose PostgreSQL 16, with pgbouncer", 30,
                  created=10)
    seen = seen_from_base({base.key: base})
    for ours, theirs, winner in ((base, corrected, corrected), (corrected, base, corrected),
                                 (edited, corrected, edited), (corrected, edited, edited)):
        result = merge_snapshots({ours.key: ours}, {theirs.key: theirs}, seen, seen)
        assert result.renamed == {}
        assert result.entries[base.key] == winner
        notes = [e for e in result.entries.values() if e.kind == "note"]
        assert len(notes) == 1
        if winner is edited:  # both changed it: the other edit is kept as a conflict copy
            assert [c.data for c in result.conflicts] == [corrected.data]
    # An export's history (an import) relates them the same way: one side has seen the
    # other's version.
    result = merge_snapshots({base.key: base}, {corrected.key: corrected},
                             {base.key: frozenset({base.oid})},
                             {base.key: frozenset({base.oid, corrected.oid})})
    assert result.renamed == {} and result.entries[base.key] == corrected
    # Neither has seen the other's: two notes that happen to share an id (rule 6).
    assert merge_snapshots({base.key: base}, {corrected.key: corrected}).renamed


def test_an_edit_of_a_note_renamed_by_rule_6_goes_to_its_new_id_not_over_the_keeper():
    """Rule 6 split A's note (kept the id) from B's (renamed); B, not synced since, edits its
    note under the old id. The base holds B's old version under that id, yet A's note is no
    version of it: B's edit goes to the new id, A's note keeps the id and is no conflict
    copy (as before history was looked at for rule 6; B's old version may be kept as
    a copy beside its edit, as it was then)."""
    kept = note("x", "A's note", 0, created=0)
    b_note = note("x", "B's note", 100, created=100)
    split = merge_snapshots({kept.key: kept}, {b_note.key: b_note})  # A's sync
    new_id = collision_id("x", b_note.created)
    assert set(split.entries) == {kept.key, f"id:{new_id}"}
    edited = note("x", "B's note, edited", 200, created=100)
    seen = seen_from_base({b_note.key: b_note})
    for result in (merge_snapshots({edited.key: edited}, split.entries, seen, seen),
                   merge_snapshots(split.entries, {edited.key: edited}, seen, seen)):
        assert result.entries[kept.key] == kept
        assert b"B's note, edited" in result.entries[f"id:{new_id}"].data
        assert not any(b"A's note" in copy.data for copy in result.conflicts)


BASE = note("a", "base", 0)
MOVES = ["p/notes/fact/renamed.md", "q/notes/fact/n-a.md", "p/archive/fact/n-a.md"]


@st.composite
def changes(draw) -> tuple[Entry, bool, bool]:
    """One side's version of BASE: its content edited or not, its file moved or not."""
    edited = draw(st.booleans())
    moved = draw(st.booleans())
    path = draw(st.sampled_from(MOVES)) if moved else BASE.path
    if not edited:
        return BASE.with_data(BASE.data, path=path), False, moved
    body = draw(st.sampled_from(["left", "right", "both"]))
    version = note("a", body, draw(st.integers(0, 6)), stamped=draw(st.booleans()), path=path)
    return version, version.oid != BASE.oid, moved


@settings(max_examples=300, deadline=None)
@given(changes(), changes())
def test_a_path_merges_three_way_and_no_content_is_lost(left, right):
    """docs/sync.md ("How a merge decides"): the path is merged against the base apart from
    the content. One live file per id; at the moved path when only one side moved it (unless
    the move came with an edit that lost); the newest content; every losing content kept."""
    (a, a_edited, a_moved), (b, b_edited, b_moved) = left, right
    seen, paths = seen_from_base({BASE.key: BASE}), paths_from_base({BASE.key: BASE})
    result = merge_snapshots({a.key: a}, {b.key: b}, seen, seen, None, paths, paths)
    swapped = merge_snapshots({b.key: b}, {a.key: a}, seen, seen, None, paths, paths)
    live_files = [e for e in result.entries.values() if e.kind != "conflict"]
    assert [e.key for e in live_files] == [BASE.key], "exactly one live file per id"
    assert len({e.path for e in result.entries.values()}) == len(result.entries)
    kept = result.entries[BASE.key]
    if a_edited and b_edited:
        winner = newer(a, b)
    else:
        winner = a if a_edited else b
    assert kept.data == winner.data, "the newest content (the only change, if one)"
    loser = b if winner is a else a
    copies = {copy.data for copy in result.conflicts}
    if a_edited and b_edited and content_of(a) != content_of(b):
        assert copies == {loser.data}, "the losing content is a conflict copy"
    else:
        assert copies == set()
    if a_moved != b_moved:
        mover, other_edited = (a, b_edited) if a_moved else (b, a_edited)
        mover_edited = a_edited if a_moved else b_edited
        if not mover_edited or not other_edited or mover.oid == winner.oid:
            assert kept.path == mover.path, "a move made on one side only is kept"
        else:
            assert kept.path == BASE.path, "a move goes with its edit, which lost"
    elif not a_moved:
        assert kept.path == BASE.path
    elif a.oid != b.oid:
        assert kept.path == winner.path, "both moved: the winner's path"
    else:
        assert kept.path in (a.path, b.path)
    if a.oid != b.oid or a.path == b.path:
        assert swapped.entries == result.entries, "every machine reaches the same answer"


# --- a state machine over simulated machines ------------------------------------------------


class Machine:
    def __init__(self, name: str, skew: int) -> None:
        self.name = name
        self.skew = skew
        self.entries: dict[str, Entry] = {}
        self.history: dict[str, set[str]] = {}
        self.base: dict[str, Entry] = {}
        self.tombs: dict[str, tuple] = {}  # key -> the newest tombstone order this machine held

    def record(self) -> None:
        for key, entry in self.entries.items():
            self.history.setdefault(key, set()).add(entry.oid)
            if entry.is_tombstone:
                self.tombs[key] = max(self.tombs.get(key, entry.order()), entry.order())

    def seen(self) -> dict[str, frozenset[str]]:
        return {key: frozenset(oids) for key, oids in self.history.items()}


class SyncModel(RuleBasedStateMachine):
    """Random adds, edits, hand edits and deletes on three machines with skewed clocks,
    exchanged by zip-style imports (history decides ancestry) and git-style syncs through one
    remote (the merge base decides): they converge, resurrect nothing, lose nothing."""

    @initialize(skews=st.lists(st.integers(-5, 5), min_size=3, max_size=3))
    def setup(self, skews):
        self.machines = [Machine(f"m{i}", skew) for i, skew in enumerate(skews)]
        self.remote: dict[str, Entry] = {}
        self.tick = 100
        self.counter = itertools.count()
        self.created: dict[str, list[Entry]] = {}
        self.children: set[str] = set()  # oids of versions something was derived from

    def _now(self, machine: Machine) -> int:
        self.tick += 1
        return self.tick + machine.skew

    def _new(self, machine: Machine, key: str, entry: Entry) -> None:
        old = machine.entries.get(key)
        if old is not None:
            self.children.add(old.oid)
        machine.entries[key] = entry
        machine.record()
        self.created.setdefault(key, []).append(entry)

    @rule(m=st.integers(0, 2))
    def add(self, m):
        machine = self.machines[m]
        note_id = f"n{next(self.counter)}"
        moment = self._now(machine)
        self._new(machine, f"id:{note_id}", note(note_id, f"new {note_id}", moment, created=moment))

    def _live_keys(self, machine: Machine) -> list[str]:
        return sorted(k for k, e in machine.entries.items() if e.kind == "note")

    @rule(m=st.integers(0, 2), pick=st.integers(0, 50), hand=st.booleans())
    def edit(self, m, pick, hand):
        machine = self.machines[m]
        keys = self._live_keys(machine)
        if not keys:
            return
        key = keys[pick % len(keys)]
        current = machine.entries[key]
        body = f"edit {next(self.counter)} on {machine.name}"
        if hand and current.stamped:
            entry = note(key[3:], body, current.updated, created=current.created, stamped=False)
        else:
            # memctl never stamps a change older than the version it changes
            moment = max(self._now(machine), (datetime.fromisoformat(current.updated[:-1])
                                              .replace(tzinfo=UTC) - T0).total_seconds() + 1)
            entry = note(key[3:], body, moment, created=current.created)
        self._new(machine, key, entry)

    @rule(m=st.integers(0, 2), pick=st.integers(0, 50))
    def delete(self, m, pick):
        machine = self.machines[m]
        keys = self._live_keys(machine)
        if not keys:
            return
        key = keys[pick % len(keys)]
        current = machine.entries[key]
        moment = max(self._now(machine), (datetime.fromisoformat(current.updated[:-1])
                                          .replace(tzinfo=UTC) - T0).total_seconds() + 1)
        self._new(machine, key, tomb(key[3:], moment))

    def _import(self, dst: Machine, src: Machine) -> None:
        result = merge_snapshots(dst.entries, src.entries, dst.seen(), src.seen())
        dst.entries = result.entries
        dst.record()

    def _sync(self, machine: Machine) -> None:
        seen = seen_from_base(machine.base)
        result = merge_snapshots(machine.entries, self.remote, seen, seen)
        machine.entries = dict(result.entries)
        machine.base = dict(result.entries)
        self.remote = dict(result.entries)
        machine.record()

    @rule(dst=st.integers(0, 2), src=st.integers(0, 2))
    @precondition(lambda self: True)
    def import_zip(self, dst, src):
        if dst != src:
            self._import(self.machines[dst], self.machines[src])

    @rule(m=st.integers(0, 2))
    def sync(self, m):
        self._sync(self.machines[m])

    @invariant()
    def nothing_older_than_its_tombstone_is_alive(self):
        for machine in getattr(self, "machines", []):
            for key, entry in machine.entries.items():
                if entry.kind == "note" and key in machine.tombs:
                    assert entry.order() > machine.tombs[key], f"{key} resurrected on {machine.name}"

    def teardown(self):
        if not hasattr(self, "machines"):
            return
        for _ in range(2):
            for machine in self.machines:
                self._sync(machine)
        first = self.machines[0].entries
        for machine in self.machines[1:]:
            assert machine.entries == first, "machines did not converge"
        for machine in self.machines:
            for other in self.machines:
                if other is not machine:
                    self._import(machine, other)
            assert machine.entries == first, "an import after convergence changed something"
        kept = {e.data for e in first.values()}
        for key, made in self.created.items():
            newest = max(made, key=Entry.order)
            assert first[key] == newest, f"{key}: the newest version did not win"
            for version in made:
                if version.kind == "note" and version.oid not in self.children and version != newest:
                    assert version.data in kept, f"{key}: a concurrent version was lost"


SyncModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_sync_state_machine = SyncModel.TestCase


@pytest.mark.slow
def test_sync_state_machine_long():
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(SyncModel, settings=settings(
        max_examples=1000, stateful_step_count=60, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))


def test_merge_keys_are_one_typed_value() -> None:
    from memctl.core.merge import MergeKey, key_name

    note, other = MergeKey.for_id("01abc"), MergeKey.for_path("memctl.toml")
    assert (note, other) == ("id:01abc", "path:memctl.toml")  # still strings for dicts and JSON
    assert note.is_id and not other.is_id
    assert (note.name, other.name) == ("01abc", "memctl.toml")
    assert key_name("path:a/id:b.md") == "a/id:b.md" and key_name("id:x") == "x"


def test_two_files_claiming_one_id_are_both_kept_the_second_by_path() -> None:
    from memctl.core.merge import Entry, add_entry

    entries: dict[str, Entry] = {}
    first = add_entry(entries, Entry(key="id:01abc", path="p/notes/fact/a-01abc.md", data=b"one"))
    second = add_entry(entries, Entry(key="id:01abc", path="p/notes/fact/copy-01abc.md", data=b"two"))
    assert first.key == "id:01abc" and second.key == "path:p/notes/fact/copy-01abc.md"
    assert {e.data for e in entries.values()} == {b"one", b"two"}
