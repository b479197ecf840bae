"""A SHA-256 git repository (`git init --object-format=sha256`): memctl computes git's blob
ids itself (SHA-1) to tell versions apart in a merge, an export and an import, so it keeps
stores in SHA-1 repositories and refuses the others with one line, changing nothing; the
memory of a SHA-256 store moves to a SHA-1 one by `import` of its folder (docs/sync.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import git, machine, run_memctl, tree_snapshot

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def sha256_repository(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(path)], check=True)
    return path


def sha256_store(tmp_path: Path, *, committed: bool = True) -> tuple[Path, list[str]]:
    """A store whose files were put in a SHA-256 repository by hand (as plain git would),
    with two notes; and their ids."""
    made = machine(tmp_path, "made")
    ids = [made.ok("add", text, "--json", "--force").json()["id"]
           for text in ("Deploys run from the release branch", "The cache lives in Redis")]
    store = sha256_repository(tmp_path / "sha256")
    shutil.copytree(made.store, store, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    if committed:
        subprocess.run(["git", "-C", str(store), *IDENTITY, "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(store), *IDENTITY, "commit", "-q", "-m", "by hand"],
                       check=True)
    return store, ids


def refused(result, *words: str) -> None:
    assert result.exit_code == 1, result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "SHA-256" in lines[0] and "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_init_refuses_a_sha256_repository_and_writes_nothing(tmp_path):
    folder = sha256_repository(tmp_path / "repo")
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    refused(run_memctl("init", str(folder)), "nothing was changed")
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before


def test_a_clone_of_a_sha256_remote_is_refused_and_leaves_nothing(tmp_path):
    store, _ = sha256_store(tmp_path)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(store), str(remote)], check=True)
    target = tmp_path / "clone"
    refused(run_memctl("init", str(target), "--clone", str(remote)), "nothing was cloned")
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".clone")] == []


def test_export_and_sync_of_a_sha256_store_are_refused_and_change_nothing(tmp_path):
    store, _ = sha256_store(tmp_path)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "--object-format=sha256", str(remote)],
                   check=True)
    (store / "demo" / "by-hand.md").write_text("# A note written by hand\n", encoding="utf-8")
    files, head = tree_snapshot(store), git(store, "rev-parse", "HEAD")
    config = (store / ".git" / "config").read_bytes()
    zip_path = tmp_path / "out.zip"
    refused(run_memctl("export", str(zip_path), store=store), "nothing was changed",
            f"memctl --store NEW import {store}")
    assert not zip_path.exists()
    refused(run_memctl("sync", "--remote", str(remote), store=store), "nothing was changed")
    assert tree_snapshot(store) == files
    assert git(store, "rev-parse", "HEAD") == head
    assert (store / ".git" / "config").read_bytes() == config, "no remote, no merge driver"
    assert git(remote, "for-each-ref") == ""


def test_the_memory_of_a_sha256_store_moves_to_a_sha1_store_by_import(tmp_path):
    store, ids = sha256_store(tmp_path)
    target = machine(tmp_path, "target")
    target.ok("import", str(store))
    for note_id in ids:
        assert target.ok("show", note_id, "--json").json()["id"] == note_id
    assert git(target.store, "rev-parse", "--show-object-format").strip() == "sha1"


def test_notes_are_added_and_committed_in_a_sha256_store_without_a_commit(tmp_path):
    # The first commit of a repository names no old value git would read as a SHA-1 id.
    store, _ = sha256_store(tmp_path, committed=False)
    result = run_memctl("add", "The first commit of this repository", "--force", "--json",
                        store=store)
    assert result.exit_code == 0, result.stderr
    assert git(store, "log", "--format=%s").strip().startswith("add fact ")
    assert result.json()["path"] in git(store, "ls-files").splitlines()
