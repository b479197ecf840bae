"""The store lock: one writer at a time around multi-file changes and git commits.

An flock on `.memctl/lock` (released by the kernel when a process dies, so a crash never
leaves the store locked), plus `lock.info` naming the holder for a clear timeout message."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memctl.errors import MemctlError

DEFAULT_TIMEOUT = 30.0


class LockTimeout(MemctlError):
    pass


@contextmanager
def store_lock(store_root: Path, what: str = "", timeout: float | None = None) -> Iterator[None]:
    if timeout is None:
        timeout = float(os.environ.get("MEMCTL_LOCK_TIMEOUT", DEFAULT_TIMEOUT))
    state_dir = Path(store_root) / ".memctl"
    state_dir.mkdir(exist_ok=True)
    lock_path = state_dir / "lock"
    info_path = state_dir / "lock.info"
    handle = open(lock_path, "a+")
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        f"the store is locked by {_describe_holder(info_path)} for more than "
                        f"{timeout:.0f} s; wait for it to finish (or stop it) and try again"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        try:
            info_path.write_text(json.dumps({
                "pid": os.getpid(),
                "command": what or " ".join(sys.argv[1:3]),
                "since": time.time(),
            }))
        except OSError:
            pass
        try:
            yield
        finally:
            try:
                info_path.unlink()
            except OSError:
                pass
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def _describe_holder(info_path: Path) -> str:
    try:
        info = json.loads(info_path.read_text())
        return f"memctl {info.get('command') or ''} (pid {info.get('pid')})".replace("  ", " ")
    except (OSError, ValueError):
        return "another memctl process"
