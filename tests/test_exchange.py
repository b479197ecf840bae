"""export/import between stores: round trips, every newest-wins case, dry runs, and a kill -9
in the middle of an import."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from conftest import Cli, edit, git, memctl_executable, run_memctl, tree_snapshot

from memctl.core.errors import MemctlError
from memctl.disk.counters import get_counters, record_access
from memctl.store import Store

T1, T2, T3, T4 = ("2026-11-30T09:00:00.000Z", "2026-11-30T10:00:00.000Z",
                  "2026-11-30T11:00:00.000Z", "2026-11-30T12:00:00.000Z")


@pytest.fixture
def machines(tmp_path):
    stores = []
    for name in ("laptop", "desktop"):
        root = tmp_path / name
        Store.init(root)
        stores.append(Cli(root))
    return stores


def add(cli: Cli, text: str, now: str = T1, *extra: str) -> str:
    return cli.ok("add", text, "--json", *extra, env={"MEMCTL_NOW": now}).json()["id"]


def body_of(cli: Cli, note_id: str) -> str:
    return cli.ok("show", note_id, "--json").json()["body"].strip()


def transfer(src: Cli, dst: Cli, *options: str) -> dict:
    archive = src.store.parent / f"from-{src.store.name}.zip"
    src.ok("export", str(archive))
    return dst.ok("import", str(archive), "--json", *options).json()


def memory_files(root: Path) -> dict[str, bytes]:
    return {p: d for p, d in tree_snapshot(root).items()
            if not p.startswith((".counters/", ".gitattributes")) and not p.endswith(".gitkeep")}


def test_round_trip_keeps_every_file_byte_for_byte(machines, tmp_path):
    laptop, desktop = machines
    keep = add(laptop, "PostgreSQL 16 is the database", T1, "--tags", "db,postgres")
    gone = add(laptop, "This note will be forgotten", T1)
    add(laptop, "Prefer small pull requests", T1, "--type", "preference", "--global")
    laptop.ok("project", "add", "constraints", "no ORM", env={"MEMCTL_NOW": T1})
    laptop.ok("scratch", "focus", "round trips", env={"MEMCTL_NOW": T1})
    laptop.ok("forget", gone, env={"MEMCTL_NOW": T2})
    record_access(laptop.store, [keep, keep])  # as recall and search do
    (laptop.store / "demo/notes/fact/hand-dropped.md").write_text("Dropped in by hand, no front matter.\n")
    report = transfer(laptop, desktop)
    assert keep in report["added"] and gone in report["deleted"]
    assert memory_files(desktop.store) == memory_files(laptop.store)
    assert desktop.ok("show", keep, "--json").json()["access_count"] == \
        laptop.ok("show", keep, "--json").json()["access_count"] >= 1
    assert "round trips" in desktop.ok("scratch", "show").stdout
    head = git(laptop.store, "rev-parse", "HEAD")
    back = transfer(desktop, laptop)
    assert back["added"] == back["updated"] == back["deleted"] == back["conflicts"] == []
    assert keep in back["unchanged"]
    assert git(laptop.store, "rev-parse", "HEAD") == head, "a no-op import makes no commit"


def test_import_of_another_store_and_of_a_folder(machines, tmp_path):
    laptop, desktop = machines
    note = add(laptop, "Imported straight from the other store", T1)
    assert desktop.ok("import", str(laptop.store), "--json").json()["added"] == [note]
    folder = tmp_path / "unzipped"
    laptop.ok("export", str(tmp_path / "x.zip"))
    zipfile.ZipFile(tmp_path / "x.zip").extractall(folder)
    assert desktop.ok("import", str(folder), "--json").json()["unchanged"] == [note]


def test_newer_remote_and_newer_local(machines):
    laptop, desktop = machines
    note = add(laptop, "The cache TTL is 60 seconds", T1)
    transfer(laptop, desktop)
    edit(desktop, note, "The cache TTL is 300 seconds", T2)
    report = transfer(desktop, laptop)
    assert report["updated"] == [note] and report["conflicts"] == []
    assert body_of(laptop, note) == "The cache TTL is 300 seconds"
    report = transfer(laptop, desktop)  # the older side has nothing newer to give
    assert report["unchanged"] == [note]
    edit(laptop, note, "The cache TTL is 600 seconds", T3)
    edit(desktop, note, "The cache TTL is 120 seconds", T4)  # newer, made concurrently
    report = transfer(desktop, laptop)
    assert body_of(laptop, note) == "The cache TTL is 120 seconds"
    assert report["conflicts"] == [note]
    copies = laptop.ok("conflicts", "--json").json()
    assert len(copies) == 1 and copies[0]["id"] == note
    assert "600 seconds" in (laptop.store / copies[0]["path"]).read_text()
    transfer(laptop, desktop)
    assert body_of(desktop, note) == "The cache TTL is 120 seconds"
    assert memory_files(desktop.store) == memory_files(laptop.store), "both machines converge"


def test_hand_edit_beats_an_earlier_stamped_edit(machines):
    laptop, desktop = machines
    note = add(laptop, "Deploys happen on Tuesdays", T1)
    transfer(laptop, desktop)
    edit(desktop, note, "Deploys happen on Wednesdays", T2)
    path = laptop.store / laptop.ok("show", note, "--json").json()["path"]
    path.write_text(path.read_text().replace("Tuesdays", "Thursdays, edited by hand"))
    later = 1796043600  # 2026-12-01, after the desktop's stamped edit
    os.utime(path, (later, later))
    report = transfer(desktop, laptop)
    assert body_of(laptop, note) == "Deploys happen on Thursdays, edited by hand"
    assert report["conflicts"] == [note]
    transfer(laptop, desktop)
    assert body_of(desktop, note) == "Deploys happen on Thursdays, edited by hand"


def test_equal_stamps_resolve_the_same_on_both_machines(machines):
    laptop, desktop = machines
    note = add(laptop, "Logging goes to stdout", T1)
    transfer(laptop, desktop)
    edit(laptop, note, "Logging goes to journald", T2)
    edit(desktop, note, "Logging goes to a file", T2)
    one = laptop.store.parent / "one.zip"
    two = desktop.store.parent / "two.zip"
    laptop.ok("export", str(one))
    desktop.ok("export", str(two))
    laptop.ok("import", str(two))
    desktop.ok("import", str(one))
    assert body_of(laptop, note) == body_of(desktop, note)
    assert len(laptop.ok("conflicts", "--json").json()) == 1
    assert memory_files(desktop.store) == memory_files(laptop.store)


def test_deletion_beats_an_older_copy_and_loses_to_a_later_edit(machines):
    laptop, desktop = machines
    doomed = add(laptop, "An outdated fact about the build", T1)
    revived = add(laptop, "A fact someone will still edit", T1)
    transfer(laptop, desktop)
    stale = desktop.store.parent / "stale.zip"
    desktop.ok("export", str(stale))  # made before the deletions
    laptop.ok("forget", doomed, env={"MEMCTL_NOW": T2})
    laptop.ok("forget", revived, env={"MEMCTL_NOW": T2})
    edit(desktop, revived, "Edited after the deletion, so it comes back", T3)
    report = laptop.ok("import", str(stale), "--json").json()
    assert doomed not in report["added"] and revived not in report["added"]
    assert laptop("show", doomed).exit_code == 1, "an older copy must not resurrect a deleted note"
    report = transfer(desktop, laptop)
    assert report["added"] == [revived]
    assert body_of(laptop, revived) == "Edited after the deletion, so it comes back"
    assert not (laptop.store / f".tombstones/{revived}.md").exists()
    report = transfer(laptop, desktop)
    assert report["deleted"] == [doomed]
    assert desktop("show", doomed).exit_code == 1
    assert memory_files(desktop.store) == memory_files(laptop.store)


def test_a_note_deleted_by_hand_is_reported_as_deleted_by_the_import_that_removes_it(machines):
    laptop, desktop = machines
    gone = add(laptop, "Deleted by hand on the laptop", T1)
    kept = add(laptop, "Kept on both machines", T1)
    transfer(laptop, desktop)
    next((laptop.store / "demo/notes/fact").glob(f"*-{gone}.md")).unlink()
    archive = laptop.store.parent / "after-removal.zip"
    laptop.ok("export", str(archive))
    dry = desktop.ok("import", str(archive), "--dry-run")
    assert "1 deleted" in dry.stderr + dry.stdout and "would remove" in dry.stderr + dry.stdout
    text = desktop.ok("import", str(archive), "--dry-run", "--json").json()
    assert text["deleted"] == [gone] and text["unchanged"] == [kept]
    report = desktop.ok("import", str(archive), "--json").json()
    assert report["deleted"] == [gone], "what an import deletes is reported"
    assert desktop("show", gone).exit_code == 1
    assert "1 deleted" in git(desktop.store, "log", "-1", "--format=%s")


def test_an_import_keeps_a_rename_made_here_and_takes_the_edit_the_bundle_brings(machines):
    """The note was renamed here (`git mv`) and edited on the other machine: the import
    takes the edit and keeps the new name, with nothing left at the old one (docs/sync.md).
    A bundle carries no earlier paths; this store's history tells its own moves."""
    laptop, desktop = machines
    note = add(laptop, "Never push straight to main", T1)
    transfer(laptop, desktop)
    edit(desktop, note, "Never push straight to main or release", T2)
    [old] = laptop.store.glob(f"demo/notes/fact/*-{note}.md")
    git(laptop.store, "mv", old.relative_to(laptop.store).as_posix(), "demo/notes/fact/never-push.md")
    git(laptop.store, "commit", "-qm", "hand: a shorter name")
    report = transfer(desktop, laptop)
    assert report["updated"] == [note] and report["conflicts"] == []
    assert laptop.ok("show", note, "--json").json()["path"] == "demo/notes/fact/never-push.md"
    assert body_of(laptop, note) == "Never push straight to main or release"
    assert not old.exists() and not (laptop.store / ".conflicts").exists()
    assert git(laptop.store, "status", "--porcelain") == ""


