"""The project a git repository stands for (memctl/disk/repositories.py; docs/agents.md, "Which
project a repository is"): the worktrees of one repository share it, two unrelated repositories
whose folders have the same name do not, with real repositories, worktrees and clones."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_memctl

from memctl.disk.repositories import REGISTRY_FILE, numbered_name, origin_key, shown_url


def repository(path: Path, first_commit: str = "init") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", first_commit)
    return path


def add_here(folder: Path, store: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """`memctl add` run in `folder` with no project named: (the note's project, stderr)."""
    monkeypatch.chdir(folder)
    added = run_memctl("add", text, "--force", "--json", store=store, project=None)
    assert added.exit_code == 0, added.stderr
    return added.json()["path"].split("/")[0], added.stderr


def root_commit(path: Path) -> str:
    return min(git(path, "rev-list", "--max-parents=0", "--all").split())


def test_the_worktrees_of_a_repository_share_its_project(tmp_path: Path, store_path: Path, monkeypatch) -> None:
    main = repository(tmp_path / "code" / "shop-api")
    git(main, "worktree", "add", "-q", "-b", "feature-x", str(tmp_path / "code" / "shop-api-feature-x"))
    nested = tmp_path / "code" / "shop-api-feature-x" / "src" / "api"
    nested.mkdir(parents=True)

    assert add_here(main, store_path, "The API listens on 8080", monkeypatch) == ("shop-api", "")
    assert add_here(nested, store_path, "Feature X adds a /v2 route", monkeypatch) == ("shop-api", "")
    monkeypatch.chdir(tmp_path / "code" / "shop-api-feature-x")
    listed = run_memctl("list", "--json", store=store_path, project=None)
    assert sorted(note["title"] for note in listed.json()) == ["Feature X adds a /v2 route", "The API listens on 8080"]
    assert not (store_path / "shop-api-feature-x").exists()


def test_the_worktrees_of_a_bare_repository_take_its_name(tmp_path: Path, store_path: Path, monkeypatch) -> None:
    source = repository(tmp_path / "source")
    bare = tmp_path / "repos" / "billing.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    git(bare, "worktree", "add", "-q", str(tmp_path / "repos" / "billing-hotfix"))
    assert add_here(tmp_path / "repos" / "billing-hotfix", store_path, "Invoices close on the 1st",
                    monkeypatch)[0] == "billing"


def test_two_unrelated_repositories_with_one_folder_name_get_two_projects(
        tmp_path: Path, store_path: Path, monkeypatch) -> None:
    work = repository(tmp_path / "work" / "shop-api", "work's first commit")
    hobby = repository(tmp_path / "hobby" / "shop-api", "hobby's first commit")
    assert root_commit(work) != root_commit(hobby)

    assert add_here(work, store_path, "Work's API uses PostgreSQL", monkeypatch) == ("shop-api", "")
    project, said = add_here(hobby, store_path, "The hobby API uses SQLite", monkeypatch)
    assert project == numbered_name("shop-api", f"commit:{root_commit(hobby)}")
    assert project.startswith("shop-api-") and project != "shop-api"
    assert said.startswith("note: ") and str(work) in said and "--project" in said

    # The same answers every time, in either order, and the two memories stay apart.
    assert add_here(hobby, store_path, "The hobby API has no auth", monkeypatch)[0] == project
    assert add_here(work, store_path, "Work's API runs in Kubernetes", monkeypatch)[0] == "shop-api"
    monkeypatch.chdir(work)
    assert {n["title"] for n in run_memctl("list", "--json", store=store_path, project=None).json()} == {
        "Work's API uses PostgreSQL", "Work's API runs in Kubernetes"}

    # A repository moved elsewhere is still itself.
    moved = tmp_path / "elsewhere" / "shop-api"
    moved.parent.mkdir()
    shutil.move(str(hobby), str(moved))
    assert add_here(moved, store_path, "The hobby API moved", monkeypatch)[0] == project


def test_clones_of_one_remote_share_a_project_whatever_their_url(tmp_path: Path, store_path: Path,
                                                                 monkeypatch) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repository(tmp_path / "seed")), str(remote)], check=True)
    first, second = tmp_path / "a" / "shop-api", tmp_path / "b" / "shop-api"
    for clone in (first, second):
        subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    git(first, "remote", "set-url", "origin", "git@github.com:alice/shop-api.git")
    git(second, "remote", "set-url", "origin", "https://alice:ghp_notarealtoken@github.com/alice/shop-api")
    assert add_here(first, store_path, "Deploys go through CI", monkeypatch)[0] == "shop-api"
    assert add_here(second, store_path, "CI runs on every push", monkeypatch)[0] == "shop-api"
    registry = (store_path / ".memctl" / REGISTRY_FILE).read_text(encoding="utf-8")
    recorded = json.loads(registry)["projects"]["shop-api"]
    assert recorded["origin"] == "github.com/alice/shop-api" and recorded["commit"] == root_commit(first)
    assert "ghp_notarealtoken" not in registry and "alice@" not in registry

    # The remote renamed: the same repository, the same project.
    git(second, "remote", "set-url", "origin", "git@github.com:alice/shop-service.git")
    assert add_here(second, store_path, "The repository was renamed", monkeypatch)[0] == "shop-api"

    # Its own first commit: an empty commit with the same message made in the same second
    # as the seed's would be the same commit, and rightly the same project.
    unrelated = repository(tmp_path / "c" / "shop-api", first_commit="bob's first commit")
    git(unrelated, "remote", "add", "origin", "git@github.com:bob/shop-api.git")
    assert add_here(unrelated, store_path, "Bob's own shop", monkeypatch)[0] == numbered_name(
        "shop-api", f"commit:{root_commit(unrelated)}")


