"""A store seen by the merge: its files as merge entries, with times and git history.

Shared by export, import and sync. Two facts come from git rather than from the files:
- `seen`: every version (blob id) each note or file ever had here, so a merge can tell "they
  have not seen my change" from "they changed it after seeing mine" without a common base;
- the time of a file that carries no `updated` stamp (MEMORY.md, SCRATCHPAD.md, settings, a
  note without front matter): when git first recorded that content. File times are never
  trusted for what is committed (a checkout or an unzip resets them); only a change that is
  not committed yet is dated by its mtime, because that is the edit's own time.

A hand edit that is not committed yet is stamped (in memory: `updated` from its mtime, a fresh
`checksum`) before it meets another version, so it travels as an ordinary newer version.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memctl.core.clock import format_time, latest_now
from memctl.core.errors import MemctlError
from memctl.core.ids import valid_id
from memctl.core.merge import (
    TOMBSTONE,
    Entry,
    MergeKey,
    add_entry,
    git_oid,
    key_name,
)
from memctl.core.note import file_name_id, implied_id, note_from_parsed, stamp
from memctl.core.noteformat import parse_text, salvage_id
from memctl.core.textfile import decode_file
from memctl.core.vocab import MAX_FILE_BYTES
from memctl.disk.gitops import NotSha1Repository, run_git, run_git_binary
from memctl.disk.layout import state_path
from memctl.disk.settings import SETTINGS_FILE
from memctl.disk.templates import STORE_TEMPLATE_DIR
from memctl.exchange.bundle import (
    COUNTERS,
    MAX_NAME_BYTES,
    BundleFile,
    character_problem,
    entry_for,
    length_problem,
    path_kind,
    shown_name,
)
from memctl.exchange.history import FILE as KEPT_HISTORY
from memctl.exchange.history import History, history_is_fixed, keep, load_kept
from memctl.store import Store

HISTORY_LIMIT = 200  # blob ids per file carried in a bundle manifest
_NOTE_KINDS = ("note", "archived", "episode")


@dataclass
class Snapshot:
    files: dict[str, BundleFile]  # path -> content as it takes part in merges
    entries: dict[str, Entry]  # key -> entry
    disk_oid: dict[str, str]  # path -> blob id of the bytes on disk
    seen: dict[str, frozenset[str]]
    # key -> the paths its note had in this store's history: a move made here is kept by an
    # import whose bundle brings an edit (docs/sync.md)
    paths: dict[str, frozenset[str]] = field(default_factory=dict)
    normalized: list[str] = field(default_factory=list)  # hand edits stamped in memory
    # keys this store had and no longer has (removed without a tombstone) -> (path, blob ids):
    # a bundle carries them so the removal reaches the other machine
    removed: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


def history_key(path: str) -> str | None:
    """The merge key a historical path most likely had (the id is in memctl's file names)."""
    kind = path_kind(path)
    if kind is None:
        return None
    name = path.rsplit("/", 1)[-1]
    stem = name[:-3] if name.endswith(".md") else name
    if kind == TOMBSTONE:
        return MergeKey.for_id(stem.lower())
    if kind in _NOTE_KINDS:
        return MergeKey.for_id(implied_id(path))
    return MergeKey.for_path(path)


def left_out_keys(path: str, data: bytes) -> tuple[set[str], str | None]:
    """The merge keys a file left out of an exchange (it does not parse) may stand for, and
    the id of its note. A note is known by the id its `id:` line still gives (`salvage_id`:
    a typo elsewhere in the front matter), else by the id its file name carries; a note
    renamed by hand without its id, whose id line does not read either, is not known (None):
    the caller then withholds every note removal, since any of them could be this note
    (tests/test_broken_files.py). Other files are known by their path (their id is "")."""
    keys = {key for key in (history_key(path),) if key is not None}
    if path_kind(path) not in _NOTE_KINDS:
        return keys, ""
    found = salvage_id(data.decode("utf-8", "replace"))
    if not (found and valid_id(found)):
        found = file_name_id(path)
    if found:
        keys.add(MergeKey.for_id(found))
    return keys, found


def has_commits(root: Path, rev: str = "HEAD") -> bool:
    return commit_id(root, rev) is not None


def tree_of(root: Path, rev: str = "HEAD", *, strict: bool = True
            ) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) of every file in a commit.

    Read as bytes: a file name that is not UTF-8 (a Latin-1 `caf\\xe9.md` pushed with plain
    git) refuses the whole commit with a MemctlError naming it escaped. Decoding it with
    replacement characters would turn two such names into one path and lose a note in the
    merge (docs/sync.md, tests/test_sync.py). With `strict` False such a name is left out
    instead (an export's or an import's view of the last commit, as the walk leaves it out)."""
    # A commit named by its full hash never changes: its listing is kept for the process (a
    # sync asks for the same few commits eight times; 10k notes: ~50 ms each).
    remembered = _TREES.get((str(root), rev, strict)) if _FULL_HASH.fullmatch(rev) else None
    if remembered is not None:
        return dict(remembered)
    if not has_commits(root, rev):
        return {}
    out = run_git_binary(root, "ls-tree", "-r", "-z", "--full-tree", rev)
    tree: dict[str, tuple[str, str]] = {}
    # A control character or a backslash in a path (plain git takes both): each record is
    # `meta<TAB>path<NUL>`, so one search of the whole listing tells whether any path must
    # be looked at (10k notes: ~1 ms, where a look at every path took ~30 ms).
    suspect = _SUSPECT.search(out) is not None or out.count(b"\t") != out.count(b"\0")
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        try:
            path = raw_path.decode("utf-8")
        except UnicodeDecodeError:
            if not strict:
                continue  # (an export's or import's view: no command reads such a file)
            shown = raw_path.decode("utf-8", "backslashreplace")
            raise MemctlError(
                f"commit {rev[:12]} has a file name that is not UTF-8 text: {shown}; memctl "
                "refuses it and changed nothing: rename the file there (UTF-8 name) and "
                "run this again") from None
        hazard = character_problem(path) if suspect else None
        if hazard:
            # What no import takes and no other machine's checkout may hold (a name that
            # moves the cursor, a Windows path): refused as a name that is not UTF-8 is.
            if not strict:
                continue
            raise MemctlError(
                f"commit {rev[:12]} has {hazard}: {shown_name(path)}; memctl refuses it and "
                "changed nothing: rename the file there and run this again")
        # (A path this short has no name too long: most are, and are not split here.)
        too_long = length_problem(path) if len(raw_path) > MAX_NAME_BYTES else None
        if too_long:
            # No file system here can hold it: git's checkout would fail half-way, after the
            # sync began to move (tests/test_trust_boundary.py).
            if not strict:
                continue
            raise MemctlError(
                f"commit {rev[:12]} has {too_long}: {path[:80]}…; memctl refuses it and "
                "changed nothing: rename the file there and run this again")
        mode, kind, oid = meta.decode("ascii").split()
        if kind == "blob":
            tree[path] = (mode, oid)
    if _FULL_HASH.fullmatch(rev):
        if len(_TREES) >= 8:
            _TREES.clear()
        _TREES[(str(root), rev, strict)] = dict(tree)
    return tree


_FULL_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
SHA1_LENGTH = 40  # hex digits of a SHA-1 object id
# A control character other than the tab between a record's fields, or a backslash.
_SUSPECT = re.compile(rb"[\x01-\x08\x0a-\x1f\\]")
_TREES: dict[tuple[str, str, bool], dict[str, tuple[str, str]]] = {}


def scan_history(root: Path, revs: Iterable[str] = ("HEAD",), *,
                 keep_pass: bool = False) -> History:
    """Every blob each path had, and when it first appeared, in the commits `revs` reach.
    With `keep_pass` (a store's own history, never a folder being read from), the pass is
    kept in the store's `.memctl/` and the next one reads only newer commits
    (memctl.exchange.history)."""
    wanted = list(dict.fromkeys(oid for oid in (commit_id(root, rev) for rev in revs) if oid))
    if not wanted:
        return History()
    kept_at = _kept_history_path(root) if keep_pass else None
    kept = load_kept(kept_at) if kept_at is not None else None
    if kept is not None and _reaches_all(root, wanted, kept[0]):
        tips, history = kept
        if set(tips) != set(wanted):
            # Only the commits asked for that the kept tips do not reach: git listed one that
            # they reach, before the newer ones, when a clock had gone back (`git log
            # --topo-order c0 c10 ^c8`, c0 an ancestor of c8), and its paths were taken for
            # the newest (tests/test_history_kept.py).
            fresh = [oid for oid in wanted if not _reached_by(root, oid, tips)]
            if fresh:
                history.absorb(_read_log(root, [*fresh, *(f"^{tip}" for tip in tips)]))
    else:
        tips, history = [], _read_log(root, wanted)
    if kept_at is not None and set(tips) != set(wanted):
        keep(kept_at, wanted, history)
    return history


def commit_id(root: Path, rev: str) -> str | None:
    """The commit `rev` names, or None when it names none (no commit yet).

    Every reading of git's ids here starts with this, so a repository whose ids are not
    SHA-1 is refused here, before anything changes: a merge, an export and an import compare
    git's blob ids with the ones memctl computes (`git_oid`, SHA-1), and in a SHA-256
    repository none would match (docs/sync.md, "SHA-256 repositories")."""
    found = run_git(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    if found.returncode != 0:
        return None
    commit = found.stdout.strip() or None
    if commit is not None and len(commit) != SHA1_LENGTH:
        raise NotSha1Repository(
            f"the store at {root}", "nothing was changed; to move this memory to a SHA-1 "
            f"store, run `memctl --store NEW init`, then `memctl --store NEW import {root}`")
    return commit


def _kept_history_path(root: Path) -> Path | None:
    """Where the pass over the history of the store at `root` is kept; None where it is not
    (no `.memctl/` folder, or a history whose commit ids do not fix their ancestors)."""
    try:
        folder = state_path(root)
    except MemctlError:  # a linked .memctl: the command refuses it elsewhere; keep nothing
        return None
    return folder / KEPT_HISTORY if folder.is_dir() and history_is_fixed(root) else None


def _reached_by(root: Path, commit: str, tips: list[str]) -> bool:
    """Whether `commit` is one of `tips` or an ancestor of one. Asked of `git merge-base
    --is-ancestor`, which walks until it knows: `git rev-list commit --not tips` listed
    `commit` when a clock had gone back between them."""
    return any(run_git(root, "merge-base", "--is-ancestor", commit, tip,
                       check=False).returncode == 0 for tip in tips)


def _reaches_all(root: Path, wanted: list[str], tips: list[str]) -> bool:
    """Whether every one of `tips` is reachable from `wanted` (then what they reach is a part
    of what `wanted` reach). A tip git no longer has (a rewritten history, pruned) is not."""
    if not all(_FULL_HASH.fullmatch(tip) for tip in tips):
        return False
    found = run_git(root, "rev-list", "-n", "1", *tips, "--not", *wanted, check=False)
    return found.returncode == 0 and not found.stdout.strip()


def _read_log(root: Path, revs: list[str]) -> History:
    """One pass over the diffs of the commits `revs` select (`^commit`: not those it
    reaches), each commit before its parents (`--topo-order`: git's default order goes by
    commit time, and shows a commit asked for before its children asked for too)."""
    history = History()
    out = run_git(root, "log", "--topo-order", "-m", "--no-renames", "--raw", "--no-abbrev",
                  "-z", "--format=%x01%ct", *revs, "--").stdout
    for chunk in out.split("\x01"):
        if not chunk:
            continue
        tokens = chunk.split("\0")
        try:
            when = int(tokens[0].strip())
        except ValueError:
            continue
        index = 1
        while index + 1 < len(tokens):
            meta = tokens[index].lstrip("\n")
            if not meta.startswith(":"):
                index += 1
                continue
            path = tokens[index + 1]
            index += 2
            parts = meta.split()
            if len(parts) < 5:
                continue
            old, new = (oid if oid.strip("0") else None for oid in (parts[2], parts[3]))
            history.record(when, history_key(path), path, old, new)
    return history


def _iso_epoch(seconds: float) -> str:
    return format_time(datetime.fromtimestamp(seconds, UTC))


def read_store_files(root: Path, unreadable: list[str] | None = None
                     ) -> dict[str, tuple[bytes, float]]:
    """Every file of a store that takes part in merges: path -> (bytes, mtime). A file that
    cannot be read is left out and, when `unreadable` is given, named there."""
    found: dict[str, tuple[bytes, float]] = {}
    paths = [f.relpath for f in Store(root).walk()]
    for folder in (".counters", STORE_TEMPLATE_DIR):
        try:
            paths.extend(f"{folder}/{e.name}" for e in os.scandir(root / folder) if e.is_file(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            pass
    paths.append(SETTINGS_FILE)
    for path in paths:
        if path_kind(path) is None:
            continue
        full = root / path
        try:
            if full.is_symlink() or not full.is_file():
                continue
            found[path] = (full.read_bytes(), full.stat().st_mtime)
        except OSError:
            if unreadable is not None:
                unreadable.append(path)
            continue
    return found


def saved_by() -> float:
    """The latest time a file of this machine's store can have been saved: now (the later of
    `MEMCTL_NOW` and this clock). A file time ahead of it (a file system whose clock runs
    ahead, `touch`, a copy that kept a skewed machine's times) cannot be when the edit was
    made here, and taken as it was it dated the edit "in the future", a date the merge
    counts as no time at all: a person's later edit lost to an earlier one made elsewhere
    (docs/sync.md). Such a file is dated now."""
    return latest_now().timestamp()


def stamp_hand_edit(path: str, data: bytes, mtime: float) -> bytes | None:
    """A not-yet-committed hand edit with its `updated` set from the file time (never older
    than the version it edited, unless that one is dated in the future) and a fresh checksum; None when it needs no stamp or has no
    front matter to stamp (memctl adds none to a person's plain file)."""
    if path_kind(path) not in _NOTE_KINDS or len(data) > MAX_FILE_BYTES:
        return None  # (over what memctl reads of a note: taken as it is, entry_for)
    entry = entry_for(path, data)
    if entry.stamped or not MergeKey(entry.key).is_id:
        return None
    text = decode_file(data)
    if not isinstance(text, str):
        return None  # no text (a NUL byte too): exported as it is, named at its own line
    parsed = parse_text(text)
    if parsed.problem is not None or not parsed.has_front_matter:
        return None
    moment = datetime.fromtimestamp(mtime, UTC).replace(microsecond=0) \
        + timedelta(milliseconds=int(mtime * 1000) % 1000)
    note = note_from_parsed(parsed, text=text, relpath=path, project=path.split("/", 1)[0])
    # `stamp` dates it as memctl dates its own edits (`monotonic_stamp`): the save time, or
    # 1 ms after the version it edited when that is later, so it beats that version; but not
    # after a stamp more than a day ahead of this clock, which the merge counts as no time
    # at all: 1 ms after it, a person's later edit lost to an earlier one made elsewhere
    # (docs/sync.md, tests/test_sync.py).
    try:
        return stamp(text, {}, moment, note).encode("utf-8")
    except Exception:  # noqa: BLE001 - an unstampable file takes part as it is
        return None


def snapshot(root: Path, raw: dict[str, tuple[bytes, float]] | None = None,
             head: str = "HEAD", history: History | None = None, *,
             keep_pass: bool = False) -> Snapshot:
    """The store at `root` (its working tree, or `raw` files read from it) for merging.
    `keep_pass`: `root` is this machine's store, whose pass over its history is kept
    (`scan_history`); a folder read from is never written to."""
    root = Path(root)
    raw = read_store_files(root) if raw is None else raw
    # A name that is not UTF-8 in the last commit (committed by plain git) is left out, as
    # the walk leaves the file out: export and import go on; only sync refuses it.
    committed: dict[str, tuple[str, str]] = {}
    try:
        if (root / ".git").exists():
            committed = tree_of(root, head, strict=False)
        if history is None:
            history = scan_history(root, [head], keep_pass=keep_pass) \
                if (root / ".git").exists() else History()
    except NotSha1Repository:
        if keep_pass:
            raise  # this store's own history: its merges would go wrong (commit_id)
        # A folder read from: its files are taken as a folder without git's are (file times
        # date them), which is how a SHA-256 store's memory moves to a SHA-1 store.
        committed, history = {}, History()
    files: dict[str, BundleFile] = {}
    entries: dict[str, Entry] = {}
    disk_oid: dict[str, str] = {}
    normalized: list[str] = []
    latest = saved_by() if keep_pass else float("inf")  # this machine's files: saved by now
    for path in sorted(raw):
        data, mtime = raw[path]
        mtime = min(mtime, latest)
        oid = git_oid(data)
        disk_oid[path] = oid
        dirty = committed.get(path, ("", ""))[1] != oid
        if dirty:
            fallback = _iso_epoch(mtime)
            stamped = stamp_hand_edit(path, data, mtime)
            if stamped is not None:
                data = stamped
                normalized.append(path)
        else:
            first = history.first_time.get((path, oid))
            fallback = _iso_epoch(first) if first is not None else _iso_epoch(mtime)
        add_entry(entries, entry_for(path, data, fallback))
        files[path] = BundleFile(path, data, fallback)
    seen: dict[str, set[str]] = {key: set(oids) for key, oids in history.seen.items()}
    paths: dict[str, set[str]] = {key: set(found) for key, found in history.paths.items()}
    aliases: set[str] = set()  # history's keys of live notes, by their file names
    for entry in entries.values():
        alias = history_key(entry.path)
        if alias and alias != entry.key:
            seen.setdefault(entry.key, set()).update(history.seen.get(alias, ()))
            paths.setdefault(entry.key, set()).update(history.paths.get(alias, ()))
            aliases.add(alias)
    frozen = {key: frozenset(oids) for key, oids in seen.items()}
    for entry in entries.values():
        oids = sorted(frozen.get(entry.key, frozenset()) - {entry.oid})[:HISTORY_LIMIT]
        item = files[entry.path]
        files[entry.path] = BundleFile(item.path, item.data, item.updated, tuple(oids))
    # A key merged into a live note's (its file name's, above) is that note, not one removed:
    # listed, every export named each note whose file name lacks its id as removed.
    removed = {key: (history.last_path.get(key, key_name(key)), tuple(sorted(oids))[:HISTORY_LIMIT])
               for key, oids in frozen.items()
               if key not in entries and key not in aliases and key in history.last_path}
    return Snapshot(files=files, entries=entries, disk_oid=disk_oid, seen=frozen,
                    paths={key: frozenset(found) for key, found in paths.items()},
                    normalized=normalized, removed=removed)


def project_of(item: BundleFile) -> str | None:
    """The project a file belongs to (for `export --project`); None for store-wide files."""
    kind = path_kind(item.path)
    parts = item.path.split("/")
    if kind == TOMBSTONE:
        value = parse_text(item.data.decode("utf-8", "replace")).meta.get("project")
        return str(value) if value else None
    if kind == COUNTERS or kind in ("settings", "template"):
        return None
    if parts[0] == ".conflicts":
        return parts[1] if len(parts) > 1 else None
    return parts[0]
