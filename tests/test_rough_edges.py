"""Everyday rough edges, each on real stores (a bare repository as the remote, clones, real
zips, the CLI): `init` in a code repository, `log` after a merge, a mistyped first remote,
naming and diffing conflict copies, a merge driver that does not name one virtualenv, the
demo's temporary store, and importing the same zip twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE, Cli, edit, git, machine, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

T = ["2026-11-30T09:00:00.000Z", "2026-11-30T10:00:00.000Z", "2026-11-30T11:00:00.000Z",
     "2026-11-30T12:00:00.000Z"]


def add(cli: Cli, text: str, now: str) -> str:
    return cli.ok("add", text, "--json", "--force", env={"MEMCTL_NOW": now}).json()["id"]


def body_of(cli: Cli, note_id: str) -> str:
    return cli.ok("show", note_id, "--json").json()["body"].strip()


def losing_edit_on_b(tmp_path: Path, remote: str) -> tuple[Cli, Cli, str]:
    """a and b edit one note; a's edit is newer and reaches the remote first; b's edit is
    committed on b, not synced yet (it will lose)."""
    a = machine(tmp_path, "a")
    note = add(a, "The default branch is main", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    edit(a, note, "The default branch is trunk", T[2])
    a.ok("sync")
    edit(b, note, "The default branch is develop", T[1])
    return a, b, note


def code_repository(path: Path) -> Path:
    path.mkdir()
    (path / "docs").mkdir()
    (path / "docs" / "guide.md").write_text("# Guide\n")
    (path / "main.py").write_text("print('hello')\n")
    git(path.parent, "init", "-q", str(path))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "the project's own commit")
    return path


# --- 1. init in a folder that is not a store --------------------------------------------------


def test_init_refuses_a_code_repository_unless_forced(tmp_path):
    project = code_repository(tmp_path / "project")
    before, history = tree_snapshot(project), git(project, "log", "--format=%H")
    cli = Cli(project)
    refused = cli("init", str(project))
    assert refused.exit_code == 1 and refused.stderr.startswith("error:")
    assert "main.py" in refused.stderr and "--force" in refused.stderr
    assert tree_snapshot(project) == before, "no memctl.toml, no .gitattributes, nothing"
    assert git(project, "log", "--format=%H") == history, "no commit in the project's history"
    assert not (project / ".memctl").exists()

    cli.ok("init", str(project), "--force")
    assert (project / "memctl.toml").is_file()
    assert git(project, "log", "-1", "--format=%s").startswith("memctl init")


def test_init_refuses_a_folder_of_other_files_and_a_repository_whose_commit_has_them(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "draft.txt").write_text("not memory\n")
    cli = Cli(folder)
    assert cli("init", str(folder)).exit_code == 1
    assert not (folder / ".git").exists() and not (folder / "memctl.toml").exists()

    # Only memory-shaped files on disk, but the repository's commit holds code: `git add -A`
    # would commit its deletion.
    repo = code_repository(tmp_path / "repo")
    (repo / "main.py").unlink()
    result = Cli(repo)("init", str(repo))
    assert result.exit_code == 1 and "main.py" in result.stderr


def test_init_still_accepts_memory_an_empty_folder_and_an_existing_store(tmp_path):
    sample = tmp_path / "sample"
    shutil.copytree(SAMPLE, sample)  # what `make demo` does
    assert Cli(sample).ok("init", str(sample), "--json").json()["created"] is True

    memory = tmp_path / "memory"  # memory files without memctl.toml
    (memory / "blog" / "notes" / "fact").mkdir(parents=True)
    (memory / "blog" / "MEMORY.md").write_text("# blog\n")
    (memory / "blog" / "notes" / "fact" / "db.md").write_text("PostgreSQL 16\n")
    (memory / "blog" / "notes" / ".DS_Store").write_text("")
    Cli(memory).ok("init", str(memory))
    assert (memory / "memctl.toml").is_file()

    empty = tmp_path / "empty"
    empty.mkdir()
    Cli(empty).ok("init", str(empty))
    Cli(tmp_path / "new").ok("init", str(tmp_path / "new"))
    assert Cli(empty).ok("init", str(empty), "--json").json()["created"] is False


# --- 2. log after a merge ----------------------------------------------------------------------


def test_log_after_a_sync_lists_the_losing_commit_and_the_merge(tmp_path, remote):
    _a, b, note = losing_edit_on_b(tmp_path, remote)
    losing = git(b.store, "rev-parse", "HEAD").strip()
    b.ok("sync")
    merge = git(b.store, "rev-parse", "HEAD").strip()
    assert len(git(b.store, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3
    assert "develop" in body_of(b, note) or "trunk" in body_of(b, note)
    commits = [row["commit"] for row in b.ok("log", note, "--json").json()]
    assert losing in commits, "this machine's losing edit is left out"
    assert merge in commits, "the merge that replaced the note is left out"


# --- 3. a mistyped first remote ----------------------------------------------------------------


def test_a_failed_first_remote_names_gits_reason_and_is_not_kept(tmp_path, remote):
    a = machine(tmp_path, "a")
    note = add(a, "Published on the second try", T[0])
    bad = tmp_path / "typo.git"
    failed = a("sync", "--remote", str(bad))
    assert failed.exit_code == 1 and failed.stderr.startswith("error:")
    assert "fatal:" in failed.stderr and "does not appear to be a git repository" in failed.stderr
    assert git(a.store, "remote") == "", "a remote that failed on first use is kept"
    assert a.ok("sync", "--remote", remote, "--json").json()["pushed"] is True
    assert git(a.store, "remote", "get-url", "origin").strip() == str(Path(remote).resolve())
    assert body_of(machine(tmp_path, "b", remote), note) == "Published on the second try"


# --- 4. conflict copies named, and their difference shown ---------------------------------------


def test_sync_names_its_conflict_copies_and_conflicts_diff_shows_what_differs(tmp_path, remote):
    _a, b, note = losing_edit_on_b(tmp_path, remote)
    synced = b.ok("sync")
    copies = sorted(p.relative_to(b.store).as_posix() for p in (b.store / ".conflicts").rglob("*.md"))
    assert len(copies) == 1 and note in copies[0]
    assert copies[0] in synced.stdout + synced.stderr, "the copy is not named"
    assert body_of(b, note) == "The default branch is trunk"

    diff = b.ok("conflicts", "diff", "1").stdout
    current = b.ok("show", note, "--json").json()["path"]
    assert f"--- {current}\n+++ {copies[0]}\n" in diff
    assert "\n-The default branch is trunk\n" in diff and "\n+The default branch is develop\n" in diff
    shown = b.ok("conflicts", "diff", note, "--json").json()
    assert shown["path"] == copies[0] and shown["diff"] == diff
    assert b("conflicts", "diff", "7").exit_code == 1
    # `show` takes --json as every command that prints data does (README): the copy's fields
    # and its text as `show` prints it (it was "no such option: --json", exit 2).
    printed = b.ok("conflicts", "show", "1").stdout
    assert "The default branch is develop" in printed
    copy = b.ok("conflicts", "show", "1", "--json").json()
    assert copy["path"] == copies[0] and copy["id"] == note and copy["text"] == printed


def test_sync_json_names_the_copies(tmp_path, remote):
    _a, b, note = losing_edit_on_b(tmp_path, remote)
    report = b.ok("sync", "--json").json()
    assert len(report["conflicts"]) == 1 and (b.store / report["conflicts"][0]).is_file()


def test_conflicts_diff_of_a_big_reordered_copy_is_whole(tmp_path):
    """Past difflib's comfortable size the differing part is shown removed and added whole."""
    from memctl.exchange.conflicts import MAX_MATCHED_LINES, unified_diff

    lines = [f"line {n}\n" for n in range(MAX_MATCHED_LINES * 3)]
    old, new = "head\n" + "".join(lines), "head\n" + "".join(reversed(lines))
    diff = unified_diff(old, new, "a.md", "b.md")
    assert diff.startswith("--- a.md\n+++ b.md\n@@ -1,")
    assert diff.count("\n-line ") == diff.count("\n+line ") == len(lines)
    (tmp_path / "a.md").write_text(old)
    (tmp_path / "d.patch").write_text(diff)
    if shutil.which("patch"):
        subprocess.run(["patch", "-s", "-o", str(tmp_path / "b.md"), str(tmp_path / "a.md"),
                        str(tmp_path / "d.patch")], check=True)
        assert (tmp_path / "b.md").read_text() == new


