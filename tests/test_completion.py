"""Shell completion (typer's): `memctl --install-completion` and `--show-completion`, and the
completions a shell gets from the installed `memctl`, run as the shell runs it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import memctl_executable

from memctl.core.vocab import NOTE_TYPES


def memctl(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HOME": str(home), "SHELL": "/bin/bash", **env}
    return subprocess.run([memctl_executable(), *args], capture_output=True, text=True, env=full_env, timeout=60)


def complete_bash(line: str, home: Path) -> list[str]:
    """What bash's completion function gets for the command line typed so far."""
    words = line.split(" ")
    result = memctl(home=home, _MEMCTL_COMPLETE="complete_bash", COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_shell_completes_commands_subcommands_and_choices(tmp_path: Path) -> None:
    assert complete_bash("memctl sea", tmp_path) == ["search"]
    assert "focus" in complete_bash("memctl scratch fo", tmp_path)
    assert complete_bash("memctl add --type ", tmp_path) == list(NOTE_TYPES)


def test_completion_installs_for_the_users_shell(tmp_path: Path) -> None:
    assert "--install-completion" in memctl("--help", home=tmp_path).stdout
    shown = memctl("--show-completion", "bash", home=tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert shown.returncode == 0, shown.stderr
    assert "_MEMCTL_COMPLETE" in shown.stdout and "complete -o default" in shown.stdout
    installed = memctl("--install-completion", "bash", home=tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert installed.returncode == 0, installed.stderr
    script = tmp_path / ".bash_completions" / "memctl.sh"
    assert "_MEMCTL_COMPLETE" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
