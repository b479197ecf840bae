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
does not read, is read whole again. A repository where a commit's id does not fix its
ancestors (shallow, replaced or grafted commits: deepened or replaced later, the same tips
reach more) keeps no pass (`history_is_fixed`).

A note's newest path is the one of the first commit a pass meets that touched it: a pass
shows each commit before its parents whatever their clocks (`--topo-order`), so it is the
path the note had last on that line of history (a removal's, for an export to carry it under
its project). A later pass reads commits that are never ancestors of the kept ones, so its
path wins. The two differ from one pass over everything only when the kept and the new
commits touched the note on lines that do not descend from each other.
tests/test_history_kept.py holds a kept pass equal to a pass over everything, on random
histories with branches and merges (and the newest path on histories without branches).

The file is derived and local like the index: delete it any time.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.disk.atomic import atomic_write_text
from memctl.disk.storefiles import READ_FLAGS, read_open

FORMAT = 1
FILE = "history.json"
MAX_KEPT_BYTES = 1 << 28  # 256 MB: a kept pass over 100,000 single-note commits is ~30 MB


@dataclass
class History:
    seen: dict[str, set[str]] = field(default_factory=dict)  # key -> blob ids
    # (path, blob id) -> the earliest commit time (epoch seconds) that had it
    first_time: dict[tuple[str, str], int] = field(default_factory=dict)
    last_path: dict[str, str] = field(default_factory=dict)  # key -> its newest path
    paths: dict[str, set[str]] = field(default_factory=dict)  # key -> every path it had

    def record(self, when: int, key: str | None, path: str, old: str | None,
               new: str | None) -> None:
        """One line of a commit's diff: `path` went from blob `old` to `new` (None: absent)
        at commit time `when`; `key` is the merge key the path stands for, if any. Lines
        come in git's order (a commit before its parents): the first path met is the newest."""
        if key is not None:
            seen = self.seen.setdefault(key, set())
            seen.update(oid for oid in (old, new) if oid is not None)
            self.paths.setdefault(key, set()).add(path)
            self.last_path.setdefault(key, path)
        if new is not None:
            slot = (path, new)
            if when < self.first_time.get(slot, when + 1):
                self.first_time[slot] = when

    def absorb(self, newer: History) -> None:
        """Add what a pass over other commits found: commits these tips did not reach, so
        never ancestors of these (their newest paths win)."""
        for key, oids in newer.seen.items():
            self.seen.setdefault(key, set()).update(oids)
        for key, found in newer.paths.items():
            self.paths.setdefault(key, set()).update(found)
        for slot, when in newer.first_time.items():
            if when < self.first_time.get(slot, when + 1):
                self.first_time[slot] = when
        self.last_path.update(newer.last_path)


def history_is_fixed(root: Path) -> bool:
    """Whether every commit id of the repository at `root` fixes the commits it reaches, as
    a kept pass assumes: its `.git` is a folder (read here, no git process), not shallow
    (`git fetch --unshallow` gives the same tips more ancestors), with no replaced or grafted
    commits (`git replace` gives them other parents) and no ref store this cannot read."""
    git_dir = root / ".git"
    if not git_dir.is_dir() or (git_dir / "reftable").exists():
        return False
    if any((git_dir / name).exists() for name in ("shallow", "info/grafts")):
        return False
    try:
        if any((git_dir / "refs" / "replace").iterdir()):
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        with open(git_dir / "packed-refs", "rb") as packed:
            return not any(b" refs/replace/" in line for line in packed)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def load_kept(path: Path) -> tuple[list[str], History] | None:
    """The tips and the `History` kept at `path`; None when there is none, or anything but a
    regular file of at most MAX_KEPT_BYTES that reads as one (it is then made again). Never
    through a link, never waiting on a pipe."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_KEPT_BYTES:
            return None
        data = json.loads(read_open(fd, info.st_size))
        return _decoded(data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    finally:
        os.close(fd)


def keep(path: Path, tips: list[str], history: History) -> None:
    """Keep `history`, the pass over every commit `tips` reach, at `path`. A file that cannot
    be written is left as it was: the next pass reads more commits, nothing else."""
    data = {
        "format": FORMAT,
        "tips": tips,
        "seen": {key: sorted(oids) for key, oids in history.seen.items()},
        "paths": {key: sorted(found) for key, found in history.paths.items()},
        "first_time": [[slot[0], slot[1], when] for slot, when in history.first_time.items()],
        "last_path": history.last_path,
    }
    try:
        atomic_write_text(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                          durable=False)
    except (OSError, MemctlError):  # a folder or a device at the path: the next pass reads all
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
    for key, found in _mapping(data["last_path"]).items():
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
