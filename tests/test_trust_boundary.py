"""Untrusted input cannot reach outside the store (docs/security.md): a symbolic link from a
remote, a hand-dropped file or a folder is never followed, reading or writing; an id is never
used as a path; a remote cannot plant files in `.memctl/` or git's own files. Real git (a bare
remote, a second clone pushing the hostile commit), real symlinks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import Cli, git, run_memctl, tree_snapshot, write_memory_file

from memctl.core.ids import valid_id
from memctl.core.merge import collision_id

NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every store that must never be read or changed."""
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = outside-the-store\n")
    return secret


def machine(tmp_path: Path, name: str, remote: Path) -> Cli:
    root = tmp_path / name
    cli = Cli(root, project="demo")
    cli.ok("init", str(root), "--clone", str(remote))
    return cli


def push_hostile_commit(tmp_path: Path, remote: Path, build) -> str:
    """A collaborator's plain git clone that commits what `build(worktree)` makes, and pushes."""
    work = tmp_path / "hostile"
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)
    build(work)
    git(work, "add", "-A", "--force")  # .memctl/ is ignored: a hostile commit adds it anyway
    git(work, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "-m", "hostile")
    git(work, "push", "-q", "origin", "HEAD")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def test_a_symlinked_scratchpad_from_a_remote_is_never_read_or_written(
        tmp_path: Path, remote: Path, outside: Path) -> None:
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("scratch", "focus", "first focus", env=NOW)
    laptop.ok("sync")

    def plant(work: Path) -> None:
        (work / "demo" / "SCRATCHPAD.md").unlink()
        os.symlink(outside, work / "demo" / "SCRATCHPAD.md")
        (work / "demo" / "notes").mkdir(exist_ok=True)
        os.symlink(outside.parent, work / "demo" / "notes" / "dirlink")
        (work / ".memctl").mkdir()
        (work / ".memctl" / "index.sqlite").write_text("crafted")
        (work / ".gitmodules").write_text("[submodule]\n")
    hostile = push_hostile_commit(tmp_path, remote, plant)

    synced = laptop("sync", "--json")
    assert synced.exit_code == 0, synced.stderr
    report = synced.json()
    assert report["refused_from"] == hostile
    assert set(report["refused"]) == {"demo/SCRATCHPAD.md", "demo/notes/dirlink",
                                      ".memctl/index.sqlite", ".gitmodules"}
    root = laptop.store
    assert not (root / "demo" / "SCRATCHPAD.md").is_symlink()
    assert "first focus" in (root / "demo" / "SCRATCHPAD.md").read_text()
    assert not (root / "demo" / "notes" / "dirlink").exists()
    assert not (root / ".gitmodules").exists()
    recalled = laptop.ok("recall", env=NOW).stdout
    assert "outside-the-store" not in recalled and "first focus" in recalled
    laptop.ok("scratch", "note", "still works", env=NOW)
    laptop.ok("sync")
    assert outside.read_text() == "aws_secret_access_key = outside-the-store\n"
    # What the laptop pushed back neutralised the remote's branch too.
    desktop = machine(tmp_path, "desktop", remote)
    assert not (desktop.store / "demo" / "SCRATCHPAD.md").is_symlink()
    assert git(laptop.store, "status", "--porcelain") == ""


def test_a_clone_never_checks_out_a_link_or_local_state(tmp_path: Path, remote: Path,
                                                        outside: Path) -> None:
    first = machine(tmp_path, "first", remote)
    first.ok("add", "a note", env=NOW)
    first.ok("sync")

    def plant(work: Path) -> None:
        os.symlink(outside, work / "demo" / "MEMORY.md")
        (work / ".memctl").mkdir()
        (work / ".memctl" / "watch.json").write_text("{}")
    push_hostile_commit(tmp_path, remote, plant)
    root = tmp_path / "second"
    cloned = run_memctl("init", str(root), "--clone", str(remote), store=None, project=None)
    assert cloned.exit_code == 0, cloned.stderr
    assert "demo/MEMORY.md: not checked out" in cloned.stderr
    assert not (root / "demo" / "MEMORY.md").is_symlink()
    assert not (root / ".memctl" / "watch.json").exists()
    assert run_memctl("project", "show", store=root).exit_code == 0


def test_hand_made_links_are_refused_for_reads_and_writes(store_path: Path, outside: Path) -> None:
    cli = Cli(store_path)
    cli.ok("project", "add", "decisions", "keep it simple", env=NOW)
    memory = store_path / "demo" / "MEMORY.md"
    memory.unlink()
    os.symlink(outside, memory)
    shown = cli("project", "show")
    assert shown.exit_code == 1 and "symbolic link" in shown.stderr
    assert "outside-the-store" not in shown.stdout
    added = cli("project", "add", "lessons", "do not follow links")
    assert added.exit_code == 1 and "symbolic link" in added.stderr
    recalled = cli.ok("recall", env=NOW)
    assert "outside-the-store" not in recalled.stdout and "symbolic link" in recalled.stderr
    assert outside.read_text() == "aws_secret_access_key = outside-the-store\n"
    # A linked folder is refused for writes too (a note would land outside the store).
    target = outside.parent / "elsewhere"
    target.mkdir()
    os.symlink(target, store_path / "linked")
    refused = cli("add", "a note for the linked project", "--project", "linked")
    assert refused.exit_code == 1 and "symbolic link" in refused.stderr
    assert list(target.iterdir()) == []


def test_an_id_is_never_used_as_a_path(store_path: Path, tmp_path: Path) -> None:
    victim = store_path.parent / "victim.md"
    victim.write_text("do not touch\n")
    write_memory_file(store_path, "demo/notes/fact/hostile.md", "a note with a hostile id",
                      id="../../victim", type="fact")
    write_memory_file(store_path, "demo/notes/fact/absolute.md", "another hostile id",
                      id=str(tmp_path / "abs-victim"), type="fact")
    cli = Cli(store_path)
    listed = cli.ok("list", "--json").json()
    ids = {note["id"] for note in listed}
    assert ids and all(valid_id(note_id) for note_id in ids)
    assert "../../victim" not in ids
    for note_id in ids:
        cli.ok("forget", note_id)
    assert victim.read_text() == "do not touch\n"
    assert not (tmp_path / "abs-victim.md").exists()
    tombstones = {p.name for p in (store_path / ".tombstones").iterdir()}
    assert all(valid_id(name[:-3]) for name in tombstones if name.endswith(".md"))
    bad = cli("forget", "../../README")
    # An id that could be a path is bad usage, refused before any lookup (core/ids.py).
    assert bad.exit_code == 2 and "is not an id" in bad.stderr
    assert not (store_path.parent / "README.md").exists()


@pytest.mark.parametrize("text", ["../x", "/abs/path", "a/b", ".hidden", "-flag", "", "x" * 65,
                                  "a..b", "..", "with space", "nul\x00", "abc\n"])
def test_the_id_validator_refuses_what_could_be_a_path(text: str) -> None:
    assert not valid_id(text)


@pytest.mark.parametrize("text", ["01m8p0b4rc7ecc6q", "pg-choice", "note_1", "A.b-c"])
def test_the_id_validator_accepts_ids(text: str) -> None:
    assert valid_id(text)


def test_a_planted_state_folder_link_is_refused(store_path: Path, outside: Path) -> None:
    """`.memctl` itself a link (left by an old clone): the edit draft never lands outside."""
    cli = Cli(store_path)
    note = cli.ok("add", "edit me", "--json", env=NOW).json()["id"]
    before = tree_snapshot(store_path)
    state = store_path / ".memctl"
    import shutil

    shutil.rmtree(state)
    os.symlink(outside.parent, state)
    edited = cli("edit", note, env={"EDITOR": "true"})
    assert edited.exit_code == 1 and "symbolic link" in edited.stderr
    assert sorted(p.name for p in outside.parent.iterdir()) == ["credentials"]
    assert tree_snapshot(store_path) == before


# --- time used against the merge ---------------------------------------------------------------