def _apply_unified(old: str, diff: str) -> str:
    """`diff` (a unified diff of memctl's, from `old`) applied to `old`: each hunk's context
    and removed lines must be `old`'s lines at the place its header names."""
    marker = "\\ No newline at end of file\n"
    lines = old.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n" + marker
    rows = diff.splitlines(keepends=True)[2:]
    out: list[str] = []
    done = row = 0
    while row < len(rows):
        header = rows[row].split()
        start, _, length = header[1][1:].partition(",")
        begin = int(start) - (1 if length != "0" else 0)
        out.extend(lines[done:begin])
        done, row = begin, row + 1
        body = []
        while row + len(body) < len(rows) and not rows[row + len(body)].startswith("@@"):
            body.append(rows[row + len(body)][0])
        signs = "".join(sign for sign in body if sign != "\\")
        # Three lines of context before and after each change, unless the file starts or
        # ends first: with fewer, `git apply` reads a hunk as one at the file's start or end.
        leading, trailing = len(signs) - len(signs.lstrip(" ")), len(signs) - len(signs.rstrip(" "))
        assert leading == 3 or begin == 0, (begin, signs)
        assert trailing == 3 or begin + signs.count(" ") + signs.count("-") == len(lines), signs
        while row < len(rows) and not rows[row].startswith("@@"):
            sign, body = rows[row][0], rows[row][1:]
            if row + 1 < len(rows) and rows[row + 1] == marker:
                body, row = body + marker, row + 1
            if sign in " -":
                assert lines[done] == body, (done, lines[done], body)
                done += 1
            if sign in " +":
                out.append(body)
            row += 1
    return "".join(out + lines[done:]).replace("\n" + marker, "")


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "x"]), max_size=16)


