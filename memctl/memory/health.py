"""The health report (docs/health.md) as data, plus its Markdown form. The keys are documented in
docs/health.md; the CLI draws the terminal tables from the same dictionary.

Reading only: health never changes a memory file and makes no commit (it does bring the
derived index up to date, like every read command).
"""

from __future__ import annotations

import functools
import gc
import marshal
import mmap
import os
import pickle
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

from memctl.core.clock import format_time, now, parse_time
from memctl.core.errors import MemctlError
from memctl.core.markers import conflict_markers
from memctl.core.note import Note, note_from_parsed
from memctl.core.noteformat import parse_file
from memctl.core.secrets import mask_name, masked_title, name_findings, scan
from memctl.core.similarity import forget as forget_texts
from memctl.core.similarity import judge, load_scorers
from memctl.core.stamp import Stamp
from memctl.core.textfile import escaped_name, is_utf8_name
from memctl.core.vocab import MAX_FILE_BYTES, fact_key, valid_project_name
from memctl.disk import gitops
from memctl.disk.counters import get_counters, top_accessed
from memctl.disk.forking import fork_child, stop_child
from memctl.disk.layout import (
    ARCHIVED,
    CONFLICT,
    CONFLICT_DIR,
    GLOBAL,
    MEMORY,
    NOTE,
    SCRATCHPAD,
    TOMBSTONE,
    TOMBSTONE_DIR,
    MemoryFile,
    classify,
)
from memctl.disk.settings import SETTINGS, SETTINGS_FILE, Settings
from memctl.disk.storefiles import case_key
from memctl.disk.templates import template_problems
from memctl.disk.watchstate import read_status
from memctl.index.db import ensure_fresh, open_index, walk_stats
from memctl.index.docs import content_digest, fast_parse
from memctl.index.workers import worker_count
from memctl.memory import paircache
from memctl.memory.checks import live
from memctl.memory.lifecycle import last_active, stamps_ahead, unchangeable
from memctl.store import Store

TOP_RECALLED_DAYS = 30
TOP_RECALLED_LIMIT = 20

# Sections that count as problems for `--strict`, with the words the summary uses.
PROBLEM_SECTIONS = (
    ("contradictions", "possible contradictions"),
    ("near_duplicates", "near-duplicates"),
    ("expired", "expired notes not archived"),
    ("parse_errors", "files that do not parse"),
    ("field_warnings", "notes with values memctl cannot read"),
    ("secrets", "likely secrets"),
    ("memory_over_budget", "MEMORY.md files over budget"),
    ("conflicts", "conflict copies to review"),
    ("links", "symbolic links memctl refuses to follow"),
    ("templates", "note templates without {{text}} or unreadable"),
    ("invalid_ids", "notes whose id is not a valid id"),
    ("duplicate_ids", "ids used by more than one file"),
    ("conflict_markers", "files with git conflict markers"),
    ("supersession", "notes hidden by a supersession that leads nowhere"),
    ("same_fact", "facts stated by more than one active note"),
    ("tombstoned_notes", "live notes beside their tombstone"),
    ("case_twins", "projects whose names differ only in case"),
    ("unknown_settings", "settings memctl does not know"),
)




# A file or folder whose name is not UTF-8 (memctl.core.textfile.is_utf8_name), as parse_errors
# names it.
NAME_NOT_UTF8 = "the name is not UTF-8: no command reads this; rename it"
# The same name under a locale that reads names as ASCII (`LC_ALL=C PYTHONUTF8=0`): the name
# is UTF-8, and renaming it is not what to do.
NAME_UNREAD_HERE = ("the name is UTF-8, but this process reads file names as ASCII (the C "
                    "locale): no command reads this here; run memctl with PYTHONUTF8=1 or a "
                    "UTF-8 locale (LC_ALL=C.UTF-8)")

def _utf8_bytes(name: str) -> bool:
    """Whether the bytes of a name the file system's encoding could not read are UTF-8."""
    try:
        os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _brief(note: Note) -> dict[str, Any]:
    return {"id": note.id, "project": note.project, "type": note.type, "path": note.path,
            "title": _masked_title(note.title)}


@functools.lru_cache(maxsize=1 << 14)
def _masked_title(title: str) -> str:
    # Remembered: a note is described in several lists of one report (idle, pairs, ...), and
    # masking runs the secret scanner over the title each time.
    return masked_title(title, 80)


Read = tuple[list[Note], list[dict[str, Any]], list[dict[str, Any]], dict[str, int],
             list[dict[str, Any]]]

# The files a person reads as memory, where git's conflict markers would be served as text.
MARKED_KINDS = (NOTE, ARCHIVED, MEMORY, SCRATCHPAD)
MARKERS_MESSAGE = ("git conflict markers (<<<<<<<, =======, >>>>>>>) from this line: both "
                   "sides are served as one text; keep the right one, delete the marker "
                   "lines, then `memctl sync`")


