"""Shared fixtures: a temp store chosen by MEMCTL_STORE, the CLI in-process (CliRunner) and
the installed `memctl` as a subprocess."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_memory"


# Runs `memctl ARGS` as the console script does, and records in MARK whether the search was
# answered by a watcher's search server (the fast path, which a local search imports, was
# never loaded): `python -c HARNESS MARK ARGS...`.
HARNESS = """
import atexit, os, sys
mark = sys.argv.pop(1)
atexit.register(lambda: open(mark, "w").write(
    "local" if "memctl.cli.fast" in sys.modules else "served"))
sys.argv[0] = "memctl"
from memctl.cli import main
main()
"""


def frozen_code(tmp_path: Path) -> dict[str, str]:
    """The environment of processes that run a copy of memctl's code as it is now: a watcher
    starts again, and its search server declines every search, once memctl's files change
    under it (an upgrade; here, an edit made while the test runs)."""
    shutil.copytree(REPO / "memctl", tmp_path / "code" / "memctl")
    return {"PYTHONPATH": str(tmp_path / "code")}


def memctl_executable() -> str:
    """The installed console script next to the running interpreter."""
    candidate = Path(sys.executable).parent / "memctl"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("memctl")
    if not found:
        raise RuntimeError("memctl is not installed; run `make test`")
    return found


# The clock every test runs at unless it says otherwise: `MEMCTL_NOW` is set for the whole
# suite, so no test depends on the day it runs. CI runs the suite a second time with
# MEMCTL_TEST_NOW years ahead (see .ci/run), so a test that quietly relies on the calendar
# fails there. A test that needs the real clock is marked `@pytest.mark.real_clock`.
PINNED_NOW = os.environ.get("MEMCTL_TEST_NOW", "2026-11-30T12:00:00Z")


# No property test has hypothesis's deadline (200 ms an example, by default): a timed
# assertion, which a loaded CI machine fails (tests/test_linear_time.py: no test measures time).
settings.register_profile("memctl", deadline=None)
settings.load_profile("memctl")


def pytest_configure(config):
    config.addinivalue_line("markers", "real_clock: the test runs with the machine's real clock")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path, request):
    """No test sees the user's store, project, editor or clock."""
    for name in ("MEMCTL_STORE", "MEMCTL_PROJECT", "MEMCTL_NOW", "EDITOR", "VISUAL"):
        monkeypatch.delenv(name, raising=False)
    if request.node.get_closest_marker("real_clock") is None:
        monkeypatch.setenv("MEMCTL_NOW", PINNED_NOW)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "memctl-test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "memctl-test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.chdir(tmp_path)
    # rich's console of stdout takes its width when it is made, once per process: each test
    # makes its own, so a COLUMNS one test sets never wraps another's output.
    from memctl.cli import output

    monkeypatch.setattr(output, "_console", None)
    monkeypatch.setattr(output, "_err_console", None)


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)

    @property
    def error(self) -> str:
        """stderr without the hint line that ends a usage error (README, "Errors"): what a
        test of the one-line `error:` looks at (tests/test_output.py checks the hint)."""
        head, hint = self.stderr.rstrip("\n").rpartition("\n")[0::2]
        if self.exit_code == 2 and hint.startswith("hint: try 'memctl ") and hint.endswith(" --help'"):
            return head + "\n"
        return self.stderr


class Cli:
    """Runs memctl in-process with CliRunner, against one store."""

    def __init__(self, store: Path, project: str = "demo") -> None:
        self.store = store
        self.project = project

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        from memctl.cli.app import app

        full_env = {"MEMCTL_STORE": str(self.store), "MEMCTL_PROJECT": self.project}
        full_env.update(env or {})
        runner = CliRunner()
        result = runner.invoke(app, list(args), input=input, env=full_env, catch_exceptions=False)
        return Result(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, **kwargs) -> Result:
        result = self(*args, **kwargs)
        assert result.exit_code == 0, f"memctl {' '.join(args)} failed: {result.stderr}{result.stdout}"
        return result


