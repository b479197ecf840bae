"""What `memctl mcp` needs besides the server: what it keeps open while it runs; for
`--http`, its checked options and its bearer token (docs/agents.md, "The HTTP transport")."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memctl.core import arguments
from memctl.core.errors import MemctlError, cmd
from memctl.core.stamp import file_stamp
from memctl.disk import counters
from memctl.disk.private import read_or_create_private
from memctl.disk.settings import SETTINGS_FILE
from memctl.store import Store

__all__ = ["MIN_TOKEN_CHARS", "TOKEN_ENV", "TOKEN_FILE", "HttpToken", "ServedStore", "http_options",
           "http_token", "kept_open", "token_fault"]

TOKEN_ENV = "MEMCTL_MCP_TOKEN"
TOKEN_FILE = "mcp-token"  # in .memctl/, mode 0600
MIN_TOKEN_CHARS = 16


@dataclass
class HttpToken:
    token: str
    source: str  # "env" or "file"
    path: str | None  # the token file (relative to the store), when it came from one
    created: bool  # made now: the user has not seen it yet


def http_options(host: str, port: int, allow_remote: bool) -> tuple[str, int]:
    """The address to listen on: a loopback host unless `allow_remote` (core/arguments.py)."""
    return arguments.http_host(host, allow_remote), arguments.port(port)


def http_token(store: Store) -> HttpToken:
    """The token every HTTP request must carry (`Authorization: Bearer …`): `MEMCTL_MCP_TOKEN`
    when set, else the one kept in `.memctl/mcp-token` (made on first use: 256 random bits,
    readable only by this user)."""
    given = os.environ.get(TOKEN_ENV)
    if given is not None and given.strip():
        token = given.strip()
        if token_fault(token) is not None:
            raise MemctlError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} characters without "
                              "spaces; leave it unset to have memctl make one")
        return HttpToken(token, "env", None, False)
    path = store.state_dir / TOKEN_FILE
    token, created = read_or_create_private(path, lambda: secrets.token_urlsafe(32), token_fault)
    return HttpToken(token, "file", store.relpath(path), created)


def token_fault(token: str) -> str | None:
    """Why `token` cannot be the bearer token, or None: the same rule for the environment's
    and the file's (a hand-written `a` in the file would be guessed at once)."""
    if len(token) < MIN_TOKEN_CHARS:
        return f"a token has at least {MIN_TOKEN_CHARS} characters"
    if any(ch.isspace() or ord(ch) < 33 for ch in token):
        return "a token has no spaces or control characters"
    return None


@contextmanager
def kept_open(store: Store) -> Iterator[None]:
    """What a server holds open while it runs: the access counters' database, so that no
    other connection is the last to close, and through which its calls record accesses
    (memctl.disk.counters.keep_open)."""
    held = counters.keep_open(store)
    try:
        yield
    finally:
        if held is not None:
            held.close()


class ServedStore:
    """The store a server opened, checked before each call it serves (docs/agents.md, "The
    store while the server runs"), in two `stat`s:

    - it is still there, the same folder (device and inode) and still a store (its
      `memctl.toml`); otherwise the call is one error and reads and writes nothing: a store
      moved, deleted or on a drive unmounted, an empty folder or another store in its place,
      never answers "nothing found" nor gets the call's files;
    - its settings are what `memctl.toml` says now, as for a CLI command run now: the file
      is read again, at the settings' next use, when its stamp (inode, mtime, ctime, size:
      ctime for a copy of the same size and mtime, as `cp -p` leaves it) changed; then a file that does not parse, or a setting out of its range, is the
      error of a call that uses the settings, naming it, as it is the CLI's."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.folder = _identity(os.stat(store.root))
        self.settings_stamp = self._settings_stamp()

    def check(self) -> None:
        root = self.store.root
        restart = "restart this server on the store where it is now"
        try:
            folder = os.stat(root)
        except OSError:
            raise MemctlError(f"the store {root} is gone since this server started (moved, "
                              f"deleted or on a drive no longer mounted); nothing was read or "
                              f"written. Put it back, or {restart}") from None
        if not stat.S_ISDIR(folder.st_mode) or _identity(folder) != self.folder:
            raise MemctlError(f"{root} is no longer the store this server started on (another "
                              f"folder is in its place); nothing was read or written: {restart}")
        stamp = self._settings_stamp()
        if stamp is None:
            raise MemctlError(f"{root} is no longer a memctl store (no {SETTINGS_FILE}); "
                              f"nothing was read or written. Put it back, or create one with "
                              f"{cmd(f'init {root}')}")
        if stamp != self.settings_stamp:
            self.store.forget_settings()
            self.settings_stamp = stamp

    def _settings_stamp(self) -> tuple[int, ...] | None:
        try:
            found = os.stat(self.store.root / SETTINGS_FILE)
        except OSError:
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        return (found.st_ino, *file_stamp(found))


def _identity(found: os.stat_result) -> tuple[int, int]:
    return found.st_dev, found.st_ino