def _read_all(store: Store, alongside: Callable[[list[MemoryFile]], Any] = lambda files: None
              ) -> tuple[Read, Any]:
    """One pass over every memory file: notes, parse errors, secrets, and file sizes; and
    `alongside(files walked)`, done here while a child reads its share of a big store."""
    walk = store.walk()
    files = list(islice(walk, PARALLEL_MIN))
    both = _read_walking(store, files, walk, alongside) \
        if len(files) == PARALLEL_MIN and _can_fork() else None
    if both is None:
        files += walk
        size = max(1, min(READ_CHUNK, len(files) // 16))  # at least 16 tasks to share
        chunks = [files[start:start + size] for start in range(0, len(files), size)]
        parallel = len(files) >= PARALLEL_MIN
        both = _shared(len(chunks), lambda number: _read_files(store, chunks[number]),
                       lambda: alongside(files), parallel)
    first, read = both
    notes: list[Note] = []
    errors: list[dict[str, Any]] = []
    secrets: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    markers: list[dict[str, Any]] = []
    for more_notes, more_errors, more_secrets, more_sizes, more_markers in read:  # walk order
        notes += more_notes
        errors += more_errors
        secrets += more_secrets
        sizes.update(more_sizes)
        markers += more_markers
    return (notes, errors, secrets, sizes, markers), first


def _read_files(store: Store, files: list[MemoryFile]) -> Read:
    notes: list[Note] = []
    errors: list[dict[str, Any]] = []
    secrets: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    markers: list[dict[str, Any]] = []
    folders: set[str] = set()  # each folder checked for a link once (StoreFiles.read_text)
    for memory_file in files:
        path = memory_file.relpath
        sizes[path] = memory_file.size
        secrets += name_findings(path)  # a key in the name: an import refuses it (docs/security.md)
        if memory_file.size > MAX_FILE_BYTES:
            errors.append({"path": path, "line": 1, "message": "file is larger than "
                           f"{MAX_FILE_BYTES // 1024 // 1024} MB"})
            continue
        try:
            text, info = store.read_text(path, folders)
        except MemctlError as exc:
            message = str(exc)
            line = 1
            head, _, rest = message.partition(": ")
            if head.startswith(path + ":") and head[len(path) + 1:].isdigit():
                line, message = int(head[len(path) + 1:]), rest
            elif message.startswith(path):
                message = message[len(path):].lstrip(": ")
            errors.append({"path": path, "line": line, "message": message})
            continue
        for finding in scan(text):
            secrets.append({"path": mask_name(path), "line": finding.line,
                            "kind": finding.kind, "masked": finding.masked})
        if memory_file.kind in MARKED_KINDS:
            line = conflict_markers(text)
            if line is not None:
                markers.append({"path": path, "line": line, "message": MARKERS_MESSAGE})
        if memory_file.kind not in (NOTE, ARCHIVED):
            parsed = parse_file(text)
            if parsed.problem is not None and memory_file.kind not in ("tombstone", "conflict"):
                errors.append({"path": path, "line": parsed.problem.line,
                               "message": parsed.problem.message})
            continue
        # The index's reader for simple front matter (held equal to the YAML loader by a
        # property test): the YAML loader was half of a health report's time.
        parsed = fast_parse(text) or parse_file(text)
        if parsed.problem is not None:
            errors.append({"path": path, "line": parsed.problem.line,
                           "message": parsed.problem.message})
            continue
        note = note_from_parsed(
            parsed, text=text, relpath=path, project=memory_file.project,
            file_time=datetime.fromtimestamp(info.st_mtime, UTC),
            archived=memory_file.kind == ARCHIVED, check_stamp=False,
        )
        # The report reads the fields, never the raw front matter nor `stamped` (a hash of
        # every file): at 100,000 notes the copies of front matter were ~50 MB. The values
        # most notes share are kept once (and sent once from a child). A stamp the file writes
        # more than a day ahead is named from the front matter, before it goes.
        note.warnings += stamps_ahead(note, now())
        note.meta = {}
        note.type, note.status, note.project = (
            sys.intern(note.type), sys.intern(note.status), sys.intern(note.project))
        notes.append(note)
    return notes, errors, secrets, sizes, markers


def _pairs(root: Path, notes: list[Note], moment: datetime, dup: float, similar: float,
           listed: int, alongside: Callable[[], Any] = lambda: None
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], Any]:
    """Near-duplicates and contradiction candidates among live notes, within each project and
    between a project and global (the similar pairs of unchanged notes come from the last
    report: memctl.memory.paircache), each project's judged by `_judged`: the pairs listed
    (at most `listed` of each kind per project, the most alike first) and `pair_counts`;
    and `alongside()`. Many notes: the projects are shared with a child process, which
    starts on them while this one does `alongside()`."""
    pool = live(notes, moment)
    by_id = {note.id: note for note in pool}
    scopes: dict[str, list[Note]] = {}
    for note in pool:
        scopes.setdefault(note.path.split("/", 1)[0], []).append(note)
    global_items = [(note.id, note.body) for note in scopes.get(GLOBAL, [])]
    cached = paircache.load(root, similar)

    def find(project: str) -> tuple[_Judged, str]:
        items = [(note.id, note.body) for note in scopes[project]]
        # global's own pairs once, in its own group; each project's notes with global's.
        partners = [] if project == GLOBAL else global_items
        # (popped: the last report's pairs of a group are not kept once used)
        pairs, entry = paircache.group_pairs(items, cached.pop(project, None), similar,
                                             partners)
        return _judged(pairs, by_id, dup, similar, listed), paircache.encoded(entry)

    projects = sorted(scopes)
    # Each project's cost grows with its notes times its notes and global's: the largest
    # first, so that the last ones taken even out the two processes.
    cost = {p: len(scopes[p]) * (len(scopes[p]) + len(global_items)) for p in projects}
    order = sorted(projects, key=lambda p: (-cost[p], p))
    other, found = _shared(len(order), lambda number: find(order[number]), alongside,
                           len(pool) >= PARALLEL_MIN)
    forget_texts()  # a child's remembered texts went with it; this process's, here
    results = dict(zip(order, found, strict=True))
    paircache.save(root, similar, {project: results[project][1] for project in projects})
    duplicates: list[dict[str, Any]] = []
    contradictions: list[dict[str, Any]] = []
    briefs: dict[str, dict[str, Any]] = {}  # one brief per note, shared by its pairs
    seen: set[tuple[str, str]] = set()  # a pair once (two files with one id in two projects)
    counts = {"similar": 0, "judged": 0}
    noted: dict[str, set[str]] = {"near_duplicates": set(), "contradictions": set()}
    duplicate_pairs = 0
    for project in projects:
        judged = results[project][0]
        counts["similar"] += judged.similar
        counts["judged"] += judged.judged
        duplicate_pairs += judged.duplicate_pairs
        noted["near_duplicates"] |= judged.duplicate_notes
        noted["contradictions"] |= judged.contradiction_notes
        for chosen, kept in ((judged.duplicates, duplicates),
                             (judged.contradictions, contradictions)):
            for a, b, score, reasons in chosen:
                if (a, b) in seen:
                    continue
                seen.add((a, b))
                for note_id in (a, b):
                    if note_id not in briefs:
                        briefs[note_id] = _brief(by_id[note_id])
                kept.append({"a": briefs[a], "b": briefs[b], "score": round(score, 1),
                             "reasons": list(reasons)})
    order = lambda e: (-e["score"], e["a"]["id"], e["b"]["id"])  # noqa: E731
    duplicates.sort(key=order)
    contradictions.sort(key=order)
    summary = {
        "near_duplicates": {"notes": len(noted["near_duplicates"]), "pairs": duplicate_pairs,
                            "listed": len(duplicates)},
        "contradictions": {"notes": len(noted["contradictions"]),
                           "listed": len(contradictions)},
        **counts, "listed_per_project": listed,
    }
    return duplicates, contradictions, summary, other


class _Judged:
    """One group's pairs as the report counts and lists them (plain, for the pipe from a
    child): the listed pairs as (smaller id, larger id, score, reasons)."""

    def __init__(self) -> None:
        self.duplicates: list[tuple[str, str, float, tuple[str, ...]]] = []
        self.contradictions: list[tuple[str, str, float, tuple[str, ...]]] = []
        self.duplicate_notes: set[str] = set()
        self.contradiction_notes: set[str] = set()
        self.duplicate_pairs = 0
        self.similar = 0
        self.judged = 0


def _judged(pairs: list[tuple[str, str, float]], by_id: dict[str, Note], dup: float,
            similar: float, listed: int) -> _Judged:
    """A group's pairs (the most alike first) judged by `similarity.judge`, as few as the
    report needs (docs/health.md): every pair scoring `dup` or more (any may be a
    near-duplicate: all are counted), and a lower one while the group lists fewer than
    `listed` contradictions or one of its two notes has none yet. So the notes with a
    possible contradiction are counted exactly (each note's pairs are judged until one is,
    all of them when none is), and the pairs listed are the most alike of each kind; at
    100,000 notes the benchmark store has ~400,000 similar pairs, and judging all of them
    was a third of the report's time (bench/bench_health.py)."""
    out = _Judged()
    seen: set[tuple[str, str]] = set()  # a key twice: two files with one id
    for a, b, value in pairs:
        if a == b:
            continue
        out.similar += 1
        key = (a, b) if a < b else (b, a)
        if value < dup and len(out.contradictions) >= listed \
                and a in out.contradiction_notes and b in out.contradiction_notes:
            continue
        first, second = by_id[a], by_id[b]
        if first.corrects == b or second.corrects == a or key in seen:
            # A correction differs from the note it names on purpose, and says so: `add`
            # and `recall` link the two rather than report them (docs/lifecycle.md).
            continue
        seen.add(key)
        verdict = judge(first.body, second.body, value, duplicate_threshold=dup,
                        similar_threshold=similar)
        out.judged += 1
        if verdict.duplicate:
            out.duplicate_pairs += 1
            out.duplicate_notes.update(key)
            if len(out.duplicates) < listed:
                out.duplicates.append((*key, verdict.score, verdict.reasons))
        elif verdict.similar:
            out.contradiction_notes.update(key)
            if len(out.contradictions) < listed:
                out.contradictions.append((*key, verdict.score, verdict.reasons))
    return out


# --- a second process for big stores --------------------------------------------------------
# Reading and judging a big store is CPU work in Python: with two cores, a share of the files
# (from the first PARALLEL_MIN walked on: `_read_walking`) and of the projects (their pairs
# found and judged) goes to a forked child, which sends its results back (its notes as plain
# values, the rest pickled). A child that fails costs only time: its share is done here;
# when this process fails, the child is stopped and waited for. Below this many files or
# notes, a process costs more than it saves.
PARALLEL_MIN = 1500
READ_CHUNK = 200  # files read as one task of the queue (`_shared`)


def _can_fork() -> bool:
    """fork is only safe without other threads (a server, a watcher), and worth it with two
    cores or more (MEMCTL_INDEX_WORKERS, as for a reindex)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and worker_count() >= 2


class _Child:
    """`work` started in a forked child (or, when no child can be had, done on `result()`).
    `leave`: file descriptors the child closes first (pipes only this process writes to)."""

    def __init__(self, work: Callable[[], Any], leave: Sequence[int] = ()) -> None:
        self.work = work
        self.pid = 0
        self.read_end = -1
        started = fork_child(self._send, close=leave)
        if started is not None:
            self.pid, self.read_end = started

    def _send(self, write_end: int) -> None:
        """In the child: compute and send."""
        data = pickle.dumps(self.work(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)

    def result(self) -> Any:
        """The child's result (its work done here if it failed)."""
        if not self.pid:
            return self.work()
        with os.fdopen(self.read_end, "rb") as stream:
            data = stream.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if status != 0 or not data:
            return self.work()
        return pickle.loads(data)

    def discard(self) -> None:
        """Stop the child and wait for it (this process failed: its result is not wanted)."""
        if self.pid:
            stop_child(self.pid)
            os.close(self.read_end)
            self.pid = 0


QUEUE_ENTRIES = 1024  # 4 bytes each: the whole queue is written at once, before the fork


def _shared(tasks: int, work: Callable[[int], Any], first: Callable[[], Any],
            parallel: bool = True) -> tuple[Any, list[Any]]:
    """`work(0)` … `work(tasks - 1)` taken in turn by this process and a forked child from
    one queue (a pipe holding the task numbers, written whole before the fork; the costliest
    tasks should come first), this process after `first()` (done meanwhile: the other parts
    of the report). Returns (first's result, the results in task order). Both keep taking
    until the queue is empty, so neither waits long for the other however the costs were
    guessed; a task the child took and did not send back (it failed) is done here."""
    if not parallel or tasks < 2 or not _can_fork():
        return first(), [work(task) for task in range(tasks)]
    entries = min(tasks, QUEUE_ENTRIES)  # past that, an entry is a run of tasks
    runs = [range(entry * tasks // entries, (entry + 1) * tasks // entries)
            for entry in range(entries)]
    queue = b"".join(entry.to_bytes(4, "little") for entry in range(entries))
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return first(), [work(task) for task in range(tasks)]
    try:
        os.set_blocking(write_end, False)  # a pipe too small for the queue: no waiting on it
        written = os.write(write_end, queue)
    except OSError:
        written = 0
    finally:
        os.close(write_end)
    if written != len(queue):
        os.close(read_end)
        return first(), [work(task) for task in range(tasks)]

    def taken(pickled: bool) -> dict[int, Any]:
        done = {}
        while True:
            record = os.read(read_end, 4)
            if len(record) != 4:  # empty (anything else: the rest is done here, below)
                return done
            for task in runs[int.from_bytes(record, "little")]:
                # The child pickles each result as it goes, not all of them once done: the
                # other process would wait for that (100k notes: ~0.7 s).
                done[task] = pickle.dumps(work(task), protocol=pickle.HIGHEST_PROTOCOL) \
                    if pickled else work(task)

    try:
        child = _Child(lambda: taken(True))
        try:
            before = first()
            done = taken(False)
        except BaseException:
            child.discard()
            raise
        done.update((task, pickle.loads(data)) for task, data in child.result().items())
    finally:
        os.close(read_end)
    return before, [done[task] if task in done else work(task) for task in range(tasks)]


# While this process walks a big store, a child reads the files walked so far: each chunk of
# READ_CHUNK files is written to memory both processes share, and its place put on the queue
# (a pipe of RECORD-byte records: chunk number, offset, length), from which both take.
RECORD = 12
WALKED_BYTES = 64 << 20  # room for the walked chunks (~120 bytes a file); the rest: read here


def _read_walking(store: Store, files: list[MemoryFile], rest: Iterator[MemoryFile],
                  alongside: Callable[[list[MemoryFile]], Any]
                  ) -> tuple[Any, list[Read]] | None:
    """`_shared` for reading the files of a big store, started as soon as the walk has found
    `files` (PARALLEL_MIN of them) rather than once it is over: a forked child reads the
    chunks this process walks meanwhile (`rest`, added to `files`; 100,000 files: ~1 s),
    then this one does `alongside(files)` and takes its share. (alongside's result, each
    chunk's Read in the walk's order), or None when no child can be had (nothing of `rest`
    walked then)."""
    try:
        walked = mmap.mmap(-1, WALKED_BYTES)
    except (OSError, ValueError):
        return None
    try:
        read_end, write_end = os.pipe()
    except OSError:
        walked.close()
        return None
    chunks: list[list[MemoryFile]] = []
    used = 0

    def offer(chunk: list[MemoryFile]) -> None:
        """A chunk walked: kept here, and put on the queue when it fits the shared memory."""
        nonlocal used
        number = len(chunks)
        chunks.append(chunk)
        data = marshal.dumps([(each.relpath, each.kind, each.project, each.stamp)
                              for each in chunk])
        if used + len(data) > WALKED_BYTES:
            return  # left off the queue: read here, once the queue is empty
        walked[used:used + len(data)] = data
        try:  # (not waiting on a full queue: this process takes from it only once walked)
            os.write(write_end, b"".join(value.to_bytes(4, "little")
                                         for value in (number, used, len(data))))
        except BlockingIOError:
            return
        used += len(data)

    def taken(in_child: bool) -> dict[int, Any]:
        done = {}
        while True:
            record = os.read(read_end, RECORD)
            if len(record) != RECORD:  # empty: the walk is over and every chunk taken
                return done
            number = int.from_bytes(record[:4], "little")
            if in_child:
                start = int.from_bytes(record[4:8], "little")
                end = start + int.from_bytes(record[8:], "little")
                chunk = [MemoryFile(*each) for each in marshal.loads(walked[start:end])]
                notes, errors, secrets, sizes, markers = _read_files(store, chunk)
                # Plain values, as marshal takes them: half the time of pickling the notes
                # here and of unpickling them there.
                done[number] = marshal.dumps(([note.__dict__ for note in notes], errors,
                                              secrets, sizes, markers))
            else:
                done[number] = _read_files(store, chunks[number])

    try:
        os.set_blocking(write_end, False)
        for start in range(0, len(files), READ_CHUNK):
            offer(files[start:start + READ_CHUNK])
        child = _Child(lambda: taken(True), leave=(write_end,))
        if not child.pid:  # no child: everything is read here, as without one
            return None
        try:
            chunk: list[MemoryFile] = []
            for memory_file in rest:
                files.append(memory_file)
                chunk.append(memory_file)
                if len(chunk) == READ_CHUNK:
                    offer(chunk)
                    chunk = []
            if chunk:
                offer(chunk)
            os.close(write_end)  # the queue ends once every chunk is taken
            write_end = -1
            before = alongside(files)
            done = taken(False)
        except BaseException:
            child.discard()
            raise
        for number, data in child.result().items():
            fields, errors, secrets, sizes, markers = marshal.loads(data)
            done[number] = ([_note_of(each) for each in fields], errors, secrets, sizes,
                            markers)
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)
        walked.close()
    return before, [done[number] if number in done else _read_files(store, chunks[number])
                    for number in range(len(chunks))]


def _differs(root: Path, path: str, indexed: tuple[Stamp, str], on_disk: Stamp) -> bool:
    """An mtime of 0 means the file was too new to trust its stamp when indexed: compare the
    content instead."""
    from pathlib import Path

    stamp, digest = indexed
    if stamp[0] != 0:
        return tuple(stamp) != tuple(on_disk)
    try:
        return content_digest((Path(root) / path).read_bytes()) != digest
    except OSError:
        return True


def _note_of(fields: dict[str, Any]) -> Note:
    """A note from its attributes, as unpickling makes it (without calling its __init__)."""
    note = object.__new__(Note)
    note.__dict__ = fields
    return note


def _index_drift(store: Store, walked: list[MemoryFile] | None = None) -> dict[str, Any]:
    """Compare what the index knows with the files, before and after bringing it up to date.

    `before` is normal after hand edits (every command catches up first); `after` should be
    empty: anything left means the index cannot follow the files (a live watcher that missed
    events, or a file the index cannot take). `walked`: the memory files the report has just
    walked, whose stamps are the files' as the index sees them before its update (no walk
    again: 100,000 files, ~1 s)."""
    def drift(indexed: dict[str, tuple[Stamp, str]],
              on_disk: dict[str, Stamp] | None = None) -> dict[str, list[str]]:
        if on_disk is None:
            on_disk = walk_stats(store.root)
        return {
            "missing": sorted(p for p in on_disk if p not in indexed),
            "stale": sorted(p for p, st in on_disk.items()
                            if p in indexed and _differs(store.root, p, indexed[p], st)),
            "orphaned": sorted(p for p in indexed if p not in on_disk),
        }

    with open_index(store, copy_when_refused=True) as index:
        before = drift(index.indexed_files(), None if walked is None else _indexed_stats(walked))
    index = ensure_fresh(store)
    try:
        refreshed = index.last_refresh
        # Nothing differed and the walk changed nothing: the same comparison again would
        # find the same (a 100k-note store's walk and index read: ~1 s). A file that
        # differed only in its stamp (a `touch`, a `chmod`: its bytes as indexed) is
        # stamped anew without the walk counting it as changed, so then compare again.
        unchanged = refreshed is not None and not refreshed.changed
        after = before if unchanged and not any(before.values()) \
            else drift(index.indexed_files())
        indexed_notes = index.count("note")
        last_good = index.last_good_notes()
    finally:
        index.close()
    return {
        "changed_since_last_update": sum(len(v) for v in before.values()),
        "drift": after,
        "drifted": sum(len(v) for v in after.values()),
        "indexed_docs": indexed_notes,
        "last_good_notes": last_good,
    }


def _checked_index(store: Store, walked: list[MemoryFile]) -> dict[str, Any]:
    """`_index_drift`, done while a child reads; and the scorers the pair search uses loaded
    meanwhile, so that the child which then shares the pairs starts with them (loaded in
    both processes otherwise)."""
    drift = _index_drift(store, walked)
    load_scorers()
    return drift


def _indexed_stats(walked: list[MemoryFile]) -> dict[str, Stamp]:
    """`walk_stats` of the store, from its memory files: the files the index covers are the
    projects' memory files (not tombstones nor conflict copies), each with the stamp its walk
    read (tests/test_health.py holds the two equal)."""
    return {each.relpath: each.stamp for each in walked
            if each.kind not in (TOMBSTONE, CONFLICT)}


def _git_state(store: Store) -> dict[str, Any]:
    state: dict[str, Any] = {"branch": None, "head": None, "uncommitted": [], "remote": None,
                             "upstream": None, "unpushed": None, "error": None, "blocked": None}
    try:
        # What refuses every commit memctl would make (a detached HEAD, a rebase under way):
        # each write says so, and the report must too (tests/test_git_state.py).
        state["blocked"] = gitops.commit_refusal(store.root) if gitops.is_repo(store.root) else None
        state["head"] = gitops.head(store.root)
        branch = gitops.run_git(store.root, "rev-parse", "--abbrev-ref", "HEAD", check=False)
        state["branch"] = branch.stdout.strip() or None
        state["uncommitted"] = gitops.status_porcelain(store.root)
        remotes = gitops.run_git(store.root, "remote", check=False).stdout.split()
        state["remote"] = remotes[0] if remotes else None
        upstream = gitops.run_git(store.root, "rev-parse", "--abbrev-ref", "@{u}", check=False)
        if upstream.returncode == 0:
            state["upstream"] = upstream.stdout.strip()
            ahead = gitops.run_git(store.root, "rev-list", "--count", "@{u}..HEAD", check=False)
            state["unpushed"] = int(ahead.stdout.strip() or 0) if ahead.returncode == 0 else None
        elif state["remote"] and state["head"] and not gitops.head_detached(store.root):
            # A remote but no upstream yet: nothing of this branch has been pushed.
            count = gitops.run_git(store.root, "rev-list", "--count", "HEAD", check=False)
            state["unpushed"] = int(count.stdout.strip() or 0) if count.returncode == 0 else None
    except Exception as exc:  # noqa: BLE001 - a broken repo is reported, not fatal
        state["error"] = str(exc)
    return state


def _watcher_state(store: Store) -> dict[str, Any]:
    """Whether a `memctl watch` keeps this store's index fresh (not a problem when none runs)."""
    status = read_status(store)
    if status is None:
        return {"running": False, "live": False, "pid": None}
    return {"running": status.running, "live": status.live, "pid": status.pid if status.running else None}


def build_report(store: Store, moment: datetime | None = None) -> dict[str, Any]:
    """The whole report as one JSON-ready dictionary (see docs/health.md for each key)."""
    # The report makes millions of objects and keeps most of them to its end: Python's
    # collection of reference cycles would scan them again and again (a twentieth of a
    # 100,000-note report, and in a forked child it writes to every page it scans, which
    # the child then copies). It makes no cycles to collect: paused meanwhile, when no
    # other thread could be counting on it (a server's threads run reports of their own).
    paused = threading.active_count() == 1 and gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _build_report(store, moment)
    finally:
        if paused:
            gc.enable()


def _build_report(store: Store, moment: datetime | None) -> dict[str, Any]:
    moment = moment or now()
    settings = store.settings
    # A big store: a child reads while this process walks on and checks the index, then
    # finds and judges pairs while this one makes the rest of the report.
    (notes, parse_errors, secrets, sizes, markers), drift = _read_all(
        store, lambda files: _checked_index(store, files))
    duplicates, contradictions, pair_counts, sections = _pairs(
        store.root, notes, moment, settings.get("duplicates.merge_threshold"),
        settings.get("duplicates.similar_threshold"), settings.get("health.listed_pairs"),
        lambda: _sections(store, notes, sizes, moment))
    # The notes whose file does not parse: `list` and `search` show their last good
    # version, so the totals say how many there are beside the notes read here.
    sections["head"]["totals"]["last_good"] = drift["last_good_notes"]
    report: dict[str, Any] = {
        "generated": format_time(moment),
        "store": str(store.root),
        **sections["head"],
        "contradictions": contradictions,
        "near_duplicates": duplicates,
        "pair_counts": pair_counts,
        "expired": sections["expired"],
        "parse_errors": sorted(parse_errors + sections["unnamed"],
                               key=lambda e: (e["path"], e["line"])),
        "field_warnings": sections["field_warnings"],
        "secrets": secrets,
        "conflict_markers": markers,
        **sections["tail"],
        "index": drift,
        **sections["state"],
    }
    if any(entry["line"] == 0 for entry in secrets):
        # A file named with a key (line 0: `name_findings`) is listed wherever its note is
        # (`unrecalled`, `expired`, a pair): masked in every one of them, not only here.
        report = _names_masked(report)
    report["problems"] = problems_of(report)
    report["ok"] = not report["problems"]
    return report


def _names_masked(value: Any) -> Any:
    """`value` with every text in it masked as a file's name is (`mask_name`): only for a
    report that found a key in a name, so a report that found none pays nothing."""
    if isinstance(value, str):
        return mask_name(value)
    if isinstance(value, dict):
        return {key: _names_masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_names_masked(item) for item in value]
    return value


def _conflict_copies(root: Path) -> list[str]:
    """Every file under `.conflicts/`, as `memctl conflicts` lists them (not a dot file nor a
    link): a note's copy, and any other file a merge moved aside (a stray file where the
    other side has a folder, docs/sync.md), which the walk of the notes never meets."""
    found: list[str] = []
    top = root / CONFLICT_DIR
    for folder, names, files in os.walk(top):
        names[:] = [name for name in names if not os.path.islink(os.path.join(folder, name))]
        here = Path(folder).relative_to(root).as_posix()
        found.extend(f"{here}/{name}" for name in files if not name.startswith(".")
                     and os.path.isfile(os.path.join(folder, name))
                     and not os.path.islink(os.path.join(folder, name)))
    return sorted(found)


def _sections(store: Store, notes: list[Note], sizes: dict[str, int], moment: datetime
              ) -> dict[str, dict[str, Any]]:
    """The parts of the report besides the pairs, the files read and the index, each `head`,
    `expired`, `field_warnings`, `tail` and `state` in the report's order, and `unnamed`:
    the parse errors of names that are not UTF-8."""
    # git's answers are waited for while the rest is made (a store of 10,000 files: ~50 ms,
    # most of it `git status`).
    git = _meanwhile(lambda: _git_state(store))
    settings = store.settings
    counts = _counters(store, [n.id for n in notes])

    totals = {
        "notes": len(notes),
        "by_type": dict(Counter(n.type for n in notes).most_common()),
        "by_project": dict(sorted(Counter(n.path.split("/", 1)[0] for n in notes).items())),
        "by_status": dict(Counter(n.status for n in notes).most_common()),
        "episodes": sum(1 for p in sizes if "/episodes/" in p),
    }

    by_id = {n.id: n for n in notes}
    top = []
    for note_id, recent in _top_accessed(store, moment - timedelta(days=TOP_RECALLED_DAYS)):
        if note_id in by_id:
            count, last = counts.get(note_id, (0, None))
            # Accesses are search hits and recalls; `recalls_30d` is the same number under
            # its older, narrower name, kept for readers of the JSON (docs/health.md).
            top.append({**_brief(by_id[note_id]), "accesses_30d": recent, "recalls_30d": recent,
                        "access_count": count, "last_accessed": last})
    top = top[:TOP_RECALLED_LIMIT]

    idle_days = float(settings.get("ttl.demote_after_days"))
    idle = timedelta(days=idle_days)
    unrecalled = []
    for note in notes:
        if note.status != "active":
            continue
        count, last = counts.get(note.id, (0, None))
        seen = last_active(note, last, moment)
        if seen is not None and moment - seen >= idle:
            unrecalled.append({**_brief(note), "last_active": format_time(seen),
                               "days": int((moment - seen).total_seconds() // 86400),
                               "access_count": count})
    unrecalled.sort(key=lambda e: (-e["days"], e["id"]))

    protect = settings.get("ttl.protect_importance")
    # Kept by a sweep: protected, or a file memctl cannot change in place (read again here,
    # for the few expired notes only: the sweep keeps such a note, docs/lifecycle.md).
    expired = [
        {**_brief(n), "expires": n.expires,
         "kept_because": "pinned" if n.pinned else
         (f"importance {n.importance}" if n.importance >= protect
          else unchangeable(store, n, moment))}
        for n in notes if n.status == "active" and n.is_expired(moment)
    ]

    limit = settings.get("memory.max_bytes")
    over = [{"project": p.split("/", 1)[0], "path": p, "bytes": size, "limit": limit}
            for p, size in sorted(sizes.items())
            if p.count("/") == 1 and p.endswith("/MEMORY.md") and size > limit]
    conflicts = [{"path": p, "project": (classify(p) or ("", ""))[1]}
                 for p in _conflict_copies(Path(store.root))]
    warnings = [{**_brief(n), "warnings": list(n.warnings)} for n in notes if n.warnings]
    invalid_ids = [{**_brief(n), "warning": w} for n in notes for w in n.warnings
                   if "is not a valid id" in w]
    paths_by_id: dict[str, list[str]] = {}
    for note in notes:
        paths_by_id.setdefault(note.id, []).append(note.path)
    duplicate_ids = [{"id": note_id, "paths": sorted(paths)}
                     for note_id, paths in sorted(paths_by_id.items()) if len(paths) > 1]
    tombstoned = [{**_brief(note), "tombstone": f"{TOMBSTONE_DIR}/{note.id}.md",
                   "message": TOMBSTONED_MESSAGE.format(id=note.id)}
                  for note in notes if f"{TOMBSTONE_DIR}/{note.id}.md" in sizes]
    links, ignored, unnamed = _links_and_ignored(store)
    return {
        "head": {"totals": totals, "top_recalled": top, "unrecalled": unrecalled,
                 "unrecalled_days": idle_days},
        "expired": expired,
        "field_warnings": warnings,
        "tail": {"memory_over_budget": over, "conflicts": conflicts, "links": links,
                 "templates": template_problems(store), "invalid_ids": invalid_ids, "duplicate_ids": duplicate_ids,
                 "supersession": supersession_problems(notes),
                 "same_fact": same_fact_problems(notes),
                 "tombstoned_notes": tombstoned, "case_twins": case_twins(store.projects()),
                 "unknown_settings": unknown_settings(store.settings), "ignored": ignored},
        "unnamed": unnamed,
        "state": {"git": git(), "watcher": _watcher_state(store)},
    }


def unknown_settings(settings: Settings) -> list[dict[str, Any]]:
    """The settings of memctl.toml memctl does not know: a typo (`recall.max_note`) looked
    applied and changed nothing. Each with the known setting it is likely meant to be."""
    import difflib  # only here: a report, not every command

    known = [f"{section}.{key}" for section, keys in SETTINGS.items() for key in keys]
    entries = []
    for dotted in settings.unknown():
        close = difflib.get_close_matches(dotted, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else f"; the settings are {SETTINGS_FILE}'s (docs/settings.md)"
        entries.append({"setting": dotted,
                        "message": f"memctl does not know this setting: it changes nothing{hint}"})
    return entries


CASE_TWINS_MESSAGE = (
    "a disk that ignores case (macOS, Windows) holds these as one folder, and a clone or sync "
    "of the store there cannot check both out: move the files of one folder into the other "
    "(a note goes by its id: moving its file is safe), then remove the empty folder")


def case_twins(projects: Sequence[str]) -> list[dict[str, Any]]:
    """Project folders whose names differ only in case (`Demo` and `demo`): memctl's own
    writes and imports never make one (`StoreFiles.case_twin`); a sync or a hand can."""
    by_key: dict[str, list[str]] = {}
    for project in projects:
        by_key.setdefault(case_key(project), []).append(project)
    return [{"projects": sorted(names), "message": CASE_TWINS_MESSAGE}
            for _key, names in sorted(by_key.items()) if len(names) > 1]


TOMBSTONED_MESSAGE = (
    "its tombstone says it was forgotten, yet the note is back: `memctl sync` keeps it (and "
    "removes the tombstone) when a commit after the tombstone's brought it back; to delete "
    "it again, `memctl forget {id}`")


def same_fact_problems(notes: Sequence[Note]) -> list[dict[str, Any]]:
    """Facts (a `subject` and a `predicate`, compared as `add` and `get` compare them) that
    more than one active note of a project states: `add` supersedes the older, but two
    machines that each added one and synced, a `restore` of a note in the middle of a chain,
    or a hand edit leave both, and `get` prints each (docs/health.md)."""
    groups: dict[tuple[str, str, str], list[Note]] = {}
    for note in notes:
        if note.status == "active" and note.subject and note.predicate:
            key = (note.project, fact_key(note.subject), fact_key(note.predicate))
            groups.setdefault(key, []).append(note)
    found = []
    for (project, _subject, _predicate), stating in sorted(groups.items()):
        if len(stating) < 2:
            continue
        stating.sort(key=lambda note: (note.updated or note.created or "", note.id))
        newest = stating[-1]
        found.append({
            "project": project, "subject": newest.subject, "predicate": newest.predicate,
            "ids": [note.id for note in stating], "paths": [note.path for note in stating],
            "message": f"{len(stating)} active notes state {newest.subject} / "
                       f"{newest.predicate}, and `memctl get` prints each: keep one, "
                       f"`memctl supersede {stating[0].id} {newest.id}` for each older one"})
    return found


def supersession_problems(notes: Sequence[Note]) -> list[dict[str, Any]]:
    """Superseded notes whose `superseded_by` leads to no live note: it names no note
    (`missing`), or the chain of superseded notes it starts comes back on itself (`cycle`,
    each note of the loop listed); or to a note of another project than theirs and `global`
    (`narrower`: a `global` note superseded by one project's is gone from every other). Such notes are hidden from `list`, `search` and `recall`
    like any superseded note, and nothing replaces them (docs/lifecycle.md). One pass: each
    note is followed once."""
    by_id = {note.id.lower(): note for note in notes}

    def next_of(note: Note) -> Note | None:
        """The superseded note this one's `superseded_by` names, if it names one."""
        target = by_id.get((note.superseded_by or "").lower())
        return target if target is not None and target.status == "superseded" else None

    found: list[dict[str, Any]] = []
    done: set[str] = set()
    for start in notes:
        if start.status != "superseded" or not start.superseded_by:
            continue
        target = by_id.get(start.superseded_by.lower())
        if target is None:
            found.append({**_brief(start), "superseded_by": start.superseded_by,
                          "problem": "missing",
                          "message": f"superseded by {start.superseded_by}, which is no note "
                                     f"here: `memctl restore {start.id}` makes it active again"})
        elif target.project not in (start.project, GLOBAL):
            # What `memctl supersede` refuses (docs/lifecycle.md), made by hand or before.
            lost = "every project" if start.project == GLOBAL else f"project {start.project}"
            found.append({**_brief(start), "superseded_by": start.superseded_by,
                          "problem": "narrower",
                          "message": f"superseded by {target.id} of project {target.project}, "
                                     f"which does not serve {lost}: `memctl restore "
                                     f"{start.id}` makes it active again"})
        path: list[Note] = []
        on_path: dict[str, int] = {}
        note: Note | None = start
        while note is not None and note.id not in done and note.id not in on_path:
            on_path[note.id] = len(path)
            path.append(note)
            note = next_of(note)
        if note is not None and note.id in on_path:  # this walk came back to itself
            loop = path[on_path[note.id]:]
            ids = ", ".join(each.id for each in loop)
            for each in loop:
                found.append({**_brief(each), "superseded_by": each.superseded_by,
                              "problem": "cycle",
                              "message": f"superseded in a loop ({ids}): each hides the other; "
                                         f"`memctl restore ID` the one that stands"})
        done.update(on_path)
    return sorted(found, key=lambda e: (e["path"], e["problem"]))


def _meanwhile(work: Callable[[], Any]) -> Callable[[], Any]:
    """`work` started in a thread; the function returned waits for it and gives its result.
    For waiting on other programs only: no fork may happen meanwhile (`_can_fork`)."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - raised again where it is waited for
            failure.append(exc)

    thread = threading.Thread(target=run, name="memctl-health-git", daemon=True)
    thread.start()

    def finished() -> Any:
        thread.join()
        if failure:
            raise failure[0]
        return result[0]

    return finished


def _links_and_ignored(store: Store
                       ) -> tuple[list[dict[str, str]], list[str], list[dict[str, Any]]]:
    """Symbolic links anywhere in the store (memctl never follows them: docs/security.md),
    the folders it does not read as memory (not a project name, or a dot folder inside a
    project), and the files and folders whose names are not UTF-8, as parse errors (no
    command reads them: memctl.core.textfile.is_utf8_name). `.git` and `.memctl` are its own
    and not listed."""
    links: list[dict[str, str]] = []
    ignored: list[str] = []
    unnamed: list[dict[str, Any]] = []
    # scandir rather than os.walk: whether an entry is a link is in the folder's listing,
    # not an lstat per file (100k files: ~0.4 s).
    stack = [(str(store.root), "")]
    while stack:
        folder, rel_folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # a folder that cannot be listed is passed over, as os.walk does
        top_level = not rel_folder
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if top_level and is_dir and name in (".git", ".memctl"):
                continue
            if not is_utf8_name(name):
                shown = escaped_name(rel_folder) + escaped_name(name) + ("/" if is_dir else "")
                unnamed.append({"path": shown, "line": 1,
                                 "message": NAME_UNREAD_HERE if _utf8_bytes(name)
                                 else NAME_NOT_UTF8})
                continue
            if entry.is_symlink():
                links.append({"path": rel_folder + name, "target": os.readlink(entry.path)})
                continue
            if not is_dir:
                continue
            if top_level and name in (TOMBSTONE_DIR, CONFLICT_DIR, ".counters", ".templates"):
                pass
            elif (top_level and not valid_project_name(name)) or (not top_level and name.startswith(".")):
                ignored.append(rel_folder + name + "/")
                continue
            stack.append((entry.path, rel_folder + name + "/"))
    return sorted(links, key=lambda link: link["path"]), sorted(ignored), unnamed


def problems_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per kind of problem found (what `--strict` fails on)."""
    problems = []
    for key, words in PROBLEM_SECTIONS:
        counted = report.get("pair_counts", {}).get(key)
        if counted is not None:  # pairs: counted by notes, listed only in part (docs/health.md)
            if counted["notes"]:
                problems.append({"kind": key, "count": counted["notes"],
                                 "message": f"{words}: {counted['notes']} notes"})
            continue
        if report.get(key):
            problems.append({"kind": key, "count": len(report[key]),
                             "message": f"{words}: {len(report[key])}"})
    drifted = report["index"]["drifted"]
    if drifted:
        problems.append({"kind": "index_drift", "count": drifted,
                         "message": f"files that differ from the index: {drifted}"})
    git = report["git"]
    failures = [text for text in (git["error"], git["blocked"]) if text]
    if failures:
        problems.append({"kind": "git", "count": len(failures),
                         "message": f"git: {'; '.join(failures)}"})
    if git["uncommitted"]:
        problems.append({"kind": "uncommitted", "count": len(git["uncommitted"]),
                         "message": f"uncommitted changes in the store: {len(git['uncommitted'])}"})
    if git["unpushed"]:
        problems.append({"kind": "unpushed", "count": git["unpushed"],
                         "message": f"commits not pushed to {git['remote']}: {git['unpushed']}"})
    return problems


def _counters(store: Store, ids: list[str]) -> dict[str, tuple[int, str | None]]:
    return get_counters(store, ids)


def _top_accessed(store: Store, since: datetime) -> list[tuple[str, int]]:
    # Ask for more than shown: counted ids may belong to notes deleted since.
    return top_accessed(store, since, limit=TOP_RECALLED_LIMIT * 3)


def report_month(report: dict[str, Any]) -> str:
    moment = parse_time(report["generated"])
    return moment.strftime("%Y-%m") if moment else "unknown"


# --- the Markdown report ------------------------------------------------------------------


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    if not rows:
        return ["_none_", ""]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def bar(count: int, largest: int, width: int = 20) -> str:
    """A bar of `width` cells at most, never empty for a non-zero count."""
    if largest <= 0 or count <= 0:
        return ""
    return "█" * max(1, round(width * count / largest))


def to_markdown(report: dict[str, Any]) -> str:
    """The report as a dated Markdown document (`memctl health --markdown FILE`)."""
    day = report["generated"][:10]
    totals = report["totals"]
    out = [f"# memctl health report — {day}", "",
           f"Store `{report['store']}`, generated {report['generated']}.", ""]
    if report["problems"]:
        out += ["**Problems:** " + "; ".join(p["message"] for p in report["problems"]) + ".", ""]
    else:
        out += ["**No problems found.**", ""]
    out += [f"## Totals: {totals['notes']} notes, {totals['episodes']} episodes", ""]
    if totals.get("last_good"):
        out += [f"And {totals['last_good']} more listed and searched from their last good "
                "version: their files do not parse (below).", ""]
    largest = max(totals["by_type"].values(), default=0)
    out += _table(["type", "notes", ""],
                  [[k, v, bar(v, largest)] for k, v in totals["by_type"].items()])
    out += _table(["project", "notes"], [[k, v] for k, v in totals["by_project"].items()])
    out += _table(["status", "notes"], [[k, v] for k, v in totals["by_status"].items()])
    out += [f"## Most accessed by search or recall in the last {TOP_RECALLED_DAYS} days", ""]
    out += _table(["id", "project", "accesses", "title"],
                  [[e["id"], e["project"], e["accesses_30d"], e["title"]]
                   for e in report["top_recalled"]])
    out += [f"## Idle {report['unrecalled_days']:g}+ days: no search hit, recall or edit "
            f"({len(report['unrecalled'])})", ""]
    out += _table(["id", "project", "days", "title"],
                  [[e["id"], e["project"], e["days"], e["title"]] for e in report["unrecalled"]])
    for key, heading in (("contradictions", "Possible contradictions"),
                         ("near_duplicates", "Near-duplicates")):
        notes = report.get("pair_counts", {}).get(key, {}).get("notes", 0)
        if notes:
            heading += f": {notes} notes (the {len(report[key])} most alike pairs)"
        out += [f"## {heading}", ""]
        out += _table(["a", "b", "score", "why", "texts"],
                      [[e["a"]["id"], e["b"]["id"], e["score"], ", ".join(e["reasons"]),
                        f"{e['a']['title']} / {e['b']['title']}"] for e in report[key]])
    out += ["## Expired, not archived", ""]
    out += _table(["id", "project", "expires", "kept because", "title"],
                  [[e["id"], e["project"], e["expires"], e["kept_because"] or "", e["title"]]
                   for e in report["expired"]])
    out += ["## Files that do not parse", ""]
    out += _table(["where", "problem"],
                  [[f"{e['path']}:{e['line']}", e["message"]] for e in report["parse_errors"]])
    out += ["## Values memctl cannot read", ""]
    out += _table(["id", "path", "warnings"],
                  [[e["id"], e["path"], "; ".join(e["warnings"])]
                   for e in report["field_warnings"]])
    out += ["## Likely secrets (masked)", ""]
    out += _table(["where", "kind", "text"],
                  [[f"{e['path']}:{e['line']}", e["kind"], f"`{e['masked']}`"]
                   for e in report["secrets"]])
    out += ["## MEMORY.md over budget", ""]
    out += _table(["path", "bytes", "limit"],
                  [[e["path"], e["bytes"], e["limit"]] for e in report["memory_over_budget"]])
    out += ["## Symbolic links (never followed)", ""]
    out += _table(["path", "points to"], [[e["path"], e["target"]] for e in report["links"]])
    out += ["## Note templates to fix", ""]
    out += _table(["path", "problem"], [[e["path"], e["problem"]] for e in report["templates"]])
    out += ["## Ids that are not valid", ""]
    out += _table(["path", "problem"], [[e["path"], e["warning"]] for e in report["invalid_ids"]])
    out += ["## Ids used by more than one file", ""]
    out += _table(["id", "files"], [[e["id"], ", ".join(e["paths"])] for e in report["duplicate_ids"]])
    out += ["## Git conflict markers", ""]
    out += _table(["where", "problem"], [[f"{e['path']}:{e['line']}", e["message"]]
                                         for e in report["conflict_markers"]])
    out += ["## Supersessions that lead nowhere", ""]
    out += _table(["id", "path", "problem"], [[e["id"], e["path"], e["message"]]
                                              for e in report["supersession"]])
    out += ["## Facts stated by more than one active note", ""]
    out += _table(["notes", "problem"], [[", ".join(e["ids"]), e["message"]]
                                         for e in report["same_fact"]])
    out += ["## Projects whose names differ only in case", ""]
    out += _table(["projects", "problem"], [[", ".join(e["projects"]), e["message"]]
                                            for e in report["case_twins"]])
    out += ["## Settings memctl does not know", ""]
    out += _table(["setting", "problem"], [[e["setting"], e["message"]]
                                           for e in report["unknown_settings"]])
    out += ["## Live notes beside their tombstone", ""]
    out += _table(["id", "path", "tombstone"], [[e["id"], e["path"], e["tombstone"]]
                                                for e in report["tombstoned_notes"]])
    out += ["## Folders memctl does not read", ""]
    out += _table(["folder"], [[path] for path in report["ignored"]])
    out += ["## Conflict copies", ""]
    out += _table(["path", "project"], [[e["path"], e["project"]] for e in report["conflicts"]])
    index, git = report["index"], report["git"]
    out += ["## Index and git", "",
            f"- index: {index['indexed_docs']} notes indexed; {index['drifted']} files differ "
            f"from it after the update ({index['changed_since_last_update']} had changed "
            "since the previous command)",
            f"- git: branch {git['branch'] or '-'}, {len(git['uncommitted'])} uncommitted "
            f"changes, remote {git['remote'] or 'none'}"
            + (f", {git['unpushed']} unpushed commits" if git["unpushed"] is not None else ""),
            ]
    if git["error"]:
        out.append(f"- git error: {git['error']}")
    return "\n".join(out) + "\n"
