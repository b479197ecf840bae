"""The pure half of `memctl watch`: which file system events matter, and when a burst of them
has ended. No I/O and no clock of its own (the caller passes the time), so it is tested alone.

A `Coalescer` gathers the paths of a burst (a save is ~17 events, a checkout thousands) until
the events pause for a short quiet window, or an upper bound passes, then hands them out as one
`Batch` for one pass of `Index.refresh`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

# Quiet window and upper bound of a batch, in seconds. Editors finish a save within a few ms;
# a checkout writes thousands of files with gaps far under 50 ms.
QUIET = 0.05
MAX_DELAY = 1.0
# How long a batch may wait while `.git/index.lock` says git is mid-operation.
GIT_HOLD = 3.0
# watchdog holds back the first half of a move it cannot pair for 0.5 s, from when it read
# it; the margin covers its thread and ours running late on a loaded machine (0.1 s was seen
# to fall short: the note then appeared at its new path a pass before it left the old one).
PAIR_WAIT = 1.0


@dataclass
class Batch:
    """What one pass must reconcile. Paths are relative to the store, with `/`; a folder
    stands for everything under it (`Index.refresh` walks it)."""

    paths: set[str] = field(default_factory=set)
    full: bool = False  # everything: events may have been lost
    new_tops: set[str] = field(default_factory=set)  # project folders that appeared: watch them
    gone_tops: set[str] = field(default_factory=set)  # project folders that went: unwatch them
    events: int = 0

    def __bool__(self) -> bool:
        return bool(self.paths or self.full or self.new_tops or self.gone_tops)


class Coalescer:
    """Gathers changes into one batch until `quiet` seconds pass without an event, or
    `max_delay` seconds after the first. Pure logic: the caller passes the clock."""

    def __init__(self, quiet: float = QUIET, max_delay: float = MAX_DELAY,
                 hold_max: float = GIT_HOLD) -> None:
        self.quiet = quiet
        self.max_delay = max_delay
        self.hold_max = hold_max
        self._batch = Batch()
        self._first: float | None = None
        self._last = 0.0
        self._not_before = 0.0

    def _touch(self, now: float) -> None:
        if self._first is None:
            self._first = now
        self._last = now
        self._batch.events += 1

    def add_path(self, relpath: str, now: float, *, wait: float = 0.0) -> None:
        """A file or folder to look at. `wait`: apply no earlier than that many seconds from
        now (a move whose other half may still be on its way)."""
        self._batch.paths.add(relpath)
        self._touch(now)
        self._not_before = max(self._not_before, now + wait)

    def add_full(self, now: float, *, wait: float = 0.0) -> None:
        self._batch.full = True
        self._touch(now)
        self._not_before = max(self._not_before, now + wait)

    def add_top(self, name: str, *, gone: bool, now: float, wait: float = 0.0) -> None:
        (self._batch.gone_tops if gone else self._batch.new_tops).add(name)
        (self._batch.new_tops if gone else self._batch.gone_tops).discard(name)
        self.add_path(name, now, wait=wait)

    def noise(self, now: float) -> None:
        """An event that changes nothing yet says a burst goes on (an editor's debris files):
        it extends the quiet window of a pending batch, never starts one."""
        if self._first is not None:
            self._last = now

    def due_at(self) -> float | None:
        """When the pending batch should be applied (a clock value), or None if none is."""
        if self._first is None or not self._batch:
            return None
        return max(min(self._last + self.quiet, self._first + self.max_delay), self._not_before)

    def take(self, now: float, *, hold: bool = False) -> Batch | None:
        """The batch if it is due at `now`, else None. `hold` (git is mid-operation) keeps it
        back until `hold_max` after its first event, so a checkout lands in one pass."""
        due = self.due_at()
        if due is None or now < due:
            return None
        if hold and self._first is not None and now < self._first + self.hold_max:
            return None
        batch, self._batch, self._first, self._not_before = self._batch, Batch(), None, 0.0
        return batch


    def take_now(self, now: float) -> Batch | None:
        """The pending batch at once, quiet window or not: a reader waits on it (its cookie,
        memctl.disk.watchstate). While half of a move may still come, applying the paths
        named so far could show a note in two places; the batch then becomes a full pass,
        which sees both ends of every move as they are (holding it back instead kept the
        reader waiting until its own walk, ~0.2 s after any new folder)."""
        if self._first is None or not self._batch:
            return None
        batch = self._batch
        if now < self._not_before:
            batch.full = True
        self._batch, self._first, self._not_before = Batch(), None, 0.0
        return batch


def interpret(event_type: str, is_dir: bool, src: str | None, dest: str | None,
              is_memory: Callable[[str], bool], is_watched_top: Callable[[str], bool],
              coalescer: Coalescer, now: float, *, pair_wait: float = PAIR_WAIT) -> None:
    """Feed one event (paths relative to the store, `/`-separated, None when outside it or
    unknown) to the coalescer. Pure: decisions only, no I/O. `pair_wait`: how long the other
    half of a move may come after the first, 0 when every event comes in the order it
    happened (memctl.watch.observer)."""
    if event_type not in ("created", "modified", "closed", "deleted", "moved"):
        return  # opens and read-only closes are the indexer reading: never a change
    # With watchdog's observer, a move into one watched folder from another (a note moved to
    # another project) reaches us as two halves, the "from" half held back 0.5 s; wait for
    # it, so the note is seen moving (same id) in one pass instead of appearing twice, then
    # vanishing.
    wait = pair_wait if event_type == "moved" and not src else 0.0
    if is_dir and event_type == "created":
        # `mkdir x && mv note x/`: the move may land before x is watched; its "from" half
        # then comes alone, 0.5 s later (watchdog's observer).
        wait = pair_wait
    if not is_dir:
        memory = [p for p in (src, dest) if p and is_memory(p)]
        for path in memory:
            coalescer.add_path(path, now, wait=wait)
        if not memory:
            coalescer.noise(now)
        return
    for role, path in (("src", src), ("dest", dest)):
        if not path:
            continue
        gone = event_type == "deleted" or (event_type == "moved" and role == "src")
        if "/" not in path:
            if is_watched_top(path):
                coalescer.add_top(path, gone=gone, now=now, wait=wait)
        elif is_memory(path + "/x.md"):
            # Name the folder: a folder moved out of the tree sends no per-file events.
            coalescer.add_path(path, now, wait=wait)


def relative(root: str, path: str | bytes) -> str | None:
    """`path` relative to the store root with `/`, or None when it is the root or outside."""
    text = os.fsdecode(path)
    if not text.startswith(root):
        return None
    rest = text[len(root):]
    if not rest.startswith(os.sep):
        return None
    rest = rest.lstrip(os.sep)
    return rest.replace(os.sep, "/") if rest else None