def plant_dead_holder(store: Path, command: str) -> subprocess.Popen[bytes]:
    """The store lock's record of a holder killed 2 s into `command` (a process that has
    ended, so its pid is dead), as `kill -9` leaves it; the process, for its pid."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (store / ".memctl" / "lock.info").write_text(json.dumps(
        {"pid": dead.pid, "command": command, "since": time.time() - 2}))
    return dead


def write_memory_file(root: Path, rel: str, body: str, **meta: object) -> Path:
    """A file as a person would drop it into a store: front matter from `meta` (lists in
    flow style), then the body."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ""
    if meta:
        lines = ["---"]
        for key, value in meta.items():
            if isinstance(value, list):
                value = "[" + ", ".join(value) + "]"
            lines.append(f"{key}: {value}")
        head = "\n".join(lines) + "\n---\n"
    path.write_text(head + body + "\n", encoding="utf-8")
    return path


def run_memctl(*args: str, store: Path | None = None, project: str | None = "demo",
               input: str | None = None, env: dict[str, str] | None = None,
               timeout: float = 60) -> Result:
    """The installed memctl as a subprocess, as a user would run it."""
    full_env = dict(os.environ)
    if store is not None:
        full_env["MEMCTL_STORE"] = str(store)
    if project is not None:
        full_env["MEMCTL_PROJECT"] = project
    full_env.update(env or {})
    completed = subprocess.run([memctl_executable(), *args], input=input, capture_output=True,
                               text=True, env=full_env, timeout=timeout)
    return Result(completed.returncode, completed.stdout, completed.stderr)


@pytest.fixture
def store_path(tmp_path) -> Path:
    from memctl.store import Store

    root = tmp_path / "store"
    Store.init(root)
    return root


@pytest.fixture
def cli(store_path) -> Cli:
    return Cli(store_path)


@pytest.fixture
def sample_store(tmp_path) -> Path:
    """A git store made from the bundled sample_memory/."""
    from memctl.store import Store

    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root)
    Store.init(root)
    return root


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def python_lines(script: str) -> list[str]:
    """The lines a Python script prints, run in a fresh interpreter: what a module loads or
    compiles on its own, with nothing imported before it."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a store but .git/ and .memctl/, for 'nothing changed' assertions."""
    snapshot = {}
    for path in sorted(Path(root).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".git/", ".memctl/")) or rel in (".git", ".memctl") or not path.is_file():
            continue
        snapshot[rel] = path.read_bytes()
    return snapshot


# An $EDITOR for `memctl edit` in tests: replaces the note's body with $NEW_BODY, keeps its
# front matter as it is.
BODY_EDITOR = """import os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
head, sep, _ = text.partition("\\n---\\n")
open(path, "w", encoding="utf-8").write(head + sep + os.environ["NEW_BODY"] + "\\n")
"""


# Two machines and a remote, for sync tests: a bare repository, stores made by `memctl init`
# (or cloned from the remote), and `memctl edit` replacing a note's body at a pinned time.
@pytest.fixture
def remote(tmp_path) -> str:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return str(path)


def machine(tmp_path: Path, name: str, remote: str | None = None) -> Cli:
    root = tmp_path / name
    cli = Cli(root)
    cli.ok("init", str(root), *(("--clone", remote) if remote else ()))
    return cli


def advised(stderr: str) -> list[list[str]]:
    """The git commands an error names as the way out, `(git -C … && git -C …)`: tests run
    them as a person would, then see the store work again."""
    found = re.search(r"\((git -C [^)]*)\)", stderr)
    assert found, f"no git command named in: {stderr}"
    return [shlex.split(part) for part in found.group(1).split(" && ")]


def run_advice(stderr: str) -> None:
    for command in advised(stderr):
        assert "BRANCH" not in command, "a placeholder where the branch is known"
        subprocess.run(command, check=True, capture_output=True, text=True)


def edit(cli: Cli, note_id: str, body: str, now: str) -> None:
    script = cli.store.parent / "editor.py"
    script.write_text(BODY_EDITOR)
    cli.ok("edit", note_id, env={"EDITOR": f"{sys.executable} {script}", "NEW_BODY": body,
                                 "MEMCTL_NOW": now})
