"""What a store's git history tells its merges, and that knowledge kept between runs.

A merge learns two things from the history (memctl.exchange.snapshot): every version (blob
id) each note ever had, and when git first recorded each version of each path. Reading them
means a diff of every commit, and git's diff of a commit costs as much as the folders it
touched hold: an agent's store, one commit per note in one folder, costs N × N for N commits
(10,000 commits: ~6 s for every merging `sync` and every `export`; bench/bench_history.py).

Commits never change, and what each one adds to a `History` does not depend on the others
(versions and paths are unions, a first time a minimum, a newest path a maximum by commit
time). So the result of one pass is kept in `.memctl/history.json` with the commits it
covers (`tips`), and the next pass reads only the commits those tips do not reach, when every
tip is still reachable from what is asked: a rewritten or reset history, or a kept file that
does not read, is read whole again. tests/test_history_kept.py holds a kept pass equal to a
pass over everything, on random histories with branches and merges.

The file is derived and local like the index: delete it any time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from memctl.disk.atomic import atomic_write_text

FORMAT = 1
FILE = "history.json"


@dataclass
class History:
    seen: dict[str, set[str]] = field(default_factory=dict)  # key -> blob ids
    # (path, blob id) -> the earliest commit time (epoch seconds) that had it
    first_time: dict[tuple[str, str], int] = field(default_factory=dict)
    # key -> its path in the newest commit (by commit time) that touched it, and that time
    last_path: dict[str, str] = field(default_factory=dict)
    last_time: dict[str, int] = field(default_factory=dict)
    paths: dict[str, set[str]] = field(default_factory=dict)  # key -> every path it had

    def record(self, when: int, key: str | None, path: str, old: str | None,
               new: str | None) -> None:
        """One line of a commit's diff: `path` went from blob `old` to `new` (None: absent)
        at commit time `when`; `key` is the merge key the path stands for, if any. Lines
        come newest commit first, so a tie on time keeps the path met first."""
        if key is not None:
            seen = self.seen.setdefault(key, set())
            seen.update(oid for oid in (old, new) if oid is not None)
            self.paths.setdefault(key, set()).add(path)
            if when > self.last_time.get(key, when - 1):
                self.last_time[key] = when
                self.last_path[key] = path
        if new is not None:
            slot = (path, new)
            if when < self.first_time.get(slot, when + 1):
                self.first_time[slot] = when

    def absorb(self, newer: History) -> None:
        """Add what a pass over other commits found: commits these tips did not reach (a
        tie on time goes to them: they are not ancestors of these)."""
        for key, oids in newer.seen.items():
            self.seen.setdefault(key, set()).update(oids)
        for key, found in newer.paths.items():
            self.paths.setdefault(key, set()).update(found)
        for slot, when in newer.first_time.items():
            if when < self.first_time.get(slot, when + 1):
                self.first_time[slot] = when
        for key, when in newer.last_time.items():
            if when >= self.last_time.get(key, when):
                self.last_time[key] = when
                self.last_path[key] = newer.last_path[key]


def load_kept(path: Path) -> tuple[list[str], History] | None:
    """The tips and the `History` kept at `path`; None when there is none or it does not
    read as one (it is then made again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        return _decoded(data)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def keep(path: Path, tips: list[str], history: History) -> None:
    """Keep `history`, the pass over every commit `tips` reach, at `path`. A file that cannot
    be written is left as it was: the next pass reads more commits, nothing else."""
    data = {
        "format": FORMAT,
        "tips": tips,
        "seen": {key: sorted(oids) for key, oids in history.seen.items()},
        "paths": {key: sorted(found) for key, found in history.paths.items()},
        "first_time": [[slot[0], slot[1], when] for slot, when in history.first_time.items()],
        "last": {key: [history.last_time[key], found] for key, found in history.last_path.items()},
    }
    try:
        atomic_write_text(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                          durable=False)
    except OSError:
        pass


def _decoded(data: object) -> tuple[list[str], History]:
    """The kept file's parts, every type checked (a ValueError or TypeError otherwise)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a kept history")
    tips = _strings(data["tips"])
    history = History()
    for key, oids in _mapping(data["seen"]).items():
        history.seen[key] = set(_strings(oids))
    for key, found in _mapping(data["paths"]).items():
        history.paths[key] = set(_strings(found))
    for item in _list(data["first_time"]):
        path, oid, when = _list(item)
        history.first_time[(_string(path), _string(oid))] = _integer(when)
    for key, item in _mapping(data["last"]).items():
        when, found = _list(item)
        history.last_time[key] = _integer(when)
        history.last_path[key] = _string(found)
    if not tips:
        raise ValueError("no tips")
    return tips, history


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _mapping(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _strings(value: object) -> list[str]:
    return [_string(item) for item in _list(value)]


def _integer(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value
