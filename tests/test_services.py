"""The CLI and the MCP server are two front ends over one service layer (memctl/services):
the same bad input is refused by both, with the same meaning, each in its own words (CLI
options for people, tool arguments for a model), and the store stays as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import git, run_memctl
from test_mcp import run_session

from memctl.core.errors import CLI, ArgumentError, Front, MemctlError, UsageError, arg, cmd, exit_code
from memctl.mcp_server import MCP_WORDING

pytest.importorskip("mcp.server.mcpserver")

SECRET = "deploy key AKIAIOSFODNN7EXAMPLE for the uploads"

# (what is wrong, CLI arguments, MCP tool and arguments, words both messages carry,
#  the CLI's option, the MCP argument)
CASES = [
    ("an episode that does not exist", ["add", "learnt in a task", "--source-episode", "nosuch"],
     ("remember", {"text": "learnt in a task", "source_episode": "nosuch"}),
     "no episode with id 'nosuch'", None, None),
    ("a corrected note that does not exist", ["add", "the fix", "--type", "correction", "--corrects", "nosuch"],
     ("remember", {"text": "the fix", "type": "correction", "corrects": "nosuch"}),
     "no note with id 'nosuch'", None, None),
    ("a project name that leaves the store", ["add", "x", "--project", "../x"],
     ("remember", {"text": "x", "project": "../x"}),
     "is not a project name", "--project", "`project`"),
    ("an expiry that is not a date", ["add", "x", "--expires", "soonish"],
     ("remember", {"text": "x", "expires": "soonish"}),
     "is neither a date", "--expires", "`expires`"),
    ("a secret", ["add", SECRET],
     ("remember", {"text": SECRET}),
     "looks like it contains a secret", "--allow-secret", "`allow_secret`"),
    ("too many tags", ["add", "x", "--tags", ",".join(f"t{i}" for i in range(101))],
     ("remember", {"text": "x", "tags": [f"t{i}" for i in range(101)]}),
     "a note takes at most 100", "--tags", "`tags`"),
    ("an empty query", ["search", "  "],
     ("search", {"query": "  "}),
     "query is empty", None, None),
    ("an unknown note", ["forget", "nosuch"],
     ("forget", {"id": "nosuch"}),
     "no note with id 'nosuch'", "`memctl list`", "the `list_notes` tool"),
    ("an id that is a path", ["show", "../../etc/passwd"],
     ("show", {"id": "../../etc/passwd"}),
     "'../../etc/passwd' is not an id", "ID", "`id`"),
    ("a supersede of an unknown note", ["supersede", "nosuch", "other"],
     ("supersede", {"old_id": "nosuch", "new_id": "other"}),
     "no note with id 'nosuch'", None, None),
    ("a section MEMORY.md does not have", ["project", "add", "bogus", "x"],
     ("project_memory", {"action": "add", "section": "bogus", "text": "x"}),
     "unknown section 'bogus'", "SECTION", "`section`"),
    ("a list sorted by nothing memctl knows", ["list", "--sort", "colour"],
     ("list_notes", {"sort": "colour"}),
     "colour", "--sort", "`sort`"),
    ("a scratchpad step that is not there", ["scratch", "done", "7"],
     ("update_scratchpad", {"action": "done", "text": "7"}),
     "there is no next step 7", "`memctl scratch show`", "the `update_scratchpad` tool"),
]


@pytest.fixture
def store(store_path: Path) -> Path:
    run_memctl("scratch", "next", "write the tests", store=store_path)
    return store_path


def test_the_cli_and_mcp_refuse_the_same_input_with_the_same_meaning(store: Path) -> None:
    head = git(store, "rev-parse", "HEAD")

    async def script(session):
        return [await session.call_tool(tool, arguments) for _, _, (tool, arguments), *_ in CASES]

    mcp_results = run_session(store, script)
    for (what, cli_args, _tool, words, cli_option, mcp_argument), result in zip(CASES, mcp_results, strict=True):
        cli = run_memctl(*cli_args, store=store)
        assert cli.exit_code in (1, 2), (what, cli.stdout)
        assert "error" in cli.stderr.lower() and words in " ".join(cli.stderr.split()), (what, cli.stderr)
        assert "Traceback" not in cli.stderr
        assert result.is_error, (what, result.content[0].text)
        message = result.content[0].text
        assert words in message, (what, message)
        # The model is told about tool arguments and tools, never CLI options.
        assert not re.search(r"(?<![\w-])--[a-z]", message), (what, message)
        if cli_option is not None:
            assert cli_option in " ".join(cli.stderr.split()), (what, cli.stderr)
            assert mcp_argument in message, (what, message)
    assert git(store, "rev-parse", "HEAD") == head, "a refused input changed the store"
    assert git(store, "status", "--porcelain") == ""


def test_an_out_of_range_importance_is_refused_by_both(store: Path) -> None:
    cli = run_memctl("add", "x", "--importance", "99", store=store)
    assert cli.exit_code == 2 and "--importance" in cli.stderr

    async def script(session):
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        schema = listed["remember"].input_schema["properties"]["importance"]
        return schema, await session.call_tool("remember", {"text": "x", "importance": 99})

    schema, result = run_session(store, script)
    assert "1" in json.dumps(schema) and "10" in json.dumps(schema)  # bounded in the schema
    assert result.is_error and "importance" in result.content[0].text


def test_what_mcp_wrote_before_is_refused_now_a_made_up_episode_id(store: Path) -> None:
    """Before the service layer, MCP `remember` stored a `source_episode` no episode had."""
    async def script(session):
        return await session.call_tool("remember", {"text": "a lesson", "source_episode": "nosuch"})

    assert run_session(store, script).is_error
    listed = run_memctl("list", "--json", store=store).json()
    assert listed == []


def test_errors_render_their_options_and_commands_per_front_end() -> None:
    error = UsageError(f"pass {arg('allow_secret')} or run {cmd('list')}")
    assert str(error) == "pass --allow-secret or run `memctl list`"
    assert error.render(CLI) == str(error)
    assert error.render(MCP_WORDING) == "pass `allow_secret` or run the `list_notes` tool"
    bad = ArgumentError("importance", "99 is not between 1 and 10")
    assert str(bad) == "invalid value for --importance: 99 is not between 1 and 10"
    assert bad.render(MCP_WORDING) == "invalid value for `importance`: 99 is not between 1 and 10"

    class Plain(Front):
        def option(self, name: str) -> str:
            return name.upper()

    assert bad.render(Plain()).startswith("invalid value for IMPORTANCE")


def test_one_exit_code_rule() -> None:
    assert exit_code(UsageError("x")) == 2
    assert exit_code(ArgumentError("limit", "0")) == 2
    assert exit_code(MemctlError("x")) == 1
    assert exit_code(KeyboardInterrupt()) == 130