def test_a_repository_keeps_its_project_when_it_gains_commits_and_a_remote(
        tmp_path: Path, store_path: Path, monkeypatch) -> None:
    folder = tmp_path / "shop-api"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    assert add_here(folder, store_path, "Started today", monkeypatch)[0] == "shop-api"
    git(folder, "commit", "-q", "--allow-empty", "-m", "first")
    git(folder, "remote", "add", "origin", "git@github.com:alice/shop-api.git")  # rewrites .git/config
    assert add_here(folder, store_path, "Pushed to GitHub", monkeypatch)[0] == "shop-api"
    other = repository(tmp_path / "elsewhere" / "shop-api")
    assert add_here(other, store_path, "Unrelated", monkeypatch)[0] != "shop-api"


def test_origin_urls_become_host_and_path() -> None:
    same = {origin_key(url) for url in (
        "git@github.com:alice/shop-api.git", "ssh://git@github.com/alice/shop-api.git",
        "https://github.com/alice/shop-api", "https://alice:secret@GitHub.com:443/alice/shop-api.git/")}
    assert same == {"github.com/alice/shop-api"}
    assert origin_key("/srv/git/shop-api.git") == "path:/srv/git/shop-api"
    # No credential is recorded, whatever its form: a token before an scp-like host, a
    # password holding a `/`.
    token = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert origin_key(f"user:{token}@github.com:acme/other.git") == "github.com/acme/other"
    assert origin_key("https://bob:s3cr3t/pass@host.example/a/b.git") == "host.example/a/b"
    assert origin_key("https://host.example/a/b@v1") == "host.example/a/b@v1"
    assert origin_key("https://host.com/@scope/repo.git") == "host.com/@scope/repo"
    assert origin_key("https://localhost:8080/a@b/repo.git") == "localhost/a@b/repo"
    assert origin_key("file:///srv/git/a@b/repo.git") == "/srv/git/a@b/repo"
    # What is printed of a URL loses the same user and password.
    assert shown_url("https://bob:s3cr3t/pass@host.example/a/b.git") == "https://host.example/a/b.git"
    assert shown_url(f"https://alice:{token}@host.example:8443/a.git") == "https://host.example:8443/a.git"
    assert shown_url("https://host.com/@scope/repo.git") == "https://host.com/@scope/repo.git"
    assert numbered_name("x" * 100, "id").endswith(f"-{numbered_name('a', 'id').split('-')[1]}")
    assert len(numbered_name("数" * 40, "id").encode()) <= 100