@pytest.mark.parametrize("in_the_way", ["file for a folder", "folder for a file"])
def test_an_import_that_meets_something_in_the_way_changes_nothing(machines, in_the_way):
    laptop, desktop = machines
    add(laptop, "A note the import would write first", T1)
    zeta = add(laptop, "A note of project zeta", T1, "--project", "zeta")
    archive = laptop.store.parent / "blocked.zip"
    laptop.ok("export", str(archive))
    if in_the_way == "file for a folder":
        (desktop.store / "zeta").write_text("a stray file named like the project\n")
    else:
        name = next((laptop.store / "zeta/notes/fact").glob(f"*-{zeta}.md")).name
        (desktop.store / "zeta/notes/fact" / name / "inner").mkdir(parents=True)
    before, status = tree_snapshot(desktop.store), git(desktop.store, "status", "--porcelain")
    head = git(desktop.store, "rev-parse", "HEAD")
    for options in (["--dry-run"], []):
        result = run_memctl("import", str(archive), *options, store=desktop.store)
        assert result.exit_code == 1, result.stderr
        assert result.stderr.startswith("error: cannot import: zeta") \
            and len(result.error.strip().splitlines()) == 1, result.stderr
        assert tree_snapshot(desktop.store) == before, "nothing written, not even the first note"
        assert git(desktop.store, "status", "--porcelain") == status
        assert git(desktop.store, "rev-parse", "HEAD") == head
        assert not list((desktop.store / ".memctl").glob("txn-*")), "no journal left to roll back"


