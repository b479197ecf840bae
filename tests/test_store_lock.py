"""The store lock stays one writer at a time when `.memctl/` (or only `.memctl/lock`) is
deleted while commands run (docs/reliability.md, "One writer at a time").

Deleting the folder used to let a newcomer lock a fresh `.memctl/lock` while the holder still
ran on the deleted one: two commits raced for HEAD (`cannot lock ref 'HEAD'`, reported as a
failure although the note was committed), and the newcomer took the live holder's record for
a dead one's and removed its temp files. Real processes and real flocks here, no mocks."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import memctl_executable, run_memctl, tree_snapshot

from memctl.disk.locking import crashed_holder, store_lock

WRITERS = 12


def git_lines(root: Path, *args: str) -> list[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_writers_racing_a_deleted_state_folder_commit_one_at_a_time(store_path: Path) -> None:
    """Twelve `memctl add` at once while `.memctl/` is deleted again and again: each says
    the truth (exit 0 and its note committed, or exit 1 and not), one commit per success,
    and nothing is left behind."""
    env = dict(os.environ, MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="demo")
    base = len(git_lines(store_path, "rev-list", "HEAD"))
    words = [f"lockrace{number}x" for number in range(WRITERS)]
    procs = [subprocess.Popen([memctl_executable(), "add", f"parallel note {word} unique",
                               "--force", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for word in words]
    deadline = time.monotonic() + 60
    while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
        time.sleep(0.08)
        shutil.rmtree(store_path / ".memctl", ignore_errors=True)
    outputs = [proc.communicate(timeout=60) for proc in procs]
    results = [(word, proc.returncode, out, err)
               for word, proc, (out, err) in zip(words, procs, outputs, strict=True)]

    committed = "\n".join(git_lines(store_path, "log", "--name-only", "--format="))
    succeeded = []
    for word, code, _out, err in results:
        assert code in (0, 1), (word, code, err)
        assert "cannot lock ref" not in err and "No such file or directory" not in err, err
        if code == 0:
            succeeded.append(word)
            assert committed.count(word) == 1, (word, committed)
        else:
            assert err.startswith("error: ") and err.count("\n") == 1, err
            assert word not in committed, (word, err)  # it said it failed: it did not commit
    assert len(git_lines(store_path, "rev-list", "HEAD")) - base == len(succeeded)
    assert git_lines(store_path, "status", "--porcelain", "--untracked-files=all") == []
    assert not list((store_path / ".git").glob("*.lock"))


def test_a_newcomer_waits_for_a_holder_whose_state_folder_was_deleted(store_path: Path) -> None:
    """The holder's lock survives `rm -rf .memctl`: a command started after it waits (here
    until its timeout) instead of writing and committing beside the holder."""
    before = tree_snapshot(store_path)
    with store_lock(store_path, "archive"):
        shutil.rmtree(store_path / ".memctl")
        result = run_memctl("add", "written beside a live holder", store=store_path,
                            env={"MEMCTL_LOCK_TIMEOUT": "1"})
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: the store is locked by "), result.stderr
    assert {path: data for path, data in tree_snapshot(store_path).items()
            if not path.startswith(".memctl")} == \
        {path: data for path, data in before.items() if not path.startswith(".memctl")}


def descriptors_open_on(path: Path) -> int:
    count = 0
    for entry in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(entry) == str(path)
        except OSError:
            pass
    return count


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the wait")
def test_a_lock_taken_on_a_deleted_lock_file_is_taken_again_on_the_file_there(
        store_path: Path) -> None:
    """A waiter that opened `.memctl/lock` before it was replaced gets the flock on the old
    file when its holder lets go: it must not enter while the file at the path is locked."""
    lock = store_path / ".memctl" / "lock"
    old = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(old, fcntl.LOCK_EX)
    entered, leave = threading.Event(), threading.Event()

    def waiter() -> None:
        with store_lock(store_path, "waiter", timeout=20):
            entered.set()
            leave.wait(20)

    thread = threading.Thread(target=waiter)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while descriptors_open_on(lock) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the waiter has the old file open
        assert descriptors_open_on(lock) >= 2
        lock.unlink()
        new = os.open(lock, os.O_RDWR | os.O_CREAT)
        fcntl.flock(new, fcntl.LOCK_EX)
        fcntl.flock(old, fcntl.LOCK_UN)
        os.close(old)
        assert not entered.wait(1.0), "entered on the deleted file while the new one is locked"
        fcntl.flock(new, fcntl.LOCK_UN)
        assert entered.wait(10)
        held = os.stat(lock)
        os.close(new)
        assert held.st_ino == os.stat(lock).st_ino
    finally:
        leave.set()
        thread.join(20)


def is_zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0] == b"Z"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc to see a zombie")
@pytest.mark.parametrize("holder", ["alive", "exited", "zombie"])
def test_only_a_holder_that_no_longer_runs_is_taken_for_a_crashed_one(
        store_path: Path, holder: str) -> None:
    """A `lock.info` found on taking the lock is a crash only when its pid runs no more
    (a zombie, killed and not yet waited for, counts as dead): a live holder's record taken
    for a crash let the next commit remove that live command's temp files and git locks."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        if holder == "exited":
            proc.kill()
            proc.wait()
        elif holder == "zombie":
            proc.kill()
            deadline = time.monotonic() + 10
            while not is_zombie(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert is_zombie(proc.pid)
        info = store_path / ".memctl" / "lock.info"
        info.write_text(f'{{"pid": {proc.pid}, "command": "add", "since": 1}}')
        with store_lock(store_path, "add"):
            found = crashed_holder(store_path)
        if holder == "alive":
            assert found is None
        else:
            assert found is not None and found["pid"] == proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_child_forked_while_the_lock_is_held_does_not_keep_it(store_path: Path) -> None:
    """A process forked while the store lock is held (a health or reindex worker of `memctl
    mcp`) shares its descriptors: the holder lets go of both flocks when it leaves the lock,
    so the next writer need not wait for that child to end."""
    with store_lock(store_path, "test"):
        child = os.fork()
        if child == 0:  # the child: outlives the holder's lock, does nothing with it
            time.sleep(5)
            os._exit(0)
    try:  # no wait at all: the lock is free the moment the holder leaves it
        with store_lock(store_path, "next", timeout=0):
            pass
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "-inf"])
def test_a_lock_timeout_that_is_no_number_of_seconds_is_bad_usage(store_path, value):
    """MEMCTL_LOCK_TIMEOUT is read as MEMCTL_MCP_END_WAIT is (memctl.core.clock.seconds_setting):
    a bad value is one `error:` line naming it and exit 2, as any bad environment variable
    (a negative one was taken as 0, a word was exit 1), and the store is left as it was;
    `inf` still waits for ever, so a store that is not locked takes the note."""
    before = tree_snapshot(store_path)
    result = run_memctl("add", "a note", store=store_path, env={"MEMCTL_LOCK_TIMEOUT": value})
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: invalid value for MEMCTL_LOCK_TIMEOUT: ")
    assert len(result.stderr.strip().splitlines()) == 1 and tree_snapshot(store_path) == before
    kept = run_memctl("add", "a note", store=store_path, env={"MEMCTL_LOCK_TIMEOUT": "inf"})
    assert kept.exit_code == 0, kept.stderr
