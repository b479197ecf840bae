"""`memctl mcp` keeps its own index fresh: a watcher thread (`memctl watch`'s code) runs while
the server does, so a call skips the walk of the store, yet every call sees every write made
before it, by the server or by hand. `--no-watch` turns it off; another watcher is trusted
and taken over when it stops; a read-only store is served without one; the watcher (its
lock and heartbeat) goes when the client disconnects or the server is sent SIGTERM.

The server runs as a subprocess driven by the MCP SDK's stdio client, on real files, real
inotify events and a real SQLite index (docs/watch.md, docs/agents.md)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from conftest import git, memctl_executable
from test_mcp import free_port, http_call, run_session, subprocess_env
from test_reliability import without_file_permission_override
from test_watch import WatchProcess

from memctl.disk.watchstate import WatchLock, heartbeat_path, read_status

pytest.importorskip("mcp.server.mcpserver")

# A safety net for a broken server, never a measure of speed (no timed assertions).
PATIENCE = 60.0
WORDS = ["quokkaberry", "narwhalfig", "axolotlpine", "capybaramint", "pangolinrye"]
REWORDS = ["zeppelinoak", "trombonekelp", "vortexplum", "jasminequartz"]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(root)], env=subprocess_env(root),
                   check=True, capture_output=True)
    notes = root / "demo" / "notes" / "fact"
    notes.mkdir(parents=True)
    (notes / "seed.md").write_text("The seed note: the demo project exists.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a project")
    return root


def serve(store: Path, script, *args: str, prefix: tuple[str, ...] = ()) -> object:
    """`memctl mcp ARGS` driven by the SDK client (test_mcp.run_session), with this file's patience."""
    return run_session(store, script, *args, prefix=prefix, timeout=PATIENCE * 2)


def server_log(store: Path) -> str:
    return (store.parent / "mcp-stderr.log").read_text()


async def until(condition, what: str) -> object:
    deadline = time.monotonic() + PATIENCE
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await anyio.sleep(0.02)


def live_watcher(store: Path):
    found = read_status(store)
    return found if found is not None and found.live else None


async def found(session, query: str, **extra: object) -> list[str]:
    """The paths of the files a `search` call finds."""
    result = await session.call_tool("search", {"query": query, **extra})
    assert not result.is_error, result.content[0].text
    return [hit["path"] for hit in result.structured_content["hits"]]


async def hand_edits_are_seen_at_once(session, store: Path) -> None:
    """Notes written, rewritten and deleted by hand, each followed at once by a search that
    must see it, and each after a search that found nothing changed (with the watcher, one
    that skips its round trip: memctl.disk.changeprobe); then in a sub-folder and in a project
    folder each made between two searches; the last in a project folder that did not exist a
    moment before."""
    for number, (word, reword) in enumerate(zip(WORDS[:-1], REWORDS, strict=True)):
        relpath = f"demo/notes/fact/by-hand-{number}.md"
        assert await found(session, word) == []
        assert await found(session, word) == []  # nothing changed since the call before
        (store / relpath).write_text(f"Written by hand: the {word} switch is on.\n")
        assert await found(session, word) == [relpath]
        (store / relpath).write_text(f"Rewritten by hand: the {reword} switch is off.\n")
        assert await found(session, reword) == [relpath]
        assert await found(session, word) == []
        (store / relpath).unlink()
        assert await found(session, reword) == []
    for word, folder in (("ocelotfern", "demo/notes/deep/er"), ("tapirmoss", "latecomer/notes")):
        (store / folder).mkdir(parents=True)
        assert await found(session, word, all_projects=True) == []  # sees the new folder
        assert await found(session, word, all_projects=True) == []
        (store / folder / "later.md").write_text(f"Written later: the {word} switch.\n")
        assert await found(session, word, all_projects=True) == [f"{folder}/later.md"]
    (store / "newborn" / "notes" / "fact").mkdir(parents=True)
    (store / "newborn/notes/fact/first.md").write_text(f"A new project's note: {WORDS[-1]}.\n")
    assert await found(session, WORDS[-1], all_projects=True) == ["newborn/notes/fact/first.md"]


def test_a_hand_edit_is_seen_by_the_next_call_while_the_servers_watcher_runs(store: Path) -> None:
    async def script(session) -> None:
        status = await until(lambda: live_watcher(store), "the server's watcher")
        assert status.pid != os.getpid()  # the server's own, not this process's
        await hand_edits_are_seen_at_once(session, store)
        # The server's own writes too, and the watcher still runs after all that.
        added = await session.call_tool("remember", {"text": "The lighthouse keeper logs "
                                                             "tides in ochre ink"})
        assert not added.is_error
        assert await found(session, "ochre lighthouse") == [added.structured_content["path"]]
        assert live_watcher(store).pid == status.pid

    serve(store, script)
    assert "watching" in server_log(store)