def _note_bytes(note_id: str, text: str) -> bytes:
    return (f"---\nid: {note_id}\ntype: fact\nproject: zeta\nimportance: 5\n"
            f"created: 2026-11-01T00:00:00Z\nupdated: 2026-11-01T00:00:00Z\n---\n{text}\n").encode()


@pytest.mark.parametrize("twins", ["two files of the zip", "a file of the store",
                                   "a folder of the store", "two Unicode forms"])
def test_an_import_that_would_make_names_differing_only_in_case_changes_nothing(machines, twins):
    """On a disk that ignores case (macOS, Windows) `Deploy.md` and `deploy.md` are one file:
    an import that writes both, or one beside the other already in the store, would lose one
    note there. It is refused before anything is written, naming the pair; on this disk too,
    so a store never holds what cannot be checked out everywhere."""
    laptop, desktop = machines
    zeta = add(desktop, "The deploy runs on fridays", T1, "--project", "zeta")
    kept = next((desktop.store / "zeta/notes/fact").glob(f"*-{zeta}.md")).relative_to(desktop.store)
    if twins == "two files of the zip":
        files = {"zeta/notes/fact/deploy.md": _note_bytes("01caseone0000000", "on fridays"),
                 "zeta/notes/fact/Deploy.md": _note_bytes("01casetwo0000000", "on mondays")}
        named = ("zeta/notes/fact/deploy.md", "zeta/notes/fact/Deploy.md")
    elif twins == "a file of the store":
        upper = f"{kept.parent}/{kept.name.upper()}"
        files = {upper: _note_bytes("01casetwo0000000", "on mondays")}
        named = (upper, f"existing {kept}")
    elif twins == "a folder of the store":
        files = {"zeta/Notes/fact/deploy.md": _note_bytes("01casetwo0000000", "on mondays")}
        named = ("zeta/Notes", "existing zeta/notes ")
    else:  # café composed and decomposed: one name to macOS
        files = {"zeta/notes/fact/caf\u00e9.md": _note_bytes("01caseone0000000", "on fridays"),
                 "zeta/notes/fact/cafe\u0301.md": _note_bytes("01casetwo0000000", "on mondays")}
        named = ("zeta/notes/fact/caf",)
    archive = laptop.store.parent / "twins.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for name, data in files.items():
            bundle.writestr(name, data)
    before, head = tree_snapshot(desktop.store), git(desktop.store, "rev-parse", "HEAD")
    for options in (["--dry-run"], []):
        result = run_memctl("import", str(archive), *options, store=desktop.store)
        assert result.exit_code == 1, result.stderr
        assert result.stderr.startswith("error: cannot import: ") \
            and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "only in case or Unicode form" in result.stderr \
            and all(name in result.stderr for name in named), result.stderr
        assert tree_snapshot(desktop.store) == before
        assert git(desktop.store, "rev-parse", "HEAD") == head
        assert git(desktop.store, "status", "--porcelain") == ""
    assert body_of(desktop, zeta) == "The deploy runs on fridays"


def test_an_import_over_a_store_that_holds_case_twins_already_still_imports(machines):
    """Only a name the import makes is checked: a store whose folder holds two names differing
    only in case (made by hand on this disk) still takes an import into that folder."""
    laptop, desktop = machines
    zeta = add(desktop, "The deploy runs on fridays", T1, "--project", "zeta")
    folder = next((desktop.store / "zeta/notes/fact").glob(f"*-{zeta}.md")).parent
    (folder / "README.MD").write_text("kept by hand\n")
    (folder / "readme.md").write_text("kept by hand too\n")
    git(desktop.store, "add", "-A")
    git(desktop.store, "commit", "-q", "-m", "twins by hand")
    archive = laptop.store.parent / "over.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("zeta/notes/fact/deploy.md", _note_bytes("01caseone0000000", "on mondays"))
    desktop.ok("import", str(archive))
    assert body_of(desktop, "01caseone0000000") == "on mondays"
    assert (folder / "README.MD").read_text() == "kept by hand\n"
    assert (folder / "readme.md").read_text() == "kept by hand too\n"


def _renamed_by_case(machines) -> tuple[Cli, str, Path, str, Path]:
    """A note both stores have, its file renamed on the laptop to the same name in capitals
    (with plain git), then edited there: (desktop, id, its path there, its new name, the
    laptop's export)."""
    laptop, desktop = machines
    note = add(desktop, "The deploy runs on fridays", T1, "--project", "zeta")
    transfer(desktop, laptop)
    old = next((laptop.store / "zeta/notes/fact").glob(f"*-{note}.md"))
    new = old.with_name(old.name.upper().replace(".MD", ".md"))
    git(laptop.store, "mv", str(old.relative_to(laptop.store)), str(new.relative_to(laptop.store)))
    git(laptop.store, "commit", "-q", "-m", "renamed by hand")
    edit(laptop, note, "The deploy runs on mondays", T2)
    archive = laptop.store.parent / "renamed.zip"
    laptop.ok("export", str(archive))
    return desktop, note, desktop.store / old.relative_to(laptop.store), new.name, archive


def test_a_note_renamed_by_case_alone_is_imported_as_a_rename(machines):
    """A file name that changes only in case is one note moved, not a twin beside it: the
    import writes the new name and removes the old one (refused as a twin at first)."""
    desktop, note, old, new_name, archive = _renamed_by_case(machines)
    report = desktop.ok("import", str(archive), "--json").json()
    assert report["updated"] == [note], report
    assert sorted(p.name for p in old.parent.iterdir()) == [new_name]
    assert body_of(desktop, note) == "The deploy runs on mondays"
    assert git(desktop.store, "status", "--porcelain") == ""


