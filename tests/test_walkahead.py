"""The freshness walk in helper processes (memctl/disk/filescan.py, `walk_ahead` and
`scan_folders`; docs/search.md, "Never stale").

Real forked helpers on a real tree: what they find together is what the walk made in one
process finds, file for file; a helper killed, a process with another thread or a walk of
another folder leave the command to walk alone, with the same answer; and `memctl search`,
which starts the walk before its own imports, finds a note written, edited or deleted just
before it and prints what it prints with the walk ahead turned off."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import memctl_executable, python_lines, run_memctl, write_memory_file

from memctl.disk import filescan

# Runs in a fresh interpreter (no thread of pytest's, nothing imported before), prints the
# helpers' walk and the walk made in one process as Python literals.
WALK = """
import os, signal, sys, threading, time
from memctl.disk import filescan
root, mode = sys.argv[1], sys.argv[2]
if mode == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
started = filescan.walk_ahead(root, helpers=2)
ahead = filescan._ahead
if mode == "drained":
    # Every record taken by the helpers: the command gathers their answers alone.
    import fcntl, termios
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and int.from_bytes(fcntl.ioctl(
            ahead.queue, termios.FIONREAD, bytes(4)), sys.byteorder):
        time.sleep(0.01)
finished = None
if mode == "killed":
    # A helper stopped, then killed, before it could send its whole answer (one that ended
    # on its own first is not what this tests: the walk is started again).
    for attempt in range(20):
        pid = ahead.helpers[0][0]
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1][1:2]
            if state in (b"T", b"t", b"Z"):
                break
        if state != b"Z":
            os.kill(pid, signal.SIGKILL)
            break
        ahead.abandon()
        filescan.walk_ahead(root, helpers=2)
        ahead = filescan._ahead
    filescan._ahead = None
    finished = ahead.finish(root)
if mode == "other-folder":
    walked = filescan.scan_folders(root + "/project-03")
else:
    walked = filescan.scan_folders(root + "/." if mode == "other-name" else root)
filescan.reap_helpers()  # as at the command's exit: helpers that answered, still exiting
leftover = []
try:
    while True:
        leftover.append(os.waitpid(-1, os.WNOHANG))
        if leftover[-1][0] == 0:
            break  # a child still running
except ChildProcessError:
    pass