def test_a_date_far_in_the_future_neither_crashes_nor_wins_forever(store_path: Path) -> None:
    from memctl.core.clock import parse_time
    from memctl.core.merge import Entry, future_horizon, merge_key

    write_memory_file(store_path, "demo/notes/fact/forged.md", "a note from the far future",
                      id="01forgedfuture01", type="fact", updated="9999-12-31T23:59:59.999Z")
    cli = Cli(store_path)
    edited = cli("edit", "01forgedfuture01", env={"EDITOR": "sed -i s/far/near/", **NOW})
    assert edited.exit_code == 0, edited.stderr
    shown = cli.ok("show", "01forgedfuture01", "--json").json()
    assert shown["updated"].startswith("2026-11-30")  # the forged date no longer holds it
    forgotten = cli("forget", "01forgedfuture01", env=NOW)
    assert forgotten.exit_code == 0 and "Traceback" not in forgotten.stderr

    def version(body: str, updated: str) -> Entry:
        return Entry(key="id:x", path="p/notes/fact/x.md", updated=updated,
                     data=f"---\nid: x\nupdated: {updated}\n---\n{body}\n".encode())

    forged = version("forged", "9999-12-31T23:59:59.999Z")
    honest = version("honest", "2026-11-30T11:00:00Z")
    horizon = future_horizon(parse_time("2026-11-30T12:00:00Z"))
    # Beyond a day ahead of the merging machine's clock a date proves nothing: the forged
    # version loses to an honest one, and is kept as a conflict copy, not lost.
    outcome = merge_key(forged, honest, horizon=horizon)
    assert outcome.result is honest and outcome.copy is not None
    assert merge_key(honest, forged, horizon=horizon).result is honest
    within_a_day = version("tomorrow", "2026-12-01T11:00:00Z")
    assert merge_key(within_a_day, honest, horizon=horizon).result is within_a_day


def test_a_clock_days_ahead_does_not_bring_a_forgotten_note_back(tmp_path: Path, remote: Path) -> None:
    """One machine's clock runs far ahead when it edits; the other forgets the note later in
    real time. The edit's date is beyond what the merging machine accepts, so it does not win
    on its date alone: the deletion stands. (The year 2090: "ahead" is measured against the
    later of MEMCTL_NOW and the machine's real clock, so a date a few days on would stop being
    ahead as the calendar moves.)"""
    ahead = machine(tmp_path, "ahead", remote)
    note = ahead.ok("add", "the cache is Redis 7", "--json", env=NOW).json()["id"]
    ahead.ok("sync")
    behind = machine(tmp_path, "behind", remote)
    ahead.ok("edit", note, env={"EDITOR": "sed -i s/Redis/Valkey/", "MEMCTL_NOW": "2090-12-03T12:00:00Z"})
    ahead.ok("sync", env={"MEMCTL_NOW": "2090-12-03T12:00:00Z"})
    real_time = {"MEMCTL_NOW": "2026-11-30T13:00:00Z"}
    behind.ok("forget", note, env=real_time)
    synced = behind("sync", "--json", env=real_time)
    assert synced.exit_code == 0, synced.stderr
    assert synced.json()["revived"] == []
    assert all(n["id"] != note for n in behind.ok("list", "--json", env=real_time).json())


def test_a_deletion_that_loses_to_a_later_edit_is_reported(tmp_path: Path, remote: Path) -> None:
    first = machine(tmp_path, "first", remote)
    note = first.ok("add", "the cache is Redis 7", "--json", env=NOW).json()["id"]
    first.ok("sync")
    second = machine(tmp_path, "second", remote)
    second.ok("forget", note, env={"MEMCTL_NOW": "2026-11-30T13:00:00Z"})
    first.ok("edit", note, env={"EDITOR": "sed -i s/Redis/Valkey/", "MEMCTL_NOW": "2026-11-30T14:00:00Z"})
    first.ok("sync", env={"MEMCTL_NOW": "2026-11-30T14:00:00Z"})
    later = {"MEMCTL_NOW": "2026-11-30T15:00:00Z"}
    synced = second("sync", "--json", env=later)
    assert synced.exit_code == 0, synced.stderr
    assert synced.json()["revived"] == [note]  # the edit won, and the user is told
    assert any(n["id"] == note for n in second.ok("list", "--json", env=later).json())


# --- one secret guard for every door ----------------------------------------------------------

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize("option", [["--tags", f"deploy,{GITHUB}"], ["--subject", "postgres://app:s3cretPw0rd@db.internal:5432/app"],
                                    ["--predicate", AWS]])
def test_a_secret_in_any_field_of_add_is_refused(store_path: Path, option: list[str]) -> None:
    cli = Cli(store_path)
    head = git(store_path, "rev-parse", "HEAD")
    refused = cli("add", "an ordinary note", *option)
    assert refused.exit_code == 1 and "looks like it contains a secret" in refused.stderr
    assert AWS not in refused.stderr and GITHUB not in refused.stderr and "s3cretPw0rd" not in refused.stderr
    assert git(store_path, "rev-parse", "HEAD") == head
    assert cli("add", "an ordinary note", *option, "--allow-secret").exit_code == 0


# Every command that takes a project, the installed memctl as a user runs it (`add` and
# `search` through their fast paths): the name is a folder and is in commit messages.
PROJECT_DOORS = [
    ["add", "an innocent fact"],
    ["add", "an innocent fact", "--allow-secret"],  # a folder name cannot be masked
    ["scratch", "note", "innocent"],
    ["scratch", "focus", "innocent"],
    ["episode", "add", "--goal", "innocent", "--outcome", "completed"],
    ["episode", "list"],
    ["project", "add", "lessons", "innocent"],
    ["project", "replace", "# innocent"],
    ["search", "innocent"],
    ["list"],
    ["recall"],
    ["get", "innocent"],
    ["export", "out.zip"],
    ["mcp"],
]


@pytest.mark.parametrize("token", [AWS, "ghp_abcdefghijklmnopqrstuvwxyz0123456789"])
def test_a_project_named_like_a_secret_is_refused_by_every_door(store_path: Path, tmp_path: Path,
                                                                token: str) -> None:
    folder = tmp_path / "notes-from-elsewhere"
    folder.mkdir()
    (folder / "plain.md").write_text("# Plain\n\nNothing to hide here.\n")
    before = tree_snapshot(store_path)
    head = git(store_path, "rev-parse", "HEAD")
    doors = [(args + ["--project", token], "demo") for args in PROJECT_DOORS]
    doors.append((["import", str(folder), "--from", "markdown", "--project", token], "demo"))
    doors += [(args, token) for args in (["add", "an innocent fact"], ["scratch", "note", "x"],
                                         ["search", "innocent"], ["mcp"])]  # MEMCTL_PROJECT
    for args, project in doors:
        refused = run_memctl(*args, store=store_path, project=project)
        lines = refused.stderr.strip().splitlines()
        assert refused.exit_code == 2, (args, refused.stderr)
        assert lines[0].startswith("error: ") and "looks like a secret" in lines[0], (args, lines)
        assert token not in refused.stderr + refused.stdout, args
    assert tree_snapshot(store_path) == before and not (tmp_path / "out.zip").exists()
    assert git(store_path, "rev-parse", "HEAD") == head
    assert git(store_path, "status", "--porcelain") == ""


def test_a_secret_in_an_episode_tag_or_an_edit_is_refused(store_path: Path) -> None:
    cli = Cli(store_path)
    refused = cli("episode", "add", "--goal", "ship it", "--outcome", "completed", "--tags", GITHUB)
    assert refused.exit_code == 1 and "error: --tags looks like it contains a secret" in refused.stderr
    note = cli.ok("add", "the deploy key lives in the vault", "--json", env=NOW).json()["id"]
    before = (store_path / cli.ok("show", note, "--json").json()["path"]).read_text()
    edited = cli("edit", note, env={"EDITOR": f"sed -i s/vault/{AWS}/", **NOW})
    assert edited.exit_code == 1 and "secret" in edited.stderr and AWS not in edited.stderr
    assert (store_path / cli.ok("show", note, "--json").json()["path"]).read_text() == before


