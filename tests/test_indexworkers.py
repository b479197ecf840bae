"""Parsing in worker processes: the same results as one process, in the same order, and
nothing lost when a worker dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memctl.index.docs import MAX_INDEXED_BYTES, prepare_file
from memctl.index.workers import CHUNK, MAX_WORKERS, prepare_all, worker_count

FILES = 3 * CHUNK + 17  # chunks for both workers, and a short last one


def _items(root: Path) -> list[tuple[str, str, str, str | None]]:
    items = []
    for number in range(FILES):
        rel = f"blog/notes/fact/n{number:04d}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if number % 97 == 5:
            path.write_bytes(b"---\nid: [unclosed\n---\nbroken front matter\n")  # an error
        elif number % 89 == 3:
            pass  # listed but not there (deleted since the walk): "gone"
        else:
            path.write_text(f"---\nid: n{number:04d}\ntype: fact\ntags: [t{number % 7}]\n---\n"
                            f"第{number}条：连接池大小为 {number}。\n", encoding="utf-8")
        items.append((rel, "note", "blog", "same-hash" if number == 11 else None))
    return items


def _as_tuples(prepared: list) -> list[tuple]:
    return [(p.path, p.kind, p.outcome, p.mtime_ns, p.ctime_ns, p.size, p.digest, p.error_line, p.error,
             [list(row) for row in p.rows]) for p in prepared]


@pytest.fixture
def items(tmp_path: Path) -> list[tuple[str, str, str, str | None]]:
    return _items(tmp_path)


def test_workers_give_what_one_process_gives(tmp_path: Path, items: list,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "2")
    sequential = [prepare_file(str(tmp_path), *item, MAX_INDEXED_BYTES) for item in items]
    parallel = list(prepare_all(str(tmp_path), items, parallel_min=1))
    assert _as_tuples(parallel) == _as_tuples(sequential)
    outcomes = {p.outcome for p in parallel}
    assert outcomes == {"docs", "error", "gone"}
    assert not _children(), "every worker was waited for"


def test_a_worker_killed_midway_costs_nothing_but_time(tmp_path: Path, items: list,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "2")
    results = prepare_all(str(tmp_path), items, parallel_min=1)
    first = next(results)  # the workers are running now
    workers = _children()
    assert len(workers) == 2
    os.kill(workers[1], signal.SIGKILL)
    rest = list(results)
    expected = [prepare_file(str(tmp_path), *item, MAX_INDEXED_BYTES) for item in items]
    assert _as_tuples([first, *rest]) == _as_tuples(expected)
    assert not _children()


def test_stopping_early_leaves_no_worker_behind(tmp_path: Path, items: list,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "2")
    results = prepare_all(str(tmp_path), items, parallel_min=1)
    next(results)
    assert _children()
    results.close()  # what happens when the caller fails while writing
    assert not _children()


def test_a_huge_worker_count_forks_no_more_workers_than_chunks(
        tmp_path: Path, items: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCTL_INDEX_WORKERS=300 forked 300 processes for a reindex of a few chunks."""
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "300")
    results = prepare_all(str(tmp_path), items, parallel_min=1)
    first = next(results)
    assert len(_children()) == -(-FILES // CHUNK)  # one per chunk: 4
    rest = list(results)
    expected = [prepare_file(str(tmp_path), *item, MAX_INDEXED_BYTES) for item in items]
    assert _as_tuples([first, *rest]) == _as_tuples(expected)
    assert not _children()
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "300")
    assert worker_count() == MAX_WORKERS


def _children() -> list[int]:
    """Live (not yet reaped) child processes of this process."""
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            text = Path(f"/proc/self/task/{task}/children").read_text()
        except OSError:
            continue
        found.extend(int(pid) for pid in text.split())
    return sorted(found)


def test_no_pipe_to_be_had_means_parsing_here(tmp_path: Path, items: list) -> None:
    """A process at its limit of open files (pipe() fails with EMFILE) parses every chunk
    itself: the same results, no traceback, no worker."""
    probe = (
        "import os, resource, sys\n"
        "from memctl.index.docs import MAX_INDEXED_BYTES, prepare_file\n"
        "from memctl.index.workers import prepare_all\n"
        "root, items = sys.argv[1], [tuple(line.split('|')) for line in sys.stdin.read().split()]\n"
        "items = [(p, k, pr, None) for p, k, pr, _ in items]\n"
        "expected = [prepare_file(root, *i, MAX_INDEXED_BYTES).digest for i in items]\n"
        "free = os.open(os.devnull, os.O_RDONLY); os.close(free)  # the lowest free number\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (free + 1, hard))  # one file at a time\n"
        "try:\n    os.pipe()\nexcept OSError:\n    pass\nelse:\n    sys.exit('pipe() still works')\n"
        "got = [p.digest for p in prepare_all(root, items, parallel_min=1)]\n"
        "assert got == expected, 'results differ'\n"
        "print(len(got), sum(1 for d in got if d))\n"
    )
    lines = "\n".join(f"{path}|{kind}|{project}|-" for path, kind, project, _ in items)
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], input=lines, text=True,
                          capture_output=True, env={**os.environ, "MEMCTL_INDEX_WORKERS": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    total, read = map(int, done.stdout.split())
    assert total == len(items) and read > total // 2