def test_an_import_removes_before_it_writes(machines):
    """The rename's removal of `deploy….md` is applied before the write of `DEPLOY….md`: on a
    disk that ignores case the two are one file, and the write first, then the removal,
    deleted the note there. Killed after its first step, the import has removed the old
    name and not yet written the new one; the next command puts everything back."""
    desktop, note, old, new_name, archive = _renamed_by_case(machines)
    before = tree_snapshot(desktop.store)
    assert _spawn_import(desktop.store, archive, "import-op-0") == -9
    assert sorted(p.name for p in old.parent.iterdir()) == []
    with Store.open(desktop.store).lock("test"):  # the next command to take the lock
        pass  # rolls the killed import back
    assert tree_snapshot(desktop.store) == before
    assert body_of(desktop, note) == "The deploy runs on fridays"


def test_memory_md_merges_as_a_whole_file(machines):
    laptop, desktop = machines
    laptop.ok("project", "add", "decisions", "use Kysely", env={"MEMCTL_NOW": T1})
    transfer(laptop, desktop)
    desktop.ok("project", "add", "progress", "schema migrated", env={"MEMCTL_NOW": T2})
    report = transfer(desktop, laptop)
    assert report["updated"] == ["demo/MEMORY.md"]
    assert "schema migrated" in (laptop.store / "demo/MEMORY.md").read_text()


def test_dry_run_prints_exactly_what_would_change(machines):
    laptop, desktop = machines
    note = add(laptop, "A note for the dry run", T1)
    archive = laptop.store.parent / "dry.zip"
    laptop.ok("export", str(archive))
    before, head = tree_snapshot(desktop.store), git(desktop.store, "rev-parse", "HEAD")
    result = desktop.ok("import", str(archive), "--dry-run")
    path = laptop.ok("show", note, "--json").json()["path"]
    assert f"would write {path}" in result.stderr
    assert tree_snapshot(desktop.store) == before and git(desktop.store, "rev-parse", "HEAD") == head
    planned = desktop.ok("import", str(archive), "--dry-run", "--json").json()
    done = desktop.ok("import", str(archive), "--json").json()
    assert planned == done


def _spawn_import(store: Path, archive: Path, crash_at: str) -> int:
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_CRASH_AT=crash_at)
    return subprocess.run([memctl_executable(), "import", str(archive)], env=env,
                          capture_output=True, timeout=60).returncode


@pytest.mark.parametrize("crash_at", [
    "import-op-2",
    pytest.param("import-journal", marks=pytest.mark.slow),
    pytest.param("import-op-0", marks=pytest.mark.slow),
    pytest.param("import-applied", marks=pytest.mark.slow),
])
def test_kill_9_during_import_leaves_the_store_as_it_was(machines, crash_at):
    laptop, desktop = machines
    for number in range(4):
        add(laptop, f"Imported note number {number}", T1)
    shared = add(desktop, "A note both stores change", T1)
    edit(desktop, shared, "Changed on the desktop", T1)
    archive = laptop.store.parent / "big.zip"
    laptop.ok("export", str(archive))
    before, head = tree_snapshot(desktop.store), git(desktop.store, "rev-parse", "HEAD")
    assert _spawn_import(desktop.store, archive, crash_at) == -9
    from memctl.disk.journal import recover_pending
    from memctl.disk.layout import state_path

    store = Store.open(desktop.store)
    assert list((desktop.store / ".memctl").glob("txn-*")), "the killed import left its journal"
    with store.lock("test"):  # the next command to take the lock rolls the import back
        assert recover_pending(store.root, state_path(store)) == []
    assert not list((desktop.store / ".memctl").glob("txn-*"))
    assert tree_snapshot(desktop.store) == before
    assert git(desktop.store, "rev-parse", "HEAD") == head
    assert git(desktop.store, "status", "--porcelain") == ""
    assert len(desktop.ok("import", str(archive), "--json").json()["added"]) == 4