def test_an_import_carrying_a_secret_is_refused_unless_allowed(store_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes-from-elsewhere"
    folder.mkdir()
    (folder / "ops.md").write_text(f"# Ops\n\nThe CI key is {AWS} and the bot token {GITHUB}.\n")
    (folder / "plain.md").write_text("# Plain\n\nNothing to hide here.\n")
    cli = Cli(store_path)
    head = git(store_path, "rev-parse", "HEAD")
    refused = cli("import", str(folder), "--from", "markdown")
    assert refused.exit_code == 1 and "secret" in refused.stderr and AWS not in refused.stderr
    assert git(store_path, "rev-parse", "HEAD") == head and git(store_path, "status", "--porcelain") == ""
    assert cli("import", str(folder), "--from", "markdown", "--allow-secret").exit_code == 0


def test_an_import_refused_for_a_secret_names_the_file_as_it_is(store_path: Path,
                                                               tmp_path: Path) -> None:
    # The file an import would write is named by its path, never as an option (`--default/…`)
    # with its underscores turned into hyphens.
    folder = tmp_path / "notes-from-elsewhere"
    folder.mkdir()
    (folder / "keys.md").write_text(f"# CI keys\n\nThe CI key is {AWS}.\n")
    refused = Cli(store_path)("import", str(folder), "--from", "markdown", "--project", "ops_team")
    assert refused.exit_code == 1, refused.stderr
    line = refused.stderr.strip().splitlines()[0]
    assert line.startswith("error: the file ops_team/notes/") and AWS not in line, line


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_linked_template_is_refused_never_read(store_path: Path, outside: Path,
                                                 linked: str) -> None:
    # A template, or the `.templates` folder, that is a link is refused like any other link
    # in the store: its target is never read into a note (docs/security.md).
    templates = store_path / ".templates"
    outside.write_text("---\nimportance: 5\n---\n{{text}}\n\nCONTENT-FROM-OUTSIDE\n")
    if linked == "file":
        (templates / "rule.md").unlink()
        os.symlink(outside, templates / "rule.md")
    else:
        moved = outside.parent / "templates"
        templates.rename(moved)
        (moved / "rule.md").write_text(outside.read_text())
        os.symlink(moved, templates)
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "a linked template")
    before = tree_snapshot(store_path)
    result = run_memctl("add", "Always run tests", "--type", "rule", store=store_path)
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: .templates/rule.md: .templates") \
        and "symbolic link" in result.stderr and result.error.count("\n") == 1
    assert tree_snapshot(store_path) == before
    assert git(store_path, "status", "--porcelain") == ""


def test_health_lists_links_invalid_ids_shared_ids_and_ignored_folders(store_path: Path, outside: Path) -> None:
    cli = Cli(store_path)
    cli.ok("add", "an ordinary note", env=NOW)
    os.symlink(outside, store_path / "demo" / "SCRATCHPAD.md")
    write_memory_file(store_path, "demo/notes/fact/hostile.md", "hostile id", id="../../x")
    write_memory_file(store_path, "demo/notes/fact/one.md", "first copy", id="shared-id")
    write_memory_file(store_path, "demo/notes/fact/two.md", "second copy", id="shared-id")
    (store_path / "not a project").mkdir()
    (store_path / "demo" / ".cache").mkdir()
    report = cli("health", "--json").json()
    assert [link["path"] for link in report["links"]] == ["demo/SCRATCHPAD.md"]
    assert [e["path"] for e in report["invalid_ids"]] == ["demo/notes/fact/hostile.md"]
    assert report["duplicate_ids"] == [{"id": "shared-id", "paths": ["demo/notes/fact/one.md",
                                                                     "demo/notes/fact/two.md"]}]
    assert report["ignored"] == ["demo/.cache/", "not a project/"]
    kinds = {problem["kind"] for problem in report["problems"]}
    assert {"links", "invalid_ids", "duplicate_ids"} <= kinds
    markdown = store_path.parent / "report.md"
    cli.ok("health", "--markdown", str(markdown))
    assert "Symbolic links" in markdown.read_text() and str(outside) in markdown.read_text()


# --- imports that cannot wedge ------------------------------------------------------------------


def hostile_zip(path: Path, files: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("files", [
    {"demo/notes/fact/" + "x" * 300 + ".md": b"---\nid: 01longname0000000\n---\nlong\n"},
    {"demo/notes/a.md": b"---\nid: 01clash000000000\n---\nfile\n",
     "demo/notes/a.md/b.md": b"---\nid: 01clash000000001\n---\ninside\n"},
])
def test_a_hostile_zip_is_refused_before_anything_is_written(store_path: Path, tmp_path: Path,
                                                              files: dict[str, bytes]) -> None:
    before = tree_snapshot(store_path)
    head = git(store_path, "rev-parse", "HEAD")
    bundle = hostile_zip(tmp_path / "hostile.zip", files)
    cli = Cli(store_path)
    refused = cli("import", str(bundle))
    assert refused.exit_code == 1 and refused.stderr.startswith("error:"), refused.stderr
    assert "Traceback" not in refused.stderr
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head
    assert not list((store_path / ".memctl").glob("txn-*"))
    assert cli("add", "the store still works", env=NOW).exit_code == 0


@pytest.mark.parametrize("manifest", [
    b'{"format": "memctl-bundle", "version": 1, "entries": [], "removed": {}}',
    b'{"format": "memctl-bundle", "version": 1, "entries": {}, "removed": []}',
    b"[" * 100_000 + b"]" * 100_000,
])
def test_a_malformed_or_deeply_nested_manifest_is_a_clear_error(store_path: Path, tmp_path: Path,
                                                                 manifest: bytes) -> None:
    from memctl.exchange.bundle import MANIFEST_NAME

    bundle = hostile_zip(tmp_path / "bad.zip", {MANIFEST_NAME: manifest})
    refused = Cli(store_path)("import", str(bundle))
    assert refused.exit_code == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("error:")


def test_a_journal_that_cannot_be_rolled_back_is_reported_once(store_path: Path) -> None:
    import json as json_module

    state = store_path / ".memctl"
    txn = state / "txn-broken"
    txn.mkdir(parents=True)
    head = git(store_path, "rev-parse", "HEAD").strip()
    journal = {"head": head, "message": "import x.zip",
               "ops": [{"path": "demo/" + "y" * 300 + ".md", "old": "old/0", "new": None,
                        "existed": True}]}
    (txn / "old").mkdir()
    (txn / "old" / "0").write_text("backup")
    (txn / "journal.json").write_text(json_module.dumps(journal))
    cli = Cli(store_path)
    first = cli("add", "a note after a broken import", env=NOW)
    assert first.exit_code == 1 and "could not be rolled back" in first.stderr
    assert "Traceback" not in first.stderr
    assert list(state.glob("failed-txn-*")) and not list(state.glob("txn-*"))
    assert cli("add", "a note after a broken import", env=NOW).exit_code == 0


# --- clear errors for the environment and absurd values -----------------------------------------


@pytest.mark.parametrize("args", [["add", "x", "--expires", "99999999d"], ["list", "--since", "999999999999y"],
                                  ["search", "x", "--since", "999999999999y"]])
def test_absurd_spans_are_bad_usage_not_a_traceback(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 2 and "calendar" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["add", "x"], ["search", "x"], ["list"], ["show", "0"],
                                  ["project", "show"], ["conflicts"]])
def test_a_bad_clock_override_is_bad_usage_in_one_line(store_path: Path, args: list[str]) -> None:
    # Exit 2, as a bad MEMCTL_PROJECT or an empty MEMCTL_STORE: the environment is part of
    # how memctl was called. Every command, whether or not it reads the clock: `list` ran on.
    result = run_memctl(*args, store=store_path, env={"MEMCTL_NOW": "garbage"})
    assert result.exit_code == 2 and result.stderr == (
        "error: invalid value for MEMCTL_NOW: 'garbage' is not an ISO 8601 time "
        "(2026-03-01T09:00:00Z); set one or unset MEMCTL_NOW\n")