@settings(max_examples=500, deadline=None)
@given(LINES, LINES, LINES, LINES)
def test_a_conflicts_diff_turns_the_current_version_into_the_copy(shared, old, new, tail):
    """Whatever the two versions (a shared start and end, and what differs between: difflib
    reads only that and its context), the diff applied to the current version gives the
    copy, line for line, and no diff at all when their lines are the same."""
    from memctl.exchange.conflicts import unified_diff

    current = "".join(shared + old + tail)
    copy = "".join(shared + new + tail)
    diff = unified_diff(current, copy, "a.md", "b.md")
    if current.splitlines(keepends=True) == copy.splitlines(keepends=True):
        assert diff == ""
    else:
        assert diff.startswith("--- a.md\n+++ b.md\n@@ -")
        assert _apply_unified(current, diff) == copy


# --- 5. the merge driver through PATH ----------------------------------------------------------


def test_merge_driver_names_no_virtualenv_and_merges_through_path(tmp_path, remote, monkeypatch):
    # memctl installed somewhere else than this interpreter's folder: a launcher on PATH
    # (as pipx or a moved virtualenv would give); the interpreter's folder is off PATH.
    venv_bin = Path(sys.executable).parent
    launcher = tmp_path / "elsewhere" / "bin"
    launcher.mkdir(parents=True)
    (launcher / "memctl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memctl "$@"\n')
    (launcher / "memctl").chmod(0o755)
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "memctl").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([str(launcher), *kept]))

    a, b, note = losing_edit_on_b(tmp_path, remote)
    driver = git(b.store, "config", "--get", "merge.memctl.driver").strip()
    assert str(venv_bin) not in driver and sys.prefix not in driver, driver
    assert "merge-file" in driver
    pulled = subprocess.run(["git", "-C", str(b.store), "pull", "-q", "--no-rebase", "--no-edit",
                             "origin", git(b.store, "symbolic-ref", "--short", "HEAD").strip()],
                            capture_output=True, text=True, env=dict(os.environ, GIT_MERGE_AUTOEDIT="no"))
    assert pulled.returncode == 0, pulled.stderr
    for path, data in tree_snapshot(b.store).items():
        assert b"<<<<<<<" not in data, f"conflict markers in {path}"
    assert body_of(b, note) == "The default branch is trunk"
    copies = list((b.store / ".conflicts").rglob("*.md"))
    assert copies and "develop" in copies[0].read_text()


def test_another_program_named_memctl_on_path_is_not_made_the_merge_driver(tmp_path, monkeypatch):
    # The package index has another program called memctl: git must not run it on a merge.
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "memctl").write_text("#!/bin/sh\necho 'memctl 0.23.1'\n")
    (other / "memctl").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(other), os.environ.get("PATH", "")]))
    a = machine(tmp_path, "a")
    driver = git(a.store, "config", "--get", "merge.memctl.driver").strip()
    assert driver.startswith(sys.executable) and driver.endswith("-m memctl merge-file %O %A %B %P")