print(repr(started))
print(repr(None if finished is None else sorted(finished.digests)))
print(repr(sorted((folder, sorted(keys)) for folder, keys in walked.as_scan().items())))
print(repr(walked.digests))
print(repr(walked.files))
serial = filescan.scan(root if mode != "other-folder" else root + "/project-03")
print(repr(sorted((folder, sorted(keys)) for folder, keys in serial.items())))
entries = filescan.scan_entries(root if mode != "other-folder" else root + "/project-03")
print(repr({folder: filescan.entries_digest(found) for folder, found in entries.items()}))
print(repr(sum(map(len, entries.values()))))
print(repr(leftover))
"""


def walk(root: Path, mode: str = "") -> dict[str, object]:
    lines = python_lines(WALK.replace("sys.argv[1], sys.argv[2]", f"{str(root)!r}, {mode!r}"))
    names = ("started", "finished", "keys", "digests", "files", "serial_keys",
             "serial_digests", "serial_files", "leftover")
    return dict(zip(names, map(ast.literal_eval, lines), strict=True))


def make_tree(root: Path) -> None:
    """A store's shape with everything the walk must tell apart: nested folders, dot files and
    folders, other files, links, a folder named like a note, names no project may have, a
    file name that is not UTF-8, an unreadable folder."""
    for number in range(12):
        project = root / f"project-{number:02d}"
        for kind in ("fact", "rule", "decision"):
            for index in range(number % 4 + 1):
                write_memory_file(project, f"notes/{kind}/note-{index}.md", f"note {index}")
        write_memory_file(project, "episodes/2026-11/2026-11-30-run.md", "an episode")
        write_memory_file(project, "MEMORY.md", "# memory")
    alpha = root / "project-00"
    write_memory_file(alpha, "deep/a/b/c/d/far.md", "far down")
    write_memory_file(alpha, "notes/.hidden.md", "a dot file")
    write_memory_file(alpha, ".drafts/draft.md", "in a dot folder")
    write_memory_file(alpha, "notes/readme.txt", "not markdown")
    write_memory_file(alpha, "notes/UPPER.MD", "upper case suffix")
    (alpha / "notes" / "folder.md").mkdir()
    write_memory_file(alpha, "notes/folder.md/inside.md", "in a folder named like a note")
    (alpha / "notes" / "link.md").symlink_to(alpha / "notes" / "fact" / "note-0.md")
    (alpha / "linked-folder").symlink_to(root / "project-01")
    (root / "linked-project").symlink_to(root / "project-02")
    (alpha / "notes" / os.fsdecode(b"caf\xe9-latin1.md")).write_text("not UTF-8\n")
    # Names beyond ASCII, in every UTF-8 length: the walk hashes them as bytes, which must
    # sort the same way whoever lists them (memctl.disk.filescan.entries_digest).
    for name in ("z", "é", "数据库", "\ufffd", "\U0001f600", "a\u00e9", "a~"):
        write_memory_file(alpha, f"notes/fact/{name}.md", f"named {name}")
    locked = alpha / "locked"
    write_memory_file(locked, "inside.md", "behind a folder nobody may read")
    locked.chmod(0)
    write_memory_file(root, ".tombstones/gone.md", "a tombstone")
    write_memory_file(root, ".git/x.md", "git's")
    write_memory_file(root, "top-level.md", "a top-level file")
    write_memory_file(root, "-dash-first/x.md", "a name no project may have")
    write_memory_file(root, "with space/x.md", "a name no project may have")
    write_memory_file(root, "global/notes/fact/g.md", "global")
    (root / "empty-project").mkdir()


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root)
    yield root
    (root / "project-00" / "locked").chmod(0o755)


def same_as_serial(found: dict[str, object]) -> None:
    assert found["keys"] == found["serial_keys"]
    assert found["digests"] == found["serial_digests"]
    assert found["files"] == found["serial_files"]
    assert found["leftover"] == []  # every helper waited for


def test_the_helpers_find_what_the_walk_in_one_process_finds(tree: Path) -> None:
    found = walk(tree)
    assert found["started"] is True
    same_as_serial(found)
    folders = {folder for folder, _ in found["keys"]}
    assert "project-00/deep/a/b/c/d/" in folders and "global/notes/fact/" in folders
    assert "project-00/notes/folder.md/" in folders
    assert not any(folder.startswith(("-dash-first/", "with space/", ".", "linked-project/",
                                      "project-00/linked-folder/", "project-00/.drafts/"))
                   for folder in folders)
    keys = {key.split("\t")[0] for _, folder_keys in found["keys"] for key in folder_keys}
    assert "project-00/notes/UPPER.MD" in keys
    assert "project-00/notes/link.md" not in keys and "project-00/notes/.hidden.md" not in keys
    # A name that is not UTF-8 is no memory (memctl.disk.layout.classify), in every walk.
    assert os.fsdecode(b"project-00/notes/caf\xe9-latin1.md") not in keys


def test_answers_gathered_from_the_helpers_alone_are_the_same(tree: Path) -> None:
    found = walk(tree, "drained")
    assert found["started"] is True
    same_as_serial(found)


def test_a_helper_killed_leaves_the_command_to_walk_alone(tree: Path) -> None:
    found = walk(tree, "killed")
    assert found["started"] is True
    assert found["finished"] is None  # the helpers' walk is refused as a whole
    same_as_serial(found)


def test_no_helper_is_forked_in_a_process_with_another_thread(tree: Path) -> None:
    found = walk(tree, "thread")
    assert found["started"] is False  # `memctl mcp` and `memctl watch` have threads
    same_as_serial(found)


def test_a_walk_ahead_serves_only_its_own_folder(tree: Path) -> None:
    found = walk(tree, "other-folder")  # started for the store, asked for another folder
    assert found["started"] is True
    same_as_serial(found)
    found = walk(tree, "other-name")  # the same folder by another name is the same walk
    same_as_serial(found)


def test_the_walk_ahead_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_WALK_WORKERS", "0")
    assert filescan.walk_workers() == 0
    monkeypatch.setenv("MEMCTL_WALK_WORKERS", "2")
    assert filescan.walk_workers() == 2
    monkeypatch.setenv("MEMCTL_WALK_WORKERS", "many")
    assert filescan.walk_workers() == 0


def test_the_walk_ahead_forks_at_most_16_helpers_whatever_the_variable_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCTL_WALK_WORKERS=1000 forked one helper per top-level folder of the store (up to
    1,023) for every search; MEMCTL_INDEX_WORKERS stops at 16, and so does this one."""
    monkeypatch.setenv("MEMCTL_WALK_WORKERS", "1000")
    assert filescan.walk_workers() == 16
    for number in range(40):
        (tmp_path / f"p{number}" / "notes").mkdir(parents=True)
    counted = subprocess.run(
        [sys.executable, "-c", "import sys; from memctl.disk import filescan; "
         "filescan.walk_ahead(sys.argv[1]); print(len(filescan._ahead.helpers) if filescan._ahead "
         "else 0); filescan._abandon_at_exit()", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=True)
    assert int(counted.stdout) == 16, counted.stderr


# `memctl ARGS` as the console script runs it, recording whether the walk started ahead.
SEARCH = """
import atexit, sys
mark = sys.argv.pop(1)
import memctl.services.walkahead as walkahead
started = []
real = walkahead.walk_ahead
walkahead.walk_ahead = lambda *args: started.append(real(*args)) or started[-1]
atexit.register(lambda: open(mark, "w").write(repr(started)))
sys.argv[0] = "memctl"
from memctl.cli import main
main()
"""


def test_a_search_sees_every_change_made_just_before_it(store_path: Path, tmp_path: Path) -> None:
    """20 rounds of a note written, edited in place or deleted right before `memctl search`:
    the search, with its walk ahead, always sees the change, and prints exactly what it
    prints with the walk ahead turned off."""
    def base(number: int, word: str) -> None:  # the same size whatever the 7-letter word
        write_memory_file(store_path, f"project-{number}/notes/fact/base-{number}.md",
                          f"a note about the {word} number {number}",
                          title=f"Base {number}", type="fact")

    for number in range(6):
        base(number, "harbour")
    env = dict(os.environ, MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="project-0",
               MEMCTL_WALK_WORKERS="1")
    assert run_memctl("search", "harbour", "--all-projects", store=store_path).exit_code == 0
    mark = tmp_path / "mark"
    written: dict[int, str] = {}
    for round_number in range(20):
        word = "zq" + "abcdefghijklmnopqrst"[round_number] * 5
        project = round_number % 6
        if round_number % 3 == 0:  # a new note
            wanted: str | None = f"project-{project}/notes/fact/new-{round_number}.md"
            write_memory_file(store_path, wanted, f"the {word} stands",
                              title=f"New {round_number}", type="fact")
            written[round_number] = word
        elif round_number % 3 == 1:  # an edit in place, the same size
            before = (store_path / f"project-{project}/notes/fact/base-{project}.md").stat()
            base(project, word)
            wanted = f"project-{project}/notes/fact/base-{project}.md"
            assert (store_path / wanted).stat().st_size == before.st_size
        else:  # the note written two rounds ago, deleted
            (store_path / f"project-{(round_number - 2) % 6}/notes/fact/"
                          f"new-{round_number - 2}.md").unlink()
            word, wanted = written[round_number - 2], None
        args = ["search", word, "--all-projects", "--json"]
        ahead = subprocess.run([sys.executable, "-c", SEARCH, str(mark), *args], env=env,
                               capture_output=True)
        assert ahead.returncode == 0, ahead.stderr
        assert mark.read_text() == "[True]"  # the walk was made by the helpers
        paths = [hit["path"] for hit in json.loads(ahead.stdout)]
        assert paths == ([wanted] if wanted else []), (round_number, paths)
        alone = subprocess.run([memctl_executable(), *args], capture_output=True,
                               env=dict(env, MEMCTL_WALK_WORKERS="0"))
        assert (alone.returncode, alone.stdout, alone.stderr) == \
            (ahead.returncode, ahead.stdout, ahead.stderr)


# `memctl ARGS` as the console script runs it; at its exit, after memctl's own exit
# functions, whether any child process is left.
CHILDREN_AT_EXIT = """
import atexit, os, sys
mark = sys.argv.pop(1)
def children() -> None:
    try:
        os.waitpid(-1, os.WNOHANG)
        left = "children left"
    except ChildProcessError:
        left = "no child"
    open(mark, "w").write(left)
atexit.register(children)
sys.argv[0] = "memctl"
from memctl.cli import main
main()
"""


def test_a_search_that_fails_before_its_walk_leaves_no_helper(store_path: Path,
                                                               tmp_path: Path) -> None:
    for number in range(4):
        write_memory_file(store_path, f"project-{number}/notes/fact/n.md", "a note", type="fact")
    mark = tmp_path / "mark"
    env = dict(os.environ, MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="project-0",
               MEMCTL_WALK_WORKERS="1")
    failed = subprocess.run([sys.executable, "-c", CHILDREN_AT_EXIT, str(mark), "search",
                             "note", "--since", "someday"], env=env, capture_output=True,
                            text=True)
    assert failed.returncode == 2 and failed.stderr.startswith("error: "), failed.stderr
    assert mark.read_text() == "no child"


# The query of a search runs while the helpers walk (memctl.index.db.fresh_during); here,
# while it runs, another process indexes a note written meanwhile: the walk then finds
# nothing to change, and only the index's own counter of commits tells the query is stale.
QUERY_WHILE_WALKING = """
import sys
from memctl.disk import filescan
from memctl.index import db
root = sys.argv[1]
db.ensure_fresh(root).close()
print(filescan.walk_ahead(root, helpers=1))
calls = []
def work(index):
    if not calls:
        with open(root + "/project-1/notes/fact/meanwhile.md", "w") as handle:
            handle.write("---\\ntype: fact\\n---\\nwritten while the query ran\\n")
        other = db.open_index(root)
        other.refresh()
        other.close()
    calls.append(1)
    return [path for (path,) in index.conn.execute("SELECT path FROM files ORDER BY path")]
index, paths = db.fresh_during(root, work)
print(len(calls))
print("project-1/notes/fact/meanwhile.md" in paths)
"""


def test_a_query_run_while_the_helpers_walk_is_run_again_when_the_index_changed(
        store_path: Path) -> None:
    for number in range(4):
        write_memory_file(store_path, f"project-{number}/notes/fact/n.md", "a note", type="fact")
    assert python_lines(QUERY_WHILE_WALKING.replace("sys.argv[1]", repr(str(store_path)))) \
        == ["True", "2", "True"]


def test_only_a_search_no_live_watcher_answers_starts_a_walk(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    from memctl.cli.served import walk_root

    store = tmp_path / "store"
    heartbeat = store / ".memctl" / "watch.json"
    heartbeat.parent.mkdir(parents=True)
    args = ["--store", str(store), "search", "postgres"]
    assert walk_root(args) == str(store)  # no heartbeat: no watcher
    heartbeat.write_text("{}")
    assert walk_root(args) is None  # a heartbeat of now: the watcher's cookies answer
    monkeypatch.setenv("MEMCTL_ALWAYS_WALK", "1")
    assert walk_root(args) == str(store)
    monkeypatch.delenv("MEMCTL_ALWAYS_WALK")
    stale = heartbeat.stat().st_mtime - 3600
    os.utime(heartbeat, (stale, stale))
    assert walk_root(args) == str(store)  # a watcher gone an hour ago
    monkeypatch.setenv("MEMCTL_STORE", str(store))
    assert walk_root(["search", "postgres"]) == str(store)
    assert walk_root(["list", "--json"]) is None
    assert walk_root(["add", "search", "the", "docs"]) is None


# A helper's answer read through a pipe of 4 KiB (reads of at most 4 KiB): small frames, one of
# 40 MB, the end mark, each cut anywhere by the pipe.
FRAMES = """
import fcntl, os, sys
from memctl.disk import filescan
from memctl.disk.forking import write_all
big = 40 << 20
read_end, write_end = os.pipe()
fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
pid = os.fork()
if pid == 0:
    os.close(read_end)
    for number in range(3):
        write_all(write_end, (5).to_bytes(8, "big") + b"small")
    write_all(write_end, big.to_bytes(8, "big"))
    for _ in range(big >> 20):
        write_all(write_end, b"x" * (1 << 20))
    write_all(write_end, (3).to_bytes(8, "big") + b"end" + filescan._END)
    os._exit(0)
os.close(write_end)
frames = filescan._read_frames(read_end)
os.waitpid(pid, 0)
print([len(frame) for frame in frames], frames[0], frames[3].count(b"x"), frames[-1])
"""


def test_a_helpers_answer_is_read_in_time_linear_in_its_size() -> None:
    """Each byte of an answer is copied once however the pipe cuts it: copying what was left
    of the buffer at each read made a frame of n bytes cost n² / (bytes a read), here ~200 GB
    of copying, minutes. No time is measured: that fails by the timeout
    (tests/test_linear_time.py)."""
    big = 40 << 20
    printed = subprocess.run([sys.executable, "-c", FRAMES], capture_output=True, text=True,
                             timeout=60, check=True).stdout.strip()
    assert printed == f"[5, 5, 5, {big}, 3] b'small' {big} b'end'"