def test_help_and_bad_usage_come_before_a_bad_clock(store_path: Path) -> None:
    """The clock is checked when a command opens its store: `list --help` printed nothing
    but the clock's error, and `list --bogus` named the clock, not the option."""
    bad = {"MEMCTL_NOW": "bogus"}
    for args in (["list", "--help"], ["search", "--help"], ["project", "--help"]):
        shown = run_memctl(*args, store=store_path, env=bad)
        assert shown.exit_code == 0 and "Usage:" in shown.stdout, (args, shown.stderr)
    wrong = run_memctl("list", "--bogus", store=store_path, env=bad)
    assert wrong.exit_code == 2 and "--bogus" in wrong.stderr and "MEMCTL_NOW" not in wrong.stderr


def test_a_correction_named_in_any_case_may_say_what_it_corrects(store_path: Path) -> None:
    """A model's `"type": "Correction"` is a correction (fixed words are read in any case):
    the check that `corrects` is for a correction ran on the word as given."""
    from memctl.services.notes import remember
    from memctl.store import Store

    store = Store.open(store_path)
    first = remember(store, "The pool max is 20 per pod", project="demo")
    fixed = remember(store, "Correction: the pool max is 30 per pod", note_type="Correction",
                     corrects=first.id, project="demo")
    assert fixed.corrects == first.id


@pytest.mark.parametrize(("args", "said"), [
    # `get` has no --subject: its subject and predicate are positional arguments.
    (["get", ""], "error: invalid value for SUBJECT: empty; name what the fact is about\n"),
    (["get", "api", "p" * 300], "error: invalid value for PREDICATE: one short line"),
    # 300 letters are all allowed characters: what is wrong is the length.
    (["show", "a" * 300], "error: invalid value for ID: '" + "a" * 40 + "…' is longer than an "
                          "id can be (64 characters)\n"),
    # Bad usage is said before the note --corrects names is looked for.
    (["add", "x", "--type", "fact", "--corrects", "01abc"],
     "error: --corrects is for a correction: add --type correction\n"),
])
def test_a_bad_argument_is_named_as_the_command_line_spells_it(
        cli: Cli, args: list[str], said: str) -> None:
    result = cli(*args, env=NOW)
    assert result.exit_code == 2 and result.stderr.startswith(said), result.stderr
    assert result.stderr.splitlines()[1:] == [f"hint: try 'memctl {args[0]} --help'"]


@pytest.mark.parametrize(("args", "store_env", "words"), [
    (["--store", "", "add", "meant for another store"], None, "--store is empty"),
    (["--store=", "search", "anything"], None, "--store is empty"),
    (["--store", " ", "list"], None, "--store is empty"),
    (["add", "meant for another store"], "", "MEMCTL_STORE is set but empty"),
    (["search", "anything"], "", "MEMCTL_STORE is set but empty"),
    (["init", ""], None, "the store's folder is empty"),
    # Read as the current folder, or as no remote: a store that is not connected.
    (["import", "", "--dry-run"], None, "what to import is empty"),
    (["import", " "], None, "what to import is empty"),
    (["init", "--clone", ""], None, "--clone is empty"),
    (["sync", "--remote", ""], None, "--remote is empty"),
])
def test_an_empty_store_option_or_variable_is_bad_usage_never_the_default_store(
        tmp_path: Path, args: list[str], store_env: str | None, words: str) -> None:
    # `memctl --store "$STORE" add …` with STORE unset: a typo never becomes the default store.
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    if store_env is not None:
        env["MEMCTL_STORE"] = store_env
    result = run_memctl(*args, project=None, env=env)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"error: {words}") and result.error.count("\n") == 1
    assert not (tmp_path / "data").exists() and not (tmp_path / "home").exists()


@pytest.mark.parametrize("moment", ["2100-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
                                    "1969-12-31T23:59:59Z", "2099-12-31T20:00:00-05:00"])
def test_a_clock_override_outside_gits_years_is_one_line_and_changes_nothing(
        store_path: Path, moment: str) -> None:
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = run_memctl("add", "written with a far clock", store=store_path,
                        env={"MEMCTL_NOW": moment})
    assert result.exit_code == 2, result.stderr
    assert result.stderr == (f"error: invalid value for MEMCTL_NOW: {moment!r} is outside the "
                             "years 1970..2099 (git cannot date a commit then); set a time in "
                             "them or unset MEMCTL_NOW\n")
    assert tree_snapshot(store_path) == before
    assert git(store_path, "rev-parse", "HEAD") == head
    assert git(store_path, "status", "--porcelain") == ""


@pytest.mark.parametrize(("line", "command"), [("archive_after_days = -1", ["archive"]),
                                               ("default_limit = 0", ["search", "note"]),
                                               ("max_notes = -5", ["recall"])])
def test_a_setting_out_of_range_is_an_error_and_changes_nothing(cli: Cli, store_path: Path,
                                                                line: str, command: list[str]) -> None:
    cli.ok("add", "a note that must not be archived", env=NOW)
    key = line.split(" = ")[0]
    settings = store_path / "memctl.toml"
    text = settings.read_text()
    assert f"\n{key} = " in text
    settings.write_text("\n".join(line if row.startswith(f"{key} = ") else row for row in text.split("\n")))
    before = tree_snapshot(store_path)
    result = cli(*command)
    assert result.exit_code == 1 and "is out of range" in result.stderr and key in result.stderr
    assert tree_snapshot(store_path) == before


# --- settings and templates from elsewhere --------------------------------------------------------


def test_settings_and_templates_in_a_bundle_are_held_back(tmp_path: Path, store_path: Path) -> None:
    other_root = tmp_path / "other"
    other = Cli(other_root)
    other.ok("init", str(other_root))
    other.ok("add", "a note worth importing", env=NOW)
    (other_root / "memctl.toml").write_text("[ttl]\narchive_after_days = 1\n")
    (other_root / ".templates" / "fact.md").write_text("INJECTED {{text}}\n")
    bundle = tmp_path / "other.zip"
    other.ok("export", str(bundle), env={"MEMCTL_NOW": "2099-12-31T00:00:00Z"})  # the clock's last year
    settings = (store_path / "memctl.toml").read_bytes()
    template = (store_path / ".templates" / "fact.md").read_bytes()
    cli = Cli(store_path)
    imported = cli("import", str(bundle), "--json")
    assert imported.exit_code == 0, imported.stderr
    assert sorted(imported.json()["held_back"]) == [".templates/fact.md", "memctl.toml"]
    assert (store_path / "memctl.toml").read_bytes() == settings
    assert (store_path / ".templates" / "fact.md").read_bytes() == template
    added = cli.ok("add", "a new fact", "--json", env=NOW).json()
    assert "INJECTED" not in (store_path / added["path"]).read_text()
    assert "not applied" in cli("import", str(bundle)).stderr  # the text form warns too


def _commit_at(root: Path, when: str, message: str) -> None:
    """Commit every change in `root` at `when` (settings and templates carry no `updated`
    stamp: git's time of a version is its time in a merge)."""
    dated = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), "commit", "-qam", message], check=True, env=dated)


def test_settings_and_templates_newer_here_than_in_a_bundle_are_held_back_not_conflict_copies(
        tmp_path: Path, store_path: Path) -> None:
    """Held back whichever side is newer: a bundle's older settings or template once became
    a conflict copy here, which `memctl conflicts keep` then installed, and every import of
    the same zip reported the conflict again."""
    sender_root = tmp_path / "sender"
    sender = Cli(sender_root)
    sender.ok("init", str(sender_root))
    with open(sender_root / ".templates" / "fact.md", "a") as handle:
        handle.write("INJECTED by the bundle\n")
    (sender_root / "memctl.toml").write_text("[ttl]\narchive_after_days = 1\n")
    _commit_at(sender_root, "2020-01-01T00:00:00Z", "sender edits")
    bundle = tmp_path / "sender.zip"
    sender.ok("export", str(bundle))
    with open(store_path / ".templates" / "fact.md", "a") as handle:
        handle.write("# local tweak\n")
    with open(store_path / "memctl.toml", "a") as handle:
        handle.write("# local\n")
    _commit_at(store_path, "2020-01-02T00:00:00Z", "local edits")  # the newer versions
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    for _ in range(2):  # the same zip again says the same, and changes nothing either
        imported = run_memctl("import", str(bundle), "--json", store=store_path)
        assert imported.exit_code == 0, imported.stderr
        report = imported.json()
        assert report["held_back"] == [".templates/fact.md", "memctl.toml"]
        assert report["conflicts"] == report["conflict_copies"] == []
        assert tree_snapshot(store_path) == before
        assert git(store_path, "rev-parse", "HEAD") == head
    assert not (store_path / ".conflicts").exists()
    assert "no conflict copies" in run_memctl("conflicts", store=store_path).stderr