def test_a_watcher_with_commit_rolls_a_killed_import_back_instead_of_committing_its_half(machines):
    """`memctl watch --commit` took the files a killed import had written for hand edits and
    committed them (`memctl watch: hand edits (2 added, ...)`); the next command then saw HEAD
    moved and took the import for completed: half an import stayed, committed. The watcher's
    commit, under the store lock, rolls the import back first, as every command does."""
    import threading

    from memctl.watch.watcher import Watcher

    laptop, desktop = machines
    for number in range(4):
        add(laptop, f"Imported note number {number}", T1)
    archive = laptop.store.parent / "big.zip"
    laptop.ok("export", str(archive))
    before, head = tree_snapshot(desktop.store), git(desktop.store, "rev-parse", "HEAD")
    said: list[str] = []
    watcher = Watcher(desktop.store, commit=True, quiet=0.05, max_delay=0.5, commit_every=0.1,
                      on_message=said.append)
    ready = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"on_ready": ready.set}, daemon=True)
    thread.start()
    try:
        assert ready.wait(60)
        assert _spawn_import(desktop.store, archive, "import-op-1") == -9
        deadline = time.monotonic() + 60
        while list((desktop.store / ".memctl").glob("txn-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # a few more ticks: nothing of the import is left to commit
    finally:
        watcher.stop()
        thread.join(60)
    assert git(desktop.store, "rev-parse", "HEAD") == head, git(desktop.store, "log", "--format=%s")
    assert tree_snapshot(desktop.store) == before
    assert git(desktop.store, "status", "--porcelain") == ""
    assert any("rolled back an interrupted change" in line for line in said), said


def _import_with_file_size_limit(store: Path, archive: Path, limit: int):
    """`memctl import` where no file may grow past `limit` bytes (RLIMIT_FSIZE): every write
    beyond it fails with EFBIG, in memctl and in the git it runs, as on a disk that is full."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    # No bytecode written under the limit: Python's own cache writer does not check for a
    # short write, and a truncated .pyc would break every later run.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([memctl_executable(), "--store", str(store), "import", str(archive)],
                          capture_output=True, text=True, timeout=60, preexec_fn=limited, env=env)


def test_an_import_that_cannot_write_is_all_or_nothing_with_one_line(machines, tmp_path):
    """A write that fails anywhere (the staged copies, git's index, the counters) is a real
    failure here: the process may not grow a file past a limit. Whatever the limit, the import
    is done, or it says so in one line and the store's files, HEAD and journal are as before;
    a committed import whose counts could not be merged says that and keeps the import."""
    laptop, desktop = machines
    for number in range(4):
        add(laptop, f"Imported note number {number} about the cache", T1)
    record_access(Store.open(laptop.store), [add(laptop, "Recalled often", T1)])
    small = tmp_path / "small.zip"
    laptop.ok("export", str(small))
    big = "Zz a build log kept whole\n\n" + "one line of the build log\n" * 6000
    laptop.ok("add", "-", input=big, env={"MEMCTL_NOW": T1})
    whole = tmp_path / "whole.zip"
    laptop.ok("export", str(whole))
    add(desktop, "A note of the desktop", T1)
    before, head = tree_snapshot(desktop.store), git(desktop.store, "rev-parse", "HEAD")
    outcomes = set()
    runs = [(small, limit) for limit in (600, 1_500, 2_500, 4_000, 8_000, 16_000, 32_000)] + \
        [(whole, limit) for limit in (120_000, 400_000)]
    for number, (archive, limit) in enumerate(runs):
        copy = tmp_path / f"desktop-{number}"
        subprocess.run(["cp", "-a", str(desktop.store), str(copy)], check=True)
        done = _import_with_file_size_limit(copy, archive, limit)
        notes = 5 if archive == small else 6
        assert "Traceback" not in done.stderr, (limit, done.stderr)
        assert not list((copy / ".memctl").glob("txn-*")), limit
        # A write that fails is the disk's, not damage: the counters are never set aside.
        assert not list((copy / ".memctl").glob("*.damaged-*")), (limit, done.stderr)
        if done.returncode == 0:
            assert git(copy, "rev-parse", "HEAD") != head
            listed = run_memctl("list", "--all-projects", "--json", store=copy).json()
            assert len(listed) == notes + 1, limit  # the zip's and the desktop's own
            if "not merged" in done.stderr:
                outcomes.add("counts not merged")
                assert done.stderr.count("warning:") == 1, done.stderr
            else:
                outcomes.add("imported")
            continue
        outcomes.add("refused")
        assert done.returncode == 1, (limit, done.stderr)
        assert done.stderr.startswith("error: cannot import") and done.stderr.count("\n") == 1, \
            (limit, done.stderr)
        assert tree_snapshot(copy) == before, limit
        assert git(copy, "rev-parse", "HEAD") == head, limit
        again = run_memctl("import", str(archive), "--json", store=copy)  # no limit: it is done
        assert again.exit_code == 0, again.stderr
        assert len(again.json()["added"]) == notes
    assert {"refused", "imported", "counts not merged"} <= outcomes, outcomes


def test_kill_9_after_the_commit_keeps_the_import(machines):
    laptop, desktop = machines
    note = add(laptop, "Committed before the kill", T1)
    archive = laptop.store.parent / "late.zip"
    laptop.ok("export", str(archive))
    assert _spawn_import(desktop.store, archive, "import-committed") == -9
    assert list((desktop.store / ".memctl").glob("txn-*"))
    # the next command cleans up and sees the import
    assert desktop.ok("import", str(archive), "--json").json()["unchanged"] == [note]
    assert not list((desktop.store / ".memctl").glob("txn-*"))
    assert git(desktop.store, "status", "--porcelain") == ""


def test_conflict_copies_can_be_kept_or_dropped_and_stay_resolved(machines):
    laptop, desktop = machines
    note = add(laptop, "Builds run on GitHub Actions", T1)
    transfer(laptop, desktop)
    edit(laptop, note, "Builds run on Buildkite", T2)
    edit(desktop, note, "Builds run on Jenkins", T3)
    transfer(desktop, laptop)
    transfer(laptop, desktop)
    assert len(desktop.ok("conflicts", "--json").json()) == 1
    for command in ("drop", "keep", "show", "diff"):  # `²`: a digit to isdigit, no number
        odd = laptop("conflicts", command, "²")
        assert odd.exit_code in (1, 2) and odd.stderr.startswith("error: "), odd.stderr
        assert "Traceback" not in odd.stderr
    laptop.ok("conflicts", "drop", "1")
    assert laptop.ok("conflicts", "--json").json() == []
    transfer(desktop, laptop)
    assert laptop.ok("conflicts", "--json").json() == [], "a dropped copy came back"
    transfer(laptop, desktop)
    assert desktop.ok("conflicts", "--json").json() == [], "the drop did not travel"

    edit(laptop, note, "Builds run on a self-hosted runner", T4)
    edit(desktop, note, "Builds run on CircleCI", "2026-11-30T13:00:00.000Z")
    transfer(desktop, laptop)
    assert body_of(laptop, note) == "Builds run on CircleCI"
    kept = laptop.ok("conflicts", "keep", note, "--json").json()
    assert kept["id"] == note and laptop.ok("conflicts", "--json").json() == []
    assert body_of(laptop, note) == "Builds run on a self-hosted runner"
    transfer(laptop, desktop)
    assert body_of(desktop, note) == "Builds run on a self-hosted runner"


def test_a_kept_copy_is_stamped_after_the_version_it_replaces_on_a_clock_that_is_behind(machines):
    """The desktop's clock runs two hours ahead of the laptop's: its edit (14:00) wins, and
    the laptop keeps its own version back at 12:00 by its clock. `conflicts keep` stamped
    the laptop's clock alone, dating the person's decision before the version it replaced
    (docs/sync.md: memctl's stamps never go backwards). It is stamped 1 ms after it."""
    laptop, desktop = machines
    note = add(laptop, "Builds run on GitHub Actions", T1)
    transfer(laptop, desktop)
    edit(laptop, note, "Builds run on Buildkite", T2)
    edit(desktop, note, "Builds run on Jenkins", "2026-11-30T14:00:00.000Z")
    transfer(desktop, laptop)
    assert body_of(laptop, note) == "Builds run on Jenkins"
    laptop.ok("conflicts", "keep", "1", env={"MEMCTL_NOW": "2026-11-30T12:00:00.000Z"})
    assert body_of(laptop, note) == "Builds run on Buildkite"
    updated = laptop.ok("show", note, "--json").json()["updated"]
    assert updated == "2026-11-30T14:00:00.001Z", updated
    transfer(laptop, desktop)
    assert body_of(desktop, note) == "Builds run on Buildkite"


def _a_conflict_copy_on_the_laptop(machines) -> tuple[Cli, str, Path]:
    """A note edited on both machines, the desktop's edit later: the laptop keeps it and a
    conflict copy of its own. The laptop, the note's id and its file."""
    laptop, desktop = machines
    note = add(laptop, "Builds run on GitHub Actions", T1)
    transfer(laptop, desktop)
    edit(laptop, note, "Builds run on a self-hosted runner", T2)
    edit(desktop, note, "Builds run on CircleCI", T3)
    transfer(desktop, laptop)
    return laptop, note, laptop.store / laptop.ok("show", note, "--json").json()["path"]


def test_keeping_a_copy_over_a_version_edited_by_hand_since_its_commit_is_refused(machines):
    """`conflicts keep` wrote the copy over the current version: a line typed into that file
    by hand and not committed was in no file and no commit afterwards. The keep is refused,
    nothing changed, until the edit is committed or undone."""
    laptop, note, path = _a_conflict_copy_on_the_laptop(machines)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("Typed by hand, not committed.\n")
    before = tree_snapshot(laptop.store)
    refused = laptop("conflicts", "keep", "1")
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ")
    assert len(refused.stderr.strip().splitlines()) == 1 and "changes made since" in refused.stderr
    assert tree_snapshot(laptop.store) == before
    git(laptop.store, "commit", "-q", "-am", "the hand edit")
    laptop.ok("conflicts", "keep", "1")
    assert "Typed by hand" in git(laptop.store, "log", "-p", "--all")
    assert body_of(laptop, note) == "Builds run on a self-hosted runner"


def test_a_refused_keep_leaves_the_notes_tombstone(machines):
    """The keep deleted the note's tombstone, then refused (a hand-brought-back version not
    committed) saying nothing was changed: the tombstone stayed deleted, uncommitted."""
    laptop, note, path = _a_conflict_copy_on_the_laptop(machines)
    kept = path.read_bytes()
    laptop.ok("forget", note)
    path.write_bytes(kept + b"Brought back by hand, not committed.\n")
    before = tree_snapshot(laptop.store)
    refused = laptop("conflicts", "keep", "1")
    assert refused.exit_code == 1 and "changes made since" in refused.stderr
    assert tree_snapshot(laptop.store) == before
    assert (laptop.store / ".tombstones" / f"{note}.md").exists()


def test_export_refuses_a_target_that_is_not_a_regular_file(store_path, tmp_path):
    """A folder, a FIFO (standing in for a device such as /dev/full), an empty name: refused
    with one line, the thing at the path left as it is; never replaced by a regular file."""
    from conftest import run_memctl

    run_memctl("add", "something to export", store=store_path)
    folder = tmp_path / "backups"
    folder.mkdir()
    pipe = tmp_path / "pipe.zip"
    os.mkfifo(pipe)
    for target, words in ((folder, "is a folder"), (pipe, "not a regular file")):
        result = run_memctl("export", str(target), store=store_path)
        assert result.exit_code == 1, result.stderr
        assert result.stderr.startswith("error:") and words in result.stderr, result.stderr
        assert len(result.error.strip().splitlines()) == 1
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode), "the FIFO is still a FIFO"
    empty = run_memctl("export", "", store=store_path)
    assert empty.exit_code == 2 and "Traceback" not in empty.stderr, empty.stderr
    assert not list(tmp_path.glob(".*.tmp")) and not list(folder.parent.glob(".pipe.zip*"))


def test_export_makes_the_missing_folders_of_its_target(store_path, tmp_path):
    from conftest import run_memctl

    added = run_memctl("add", "The release checklist lives in the wiki", "--json",
                       store=store_path).json()
    target = tmp_path / "backups" / "2026" / "memory.zip"
    result = run_memctl("export", str(target), store=store_path)
    assert result.exit_code == 0, result.stderr
    assert zipfile.is_zipfile(target)
    other = tmp_path / "other"
    Store.init(other)
    assert run_memctl("import", str(target), store=other).exit_code == 0
    assert run_memctl("show", added["id"], "--json", store=other).json()["title"] == (
        "The release checklist lives in the wiki")
    # A file where a folder must be: one line, the file as it was, no zip, no folder.
    blocker = tmp_path / "notes.txt"
    blocker.write_text("keep me\n")
    blocked = run_memctl("export", str(blocker / "sub" / "memory.zip"), store=store_path)
    assert blocked.exit_code == 1 and blocked.error.count("\n") == 1
    assert blocked.stderr.startswith("error: cannot create the folder") and "is a file" in blocked.stderr
    assert blocker.read_text() == "keep me\n"


def test_export_writes_no_zip_an_import_would_refuse_for_its_size(machines, tmp_path):
    """An export counts entries and bytes as an import does (bundle.size_problem): at the
    limits the zip is written and imports; one entry or one byte less and nothing is written,
    with one line saying what to do."""
    from memctl.exchange.bundle import BundleError, Limits, read_bundle
    from memctl.exchange.transfer import export_store

    laptop, _ = machines
    for number in range(3):
        add(laptop, f"Deploy step {number} is written down in the runbook")
    store = Store(laptop.store)
    fits = tmp_path / "fits.zip"
    export_store(store, fits)
    with zipfile.ZipFile(fits) as archive:
        entries = len(archive.infolist())
        total = sum(info.file_size for info in archive.infolist())
    exact = Limits(max_entries=entries, max_total_bytes=total)
    at_the_limits = tmp_path / "exact.zip"
    export_store(store, at_the_limits, limits=exact)
    assert read_bundle(at_the_limits, exact).files  # what the export let through imports

    for tighter, said in ((Limits(max_entries=entries - 1, max_total_bytes=total), "files"),
                          (Limits(max_entries=entries, max_total_bytes=total - 1), "MB")):
        with pytest.raises(BundleError):
            read_bundle(at_the_limits, tighter)  # an import with these limits refuses it
        refused = tmp_path / "refused.zip"
        with pytest.raises(MemctlError) as caught:
            export_store(store, refused, limits=tighter)
        message = str(caught.value)
        assert message.startswith("nothing was exported") and said in message
        assert "one project at a time" in message and "\n" not in message
        assert not refused.exists() and not list(tmp_path.glob(".refused.zip*"))


def test_a_store_of_the_largest_benchmark_size_exports_in_one_zip():
    """bench/gen_corpus.py's 100k store holds ~103k files (notes, MEMORY.md, scratchpads,
    episodes, counters): each is an entry of its export, which must import."""
    from memctl.exchange.bundle import Limits

    assert Limits().max_entries >= 150_000


def test_an_import_refused_for_several_files_is_one_error_line_without_escaped_breaks(cli, tmp_path):
    """The refusal listed each file on a line of its own; errors are one line, and
    `print_error` wrote those breaks as `\\n`: one line of literal `\\n  ` between files."""
    cli.ok("add", "the cache uses redis", "--type", "fact")
    cli.ok("add", "deploys go out on tuesdays", "--type", "fact")
    source = tmp_path / "good.zip"
    cli.ok("export", str(source))
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(source) as good, zipfile.ZipFile(broken, "w") as bad:
        for name in good.namelist():
            data = good.read(name)
            if "/notes/" in name:
                data = b"---\nid: [broken\n---\nbody\n"
            bad.writestr(name, data)
    other = Cli(tmp_path / "other")
    other.ok("init")
    result = other("import", str(broken))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: refusing to import")
    assert "\\n" not in result.stderr
    assert result.stderr.count("front matter does not parse") == 2


def test_counts_arrive_when_every_note_of_the_zip_is_unchanged(machines, tmp_path):
    """A zip whose only news is access counts (the other machine recalled notes both stores
    hold as they are) still merges them (docs/sync.md, rule 5): they were dropped, because
    the counts were merged only after an import that wrote a file."""
    laptop, desktop = machines
    note = add(laptop, "Recalled on the laptop only", T1)
    transfer(laptop, desktop)
    for _ in range(3):
        record_access(laptop.store, [note])  # as recall and search do
    assert get_counters(Store.open(laptop.store), [note])[note][0] == 3
    report = transfer(laptop, desktop)
    assert report["unchanged"] == [note] and report["added"] == report["updated"] == []
    assert get_counters(Store.open(desktop.store), [note])[note][0] == 3
    transfer(laptop, desktop)  # the same counts again count nothing twice
    assert get_counters(Store.open(desktop.store), [note])[note][0] == 3
    archive = tmp_path / "again.zip"
    record_access(laptop.store, [note])
    laptop.ok("export", str(archive))
    desktop.ok("import", str(archive), "--dry-run")  # a dry run changes no count
    assert get_counters(Store.open(desktop.store), [note])[note][0] == 3


KEY_IDS = ("ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "AKIA" + "IOSFODNN7EXAMPLZ")


def plant_counts(source: Path, target: Path, ids: list[str]) -> None:
    """`source` (a zip `memctl export` wrote) with a count of 7 for each of `ids` added to its
    counters file, the manifest's digest made to match (as a hand-made zip would have it)."""
    import hashlib

    with zipfile.ZipFile(source) as zipped:
        files = {name: zipped.read(name) for name in zipped.namelist()}
    path = next(name for name in files if name.startswith(".counters/"))
    data = json.loads(files[path])
    for note_id in ids:
        data["notes"][note_id] = {"count": 7, "last": T1}
    files[path] = json.dumps(data).encode()
    manifest = json.loads(files["memctl-manifest.json"])
    manifest["entries"][path].update(sha256=hashlib.sha256(files[path]).hexdigest(),
                                     size=len(files[path]))
    files["memctl-manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w") as zipped:
        for name, content in files.items():
            zipped.writestr(name, content)


def test_counts_under_a_note_id_that_is_no_id_or_a_key_are_left_out_and_said(machines, tmp_path):
    """A zip whose counters file counts accesses of "notes" whose ids are keys (`ghp_…`,
    `AKIA…`) or no ids at all (`../../etc/passwd`, a line with control characters). They
    were merged into counters.sqlite without a word, and every later export zipped them
    under this store's name, past the secret scan. The id validator and the secret guard
    refuse them as for a machine's name (docs/sync.md, rule 5): they are left out, one
    warning says so (`counters_refused` in `--json`), and the rest of the import stands."""
    laptop, desktop = machines
    note = add(laptop, "Recalled on the laptop only", T1)
    record_access(laptop.store, [note])
    archive = tmp_path / "out.zip"
    laptop.ok("export", str(archive))
    planted = tmp_path / "planted.zip"
    refused = [*KEY_IDS, "../../etc/passwd", "a\nb\x1b[2J"]
    plant_counts(archive, planted, refused)

    result = desktop("import", str(planted))
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "4 access counts" in warnings[0], result.stderr
    assert "ghp_****" in warnings[0] and "AKIA****" in warnings[0]
    assert result.stderr.splitlines()[-1] == "1 added", result.stderr
    assert not any(key in result.stderr for key in KEY_IDS) and "\x1b" not in result.stderr
    assert body_of(desktop, note) == "Recalled on the laptop only"
    assert get_counters(Store.open(desktop.store)) == {note: (1, get_counters(
        Store.open(laptop.store))[note][1])}

    again = desktop.ok("import", str(planted), "--json").json()
    assert again["counters_refused"].startswith("left out 4 access counts"), again
    assert not any(key in json.dumps(again) for key in KEY_IDS)
    assert set(get_counters(Store.open(desktop.store))) == {note}
    clean = desktop.ok("import", str(archive), "--json").json()
    assert "counters_refused" not in clean

    out = tmp_path / "again.zip"
    desktop.ok("export", str(out))
    with zipfile.ZipFile(out) as zipped:
        carried = b"".join(zipped.read(n) for n in zipped.namelist() if n.startswith(".counters/"))
    assert note.encode() in carried
    assert not any(key.encode() in carried for key in KEY_IDS) and b"passwd" not in carried


def test_export_leaves_out_counts_an_older_memctl_took_under_a_key(machines, tmp_path):
    """counters.sqlite of a store that took such counts before they were refused (an older
    memctl; this machine's own rows, which `sync` writes to `.counters/<machine>.json` too):
    `export` and `sync` leave those rows out, as they leave out a machine name taken in
    before names were checked, and carry the rest."""
    laptop, _desktop = machines
    note = add(laptop, "Recalled on the laptop only", T1)
    store = Store.open(laptop.store)
    record_access(store, [note, *KEY_IDS, "../x"])
    from memctl.disk.counters import import_machine

    import_machine(store, {"notes": {key: {"count": 2, "last": T1} for key in KEY_IDS}},
                   "desk")
    archive = tmp_path / "out.zip"
    laptop.ok("export", str(archive))
    with zipfile.ZipFile(archive) as zipped:
        carried = {n: zipped.read(n) for n in zipped.namelist() if n.startswith(".counters/")}
    assert any(note.encode() in data for data in carried.values()), carried
    assert not any(key.encode() in data for key in KEY_IDS for data in carried.values())
    assert not any(b"../x" in data for data in carried.values())
    laptop("sync")  # no remote: an error, once this machine's counts are committed
    written = b"".join(p.read_bytes() for p in (laptop.store / ".counters").glob("*.json"))
    assert note.encode() in written and not any(key.encode() in written for key in KEY_IDS)


def test_export_help_says_its_project_option_defaults_to_the_whole_store(store_path, tmp_path):
    """`export` exports the whole store unless --project names one ($MEMCTL_PROJECT and the
    repository one stands in choose nothing here); its help said --project defaulted to them."""
    cli = Cli(store_path)
    cli.ok("add", "A note of the demo project", "--project", "demo")
    cli.ok("add", "A note of another project", "--project", "other")
    result = cli.ok("export", str(tmp_path / "all.zip"), "--json")
    assert json.loads(result.stdout)["project"] is None
    with zipfile.ZipFile(tmp_path / "all.zip") as bundle:
        assert {name.split("/")[0] for name in bundle.namelist()} >= {"demo", "other"}
    help_text = " ".join(cli.ok("export", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "default: the whole store" in help_text and "$MEMCTL_PROJECT" not in help_text


def test_a_zip_stamped_days_ahead_of_this_clock_is_said_so(machines):
    """Machines whose clocks are days apart: each import keeps its own version of a note
    edited on both (the other's stamp counts for nothing here), and once the conflict copies
    are dropped nothing showed it. The import says the zip is stamped ahead, and why it
    matters (docs/sync.md, rule 2). (Clocks in 2090: "ahead" is measured against the later
    of MEMCTL_NOW and the real clock.)"""
    laptop, desktop = machines
    here = {"MEMCTL_NOW": "2090-01-01T10:00:00Z"}
    ahead = {"MEMCTL_NOW": "2090-01-03T13:00:00Z"}  # the desktop's clock, 2 days ahead
    note = add(laptop, "The timeout is 30 s", here["MEMCTL_NOW"])
    transfer(laptop, desktop)
    edit(desktop, note, "The timeout is 45 s", ahead["MEMCTL_NOW"])
    archive = desktop.store.parent / "ahead.zip"
    desktop.ok("export", str(archive), env=ahead)
    report = laptop.ok("import", str(archive), "--json", env=here).json()
    [said] = [item["reason"] for item in report["warnings"]]
    assert said.startswith("1 file of it is stamped more than a day ahead of this machine's "
                           "clock (the latest 2090-01-03T13:00:00") and "set the wrong clock" in said
    shown = laptop("import", str(archive), env=here)
    assert "stamped more than a day ahead" in shown.stderr
    same_clock = desktop.ok("import", str(archive), "--json", env=ahead).json()
    assert same_clock["warnings"] == []  # its own clock's stamps are no news to it


def test_an_import_of_more_paths_than_a_command_line_holds_is_committed(tmp_path):
    """The import's commit named every file on git's command line: 20,000 notes with names
    of ~110 characters (a store of some years, exported) went past the kernel's ~2 MB of
    arguments, and the import failed ("Argument list too long"). They go through git's stdin."""
    source = tmp_path / "notes.zip"
    count = 20_000
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(count):
            note_id = f"01m93z{number:010d}"
            archive.writestr(
                f"demo/notes/fact/the-blog-keeps-its-postgresql-sixteen-database-and-writes-"
                f"its-queries-by-hand-{note_id}.md",
                f"---\nid: {note_id}\ntype: fact\nproject: demo\n"
                f"created: 2026-01-01T00:00:00.000Z\nupdated: 2026-01-01T00:00:00.000Z\n---\n"
                f"note {number}\n")
    target = tmp_path / "store"
    Store.init(target)
    done = run_memctl("import", str(source), "--json", store=target, timeout=240)
    assert done.exit_code == 0, done.stderr[-500:]
    assert len(json.loads(done.stdout)["added"]) == count
    assert git(target, "status", "--porcelain") == ""
    committed = git(target, "ls-files", "demo").splitlines()
    assert len(committed) == count
