"""The configuration snippets of the README and docs/ are pasted into real files (Claude Code's
settings, Codex's config.toml, VS Code's mcp.json, …): each ```json and ```toml block must
parse as it is, the MCP server entries must start `memctl mcp`, and the hook commands must run.

A block that is intentionally partial is fenced as ```jsonc and skipped, saying so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, memctl_executable

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(\s*)```([A-Za-z0-9_+-]*)\s*$")
PARSERS = {"json": json.loads, "toml": tomllib.loads}
PARTIAL = ("jsonc",)  # fenced so on purpose: an excerpt, not a file


def fenced_blocks(path: Path) -> list[tuple[str, str, str]]:
    """(where, language, text) of every fenced block of a Markdown file; the text without the
    indentation its fence has (a block inside a list item)."""
    blocks, current = [], None
    name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if current is None:
            if fence:
                current = (f"{name}:{number}", fence.group(2).lower(), len(fence.group(1)), [])
        elif fence and not fence.group(2):
            where, language, indent, lines = current
            blocks.append((where, language, "\n".join(lines)))
            current = None
        else:
            current[3].append(line[current[2]:] if line[: current[2]].isspace() else line)
    assert current is None, f"{path.name}: a fence opened at {current[0]} is never closed"
    return blocks


SNIPPETS = [block for path in DOCUMENTS for block in fenced_blocks(path) if block[1] in (*PARSERS, *PARTIAL)]


def test_the_block_reader_finds_blocks_and_their_languages(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('text\n\n```json\n{"a": 1}\n```\n\n- item\n\n  ```toml\n  a = 1\n  ```\n\n```\nplain\n```\n')
    blocks = [(language, text) for _, language, text in fenced_blocks(page)]
    assert blocks == [("json", '{"a": 1}'), ("toml", "a = 1"), ("", "plain")]


def test_the_documents_have_configuration_snippets() -> None:
    languages = {language for _, language, _ in SNIPPETS}
    assert {"json", "toml"} <= languages
    where = {location.split(":")[0] for location, _, _ in SNIPPETS}
    assert "docs/agents.md" in where and "docs/settings.md" in where


@pytest.mark.parametrize(("where", "language", "text"), SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_every_snippet_parses_as_it_is(where: str, language: str, text: str) -> None:
    if language in PARTIAL:
        pytest.skip(f"{where} is fenced as ```{language}: an intentional excerpt, not a whole file")
    try:
        PARSERS[language](text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        pytest.fail(f"{where}: the ```{language} block does not parse: {error}")


def parsed_snippets() -> list[tuple[str, Any]]:
    return [(where, PARSERS[language](text)) for where, language, text in SNIPPETS if language in PARSERS]


def mcp_servers(document: Any) -> list[tuple[str, dict[str, Any]]]:
    """(the key holding them, entry) for every MCP server a configuration declares: `mcpServers`
    (Claude Desktop, Cursor, Cline, `.mcp.json`), `servers` (VS Code), `mcp_servers` (Codex)."""
    found = []
    if isinstance(document, dict):
        for key in ("mcpServers", "servers", "mcp_servers"):
            for entry in (document.get(key) or {}).values():
                found.append((key, entry))
    return found


def test_every_mcp_server_snippet_starts_memctl_mcp_in_its_clients_format() -> None:
    servers = [(where, key, entry) for where, document in parsed_snippets() for key, entry in mcp_servers(document)]
    assert {key for _, key, _ in servers} == {"mcpServers", "servers", "mcp_servers"}
    for where, key, entry in servers:
        if "url" in entry:  # the HTTP transport: a URL and the bearer token header
            assert entry["url"].endswith("/mcp") and entry["headers"]["Authorization"].startswith("Bearer "), where
            continue
        assert entry["command"] == "memctl" and entry["args"][:1] == ["mcp"], where
        if key == "servers":  # VS Code names each server's transport
            assert entry["type"] == "stdio", where


def hook_commands() -> list[tuple[str, str, str]]:
    """(where, event, command) of every Claude Code hook in the snippets, in document order."""
    found = []
    for where, document in parsed_snippets():
        hooks = document.get("hooks") if isinstance(document, dict) else None
        for event, groups in (hooks or {}).items():
            for group in groups:
                assert set(group) <= {"matcher", "hooks"}, where
                for hook in group["hooks"]:
                    assert hook["type"] == "command", where
                    found.append((where, event, hook["command"]))
    return found


def test_the_hook_commands_run(tmp_path: Path) -> None:
    """Each hook command of the recipes, without the `2>/dev/null || true` that keeps a hook
    quiet, succeeds on a store in use, in the order a session meets them."""
    commands = hook_commands()
    assert {event for _, event, _ in commands} >= {"SessionStart", "PreCompact", "SessionEnd"}
    store = tmp_path / "store"
    env = {**os.environ, "MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo",
           "PATH": f"{Path(memctl_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for setup in (["init", str(store)], ["scratch", "focus", "Move the counter to a view"]):
        subprocess.run([memctl_executable(), *setup], env=env, capture_output=True, check=True)
    for where, event, command in commands:
        bare = command.removesuffix(" 2>/dev/null || true")
        assert bare != command, f"{where}: a hook command should never fail the session ({event})"
        result = subprocess.run(["sh", "-c", bare], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, f"{where} {event}: {bare}: {result.stderr}"
    episodes = subprocess.run([memctl_executable(), "episode", "list", "--json"], env=env,
                              capture_output=True, text=True, check=True)
    assert [episode["goal"] for episode in json.loads(episodes.stdout)] == ["Move the counter to a view"]


_CITED_TEST = re.compile(r"(tests/[\w/]+\.py)?::(test_\w+)")
_DEFINED_TEST = re.compile(r"^\s*(?:async\s+)?def (test_\w+)", re.MULTILINE)


def test_every_test_the_documents_cite_exists() -> None:
    """A test named as `tests/FILE.py::test_x` (or `::test_x`, the file named before it) is one
    a reader can run: it is defined, in that file when the file is named."""
    defined: dict[str, set[str]] = {}
    for path in sorted((REPO / "tests").glob("*.py")):
        for name in _DEFINED_TEST.findall(path.read_text(encoding="utf-8")):
            defined.setdefault(name, set()).add(f"tests/{path.name}")
    missing = []
    for document in DOCUMENTS:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            for match in _CITED_TEST.finditer(line):
                where, name = match.group(1), match.group(2)
                if name not in defined or (where and where not in defined[name]):
                    missing.append(f"{document.relative_to(REPO)}:{number}: {match.group(0)}")
    assert missing == []