def test_a_template_removed_by_the_sender_is_held_back_not_removed(
        tmp_path: Path, store_path: Path) -> None:
    """A removal is a change too: a bundle listing a template as removed once deleted this
    store's copy of it (the same default template on both sides)."""
    sender_root = tmp_path / "sender"
    Cli(sender_root).ok("init", str(sender_root))
    git(sender_root, "rm", "-q", ".templates/rule.md")
    git(sender_root, "commit", "-qm", "no rule template")
    bundle = tmp_path / "sender.zip"
    Cli(sender_root).ok("export", str(bundle))
    template = (store_path / ".templates" / "rule.md").read_bytes()
    imported = run_memctl("import", str(bundle), "--json", store=store_path)
    assert imported.exit_code == 0, imported.stderr
    assert imported.json()["held_back"] == [".templates/rule.md"]
    assert (store_path / ".templates" / "rule.md").read_bytes() == template


@pytest.mark.parametrize("copy", [".conflicts/.templates/fact.abcdef012345.md",
                                  ".conflicts/memctl.abcdef012345.toml"])
def test_conflicts_keep_refuses_a_copy_of_settings_or_a_template(store_path: Path, copy: str) -> None:
    """No merge makes one; a copy already there (an older memctl's import made them, or a
    hand-dropped file) is never installed: compared by hand, or dropped."""
    original = (store_path / "memctl.toml").read_bytes(), (store_path / ".templates" / "fact.md").read_bytes()
    (store_path / copy).parent.mkdir(parents=True, exist_ok=True)
    (store_path / copy).write_text("INJECTED {{text}}\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "an older import's copy")
    kept = run_memctl("conflicts", "keep", "1", store=store_path)
    assert kept.exit_code == 1
    assert kept.stderr.startswith("error: ") and kept.stderr.count("\n") == 1
    assert "nothing was changed" in kept.stderr and "conflicts drop 1" in kept.stderr
    assert (store_path / copy).is_file()
    assert ((store_path / "memctl.toml").read_bytes(),
            (store_path / ".templates" / "fact.md").read_bytes()) == original
    run_memctl("conflicts", "drop", "1", store=store_path)
    assert not (store_path / copy).exists()


def test_conflicts_keep_of_a_copy_that_is_not_utf8_keeps_its_bytes(store_path: Path) -> None:
    """A copy memctl cannot stamp (its bytes are not UTF-8) was written back decoded with
    replacement characters: the kept version was not the copy."""
    note_id = Cli(store_path).ok("add", "Builds run on Jenkins", "--json").json()["id"]
    path = Cli(store_path).ok("show", note_id, "--json").json()["path"]
    data = (store_path / path).read_bytes().replace(b"Jenkins", b"Jenkins caf\xe9")
    copy = store_path / ".conflicts" / (path[:-3] + ".abcdef012345.md")
    copy.parent.mkdir(parents=True)
    copy.write_bytes(data)
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "a copy that is not UTF-8")
    kept = run_memctl("conflicts", "keep", "1", store=store_path)
    assert kept.exit_code == 0, kept.stderr
    assert (store_path / path).read_bytes() == data and not copy.exists()


def test_settings_and_templates_changed_on_a_remote_are_kept_as_they_are_here(tmp_path: Path, remote: Path) -> None:
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")
    settings = (laptop.store / "memctl.toml").read_bytes()

    def change(work: Path) -> None:
        (work / "memctl.toml").write_text("[ttl]\narchive_after_days = 1\n")
        (work / ".templates" / "fact.md").write_text("INJECTED {{text}}\n")
    push_hostile_commit(tmp_path, remote, change)
    report = laptop("sync", "--json").json()
    assert {"memctl.toml", ".templates/fact.md"} <= set(report["refused"])
    assert (laptop.store / "memctl.toml").read_bytes() == settings
    assert "INJECTED" not in (laptop.store / ".templates" / "fact.md").read_text()


def test_git_files_a_remote_puts_in_a_project_folder_never_reach_the_working_tree(
        tmp_path: Path, remote: Path) -> None:
    """A `.gitattributes` in a project folder saying `working-tree-encoding=UTF-16` made
    every later `git add` of that folder fail (each `add`, each `sync`, for good); a
    `.gitignore` there kept every note beside it out of every commit, unsaid. Both are git's
    own files, refused from a remote at any depth, as they are at the top."""
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")

    def plant(work: Path) -> None:
        (work / "global").mkdir(exist_ok=True)
        (work / "global" / ".gitattributes").write_text("*.md working-tree-encoding=UTF-16\n")
        (work / "demo" / ".gitignore").write_text("*\n")
        (work / "demo" / "notes" / ".gitattributes").write_text("*.md -text\n")
    push_hostile_commit(tmp_path, remote, plant)
    report = laptop("sync", "--json").json()
    assert set(report["refused"]) == {"global/.gitattributes", "demo/.gitignore",
                                      "demo/notes/.gitattributes"}
    for planted in report["refused"]:
        assert not (laptop.store / planted).exists()
    laptop.ok("add", "a global rule", "--global", env=NOW)
    write_memory_file(laptop.store, "demo/notes/fact/hand.md", "a note written by hand",
                      id="handwritten0001", type="fact")
    laptop.ok("sync")
    pushed = git(remote, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert "demo/notes/fact/hand.md" in pushed
    assert any(path.startswith("global/notes/") for path in pushed)


def test_a_clone_of_a_plain_store_refuses_nothing(tmp_path: Path, remote: Path) -> None:
    """memctl's own `.gitkeep` files are no git file: refusing `.git*` names in every folder
    must not take them for one (a warning and two extra commits on every clone)."""
    laptop = machine(tmp_path, "laptop", remote)
    note = laptop.ok("add", "first", "--json", env=NOW).json()["id"]
    laptop.ok("forget", note, env=NOW)
    laptop.ok("sync")
    assert git(remote, "ls-tree", "-r", "--name-only", "HEAD").count(".gitkeep") >= 1
    desktop = Cli(tmp_path / "desktop", project="demo")
    cloned = desktop.ok("init", str(desktop.store), "--clone", str(remote))
    assert "not checked out" not in cloned.stderr and "refus" not in cloned.stderr
    assert git(desktop.store, "rev-parse", "HEAD") == git(remote, "rev-parse", "HEAD")


def test_a_conflict_copy_of_a_template_from_a_remote_is_refused(tmp_path: Path, remote: Path) -> None:
    """Templates are held back from a remote, so no merge makes a conflict copy of one: a
    planted copy could only be an attack, which `memctl conflicts keep` would install."""
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")
    template = (laptop.store / ".templates" / "fact.md").read_bytes()

    def plant(work: Path) -> None:
        copy = work / ".conflicts" / ".templates" / "fact.abcdef012345.md"
        copy.parent.mkdir(parents=True)
        copy.write_text("INJECTED {{text}}\n")
    push_hostile_commit(tmp_path, remote, plant)
    assert laptop("sync", "--json").json()["refused"] == [".conflicts/.templates/fact.abcdef012345.md"]
    assert laptop("conflicts", "keep", "1").exit_code == 1
    assert (laptop.store / ".templates" / "fact.md").read_bytes() == template


def test_a_submodule_from_a_remote_is_refused_and_named_when_it_comes_alone(
        tmp_path: Path, remote: Path) -> None:
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")

    work = tmp_path / "hostile"  # (a submodule entry alone: `git add -A` would drop it)
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)
    head = git(work, "rev-parse", "HEAD").strip()
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{head},demo/sub")
    git(work, "-c", "user.name=h", "-c", "user.email=h@example.invalid", "commit", "-q", "-m", "sub")
    git(work, "push", "-q", "origin", "HEAD")
    assert laptop("sync", "--json").json()["refused"] == ["demo/sub"]
    assert "160000" not in git(laptop.store, "ls-tree", "-r", "HEAD")
    assert not (laptop.store / "demo" / "sub").exists()


