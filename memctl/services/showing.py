"""`show`: one note, or one episode, by id. Lean on purpose: an agent runs `memctl show` on
nearly every step, and it needs neither the write-time checks (similarity, the secret
scanner, templates) nor the episode rules of `memctl.services.notes` (10k notes: 160 →
≤ 120 ms, bench/bench_write.py; tests/test_layers.py pins what it loads)."""

from __future__ import annotations

from memctl.core.clock import now
from memctl.core.errors import MemctlError, NoteFormatError, UnknownIdError
from memctl.core.ids import id_argument
from memctl.disk.counters import get_counters
from memctl.disk.layout import EPISODE, classify
from memctl.index.db import heals_damaged_index, open_index
from memctl.store import Store

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from memctl.core.note import Note
    from memctl.index.db import Index
    from memctl.memory.episodes import Episode

__all__ = ["Shown", "show"]


class Shown:
    """A note with its access counters, or an episode, or a note file that does not parse
    (`broken`, with the fields of its last good version, `last_good`): shown as it is, with
    the problem."""

    def __init__(self, note: Note | None = None, episode: Episode | None = None,
                 access_count: int = 0, last_accessed: str | None = None,
                 broken: NoteFormatError | None = None,
                 last_good: dict[str, Any] | None = None,
                 corrected_by: list[str] | None = None) -> None:
        self.note = note
        self.corrected_by = corrected_by or []  # live corrections naming the note, as `get`'s
        self.episode = episode
        self.access_count = access_count
        self.last_accessed = last_accessed
        self.broken = broken
        self.last_good = last_good

    def to_dict(self) -> dict[str, Any]:
        if self.episode is not None:
            return self.episode.to_dict()
        if self.broken is not None:
            return {**(self.last_good or {}), "path": self.broken.path, "line": self.broken.line,
                    "problem": self.broken.problem,
                    "raw": self.broken.data.decode("utf-8", "replace")}
        assert self.note is not None
        data = self.note.to_dict()
        data.update({"access_count": self.access_count, "last_accessed": self.last_accessed,
                     "corrected_by": list(self.corrected_by)})
        return data


@heals_damaged_index
def show(store: Store, ref: str) -> Shown:
    """The note (or else the episode) with this id or unambiguous id prefix. A note file
    that does not parse is returned as it is, with its problem (docs/format.md).

    The index knows notes and episodes by id (a whole id whose file is unchanged costs one
    stat: memctl.index.db.find_entry), so an episode's file is read directly and an unknown
    id walks nothing more than `find_entry`'s freshness check: only an episode written by
    hand without an `id:` field, known by the end of its file name, is looked for among the
    index's episodes."""
    ref = id_argument(ref)
    # A corrected note stays active: `show`, like `get` and recall, says which corrections
    # name it, so the fact is never read without them (docs/lifecycle.md). Asked on the
    # index the lookup opened.
    corrected_by: list[str] = []

    def corrections(index: Index, found: dict[str, Any]) -> None:
        note_id, moment = str(found["id"]), now().timestamp()
        named = index.corrections_of([note_id], moment).get(note_id, [])
        if named:
            # The lookup made sure of the note's own file only: each correction named is
            # made sure of too (one stat; a file changed since is indexed again), and one
            # gone from its place sends the whole store through the index, so a correction
            # deleted or retired by hand is never named (tests/test_questions.py).
            if any(index.current_entry(correction, ("note",)) is None for correction in named):
                index.refresh()
            named = index.corrections_of([note_id], moment).get(note_id, [])
        corrected_by.extend(named)

    try:
        entry = store.find_entry(ref, then=corrections)
    except UnknownIdError as not_found:
        # Only when nothing has this id: an ambiguous prefix is said as it is, never taken
        # for the one episode whose file name starts with it (tests/test_episodes.py).
        episode = _episode_named(store, ref)
        if episode is None:
            raise not_found from None
        return Shown(episode=episode)
    path = str(entry["path"])
    kind = classify(path)
    if kind is not None and kind[0] == EPISODE:
        return Shown(episode=_read_episode(store, path))
    try:
        note = store.read_note(path)
    except NoteFormatError as broken:
        return Shown(broken=broken, last_good=entry)
    count, last = get_counters(store, [note.id]).get(note.id, (0, None))
    return Shown(note=note, access_count=count, last_accessed=last, corrected_by=corrected_by)


def _read_episode(store: Store, relpath: str) -> Episode:
    # Lazy: the episode rules (sections, templates, the secret scanner) only for an episode,
    # never for the notes `show` is run for nearly always (tests/test_layers.py).
    from memctl.memory.episodes import read_episode

    return read_episode(store, relpath)


def _episode_named(store: Store, ref: str) -> Episode | None:
    """The episode whose id, taken from the end of its file name (a hand-written episode
    without an `id:` field, which the index knows by another id), is `ref` or, when no id
    is, the one starting with it; None when there is none or more than one. The index was
    just brought up to date by the failed lookup."""
    wanted = ref.strip().lower()
    index = open_index(store, copy_when_refused=True)  # (on a full disk: the copy just walked)
    try:
        paths = [str(row["path"]) for row in index.list_notes(
            kinds=("episode",), include_stale=True, order="path")]
    finally:
        index.close()
    named = {path: path.rsplit("/", 1)[-1][:-len(".md")].rsplit("-", 1)[-1].lower()
             for path in paths}
    exact = [path for path, name in named.items() if name == wanted]
    chosen = exact or [path for path, name in named.items() if name.startswith(wanted)]
    episodes = []
    for path in chosen:
        try:
            episode = _read_episode(store, path)
        except MemctlError:
            continue  # a file that does not parse is no episode to show
        if episode.id == wanted or (not exact and episode.id.startswith(wanted)):
            episodes.append(episode)
    return episodes[0] if len({episode.id for episode in episodes}) == 1 else None