def test_sync_never_commits_editor_debris(tmp_path, remote):
    a = machine(tmp_path, "a")
    note = add(a, "The staging database listens on 5433", T[0])
    folder = next(a.store.rglob(f"*{note}.md")).parent
    debris = [folder / f".{note}.md.swp", folder / f"x-{note}.md~", folder / "4913",
              a.store / "default" / "notes.md.orig"]
    for path in debris:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("editor debris\n")
    (folder / "hand.md").write_text("---\ntype: fact\n---\nA hand-written note\n")
    a.ok("sync", "--remote", remote)
    committed = git(a.store, "ls-files").split("\n")
    assert any(line.endswith("hand.md") for line in committed)
    for path in debris:
        assert str(path.relative_to(a.store)) not in committed, path


# --- 6. make demo cleans up ---------------------------------------------------------------------


def _make_demo(tmp_path: Path, bin_dir: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    # -o: never rebuild the virtualenv from the test; BIN: the memctl under test.
    done = subprocess.run(["make", "--no-print-directory", "-o", f"{bin_dir}/memctl",
                           f"BIN={bin_dir}", "demo"], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(temp)), timeout=300)
    return done, temp


# A whole successful run is tests/test_sample_memory.py's README demo test (which checks the
# cleanup too); here a step fails half way.
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_removes_its_temporary_store_when_a_step_fails(tmp_path):
    failing = tmp_path / "bin"
    failing.mkdir()
    (failing / "memctl").write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = health ] && exit 3; done\n'
        f'exec "{sys.executable}" -m memctl "$@"\n')
    (failing / "memctl").chmod(0o755)
    done, temp = _make_demo(tmp_path, failing)
    assert done.returncode != 0 and "$ memctl health" in done.stdout
    assert list(temp.iterdir()) == []


# --- 7. the same zip imported twice -------------------------------------------------------------


def test_reimporting_the_same_zip_reports_nothing_new(tmp_path):
    laptop, desktop = machine(tmp_path, "laptop"), machine(tmp_path, "desktop")
    note = add(laptop, "The cache TTL is 60 seconds", T[0])
    first = tmp_path / "first.zip"
    laptop.ok("export", str(first))
    desktop.ok("import", str(first))
    edit(desktop, note, "The cache TTL is 120 seconds", T[1])
    edit(laptop, note, "The cache TTL is 600 seconds", T[2])  # newer: the desktop's loses
    bundle = tmp_path / "desktop.zip"
    desktop.ok("export", str(bundle))

    once = laptop.ok("import", str(bundle), "--json").json()
    assert once["conflicts"] == [note] and len(once["conflict_copies"]) == 1
    assert (laptop.store / once["conflict_copies"][0]).is_file()
    head, files = git(laptop.store, "rev-parse", "HEAD"), tree_snapshot(laptop.store)

    again = laptop.ok("import", str(bundle), "--json").json()
    assert again["conflicts"] == [] and again["conflict_copies"] == []
    assert again["unchanged"] == [note]
    assert git(laptop.store, "rev-parse", "HEAD") == head and tree_snapshot(laptop.store) == files
    assert len(laptop.ok("conflicts", "--json").json()) == 1
    text = laptop.ok("import", str(bundle)).stdout
    assert "conflict" not in text, text
    assert body_of(laptop, note) == "The cache TTL is 600 seconds"


def test_a_folder_deeper_than_a_path_can_name_stops_neither_health_nor_export(store_path,
                                                                             tmp_path):
    """A chain of folders longer than PATH_MAX (made with relative steps, as a tool that
    `chdir`s can): `health` and `export` stopped at it with "File name too long" worded as a
    full disk. It is passed over, as the index's walk passes over it."""
    cli = Cli(store_path)
    cli.ok("add", "a note beside the deep folder", "--project", "demo")
    here = os.getcwd()
    try:
        os.chdir(store_path / "demo")
        for name in ["d" * 200] * 21:  # 4,221 characters; few levels, so rmtree copes
            os.mkdir(name)
            os.chdir(name)
        with open("deep.md", "w") as handle:
            handle.write("a note no path can name\n")
    finally:
        os.chdir(here)
    cli.ok("health", "--json")
    cli.ok("export", str(tmp_path / "out.zip"))
    assert cli.ok("search", "beside", "--json").json()