def test_notes_that_arrive_beside_a_refused_path_are_reported_as_pulled(
        tmp_path: Path, remote: Path) -> None:
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")

    def plant(work: Path) -> None:
        for number in (1, 2):
            write_memory_file(work, f"demo/notes/fact/arrived{number}.md", f"remote note {number}",
                              id=f"arrivednote000{number}", type="fact")
        (work / "demo" / "notes" / "fact" / "link.md").symlink_to("/etc/passwd")
    push_hostile_commit(tmp_path, remote, plant)
    report = laptop("sync", "--json").json()
    assert report["refused"] == ["demo/notes/fact/link.md"]
    assert sorted(report["pulled"]) == ["arrivednote0001", "arrivednote0002"]


# --- export never loses silently ---------------------------------------------------------------


def test_an_unreadable_note_stops_export_or_is_named(store_path: Path, tmp_path: Path) -> None:
    from test_reliability import without_file_permission_override

    cli = Cli(store_path)
    note = cli.ok("add", "a note nobody can read", "--json", env=NOW).json()
    target = store_path / note["path"]
    target.chmod(0)
    prefix = without_file_permission_override()
    env = dict(os.environ, MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="demo")
    from conftest import memctl_executable

    def export(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, memctl_executable(), "export", *args], capture_output=True,
                              text=True, env=env, timeout=60)
    try:
        stopped = export(str(tmp_path / "a.zip"))
        assert stopped.returncode == 1 and note["path"] in stopped.stderr
        assert not (tmp_path / "a.zip").exists()
        skipped = export(str(tmp_path / "b.zip"), "--skip-unreadable", "--json")
        assert skipped.returncode == 0, skipped.stderr
        assert json.loads(skipped.stdout)["skipped"] == [note["path"]]
        assert note["path"] in skipped.stderr
    finally:
        target.chmod(0o644)


def test_export_names_a_note_its_import_would_refuse(store_path: Path, tmp_path: Path) -> None:
    """Named with path:line and left out, so the zip imports (tests/test_broken_files.py)."""
    write_memory_file(store_path, "demo/notes/fact/broken.md", "body", title="[unclosed")
    result = Cli(store_path)("export", str(tmp_path / "c.zip"), "--json")
    assert result.exit_code == 0
    assert [(item["path"], item["line"]) for item in result.json()["broken"]] == [
        ("demo/notes/fact/broken.md", 2)]
    assert "demo/notes/fact/broken.md:2: " in result.stderr and "left out of the zip" in result.stderr


def test_an_allowed_secret_never_reaches_a_file_name_a_commit_or_a_report(tmp_path: Path, remote: Path) -> None:
    laptop = machine(tmp_path, "laptop", remote)
    added = laptop.ok("add", f"CI key {AWS} for uploads", "--allow-secret", "--json", env=NOW).json()
    assert AWS not in added["path"]
    log = git(laptop.store, "log", "--format=%s%n%b")
    assert AWS not in log and "AKIA" in log  # masked, its recognisable start kept
    health = laptop.ok("health", "--json").json()
    assert health["secrets"] and AWS not in json.dumps(health)
    exported = laptop.ok("export", str(tmp_path / "x.zip"), "--json").json()
    assert exported["secrets"] and AWS not in json.dumps(exported)
    synced = laptop("sync", "--json")
    assert synced.exit_code == 0 and synced.json()["pushed"]
    assert synced.json()["secrets"] and AWS not in synced.stdout + synced.stderr
    warned = laptop("forget", added["id"])
    assert warned.exit_code == 0 and AWS not in git(laptop.store, "log", "-1", "--format=%B")
    assert AWS not in (laptop.store / ".tombstones" / f"{added['id']}.md").read_text()


def test_an_allowed_secret_in_an_episode_goal_never_reaches_its_file_name(store_path: Path) -> None:
    """An episode's file name is made from its goal: one written with --allow-secret is named
    masked, as a note is (`notes.add`), never `rotate-akia…-now-ID.md` (the key, lower-cased,
    in every clone's tree)."""
    cli = Cli(store_path)
    added = cli.ok("episode", "add", "--goal", f"rotate {AWS} now", "--outcome", "completed",
                   "--allow-secret", "--json", env=NOW).json()
    assert AWS.lower() not in added["path"].lower() and "akia" in added["path"]
    assert AWS.lower() not in git(store_path, "ls-files").lower()


def test_a_secret_quoted_back_in_a_message_is_masked(store_path: Path) -> None:
    """What memctl says back is masked as its files' names and commit messages are: an error
    quoting a value (`--expires KEY`, an id), `project add`'s and `forget`'s confirmations of
    text let in with --allow-secret."""
    cli = Cli(store_path)
    refused = cli("add", "hello there", "--expires", AWS, env=NOW)
    assert refused.exit_code == 2 and AWS not in refused.stderr and "AKIA****" in refused.stderr
    missing = cli("show", AWS, env=NOW)
    assert missing.exit_code == 1 and AWS not in missing.stderr, missing.stderr
    added = cli.ok("project", "add", "decisions", f"Uploads sign with {AWS}", "--allow-secret",
                   env=NOW)
    assert AWS not in added.stdout + added.stderr and "AKIA****" in added.stderr
    note = cli.ok("add", f"The uploader key is {AWS}", "--allow-secret", "--json",
                  env=NOW).json()["id"]
    forgot = cli.ok("forget", note, env=NOW)
    assert AWS not in forgot.stdout + forgot.stderr and note in forgot.stderr


def test_a_key_that_a_hand_dropped_file_brings_never_reaches_a_commit_message(
        store_path: Path) -> None:
    """A note dropped by hand whose id is a key (`valid_id` takes it): `forget` named it in
    its commit message, which every clone and remote keeps. Every commit message is masked."""
    cli = Cli(store_path)
    folder = store_path / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "uploader.md").write_text(f"---\nid: {GITHUB}\ntype: fact\n---\nThe uploader\n")
    cli("sync", env=NOW)  # (no remote: it commits, then says so)
    cli.ok("forget", GITHUB, env=NOW)
    messages = git(store_path, "log", "--format=%B")
    assert GITHUB not in messages and "ghp_****" in messages


def test_a_read_only_store_can_be_read_and_refuses_changes_clearly(store_path: Path, tmp_path: Path) -> None:
    """A read-only mount or folder: every read works (on a private copy of the index, with no
    access counting), every change is one line naming the problem, nothing is left behind."""
    from conftest import memctl_executable
    from test_reliability import without_file_permission_override

    cli = Cli(store_path)
    note = cli.ok("add", "xylophone tuning notes", "--json", env=NOW).json()["id"]
    cli.ok("project", "add", "decisions", "keep it simple", env=NOW)
    cli.ok("search", "xylophone")  # an index and counters exist, as in a store in use
    before = tree_snapshot(store_path)
    subprocess.run(["chmod", "-R", "a-w", str(store_path)], check=True)
    env = dict(os.environ, MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="demo", TMPDIR=str(tmp_path))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*without_file_permission_override(), memctl_executable(), *args],
                              capture_output=True, text=True, env=env, timeout=60)
    try:
        for args in (["list", "--json"], ["search", "xylophone", "--json"], ["recall"],
                     ["show", note], ["health", "--json"], ["archive", "--dry-run"],
                     ["export", str(tmp_path / "ro.zip")]):
            result = run(*args)
            assert result.returncode == 0, (args, result.stderr)
            assert "Traceback" not in result.stderr
        assert note in run("search", "xylophone", "--json").stdout
        for args in (["add", "another"], ["project", "add", "lessons", "x"], ["forget", note]):
            refused = run(*args)
            assert refused.returncode == 1 and refused.stderr.startswith("error: ")
            assert "read-only" in refused.stderr and "Traceback" not in refused.stderr
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(store_path)], check=True)
    assert tree_snapshot(store_path) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("memctl-read-only-")]


