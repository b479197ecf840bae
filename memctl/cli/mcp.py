"""`memctl mcp`: the MCP server (memctl.mcp_server), in a module of its own so that starting
it loads neither the other commands nor what they import (bench/bench_mcp.py)."""

from __future__ import annotations

import os
import signal
import threading
from typing import Optional

import typer

from memctl.cli.base import PROJECT_OPTION, app, checked, current_project, examples, get_store
from memctl.cli.context import print_error
from memctl.core import arguments
from memctl.mcp_server import DEFAULT_HTTP_PORT, serve, serve_http
from memctl.services import watching
from memctl.services.stores import Store


@app.command(epilog=examples("memctl mcp --project blog-backend", "memctl mcp --http --port 8765"))
def mcp(
    project: Optional[str] = PROJECT_OPTION,
    http: bool = typer.Option(
        False, "--http", help="Serve streamable HTTP instead of stdio: several clients on one "
        "store, each sending the bearer token (docs/agents.md has the security notes)."
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="With --http: the address to listen on; a loopback address "
        "unless --allow-remote."
    ),
    port: int = typer.Option(
        DEFAULT_HTTP_PORT, "--port", callback=checked(arguments.port),
        help="With --http: the TCP port.",
    ),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="With --http: allow a --host other machines can reach."
    ),
    no_watch: bool = typer.Option(
        False, "--no-watch", help="No watcher thread: each call checks the files itself "
        "(slower on a large store; docs/agents.md)."
    ),
) -> None:
    """Serve memctl to MCP clients over stdio, or over HTTP with --http.

    Needs the optional `mcp` extra: pip install 'memctl-md[mcp]'."""
    store = get_store()
    if http:
        serve_http(store, current_project(project), host=host, port=port,
                   allow_remote=allow_remote, watch=not no_watch)
    else:
        before = _end_at_once_on_ctrl_c(store)
        try:
            serve(store, current_project(project), watch=not no_watch)
        finally:
            if before is not None:
                signal.signal(signal.SIGINT, before)


def _end_at_once_on_ctrl_c(store: Store) -> object:
    """Ctrl-C ends the stdio server at once, with `error: interrupted` and 130 as any
    command: a tool call running in the SDK's worker thread (waiting for the store lock, say)
    held the exit until it ended, the SDK waiting for its thread. What the call was writing
    is as after `kill -9`: the next command finishes or undoes it (docs/reliability.md). The
    server's watcher heartbeat goes with it, as on SIGTERM. Returns the handler before."""
    def interrupted(signum: int, frame: object) -> None:
        print_error("interrupted")
        try:
            watching.clear_own_heartbeat(store)
        finally:
            os._exit(130)

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, interrupted)
