"""What `memctl mcp` needs besides the server: what it keeps open while it runs; for
`--http`, its checked options and its bearer token (docs/agents.md, "The HTTP transport")."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memctl.core import arguments
from memctl.core.errors import MemctlError
from memctl.disk import counters
from memctl.disk.private import read_or_create_private
from memctl.store import Store

__all__ = ["MIN_TOKEN_CHARS", "TOKEN_ENV", "TOKEN_FILE", "HttpToken", "http_options", "http_token",
           "kept_open"]

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
        if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() or ord(ch) < 33 for ch in token):
            raise MemctlError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} characters without "
                              "spaces; leave it unset to have memctl make one")
        return HttpToken(token, "env", None, False)
    path = store.state_dir / TOKEN_FILE
    token, created = read_or_create_private(path, lambda: secrets.token_urlsafe(32))
    return HttpToken(token, "file", store.relpath(path), created)


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
