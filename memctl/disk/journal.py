"""The journal that makes a many-file change (an import, a merge) all or nothing.

A change is staged in `.memctl/txn-<random>/` (new files, backups of old ones, and
`journal.json` naming both) before any file of the store is touched. If memctl dies before its
commit, the next command that takes the store lock rolls the files back (`recover_pending`);
if the commit was made, it only cleans up. docs/reliability.md lists the tests (kill -9 at
every crash point).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from memctl.core.errors import MemctlError
from memctl.core.hashing import sha256
from memctl.disk import gitops

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

TXN_PREFIX = "txn-"
FAILED_PREFIX = "failed-txn-"  # a journal that could not be rolled back, set aside
JOURNAL = "journal.json"


def crash_point(name: str) -> None:
    """Tests kill the process here (`MEMCTL_CRASH_AT=<name>`) to prove a crash loses nothing."""
    if os.environ.get("MEMCTL_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def keep_backup(target: Path, backup: Path, moving: bool) -> None:
    if moving:
        os.replace(target, backup)
        return
    try:
        os.link(target, backup)  # the original stays in place until the new file replaces it
    except OSError:
        import shutil  # lazy, as in `recover_pending`

        shutil.copy2(target, backup)


def recover_pending(root: Path, state: Path) -> list[str]:
    """Finish what a killed import left in the store at `root` (local state folder `state`):
    roll back unless its commit was made. Call with the store lock held. Returns a message per
    transaction it cleaned up."""
    messages: list[str] = []
    pending = sorted(state.glob(f"{TXN_PREFIX}*")) if state.is_dir() else []
    if not pending:
        return messages
    # Lazy: shutil loads bz2 and lzma (~3 ms), and every command that changes the store
    # comes here, nearly always to find nothing (`memctl add`, bench/bench_write.py).
    import shutil

    for txn in pending:
        journal_path = txn / JOURNAL
        if not journal_path.is_file():
            shutil.rmtree(txn, ignore_errors=True)  # killed while staging: nothing was touched
            continue
        try:
            journal = json.loads(journal_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            shutil.rmtree(txn, ignore_errors=True)
            continue
        if gitops.head(root) != journal.get("head"):
            messages.append(f"completed an interrupted change ({journal.get('message')})")
        else:
            lock = root / ".git" / "index.lock"
            if lock.exists() and lock.stat().st_mtime >= journal_path.stat().st_mtime - 1:
                lock.unlink(missing_ok=True)  # left by the killed commit of this transaction
            try:
                roll_back(root, txn, journal)
            except (OSError, KeyError, TypeError, ValueError) as exc:
                # Reported once: the journal is set aside, so the next command does not fail
                # on it again, and the user is told where the backups are (docs/reliability.md).
                kept = txn.with_name(FAILED_PREFIX + txn.name[len(TXN_PREFIX):])
                os.replace(txn, kept)
                raise MemctlError(
                    f"an interrupted change ({journal.get('message')}) could not be rolled back "
                    f"({exc}); its backups are kept in {kept}. `git -C {root} status` shows what "
                    f"it left; `git -C {root} checkout -- .` restores the last commit") from exc
            messages.append(f"rolled back an interrupted change ({journal.get('message')})")
        shutil.rmtree(txn, ignore_errors=True)
    return messages


def roll_back(root: Path, txn: Path, journal: dict[str, Any]) -> None:
    paths = []
    for op in reversed(journal.get("ops", [])):
        target = root / op["path"]
        backup = txn / op["old"]
        paths.append(op["path"])
        if backup.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(backup, target)
        elif not op.get("existed") and target.exists() and op.get("sha256"):
            if sha256(target.read_bytes()).hexdigest() == op["sha256"]:
                target.unlink()
                _remove_empty_parents(root, target.parent)
    if paths and (root / ".git").exists():
        gitops.run_git(root, "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul",
                input_text="\0".join(paths), check=False)


def _remove_empty_parents(root: Path, folder: Path) -> None:
    while folder != root and folder.is_dir():
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