def test_without_the_watcher_every_call_checks_the_files(store: Path) -> None:
    async def script(session) -> None:
        await hand_edits_are_seen_at_once(session, store)
        assert not heartbeat_path(store).exists()  # no watcher ran

    serve(store, script, "--no-watch")


def test_the_watcher_stops_when_the_client_disconnects(store: Path) -> None:
    async def script(session) -> int:
        return (await until(lambda: live_watcher(store), "the server's watcher")).pid

    pid = serve(store, script)
    assert read_status(store) is None and not heartbeat_path(store).exists()
    with WatchLock(store):  # free: another watcher may start
        pass
    assert pid != os.getpid()


def test_sigterm_stops_the_watcher_and_leaves_no_heartbeat(store: Path) -> None:
    async def script(session) -> None:
        status = await until(lambda: live_watcher(store), "the server's watcher")
        os.kill(status.pid, signal.SIGTERM)
        await until(lambda: not heartbeat_path(store).exists(), "the heartbeat to go")

    serve(store, script)
    assert read_status(store) is None
    with WatchLock(store):
        pass


def test_another_watcher_is_trusted_then_taken_over_when_it_stops(store: Path) -> None:
    other = WatchProcess(store).ready()

    async def script(session) -> None:
        try:
            assert live_watcher(store).pid == other.proc.pid
            await until(lambda: "another watcher" in server_log(store), "the server's word")
            await hand_edits_are_seen_at_once(session, store)
        finally:
            other.stop()
        # The server watches once the other is gone.
        await until(lambda: (found := live_watcher(store)) is not None
                    and found.pid not in (other.proc.pid, os.getpid()), "the server to take over")
        word = "wombatsage"
        (store / "demo" / "notes" / "fact" / "after.md").write_text(f"After: {word}.\n")
        assert await found(session, word) == ["demo/notes/fact/after.md"]

    serve(store, script)
    assert not heartbeat_path(store).exists()


def test_a_read_only_store_is_served_without_a_watcher(store: Path) -> None:
    (store / "demo" / "notes" / "fact" / "ro.md").write_text("Read-only stores hold marmots.\n")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "one more")
    subprocess.run(["chmod", "-R", "a-w", str(store)], check=True)
    try:
        async def script(session) -> None:
            assert await found(session, "marmots") == ["demo/notes/fact/ro.md"]
            await until(lambda: "not watching" in server_log(store), "the server's word")
            assert await found(session, "marmots") == ["demo/notes/fact/ro.md"]

        serve(store, script, prefix=tuple(without_file_permission_override()))
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(store)], check=True)
    assert not heartbeat_path(store).exists()
    assert "Traceback" not in server_log(store)


@pytest.mark.parametrize("args", [(), ("--no-watch",)])
def test_over_http_several_clients_are_served_and_the_watcher_stops_with_the_server(
        store: Path, args: tuple[str, ...]) -> None:
    """Each HTTP client initializes: what the server does once its first client is answered
    (the watcher, importing the tools' services) is done once, without an error."""
    port = free_port()
    env = {**subprocess_env(store), "MEMCTL_MCP_TOKEN": "token-for-the-test-0123456789"}
    process = subprocess.Popen([memctl_executable(), "mcp", "--http", "--port", str(port), *args],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "never listened"
            time.sleep(0.05)
        word = "heronquill"
        (store / "demo" / "notes" / "fact" / "http.md").write_text(f"Over HTTP: {word}.\n")
        for _ in range(3):
            paths = http_call(f"http://127.0.0.1:{port}/mcp", env["MEMCTL_MCP_TOKEN"],
                              lambda session: found(session, word))
            assert paths == ["demo/notes/fact/http.md"]
        if not args:
            deadline = time.monotonic() + PATIENCE
            while live_watcher(store) is None:
                assert time.monotonic() < deadline, "the server's watcher never went live"
                time.sleep(0.05)
            assert live_watcher(store).pid == process.pid
    finally:
        process.terminate()
        errors = process.communicate(timeout=PATIENCE)[1]
    assert "Traceback" not in errors and "raised" not in errors, errors
    assert not heartbeat_path(store).exists()
