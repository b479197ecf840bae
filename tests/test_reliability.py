"""Reliability: broken state, concurrent writers, secrets and file modes. What each test
proves is in its docstring; docs/reliability.md sums them up. Fuzzing and hostile input are
in test_hostile_input.py; the long versions live in bench/fuzz.py, bench/crash_loop.py and
under `-m slow`."""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import memctl_executable, plant_dead_holder, run_memctl, tree_snapshot  # noqa: E402
from test_crash import git, make_store, notes_on_disk, sentence, whole_files  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import crash_loop  # noqa: E402
from crash_loop import collect, running_watcher, start_worker  # noqa: E402


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-2000:]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store", 12)


# --- broken state: a clear message, nothing lost, and the way back --------------------------------


def _all_listed(store: Path) -> set[str]:
    result = run_memctl("list", "--all-projects", "--status", "any", "--json", store=store)
    no_traceback(result.stderr)
    assert result.exit_code == 0, result.stderr
    return {note["id"] for note in result.json()}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "older-schema", "newer-schema", "empty",
                                    "wal-garbage", "state-dir-deleted", "index-is-a-folder",
                                    "counters-garbage", "counters-page-garbage"])
def test_damaged_local_state_heals_on_the_next_command(store: Path, damage: str) -> None:
    assert _all_listed(store) == set(notes_on_disk(store))  # the index exists now
    index = store / ".memctl" / "index.sqlite"
    if damage == "truncated":
        data = index.read_bytes()
        index.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        index.write_bytes(os.urandom(64 * 1024))
    elif damage in ("older-schema", "newer-schema"):
        with sqlite3.connect(index) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'",
                         ("1" if damage == "older-schema" else "999",))
            conn.execute("CREATE TABLE from_another_version(x)")
    elif damage == "empty":
        index.write_bytes(b"")
    elif damage == "wal-garbage":
        (store / ".memctl" / "index.sqlite-wal").write_bytes(os.urandom(8192))
    elif damage == "state-dir-deleted":
        shutil.rmtree(store / ".memctl")
    elif damage == "counters-garbage":  # this machine's recall counters: local, derived-ish
        assert run_memctl("search", "alpha*", "--all-projects", store=store).exit_code == 0
        (store / ".memctl" / "counters.sqlite").write_bytes(os.urandom(16 * 1024))
    elif damage == "counters-page-garbage":  # past the first page: it opens, its records fail
        assert run_memctl("search", "alpha*", "--all-projects", store=store).exit_code == 0
        garble_counts(store / ".memctl" / "counters.sqlite")
    elif damage == "index-is-a-folder":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        index.mkdir()
    before = tree_snapshot(store)
    if damage == "index-is-a-folder":
        result = run_memctl("list", "--all-projects", "--json", store=store)
        no_traceback(result.stderr)
        assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
        assert "index.sqlite" in result.stderr
        index.rmdir()
    if damage == "newer-schema":
        # Left as it is for the newer memctl (docs/search.md): said, and taken over by a
        # reindex of this version.
        result = run_memctl("list", "--all-projects", "--json", store=store)
        no_traceback(result.stderr)
        assert result.exit_code == 1 and result.stderr.startswith(
            "error: the index was made by a newer memctl (schema 999, "), result.stderr
        assert run_memctl("reindex", store=store).exit_code == 0
    assert _all_listed(store) == set(notes_on_disk(store))
    hits = run_memctl("search", "alpha* OR bravo* OR cobalt* OR delta*", "--all-projects", "--json",
                      store=store)
    no_traceback(hits.stderr)
    assert hits.exit_code == 0 and hits.json(), hits.stderr
    shown = run_memctl("show", hits.json()[0]["id"], "--json", store=store)
    assert shown.exit_code == 0, shown.stderr
    added = run_memctl("add", "after the damage " + sentence(random.Random(damage)), store=store)
    assert added.exit_code == 0, added.stderr
    assert {k: v for k, v in tree_snapshot(store).items() if k in before} == before


def test_a_missing_git_repository_is_named_and_init_brings_it_back(store: Path) -> None:
    """And memctl never commits into a repository that encloses the store."""
    subprocess.run(["git", "init", "-q", str(store.parent)], check=True)
    git(store.parent, "commit", "-q", "--allow-empty", "-m", "the enclosing repo")
    outer_head = git(store.parent, "rev-parse", "HEAD").stdout
    shutil.rmtree(store / ".git")
    before = tree_snapshot(store)
    result = run_memctl("add", "written while .git is gone", store=store)
    no_traceback(result.stderr)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "memctl init" in result.stderr
    assert git(store.parent, "rev-parse", "HEAD").stdout == outer_head
    assert git(store.parent, "status", "--porcelain").returncode == 0
    assert {k: v for k, v in tree_snapshot(store).items() if k in before} == before
    assert run_memctl("init", str(store)).exit_code == 0
    assert not git(store, "status", "--porcelain").stdout.strip()
    tracked = set(git(store, "ls-files", "-z").stdout.split("\0"))
    assert all(paths[0] in tracked for paths in notes_on_disk(store).values())