def test_another_repository_in_the_same_folder_is_worked_out_again(tmp_path: Path, store_path: Path,
                                                                    monkeypatch) -> None:
    folder = tmp_path / "shop-api"
    first = repository(folder, "the first repository")
    assert add_here(first, store_path, "The first one", monkeypatch)[0] == "shop-api"
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(folder)
    second = repository(folder, "an unrelated repository")
    assert add_here(second, store_path, "The second one", monkeypatch)[0] == numbered_name(
        "shop-api", f"commit:{root_commit(second)}")


def test_a_damaged_record_is_started_again(tmp_path: Path, store_path: Path, monkeypatch) -> None:
    repo = repository(tmp_path / "shop-api")
    (store_path / ".memctl" / REGISTRY_FILE).write_text('{"projects": [1, 2], "worktrees": "x"', encoding="utf-8")
    assert add_here(repo, store_path, "Still works", monkeypatch) == ("shop-api", "")
    assert json.loads((store_path / ".memctl" / REGISTRY_FILE).read_text())["projects"]["shop-api"]


def test_a_known_working_tree_calls_no_git(tmp_path: Path, store_path: Path, monkeypatch) -> None:
    """`memctl search` in a repository the store has met loads neither git's module nor
    subprocess (start-up: tests/test_layers.py)."""
    main = repository(tmp_path / "shop-api")
    add_here(main, store_path, "The API listens on 8080", monkeypatch)
    script = ("import sys, atexit\n"
              "atexit.register(lambda: print(sorted(m for m in ('memctl.disk.gitops', 'subprocess', "
              "'memctl.disk.repositories') if m in sys.modules), file=sys.stderr))\n"
              "sys.argv = ['memctl', 'search', 'API', '--json']\n"
              "from memctl.cli import main\nmain()\n")
    env = {"MEMCTL_STORE": str(store_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    completed = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=main)
    assert completed.returncode == 0, completed.stderr
    assert [hit["project"] for hit in json.loads(completed.stdout)] == ["shop-api"]
    assert completed.stderr.strip().splitlines()[-1] == "['memctl.disk.repositories']"


def test_a_repository_folder_named_global_writes_into_no_other_projects_recall(
        tmp_path: Path, store_path: Path, monkeypatch) -> None:
    """`global` is the scope every project reads: a repository whose folder is so named gets
    the default project, with a word saying so; its notes were in every project's recall."""
    here = repository(tmp_path / "maps" / "global")
    project, said = add_here(here, store_path, "The map tiles build nightly", monkeypatch)
    assert project == "default" and "'global'" in said
    other = repository(tmp_path / "code" / "other")
    monkeypatch.chdir(other)
    recalled = run_memctl("recall", "--json", store=store_path, project=None).json()
    assert all("map tiles" not in note["text"] for note in recalled["notes"])


def test_a_repository_folder_named_like_a_key_never_becomes_a_project(
        tmp_path: Path, store_path: Path, monkeypatch) -> None:
    # A project's name is a folder of every clone and in every commit message: a repository
    # whose folder holds a key gets the default project, as one whose name leaves none.
    key_folder = "deploy-ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    main = repository(tmp_path / "code" / key_folder)
    project, _ = add_here(main, store_path, "The deploy key rotates monthly", monkeypatch)
    assert "ghp_" not in project
    assert not any("ghp_" in entry.name for entry in store_path.iterdir())
    log = git(store_path, "log", "--format=%s")
    assert "ghp_" not in log


def test_inside_the_store_a_store_path_with_dots_or_a_link_is_still_the_store(
        tmp_path: Path, store_path: Path, monkeypatch) -> None:
    """Standing in a project folder of the store, `--store ..` (or a link to the store) was not
    recognised as the store one stands in: the store's own git repository was taken for the
    repository one works in, and the note went to a project named after the store's folder
    (`store/`), not to the project folder one stands in."""
    (store_path / "demo").mkdir()
    link = tmp_path / "linked-store"
    link.symlink_to(store_path)
    for given in ("..", str(link), str(store_path)):
        monkeypatch.chdir(store_path / "demo")
        added = run_memctl("--store", given, "add", f"A note written through {given}", "--force",
                           "--json", project=None)
        assert added.exit_code == 0, added.stderr
        assert added.json()["path"].split("/")[0] == "demo", (given, added.stdout)
    assert not (store_path / "store").exists()