def test_an_import_never_writes_through_a_linked_folder(store_path: Path, tmp_path: Path, outside: Path) -> None:
    other_root = tmp_path / "other"
    other = Cli(other_root, project="linked")
    other.ok("init", str(other_root))
    other.ok("add", "a note for the linked project", env=NOW)
    bundle = tmp_path / "other.zip"
    other.ok("export", str(bundle))
    os.symlink(outside.parent, store_path / "linked")
    refused = Cli(store_path)("import", str(bundle))
    assert refused.exit_code == 1 and "symbolic link" in refused.stderr
    assert sorted(p.name for p in outside.parent.iterdir()) == ["credentials"]
    assert not list((store_path / ".memctl").glob("txn-*"))


def test_settings_nested_too_deeply_are_one_line(store_path: Path) -> None:
    (store_path / "memctl.toml").write_text("x = " + "[" * 5_000 + "]" * 5_000 + "\n")
    result = run_memctl("recall", store=store_path)
    assert result.exit_code == 1 and result.stderr.startswith("error: memctl.toml does not parse")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("file_name", ["collide-{id}.md", "any-name.md"])
@pytest.mark.parametrize("local_change", [True, False], ids=["merge", "fast-forward"])
def test_a_pushed_note_reusing_an_id_gets_a_new_id_and_the_owner_keeps_its_own(
        tmp_path: Path, remote: Path, local_change: bool, file_name: str) -> None:
    """A collaborator pushes (plain git), in another project, a note whose front matter reuses
    the id of one of ours (later `created`, older `updated`, other text), beside our note in
    the same commit. Rule 6 of docs/sync.md holds inside one side's tree as across the two:
    the later-created one gets `collision_id`, the report says so, ours keeps its id (shown,
    forgotten by it), nothing is lost, whether sync merges or would fast-forward, and a second
    machine resolving the same commit on its own reaches the same files."""
    laptop = machine(tmp_path, "laptop", remote)
    own = laptop.ok("add", "Postgres is the database of the blog backend", "--force", "--json",
                    env=NOW).json()["id"]
    laptop.ok("sync", env=NOW)
    desktop = machine(tmp_path, "desktop", remote)
    later = "2026-11-30T13:00:00Z"

    def reuse_the_id(work: Path) -> None:
        [mine] = (work / "demo" / "notes" / "fact").glob(f"*{own}.md")
        text = mine.read_text(encoding="utf-8")
        lines = [("project: other" if line.startswith("project:") else
                  f"created: {later}" if line.startswith("created:") else
                  "updated: 2026-01-01T00:00:00Z" if line.startswith("updated:") else line)
                 for line in text.replace("Postgres is", "ATTACKER: MongoDB is").splitlines()]
        folder = work / "other" / "notes" / "fact"
        folder.mkdir(parents=True)
        (folder / file_name.format(id=own)).write_text("\n".join(lines) + "\n", encoding="utf-8")
    push_hostile_commit(tmp_path, remote, reuse_the_id)

    new_id = collision_id(own, later)
    if local_change:
        for cli in (laptop, desktop):
            cli.ok("add", f"A local note on the {cli.store.name}", "--force", env=NOW)
    synced = laptop("sync", "--json", "--no-push", env=NOW)
    assert synced.exit_code == 0, synced.stderr
    [renamed] = synced.json()["renamed"]
    assert (renamed["id"], renamed["to"]) == (own, new_id)
    assert renamed["path"].startswith("other/notes/fact/") and new_id in renamed["path"]
    assert new_id in synced.json()["pulled"]
    said = laptop("sync", "--no-push", env=NOW)  # nothing new: the rename is not made again
    assert said.exit_code == 0 and "two notes" not in said.stderr

    def notes_with(cli: Cli, note_id: str) -> list[str]:
        return [rel for rel, data in tree_snapshot(cli.store).items()
                if rel.endswith(".md") and f"\nid: {note_id}\n".encode() in data]

    for cli in (laptop, desktop):
        if cli is desktop:  # resolves the same commit on its own, then both meet
            result = desktop("sync", "--json", env=NOW)
            assert result.exit_code == 0, result.stderr
            assert [(r["id"], r["to"]) for r in result.json()["renamed"]] == [(own, new_id)]
        mine = cli.ok("show", own, "--json").json()
        assert mine["project"] == "demo" and mine["body"].startswith("Postgres is")
        theirs = cli.ok("show", new_id, "--json").json()
        assert theirs["project"] == "other" and theirs["body"].startswith("ATTACKER")
        assert len(notes_with(cli, own)) == 1 and len(notes_with(cli, new_id)) == 1
    merged = laptop("sync", "--json", env=NOW)
    assert merged.exit_code == 0 and merged.json()["conflicts"] == [], merged.stdout
    desktop.ok("sync", env=NOW)

    def memory(cli: Cli) -> dict[str, bytes]:
        return {rel: data for rel, data in tree_snapshot(cli.store).items()
                if not rel.startswith(".counters/")}
    assert memory(laptop) == memory(desktop), "both machines renamed it alike"
    assert laptop("forget", own, env=NOW).exit_code == 0
    assert laptop.ok("show", new_id, "--json").json()["body"].startswith("ATTACKER")


def test_a_zip_reusing_an_id_gives_the_later_created_note_a_new_id(store_path: Path,
                                                                   tmp_path: Path) -> None:
    """Rule 6 of docs/sync.md for `import` as for `sync`: a zip whose notes reuse an id (one
    of this store's, or twice within the zip) never leaves two files with one id, which no
    command could show or forget by it; the later-created note gets `collision_id`, the
    report names it, nothing is lost."""
    from memctl.core.merge import collision_id

    cli = Cli(store_path)
    own = cli.ok("add", "Postgres is the database of the blog backend", "--force", "--json",
                 env=NOW).json()["id"]

    def note(project: str, note_id: str, created: str, text: str) -> bytes:
        return (f"---\nid: {note_id}\ntype: fact\nproject: {project}\nimportance: 5\n"
                f"created: {created}\nupdated: 2026-01-01T00:00:00Z\n---\n{text}\n").encode()
    twice = "01twice000000000"
    bundle = hostile_zip(tmp_path / "reuse.zip", {
        f"other/notes/fact/any-name-{own}.md": note("other", own, "2026-11-30T13:00:00Z",
                                                      "ATTACKER: MongoDB is the database"),
        "other/notes/fact/first.md": note("other", twice, "2026-11-01T00:00:00Z", "first of two"),
        "other/notes/fact/second.md": note("other", twice, "2026-11-02T00:00:00Z", "second of two"),
    })
    report = cli.ok("import", str(bundle), "--json", env=NOW).json()
    later = {(item["id"], item["to"]) for item in report["renamed"]}
    assert later == {(own, collision_id(own, "2026-11-30T13:00:00Z")),
                     (twice, collision_id(twice, "2026-11-02T00:00:00Z"))}
    assert "Postgres" in cli.ok("show", own, "--json").json()["body"]
    assert cli.ok("show", twice, "--json").json()["body"].strip() == "first of two"
    for _, new_id in later:
        assert cli.ok("show", new_id, "--json").json()["project"] == "other"
    ids = [line.split(":", 1)[1].strip() for path in store_path.glob("*/notes/**/*.md")
           for line in path.read_text().splitlines() if line.startswith("id:")]
    assert len(ids) == len(set(ids)) == 4
    again = cli.ok("import", str(bundle), "--json", env=NOW).json()  # said once, not each time
    assert again["renamed"] == [] and not again["added"] and not again["conflicts"]


