"""git through the git program (fast and predictable; GitPython was measured and dropped:
docs/architecture.md), never an index of its own. Every store change ends in exactly one commit made here."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from memctl.core.clock import now
from memctl.core.errors import MemctlError, cmd
from memctl.core.ids import valid_id
from memctl.core.note import implied_id
from memctl.core.noteformat import parse_text
from memctl.core.secrets import mask_secrets
from memctl.core.vocab import DEBRIS_SUFFIXES, MERGE_DRIVER_IDENTITY
from memctl.disk.atomic import (
    TEMP_SUFFIX,
    atomic_write_bytes,
    atomic_write_text,
    current_umask,
    is_temp_name,
    make_dirs,
)
from memctl.disk.layout import ARCHIVED, EPISODE, NOTE, TOMBSTONE, classify, state_path
from memctl.disk.locking import clear_crashed, crashed_holder

_IDENTITY = {
    "GIT_AUTHOR_NAME": "memctl",
    "GIT_AUTHOR_EMAIL": "memctl@localhost",
    "GIT_COMMITTER_NAME": "memctl",
    "GIT_COMMITTER_EMAIL": "memctl@localhost",
}


# A `.git/index.lock` this old belongs to a git that died (git holds it for milliseconds).
STALE_INDEX_LOCK_AGE = 30.0
# How long a commit waits for another git to let go of the index lock.
INDEX_LOCK_WAIT = 5.0
# After a killed memctl: how long its orphaned git child may still need to finish.
CRASHED_LOCK_WAIT = 1.0
# How long any git command is retried while another git holds a lock it needs.
LOCK_RETRY_SECONDS = 5.0


class GitError(MemctlError):
    """A git step failed. `reason`: why, without what the message says of the change left on
    disk (for a caller that puts the change back: `put_back_reason`)."""

    reason: str | None = None


# How a commit's error ends: the command's change is written, only not committed. A caller
# that puts the change back (an import, an archive sweep) says so instead.
CHANGE_ON_DISK = "Your change is on disk"


def put_back_reason(exc: BaseException) -> str:
    """Why a commit failed, for a caller that put every file back: without "then `memctl
    sync` commits the change" nor "Your change is on disk", which are false then."""
    reason = getattr(exc, "reason", None)
    return reason or str(exc).removesuffix(".").removesuffix(CHANGE_ON_DISK).rstrip(" .;")


def git_available() -> bool:
    import shutil  # lazy: it loads bz2 and lzma (~3 ms); a git call finds out by itself

    return shutil.which("git") is not None


def _no_git() -> GitError:
    """What a git call says when there is no git program to run (its FileNotFoundError)."""
    return GitError("git is not installed or not on PATH; install git (memctl keeps its "
                    "history in git)")


def _git_env(root: Path, env: dict[str, str] | None) -> dict[str, str]:
    """The environment of every git memctl runs: its safety settings in one place."""
    full_env = dict(os.environ)
    full_env.setdefault("GIT_TERMINAL_PROMPT", "0")
    full_env["LC_ALL"] = "C"
    # `git status` and friends then never take .git/index.lock for an opportunistic index
    # refresh, so a reader (health, the watcher) can never make a writer's commit fail.
    full_env["GIT_OPTIONAL_LOCKS"] = "0"
    # Never walk up into an enclosing repository when the store's own .git is missing:
    # memctl would commit notes into someone else's history.
    ceiling = os.path.dirname(os.path.realpath(root))
    full_env["GIT_CEILING_DIRECTORIES"] = ceiling
    if env:
        full_env.update(env)
    return full_env


def run_git_binary(root: Path, *args: str, input_bytes: bytes = b"") -> bytes:
    """git with bytes in and out (blobs), with the same settings as `run_git`."""
    try:
        result = subprocess.run(["git", "-C", str(root), "-c", "core.quotepath=off", *args],
                                input=input_bytes, capture_output=True,
                                env=_git_env(root, None), umask=current_umask() | 0o002)
    except FileNotFoundError:
        raise _no_git() from None
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", errors="replace")
        raise GitError(f"git {args[0]} failed: {git_reason(detail, result.returncode)}")
    return result.stdout


def git_reason(output: str, returncode: int | None = None) -> str:
    """The most informative line of git's error output: its `fatal:` or `error:` line (git
    often adds hints after it, such as "… and the repository exists."), else its last
    line, else the exit status (or the signal that ended git)."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    reasons = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if reasons:
        return reasons[0]
    if lines:
        return lines[-1]
    if returncode is not None and returncode < 0:
        import signal  # lazy: only to name the signal of a git that was killed

        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        why = {"SIGXFSZ": " (a file grew past the size limit)"}.get(name, "")
        return f"git was killed by {name}{why}"
    return f"exit {returncode}"


def _remove_locks_made_since(root: Path, started: float) -> None:
    """A git that a signal killed leaves the lock files it held (git removes them on its way
    out of an error, not when killed). Those made since it started are its own: this
    process ran it holding the store lock. Left there, they would fail every later commit
    until STALE_INDEX_LOCK_AGE (tests/test_exchange.py)."""
    for lock in git_lock_files(root):
        try:
            if lock.stat().st_mtime >= started - 0.01:
                lock.unlink()
        except FileNotFoundError:
            continue


def run_git(root: Path, *args: str, check: bool = True, input_text: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = _git_env(root, env)
    deadline = time.monotonic() + LOCK_RETRY_SECONDS
    while True:
        started = time.time()
        try:
            result = subprocess.run(
                ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
                capture_output=True, text=True, input=input_text, env=full_env,
                encoding="utf-8", errors="replace",
                umask=current_umask() | 0o002,  # git's files too: never world-writable
            )
        except FileNotFoundError:
            raise _no_git() from None
        if result.returncode < 0:  # killed by a signal (a file size limit): no clean-up of its own
            _remove_locks_made_since(root, started)
            break
        # Another git holds a lock (a person's, or one orphaned by a killed memctl and still
        # finishing): git gave up before changing anything, so the same command can run again.
        if result.returncode == 0 or not _lock_contention(result.stderr) \
                or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if check and result.returncode != 0:
        raise GitError(f"git {args[0]} failed: "
                       f"{git_reason(result.stderr or result.stdout, result.returncode)}")
    return result


class Started:
    """A git command that only reads, started to run while this process goes on (its
    output is read by `finish`, which also reaps it: call it whatever happens)."""

    def __init__(self, root: Path, *args: str) -> None:
        self._result: subprocess.CompletedProcess[str] | None = None
        try:
            self._process = subprocess.Popen(
                ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors="replace", env=_git_env(root, None),
                umask=current_umask() | 0o002)
        except FileNotFoundError:
            raise _no_git() from None

    def finish(self) -> subprocess.CompletedProcess[str]:
        if self._result is None:
            out, err = self._process.communicate()
            self._result = subprocess.CompletedProcess(self._process.args,
                                                       self._process.returncode, out, err)
        return self._result


def ask_identity(root: Path) -> Started | None:
    """The question `identity_env` asks git, started now; None when it was answered before."""
    if os.path.realpath(root) in _identity_known:
        return None
    return Started(root, "config", "--get", "user.email")


# By store: whether git knows the user's identity.
_identity_known: dict[str, bool] = {}


def _lock_contention(stderr: str) -> bool:
    # "Unable to create '….lock': File exists", or a ref another git moved meanwhile:
    # "cannot lock ref 'refs/remotes/origin/main': is at … but expected …". Not the commit's
    # `update-ref HEAD NEW OLD` finding HEAD moved: it asked for OLD on purpose, and would
    # fail the same way again.
    if ".lock" in stderr and "File exists" in stderr:
        return True
    return "cannot lock ref" in stderr and "update_ref failed" not in stderr


def identity_env(root: Path, asked: Started | None = None) -> dict[str, str]:
    """Commit as the user when git knows who they are, else as `memctl`. `asked`: the
    question `ask_identity` started, when it did."""
    env: dict[str, str] = {}
    key = os.path.realpath(root)
    if key not in _identity_known:  # asked once per process: it was a git call per commit
        answer = asked.finish() if asked is not None else \
            run_git(root, "config", "--get", "user.email", check=False)
        _identity_known[key] = bool(answer.stdout.strip())
    if not _identity_known[key]:
        env.update({k: v for k, v in _IDENTITY.items() if k not in os.environ})
    if os.environ.get("MEMCTL_NOW"):
        # The clock override reaches git too, so histories made in tests are reproducible.

        stamp = now().strftime("%Y-%m-%dT%H:%M:%S+0000")
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp
    return env


def is_repo(root: Path) -> bool:
    return (Path(root) / ".git").exists()


def init_repo(root: Path) -> None:
    run_git(root, "init", "-q")


def ignores_case(root: Path) -> bool:
    """Whether the disk of the repository at `root` ignores case in names, as git found when
    it made the repository (`core.ignorecase`: macOS and Windows, as a rule)."""
    shown = run_git(root, "config", "--bool", "core.ignorecase", check=False).stdout.strip()
    return shown == "true"


class NotSha1Repository(MemctlError):
    """A git repository whose object ids are not SHA-1. memctl computes git's blob ids itself
    to tell versions apart in a merge, an export and an import (memctl.core.merge.git_oid,
    SHA-1), so a store is a SHA-1 repository (docs/sync.md, "SHA-256 repositories")."""

    def __init__(self, where: object, then: str) -> None:
        super().__init__(f"{where} is a SHA-256 git repository, and memctl keeps stores in "
                         f"SHA-1 repositories (git's default): {then}")


def require_sha1(root: Path, where: object, then: str) -> None:
    """Refuse the repository at `root` (named `where` in the error, which ends with `then`)
    unless its object ids are SHA-1."""
    shown = run_git(root, "rev-parse", "--show-object-format", check=False).stdout.strip()
    if shown.isalnum() and shown != "sha1":  # (a git too old to know the option echoes it)
        raise NotSha1Repository(where, then)


def repository_folder(root: Path) -> Path:
    """The folder of git's own files for the store at `root`: `.git`, or where a `.git`
    file points (`gitdir: PATH`: a linked worktree, `git init --separate-git-dir`, a
    submodule), so the checks below read the HEAD and markers git itself reads."""
    dot_git = Path(root) / ".git"
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return dot_git
        if text.startswith("gitdir:"):
            return (Path(root) / text[len("gitdir:"):].strip()).resolve()
    return dot_git


def operation_in_progress(root: Path) -> str | None:
    """A merge, rebase, cherry-pick or another git's index lock: never commit through those."""
    git_dir = repository_folder(root)
    for marker, what in (
        ("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / marker).exists():
            return what
    return None


def head_detached(root: Path) -> bool:
    """Is HEAD a commit rather than a branch (`git checkout HEAD~1`, a tag)? Read from
    `.git/HEAD` itself, as the markers above are: no git process on every commit."""
    try:
        text = (repository_folder(root) / "HEAD").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False  # no repository (commit_all says so) or one git reads its own way
    return not text.startswith("ref:")


def commit_blocked(root: Path) -> bool:
    """Whether `commit_refusal` refuses, without the git calls that name its way out (the
    watcher asks on every tick)."""
    return operation_in_progress(root) is not None or head_detached(root)


def commit_refusal(root: Path) -> str | None:
    """Why memctl must not commit in the store's repository now, one sentence naming the way
    out; None when it may. Every memctl commit goes through `commit_all`, which asks this
    (sync asks it first, the watcher waits, health reports it: docs/reliability.md). A commit
    on a detached HEAD belongs to no branch: sync refused it, and checking the branch out
    again, as sync advised, left it behind, seen by no command (tests/test_git_state.py)."""
    busy = operation_in_progress(root)
    if busy:
        return (f"the store's git repository is in the middle of {busy}; finish or abort it "
                f"(git -C {root} status)")
    if head_detached(root):
        return (f"the store's git repository is not on a branch (detached HEAD), where a commit "
                f"would belong to no branch; {way_back_to_branch(root)}")
    return None


def way_back_to_branch(root: Path) -> str:
    """The git command that puts a detached store back on its branch, losing nothing: the
    branch is the one that tracks a remote (sync sets that), else the only one, else the one
    checked out before HEAD was detached. Commits made on the detached HEAD are merged in."""
    listed = run_git(root, "for-each-ref", "--format=%(refname:short)%00%(upstream)",
                     "refs/heads/", check=False).stdout.splitlines()
    branches = [line.split("\0")[0] for line in listed if line]
    tracking = [line.split("\0")[0] for line in listed if line.split("\0")[1:2] != [""]]
    previous = run_git(root, "rev-parse", "--symbolic-full-name", "@{-1}", check=False).stdout.strip()
    previous = previous.removeprefix("refs/heads/") if previous.startswith("refs/heads/") else ""
    if len(tracking) == 1:
        branch = tracking[0]
    elif len(branches) == 1:
        branch = branches[0]
    elif previous in branches:
        branch = previous
    else:
        return (f"switch to the store's branch (git -C {root} switch BRANCH; its branches: "
                f"{', '.join(branches[:5]) or 'none'})")
    way = f"git -C {root} switch {shlex.quote(branch)}"  # pasted into a shell
    here = run_git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip()
    if here and run_git(root, "merge-base", "--is-ancestor", here, f"refs/heads/{branch}",
                        check=False).returncode != 0:
        # Commits only this detached HEAD has (a person's): brought onto the branch.
        way += f" && git -C {root} merge --no-edit {here[:12]}"
    return f"switch back to the store's branch ({way})"


def git_lock_files(root: Path) -> list[Path]:
    """Lock files git leaves when killed mid-command: the index, HEAD and the refs (in git's
    folder, where a `.git` file names it: `repository_folder`)."""
    git_dir = repository_folder(root)
    found = [git_dir / name for name in _TOP_LOCKS if (git_dir / name).exists()]
    refs = git_dir / "refs"
    if refs.is_dir():
        found.extend(sorted(refs.rglob("*.lock")))
    return found


_TOP_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "packed-refs.lock", "config.lock")


def clear_stale_index_lock(root: Path, max_age_seconds: float = STALE_INDEX_LOCK_AGE) -> bool:
    """Remove git lock files (`.git/index.lock`, `HEAD.lock`, ref locks) older than
    `max_age_seconds`: git holds them for milliseconds, so such a lock belongs to a git that
    died. Called only while holding the store lock, so no memctl process is committing; a
    fresh lock may be a person's running git. True when all are gone."""
    remaining = False
    for lock in git_lock_files(root):
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            continue
        if age < max_age_seconds:
            remaining = True
            continue
        try:
            lock.unlink()
        except FileNotFoundError:
            pass
    return not remaining


def settle_index_lock(root: Path, wait: float | None = None, *, keep_crash: bool = False) -> None:
    """Make sure no git lock file (index, HEAD, refs, config) will fail the next git command.
    The caller holds the store lock. `keep_crash`: leave the dead holder's record for the
    commit that follows, which commits what it left on disk (`commit_all`).

    A lock that goes away by itself within `wait` seconds was a running git (a person's, or
    one orphaned by a killed memctl finishing its work). One that stays is removed when it
    was made while a store-lock holder that then died held the lock (memctl's own debris),
    or when it is older than STALE_INDEX_LOCK_AGE; otherwise a person's git still runs and
    we say so."""
    crashed = crashed_holder(root)
    locks = git_lock_files(root)
    if not locks:
        if crashed is not None and not keep_crash:
            clear_crashed(root)
        return
    ours = {lock for lock in locks if crashed is not None and _made_during(lock, crashed)}
    if wait is None:
        wait = CRASHED_LOCK_WAIT if len(ours) == len(locks) else INDEX_LOCK_WAIT
    deadline = time.monotonic() + wait
    while any(lock.exists() for lock in locks) and time.monotonic() < deadline:
        time.sleep(0.02)
    for lock in ours:
        try:
            lock.unlink()
        except FileNotFoundError:
            pass
    if crashed is not None and not keep_crash:
        clear_crashed(root)
    if clear_stale_index_lock(root):
        return
    held = ", ".join(str(lock) for lock in git_lock_files(root))
    raise GitError(
        f"git's lock file {held} exists: another git command is running in the store. Wait "
        f"for it to finish and run the command again (if no git is running, delete that "
        f"file). {CHANGE_ON_DISK}"
    )


def settle_remote_locks(root: Path, remote: str, branch: str) -> None:
    """A sync killed while it pushed to a remote on this machine kills git's `receive-pack`
    with it, which may hold the remote's lock of the branch (`refs/heads/BRANCH.lock`) and,
    when the remote's HEAD names that branch, `HEAD.lock`: every later push is then refused. The caller holds the store lock and the dead holder's record
    is still there. When that holder was a sync, the branch's lock on the remote is its
    debris if it was made while the sync held the store lock, holds nothing or a commit this
    store has (what the push was writing), and is still the same file after CRASHED_LOCK_WAIT
    (a push orphaned by the kill finishing lets go, and one that went and came back is a
    live git's): it is removed. Any other lock on a remote is somebody's, and stays: the push
    that meets it names it (`remote_lock_in`). docs/reliability.md."""
    crashed = crashed_holder(root)
    if crashed is None or str(crashed.get("command")) != "sync":
        return  # only a sync pushes: what else was killed left no lock on a remote
    folder = local_remote_folder(root, remote)
    if folder is None:
        return
    branch_lock = folder / "refs" / "heads" / f"{branch}.lock"
    found = {}
    identity = _file_identity(branch_lock)
    if identity is not None and _made_during(branch_lock, crashed) and _holds_ours(root, branch_lock):
        found[branch_lock] = identity
    if _names_branch(folder / "HEAD", branch) and (identity is None or found):
        # git locks the remote's HEAD too when the branch it names moves (for HEAD's
        # reflog): a receive-pack killed then leaves an empty `HEAD.lock` as well. That lock
        # is always empty, so it says nothing of whose it is: it is the dead sync's only
        # beside a branch lock that is, or with none; beside another's branch lock (a live
        # push of a commit this store never had) it is that push's, and stays.
        head_lock = folder / "HEAD.lock"
        head_identity = _file_identity(head_lock)
        if head_identity is not None and _made_during(head_lock, crashed) and _holds_ours(
                root, head_lock):
            found[head_lock] = head_identity
    if not found:
        return
    deadline = time.monotonic() + CRASHED_LOCK_WAIT
    while any(lock.exists() for lock in found) and time.monotonic() < deadline:
        time.sleep(0.02)
    for lock, identity in found.items():
        if _file_identity(lock) == identity:
            try:
                lock.unlink()
            except FileNotFoundError:
                pass


def _names_branch(head: Path, branch: str) -> bool:
    """Is a repository's HEAD file the symbolic ref of `branch`?"""
    try:
        with open(head, "rb") as handle:
            content = handle.read(1100).strip()
    except OSError:
        return False
    return content == f"ref: refs/heads/{branch}".encode()


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_mtime_ns


def _holds_ours(root: Path, lock: Path) -> bool:
    """Does a ref's lock file hold nothing, or the id of a commit this store has? git writes
    the ref's new value into its lock; what a push from here wrote is one of ours."""
    try:
        with open(lock, "rb") as handle:
            content = handle.read(100).strip()  # an id and a newline; never more
    except OSError:
        return False
    if not content:
        return True
    if len(content) not in (40, 64) or content.strip(b"0123456789abcdef"):
        return False
    return run_git(root, "cat-file", "-e", f"{content.decode()}^{{commit}}",
                   check=False).returncode == 0


def local_remote_folder(root: Path, remote: str) -> Path | None:
    """The git folder of a remote that is a folder on this machine (a bare repository, or
    a clone whose `.git` holds it), as git finds it from the store: a relative path from the
    store's folder, a `file://` URL's path whatever its host, percent-escapes decoded. None
    for a URL git reaches over the network."""
    if remote.startswith("file://"):
        after_scheme = remote[len("file://"):]
        slash = after_scheme.find("/")
        if slash < 0:
            return None
        remote = urllib.parse.unquote(after_scheme[slash:])
    elif "://" in remote or ":" in remote.split("/", 1)[0]:
        return None  # `ssh://…`, `https://…`, or scp's `host:path`
    folder = Path(root) / Path(remote).expanduser()  # an absolute path stays itself
    if (folder / "HEAD").is_file() and (folder / "refs").is_dir():
        return folder
    if (folder / ".git").exists():
        return repository_folder(folder)
    return None


def remote_lock_in(output: str) -> str | None:
    """The lock file a push found on the remote, from git's output ("remote: error: cannot
    lock ref '…': Unable to create '/…/refs/heads/main.lock': File exists."); None when
    the push failed for another reason."""
    for line in output.splitlines():
        if not line.startswith("remote:"):
            continue  # this store's own locks are settled before the push
        start = line.find("Unable to create '")
        if start < 0:
            continue
        start += len("Unable to create '")
        end = line.find("': File exists", start)
        if end > start:
            return os.path.normpath(line[start:end])
    return None


def git_lock_is_fresh(root: Path) -> bool:
    """Does `.git/index.lock` exist and is it younger than STALE_INDEX_LOCK_AGE (a running
    git's)? An older one is a dead git's, which the next commit removes (`settle_index_lock`)."""
    try:
        made = os.stat(os.path.join(root, ".git", "index.lock")).st_mtime
    except OSError:
        return False
    return time.time() - made < STALE_INDEX_LOCK_AGE


# --- a fast-forward cut short -------------------------------------------------------------------
# `git merge --ff-only` writes the working tree file by file, then the index, then moves HEAD.
# Killed in between, it leaves some files of the new commit (one maybe half written) under
# the old HEAD, and the next commit would take them for local changes and push them: a half
# written note, or the notes not yet written as deletions. So sync names the move before it
# starts and forgets it once git is done; whoever finds the name under the store lock
# finishes the move first (docs/reliability.md, tests/test_interrupted_git.py).
MOVE_FILE = "sync-move.json"


def begin_move(root: Path, head: str, target: str) -> None:
    """Name the fast-forward about to run (the caller holds the store lock, in the state
    folder this is written to)."""
    atomic_write_text(state_path(root, MOVE_FILE), json.dumps({"from": head, "to": target}))


def end_move(root: Path) -> None:
    state_path(root, MOVE_FILE).unlink(missing_ok=True)


def finish_interrupted_move(root: Path) -> bool:
    """Finish a fast-forward a killed sync began, as git would have: each file it changes
    that is as HEAD has it, missing, or a beginning of the new version (git was writing it)
    becomes the new version; any other content is a hand edit made since, and stays. Then the
    index and HEAD move. The caller holds the store lock and has settled git's locks. True
    when there was a move to finish."""
    marker = state_path(root, MOVE_FILE)
    try:
        move = json.loads(marker.read_text("utf-8"))
        old, new = str(move["from"]), str(move["to"])
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError):
        end_move(root)
        return False
    head = run_git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).stdout.strip()
    if head == old and old != new:
        listed = run_git(root, "diff", "--name-only", "-z", "--no-renames", old, new).stdout
        changed = [path for path in listed.split("\0") if path]
        before, after = _blobs_at(root, old, changed), _blobs_at(root, new, changed)
        for path in changed:
            full = Path(root) / path
            have = full.read_bytes() if full.is_file() and not full.is_symlink() else None
            if os.path.lexists(full) and have is None:
                continue  # a folder or a link where the file was: not git's doing, left alone
            wanted = after.get(path)
            if have is not None and have != before.get(path) and \
                    (wanted is None or not wanted.startswith(have)):
                continue  # edited by hand since: kept, the next commit takes it
            if wanted is None:
                if have is not None:
                    full.unlink()
            else:
                make_dirs(full.parent)
                atomic_write_bytes(full, wanted)
        run_git(root, "read-tree", new)
        run_git(root, "update-ref", "HEAD", new, old)
    end_move(root)
    return True


def _blobs_at(root: Path, commit: str, paths: list[str]) -> dict[str, bytes]:
    """The contents of these paths in `commit` (a path it lacks is left out): its tree
    listed, then the blobs in one `git cat-file --batch` run (by id: any file name is safe)."""
    wanted = set(paths)
    oids: dict[str, str] = {}
    for record in run_git(root, "ls-tree", "-r", "-z", "--full-tree", commit).stdout.split("\0"):
        info, _, path = record.partition("\t")
        fields = info.split()
        if path in wanted and len(fields) == 3 and fields[1] == "blob":
            oids[path] = fields[2]
    blobs = read_blobs(root, set(oids.values()))
    return {path: blobs[oid] for path, oid in oids.items()}


def committed_as(root: Path, path: str, data: bytes) -> bool:
    """Whether `data` is exactly what HEAD holds at `path` (False: the file was changed
    since its last commit, or was never committed). One `git ls-tree` of that path, and
    git's blob id of `data` (no filters: memctl refuses them in a store)."""
    listed = run_git(root, "ls-tree", "-z", "HEAD", "--", path, check=False)
    if listed.returncode != 0:
        return False  # no commit yet
    info, _, _name = listed.stdout.partition("\t")
    fields = info.split()
    if len(fields) != 3 or fields[1] != "blob":
        return False
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    return fields[2] == blob


def read_blobs(root: Path, oids: set[str]) -> dict[str, bytes]:
    """Blob contents in one `git cat-file --batch` run."""
    wanted = sorted(oids)
    if not wanted:
        return {}
    out = run_git_binary(root, "cat-file", "--batch", input_bytes="\n".join(wanted).encode() + b"\n")
    blobs, position = {}, 0
    for oid in wanted:
        newline = out.index(b"\n", position)
        header = out[position:newline].split()
        position = newline + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        blobs[oid] = out[position:position + size]
        position += size + 1
    return blobs


def _made_during(lock: Path, crashed: dict[str, object]) -> bool:
    """Was the lock file made while the dead holder held the store lock?"""
    try:
        made = lock.stat().st_mtime
        since = float(crashed.get("since") or 0)  # type: ignore[arg-type]
        found = float(crashed.get("found") or 0)  # type: ignore[arg-type]
    except (OSError, TypeError, ValueError):
        return False
    return since - 1 <= made <= found + 1


def _run_git_write(root: Path, *args: str, env: dict[str, str] | None = None,
                   input_text: str | None = None) -> None:
    """A git command that changes the repository; its error names git's own reason."""
    result = run_git(root, *args, check=False, env=env, input_text=input_text)
    if result.returncode == 0:
        return
    special = _special_file(result.stderr)
    if special is not None:
        raise GitError(f"{special} is not a regular file (a FIFO, socket or device where a note "
                       "was): git cannot commit it; remove it or put the note's file back, then "
                       f"run the command again. {CHANGE_ON_DISK}.")
    raise GitError(f"git {args[0]} failed: {git_reason(result.stderr or result.stdout, result.returncode)}")


# What git says of a file it cannot stage: `add` and `update-index`, as of git 2.39.
_SPECIAL_FILE = (": can only add regular files, symbolic links or git-directories",
                 ": unsupported file type")


def _special_file(output: str) -> str | None:
    """The store-relative path of the file git refused to stage because it is no file it
    can hold, from its error output; None for any other failure."""
    for line in output.splitlines():
        if line.startswith("error: "):
            for tail in _SPECIAL_FILE:
                if line.endswith(tail):
                    return line[len("error: "):-len(tail)]
    return None


# Paths are file names, never patterns: a hand-made `notes/[draft].md` must not match others.
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
# Paths given to `git ls-files` on one command line (it reads none from its stdin, where
# `add` and `update-index` are given them all): the kernel takes about 2 MB of arguments,
# and an import of 30,000 notes (file names of ~80 characters) failed with "Argument list
# too long".
_PATHS_PER_CALL = 2_000


def _stageable(root: Path, paths: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The paths git can stage: those on disk, and removed ones it tracks (in the index
    `env` names, the one they are staged in). A file that was never committed and is gone
    now (a hand-dropped note that `archive` moved) would make `git add` fail with "pathspec
    did not match"."""
    unique = list(dict.fromkeys(paths))
    missing = [p for p in unique if not os.path.lexists(Path(root) / p)]
    if not missing:
        return unique
    listed = [path for start in range(0, len(missing), _PATHS_PER_CALL)
              for path in run_git(root, "ls-files", "-z", "--",
                                  *missing[start:start + _PATHS_PER_CALL],
                                  env={**_LITERAL, **(env or {})}).stdout.split("\0")]
    tracked = {known for path in listed for known in _and_folders(path)}
    gone_untracked = {p for p in missing if p.rstrip("/") not in tracked}
    return [p for p in unique if p not in gone_untracked]


def _and_folders(path: str) -> Iterator[str]:
    """`path`, then each folder holding it (`a/b/c.md`, `a/b`, `a`): git lists files, never
    the folder that holds them."""
    while path:
        yield path
        path = path.rpartition("/")[0]


def commit_all(root: Path, message: str, paths: list[str] | None = None, *,
               allow_empty: bool = False) -> str | None:
    """Stage the given paths (or everything) and commit. Returns the commit id, or None when
    there was nothing to commit (unless `allow_empty`). The caller holds the store lock."""
    root = Path(root)
    if not is_repo(root):
        raise GitError(f"the store {root} has no git repository (.git is missing); run "
                       f"{cmd(f'init {root}')} to make one. {CHANGE_ON_DISK}.")
    refusal = commit_refusal(root)
    if refusal:
        # The change is written: the command run again would make it twice (a second note)
        # or find it made (`forget`); a sync commits whatever is on disk.
        refused = GitError(f"{refusal}; then {cmd('sync')} commits the change. {CHANGE_ON_DISK}.")
        refused.reason = refusal
        raise refused
    crashed = crashed_holder(root)  # (settling the locks forgets it)
    settle_index_lock(root)
    finish_interrupted_move(root)  # before anything commits what a killed sync half wrote
    if crashed is not None:
        _remove_temp_files_left_by(root, crashed)
        _remove_own_index(_own_index(root, crashed.get("pid")))
        if paths:
            _commit_left_by(root, crashed, paths)
    # HEAD, and once per process whether git knows the user, are read while git stages the
    # files: three processes at once instead of one after another (~5 ms of each `add`,
    # bench/bench_write.py). Both only read, so the order changes nothing.
    reading = Started(root, "rev-parse", "HEAD", "HEAD^{tree}")
    asked = ask_identity(root)
    projects = sorted({path.split("/", 1)[0] for path in paths or () if "/" in path
                       and not path.startswith(".")})
    # Asked while the paths are staged: which tracked files of these projects are gone. Each
    # project's folder named with its `/`: git then stats the files under it alone, where a
    # pathspec without one (or of several folders) had it stat every file of its index
    # (10k notes: ~30 ms of the kernel's time, beside the staging; bench/bench_write.py).
    gone = [Started(root, "ls-files", "-z", "--deleted", "--", *(
        f":(literal){project}/" for project in group)) for group in _one_by_one(projects)]
    # And what git's index already holds that HEAD does not: staged by hand (`git add`), or
    # left by a commit that failed where git could not write its index back.
    foreign = Started(root, "diff-index", "--cached", "--name-only", "-z", "--no-renames",
                      "HEAD", "--") if paths else None
    try:
        _stage(root, paths)
        staged = list(paths or ())
        try:
            if paths and gone:
                moved = _moved_away(root, paths, _listed(gone))
                if moved:
                    staged += moved
                    _stage(root, moved)
            tree = None
            if foreign is not None and _staged_elsewhere(foreign.finish(), staged):
                # A note renamed with `git mv`: its old path left git's index, so no
                # `ls-files --deleted` names it, but HEAD, which this tree starts from, still
                # holds it.
                moved = _moved_away(root, staged, _listed([foreign]), in_head=True)
                tree = _tree_of_head_with(root, staged + moved)
            return _commit_index(root, message, reading, asked, tree, allow_empty=allow_empty)
        except BaseException:
            # A commit that failed leaves nothing staged: the next command's commit must not
            # carry this change in with its own (tests/test_reliability.py).
            _unstage(root, staged or None)
            raise
    except GitError as exc:
        if CHANGE_ON_DISK in exc.raw_message:
            raise
        raise _left_on_disk(exc) from exc
    finally:
        reading.finish()
        if asked is not None:
            asked.finish()
        for started in gone:
            started.finish()
        if foreign is not None:
            foreign.finish()


def _left_on_disk(exc: GitError) -> GitError:
    """A git step of a commit that failed (a full disk, a file git may not write): the
    command's files are written, only not committed. Said so, with the way on: the command
    run again would make its change twice (a second note, episode or scratchpad line)."""
    said = exc.raw_message.rstrip(" .")
    error = GitError(f"{said}; nothing was committed: once git can write again (free some "
                     f"disk space, or fix the permissions git names), {cmd('sync')} commits "
                     f"the change. {CHANGE_ON_DISK}.")
    error.reason = exc.reason or said
    return error


def _staged_elsewhere(listed: subprocess.CompletedProcess[str], own: list[str]) -> bool:
    """Whether the index held, before this commit staged `own`, a change of another path
    (`listed`: `git diff-index --cached --name-only -z HEAD`). No HEAD yet: nothing to keep
    apart from."""
    if listed.returncode != 0:
        return False
    mine = {path.rstrip("/") for path in own}  # a file, or a folder staged whole
    return any(path and mine.isdisjoint(_and_folders(path))
               for path in listed.stdout.split("\0"))


def _tree_of_head_with(root: Path, paths: list[str]) -> str:
    """The tree of HEAD with `paths` as they are on disk, made in an index of its own (what
    `git commit --only PATHS` commits): a commit of memctl's change never carries what else
    git's index holds. Committing that index whole put a file someone staged and then
    deleted into the commit (a note on no disk, pushed to every clone); a change staged by
    hand stays staged, for its author or the next `memctl sync`."""
    own_index = _own_index(root, os.getpid())
    _remove_own_index(own_index)  # a killed memctl's of the same pid (the caller holds the lock)
    env = {"GIT_INDEX_FILE": str(own_index.resolve())}
    try:
        _run_git_write(root, "read-tree", "HEAD", env=env)
        _stage(root, paths, env)
        return run_git(root, "write-tree", env=env).stdout.strip()
    finally:
        _remove_own_index(own_index)


def _own_index(root: Path, pid: object) -> Path:
    """The index file `_tree_of_head_with` uses in the process `pid`, in git's folder."""
    return repository_folder(root) / f"memctl-index-{pid}"


def _remove_own_index(own_index: Path) -> None:
    """Remove an index of `_tree_of_head_with` and git's lock of it: a memctl killed while it
    used one left both (the index as big as git's own), and that lock would fail the next
    commit of a process given the same pid (tests/test_reliability.py)."""
    own_index.unlink(missing_ok=True)
    Path(f"{own_index}.lock").unlink(missing_ok=True)


# Up to this many projects in one commit, each is asked about on its own (a process each, at
# once); beyond (an import of many), all in one process, which stats every tracked file.
_PROJECTS_ONE_BY_ONE = 4


def _one_by_one(projects: list[str]) -> list[list[str]]:
    if len(projects) <= _PROJECTS_ONE_BY_ONE:
        return [[project] for project in projects]
    return [projects]


def _listed(started: list[Started]) -> list[str]:
    """The paths git's commands listed (`-z`); none when any of them failed."""
    results = [process.finish() for process in started]
    if any(result.returncode != 0 for result in results):
        return []
    return [path for result in results for path in result.stdout.split("\0") if path]


def _moved_away(root: Path, paths: list[str], listed: list[str],
                in_head: bool = False) -> list[str]:
    """The tracked files gone from disk (`listed`: `git ls-files --deleted` of the projects
    of `paths`) that held a note or episode among `paths`, by id: a note renamed by hand and
    then changed or forgotten by memctl. Its old path is part of that change; committing
    the new path (or the tombstone) alone left the old file in HEAD, served again by every
    clone (tests/test_notes_cli.py). A file gone that held another note is left as it is:
    memctl commits its own change only. Nearly always nothing is gone, and nothing is read.
    `in_head`: `listed` is `git diff-index --cached HEAD` of the whole store, whose paths gone
    from disk in these projects are looked for in HEAD (a `git mv` took the old path out of
    the index; tests/test_git_state.py)."""
    wanted = set(paths)
    projects = {path.split("/", 1)[0] for path in paths}
    gone = [path for path in listed
            if path and path not in wanted and not os.path.lexists(os.path.join(root, path))
            and _holds_note(path)
            and not (in_head and path.split("/", 1)[0] not in projects)]
    if not gone:
        return []
    ids = {note_id for note_id in (_id_on_disk(root, path) for path in paths) if note_id}
    moved = []
    for path in gone:
        blob = run_git(root, "cat-file", "blob", f"{'HEAD' if in_head else ''}:{path}",
                       check=False)  # as git has it
        if blob.returncode == 0 and _file_id(path, blob.stdout) in ids:
            moved.append(path)
    return moved


def _holds_note(path: str) -> bool:
    kind = classify(path)
    return kind is not None and kind[0] in (NOTE, ARCHIVED, EPISODE)


def _id_on_disk(root: Path, path: str) -> str | None:
    """The id of the note or episode `path` holds now; a tombstone's is its name."""
    kind = classify(path)
    if kind is not None and kind[0] == TOMBSTONE:
        return path.rsplit("/", 1)[-1][:-len(".md")].lower()
    if not _holds_note(path):
        return None
    try:
        text = (root / path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # gone (forgotten): its tombstone names it
    return _file_id(path, text)


def _file_id(path: str, text: str) -> str:
    """A file's id as every reader takes it: its `id:` field, else the one its path gives
    (`implied_id`)."""
    value = parse_text(text).meta.get("id")
    if isinstance(value, str) and valid_id(value.strip()):
        return value.strip().lower()
    return implied_id(path)


def _remove_temp_files_left_by(root: Path, crashed: dict[str, object]) -> None:
    """Remove the temporary files of atomic writes (memctl.disk.atomic.is_temp_name) that a
    memctl killed while it held the store lock left beside the files it was writing: made
    while it held the lock (`_made_during`), so no live writer's (every write of the store's
    files takes that lock, and the caller holds it now). git lists the candidates (files it
    does not track and is not told to ignore), once per crash. Best effort: one that cannot
    be removed stays, as harmless as before (the walk, the watcher and every commit ignore
    it: docs/reliability.md)."""
    listed = run_git(root, "ls-files", "-z", "--others", "--exclude-standard", "--",
                     f":(glob)**/.*{TEMP_SUFFIX}", check=False)
    if listed.returncode != 0:
        return
    for relative in filter(None, listed.stdout.split("\0")):
        path = root / relative
        if is_temp_name(path.name) and path.is_file() and not path.is_symlink() \
                and _made_during(path, crashed):
            try:
                path.unlink()
            except OSError:
                pass


def _commit_left_by(root: Path, crashed: dict[str, object], own: list[str]) -> None:
    """Commit, on its own, what a memctl killed while it held the store lock left on disk
    uncommitted (it wrote its files, then died before its commit): everything but this
    command's own paths, which its commit takes next. Otherwise that change stayed out of git
    until someone ran `memctl sync` (tests/test_crash.py). Best effort: a failure here must
    not stop the command's own commit."""
    what = str(crashed.get("command") or "").strip()
    message = (f"memctl: changes an interrupted memctl{' ' + what if what else ''} left on "
               f"disk (pid {crashed.get('pid')})")
    excludes = [f":(exclude,literal){path}" for path in dict.fromkeys(own)]
    try:
        _run_git_write(root, "add", "-A", "--", ".", *_NOT_DEBRIS, *excludes)
        _commit_index(root, message)
    except GitError:
        _unstage(root, None)


class Committing:
    """`commit_all` running in a thread of its own (git works in its own processes), while
    the caller goes on: `Store.commit` indexes the change meanwhile. `result` waits for the
    commit and gives its id, or raises its error."""

    def __init__(self, root: Path, message: str, paths: list[str] | None, *,
                 allow_empty: bool = False) -> None:
        self._commit: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(root, message, paths,
                                                                allow_empty),
                                        name="memctl-commit", daemon=True)
        self._thread.start()

    def _run(self, root: Path, message: str, paths: list[str] | None,
             allow_empty: bool) -> None:
        try:
            self._commit = commit_all(root, message, paths, allow_empty=allow_empty)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by `result`
            self._error = exc

    def result(self) -> str | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._commit


# Editor and merge debris (a vim swap file open while `sync` runs) is never staged by a
# whole-store commit; vim's write test file `4913` neither (docs/watch.md).
_NOT_DEBRIS = tuple(f":(exclude,glob)**/*{suffix}" for suffix in DEBRIS_SUFFIXES) \
    + (":(exclude,glob)**/4913",)


def _stage(root: Path, paths: list[str] | None, env: dict[str, str] | None = None) -> None:
    """Bring the index in step with the files for `paths` (every file when None); `env`:
    another index (`GIT_INDEX_FILE`)."""
    if not paths:
        _run_git_write(root, "add", "-A", "--", ".", *_NOT_DEBRIS, env=env)
        return
    unique = list(dict.fromkeys(paths))
    if any(os.path.isdir(root / path) and not os.path.islink(root / path) for path in unique):
        # A folder (a whole project moved or imported): `git add` walks it.
        wanted = _stageable(root, unique, env)
        if wanted:
            _run_git_write(root, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                           env={**_LITERAL, **(env or {})}, input_text="\0".join(wanted))
        return
    # Files: `update-index` stages exactly these (one removed is dropped from the index, one
    # never tracked and gone is ignored), with the same clean filters as `git add`. Read
    # from its stdin, as many as there are.
    _run_git_write(root, "update-index", "--add", "--remove", "-z", "--stdin", env=env,
                   input_text="\0".join(unique))


def _unstage(root: Path, paths: list[str] | None) -> None:
    """Put git's index back as HEAD has `paths` (every path when None), as it was before
    `_stage`: memctl stages nothing but its own change. Best effort: the commit's error is
    the one to report."""
    listed = "\0".join(dict.fromkeys(paths)) if paths else "."
    if head(root) is None:  # no commit yet: nothing was staged for these paths before
        args = ["rm", "-q", "-r", "--cached", "--ignore-unmatch"]
    else:
        args = ["reset", "-q"]
    run_git(root, *args, "--pathspec-from-file=-", "--pathspec-file-nul", input_text=listed,
            check=False, env=_LITERAL if paths else None)


# An empty old value: `update-ref` then requires that the ref does not exist yet, whatever
# the repository's hash (40 zeros would be a SHA-1 id, refused in a SHA-256 repository).
_NO_COMMIT = ""


def _commit_index(root: Path, message: str, reading: Started | None = None,
                  asked: Started | None = None, tree: str | None = None, *,
                  allow_empty: bool = False) -> str | None:
    """Commit what the index holds (or `tree`), as `git commit -q --no-verify` does, with
    git's plumbing (`write-tree`, `commit-tree`, `update-ref`). `git commit` first refreshes
    the stat data of every tracked file and writes the whole index once more (10k notes:
    ~50 ms of a ~100 ms commit, bench/bench_write.py); these read only what they need. No
    hook runs."""
    if tree is None:
        tree = run_git(root, "write-tree").stdout.strip()
    parent, parent_tree = _head_and_tree(root, reading)
    if tree == parent_tree and not (allow_empty and parent):
        return None  # nothing staged
    text = clean_message(message)
    commit = commit_tree(root, tree, [parent] if parent else [], text,
                         identity_env(root, asked))
    subject = text.split("\n", 1)[0]
    # The reflog entry `git commit` writes; the old value makes the update fail rather than
    # drop a commit another git made in between.
    reflog = f"commit{'' if parent else ' (initial)'}: {subject}"
    _run_git_write(root, "update-ref", "-m", reflog, "HEAD", commit, parent or _NO_COMMIT)
    _maybe_gc(root)
    return commit


def _head_and_tree(root: Path, reading: Started | None = None
                   ) -> tuple[str | None, str | None]:
    """HEAD's commit and tree, or (None, None) before the first commit. `reading`: that
    `rev-parse`, started earlier."""
    result = reading.finish() if reading is not None else \
        run_git(root, "rev-parse", "HEAD", "HEAD^{tree}", check=False)
    ids = result.stdout.split()
    if result.returncode == 0 and len(ids) == 2:
        return ids[0], ids[1]
    if head(root) is None:
        return None, None
    raise GitError(f"git rev-parse failed: {git_reason(result.stderr, result.returncode)}")


# Control characters in a commit message (a note's title holds what its file holds: a NUL
# from a hand-made or pushed file), each shown as U+FFFD: git refuses a message with a NUL,
# and the commit, after the files were written, would fail (tests/test_hostile_input.py).
_MESSAGE_CONTROLS = {code: "\ufffd" for code in (*range(0x20), 0x7F) if chr(code) not in "\n\t"}


def commit_tree(root: Path, tree: str, parents: list[str], message: str,
                env: dict[str, str] | None = None) -> str:
    """A commit of `tree` on `parents` with `message` as `clean_message` makes it (every
    commit memctl makes); its id. `env`: who commits (`identity_env`)."""
    return run_git(root, "commit-tree", tree, *(arg for parent in parents
                                                for arg in ("-p", parent)),
                   "-F", "-", input_text=clean_message(message),
                   env=env if env is not None else identity_env(root)).stdout.strip()


def clean_message(message: str) -> str:
    """The message as `git commit -m` stores it (its `whitespace` clean-up): no trailing
    whitespace, no leading or trailing empty lines, runs of empty lines made one; control
    characters but a line break and a tab shown as U+FFFD. A likely secret in it (a title,
    an id or a path a hand-dropped file brought) is masked: every clone and remote keeps
    commit messages for ever (docs/security.md). Every commit memctl makes takes its
    message from here."""
    lines: list[str] = []
    for line in mask_secrets(message).translate(_MESSAGE_CONTROLS).split("\n"):
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


# `git gc --auto` starts packing past gc.auto (6700) loose objects, which it estimates from
# the objects/17 folder; `git commit` asks it after every commit, the plumbing never does.
_GC_LOOSE_IN_17 = 6700 // 256


def _maybe_gc(root: Path) -> None:
    """Let git pack loose objects when there are many (git decides, honouring gc.auto)."""
    try:
        loose = len(os.listdir(Path(root) / ".git" / "objects" / "17"))
    except OSError:
        return
    if loose > _GC_LOOSE_IN_17:
        run_git(root, "gc", "--auto", "--quiet", check=False)


def exclude_locally(root: Path, pattern: str) -> bool:
    """List `pattern` in this clone's own ignore list (`info/exclude`, never committed) unless
    it is there. True when the file changed. Where git itself reads it: `.git/info/exclude`,
    or, when `.git` is a file (`git init --separate-git-dir`, a linked worktree, a
    submodule), in the folder it points to (for a worktree, the repository's common one)."""
    if not is_repo(root):
        return False
    found = run_git(root, "rev-parse", "--git-path", "info/exclude", check=False)
    if found.returncode != 0 or not found.stdout.strip():
        return False
    path = Path(root) / found.stdout.strip()  # (relative to the store, or absolute)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if pattern in text.splitlines():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_text(path, text + pattern + "\n")
    return True


def status_porcelain(root: Path) -> list[str]:
    return [line for line in run_git(root, "status", "--porcelain").stdout.splitlines() if line]


def head(root: Path) -> str | None:
    result = run_git(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None


def messages_starting(root: Path, subject_prefix: str) -> Iterator[str]:
    """The whole messages of the commits whose subject starts with `subject_prefix` (such as
    memctl's own `archive sweep: `), newest first; none without a repository."""
    for _commit, _date, message in commits_starting(root, subject_prefix):
        yield message


def commits_starting(root: Path, subject_prefix: str) -> Iterator[tuple[str, str, str]]:
    """The commits whose subject starts with `subject_prefix`, newest first (git log's
    order: by commit date), as (id, committer date in ISO 8601, whole message); none without
    a repository."""
    if not is_repo(root) or head(root) is None:
        return
    # `--grep` finds the phrase anywhere (a note's title in another commit's subject may
    # hold it), so the subject is checked here.
    result = run_git(root, "log", "--fixed-strings", f"--grep={subject_prefix}",
                     "--format=%H%x1f%cI%x1f%B%x00", check=False)
    for record in result.stdout.split("\0"):
        commit, _, rest = record.strip().partition("\x1f")
        date, _, message = rest.partition("\x1f")
        if message.strip().startswith(subject_prefix):
            yield commit, date, message.strip()


def repository_facts(worktree: Path) -> tuple[Path, bool, str | None, str | None] | None:
    """What tells the repository of a working tree from another, for the project it stands
    for (memctl/disk/repositories.py): the folder of its main working tree (of every
    `git worktree` the same; a bare repository's own folder), whether that is a bare
    repository, the URL of its `origin` remote, and its first commit (the smallest root of its
    branches: the same in every clone). None when git cannot tell (no git, a repository
    git refuses to read)."""
    try:
        listing = run_git(worktree, "worktree", "list", "--porcelain", check=False)
    except GitError:
        return None
    stanza = listing.stdout.split("\n\n", 1)[0].splitlines() if listing.returncode == 0 else []
    if not stanza or not stanza[0].startswith("worktree "):
        return None
    main, bare = Path(stanza[0][len("worktree "):]), "bare" in stanza[1:]
    origin = run_git(worktree, "config", "--get", "remote.origin.url", check=False).stdout.strip() or None
    # Every branch's roots, so the worktrees of one repository (an orphan branch included) agree
    # on the smallest. A walk of the whole history: asked once per working tree (the caller keeps
    # the answer).
    roots = run_git(worktree, "rev-list", "--max-parents=0", "--all", check=False).stdout.split()
    return main, bare, origin, min(roots) if roots else None


def committed_paths(root: Path) -> list[str]:
    """Every file in the current commit (none in a repository without commits)."""
    if not is_repo(root) or head(root) is None:
        return []
    listing = run_git(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD").stdout
    return [path for path in listing.split("\0") if path]


# --- the merge driver (memctl merge-file; docs/sync.md) ----------------------------------------

DRIVER = "memctl"
ATTRIBUTES = ("*.md merge=memctl", ".counters/*.json merge=memctl")


def driver_command() -> str:
    """The command git runs as the merge driver. `memctl` found through PATH when there is
    one: an absolute path names one virtualenv and breaks when it moves or is rebuilt
    (docs/sync.md). Without a memctl on PATH, the running interpreter's path is the only
    way git can reach memctl; every `memctl sync` writes the command again, so a moved
    installation is picked up by its next sync."""
    import shutil  # lazy, as in `git_available`

    found = shutil.which("memctl")
    if found and _is_this_memctl(found):
        return "memctl merge-file %O %A %B %P"
    return f"{shlex.quote(sys.executable)} -m memctl merge-file %O %A %B %P"


def _is_this_memctl(program: str) -> bool:
    """Whether the `memctl` found on PATH is this memctl, not another program of that name
    (the package index has one): the running script itself, or one that answers
    `merge-file --identify` as this memctl does."""
    if sys.argv and Path(sys.argv[0]).name == "memctl":
        try:
            if Path(program).resolve() == Path(sys.argv[0]).resolve():
                return True
        except OSError:
            pass
    try:
        answer = subprocess.run([program, "merge-file", "--identify"], capture_output=True,
                                text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return answer.returncode == 0 and answer.stdout.strip() == MERGE_DRIVER_IDENTITY


def install_merge_driver(root: Path) -> bool:
    """Define the driver in `.git/config` (not cloned, so every machine needs this) and name
    it in `.gitattributes`. Returns True when `.gitattributes` changed (to be committed)."""
    root = Path(root)
    run_git(root, "config", f"merge.{DRIVER}.name", "memctl: newest version wins, loser kept")
    run_git(root, "config", f"merge.{DRIVER}.driver", driver_command())
    path = root / ".gitattributes"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = text.splitlines()
    missing = [line for line in ATTRIBUTES if line not in lines]
    if not missing:
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_text(path, text + "\n".join(missing) + "\n")
    return True
