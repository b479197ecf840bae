"""`memctl mcp`, started as a subprocess and driven by the MCP SDK's real stdio client."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest
from conftest import git, memctl_executable

pytest.importorskip("mcp.server.mcpserver")

EXPECTED_TOOLS = {
    "remember",
    "recall",
    "search",
    "show",
    "forget",
    "update_scratchpad",
    "add_episode",
    "project_memory",
}


def server_env(store: Path) -> dict[str, str]:
    pinned = {"MEMCTL_NOW": os.environ["MEMCTL_NOW"]} if "MEMCTL_NOW" in os.environ else {}
    return {
        **pinned,
        "MEMCTL_STORE": str(store),
        "MEMCTL_PROJECT": "demo",
        "NO_COLOR": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }


def run_session(store: Path, script) -> object:
    """Start `memctl mcp`, initialize a client session and run `script(session)`."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=memctl_executable(), args=["mcp"], env=server_env(store), cwd=str(store.parent)
    )
    outcome = {}

    async def main() -> None:
        with open(store.parent / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    with anyio.fail_after(60):
                        outcome["value"] = await script(session)

    anyio.run(main)
    return outcome["value"]


def text_of(result) -> str:
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def test_tools_remember_recall_search_forget(store_path):
    async def script(session):
        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) >= EXPECTED_TOOLS
        for tool in tools.values():
            assert len(tool.description or "") > 60  # written for a model to choose well
        assert "type" in tools["remember"].input_schema["properties"]

        added = json.loads(
            text_of(
                await session.call_tool(
                    "remember",
                    {
                        "text": "The blog backend uses PostgreSQL 16 with Kysely, no ORM",
                        "type": "decision",
                        "tags": ["database"],
                        "subject": "blog",
                        "predicate": "database",
                    },
                )
            )
        )
        assert added["action"] == "created"
        note_id = added["id"]

        again = json.loads(
            text_of(
                await session.call_tool(
                    "remember",
                    {
                        "text": "The blog backend uses PostgreSQL 16 with Kysely, no ORM",
                    },
                )
            )
        )
        assert again["action"] == "merged" and again["id"] == note_id  # the same checks as the CLI

        block = text_of(await session.call_tool("recall", {"query": "database"}))
        assert note_id in block and "PostgreSQL 16" in block

        hits = json.loads(text_of(await session.call_tool("search", {"query": "postgres"})))
        assert hits[0]["id"] == note_id

        shown = json.loads(text_of(await session.call_tool("show", {"id": note_id[:8]})))
        assert shown["body"].startswith("The blog backend")

        forgotten = json.loads(text_of(await session.call_tool("forget", {"id": note_id})))
        assert forgotten["forgotten"] == note_id
        hits = json.loads(text_of(await session.call_tool("search", {"query": "postgres"})))
        assert note_id not in {h["id"] for h in hits}

        bad = await session.call_tool("remember", {"text": "x", "type": "banana"})
        assert bad.is_error
        bad = await session.call_tool("show", {"id": "zzzzzzzz"})
        assert bad.is_error and "zzzzzzzz" in bad.content[0].text
        bad = await session.call_tool("search", {"query": "x", "project": "../etc"})
        assert bad.is_error and "project" in bad.content[0].text
        return note_id

    note_id = run_session(store_path, script)
    assert (store_path / ".tombstones" / f"{note_id}.md").exists()
    assert git(store_path, "status", "--porcelain") == ""
    log = git(store_path, "log", "--format=%s")
    assert f"forget {note_id}" in log


def test_scratchpad_episode_and_project_memory_tools(store_path):
    async def script(session):
        await session.call_tool("update_scratchpad", {"action": "focus", "text": "Ship v1"})
        await session.call_tool("update_scratchpad", {"action": "next", "text": "tag the release"})
        state = json.loads(
            text_of(await session.call_tool("update_scratchpad", {"action": "done", "text": "1"}))
        )
        assert state["done"] == ["tag the release"]
        missing = await session.call_tool("update_scratchpad", {"action": "note"})
        assert missing.is_error

        episode = json.loads(
            text_of(
                await session.call_tool(
                    "add_episode",
                    {
                        "goal": "Release v1",
                        "outcome": "completed",
                        "steps": ["tag => v1.0.0 pushed", "publish => on PyPI"],
                    },
                )
            )
        )
        assert episode["steps"][1] == {"action": "publish", "result": "on PyPI"}
        no_outcome = await session.call_tool("add_episode", {"goal": "x"})
        assert no_outcome.is_error

        added = json.loads(
            text_of(
                await session.call_tool(
                    "project_memory",
                    {"action": "add", "section": "progress", "text": "v1 released"},
                )
            )
        )
        assert added["section"] == "progress"
        shown = json.loads(text_of(await session.call_tool("project_memory", {"action": "show"})))
        assert "v1 released" in shown["text"]
        bad = await session.call_tool(
            "project_memory", {"action": "add", "section": "banana", "text": "x"}
        )
        assert bad.is_error and "banana" in bad.content[0].text
        return episode

    episode = run_session(store_path, script)
    assert (store_path / episode["path"]).exists()
    assert "v1 released" in (store_path / "demo" / "MEMORY.md").read_text()
    assert git(store_path, "status", "--porcelain") == ""


def test_missing_sdk_gives_an_install_hint(store_path, tmp_path):
    fake = tmp_path / "fake"
    (fake / "mcp").mkdir(parents=True)
    (fake / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = {**server_env(store_path), "PYTHONPATH": str(fake), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [memctl_executable(), "mcp"], capture_output=True, text=True, env=env, input="", timeout=60
    )
    assert result.returncode == 1
    assert "pip install 'memctl[mcp]'" in result.stderr
    assert result.stdout == ""