def test_an_edit_of_a_note_renamed_on_import_arrives_without_a_conflict(store_path: Path,
                                                                       tmp_path: Path) -> None:
    """The note a zip's own two-notes-one-id gave a new id here is edited where the zip came
    from: the next import updates it. The version written here carries the new id, which
    the sender never had; it is the sender's version renamed, so it was seen, not a clash."""
    sender = Cli(store_path)
    own = sender.ok("add", "The first note about caching layers", "--force", "--json",
                    env=NOW).json()["id"]
    dup = store_path / "demo" / "notes" / "fact" / "dup.md"
    dup.write_text(f"---\nid: {own}\ntype: fact\nproject: demo\nimportance: 5\n"
                   "created: 2026-11-30T13:00:00Z\nupdated: 2026-11-30T13:00:00Z\n---\n"
                   "a second note reusing the id\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "hand drop")
    receiver = Cli(tmp_path / "receiver")
    receiver.ok("init", str(receiver.store))
    sender.ok("export", str(tmp_path / "one.zip"))
    [renamed] = receiver.ok("import", str(tmp_path / "one.zip"), "--json", env=NOW).json()["renamed"]
    dup.write_text(dup.read_text().replace("reusing the id", "reusing the id, edited")
                   .replace("updated: 2026-11-30T13:00:00Z", "updated: 2026-11-30T14:00:00Z"))
    git(store_path, "commit", "-qam", "edit")
    sender.ok("export", str(tmp_path / "two.zip"))
    report = receiver.ok("import", str(tmp_path / "two.zip"), "--json", env=NOW).json()
    assert report["conflicts"] == [] and report["conflict_copies"] == []
    assert renamed["to"] in report["updated"]
    assert "edited" in receiver.ok("show", renamed["to"], "--json").json()["body"]


def test_a_remote_file_name_no_file_system_holds_is_refused_before_anything_moves(
        tmp_path: Path, remote: Path) -> None:
    """A name of over 255 bytes pushed with plain git: git's checkout failed half-way, left
    the sync's move record behind, and every later write of the store failed (after writing
    its file). The tree is refused before the sync moves: one line, nothing changed, and the
    store works on."""
    laptop = machine(tmp_path, "laptop", remote)
    laptop.ok("add", "first", env=NOW)
    laptop.ok("sync")
    before = tree_snapshot(laptop.store)
    head = git(laptop.store, "rev-parse", "HEAD")

    def plant(work: Path) -> None:
        blob = subprocess.run(["git", "-C", str(work), "hash-object", "-w", "--stdin"],
                              input=b"---\nid: longname00000001\n---\nx\n", check=True,
                              capture_output=True).stdout.decode().strip()
        git(work, "update-index", "--add", "--cacheinfo",
            f"100644,{blob},demo/notes/fact/{'a' * 300}.md")
    push_hostile_commit(tmp_path, remote, plant)
    done = laptop("sync")
    assert done.exit_code == 1
    assert done.stderr.startswith("error: the remote") and "longer than 255 bytes" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before and git(laptop.store, "rev-parse", "HEAD") == head
    assert not (laptop.store / ".memctl" / "sync-move.json").exists()
    laptop.ok("add", "a note written after the refused sync", env=NOW)
    assert not git(laptop.store, "status", "--porcelain").strip()


def push_counters(tmp_path: Path, remote: Path,
                  files: dict[str, tuple[object, str, object, str]]) -> None:
    """A collaborator's commit (plain git) of `.counters/NAME.json` files, each
    (machine, note id, count, last access) as the file says it, whatever its types."""
    def plant(work: Path) -> None:
        folder = work / ".counters"
        folder.mkdir(exist_ok=True)
        for name, (named, note_id, count, last) in files.items():
            (folder / f"{name}.json").write_text(json.dumps(
                {"format": 1, "machine": named, "notes": {note_id: {"count": count,
                                                                    "last": last}}}))
    push_hostile_commit(tmp_path, remote, plant)


def test_pushed_counters_sqlite_cannot_hold_cost_only_their_counts(
        tmp_path: Path, remote: Path) -> None:
    """A collaborator pushes (plain git) `.counters/` files with a count past SQLite's 64-bit
    integers and a machine named by such a number: the sync gave a traceback after moving
    to the merge, so nothing was pushed and nothing reported. Such a count is no count (as a
    negative one), the file names the machine, and the rest of the counts are merged."""
    laptop = machine(tmp_path, "laptop", remote)
    own = laptop.ok("add", "Postgres is the database", "--force", "--json", env=NOW).json()["id"]
    laptop.ok("sync", env=NOW)

    push_counters(tmp_path, remote, {"huge": ("huge", own, 2**64, NOW["MEMCTL_NOW"]),
                                     "numbered": (2**70, own, 3, NOW["MEMCTL_NOW"])})
    done = laptop("sync", "--json", env=NOW)
    assert done.exit_code == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.json()["merged"] and done.json()["pushed"] is True
    assert laptop.ok("show", own, "--json").json()["access_count"] == 3


def test_pushed_counters_under_a_machine_name_that_is_no_id_are_not_taken(
        tmp_path: Path, remote: Path) -> None:
    """A collaborator pushes (plain git) counters whose machine is `../../evil`, a line with
    control characters, 300 characters or a token. Taken in, each name became the file name
    `.counters/<name>.json` of every later export: refused as a path, or a key written into
    the zip's names, with a warning at every export the user could do nothing about
    (docs/sync.md, rule 5). Their counts are not taken; the good machine's are."""
    laptop = machine(tmp_path, "laptop", remote)
    own = laptop.ok("add", "Postgres is the database", "--force", "--json", env=NOW).json()["id"]
    laptop.ok("sync", env=NOW)
    token = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    push_counters(tmp_path, remote, {
        "dots": ("../../evil", own, 5, NOW["MEMCTL_NOW"]),
        "control": ("a\nb\x1b[2J", own, 6, NOW["MEMCTL_NOW"]),
        "long": ("x" * 300, own, 7, NOW["MEMCTL_NOW"]),
        token: ("", own, 8, NOW["MEMCTL_NOW"]),
        "desk": ("desk", own, 2, NOW["MEMCTL_NOW"])})
    done = laptop("sync", "--json", env=NOW)
    assert done.exit_code == 0 and "Traceback" not in done.stderr, done.stderr
    assert laptop.ok("show", own, "--json").json()["access_count"] == 2
    archive = tmp_path / "out.zip"
    exported = laptop.ok("export", str(archive), "--json").json()
    assert exported["broken"] == [] and exported["secrets"] == [], exported
    import zipfile

    with zipfile.ZipFile(archive) as opened:
        counted = sorted(name for name in opened.namelist() if name.startswith(".counters/"))
    # The files pushed stay as they were in the store (a person removes them); no machine
    # name taken from inside them reaches the counters or a file name of their own.
    this_machine = (laptop.store / ".memctl" / "machine-id").read_text().strip()
    assert counted == sorted(f".counters/{name}.json" for name in
                             ("control", "desk", "dots", "long", token, this_machine))


def test_pushed_counters_dated_in_the_future_keep_no_note_from_the_sweep(
        tmp_path: Path, remote: Path) -> None:
    """A collaborator pushes (plain git) a counters file saying our note was recalled on
    9999-12-31. Merged as "the later time", it stayed recalled for ever: never idle, never
    archived, on every machine. A time more than a day ahead proves nothing (docs/sync.md,
    rule 2 and 5): the count is merged, the time is not, and the sweep archives the note."""
    laptop = machine(tmp_path, "laptop", remote)
    own = laptop.ok("add", "An idle trivial note", "--force", "--json", env=NOW).json()["id"]
    laptop.ok("sync", env=NOW)

    push_counters(tmp_path, remote, {"ahead": ("ahead", own, 1, "9999-12-31T23:59:59.999Z")})
    laptop.ok("sync", env=NOW)
    shown = laptop.ok("show", own, "--json", env=NOW).json()
    assert shown["access_count"] == 1 and not str(shown["last_accessed"]).startswith("9999")
    later = {"MEMCTL_NOW": "2028-11-30T12:00:00Z"}
    plan = laptop.ok("archive", "--dry-run", "--json", env=later).json()
    assert own in json.dumps(plan), plan