def test_a_store_in_the_middle_of_a_merge_refuses_to_commit_and_loses_nothing(store: Path) -> None:
    """A person's `git merge` (or a sync) stopped half way: memctl will not commit through it,
    says what to do, keeps the new note on disk, and works again once the merge is over."""
    some = sorted(notes_on_disk(store).values())[0][0]
    original = (store / some).read_text()
    branch = git(store, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    git(store, "checkout", "-q", "-b", "other")
    (store / some).write_text(original.replace("\nimportance:", "\nimportance: 9\nold_importance:"))
    git(store, "commit", "-q", "-am", "other side")
    git(store, "checkout", "-q", branch)
    git(store, "commit", "-q", "--allow-empty", "-m", "this side")
    git(store, "merge", "--no-commit", "--no-ff", "other")
    assert (store / ".git" / "MERGE_HEAD").exists()
    before = tree_snapshot(store)
    result = run_memctl("add", "written mid-merge " + sentence(random.Random(1)), "--json",
                        store=store)
    no_traceback(result.stderr)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "merge" in result.stderr and "on disk" in result.stderr
    assert {k: v for k, v in tree_snapshot(store).items() if k in before} == before
    assert len(tree_snapshot(store)) == len(before) + 1  # the new note, on disk
    listed = run_memctl("search", "alpha* OR bravo* OR cobalt*", "--all-projects", store=store)
    assert listed.exit_code == 0, listed.stderr
    git(store, "merge", "--abort")
    again = run_memctl("add", "after the merge " + sentence(random.Random(2)), "--json", store=store)
    assert again.exit_code == 0, again.stderr
    assert not (store / ".git" / "index.lock").exists()
    assert not whole_files(store)


def test_archiving_a_note_never_committed_works(store: Path) -> None:
    """A hand-dropped note that was never committed, moved by `archive`: the commit must not
    trip over the old path git never knew."""
    folder = store / "alpha" / "dropped"
    folder.mkdir()
    (folder / "old.md").write_text("---\nid: 00000000000hand1\ncreated: 2024-01-01T00:00:00Z\n"
                                   "updated: 2024-01-01T00:00:00Z\n"
                                   "---\nan old note dropped by hand\n")
    result = run_memctl("archive", "--json", store=store)
    assert result.exit_code == 0, result.stderr
    assert "00000000000hand1" in result.json()["archived"]
    assert git(store, "status", "--porcelain").stdout == ""


def without_file_permission_override() -> list[str]:
    """A prefix that runs a command as root minus CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so file
    modes apply to it as to any user (the tests run as root, which ignores modes)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("permission tests need util-linux's setpriv when run as root")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def run_limited(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT="alpha")
    return subprocess.run([*without_file_permission_override(), memctl_executable(), *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_a_note_that_cannot_be_removed_is_one_line_and_forget_changes_nothing(
        store: Path) -> None:
    """`forget` wrote the tombstone, then failed to remove the note: a traceback, and the note
    alive beside its uncommitted tombstone (which the next `sync` pushed everywhere)."""
    victim = sorted(notes_on_disk(store))[0]
    path = store / notes_on_disk(store)[victim][0]
    before, head = tree_snapshot(store), git(store, "rev-parse", "HEAD").stdout
    path.parent.chmod(0o555)
    try:
        result = run_limited("forget", victim, store=store)
    finally:
        path.parent.chmod(0o755)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: cannot remove {path}: Permission denied "
                                    "(nothing was changed); check the permissions"), result.stderr
    assert result.stderr.count("\n") == 1
    assert tree_snapshot(store) == before
    assert git(store, "rev-parse", "HEAD").stdout == head
    assert git(store, "status", "--porcelain").stdout == ""
    assert not (store / ".tombstones" / f"{victim}.md").exists()


def test_a_forget_that_cannot_remove_the_note_leaves_the_notes_it_would_repoint_as_they_were(
        tmp_path: Path) -> None:
    """`forget B` (A superseded by B, B by C) re-points A to C before it removes B: when B
    could not be removed, A was left rewritten, uncommitted, under "nothing was changed"."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store)).exit_code == 0
    ids = [run_memctl("add", text, "--json", store=store, project=project).json()["id"]
           for text, project in (("the queue is RabbitMQ", "alpha"),
                                 ("the queue is Kafka", "global"),
                                 ("the queue is Redpanda", "global"))]
    older, forgotten, newest = ids
    for old, new in ((older, forgotten), (forgotten, newest)):
        assert run_memctl("supersede", old, new, store=store).exit_code == 0
    folder = next((store / "global").rglob(f"*{forgotten}.md")).parent
    before, head = tree_snapshot(store), git(store, "rev-parse", "HEAD").stdout
    folder.chmod(0o555)
    try:
        result = run_limited("forget", forgotten, store=store)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 1 and "(nothing was changed)" in result.stderr, result.stderr
    assert tree_snapshot(store) == before
    assert git(store, "rev-parse", "HEAD").stdout == head
    assert git(store, "status", "--porcelain").stdout == ""


def test_an_unreadable_note_is_named_and_never_lost(store: Path) -> None:
    assert _all_listed(store)
    note_id, (path,) = sorted(notes_on_disk(store).items())[0]
    target = store / path
    original = target.read_bytes()
    target.chmod(0)
    try:
        listed = run_limited("list", "--all-projects", "--json", store=store)
        no_traceback(listed.stderr)
        assert listed.returncode == 0, listed.stderr
        # Listed with its last good version (never lost), and the problem named.
        assert len(json.loads(listed.stdout)) == len(notes_on_disk(store))
        # chmod leaves mtime and size alone, so the index rightly still holds the unchanged
        # content; reading the file itself is what fails, and that is named.
        shown = run_limited("show", note_id, store=store)
        assert shown.returncode == 1 and shown.stderr.startswith("error:"), shown.stderr
        assert "permission" in shown.stderr.lower()
        added = run_limited("add", "still writable " + sentence(random.Random(3)), store=store)
        assert added.returncode == 0, added.stderr
    finally:
        target.chmod(0o644)
    assert target.read_bytes() == original
    assert note_id in _all_listed(store)


def test_a_folder_memctl_cannot_write_gives_a_clear_error(store: Path) -> None:
    folder = store / "alpha" / "notes" / "fact"
    before = tree_snapshot(store)
    folder.chmod(0o555)
    try:
        result = run_limited("add", "cannot land " + sentence(random.Random(4)), "--type", "fact",
                             store=store)
    finally:
        folder.chmod(0o755)
    no_traceback(result.stderr)
    assert result.returncode == 1 and result.stderr.startswith("error: cannot write"), result.stderr
    assert "ermission" in result.stderr
    assert tree_snapshot(store) == before
    assert not list(folder.glob(".*.tmp"))


def test_a_store_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MEMCTL_STORE", "MEMCTL_PROJECT")}
    cases = [
        (["init", str(locked / "store")], env,
         f"error: cannot create the folder {locked / 'store'}: Permission denied (nothing was "
         f"created); check the permissions of {locked}\n"),
        (["init", str(tmp_path / "notes.txt" / "store")], env,
         f"error: cannot create the folder {tmp_path / 'notes.txt' / 'store'}: "
         f"{tmp_path / 'notes.txt'} is a file, not a folder; choose another path, or move "
         "that file\n"),
        # The default store, made on first use, under a data folder memctl may not write.
        (["list"], {**env, "XDG_DATA_HOME": str(locked)}, "error: cannot create the folder "),
        (["init", "/proc/no-such-store"], env,
         "error: cannot create the folder /proc/no-such-store: No such file or directory"),
    ]
    locked.chmod(0o555)
    try:
        for args, run_env, expected in cases:
            result = subprocess.run([*without_file_permission_override(), memctl_executable(),
                                     *args], capture_output=True, text=True, env=run_env,
                                    timeout=60)
            no_traceback(result.stderr)
            assert result.returncode == 1, (args, result.stderr)
            assert result.stderr.startswith(expected) and result.stderr.count("\n") == 1, \
                (args, result.stderr)
    finally:
        locked.chmod(0o755)
    assert list(locked.iterdir()) == []


def test_an_unreadable_template_is_one_line_and_changes_nothing(store: Path) -> None:
    template = store / ".templates" / "decision.md"
    before = tree_snapshot(store)
    template.chmod(0)
    try:
        result = run_limited("add", "use Postgres " + sentence(random.Random(7)), "--type",
                             "decision", store=store)
    finally:
        template.chmod(0o644)
    no_traceback(result.stderr)
    assert result.returncode == 1
    assert result.stderr == ("error: .templates/decision.md: permission denied; check the "
                             "file's permissions\n")
    assert tree_snapshot(store) == before


def test_a_failed_commit_leaves_nothing_staged_for_the_next_one(store: Path) -> None:
    # git cannot move the branch (its folder is read-only for this user): the commit fails
    # after its file was staged. The next command's commit must hold its own note only.
    heads = store / ".git" / "refs" / "heads"
    heads.chmod(0o555)
    try:
        failed = run_limited("add", "a note whose commit fails " + sentence(random.Random(5)),
                             store=store)
    finally:
        heads.chmod(0o755)
    no_traceback(failed.stderr)
    assert failed.returncode == 1 and failed.stderr.startswith("error: git update-ref failed")
    assert git(store, "diff", "--cached", "--name-only").stdout == ""
    later = run_memctl("add", "a later unrelated note " + sentence(random.Random(6)),
                       "--json", store=store, project="alpha")
    assert later.exit_code == 0, later.stderr
    committed = git(store, "show", "--name-only", "--format=", "HEAD").stdout.split()
    assert committed == [later.json()["path"]]


@contextmanager
def small_filesystem(size: str = "3m"):
    """A real full disk: a tmpfs of `size` (root only); None when it cannot be mounted."""
    folder = Path(tempfile.mkdtemp(prefix="memctl-full-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def fill(folder: Path, leave: int) -> Path:
    """Fill the filesystem, then free `leave` bytes."""
    filler = folder / "filler.bin"
    with open(filler, "wb", buffering=0) as handle:  # (unbuffered: no write left for close)
        chunk = b"\0" * 65536
        try:
            while True:
                handle.write(chunk)
                handle.flush()
        except OSError:
            pass
    with open(filler, "ab"):
        pass
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


def test_a_full_disk_gives_a_clear_error_and_loses_nothing() -> None:
    """A real ENOSPC at every stage of `add`, `reindex` and `list`: a one-line `error:` (exit 1)
    or success, never a traceback; no file is half-written; once space is back, all works."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root); see the RLIMIT_FSIZE variant below")
        root = make_store(folder / "store", 10)
        rng = random.Random(9)
        outcomes: dict[str, int] = {}
        for leave in (0, 512, 2048, 6144, 16384, 40000, 90000):
            before = tree_snapshot(root)
            filler = fill(folder, leave)
            for args in (["add", sentence(rng, 40), "--force"], ["reindex"],
                         ["list", "--all-projects", "--json"]):
                result = run_memctl(*args, store=root)
                no_traceback(result.stderr)
                assert result.exit_code in (0, 1), result.stderr
                if result.exit_code == 1:
                    assert result.stderr.startswith("error:") and result.stderr.count("\n") <= 3
                outcomes[f"{args[0]}:{result.exit_code}"] = outcomes.get(f"{args[0]}:{result.exit_code}", 0) + 1
            assert not whole_files(root)
            assert {k: v for k, v in tree_snapshot(root).items() if k in before} == before
            filler.unlink()
        assert outcomes.get("add:1"), f"the disk was never full enough to matter: {outcomes}"
        again = run_memctl("add", "space is back " + sentence(rng), store=root)
        assert again.exit_code == 0, again.stderr
        assert _all_listed(root) == set(notes_on_disk(root))
        assert git(root, "fsck", "--no-progress", check=False).returncode == 0
        assert not (root / ".git" / "index.lock").exists()


@pytest.mark.parametrize("held", [False, True], ids=["closed", "held-open"])
def test_reads_go_on_when_the_disk_is_full(held: bool) -> None:
    """A disk with no room left at all: SQLite cannot even open the index (its shared-memory
    file is written on open), or, with another process holding the index and the counters
    open (an MCP server), opens them but cannot grow their WAL. Yet `search`, `list`, `show`
    and `recall` answer, as on a read-only store, from a private copy brought up to date from
    the files (a note dropped by hand since the last command is found), count no access and
    change nothing; once space is back, the store's own index catches up. They all failed
    with `disk I/O error` or `database or disk is full`."""
    with small_filesystem() as folder, ExitStack() as holders:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 6)
        assert run_memctl("search", "note", "--json", store=root).exit_code == 0
        if held:
            for name in ("index.sqlite", "counters.sqlite"):
                holder = sqlite3.connect(root / ".memctl" / name)
                holders.callback(holder.close)
                holder.execute("SELECT count(*) FROM sqlite_master").fetchone()
        hand = root / "demo" / "notes" / "fact" / "dropped-by-hand.md"
        hand.parent.mkdir(parents=True, exist_ok=True)
        hand.write_text("---\nid: dropped-by-hand-0001\ntype: fact\ntitle: Quokka rota\n---\n"
                        "The quokka rota lives in the shared calendar.\n", encoding="utf-8")
        index_before = (root / ".memctl" / "index.sqlite").read_bytes()
        filler = fill(folder, 0)
        try:
            before = tree_snapshot(root)
            for args in (["search", "quokka", "--json"], ["list", "--all-projects", "--json"],
                         ["show", "dropped-by-hand-0001", "--json"], ["recall", "quokka rota"],
                         ["health", "--json"]):
                result = run_memctl(*args, store=root)
                no_traceback(result.stderr)
                assert result.exit_code == 0, (args, result.stderr)
                if args[0] == "health":  # the note the index did not have yet, counted
                    assert result.json()["index"]["changed_since_last_update"] == 1, result.stdout
                else:
                    assert "quokka" in result.stdout.lower(), (args, result.stdout)
            assert tree_snapshot(root) == before
            assert (root / ".memctl" / "index.sqlite").read_bytes() == index_before
            # A long-running process (`memctl mcp`) keeps one private copy, not one per call.
            temporary = Path(tempfile.mkdtemp(prefix="memctl-tmp-"))
            script = ("import os, sys\n"
                      "from memctl.services.retrieval import search\n"
                      "from memctl.services.stores import open_store\n"
                      "for _ in range(3):\n"
                      "    assert search(open_store(sys.argv[1]), 'quokka', project='demo').hits\n"
                      "print(len(os.listdir(sys.argv[2])))\n")
            calls = subprocess.run([sys.executable, "-c", script, str(root), str(temporary)],
                                   capture_output=True, text=True, timeout=60,
                                   env={**os.environ, "TMPDIR": str(temporary)})
            shutil.rmtree(temporary, ignore_errors=True)
            assert calls.returncode == 0 and calls.stdout.split() == ["1"], calls
        finally:
            filler.unlink()
        found = run_memctl("search", "quokka", "--json", store=root)
        assert [hit["id"] for hit in found.json()] == ["dropped-by-hand-0001"], found.stderr
        assert (root / ".memctl" / "index.sqlite").read_bytes() != index_before


def test_reads_go_on_and_the_index_stays_when_no_inode_is_left() -> None:
    """A disk full of files (no free inode, blocks to spare): SQLite cannot create the index's
    WAL or shared memory and says `unable to open database file`. That is no damaged index:
    reads answer from a private copy and the store's index is left in place. It was deleted
    as if damaged and every read failed, `error: cannot create the index ...`."""
    with small_filesystem("8m,nr_inodes=300") as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 6)
        assert run_memctl("search", "note", "--json", store=root).exit_code == 0
        index = root / ".memctl" / "index.sqlite"
        index_before = index.read_bytes()
        files = folder / "files"
        files.mkdir()
        count = 0
        with contextlib.suppress(OSError):
            while True:
                (files / str(count)).touch()
                count += 1
        try:
            assert os.statvfs(folder).f_ffree == 0
            for args in (["search", "note", "--json"], ["list", "--all-projects", "--json"],
                         ["health", "--json"]):
                result = run_memctl(*args, store=root)
                no_traceback(result.stderr)
                assert result.exit_code == 0, (args, result.stderr)
            assert index.read_bytes() == index_before
        finally:
            shutil.rmtree(files)


def test_a_store_on_a_read_only_file_system_says_so() -> None:
    """A store on a file system mounted read-only: reads work, and a write is one line that
    says the file system is read-only (not to check the folder's permissions, which are
    fine), exit 1, nothing changed."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 3)
        assert run_memctl("list", "--all-projects", "--json", store=root).exit_code == 0
        before = tree_snapshot(root)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        try:
            listed = run_memctl("list", "--all-projects", "--json", store=root)
            assert listed.exit_code == 0 and len(listed.json()) == 3, listed.stderr
            refused = run_memctl("add", "A note on a read-only disk", "--force", store=root)
            no_traceback(refused.stderr)
            assert refused.exit_code == 1 and refused.stderr.count("\n") == 1, refused.stderr
            assert "read-only file system" in refused.stderr, refused.stderr
            assert "permissions" not in refused.stderr, refused.stderr
            assert tree_snapshot(root) == before
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)


def test_an_export_that_fills_the_disk_names_its_zip() -> None:
    """`export` to a full disk: the one-line error names the zip it was writing (a write into
    it names no file of its own), and no part of it is left."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        filler = fill(folder, 2048)
        target = folder / "out.zip"
        result = run_memctl("export", str(target), store=root)
        no_traceback(result.stderr)
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "No space left on device" in result.stderr and str(target) in result.stderr
        assert not target.exists() and not (folder / ".out.zip.tmp").exists()
        filler.unlink()


def test_a_machine_id_the_full_disk_refuses_leaves_no_temp_file() -> None:
    """This machine's id is written once, through a temp file: a full disk that refused the
    write left `.memctl/.machine-id.PID.tmp` behind a command that was not killed."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 5)
        for made in (root / ".memctl").glob("machine-id*"):
            made.unlink()
        filler = fill(folder, 0)
        elsewhere = Path(tempfile.mkdtemp(prefix="memctl-zip-"))
        try:  # an export to another disk: only the id's own write meets the full one
            result = run_memctl("export", str(elsewhere / "out.zip"), store=root)
        finally:
            shutil.rmtree(elsewhere, ignore_errors=True)
        no_traceback(result.stderr)
        assert not list((root / ".memctl").glob(".machine-id*.tmp")), result.stderr
        filler.unlink()


def test_a_full_disk_never_deletes_a_sound_index() -> None:
    """A read on a disk with no room: SQLite cannot make the index's shared-memory file
    (SQLITE_IOERR_SHMSIZE) nor write (SQLITE_FULL). That is the machine's refusal, not a
    damaged index: the index stays as it was (before, it was deleted as if corrupt, and
    every later read on that disk failed to make it again), the reads answer from a private
    copy (`test_reads_go_on_when_the_disk_is_full`), and the read after space is back needs
    no rebuild."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        assert run_memctl("list", "--all-projects", "--json", store=root).exit_code == 0
        index = root / ".memctl" / "index.sqlite"
        before = index.read_bytes()
        filler = fill(folder, 0)
        for args, code in ((["show", "nosuchid0000000"], 1), (["list", "--all-projects"], 0),
                           (["search", "note"], 0)):
            result = run_memctl(*args, store=root)
            no_traceback(result.stderr)
            assert result.exit_code == code, result.stderr
            if code:  # the id is unknown: said as on any disk
                assert result.stderr.startswith("error: no ") and result.stderr.count("\n") == 1
            assert index.read_bytes() == before, args
        filler.unlink()
        listed = run_memctl("list", "--all-projects", "--json", store=root)
        assert listed.exit_code == 0 and len(listed.json()) == 10, listed.stderr


def test_a_walk_that_meets_a_full_disk_never_deletes_a_sound_index() -> None:
    """Room for SQLite's shared-memory file (or one already there: a watcher, an MCP server)
    but not for the WAL pages of a refresh: SQLITE_FULL in the walk of a read. That is the
    machine's refusal, not a damaged index: before, `_walk` took it for corruption, removed
    the index and made an empty one (or rebuilt all of it), on every such read. The read
    goes on in a private copy (`test_reads_go_on_when_the_disk_is_full`)."""
    with small_filesystem("8m") as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        assert run_memctl("list", "--all-projects", "--json", store=root).exit_code == 0
        index = root / ".memctl" / "index.sqlite"
        copied = 0
        for leave in range(16384, 80 * 1024, 4096):
            identity = (index.stat().st_ino, index.stat().st_size)
            hand = root / "default" / "notes" / f"hand-{leave}.md"
            hand.parent.mkdir(parents=True, exist_ok=True)
            hand.write_text(f"a hand note {leave} " + sentence(random.Random(leave), 400) + "\n")
            filler = fill(folder, leave)
            result = run_memctl("search", "note", "--all-projects", store=root)
            filler.unlink()
            # Whether the store's own index took the hand note, or a private copy answered.
            with contextlib.closing(sqlite3.connect(index)) as reader:
                copied += not reader.execute("SELECT 1 FROM docs WHERE path = ?",
                                             (f"default/notes/hand-{leave}.md",)).fetchone()
            no_traceback(result.stderr)
            assert result.exit_code == 0, result.stderr
            assert index.stat().st_ino == identity[0], (leave, result.stderr)
            assert index.stat().st_size >= identity[1], (leave, result.stderr)
        assert copied, "the disk was never full enough to matter"
        listed = run_memctl("list", "--all-projects", "--json", store=root)
        assert listed.exit_code == 0 and len(listed.json()) == 10 + len(range(16384, 80 * 1024, 4096))


@contextmanager
def live_watcher(root: Path):
    """A `memctl watch` of the store at `root` (its index made first), once `watch --status`
    says it is live; stopped at the end."""
    assert run_memctl("reindex", store=root).exit_code == 0
    proc = subprocess.Popen([memctl_executable(), "--store", str(root), "watch"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not run_memctl("watch", "--status", "--json", store=root).json()["live"]:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_the_watcher_outlives_an_index_it_cannot_make_again_on_a_full_disk() -> None:
    """The index removed while the disk is full (to make room, or by another memctl that
    made it anew): the watcher's reopen meets SQLITE_FULL. Before, that ended the watcher
    (`_store_moved` caught only a newer index); now it says it cannot update the index and
    retries, and once space is back a hand edit is found by a search."""
    with small_filesystem("4m") as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        with live_watcher(root) as proc:
            fill(folder, 0)
            (root / ".memctl" / "index.sqlite").unlink()
            filler = fill(folder, 0)  # the index's room taken too
            time.sleep(2.5)  # a few ticks of the watcher on the full disk
            filler.unlink()
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            note = root / "default" / "notes" / "kiwi.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text("kiwifruit grows on vines\n")
            deadline = time.monotonic() + 15
            while True:
                found = run_memctl("search", "kiwifruit", "--all-projects", "--json", store=root)
                if found.exit_code == 0 and len(found.json()) == 1 or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            assert found.exit_code == 0 and len(found.json()) == 1, found.stderr
            assert proc.poll() is None


def _watch_status(root: Path) -> tuple[dict, str]:
    shown = run_memctl("watch", "--status", "--json", store=root)
    text = run_memctl("watch", "--status", store=root)
    assert shown.exit_code == 0 and text.exit_code == 0, shown.stderr + text.stderr
    return shown.json(), text.stdout


def test_watch_status_says_a_watcher_on_a_full_disk_runs_but_cannot_write() -> None:
    """A watcher whose passes fail on a full disk: `watch --status` said it was live (its
    heartbeat still fresh), then that it had stopped beating, "stopped, hung or gone",
    while it ran; neither said the disk was full. Now it says the watcher runs but cannot
    write, and why, in the text and in `--json` (`failing`, `live` false): the failed pass
    takes what room SQLite finds for its WAL, so the heartbeat cannot say it, and the status
    finds the disk full itself. Once there is room again, the watcher is live again."""
    with small_filesystem("4m") as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        with live_watcher(root) as proc:
            # A big note its pass cannot index: written under a name the watcher ignores,
            # then renamed into place once the disk is nearly full (a rename takes no room).
            big = root / "default" / "notes" / "big.md.tmp"
            big.parent.mkdir(parents=True, exist_ok=True)
            big.write_text("\n".join(sentence(random.Random(n), 60) for n in range(400)) + "\n")
            fillers = [fill(folder, 16384).rename(folder / "filler1.bin")]
            big.rename(big.with_name("big.md"))
            seen: list[tuple[dict, str]] = []
            deadline = time.monotonic() + 14  # past the 10 s a heartbeat is trusted
            while time.monotonic() < deadline:
                seen.append(_watch_status(root))
                if len(seen) == 3:  # then no room at all: not even for the heartbeat
                    fillers.append(fill(folder, 0))
                time.sleep(0.5)
            assert proc.poll() is None
            for shown, text in seen[1:]:  # (the first may come before the pass)
                assert shown["running"] and not shown["live"], shown
                assert shown["failing"] == "no space left on device", shown
                assert "but cannot write: no space left on device" in text, text
                assert "hung or gone" not in text, text
            for filler in fillers:
                filler.unlink()
            deadline = time.monotonic() + 15
            while True:
                shown, text = _watch_status(root)
                if shown["live"] or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            assert shown["live"] and shown["failing"] is None, shown
            assert text.startswith("a watcher runs for") and "cannot write" not in text, text


def test_a_change_written_but_not_committed_on_a_full_disk_says_it_is_on_disk() -> None:
    """Room for the scratchpad's few bytes but not for git's objects: the file is written and
    git fails. The one line says the change is on disk and that `memctl sync` commits it
    (docs/reliability.md: "The error says \"Your change is on disk\""); before, it was git's
    message alone, and running the command again (the recovery table's advice) made the
    change twice. After space is back, `memctl sync` commits it."""
    with small_filesystem() as folder:
        if folder is None:
            pytest.fail("cannot mount a tmpfs (needs root)")
        root = make_store(folder / "store", 10)
        written_not_committed = 0
        for leave in range(0, 96 * 1024, 4096):
            git(root, "reset", "-q", "--hard")
            before = tree_snapshot(root)
            filler = fill(folder, leave)
            result = run_memctl("scratch", "note", f"left {leave}", store=root)
            filler.unlink()
            no_traceback(result.stderr)
            if result.exit_code == 0:
                break
            assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
            if tree_snapshot(root) != before:
                written_not_committed += 1
                assert result.stderr.rstrip().endswith("Your change is on disk."), result.stderr
                assert "`memctl sync` commits the change" in result.stderr
        assert written_not_committed, "git never failed after the file was written"
        synced = run_memctl("sync", store=root)
        assert "no git remote" in synced.stderr, synced.stderr
        assert git(root, "status", "--porcelain").stdout == ""


def test_a_write_error_from_the_kernel_is_reported_not_raised(store: Path) -> None:
    """The same promise with a file-size limit (RLIMIT_FSIZE: writes past it fail with EFBIG),
    which needs no mount: the note is bigger than the limit, the index (built) is not."""
    import signal

    assert _all_listed(store)
    allowed = max(256 * 1024, 2 * (store / ".memctl" / "index.sqlite").stat().st_size)

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (allowed, allowed))

    before = tree_snapshot(store)
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT="alpha",
               PYTHONDONTWRITEBYTECODE="1")  # (a .pyc cut short by the limit breaks later runs)
    text = "\n".join(sentence(random.Random(n), 12) for n in range(allowed // 60))
    assert allowed < len(text.encode()) < 1024 * 1024
    done = subprocess.run([memctl_executable(), "add", "-"], input=text, capture_output=True,
                          text=True, env=env, preexec_fn=limit, timeout=60)
    no_traceback(done.stderr)
    assert done.returncode == 1 and done.stderr.startswith("error: cannot write"), done.stderr
    assert tree_snapshot(store) == before


def test_a_sqlite_file_damaged_under_a_command_is_one_line_naming_reindex(tmp_path: Path,
                                                                          capsys) -> None:
    """A SQLite file cut short by another program while a connection to it is open (a
    long-lived one: the watcher's search server, the MCP server) fails with SQLITE_CORRUPT
    where memctl tries no rebuild: the command ends with one `error:` line saying how to make
    the index anew, not a traceback."""
    from memctl.cli.context import run_command

    path = tmp_path / "damaged.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE words(word TEXT)")
    connection.executemany("INSERT INTO words VALUES (?)", [(f"word {i} " * 8,) for i in range(3000)])
    connection.commit()
    assert path.stat().st_size > 8 * 4096
    with open(path, "r+b") as handle:
        handle.truncate(2 * 4096)

    def read() -> None:
        connection.execute("SELECT count(*) FROM words").fetchone()

    assert run_command(read, lambda: ["search"]) == 1
    connection.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: database disk image is malformed")
    assert "`memctl reindex` makes the index anew" in lines[0]


def garble_counts(counters_file: Path) -> bytes:
    """Garbage over the counters' table (page 2) of a counters file, which still opens
    (its first page is sound): what a record or a read of counts meets. Returns the file."""
    with sqlite3.connect(counters_file) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    with open(counters_file, "r+b") as handle:
        handle.seek(4096)  # page 2: the counts' table
        handle.write(b"\xff" * 64)
    return counters_file.read_bytes()


def test_damaged_access_counters_leave_a_sound_index_alone(tmp_path: Path) -> None:
    """A counters file damaged where only a write reaches it (it opens, its records fail):
    `recall`, which heals a damaged index by making it anew (index.db.heals_damaged_index),
    took the counters' error for the index's and rebuilt a sound index on every run. The
    index is now made anew only when its own pages are damaged. The counters file was then
    said (`error: database disk image is malformed …`, exit 1) by every `search`, `recall`,
    `export`, `import` and `sync` and never repaired: `memctl reindex`, which the error
    named, left it as it was. It is now set aside as a file that does not open at all is
    (`counters.sqlite.damaged-<time>`, kept byte for byte, one warning naming it), and the
    counts start again."""
    root = make_store(tmp_path / "store", 30)
    env = dict(os.environ, MEMCTL_STORE=str(root), MEMCTL_PROJECT="alpha")
    assert run_memctl("recall", env=env, store=root, project="alpha").exit_code == 0
    counters_file = root / ".memctl" / "counters.sqlite"
    damaged = garble_counts(counters_file)
    index = root / ".memctl" / "index.sqlite"
    with sqlite3.connect(index) as connection:
        connection.execute("CREATE TABLE marker(x)")
    connection.close()
    before = index.stat().st_ino
    result = run_memctl("recall", env=env, store=root, project="alpha")
    assert "Traceback" not in result.stderr
    with sqlite3.connect(index) as connection:
        kept = connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'marker'").fetchone()[0]
    connection.close()
    assert kept == 1 and index.stat().st_ino == before, result.stderr
    assert result.exit_code == 0, result.stderr
    aside = [p for p in counters_file.parent.iterdir() if p.name.startswith("counters.sqlite.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged, result.stderr
    assert result.stderr == (f"warning: counters.sqlite was damaged (database disk image is "
                             f"malformed); kept as {aside[0].name}, access counts start again\n")
    again = run_memctl("recall", env=env, store=root, project="alpha")
    assert again.exit_code == 0 and again.stderr == "", again.stderr
    with sqlite3.connect(counters_file) as connection:  # counted afresh, twice
        assert connection.execute("SELECT max(count) FROM access").fetchone() == (2,)
    connection.close()


def test_an_index_whose_word_data_is_damaged_is_made_anew_by_recall(tmp_path: Path) -> None:
    """Damage in the full-text index's own data (an FTS5 block overwritten by another
    program): `quick_check` passes it (SQLite checks no FTS5 data before 3.44), the query
    fails. The commands that only read make the index anew and answer, as before the check
    that keeps a damaged counters file from rebuilding a sound index."""
    root = make_store(tmp_path / "store", 30)
    env = dict(os.environ, MEMCTL_STORE=str(root), MEMCTL_PROJECT="alpha")
    word = run_memctl("list", "--json", store=root, project="alpha", env=env).json()[0]["title"]
    word = word.split()[0]
    assert run_memctl("recall", word, store=root, project="alpha", env=env).exit_code == 0
    index = root / ".memctl" / "index.sqlite"
    with sqlite3.connect(index) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        largest = connection.execute(
            "SELECT id FROM fts_data ORDER BY length(block) DESC LIMIT 1").fetchone()[0]
        connection.execute("UPDATE fts_data SET block = x'ffffffffffffffffffff' || "
                           "substr(block, 11) WHERE id = ?", (largest,))
        assert connection.execute("PRAGMA quick_check").fetchone() == ("ok",)
    connection.close()
    result = run_memctl("recall", word, store=root, project="alpha", env=env)
    assert result.exit_code == 0, result.stderr
    assert word in result.stdout


@pytest.mark.parametrize("args", [["reindex"], ["health", "--json"], ["scratch", "note", "x"],
                                  ["project", "add", "decisions", "Kysely for queries"],
                                  ["search", "alpha"], ["export", "out.zip"]])
def test_a_write_the_machine_refuses_anywhere_is_one_line(tmp_path: Path, args: list[str]) -> None:
    """Every file may grow only so far (RLIMIT_FSIZE, at sizes around the index's own): the
    SQLite files, git's and the store's then fail where they grow, in whatever step. The
    command succeeds or says so in one `error:` line (memctl.core.errors.machine_error),
    never a traceback, and the next command without the limit works."""
    root = make_store(tmp_path / "store", 30)
    # No bytecode written under the limit: Python's own cache writer does not check for a
    # short write, and a truncated .pyc would break every later run.
    env = dict(os.environ, MEMCTL_STORE=str(root), MEMCTL_PROJECT="alpha",
               PYTHONDONTWRITEBYTECODE="1")
    assert _all_listed(root)  # the index built
    built = (root / ".memctl" / "index.sqlite").stat().st_size
    for allowed in (built // 4, built // 2, built - 4096, built + 4096, built * 2):
        copy = tmp_path / f"copy-{allowed}"
        shutil.copytree(root, copy, symlinks=True)
        (copy / ".memctl" / "index.sqlite").unlink()  # built again under the limit

        def limit(allowed: int = allowed) -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (allowed, allowed))

        done = subprocess.run([memctl_executable(), *args], capture_output=True, text=True,
                              env=dict(env, MEMCTL_STORE=str(copy)), preexec_fn=limit,
                              timeout=60, cwd=copy)
        no_traceback(done.stderr)
        assert done.returncode in (0, 1), done.stderr
        if done.returncode == 1:
            assert done.stderr.startswith("error:") and done.stderr.count("\n") == 1, done.stderr
        again = run_memctl("list", "--all-projects", "--json", store=copy)
        assert again.exit_code == 0, again.stderr


# --- concurrency: several writers, a reader, the watcher and a person, all at once -------------

def test_four_writers_a_reader_and_the_watcher_lose_nothing(tmp_path: Path) -> None:
    """4 processes × 100 adds (the CLI's own code, in long-lived processes) while `memctl
    watch` runs and a reader lists and searches: exactly 400 notes on disk, in the index
    (live and rebuilt), in git, one commit each, git clean, no lock or temp file left."""
    from memctl.store import Store

    store = tmp_path / "store"
    Store.init(store)
    figures = crash_loop.four_writers_and_a_watcher(store, writers=4, adds=100, console=False)
    assert not figures["problems"], json.dumps(figures, indent=1, ensure_ascii=False)


@pytest.mark.slow
def test_four_shells_running_memctl_add_a_hundred_times_each(tmp_path: Path) -> None:
    from memctl.store import Store

    store = tmp_path / "store"
    Store.init(store)
    figures = crash_loop.four_writers_and_a_watcher(store, writers=4, adds=100, console=True)
    assert not figures["problems"], json.dumps(figures, indent=1, ensure_ascii=False)


def test_commands_refreshing_the_index_at_once_never_duplicate_a_note(tmp_path: Path) -> None:
    """No watcher: every read command brings the index up to date itself, so several at once
    race to index the same new files. Each file must still be one entry."""
    from memctl.store import Store

    store = tmp_path / "store"
    Store.init(store)
    folder = store / "alpha" / "notes"
    folder.mkdir(parents=True)
    readers = [start_worker(store, "read", 60, f"r{n}", n) for n in range(3)]
    for number in range(150):
        (folder / f"n{number}.md").write_text(f"---\nid: {number:016d}\n---\nrace note {number}\n")
        time.sleep(0.01)
    for reader in readers:
        assert not [r for r in collect(reader) if r["code"] != 0]
    listed = [n["id"] for n in json.loads(run_memctl("list", "--all-projects", "--json",
                                                     store=store).stdout)]
    assert len(listed) == len(set(listed)) == 150, f"{len(listed)} entries for 150 notes"
    shown = run_memctl("show", f"{7:016d}", "--json", store=store)
    assert shown.exit_code == 0, shown.stderr


EDITOR = "import sys; p = sys.argv[1]; open(p, 'a').write('\\nedited by the editor: ' + p[-19:-3] + '\\n')"


def test_adds_edits_forgets_and_hand_edits_at_once(tmp_path: Path) -> None:
    """Writers of every kind at the same time, on different notes, while the watcher runs:
    every change lands, in the files, the index and git; nothing else moves."""
    store = make_store(tmp_path / "store", 40)
    seed = sorted(notes_on_disk(store))
    to_edit, to_forget = seed[:12], seed[12:24]
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    hand = store / "alpha" / "handmade"
    hand.mkdir()
    with running_watcher(store):
        procs = [start_worker(store, "add", 25, f"w{n}", n) for n in range(2)]
        procs.append(start_worker(store, "edit", len(to_edit), "editor", 0, *to_edit,
                                  env={"EDITOR": f"{sys.executable} {editor}"}))
        procs.append(start_worker(store, "forget", len(to_forget), "forgetter", 0, *to_forget))
        for number in range(20):  # a person writing and re-saving their own notes meanwhile
            path = hand / f"by-hand-{number}.md"
            path.write_text(f"# Hand note {number}\n\nwritten by hand handmark{number}\n")
            if number % 2:
                time.sleep(0.05)
                path.write_text(path.read_text() + f"\nsecond save handmark{number}b\n")
        results = [collect(proc) for proc in procs]
        failed = [r for batch in results for r in batch if r["code"] != 0]
        assert not failed, failed[:3]
        lag = crash_loop.watched_index_complete(store, 40 + 50 - len(to_forget) + 20)
        assert lag is None, lag
    on_disk = notes_on_disk(store)
    added = [json.loads(r["out"])["id"] for r in results[0] + results[1]]
    assert set(added) <= set(on_disk) and len(set(added)) == 50
    assert not set(to_forget) & set(on_disk)
    assert all((store / ".tombstones" / f"{i}.md").is_file() for i in to_forget)
    for note_id in to_edit:
        text = (store / on_disk[note_id][0]).read_text()
        assert f"edited by the editor: {note_id}" in text
    assert not [p for p in whole_files(store) if "/handmade/" not in p]
    for number in range(20):
        word = f"handmark{number}" + ("b" if number % 2 else "")
        hits = run_memctl("search", word, "--all-projects", "--json", store=store)
        assert hits.exit_code == 0 and len(hits.json()) == 1, (word, hits.stderr)
    status = git(store, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    assert all("/handmade/" in line for line in status), status  # only the person's own files
    assert not (store / ".git" / "index.lock").exists()


def test_a_held_lock_times_out_with_a_message_naming_the_holder(store: Path) -> None:
    from memctl.disk.locking import store_lock

    before = tree_snapshot(store)
    with store_lock(store, "archive"):
        result = run_memctl("add", "blocked " + sentence(random.Random(6)), store=store,
                            env={"MEMCTL_LOCK_TIMEOUT": "1"})
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: the store is locked by memctl archive (pid "), result.stderr
    assert str(os.getpid()) in result.stderr
    assert tree_snapshot(store) == before


@pytest.mark.parametrize(("name", "command"), [("watch.json", "watch"), ("watch.lock", "watch"),
                                              ("lock", "add")])
def test_a_folder_where_memctl_keeps_a_lock_or_heartbeat_is_one_line(
        store: Path, name: str, command: str) -> None:
    """A folder made where `.memctl/` holds the store lock, the watcher's lock or its
    heartbeat stopped `memctl add` or `memctl watch` with a traceback."""
    (store / ".memctl" / name).unlink(missing_ok=True)
    (store / ".memctl" / name).mkdir()
    before = tree_snapshot(store)
    args = ["add", "blocked by a folder " + sentence(random.Random(name))] \
        if command == "add" else ["watch"]
    result = run_memctl(*args, store=store, timeout=30)
    no_traceback(result.stderr)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == (f"error: {store / '.memctl' / name} is a folder where memctl keeps a"
                             " file of its own: remove the folder (memctl makes the file again)\n")
    assert tree_snapshot(store) == before
    (store / ".memctl" / name).rmdir()
    if command == "add":
        assert run_memctl(*args, store=store).exit_code == 0


def test_an_index_lock_left_by_a_killed_memctl_never_blocks_the_next_command(store: Path) -> None:
    """kill -9 of memctl and its git child mid-commit leaves `.git/index.lock` (or HEAD.lock, a
    ref's lock) and the dead holder's lock.info; the next command clears them at once instead
    of failing (for 30 s, or for ever for the ref locks)."""
    plant_dead_holder(store, "add")
    branch = git(store, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    debris = [store / ".git" / "index.lock", store / ".git" / "HEAD.lock",
              store / ".git" / "refs" / "heads" / f"{branch}.lock"]
    for path in debris:
        path.write_bytes(b"half written by a killed git")
    # No wait for the dead holder: with no time to wait, a lock still held would fail this.
    result = run_memctl("add", "after the crash " + sentence(random.Random(7)), store=store,
                        env={"MEMCTL_LOCK_TIMEOUT": "0"})
    assert result.exit_code == 0, result.stderr
    assert not [path for path in debris if path.exists()]
    assert git(store, "status", "--porcelain").stdout == ""


def test_what_a_killed_memctl_left_uncommitted_is_committed_by_the_next_command(
        store: Path) -> None:
    """kill -9 of `forget` (or `edit`, `supersede`, `restore`) after it wrote its files and
    before its commit: the change stayed out of git for good, since each later command
    commits only its own paths (and `memctl sync` needs a remote). The next command that
    commits now commits it first, on its own."""
    victim = sorted(notes_on_disk(store))[0]
    path = store / notes_on_disk(store)[victim][0]
    tombstone = store / ".tombstones" / f"{victim}.md"
    tombstone.parent.mkdir(exist_ok=True)
    tombstone.write_text(f"---\nid: {victim}\ndeleted: 2026-11-30T09:00:00.000Z\n---\nx\n")
    path.unlink()
    dead = plant_dead_holder(store, "forget")
    result = run_memctl("add", "after the kill " + sentence(random.Random(8)), store=store)
    assert result.exit_code == 0, result.stderr
    assert git(store, "status", "--porcelain").stdout == ""
    subjects = git(store, "log", "-2", "--format=%s").stdout.splitlines()
    assert subjects[0].startswith("add ")
    assert subjects[1] == f"memctl: changes an interrupted memctl forget left on disk (pid {dead.pid})"
    shown = git(store, "show", "--name-status", "--format=", "HEAD~1").stdout.split("\n")
    assert sorted(line for line in shown if line) == sorted(
        [f"D\t{path.relative_to(store).as_posix()}", f"A\t.tombstones/{victim}.md"])


def test_the_index_file_a_killed_commit_left_in_git_s_folder_is_removed_by_the_next_commit(
        store: Path) -> None:
    """kill -9 while a commit made its tree in an index of its own (with a change staged by
    hand beside it: docs/reliability.md) left that index, as big as git's own, and git's
    lock of it in `.git` for ever. The next command that commits removes both."""
    dead = plant_dead_holder(store, "add")
    left = [store / ".git" / f"memctl-index-{dead.pid}", store / ".git" / f"memctl-index-{dead.pid}.lock"]
    for path in left:
        path.write_bytes((store / ".git" / "index").read_bytes())
    result = run_memctl("add", "after the kill " + sentence(random.Random(9)), store=store)
    assert result.exit_code == 0, result.stderr
    assert not [path for path in left if path.exists()]
    assert git(store, "status", "--porcelain").stdout == ""


def test_the_temp_files_a_killed_writer_left_are_removed_by_the_next_commit(
        store: Path) -> None:
    """kill -9 between an atomic write's temp file and its rename left `.NAME.RANDOM.tmp`
    beside the note for ever. The next command that commits after such a crash removes the
    ones made while the dead command held the store lock, and nothing else."""
    victim = sorted(notes_on_disk(store))[0]
    folder = (store / notes_on_disk(store)[victim][0]).parent
    name = (store / notes_on_disk(store)[victim][0]).name
    left = folder / f".{name}.0a1b2c3d4e5f.tmp"
    left_top = store / ".MEMORY.md.ffffffffffff.tmp"
    hours_old = folder / f".{name}.00000000abcd.tmp"  # made before the dead command began
    a_persons = folder / f".{name}.tmp"  # not a name memctl makes
    state = store / ".memctl" / ".counters.json.0a1b2c3d4e5f.tmp"  # ignored by git: not ours
    for path in (left, left_top, hours_old, a_persons, state):
        path.write_text("half a note")
    old = time.time() - 3 * 3600
    os.utime(hours_old, (old, old))
    plant_dead_holder(store, "add")
    result = run_memctl("add", "after the kill " + sentence(random.Random(9)), store=store)
    assert result.exit_code == 0, result.stderr
    assert not left.exists() and not left_top.exists()
    assert hours_old.exists() and a_persons.exists() and state.exists()
    # Without a crash, a temp file may be a live writer's: it stays.
    fresh = folder / f".{name}.aaaaaaaaaaaa.tmp"
    fresh.write_text("being written")
    result = run_memctl("add", "no crash this time " + sentence(random.Random(10)), store=store)
    assert result.exit_code == 0, result.stderr
    assert fresh.exists()


def test_sync_without_a_remote_still_commits_what_is_left_on_disk(store: Path) -> None:
    """The documented way to commit a change left on disk (a full disk, a held git lock) is
    `memctl sync`; without a remote it committed nothing."""
    victim = sorted(notes_on_disk(store))[0]
    path = store / notes_on_disk(store)[victim][0]
    path.write_text(path.read_text() + "\nOne more line, saved by hand.\n")
    result = run_memctl("sync", store=store)
    no_traceback(result.stderr)
    assert result.exit_code == 1
    assert result.stderr == ("error: the store has no git remote; your local changes were "
                             "committed; run `memctl sync --remote URL` once to share it\n")
    assert git(store, "status", "--porcelain").stdout == ""
    again = run_memctl("sync", store=store)
    assert again.stderr == ("error: the store has no git remote; run `memctl sync --remote URL`"
                            " once to share it\n")


@pytest.mark.parametrize("first", [True, False], ids=["first sync", "later sync"])
def test_a_config_lock_left_by_a_killed_sync_never_blocks_the_next_sync(
        store: Path, remote: str, first: bool) -> None:
    """`sync` writes `.git/config` (the remote it is given, the merge driver) before its
    first commit. kill -9 during that `git config` left `.git/config.lock`, and every later
    sync failed with git's "could not lock config file" (found by tests/test_crash.py)."""
    if not first:
        assert run_memctl("sync", "--remote", remote, store=store).exit_code == 0
        note = store / notes_on_disk(store)[sorted(notes_on_disk(store))[0]][0]
        note.write_text(note.read_text() + "\nOne more line, saved by hand.\n")
    plant_dead_holder(store, "sync")
    debris = store / ".git" / "config.lock"
    debris.write_text("[core]\n\thalf written by a killed git\n")
    result = run_memctl("sync", *(("--remote", remote) if first else ()), store=store,
                        env={"MEMCTL_LOCK_TIMEOUT": "0"})  # a lock still held would fail this
    assert result.exit_code == 0, result.stderr
    assert not debris.exists()
    assert git(store, "status", "--porcelain").stdout == ""
    assert git(store, "rev-parse", "HEAD").stdout == \
        git(Path(remote), "rev-parse", git(store, "symbolic-ref", "--short", "HEAD").stdout.strip()).stdout


def test_a_persons_running_git_is_waited_for_then_named(store: Path) -> None:
    """A fresh index.lock with no crashed memctl behind it belongs to someone's git: memctl
    waits a few seconds for it, then says what is going on; nothing is lost."""
    lock = store / ".git" / "index.lock"
    lock.write_bytes(b"")
    released = threading.Timer(1.0, lock.unlink)
    released.start()
    first = run_memctl("add", "waits for git " + sentence(random.Random(8)), store=store)
    released.join()
    assert first.exit_code == 0, first.stderr
    lock.write_bytes(b"")
    second = run_memctl("add", "git never lets go " + sentence(random.Random(9)), "--json",
                        store=store)
    lock.unlink()
    assert second.exit_code == 1 and second.stderr.startswith("error: git's lock file"), second.stderr
    assert "index.lock" in second.stderr
    retry = run_memctl("add", "git let go " + sentence(random.Random(10)), store=store)
    assert retry.exit_code == 0, retry.stderr


# --- secrets never echoed; files never world-writable --------------------------------------------


def _secrets() -> dict[str, str]:
    """kind -> (text containing a secret); the secret part is what must never be printed."""
    rng = random.Random(42)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    mixed = alnum + alnum.lower()
    return {
        "".join(rng.choice(alnum) for _ in range(16)): "AKIA{}",
        "".join(rng.choice(mixed) for _ in range(36)): "ghp_{}",
        "".join(rng.choice(mixed) for _ in range(40)): "sk-proj-{}",
        "Zq8" + "".join(rng.choice(mixed) for _ in range(13)): "postgres://app:{}@db.internal/app",
        "".join(rng.choice(mixed) for _ in range(60)):
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
    }


def test_a_refused_secret_is_never_echoed_nor_written(store: Path) -> None:
    before = tree_snapshot(store)
    for secret, shape in _secrets().items():
        text = "the deploy key is " + shape.format(secret) + " keep it safe"
        for args in (["add", text], ["add", "-", "--json"]):
            result = run_memctl(*args, store=store, input=text if "-" in args else None)
            assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
            assert secret not in result.stderr + result.stdout
            assert secret[4:20] not in result.stderr + result.stdout
    assert tree_snapshot(store) == before
    assert not any(s in git(store, "log", "-p", "--all").stdout for s in _secrets())


def test_secrets_in_hand_written_notes_stay_out_of_every_message_and_report(store: Path,
                                                                            tmp_path: Path) -> None:
    """Secrets in a note body and in front matter that does not parse: warnings, errors, the
    health report (all three formats) and the watcher's log show at most a masked form."""
    folder = store / "alpha" / "notes" / "fact"
    secrets = list(_secrets())
    shapes = list(_secrets().values())
    body = "\n".join(shape.format(secret) for secret, shape in zip(secrets, shapes, strict=True))
    (folder / "leaky.md").write_text(f"---\nid: 0000000000leaky1\n---\nCredentials:\n{body}\n")
    (folder / "broken-leaky.md").write_text(
        f"---\nid: 0000000000leaky2\npassword: \"{secrets[3]}\ntoken: [{shapes[1].format(secrets[1])}\n"
        f"---\n{body}\n")
    with running_watcher(store) as watcher:
        (folder / "watched-leaky.md").write_text(f"---\nid: [{shapes[2].format(secrets[2])}\n---\nx\n")
        time.sleep(1.5)
    watch_log = (watcher.stderr.read() if watcher.stderr else "")
    report = tmp_path / "health.md"
    outputs = [watch_log]
    for args in (["search", "credentials", "--all-projects"], ["list", "--all-projects"],
                 ["reindex"], ["health"], ["health", "--json"], ["health", "--markdown", str(report)],
                 ["show", "0000000000leaky2"], ["forget", "0000000000leaky2"]):
        result = run_memctl(*args, store=store)
        no_traceback(result.stderr)
        outputs.append(result.stderr)
        if args[0] == "health":
            outputs.append(result.stdout)
    outputs.append(report.read_text())
    health = run_memctl("health", "--json", store=store).stdout
    assert "leaky.md" in health  # the report does list the secrets it found
    everything = "\n".join(outputs)
    for secret in secrets:
        assert secret not in everything, f"a secret was printed: {secret[:4]}…"
        assert secret[6:22] not in everything


UMASK_COMMANDS = (["init"], ["add", "first note about umasks"], ["add", "second note on modes",
                  "--project", "beta"], ["reindex"], ["search", "umasks"], ["project", "add",
                  "decisions", "keep modes"], ["scratch", "focus", "modes"])


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002, 0o000], ids=lambda u: f"umask-{u:03o}")
def test_files_follow_the_umask_and_are_never_world_writable(tmp_path: Path, umask: int) -> None:
    root = tmp_path / "store"
    tmp_path.chmod(0o755)
    env = dict(os.environ, MEMCTL_STORE=str(root), MEMCTL_PROJECT="alpha")
    commands = [*UMASK_COMMANDS, ["export", str(tmp_path / "bundle.zip")],
                ["health", "--markdown", str(tmp_path / "report.md")]]
    for args in commands:
        done = subprocess.run([memctl_executable(), *args], env=env, capture_output=True,
                              text=True, umask=umask, timeout=60)
        assert done.returncode == 0, (args, done.stderr)
    created = [root, *root.rglob("*"), tmp_path / "bundle.zip", tmp_path / "report.md"]
    writable = [f"{oct(p.stat().st_mode & 0o777)} {p.relative_to(tmp_path)}" for p in created
                if p.stat().st_mode & 0o002 and not p.is_symlink()]
    assert not writable, f"world-writable with umask {umask:03o}: {writable[:10]}"
    for path in created:
        mode = path.stat().st_mode & 0o777
        assert not mode & umask & ~0o002 & ~(0o444 if ".git" in path.parts else 0), \
            f"{path.relative_to(tmp_path)} is {oct(mode)} despite umask {umask:03o}"
    for note in (root / "alpha" / "notes").rglob("*.md"):
        assert note.stat().st_mode & 0o777 == 0o666 & ~umask & ~0o002


def test_a_watcher_killed_with_kill_9_never_leaves_reads_stale(store: Path) -> None:
    """Commands trust a live watcher to keep the index fresh; a dead one must stop counting."""
    import signal

    with running_watcher(store) as watcher:
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
    (store / "alpha" / "after-the-watcher.md").write_text("dropped after the watcher died\n")
    hits = run_memctl("search", "watcher died", "--all-projects", "--json", store=store)
    assert hits.exit_code == 0 and [h["path"] for h in hits.json()] == ["alpha/after-the-watcher.md"]


def test_a_state_file_on_a_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    """A file of `.memctl/` that cannot be written for want of room (a `memctl mcp` starting
    its watcher on a full disk: `watch.json`) advises freeing disk space, not checking the
    permissions of the folder, which are fine; a refused permission still says that."""
    import errno

    from memctl.disk.layout import state_file_error

    full = str(state_file_error(tmp_path / "watch.json", OSError(errno.ENOSPC, "No space left on device")))
    assert "free some disk space" in full and "permissions" not in full, full
    denied = str(state_file_error(tmp_path / "watch.json", OSError(errno.EACCES, "Permission denied")))
    assert "check the permissions of the store's .memctl folder" in denied, denied
