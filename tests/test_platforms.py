"""Where there are no POSIX file locks (Windows: no `fcntl`), the commands that only read a
store work and a command that would change it says so in one line, exit 1, changing nothing
(README, "Install"). Simulated here by taking `fcntl` away before memctl is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_memctl, tree_snapshot

WITHOUT_FCNTL = ("import sys\n"
                 "sys.modules['fcntl'] = None  # what `import fcntl` meets on Windows\n"
                 "sys.argv = ['memctl', *sys.argv[1:]]\n"
                 "from memctl.cli import main\n"
                 "main()\n")


def memctl_without_file_locks(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {"MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo", "PATH": "/usr/bin:/bin",
           "MEMCTL_NOW": "2026-11-30T12:00:00Z", "EDITOR": "true"}
    return subprocess.run([sys.executable, "-c", WITHOUT_FCNTL, *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture
def store_in_use(store_path: Path) -> tuple[Path, str]:
    added = run_memctl("add", "The blog uses PostgreSQL 16", "--type", "decision", "--json", store=store_path)
    assert added.exit_code == 0, added.stderr
    assert run_memctl("scratch", "focus", "Move comments to the new schema", store=store_path).exit_code == 0
    return store_path, added.json()["id"]


def test_the_simulation_has_no_fcntl(store_path: Path) -> None:
    probe = subprocess.run([sys.executable, "-c", WITHOUT_FCNTL.replace("from memctl.cli import main\nmain()\n",
                                                                        "import fcntl\n")],
                           capture_output=True, text=True)
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr


def test_the_reading_commands_work_without_file_locks(store_in_use: tuple[Path, str], tmp_path: Path) -> None:
    store, note = store_in_use
    before = tree_snapshot(store)
    searched = memctl_without_file_locks("search", "postgres", "--json", store=store)
    assert searched.returncode == 0, searched.stderr
    assert [hit["id"] for hit in json.loads(searched.stdout)] == [note]
    for args, expected in ((["list", "--json"], note), (["show", note], "PostgreSQL 16"),
                           (["recall"], "Move comments to the new schema"), (["health", "--json"], '"totals"'),
                           (["log", note], note[:8]), (["scratch", "show"], "Move comments"),
                           (["watch", "--status"], "no watcher"), (["archive", "--dry-run"], "dry run"),
                           (["export", str(tmp_path / "out.zip")], "exported")):
        result = memctl_without_file_locks(*args, store=store)
        assert result.returncode == 0, f"memctl {' '.join(args)}: {result.stderr}"
        assert expected in result.stdout + result.stderr, args
    assert (tmp_path / "out.zip").stat().st_size > 0
    assert tree_snapshot(store) == before


@pytest.mark.parametrize("args", [
    ["add", "Comments move to the new schema"],
    ["scratch", "note", "halfway"],
    ["forget", "NOTE"],
    ["archive"],
    ["import", "BUNDLE"],
    ["sync", "--no-push"],
    ["watch"],
    ["init", "NEW"],
])
def test_a_command_that_changes_the_store_says_it_is_not_supported(
        store_in_use: tuple[Path, str], tmp_path: Path, args: list[str]) -> None:
    store, note = store_in_use
    bundle = tmp_path / "bundle.zip"
    assert run_memctl("export", str(bundle), store=store).exit_code == 0
    args = [{"NOTE": note, "BUNDLE": str(bundle), "NEW": str(tmp_path / "new-store")}.get(a, a) for a in args]
    before, head = tree_snapshot(store), git(store, "rev-parse", "HEAD")
    result = memctl_without_file_locks(*args, store=store)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not supported on Windows" in lines[0], result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert tree_snapshot(store) == before and git(store, "rev-parse", "HEAD") == head
    assert not (tmp_path / "new-store").exists()
