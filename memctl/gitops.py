"""git through the git program (fast and predictable; see RESEARCH.md), never GitPython's
index. Every store change ends in exactly one commit made here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memctl.errors import MemctlError

_IDENTITY = {
    "GIT_AUTHOR_NAME": "memctl",
    "GIT_AUTHOR_EMAIL": "memctl@localhost",
    "GIT_COMMITTER_NAME": "memctl",
    "GIT_COMMITTER_EMAIL": "memctl@localhost",
}


class GitError(MemctlError):
    pass


def git_available() -> bool:
    return shutil.which("git") is not None


def run_git(root: Path, *args: str, check: bool = True, input_text: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if not git_available():
        raise GitError("git is not installed or not on PATH; install git (memctl keeps its history in git)")
    full_env = dict(os.environ)
    full_env.setdefault("GIT_TERMINAL_PROMPT", "0")
    full_env["LC_ALL"] = "C"
    if env:
        full_env.update(env)
    result = subprocess.run(
        ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
        capture_output=True, text=True, input=input_text, env=full_env,
        encoding="utf-8", errors="replace",
    )
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        message = detail[-1] if detail else f"exit {result.returncode}"
        raise GitError(f"git {args[0]} failed: {message}")
    return result


def _identity_env(root: Path) -> dict[str, str]:
    """Commit as the user when git knows who they are, else as `memctl`."""
    env: dict[str, str] = {}
    configured = run_git(root, "config", "--get", "user.email", check=False).stdout.strip()
    if not configured:
        env.update({k: v for k, v in _IDENTITY.items() if k not in os.environ})
    return env


def is_repo(root: Path) -> bool:
    return (Path(root) / ".git").exists()


def init_repo(root: Path) -> None:
    run_git(root, "init", "-q")


def operation_in_progress(root: Path) -> str | None:
    """A merge, rebase, cherry-pick or another git's index lock: never commit through those."""
    git_dir = Path(root) / ".git"
    for marker, what in (
        ("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / marker).exists():
            return what
    return None


def clear_stale_index_lock(root: Path, max_age_seconds: float = 30.0) -> bool:
    """Remove `.git/index.lock` left by a crashed git that ran for memctl.

    Called only while holding the store lock, so no memctl process is committing; an old
    lock then belongs to a process that died. A fresh one may be a person's running git."""
    import time

    lock = Path(root) / ".git" / "index.lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age < max_age_seconds:
        return False
    try:
        lock.unlink()
    except FileNotFoundError:
        return False
    return True


def commit_all(root: Path, message: str, paths: list[str] | None = None) -> str | None:
    """Stage the given paths (or everything) and commit. Returns the commit id, or None when
    there was nothing to commit. The caller holds the store lock."""
    root = Path(root)
    busy = operation_in_progress(root)
    if busy:
        raise GitError(f"the store's git repository is in the middle of {busy}; finish or abort it "
                       f"(git -C {root} status), then run the command again. Your change is on disk.")
    clear_stale_index_lock(root)
    if paths:
        run_git(root, "add", "-A", "--", *paths)
    else:
        run_git(root, "add", "-A")
    staged = run_git(root, "diff", "--cached", "--quiet", check=False)
    if staged.returncode == 0:
        return None
    run_git(root, "commit", "-q", "--no-verify", "-m", message, env=_identity_env(root))
    return run_git(root, "rev-parse", "HEAD").stdout.strip()


def status_porcelain(root: Path) -> list[str]:
    return [line for line in run_git(root, "status", "--porcelain").stdout.splitlines() if line]


def head(root: Path) -> str | None:
    result = run_git(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None
