"""A memctl killed while its git child writes: what is left behind, and the next command.

A `git` placed first on PATH kills the memctl that runs it (SIGKILL, as a crash or an OOM
kill would) at a chosen subcommand; the real parts are real (a bare remote, clones, the
installed `memctl`). Where git itself would be cut half way through writing files, the test
leaves exactly that state on disk (a few files of the new commit, one half written, git's
index lock, the dead holder's lock.info) and runs the next command. docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, memctl_executable, run_memctl

NOW = "2026-11-30T09:00:00Z"

KILLING_GIT = """#!{python}
import os, signal, sys
args = sys.argv[1:]
# memctl runs `git -C ROOT -c core.quotepath=off SUBCOMMAND ...`
if len(args) > 4 and args[4] == os.environ.get("KILL_AT"):
    os.kill(os.getppid(), signal.SIGKILL)
    sys.exit(137)
os.execv({git!r}, [{git!r}, *args])
"""


def killing_env(tmp_path: Path, subcommand: str) -> dict[str, str]:
    folder = tmp_path / "killing-git"
    folder.mkdir(exist_ok=True)
    script = folder / "git"
    script.write_text(KILLING_GIT.format(python=sys.executable, git=shutil.which("git")))
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "KILL_AT": subcommand,
            "MEMCTL_NOW": NOW}


def add_notes(store: Path, count: int, word: str) -> None:
    for number in range(count):
        result = run_memctl("add", f"{word} note number {number} about the {word} service",
                            store=store, env={"MEMCTL_NOW": NOW})
        assert result.exit_code == 0, result.stderr


def notes(store: Path) -> dict[str, str]:
    """id -> title of every note, read through memctl."""
    listed = run_memctl("list", "--all-projects", "--status", "any", "--json", store=store)
    assert listed.exit_code == 0, listed.stderr
    return {entry["id"]: entry["title"] for entry in json.loads(listed.stdout)}


def test_a_clone_killed_half_way_leaves_no_store_and_runs_again(tmp_path: Path, remote: str) -> None:
    """`init --clone` killed while git checks the files out used to leave a half-made store
    under PATH: the rerun accepted it (or refused the folder), and its first sync pushed the
    notes not yet written as deletions to every machine."""
    first = tmp_path / "first"
    assert run_memctl("init", str(first)).exit_code == 0
    add_notes(first, 6, "kiwi")
    assert run_memctl("sync", "--remote", remote, store=first).exit_code == 0
    expected = notes(first)
    clone = tmp_path / "clone"
    killed = run_memctl("init", str(clone), "--clone", remote, env=killing_env(tmp_path, "reset"))
    assert killed.exit_code == -9, killed.stderr
    assert not clone.exists() or not any(clone.iterdir())
    again = run_memctl("init", str(clone), "--clone", remote)
    assert again.exit_code == 0, again.stderr
    assert notes(clone) == expected
    assert git(clone, "status", "--porcelain") == ""
    assert [p.name for p in tmp_path.iterdir() if "memctl-clone" in p.name] == []
    assert run_memctl("sync", store=clone).exit_code == 0
    assert run_memctl("sync", store=first).exit_code == 0
    assert notes(first) == expected


def test_a_clone_killed_after_its_checkout_is_finished_by_the_rerun(tmp_path: Path, remote: str) -> None:
    first = tmp_path / "first"
    assert run_memctl("init", str(first)).exit_code == 0
    add_notes(first, 3, "plum")
    assert run_memctl("sync", "--remote", remote, store=first).exit_code == 0
    clone = tmp_path / "clone"
    killed = run_memctl("init", str(clone), "--clone", remote, env=killing_env(tmp_path, "config"))
    assert killed.exit_code == -9, killed.stderr
    again = run_memctl("init", str(clone), "--clone", remote)
    assert again.exit_code == 0, again.stderr
    assert notes(clone) == notes(first)
    assert not (clone / ".git" / "config.lock").exists()
    assert run_memctl("sync", store=clone).exit_code == 0


def test_an_init_killed_while_git_writes_its_config_runs_again(tmp_path: Path) -> None:
    """A killed `init` left `.git/config.lock`; the rerun failed with git's `could not lock
    config file` for as long as the file was there."""
    store = tmp_path / "store"
    killed = run_memctl("init", str(store), env=killing_env(tmp_path, "config"))
    assert killed.exit_code == -9, killed.stderr
    # What git left when it was killed with memctl, half way through `git config`:
    (store / ".git" / "config.lock").write_text("[core]\n")
    again = run_memctl("init", str(store))
    assert again.exit_code == 0, again.stderr
    assert not (store / ".git" / "config.lock").exists()
    assert run_memctl("add", "after the killed init", store=store).exit_code == 0
    assert git(store, "status", "--porcelain") == ""


def _half_moved(store: Path, target: str) -> list[str]:
    """What `git merge --ff-only TARGET` killed half way leaves: the first files of the new
    commit written, the next one half written, the rest not yet; git's index lock (the
    killed memctl's own lock.info is there already). Returns the paths it moves."""
    changed = [p for p in git(store, "diff", "--name-only", "HEAD", target).split("\n") if p]
    assert len(changed) >= 6
    for number, path in enumerate(changed[:4]):
        data = subprocess.run(["git", "-C", str(store), "show", f"{target}:{path}"],
                              capture_output=True, check=True).stdout
        full = store / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data if number < 3 else data[:len(data) // 2])
    (store / ".git" / "index.lock").write_bytes(b"")
    return changed


@pytest.mark.parametrize("next_command", ["sync", "add"])
def test_a_sync_killed_mid_fast_forward_is_finished_before_anything_commits(
        tmp_path: Path, remote: str, next_command: str) -> None:
    """The next command used to take the half-moved files for local changes: a half-written
    note was committed and pushed (kept beside the real one on every machine), and the
    notes not yet written were committed as deletions."""
    here, there = tmp_path / "here", tmp_path / "there"
    assert run_memctl("init", str(here)).exit_code == 0
    add_notes(here, 2, "fig")
    assert run_memctl("sync", "--remote", remote, store=here).exit_code == 0
    assert run_memctl("init", str(there), "--clone", remote).exit_code == 0
    add_notes(there, 8, "lime")
    assert run_memctl("sync", store=there).exit_code == 0
    expected = notes(there)
    written = {path: (there / path).read_bytes()
               for path in git(there, "ls-files", "*.md").split("\n")[:-1]}
    old_head = git(here, "rev-parse", "HEAD").strip()
    killed = run_memctl("sync", store=here, env=killing_env(tmp_path, "merge"))
    assert killed.exit_code == -9, killed.stderr
    branch = git(here, "symbolic-ref", "--short", "HEAD").strip()
    target = git(here, "rev-parse", f"refs/remotes/origin/{branch}").strip()
    assert git(here, "rev-parse", "HEAD").strip() == old_head
    _half_moved(here, target)
    if next_command == "sync":
        result = run_memctl("sync", store=here)
    else:
        result = run_memctl("add", "written after the crash", store=here,
                            env={"MEMCTL_NOW": "2026-11-30T10:00:00Z"})
    assert result.exit_code == 0, result.stderr
    assert "empty" not in result.stderr
    assert git(here, "status", "--porcelain") == ""
    assert not list(here.rglob("*.e69de29b.md"))
    mine = notes(here)
    assert {k: v for k, v in mine.items() if k in expected} == expected
    assert run_memctl("sync", store=here).exit_code == 0
    assert run_memctl("sync", store=there).exit_code == 0
    theirs = notes(there)
    assert theirs == notes(here)
    assert set(expected) <= set(theirs)
    assert git(here, "ls-files") == git(there, "ls-files")  # no conflict copy, no extra file
    for path, data in written.items():  # every note as it was written, on both machines
        assert (here / path).read_bytes() == data == (there / path).read_bytes(), path
    for store in (here, there):
        assert git(store, "log", "--diff-filter=D", "--format=%h", "--", "*.md") == ""


def test_a_stale_index_lock_no_longer_stops_watch_commit(tmp_path: Path) -> None:
    """`watch --commit` waited on any `.git/index.lock`, so one left by a dead git meant it
    never committed again, without a word. One older than git ever holds it is removed by
    the commit."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store)).exit_code == 0
    add_notes(store, 1, "pear")
    head = git(store, "rev-parse", "HEAD").strip()
    lock = store / ".git" / "index.lock"
    lock.write_bytes(b"")
    old = time.time() - 120
    os.utime(lock, (old, old))
    env = {**os.environ, "MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo"}
    proc = subprocess.Popen([memctl_executable(), "watch", "--commit"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert "watching" in proc.stderr.readline()  # type: ignore[union-attr]
        note = next(p for p in git(store, "ls-files", "*.md").split("\n")
                    if "/notes/" in p)
        with open(store / note, "a", encoding="utf-8") as handle:
            handle.write("\nOne more line, saved by hand.\n")
        deadline = time.monotonic() + 30
        while git(store, "rev-parse", "HEAD").strip() == head and time.monotonic() < deadline:
            time.sleep(0.1)
        assert git(store, "log", "-1", "--format=%s").startswith("memctl watch:")
        assert not lock.exists()
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_first_sync_killed_keeps_no_remote(tmp_path: Path, remote: str) -> None:
    """A remote is kept only once a sync through it succeeded (docs/sync.md): a first
    `sync --remote URL` killed mid-fetch kept it, and `sync --remote RIGHT` was refused."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store)).exit_code == 0
    add_notes(store, 1, "quince")
    wrong = str(tmp_path / "typo.git")
    subprocess.run(["git", "init", "-q", "--bare", wrong], check=True)
    killed = run_memctl("sync", "--remote", wrong, store=store, env=killing_env(tmp_path, "fetch"))
    assert killed.exit_code == -9, killed.stderr
    plain = run_memctl("sync", store=store)
    assert plain.exit_code == 1 and "the store has no git remote" in plain.stderr, plain.stderr
    right = run_memctl("sync", "--remote", remote, store=store)
    assert right.exit_code == 0, right.stderr
    assert git(store, "remote", "get-url", "origin").strip() == remote
    assert not (store / ".memctl" / "sync-remote").exists()


def test_a_refused_foreign_remote_leaves_none_of_its_branches(tmp_path: Path, remote: str) -> None:
    """The probe that finds a remote is no store fetched its branches to private refs, and
    git also wrote them to `refs/remotes/origin/*`, where they stayed after the refusal."""
    code = tmp_path / "code"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(code)], check=True)
    (code / "README.md").write_text("# a code repository\n")
    git(code, "add", "-A")
    subprocess.run(["git", "-C", str(code), "-c", "user.name=x", "-c", "user.email=x@x",
                    "commit", "-qm", "code"], check=True)
    git(code, "push", "-q", remote, "trunk")
    store = tmp_path / "store"
    assert run_memctl("init", str(store)).exit_code == 0
    git(store, "remote", "add", "origin", remote)  # set by hand, to the wrong repository
    refused = run_memctl("sync", store=store)
    assert refused.exit_code == 1 and "not a memctl store" in refused.stderr, refused.stderr
    assert [ref for ref in git(store, "for-each-ref", "--format=%(refname)").split()
            if not ref.startswith("refs/heads/")] == []


def test_a_killed_syncs_private_folders_and_refs_are_removed_by_the_next(
        tmp_path: Path, remote: str) -> None:
    store = tmp_path / "store"
    assert run_memctl("init", str(store)).exit_code == 0
    assert run_memctl("sync", "--remote", remote, store=store).exit_code == 0
    folder = store / ".git" / "memctl-merge-k1ll3d"
    folder.mkdir()
    (folder / "index").write_bytes(b"DIRC half written")
    head = git(store, "rev-parse", "HEAD").strip()
    git(store, "update-ref", "refs/memctl-probe/main", head)
    assert run_memctl("sync", store=store).exit_code == 0
    assert not folder.exists()
    assert git(store, "for-each-ref", "refs/memctl-probe/") == ""
