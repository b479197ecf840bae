"""`memctl mcp`, started as a subprocess and driven by the MCP SDK's real clients: stdio for
every tool, resource and prompt (one server for the module), streamable HTTP behind its
bearer token. Structured results are checked against each tool's declared output schema."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import jsonschema
import pytest
from conftest import PINNED_NOW, git, memctl_executable, run_memctl, tree_snapshot

from memctl.core.sections import MEMORY_SECTIONS
from memctl.core.vocab import IMPORTANCE_RANGE, LIST_SORTS, LIST_STATUSES, MAX_LIMIT, NOTE_TYPES, OUTCOMES

pytest.importorskip("mcp.server.mcpserver")

EXPECTED_TOOLS = {
    "remember",
    "recall",
    "search",
    "get",
    "show",
    "list_notes",
    "update_note",
    "supersede",
    "forget",
    "restore",
    "update_scratchpad",
    "add_episode",
    "list_episodes",
    "update_episode",
    "project_memory",
    "review",
}


def server_env(store: Path, now: str | None = None) -> dict[str, str]:
    now = now or os.environ.get("MEMCTL_NOW")
    pinned = {"MEMCTL_NOW": now} if now else {}
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


def subprocess_env(store: Path) -> dict[str, str]:
    """The whole environment of a `memctl` started by hand, on `store` at the pinned time."""
    inherited = {key: value for key, value in os.environ.items()
                 if not key.startswith("MEMCTL_")}
    return {**inherited, **server_env(store, PINNED_NOW)}


def run_session(store: Path, script, *args: str, prefix: tuple[str, ...] = (),
                timeout: float = 60.0) -> object:
    """Start `memctl mcp ARGS` (its command line after `prefix`, such as a wrapper), initialize
    an SDK client session on it and return `await script(session)`; the client disconnects
    after. The server's stderr goes to mcp-stderr.log beside the store, appended."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = [*prefix, memctl_executable(), "mcp", *args]
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env=server_env(store, PINNED_NOW), cwd=str(store.parent))
    outcome = {}

    async def main() -> None:
        with open(store.parent / "mcp-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    with anyio.fail_after(timeout):
                        outcome["value"] = await script(session)

    anyio.run(main)
    return outcome["value"]


def text_of(result) -> str:
    assert not result.is_error, result.content[0].text
    return result.content[0].text


# --- one server for the module: `memctl mcp` over stdio, driven by the SDK's client ------------


class Client:
    """A `memctl mcp` subprocess and an initialized SDK `ClientSession` on it, kept open for
    the whole module (one server process) on a blocking portal's event loop."""

    def __init__(self, portal, store: Path) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self.portal = portal
        self.store = store
        self.notifications: list[object] = []
        self._stack = contextlib.ExitStack()
        errlog = self._stack.enter_context(open(store.parent / "mcp-stderr.log", "w"))
        params = StdioServerParameters(command=memctl_executable(), args=["mcp"],
                                       env=server_env(store, PINNED_NOW),
                                       cwd=str(store.parent))
        read, write = self._stack.enter_context(
            portal.wrap_async_context_manager(stdio_client(params, errlog=errlog)))

        async def collect(message) -> None:
            self.notifications.append(message)

        self.session = self._stack.enter_context(portal.wrap_async_context_manager(
            ClientSession(read, write, message_handler=collect)))
        self.initialized = portal.call(self.session.initialize)
        self.tools = {tool.name: tool for tool in portal.call(self.session.list_tools).tools}

    def call(self, tool: str, arguments: dict | None = None):
        """Call a tool; a result that is not an error must carry structured content valid
        under the tool's declared output schema, next to a text block."""
        result = self.portal.call(self.session.call_tool, tool, arguments or {})
        if not result.is_error:
            assert result.structured_content is not None, tool
            jsonschema.validate(result.structured_content, self.tools[tool].output_schema)
            assert result.content[0].type == "text" and result.content[0].text.strip()
        return result

    def ok(self, tool: str, arguments: dict | None = None) -> tuple[str, dict]:
        """(the text, the structured content) of a call that must succeed."""
        result = self.call(tool, arguments)
        return text_of(result), result.structured_content

    def error(self, tool: str, arguments: dict) -> str:
        """The message of a call that must fail: one line for a model, naming no CLI option,
        carrying no validator dump or link."""
        result = self.call(tool, arguments)
        assert result.is_error, (tool, arguments, result.content[0].text)
        message = result.content[0].text
        assert "\n" not in message.strip(), message
        assert not re.search(r"(?<![\w-])--[a-z]", message), message
        for noise in ("pydantic", "http", "Error executing tool", "validation error", "Traceback"):
            assert noise not in message, message
        return message

    def read(self, uri: str):
        return self.portal.call(self.session.read_resource, uri)

    def prompt(self, name: str, arguments: dict | None = None):
        return self.portal.call(self.session.get_prompt, name, arguments or {})

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="module")
def mcp(tmp_path_factory):
    from anyio.from_thread import start_blocking_portal

    store = tmp_path_factory.mktemp("mcp") / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    with start_blocking_portal() as portal:
        client = Client(portal, store)
        try:
            yield client
        finally:
            client.close()


def head_of(store: Path) -> str:
    return git(store, "rev-parse", "HEAD")


READ_ONLY = {"recall", "search", "get", "show", "list_notes", "list_episodes", "review"}
DESTRUCTIVE = {"forget", "update_note", "project_memory", "update_scratchpad"}


def test_every_tool_is_titled_annotated_bounded_and_has_an_output_schema(mcp):
    assert set(mcp.tools) >= EXPECTED_TOOLS
    for name, tool in mcp.tools.items():
        assert tool.title and tool.annotations and tool.annotations.title == tool.title, name
        assert len(tool.description or "") > 60, name  # written for a model to choose well
        assert tool.output_schema and tool.output_schema.get("type") == "object", name
        assert tool.annotations.read_only_hint == (name in READ_ONLY), name
        assert tool.annotations.open_world_hint is False, name
        if name in DESTRUCTIVE:
            assert tool.annotations.destructive_hint is True, name
    # The bounds and choices are memctl's own rules (core/vocab.py, core/sections.py).
    remember = mcp.tools["remember"].input_schema["properties"]
    low, high = IMPORTANCE_RANGE
    assert (remember["importance"]["minimum"], remember["importance"]["maximum"]) == (low, high)
    assert remember["type"]["enum"] == list(NOTE_TYPES)
    assert remember["scope"]["enum"] == ["project", "global"]
    assert "anyOf" not in remember["importance"]  # an optional argument shows its own type
    section = mcp.tools["project_memory"].input_schema["properties"]["section"]
    assert section["enum"] == list(MEMORY_SECTIONS)
    listing = mcp.tools["list_notes"].input_schema["properties"]
    assert listing["status"]["enum"] == list(LIST_STATUSES)
    assert listing["sort"]["enum"] == list(LIST_SORTS)
    assert (listing["limit"]["minimum"], listing["limit"]["maximum"]) == (1, MAX_LIMIT)
    assert mcp.tools["show"].input_schema["properties"]["id"]["pattern"]
    assert mcp.tools["add_episode"].input_schema["properties"]["outcome"]["enum"] == list(OUTCOMES)
    assert mcp.initialized.capabilities.resources.list_changed is True


def test_every_id_project_and_tag_argument_states_its_rule(mcp):
    """Each id, list of ids, project, tag and list of tags of every tool states in its schema
    the rule the validators enforce, from their own constants: an argument of these kinds
    that states less (update_episode's id, links and tags; search's tags did) fails here."""
    from memctl.core.arguments import MAX_FIELD_CHARS, MAX_LINKS, MAX_TAGS
    from memctl.core.ids import VALID_ID
    from memctl.core.vocab import MAX_PROJECT_BYTES, PROJECT_NAME

    rules = {
        "id": {"pattern": VALID_ID.pattern},
        "ids": {"type": "array", "maxItems": MAX_LINKS,
                "items": {"type": "string", "pattern": VALID_ID.pattern}},
        "project": {"pattern": PROJECT_NAME.pattern, "maxLength": MAX_PROJECT_BYTES},
        "tag": {"maxLength": MAX_FIELD_CHARS},
        "tags": {"type": "array", "maxItems": MAX_TAGS,
                 "items": {"type": "string", "maxLength": MAX_FIELD_CHARS}},
    }
    kinds = {"id": "id", "old_id": "id", "new_id": "id", "corrects": "id",
             "source_episode": "id", "links": "ids", "project": "project", "tag": "tag",
             "tags": "tags"}
    checked = set()
    for name, tool in mcp.tools.items():
        for key, schema in tool.input_schema["properties"].items():
            kind = kinds.get(key)
            if kind is None:
                assert not key.endswith(("id", "ids", "episode")), (name, key)  # a new kind
                continue
            stated = {rule: schema.get(rule) for rule in rules[kind]}
            assert stated == rules[kind], (name, key, schema)
            checked.add((name, key))
    assert {("update_episode", "id"), ("update_episode", "links"), ("update_episode", "tags"),
            ("search", "tags"), ("add_episode", "links"), ("remember", "project")} <= checked


def test_a_note_from_remember_to_forget(mcp):
    project = "life"
    added = mcp.ok("remember", {"text": "The blog backend uses PostgreSQL 16 with Kysely, no ORM",
                                "type": "decision", "tags": ["database"], "subject": "blog",
                                "predicate": "database", "project": project})
    text, data = added
    assert data["action"] == "created" and data["id"] in text and not text.startswith("{")
    note_id = data["id"]

    text, again = mcp.ok("remember", {"text": "The blog backend uses PostgreSQL 16 with Kysely, "
                                              "no ORM", "project": project})
    assert again["action"] == "merged" and again["id"] == note_id  # the same checks as the CLI
    assert "near-duplicate" in text

    text, found = mcp.ok("search", {"query": "postgres", "project": project})
    assert found["hits"][0]["id"] == note_id and note_id in text

    text, shown = mcp.ok("show", {"id": note_id[:8]})
    assert shown["kind"] == "note" and shown["note"]["body"].startswith("The blog backend")
    assert "The blog backend" in text

    mcp.ok("remember", {"text": "Deploys go through GitHub Actions on every merge to main",
                        "type": "fact", "project": project, "importance": 3})
    text, listed = mcp.ok("list_notes", {"project": project, "type": "decision"})
    assert [row["id"] for row in listed["notes"]] == [note_id] and note_id in text
    _, by_tag = mcp.ok("list_notes", {"project": project, "tag": "database"})
    assert [row["id"] for row in by_tag["notes"]] == [note_id]
    _, ranked = mcp.ok("list_notes", {"project": project, "sort": "importance", "limit": 1})
    assert ranked["count"] == 1 and ranked["notes"][0]["id"] == note_id

    text, updated = mcp.ok("update_note", {"id": note_id, "text": "The blog backend uses "
                                           "PostgreSQL 17 with Kysely, no ORM", "importance": 9,
                                           "tags": ["database", "postgres"]})
    assert updated["changed"] == ["text", "importance", "tags"] and updated["id"] == note_id
    assert updated["note"]["importance"] == 9 and "PostgreSQL 17" in updated["note"]["body"]
    body = (mcp.store / updated["path"]).read_text(encoding="utf-8")
    assert "PostgreSQL 17" in body and "PostgreSQL 16" not in body and f"id: {note_id}" in body
    assert f"update {note_id}" in git(mcp.store, "log", "-1", "--format=%s")
    head = head_of(mcp.store)
    text, same = mcp.ok("update_note", {"id": note_id, "importance": 9})
    assert same["changed"] == [] and "Nothing changed" in text
    assert head_of(mcp.store) == head  # nothing to change: no commit

    _, exact = mcp.ok("get", {"subject": "blog", "predicate": "database", "project": project})
    assert [note["id"] for note in exact["notes"]] == [note_id]

    _, newer = mcp.ok("remember", {"text": "The blog backend moved its database to CockroachDB",
                                   "type": "decision", "project": project})
    text, superseded = mcp.ok("supersede", {"old_id": note_id, "new_id": newer["id"]})
    assert superseded == {"id": note_id, "path": superseded["path"], "status": "superseded",
                          "superseded_by": newer["id"]}
    _, stale = mcp.ok("list_notes", {"project": project, "status": "superseded"})
    assert [row["id"] for row in stale["notes"]] == [note_id]
    # The other way round would hide both notes: a superseded note supersedes nothing.
    cycle = mcp.error("supersede", {"old_id": newer["id"], "new_id": note_id})
    assert f"note {note_id} is superseded" in cycle and "restore it first" in cycle
    _, still = mcp.ok("list_notes", {"project": project, "status": "superseded"})
    assert [row["id"] for row in still["notes"]] == [note_id]
    _, restored = mcp.ok("restore", {"id": note_id})
    assert restored["status"] == "active"

    text, forgotten = mcp.ok("forget", {"id": note_id})
    assert forgotten["forgotten"] == note_id and "Forgot" in text
    _, found = mcp.ok("search", {"query": "postgres", "project": project})
    assert note_id not in {hit["id"] for hit in found["hits"]}
    assert (mcp.store / ".tombstones" / f"{note_id}.md").exists()
    assert f"forget {note_id}" in git(mcp.store, "log", "--format=%s")
    assert git(mcp.store, "status", "--porcelain") == ""


def test_update_note_makes_the_same_checks_as_remember(mcp):
    project = "checks"
    _, old = mcp.ok("remember", {"text": "Staging runs on stg-db-1", "subject": "staging",
                                 "predicate": "host", "project": project})
    _, other = mcp.ok("remember", {"text": "The staging environment is refreshed nightly",
                                   "project": project})
    # Given the subject + predicate of another active note, the updated one supersedes it.
    _, updated = mcp.ok("update_note", {"id": other["id"], "subject": "staging",
                                        "predicate": "host"})
    assert updated["superseded"] == [old["id"]]
    _, shown = mcp.ok("show", {"id": old["id"]})
    assert shown["note"]["status"] == "superseded"
    assert shown["note"]["superseded_by"] == other["id"]

    head = head_of(mcp.store)
    secret = mcp.error("update_note", {"id": other["id"],
                                       "text": "deploy key AKIAIOSFODNN7EXAMPLE for uploads"})
    assert "secret" in secret and "`allow_secret`" in secret
    assert "nothing to change" in mcp.error("update_note", {"id": other["id"]})
    assert "`importance`" in mcp.error("update_note", {"id": other["id"], "importance": 0})
    assert "`expires`" in mcp.error("update_note", {"id": other["id"], "expires": "soonish"})
    assert head_of(mcp.store) == head

    _, cleared = mcp.ok("update_note", {"id": other["id"], "subject": "", "predicate": "",
                                        "pinned": True})
    assert cleared["note"]["subject"] is None and cleared["note"]["pinned"] is True


def test_scratchpad_episodes_and_project_memory(mcp):
    project = "work"
    mcp.ok("update_scratchpad", {"action": "focus", "text": "Ship v1", "project": project})
    mcp.ok("update_scratchpad", {"action": "next", "text": "tag the release", "project": project})
    text, state = mcp.ok("update_scratchpad", {"action": "done", "text": "1", "project": project})
    assert state["done"] == ["tag the release"] and state["changed"] is True
    text, shown = mcp.ok("update_scratchpad", {"action": "show", "project": project})
    assert "Ship v1" in text and shown["focus"] == "Ship v1"
    assert "empty" in mcp.error("update_scratchpad", {"action": "note", "project": project})

    text, episode = mcp.ok("add_episode", {"goal": "Release v1", "outcome": "in_progress",
                                           "steps": ["tag => v1.0.0 pushed"],
                                           "project": project})
    assert episode["steps"][0] == {"action": "tag", "result": "v1.0.0 pushed"}
    assert episode["id"] in text
    assert "`outcome`" in mcp.error("add_episode", {"goal": "x", "outcome": "meh",
                                                    "project": project})
    text, listed = mcp.ok("list_episodes", {"project": project})
    assert [row["id"] for row in listed["episodes"]] == [episode["id"]] and episode["id"] in text
    text, finished = mcp.ok("update_episode", {"id": episode["id"], "finish": True,
                                               "outcome": "completed",
                                               "steps": ["publish => on PyPI"]})
    assert finished["outcome"] == "completed" and len(finished["steps"]) == 2
    _, shown = mcp.ok("show", {"id": episode["id"]})
    assert shown["kind"] == "episode" and shown["episode"]["outcome"] == "completed"

    text, added = mcp.ok("project_memory", {"action": "add", "section": "progress",
                                            "text": "v1 released", "project": project})
    assert added["section"] == "progress" and "v1 released" in text
    _, chinese = mcp.ok("project_memory", {"action": "add", "section": "教训",
                                           "text": "迁移前先备份", "project": project})
    assert chinese["section"] == "lessons"
    text, shown = mcp.ok("project_memory", {"action": "show", "project": project})
    assert "v1 released" in shown["text"] and "v1 released" in text
    _, replaced = mcp.ok("project_memory", {"action": "replace", "project": project,
                                            "text": "# work\n\n## Progress\n- [11-30] v1 out\n"})
    assert replaced["changed"] is True
    assert (mcp.store / project / "MEMORY.md").read_text() == "# work\n\n## Progress\n- [11-30] v1 out\n"
    assert git(mcp.store, "status", "--porcelain") == ""


def test_an_argument_the_action_does_not_take_is_refused_not_dropped(mcp):
    """One tool, several actions, every argument optional: `clear` with a text wiped the
    scratchpad without a word, `show` with a section showed the whole file."""
    project = "args"
    mcp.ok("update_scratchpad", {"action": "focus", "text": "Ship v2", "project": project})
    head = head_of(mcp.store)
    for arguments, named in (
            ({"action": "clear", "text": "is this kept?"}, "`text`"),
            ({"action": "focus", "text": "x", "outcome": "failed"}, "`outcome`"),
            ({"action": "focus", "text": "x", "archive": True}, "`archive`"),
            ({"action": "show", "answer": "a"}, "`answer`"),
            ({"action": "next", "text": "x", "answer": "a"}, "`answer`")):
        message = mcp.error("update_scratchpad", {**arguments, "project": project})
        assert named in message and "does not go with" in message, message
    for arguments, named in (({"action": "show", "section": "lessons"}, "`section`"),
                             ({"action": "show", "text": "x"}, "`text`"),
                             ({"action": "replace", "text": "# p\n", "section": "decisions"},
                              "`section`")):
        message = mcp.error("project_memory", {**arguments, "project": project})
        assert named in message and "does not go with" in message, message
    assert head_of(mcp.store) == head and git(mcp.store, "status", "--porcelain") == ""
    _, shown = mcp.ok("update_scratchpad", {"action": "show", "project": project})
    assert shown["focus"] == "Ship v2"


def test_a_project_differing_only_in_case_is_refused_naming_the_one_there(mcp):
    """The check of `StoreFiles.write_text`, through the tools: `Twins` beside `twins` would
    be one folder on a disk that ignores case."""
    mcp.ok("remember", {"text": "The twins deploy on Tuesdays", "project": "twins"})
    head = head_of(mcp.store)
    for tool, arguments in (("remember", {"text": "The twins rollback is manual"}),
                            ("update_scratchpad", {"action": "focus", "text": "x"}),
                            ("add_episode", {"goal": "twins", "outcome": "completed"})):
        message = mcp.error(tool, {**arguments, "project": "Twins"})
        assert "'Twins' differs from the existing project 'twins' only in case" in message
        assert "use `project` twins" in message, message
    assert head_of(mcp.store) == head and git(mcp.store, "status", "--porcelain") == ""
    assert not (mcp.store / "Twins").exists()


def test_an_id_in_capitals_or_with_blanks_finds_its_note(mcp):
    """Crockford base32 ignores case: an id retyped by a model in capitals, or copied with a
    blank around it, is the note's id, for the tools as for the CLI."""
    _, added = mcp.ok("remember", {"text": "The capitals runbook lives in the wiki",
                                   "project": "capitals"})
    note_id = added["id"]
    for given in (note_id.upper(), f" {note_id[:10].upper()} ", f"{note_id}\t"):
        _, shown = mcp.ok("show", {"id": given})
        assert shown["note"]["id"] == note_id, given
    result = run_memctl("show", note_id.upper(), "--json", store=mcp.store, project="capitals")
    assert result.exit_code == 0 and json.loads(result.stdout)["id"] == note_id


def test_search_takes_its_default_limit_from_the_setting(mcp):
    """As `memctl search`: `search.default_limit` in memctl.toml, not a number of its own."""
    for number in range(6):
        mcp.ok("remember", {"text": f"the limit probe number {number} holds plum{number}",
                            "project": "limits", "force": True})
    settings = mcp.store / "memctl.toml"
    before = settings.read_text() if settings.exists() else None
    try:
        assert before is not None and "\ndefault_limit = 20" in before  # `memctl init`'s
        settings.write_text(before.replace("\ndefault_limit = 20", "\ndefault_limit = 3"))
        _, found = mcp.ok("search", {"query": "limit probe", "project": "limits"})
        assert len(found["hits"]) == 3
        _, found = mcp.ok("search", {"query": "limit probe", "project": "limits", "limit": 5})
        assert len(found["hits"]) == 5
    finally:
        settings.write_text(before)


def test_a_field_over_the_front_matter_limit_is_an_error_for_the_model_not_a_bug(mcp):
    head = head_of(mcp.store)
    message = mcp.error("add_episode", {"goal": "g" * 70_000, "outcome": "completed"})
    assert "64 KB" in message and "`goal`" in message and "bug" not in message
    assert head_of(mcp.store) == head
    mcp.ok("update_scratchpad", {"action": "focus", "text": "f" * 70_000, "project": "big"})
    head = head_of(mcp.store)
    message = mcp.error("update_scratchpad", {"action": "clear", "archive": True,
                                              "outcome": "completed", "project": "big"})
    assert "64 KB" in message and "`goal`" in message and "bug" not in message
    assert head_of(mcp.store) == head
    assert git(mcp.store, "status", "--porcelain") == ""


def test_a_merge_past_the_tag_cap_is_refused_and_the_note_still_merges(mcp):
    text = "The tagcap exporter pushes metrics to Prometheus every 15 seconds."
    _, first = mcp.ok("remember", {"text": text, "project": "tagcap",
                                   "tags": [f"a{i}-" + "y" * 190 for i in range(100)]})
    head = head_of(mcp.store)
    for batch in "bc":
        message = mcp.error("remember", {"text": text, "project": "tagcap",
                                         "tags": [f"{batch}{i}-" + "y" * 190 for i in range(100)]})
        assert first["id"] in message and "at most 100" in message and "`force`" in message
        assert "does not parse" not in message
    assert head_of(mcp.store) == head
    _, again = mcp.ok("remember", {"text": text + " Confirmed.", "project": "tagcap",
                                   "tags": ["a1-" + "y" * 190]})
    assert (again["action"], again["id"]) == ("merged", first["id"])


def test_words_of_a_fixed_set_empty_projects_and_wording_for_a_model(mcp):
    """`update_scratchpad` takes its action in any case, as every other word of a fixed set;
    an empty project is bad input, not the default; an episode's id where a note's goes says
    it is an episode; a restore in place names one path; the recall block and errors name
    tools, each once, never a CLI command; `session_start` needs a task."""
    project = "wording"
    _, focused = mcp.ok("update_scratchpad", {"action": "FOCUS", "text": "x", "project": project})
    assert focused["focus"] == "x"
    text, _ = mcp.ok("update_scratchpad", {"action": " Show ", "project": project})
    assert text.startswith("# ")  # the file itself, as action show gives it
    head = head_of(mcp.store)
    for tool, arguments in [("remember", {"text": "x", "project": ""}),
                            ("recall", {"project": ""}), ("list_notes", {"project": " "})]:
        assert "`project`" in mcp.error(tool, arguments)
    assert head_of(mcp.store) == head
    _, episode = mcp.ok("add_episode", {"goal": "Ship", "outcome": "completed",
                                        "project": project})
    head = head_of(mcp.store)
    for tool in ("forget", "update_note"):
        message = mcp.error(tool, {"id": episode["id"], **({"text": "y"} if tool != "forget"
                                                          else {})})
        assert "is an episode, not a note" in message and "`update_episode` tool" in message
    assert head_of(mcp.store) == head
    _, old = mcp.ok("remember", {"text": "The wording queue is RabbitMQ", "project": project})
    _, new = mcp.ok("remember", {"text": "Wording moved to NATS", "project": project,
                                 "force": True})
    mcp.ok("supersede", {"old_id": old["id"], "new_id": new["id"]})
    head = head_of(mcp.store)
    mcp.ok("supersede", {"old_id": old["id"], "new_id": new["id"]})
    assert head_of(mcp.store) == head  # declared idempotent: no second commit
    text, _ = mcp.ok("restore", {"id": old["id"]})
    assert "→" not in text and text.count(old["path"]) == 1
    mcp.ok("project_memory", {"action": "replace", "project": project,
                              "text": "# wording\n\n## Decisions\n" + "- item\n" * 2000})
    text, recalled = mcp.ok("recall", {"project": project})
    assert recalled["memory_md_cut"] and "`memctl" not in text
    assert "the `project_memory` tool, action show has it all" in text
    assert text.count("action replace") == 1  # the budget warning names the tool once
    from mcp.shared.exceptions import MCPError
    for task in ("", "  "):
        with pytest.raises(MCPError, match="`task` is required and may not be empty"):
            mcp.prompt("session_start", {"task": task})


def test_bad_input_is_one_line_naming_the_argument_and_changes_nothing(mcp):
    head = head_of(mcp.store)
    cases = [
        ("remember", {"text": "x", "importance": 99}, "`importance`", "between 1 and 10"),
        ("remember", {"text": "x", "importance": "lots"}, "`importance`", "whole number"),
        ("remember", {"text": "x", "type": "banana"}, "`type`", "banana"),
        ("remember", {"text": "x", "scope": "galaxy"}, "`scope`", "galaxy"),
        ("remember", {}, "`text`", "required"),
        ("project_memory", {"action": "add", "section": "bogus", "text": "x"}, "`section`",
         "bogus"),
        ("project_memory", {"action": "edit"}, "`action`", "edit"),
        ("show", {"id": "zzzzzzzz"}, "zzzzzzzz", "the `list_notes` tool"),
        ("forget", {"id": "zzzzzzzz"}, "zzzzzzzz", "no note"),
        ("update_note", {"id": "zzzzzzzz", "importance": 3}, "zzzzzzzz", "no note"),
        ("supersede", {"old_id": "zzzzzzzz", "new_id": "yyyyyyyy"}, "zzzzzzzz", "no note"),
        ("show", {"id": "../../etc/passwd"}, "`id`", "is not an id"),
        ("forget", {"id": "../../etc/passwd"}, "`id`", "is not an id"),
        ("update_note", {"id": "/etc/passwd", "text": "x"}, "`id`", "is not an id"),
        ("supersede", {"old_id": "a/b", "new_id": "c"}, "`old_id`", "is not an id"),
        ("search", {"query": "x", "project": "../etc"}, "`project`", "not a project name"),
        ("search", {"query": "x", "limit": 0}, "`limit`", "0"),
        ("list_notes", {"status": "deleted"}, "`status`", "deleted"),
        ("list_notes", {"limit": "many"}, "`limit`", "whole number"),
        ("list_episodes", {"outcome": "meh"}, "`outcome`", "meh"),
        ("update_scratchpad", {"action": "dance"}, "`action`", "dance"),
        ("recall", {"limit": -1}, "`limit`", "-1"),
        # A misspelt argument is not ignored (the note would be written without it).
        ("remember", {"text": "x", "importnce": 9}, "`importnce`", "`importance`"),
        ("update_note", {"id": "zzzzzzzz", "txt": "x"}, "`txt`", "`text`"),
    ]
    for tool, arguments, named, words in cases:
        message = mcp.error(tool, arguments)
        assert named in message and words in message, (tool, arguments, message)
    assert head_of(mcp.store) == head
    assert git(mcp.store, "status", "--porcelain") == ""


def test_an_argument_of_the_wrong_type_is_refused_never_converted(mcp):
    """A value is taken only as its own JSON type: true is not the importance 1, "yes" or
    "true" not true, "3" not 3, a number not a string; the error names the argument, the
    value as sent and the type expected."""
    head = head_of(mcp.store)
    number, flag = "expected a whole number", "expected true or false"
    cases = [
        ("remember", {"text": "x", "importance": True}, "`importance`: true", number),
        ("remember", {"text": "x", "importance": False}, "`importance`: false", number),
        ("remember", {"text": "x", "importance": "7"}, '`importance`: "7"', number),
        ("remember", {"text": "x", "importance": 7.5}, "`importance`: 7.5", number),
        ("remember", {"text": "x", "force": "no"}, '`force`: "no"', flag),
        ("remember", {"text": "x", "force": 0}, "`force`: 0", flag),
        ("remember", {"text": 5}, "`text`: 5", "expected a string"),
        ("remember", {"text": "x", "tags": "deploy"}, '`tags`: "deploy"', "expected a list"),
        ("search", {"query": "x", "all_projects": "yes"}, '`all_projects`: "yes"', flag),
        ("search", {"query": "x", "all_projects": "true"}, '`all_projects`: "true"', flag),
        ("search", {"query": "x", "limit": "3"}, '`limit`: "3"', number),
        ("search", {"query": "x", "include_stale": 1}, "`include_stale`: 1", flag),
        ("list_notes", {"limit": True}, "`limit`: true", number),
        ("update_note", {"id": "zzzzzzzz", "pinned": "false"}, '`pinned`: "false"', flag),
        ("update_scratchpad", {"action": "clear", "archive": "true"}, '`archive`: "true"', flag),
    ]
    for tool, arguments, named, words in cases:
        message = mcp.error(tool, arguments)
        assert f"invalid value for {named} ({words})" == message, (tool, arguments, message)
    assert head_of(mcp.store) == head
    assert git(mcp.store, "status", "--porcelain") == ""
    # A list a client sends as its JSON text is still read as the list.
    _, added = mcp.ok("remember", {"text": "Tags may come as JSON text", "tags": '["a", "b"]',
                                   "project": "types"})
    _, shown = mcp.ok("show", {"id": added["id"]})
    assert shown["note"]["tags"] == ["a", "b"]


# Each tool that takes a project, with the least it needs besides.
PROJECT_TOOLS = {
    "remember": {"text": "an innocent fact"},
    "recall": {},
    "search": {"query": "innocent"},
    "get": {"subject": "innocent"},
    "list_notes": {},
    "update_scratchpad": {"action": "note", "text": "innocent"},
    "add_episode": {"goal": "innocent", "outcome": "completed"},
    "list_episodes": {},
    "project_memory": {"action": "add", "section": "lessons", "text": "innocent"},
    "review": {},
}


def test_a_project_named_like_a_secret_is_refused_by_every_tool_prompt_and_resource(mcp):
    from mcp.shared.exceptions import MCPError

    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    taking = {name for name, tool in mcp.tools.items()
              if "project" in tool.input_schema.get("properties", {})}
    assert taking == set(PROJECT_TOOLS)
    head = head_of(mcp.store)
    for tool, arguments in PROJECT_TOOLS.items():
        for allow in ((False, True) if "allow_secret" in mcp.tools[tool].input_schema["properties"]
                      else (False,)):
            extra = {"allow_secret": True} if allow else {}
            message = mcp.error(tool, {**arguments, **extra, "project": token})
            assert "`project`" in message and "looks like a secret" in message, (tool, message)
            assert token not in message and "ghp_****" in message, (tool, message)
    for prompt, arguments in (("session_start", {"task": "x"}), ("end_of_task", {}),
                              ("consolidate", {})):
        with pytest.raises(MCPError, match="looks like a secret") as refused:
            mcp.prompt(prompt, {**arguments, "project": token})
        assert token not in str(refused.value)
    for name in ("MEMORY.md", "SCRATCHPAD.md"):
        with pytest.raises(MCPError) as refused:
            mcp.read(f"memctl://projects/{token}/{name}")
        assert token not in str(refused.value)
    assert not (mcp.store / token).exists()
    assert head_of(mcp.store) == head and git(mcp.store, "status", "--porcelain") == ""


def test_a_write_the_machine_refuses_is_one_line_for_the_model_not_a_bug(tmp_path):
    """The server under a file size limit (`ulimit -f`, ~200 KB: a real EFBIG from the
    kernel, as a full disk gives ENOSPC) that the index outgrows: SQLite's "disk I/O error"
    reached the model as "failed unexpectedly (a bug in memctl …)". It is now the line the
    CLI prints for it, naming the tool that checks the store, and a note it could not store
    is not left behind."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)

    async def script(session) -> list[tuple[bool, str]]:
        said = []
        for number in range(8):
            words = " ".join(f"w{number}x{word}" for word in range(3000))
            result = await session.call_tool("remember", {"text": f"Note {number} {words}",
                                                          "type": "fact"})
            said.append((result.is_error, result.content[0].text))
        return said

    said = run_session(store, script, prefix=("sh", "-c", 'ulimit -f 400; exec "$0" "$@"'))
    refused = [text for is_error, text in said if is_error]
    assert refused, "the limit never bit: raise the notes' size"
    for text in refused:
        assert "a bug in memctl" not in text and "\n" not in text, text
        assert "the command stopped there" in text and "the `review` tool" in text, text
    stored = sum(1 for is_error, _ in said if not is_error)
    assert len(list((store / "demo" / "notes" / "fact").glob("*.md"))) == stored
    assert git(store, "status", "--porcelain") == ""


def test_a_store_gone_or_replaced_while_serving_is_one_error_and_gets_nothing(tmp_path):
    """The server checks at each call that its store is still there, the same folder and
    still a store: moved away (an unmounted drive), an empty folder or another store in its
    place, every tool, prompt and resource is one error and nothing is read or written, by
    the calls or by the server's watcher."""
    from mcp.shared.exceptions import MCPError

    store, away = tmp_path / "store", tmp_path / "away"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    calls = [("search", {"query": "freeze"}), ("list_notes", {}), ("recall", {}),
             ("remember", {"text": "The release train leaves on Monday"}),
             ("update_scratchpad", {"action": "note", "text": "checking the freeze"}),
             ("project_memory", {"action": "add", "section": "lessons", "text": "freeze"}),
             ("add_episode", {"goal": "freeze", "outcome": "completed"})]

    async def refused(session, words: str) -> None:
        for tool, arguments in calls:
            result = await session.call_tool(tool, arguments)
            message = result.content[0].text
            assert result.is_error and words in message and "\n" not in message, (tool, message)
        with pytest.raises(MCPError, match=words):
            await session.get_prompt("session_start", {"task": "freeze"})
        with pytest.raises(MCPError):
            await session.read_resource("memctl://projects/demo/MEMORY.md")
        with pytest.raises(MCPError, match=words):
            await session.list_resources()

    async def script(session) -> dict:
        added = await session.call_tool("remember", {"text": "The deploy freeze starts on "
                                                             "Friday"})
        assert not added.is_error
        os.rename(store, away)
        await refused(session, "is gone")
        store.mkdir()  # an empty mount point where the store was
        await refused(session, "no longer the store")
        # The server's watcher has seen the folder (it says so), and leaves it untouched too.
        log = tmp_path / "mcp-stderr.log"
        with anyio.fail_after(60):
            while not any(words in log.read_text() for words in
                          ("another folder is at", "watching the new one")):
                await anyio.sleep(0.05)
        left = sorted(os.listdir(store))
        assert left == [], left  # nothing at all was written into the empty folder
        store.rmdir()
        os.rename(away, store)  # back in its place: the same folder, served again
        found = await session.call_tool("search", {"query": "freeze"})
        os.rename(store, away)
        subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                       check=True, capture_output=True)  # another store in its place
        other = (tree_snapshot(store), head_of(store))
        await refused(session, "no longer the store")
        assert (tree_snapshot(store), head_of(store)) == other
        (away / "memctl.toml").unlink()
        os.rename(store, tmp_path / "other")
        os.rename(away, store)  # the same folder, no longer a store
        await refused(session, "no longer a memctl store")
        return {"found": found}

    outcome = run_session(store, script)
    assert "freeze" in text_of(outcome["found"])
    assert "Traceback" not in (tmp_path / "mcp-stderr.log").read_text()


# `initialize` as a client sends it first, for a server driven by hand.
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test", "version": "1"}}})


def _initialize_by_hand(server: subprocess.Popen) -> None:
    server.stdin.write(INITIALIZE + "\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1


def _exit_of(server: subprocess.Popen, timeout: float = 30) -> tuple[int | None, str]:
    """The exit code of a `memctl mcp` driven by hand (None: still running after `timeout`,
    then killed) and its stderr."""
    try:
        code = server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
        server.kill()
        server.wait()
    return code, server.stderr.read()


def _end(server: subprocess.Popen) -> None:
    """A `memctl mcp` driven by hand: its stdin closed, as a client that goes away closes it."""
    server.stdin.close()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def test_a_store_moved_away_before_the_watcher_starts_is_not_watched_elsewhere(tmp_path):
    """The server's watcher begins once the client says it has the `initialize` answer. A
    store moved away before then made the watcher start on whatever was at the path: an empty
    folder put there got a `.memctl/` (lock, heartbeat, index), and a store gone at that
    moment was never watched again (a test waiting for the watcher's words timed out). The
    watcher now waits for the store it was opened on, and watches it once it is back."""
    from memctl.disk.watchstate import read_status

    store, away = tmp_path / "store", tmp_path / "away"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    log_path = tmp_path / "mcp-stderr.log"

    def said(words: str) -> bool:
        return words in log_path.read_text()

    with open(log_path, "w") as log:
        server = subprocess.Popen([memctl_executable(), "mcp"], env=subprocess_env(store),
                                  cwd=str(tmp_path), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        # The handshake by hand: the `initialized` notification is sent only once the store
        # is away (an SDK client sends it at once).
        _initialize_by_hand(server)
        os.rename(store, away)
        server.stdin.write(json.dumps({"jsonrpc": "2.0",
                                       "method": "notifications/initialized"}) + "\n")
        server.stdin.flush()
        _wait_for(lambda: said("is gone"), 60, "the watcher's words on the store gone")
        store.mkdir()  # an empty mount point where the store was
        _wait_for(lambda: said("another folder is at"), 60, "the watcher's words on the folder")
        assert sorted(os.listdir(store)) == []  # nothing at all was written into it
        store.rmdir()
        os.rename(away, store)  # back: watched from now on
        _wait_for(lambda: said("the index stays fresh between calls"), 60, "the watcher's start")
        _wait_for(lambda: (status := read_status(store)) is not None and status.live, 60,
                  "a live heartbeat")
        assert read_status(store).pid == server.pid
    finally:
        _end(server)
    assert "Traceback" not in log_path.read_text()
    assert not (tmp_path / "away").exists()


def test_a_request_the_sdk_cannot_read_is_answered_and_changes_nothing(tmp_path):
    """A lone surrogate in a string (`"\\ud800"`: valid JSON, no Unicode text) made the SDK
    drop the whole request without a word: a client waiting for its id waited for ever. It
    now gets a JSON-RPC error for that id, the store is left as it was, and the server goes
    on answering."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    before = tree_snapshot(store)
    server = subprocess.Popen([memctl_executable(), "mcp", "--no-watch"],
                              env=subprocess_env(store), cwd=str(tmp_path), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(line: str) -> dict:
        server.stdin.write(line + "\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], 30)
        assert ready, f"no answer to {line[:80]}"
        return json.loads(server.stdout.readline())

    def call(ident: int, tool: str, arguments: str) -> str:
        return (f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/call", '
                f'"params": {{"name": "{tool}", "arguments": {arguments}}}}}')

    try:
        assert ask(INITIALIZE)["id"] == 1
        server.stdin.write(json.dumps({"jsonrpc": "2.0",
                                       "method": "notifications/initialized"}) + "\n")
        for ident, tool, arguments in ((7, "search", '{"query": "a\\ud800b"}'),
                                       (8, "remember", '{"text": "lone \\udc00 surrogate"}')):
            answer = ask(call(ident, tool, arguments))
            assert answer["id"] == ident and answer["error"]["code"] == -32602, answer
            assert "lone surrogate" in answer["error"]["message"]
        # No JSON: a parse error without an id (JSON-RPC's null), and the server goes on; a
        # blank line between messages is passed over.
        server.stdin.write("\n")
        answer = ask("{not json")
        assert answer["id"] is None and answer["error"]["code"] == -32700, answer
        # Deeper than any JSON reader goes (Python's raised RecursionError, which ended the
        # server): answered by the id at its top level (it was left unanswered), and one
        # whose brackets do not close is no JSON.
        deep = "[" * 5000 + '"]}"' + "]" * 5000  # a string holding brackets, deep down
        answer = ask(f'{{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": '
                     f'{{"a": {deep}}}}}')
        assert answer["id"] == 5 and answer["error"]["code"] == -32600, answer
        answer = ask(f'{{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {deep[:-1]}}}')
        assert answer["id"] is None and answer["error"]["code"] == -32700, answer
        # A number longer than Python converts (4,300 digits), in valid JSON: answered by id.
        answer = ask(call(12, "remember", '{"text": 1' + "0" * 5000 + "}"))
        assert answer["id"] == 12 and answer["error"]["code"] == -32600, answer
        # A request whose id no answer can carry: JSON-RPC's invalid request, with the id
        # null, whether the SDK cannot read it at all (a method that is no string) or reads
        # it as a notification and drops the id (a method it knows), which left the client
        # waiting for ever.
        for ident in ("1.5", "2.0", "true", "null", '{"a": 1}', "[1]"):
            for method in ("3", '"ping"', '"tools/list"'):
                answer = ask(f'{{"jsonrpc": "2.0", "id": {ident}, "method": {method}}}')
                assert answer["id"] is None and answer["error"]["code"] == -32600, \
                    (ident, method, answer)
        # The same with the key spelled in an escape, or beside what Python does not read
        # (thousands of levels, a number of 5,000 digits): the id is found at the top level.
        long_number = "1" + "0" * 5000
        for line in (f'{{"jsonrpc": "2.0", "method": "ping", "params": {{"a": {deep}}}, '
                     f'"id": 0.5}}',
                     '{"jsonrpc": "2.0", "method": "ping", "\\u0069d": 1.5}',
                     f'{{"jsonrpc": "2.0", "method": "ping", "id": {{"a": 1}}, '
                     f'"params": {{"n": {long_number}}}}}',
                     f'{{"jsonrpc": "2.0", "method": "ping", "id": [1], "n": {long_number}}}',
                     f'{{"jsonrpc": "2.0", "method": "ping", "id": [1], "params": {{"a": {deep}}}}}'):
            answer = ask(line)
            assert answer["id"] is None and answer["error"]["code"] == -32600, (line[:60], answer)
        # A notification that holds an "id" below its top level is one: nothing is answered
        # (the next answer is the next request's).
        server.stdin.write('{"jsonrpc": "2.0", "method": "notifications/cancelled", '
                           '"params": {"requestId": 99, "id": 3}}\n')
        answer = ask('{"jsonrpc": "2.0", "id": 11, "method": "ping"}')
        assert answer == {"jsonrpc": "2.0", "id": 11, "result": {}}, answer
        # A batch, which MCP no longer takes: one error with the id null, not silence.
        for batch in ('[{"jsonrpc": "2.0", "id": 13, "method": "ping"}]', "[]"):
            answer = ask(batch)
            assert answer["id"] is None and answer["error"]["code"] == -32600, answer
            assert "batch" in answer["error"]["message"]
        # An id nested in what is no request (a response): nothing is answered.
        server.stdin.write('{"jsonrpc": "2.0", "id": 3, "error": {"method": "x", "id": 4}}\n')
        answer = ask('{"jsonrpc": "2.0", "id": 9, "method": 3}')
        assert answer["id"] == 9 and answer["error"]["code"] == -32600, answer
        answer = ask(call(10, "search", '{"query": "anything"}'))
        assert answer["id"] == 10 and "No entry matches" in answer["result"]["content"][0]["text"]
    finally:
        _end(server)
    assert "Traceback" not in server.stderr.read()
    assert tree_snapshot(store) == before


INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def tool_call(request_id: object, name: str, arguments: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})


@pytest.mark.parametrize("watch", [True, False])
def test_the_requests_read_before_stdin_ends_are_answered(tmp_path, watch):
    """`printf '…' | memctl mcp`: stdin ends right after the requests. The SDK cancels every
    request in flight at the end of its input, so only `initialize` was answered and the
    calls got nothing. Now each request read is answered before the server ends; one the
    client cancelled is not waited for (the server still ends long before its 30 s)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    subprocess.run([memctl_executable(), "add", "the deploy freeze starts on friday"],
                   env=subprocess_env(store), check=True, capture_output=True)
    lines = [INITIALIZE, INITIALIZED, tool_call(2, "search", {"query": "freeze"}),
             tool_call("2", "recall", {"query": "deploy freeze"}),
             tool_call(3, "remember", {"text": "the freeze ends on monday"}),
             tool_call(4, "recall", {"query": "freeze"}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 4}}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": [2]}}),  # no id: passed over
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"})]  # one id twice
    done = subprocess.run([memctl_executable(), "mcp", *([] if watch else ["--no-watch"])],
                          input="\n".join(lines) + "\n", env=subprocess_env(store),
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=25)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    told = [json.loads(line) for line in done.stdout.splitlines()]
    answers = {(type(item["id"]), item["id"]): item for item in told}
    assert {(int, 1), (int, 2), (str, "2"), (int, 3)} <= set(answers), done.stdout
    assert [item["id"] for item in told].count(5) == 2 and [
        item["id"] for item in told].count(4) <= 1, done.stdout
    assert "freeze starts on friday" in answers[(int, 2)]["result"]["content"][0]["text"]
    assert "freeze starts on friday" in answers[(str, "2")]["result"]["content"][0]["text"]
    assert answers[(int, 3)]["result"]["structuredContent"]["action"] == "created"
    assert "the freeze ends on monday" in run_memctl("search", "monday", store=store).stdout


def hold_store_lock(store: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the store's lock for `seconds`: a tool call that writes
    waits for it (MEMCTL_LOCK_TIMEOUT)."""
    script = ("import sys, time\nfrom pathlib import Path\n"
              "from memctl.disk.locking import store_lock\n"
              "with store_lock(Path(sys.argv[1]), 'holder'):\n"
              "    print('locked', flush=True)\n    time.sleep(float(sys.argv[2]))\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(store), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def piped_while_locked(tmp_path: Path, lines: list[str], *, end_wait: str, lock_wait: str,
                       timeout: float) -> subprocess.CompletedProcess:
    """`memctl mcp --no-watch` on a new store, `lines` piped in and stdin closed, while
    another process holds the store lock (a writing call waits `lock_wait` seconds)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    holder = hold_store_lock(store, 30)
    try:
        return subprocess.run([memctl_executable(), "mcp", "--no-watch"],
                              input="\n".join([INITIALIZE, INITIALIZED, *lines]) + "\n",
                              cwd=str(tmp_path), timeout=timeout, capture_output=True, text=True,
                              env=dict(subprocess_env(store), MEMCTL_MCP_END_WAIT=end_wait,
                                       MEMCTL_LOCK_TIMEOUT=lock_wait))
    finally:
        holder.kill()
        holder.wait()


def test_a_call_still_running_when_the_end_wait_is_over_is_told_so(tmp_path):
    """stdin ended while `remember` waited for the store lock: after MEMCTL_MCP_END_WAIT the
    client gets one error answer for it saying the server is ending (it got none: the SDK
    cancels the call, and its thread's answer was dropped), and the server ends when that
    thread has done; every other request is answered once."""
    done = piped_while_locked(tmp_path, [
        tool_call(2, "remember", {"text": "slow note"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})],
        end_wait="1", lock_wait="4", timeout=25)
    store = tmp_path / "store"
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    told = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(str(item["id"]) for item in told) == ["1", "2", "3"], done.stdout
    late = next(item for item in told if item["id"] == 2)
    assert late["error"]["code"] == -32603 and "the server is ending" in late["error"]["message"]
    assert "1 s later" in late["error"]["message"]

    bad = subprocess.run([memctl_executable(), "mcp"], input="", cwd=str(tmp_path),
                         env=dict(subprocess_env(store), MEMCTL_MCP_END_WAIT="soon"),
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: invalid value for MEMCTL_MCP_END_WAIT: 'soon'")
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_a_request_cancelled_by_its_id_in_the_other_type_is_not_waited_for(tmp_path):
    """The SDK takes `"7"` and `7` for one id: a cancellation naming the request by the other
    type cancels it, and it gets no answer. The server waited the whole end wait for it and
    then answered it with an error."""
    done = piped_while_locked(tmp_path, [
        tool_call("7", "remember", {"text": "slow note"}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 7}})],
        end_wait="25", lock_wait="3", timeout=15)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1], done.stdout


@pytest.mark.parametrize("watch", [True, False])
def test_ctrl_c_ends_the_server_at_once_while_a_call_waits(tmp_path, watch):
    """Ctrl-C while `remember` waits for the store lock held by another process: the server
    says `interrupted` and ends with 130 at once (it waited for the call's thread, up to the
    lock's whole timeout)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    holder = hold_store_lock(store, 120)
    server = subprocess.Popen([memctl_executable(), "mcp", *([] if watch else ["--no-watch"])],
                              env=dict(subprocess_env(store), MEMCTL_LOCK_TIMEOUT="100"),
                              cwd=str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    heartbeat = store / ".memctl" / "watch.json"
    try:
        _initialize_by_hand(server)
        server.stdin.write(INITIALIZED + "\n" + tool_call(2, "remember", {"text": "x y"}) + "\n")
        server.stdin.flush()
        deadline = time.monotonic() + 20
        while watch and not heartbeat.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heartbeat.exists() == watch
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=20)
    finally:
        for process in (server, holder):
            if process.poll() is None:
                process.kill()
                process.wait()
    errors = server.stderr.read()
    assert code == 130 and "error: interrupted" in errors and "Traceback" not in errors, errors
    assert not heartbeat.exists(), "the server's watcher heartbeat is left behind"


def test_a_client_that_closes_stdout_and_keeps_writing_gets_no_traceback(tmp_path):
    """stdout closed before anything was answered, then requests written 10 ms apart with
    stdin open: the server ends with 0 and says nothing (a line the stdin thread handed over
    as the event loop ended was logged as a cancelled task's traceback, in some of the runs:
    a race, so five runs)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    for _ in range(5):
        read_end, write_end = os.pipe()
        server = subprocess.Popen([memctl_executable(), "mcp", "--no-watch"],
                                  env=subprocess_env(store), cwd=str(tmp_path),
                                  stdin=subprocess.PIPE, stdout=write_end, stderr=subprocess.PIPE)
        os.close(write_end)
        os.close(read_end)
        try:
            for number, line in enumerate([INITIALIZE, INITIALIZED, *(
                    json.dumps({"jsonrpc": "2.0", "id": k, "method": "ping"})
                    for k in range(2, 60))]):
                if server.poll() is not None:
                    break
                with contextlib.suppress(BrokenPipeError):
                    server.stdin.write((line + "\n").encode())
                    server.stdin.flush()
                time.sleep(0.01 if number else 0)
            code = server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            with contextlib.suppress(BrokenPipeError):
                server.stdin.close()
        errors = server.stderr.read().decode()
        assert code == 0, errors
        assert not [line for line in errors.splitlines() if "memctl mcp:" not in line], errors


def test_a_client_that_closes_stdout_ends_the_server_quietly(tmp_path):
    """A client gone before its answer is written (stdout closed): the server ends with 0 and
    nothing but its start line on stderr, not a traceback of the broken pipe."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    server = subprocess.Popen([memctl_executable(), "mcp", "--no-watch"],
                              env=subprocess_env(store), cwd=str(tmp_path), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _initialize_by_hand(server)
        server.stdout.close()
        server.stdin.write(INITIALIZED + "\n" + tool_call(2, "recall", {"query": "x"}) + "\n")
        server.stdin.close()
    finally:
        code, errors = _exit_of(server)
    assert code == 0 and "Traceback" not in errors and "Error" not in errors, errors


@pytest.mark.parametrize("watch", [False, True])
def test_ctrl_c_ends_the_server_at_once(tmp_path, watch):
    """Ctrl-C (SIGINT) in the terminal that runs `memctl mcp`: it says `interrupted` and ends
    with 130, as every command does. A thread waiting for the client's next line held the
    end of the event loop, so the server hung until the client wrote again."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    server = subprocess.Popen([memctl_executable(), "mcp", *([] if watch else ["--no-watch"])],
                              env=subprocess_env(store), cwd=str(tmp_path), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _initialize_by_hand(server)
        server.stdin.write(json.dumps({"jsonrpc": "2.0",
                                       "method": "notifications/initialized"}) + "\n")
        server.stdin.flush()
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
    finally:
        code, errors = _exit_of(server)
    assert code == 130, errors
    assert "error: interrupted" in errors and "Traceback" not in errors, errors


def test_an_index_made_by_a_newer_memctl_while_serving_is_one_error_and_left_as_it_is(tmp_path):
    """A server started before an upgrade, after the new memctl made the index for its new
    schema: each call says so in one line and leaves the index as it is (rebuilding it for
    the old schema made the new memctl rebuild it back at its next command, over and over)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    index_file = store / ".memctl" / "index.sqlite"

    def versions() -> dict[str, str]:
        conn = sqlite3.connect(index_file)
        try:
            return dict(conn.execute("SELECT key, value FROM meta"))
        finally:
            conn.close()

    async def script(session) -> dict:
        added = await session.call_tool("remember", {"text": "The deploy freeze starts on "
                                                             "Friday"})
        assert not added.is_error
        conn = sqlite3.connect(index_file)
        with conn:
            conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'schema'")
        conn.close()
        newer = versions()
        for tool, arguments in [("search", {"query": "freeze"}), ("recall", {}),
                                ("remember", {"text": "The release train leaves on Monday"})]:
            result = await session.call_tool(tool, arguments)
            message = result.content[0].text
            assert result.is_error and "\n" not in message, (tool, message)
            assert "the index was made by a newer memctl (schema " in message, (tool, message)
        # A hand edit meanwhile: the server's own watcher writes nothing into that index.
        (store / "demo" / "notes" / "fact" / "by-hand.md").write_text("The wombat flag.\n")
        log = tmp_path / "mcp-stderr.log"
        with anyio.fail_after(30):
            while "This watcher writes nothing to it meanwhile" not in log.read_text():
                await anyio.sleep(0.05)
        await anyio.sleep(1.0)  # (a batch applied would be written by now)
        conn = sqlite3.connect(index_file)
        try:
            written = conn.execute("SELECT count(*) FROM files WHERE path LIKE '%by-hand%'"
                                   ).fetchone()[0]
        finally:
            conn.close()
        return {"newer": newer, "after": versions(), "written": written, "files": sorted(
            path.name for path in (store / "demo" / "notes" / "fact").iterdir())}

    outcome = run_session(store, script)
    assert outcome["after"] == outcome["newer"]
    assert outcome["written"] == 0
    assert len(outcome["files"]) == 2  # the refused `remember` wrote nothing (the hand one)
    assert "Traceback" not in (tmp_path / "mcp-stderr.log").read_text()


def test_an_edit_of_memctl_toml_is_honoured_by_the_next_call_and_a_broken_one_refused(tmp_path):
    """The settings are read again when memctl.toml changes while the server runs, as a CLI
    command run then would read them: a new value is used, a value out of range or a file
    that does not parse is one error naming it, and the fixed file is used again."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    settings = store / "memctl.toml"

    async def script(session) -> dict:
        for text in ("The API listens on port 8080", "Deploys happen on Tuesdays",
                     "The cache is Redis 7"):
            assert not (await session.call_tool("remember", {"text": text})).is_error
        seen = {}
        seen["before"] = (await session.call_tool("recall", {})).structured_content
        settings.write_text("[recall]\nmax_notes = 1\n")
        seen["one"] = (await session.call_tool("recall", {})).structured_content
        settings.write_text("[recall]\nmax_notes = -1\n")
        seen["range"] = await session.call_tool("recall", {})
        settings.write_text("[recall\nmax_notes = ")
        seen["broken"] = [await session.call_tool(tool, arguments) for tool, arguments in
                          (("recall", {}), ("remember", {"text": "Logs go to Loki"}))]
        settings.write_text("[recall]\nmax_notes = 2  # two\n")
        seen["fixed"] = (await session.call_tool("recall", {})).structured_content
        return seen

    seen = run_session(store, script)
    assert len(seen["before"]["notes"]) == 3
    assert len(seen["one"]["notes"]) == 1 and seen["one"]["budget"]["max_notes"] == 1
    message = seen["range"].content[0].text
    assert seen["range"].is_error and "recall.max_notes" in message and "\n" not in message
    for result in seen["broken"]:
        message = result.content[0].text
        assert result.is_error and "memctl.toml does not parse" in message, message
        assert "\n" not in message
    assert len(seen["fixed"]["notes"]) == 2
    assert "Traceback" not in (tmp_path / "mcp-stderr.log").read_text()


def test_resources_list_each_projects_files_and_read_notes_by_id(mcp):
    from mcp_types import ResourceListChangedNotification

    listed_before = {str(r.uri) for r in mcp.portal.call(mcp.session.list_resources).resources}
    assert "memctl://projects/fresh/MEMORY.md" not in listed_before
    seen = len(mcp.notifications)
    mcp.ok("project_memory", {"action": "add", "section": "decisions", "text": "Use SQLite",
                              "project": "fresh"})
    _wait_for(lambda: any(isinstance(m, ResourceListChangedNotification)
                          for m in mcp.notifications[seen:]))
    resources = {str(r.uri): r for r in mcp.portal.call(mcp.session.list_resources).resources}
    memory = resources["memctl://projects/fresh/MEMORY.md"]
    assert memory.mime_type == "text/markdown" and memory.title
    read = mcp.read("memctl://projects/fresh/MEMORY.md")
    assert "Use SQLite" in read.contents[0].text

    seen = len(mcp.notifications)
    mcp.ok("update_scratchpad", {"action": "focus", "text": "Pick a database", "project": "fresh"})
    _wait_for(lambda: any(isinstance(m, ResourceListChangedNotification)
                          for m in mcp.notifications[seen:]))
    assert "Pick a database" in mcp.read("memctl://projects/fresh/SCRATCHPAD.md").contents[0].text

    templates = {t.uri_template for t in
                 mcp.portal.call(mcp.session.list_resource_templates).resource_templates}
    assert templates >= {"memctl://notes/{id}", "memctl://projects/{project}/MEMORY.md",
                         "memctl://projects/{project}/SCRATCHPAD.md"}
    _, note = mcp.ok("remember", {"text": "Resources are read by id", "project": "fresh"})
    read = mcp.read(f"memctl://notes/{note['id']}")
    assert "Resources are read by id" in read.contents[0].text and note["id"] in read.contents[0].text

    from mcp.shared.exceptions import MCPError

    for uri in ("memctl://notes/zzzzzzzz", "memctl://notes/..%2F..%2Fetc%2Fpasswd",
                "memctl://notes/a%20b", "memctl://projects/nosuch/MEMORY.md",
                "memctl://projects/..%2F..%2Fetc/MEMORY.md"):
        with pytest.raises(MCPError) as refused:
            mcp.read(uri)
        assert "Traceback" not in str(refused.value), uri


def test_prompts_start_end_and_consolidate(mcp):
    prompts = {p.name: p for p in mcp.portal.call(mcp.session.list_prompts).prompts}
    assert set(prompts) >= {"session_start", "end_of_task", "consolidate"}
    assert all(p.title and p.description for p in prompts.values())

    _, rule = mcp.ok("remember", {"text": "Always run the migrations on a copy first",
                                  "type": "rule", "project": "prompts"})
    started = mcp.prompt("session_start", {"task": "migrations", "project": "prompts"})
    text = started.messages[0].content.text
    assert rule["id"] in text and "migrations" in text and "`remember`" in text

    mcp.ok("update_scratchpad", {"action": "focus", "text": "Write the migration",
                                 "project": "prompts"})
    ended = mcp.prompt("end_of_task", {"outcome": "partial", "project": "prompts"})
    text = ended.messages[0].content.text
    assert "`add_episode`" in text and "partial" in text and "Write the migration" in text

    _, first = mcp.ok("remember", {"text": "The cache server listens on port 6379",
                                   "project": "prompts"})
    _, second = mcp.ok("remember", {"text": "The cache server listens on port 6380",
                                    "project": "prompts"})
    _, review = mcp.ok("review", {"project": "prompts"})
    pairs = {frozenset((p["a"]["id"], p["b"]["id"])) for p in review["contradictions"]}
    assert frozenset((first["id"], second["id"])) in pairs
    consolidated = mcp.prompt("consolidate", {"project": "prompts"})
    text = consolidated.messages[0].content.text
    assert first["id"] in text and second["id"] in text and "`supersede`" in text

    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError, match="not a project name"):
        mcp.prompt("session_start", {"task": "x", "project": "../etc"})


def test_a_prompt_argument_misspelt_or_missing_is_one_line_naming_it(mcp):
    """As for tools: an argument a prompt does not take is refused naming it and the ones it
    takes, a required one left out is named; an "invalid params" error, no traceback in the
    server's log."""
    from mcp.shared.exceptions import MCPError

    log = mcp.store.parent / "mcp-stderr.log"
    logged = len(log.read_text())
    cases = [
        ("session_start", {"task": "deploy", "projct": "blog"},
         "the `session_start` prompt takes no argument `projct`; it takes `task`, `project`"),
        ("consolidate", {"all": "true"},
         "the `consolidate` prompt takes no argument `all`; it takes `project`"),
        ("end_of_task", {"outcome": "partial", "task": "x"},
         "the `end_of_task` prompt takes no argument `task`; it takes `outcome`, `project`"),
        ("session_start", {}, "`task` is required: the `session_start` prompt takes `task`, "
                              "`project`"),
        ("session_stat", {"task": "x"}, "there is no prompt `session_stat`; the prompts are "
                                        "`session_start`, `end_of_task`, `consolidate`"),
    ]
    for prompt, arguments, message in cases:
        with pytest.raises(MCPError) as refused:
            mcp.prompt(prompt, arguments)
        assert refused.value.error.message == message, (prompt, arguments)
        assert refused.value.error.code == -32602  # invalid params
    assert "Traceback" not in log.read_text()[logged:]


def _wait_for(condition, limit: float = 30.0, what: str = "the notification") -> None:
    """Until `condition()` holds: notifications arrive on the client's own task. The limit is
    a safety net for a broken server, not a measure of speed."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.02)


# --- streamable HTTP ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def http_server(store: Path, port: int, extra_env: dict[str, str] | None = None, *,
                stderr: object = subprocess.PIPE, preexec_fn: object = None):
    process = subprocess.Popen(
        [memctl_executable(), "mcp", "--http", "--port", str(port)],
        env={**subprocess_env(store), **(extra_env or {})}, stdout=subprocess.PIPE,
        stderr=stderr, text=True, preexec_fn=preexec_fn)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP server never listened"
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_call(url: str, token: str | None, script) -> object:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main():
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(url, http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await script(session)

    return anyio.run(main)


def test_the_http_port_answers_only_once_the_token_is_on_disk(tmp_path):
    """The server listened before it made its token: a client connecting as soon as the
    port answered (as scripts and these tests do) found no `.memctl/mcp-token` to read (a
    full test run on a loaded machine failed so). The port is bound first and listens only
    once the token is written: every first connection finds it."""
    store = tmp_path / "store"  # its own: the module's store keeps the token it made
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    token_file = store / ".memctl" / "mcp-token"
    for _ in range(3):
        token_file.unlink(missing_ok=True)
        port = free_port()
        process = subprocess.Popen([memctl_executable(), "mcp", "--http", "--port", str(port)],
                                   env=subprocess_env(store), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:  # no pause between tries: the first moment the port answers
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert process.poll() is None and time.monotonic() < deadline
            assert token_file.is_file()
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_http_transport_serves_several_clients_behind_a_token(mcp):
    import httpx2

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with http_server(mcp.store, port) as process:
        token_file = mcp.store / ".memctl" / "mcp-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()

        async def remember(session):
            result = await session.call_tool("remember", {"text": "HTTP clients share the "
                                                                  "store", "project": "web"})
            tools = (await session.list_tools()).tools
            return result, {tool.name for tool in tools}

        result, tools = http_call(url, token, remember)
        assert not result.is_error and tools >= EXPECTED_TOOLS
        note_id = result.structured_content["id"]
        _, seen = mcp.ok("show", {"id": note_id})  # the stdio client sees the HTTP client's note
        assert seen["note"]["project"] == "web"

        for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"},
                        {"Authorization": f"Basic {token}"}):
            refused = httpx2.post(url, headers={**headers, "Accept": "application/json, "
                                                "text/event-stream"},
                                  json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401 and "Bearer" in refused.headers["www-authenticate"]
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's error for a 401
            http_call(url, None, remember)
        # With the token but through a name that is not this machine's (DNS rebinding).
        rebound = httpx2.post(url, headers={"Authorization": f"Bearer {token}",
                                            "Host": f"evil.example:{port}",
                                            "Accept": "application/json, text/event-stream"},
                              json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert rebound.status_code in (400, 403, 421), rebound.status_code
    assert token in process.stderr.read()  # made now: printed once for the user

    # A token from the environment instead of the file, on a second start.
    port = free_port()
    with http_server(mcp.store, port, {"MEMCTL_MCP_TOKEN": "env-token-0123456789abcdef"}):
        async def count(session):
            return (await session.call_tool("list_notes", {"project": "web"})).structured_content

        listed = http_call(f"http://127.0.0.1:{port}/mcp", "env-token-0123456789abcdef", count)
        assert note_id in {row["id"] for row in listed["notes"]}
    assert token_file.read_text().strip() == token  # the file token is left as it was


def test_http_takes_a_loopback_host_header_without_a_port(mcp):
    """A client of `--port 80` sends `Host: 127.0.0.1` (no port, the scheme's default); the
    rebinding check allowed only `NAME:PORT`, so every request of such a client got 421."""
    import httpx2

    port = free_port()
    with http_server(mcp.store, port):
        token = (mcp.store / ".memctl" / "mcp-token").read_text().strip()
        for host, origin in (("127.0.0.1", None), ("localhost", "http://localhost"),
                             ("[::1]", None), ("evil.example", None),
                             ("127.0.0.1", "http://evil.example")):
            headers = {"Authorization": f"Bearer {token}", "Host": host,
                       "Accept": "application/json, text/event-stream"}
            if origin:
                headers["Origin"] = origin
            answer = httpx2.post(f"http://127.0.0.1:{port}/mcp", headers=headers,
                                 json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": {"protocolVersion": "2025-06-18",
                                                  "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "1"}}})
            evil = "evil" in host or "evil" in (origin or "")
            assert (answer.status_code in (403, 421)) == evil, (host, origin, answer.status_code)


def test_http_client_gone_in_the_middle_of_its_body_leaves_no_traceback(mcp):
    """Each client that dropped its connection half-way through a request body used to print
    a 40-line traceback (`ClientDisconnect`) on the server's stderr, drawn on the event loop."""
    port = free_port()
    with http_server(mcp.store, port) as process:
        token = (mcp.store / ".memctl" / "mcp-token").read_text().strip()
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port)) as dropped:
                dropped.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                f"Authorization: Bearer {token}\r\n"
                                "Content-Type: application/json\r\n"
                                "Accept: application/json, text/event-stream\r\n"
                                "Content-Length: 1000\r\n\r\n{".encode())
                time.sleep(0.2)

        async def ping(session):
            return await session.send_ping()

        http_call(f"http://127.0.0.1:{port}/mcp", token, ping)  # still serving
    errors = process.stderr.read()
    assert "Traceback" not in errors and "ClientDisconnect" not in errors, errors


def test_http_closes_a_connection_that_never_finishes_its_headers(mcp):
    """A client that sends half a request's headers and nothing more held its connection
    (and a file descriptor) for as long as it liked: a few hundred such left no room for
    the real clients. It is closed once HEADER_SECONDS pass without the whole headers."""
    from memctl.mcp_server import HEADER_SECONDS

    port = free_port()
    with http_server(mcp.store, port):
        token = (mcp.store / ".memctl" / "mcp-token").read_text().strip()
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
            slow.settimeout(HEADER_SECONDS + 20)
            started = time.monotonic()
            assert slow.recv(1024) == b""  # closed by the server (a timeout raises here)
            assert time.monotonic() - started >= HEADER_SECONDS - 1

        async def ping(session):
            return await session.send_ping()

        http_call(f"http://127.0.0.1:{port}/mcp", token, ping)  # a whole request is served


def test_http_closes_a_connection_answered_once_that_never_finishes_its_next_headers(mcp):
    """uvicorn's keep-alive wait stops at the first byte of the next request: a client that
    was answered once (a 401 needs no token) and then sent half a request held its connection
    for ever, as the timer from the connection's start looked at the first request only."""
    from memctl.mcp_server import HEADER_SECONDS

    port = free_port()
    with http_server(mcp.store, port), socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        slow.settimeout(10)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += slow.recv(4096)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += slow.recv(4096)
        slow.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        slow.settimeout(HEADER_SECONDS + 20)
        started = time.monotonic()
        assert slow.recv(1024) == b""  # closed by the server (a timeout raises here)
        assert time.monotonic() - started >= HEADER_SECONDS - 1


def test_http_refuses_a_host_other_machines_can_reach(store_path):
    result = run_memctl("mcp", "--http", "--host", "0.0.0.0", "--port", str(free_port()),
                        store=store_path)
    assert result.exit_code == 2
    assert "not a loopback address" in result.stderr and "--allow-remote" in result.stderr
    assert not (store_path / ".memctl" / "mcp-token").exists()
    short = run_memctl("mcp", "--http", "--port", str(free_port()), store=store_path,
                       env={"MEMCTL_MCP_TOKEN": "short"})
    assert short.exit_code == 1 and "MEMCTL_MCP_TOKEN" in short.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run_memctl("mcp", "--http", "--port", str(taken.getsockname()[1]),
                          store=store_path)
    assert busy.exit_code == 1 and "cannot listen" in busy.stderr and "--port" in busy.stderr
    assert not (store_path / ".memctl" / "mcp-token").exists()  # no token for a dead server
    assert "Traceback" not in short.stderr + result.stderr + busy.stderr


def test_a_token_file_others_can_read_is_refused(store_path):
    token_file = store_path / ".memctl" / "mcp-token"
    token_file.parent.mkdir(exist_ok=True)
    token_file.write_text("readable-by-everyone-0123456789\n")
    token_file.chmod(0o644)
    result = run_memctl("mcp", "--http", "--port", str(free_port()), store=store_path)
    assert result.exit_code == 1 and "chmod 600" in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "folder", "not-utf8", "one-long-line"])
def test_a_token_file_that_cannot_be_a_token_is_one_error_line(store_path, kind):
    """A FIFO in the token file's place used to hang the server for good (its port taken,
    nothing said), a folder gave the disk-full message, bytes that are not UTF-8 a traceback,
    and a file of one endless line was read whole: each is now one error naming the file."""
    token_file = store_path / ".memctl" / "mcp-token"
    token_file.parent.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(token_file, 0o600)
    elif kind == "folder":
        token_file.mkdir(mode=0o700)
    else:
        token_file.write_bytes(b"\xff\xfe" + b"a" * 40 + b"\n" if kind == "not-utf8"
                               else b"a" * 100_000)
        token_file.chmod(0o600)
    result = run_memctl("mcp", "--http", "--port", str(free_port()), store=store_path, timeout=30)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "mcp-token" in result.stderr
    assert "delete it" in result.stderr


@pytest.mark.parametrize("written", ["a", "tiny-token", "has a space in it, long enough"])
def test_a_token_file_is_held_to_the_rule_of_the_environments_token(store_path, written):
    """MEMCTL_MCP_TOKEN must have 16 characters and no spaces; a hand-written token file
    holding `a` used to be served as is, so `Authorization: Bearer a` opened the store."""
    token_file = store_path / ".memctl" / "mcp-token"
    token_file.parent.mkdir(exist_ok=True)
    token_file.write_text(written + "\n")
    token_file.chmod(0o600)
    result = run_memctl("mcp", "--http", "--port", str(free_port()), store=store_path, timeout=30)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "mcp-token" in result.stderr
    assert "delete it" in result.stderr


def test_missing_sdk_gives_an_install_hint(store_path, tmp_path):
    fake = tmp_path / "fake"
    (fake / "mcp").mkdir(parents=True)
    (fake / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = {**server_env(store_path), "PYTHONPATH": str(fake), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [memctl_executable(), "mcp"], capture_output=True, text=True, env=env, input="", timeout=60
    )
    assert result.returncode == 1
    assert "pip install 'memctl-md[mcp]'" in result.stderr
    assert result.stdout == ""


def test_a_correction_keeps_its_note_and_stale_matches_are_counted(mcp):
    project = "corrections"
    _, wrong = mcp.ok("remember", {"text": "Staging listens on port 5432; zebra backups nightly",
                                   "project": project})
    text, fix = mcp.ok("remember", {"text": "Staging listens on port 6432, not 5432",
                                    "type": "correction", "corrects": wrong["id"],
                                    "project": project})
    assert fix["corrects"] == wrong["id"] and fix["superseded"] == []
    assert "stays active" in text
    _, found = mcp.ok("search", {"query": "zebra", "project": project})
    assert [hit["id"] for hit in found["hits"]] == [fix["id"], wrong["id"]]
    assert found["stale_matches"] == 0
    mcp.ok("update_note", {"id": wrong["id"], "subject": "staging", "predicate": "port"})
    text, exact = mcp.ok("get", {"subject": "staging", "predicate": "port", "project": project})
    assert [(n["id"], n["corrected_by"]) for n in exact["notes"]] == [(wrong["id"], [fix["id"]])]
    assert f"corrected by `{fix['id']}`" in text
    mcp.ok("supersede", {"old_id": wrong["id"], "new_id": fix["id"]})
    text, gone = mcp.ok("search", {"query": "zebra", "project": project})
    assert gone["hits"] == [] and gone["stale_matches"] == 1
    assert "1 stale" in text and "include_stale" in text


def test_a_search_that_finds_nothing_here_names_the_matches_of_other_projects(mcp):
    mcp.ok("remember", {"text": "The quokka enclosure is fed at noon", "project": "zoo-east"})
    text, found = mcp.ok("search", {"query": "quokka", "project": "zoo-west"})
    assert found["hits"] == [] and found["other_project_matches"] == 1
    assert found["stale_matches"] == 0
    assert "Other projects hold 1 matching entry: all_projects shows them" in text
    _, everywhere = mcp.ok("search", {"query": "quokka", "all_projects": True})
    assert len(everywhere["hits"]) == 1 and everywhere["other_project_matches"] == 0
    _, there = mcp.ok("search", {"query": "quokka", "project": "zoo-east"})
    assert len(there["hits"]) == 1 and there["other_project_matches"] == 0


def test_a_search_repeats_no_more_than_the_start_of_a_long_query(mcp):
    """A 1 MB query (one word after another) is answered, its hits found by its first
    words, and the answer repeats only the query's first 200 characters, in the text and
    in the structured content: the whole query came back twice."""
    mcp.ok("remember", {"text": "The wombat burrow is checked weekly", "project": "zoo-north"})
    query = "wombat " + " ".join(f"filler{number}" for number in range(120_000))
    assert len(query) > 1_000_000
    text, found = mcp.ok("search", {"query": query, "project": "zoo-north"})
    assert [hit["title"] for hit in found["hits"]] == ["The wombat burrow is checked weekly"]
    assert found["truncated"] is True and found["query"] == query[:200] + "…"
    assert len(text) < 2_000 and repr(query[:200] + "…") in text
    short = "wombat burrow"
    text, found = mcp.ok("search", {"query": short, "project": "zoo-north"})
    assert found["query"] == short and repr(short) in text


def test_what_an_agent_sends_too_much_of_is_one_short_line_and_changes_nothing(mcp):
    """Found by driving the server as a careless agent would: each of these is refused in one
    line that quotes at most the start of what was sent, and the store stays as it was."""
    project = "too-much"
    note = mcp.ok("remember", {"text": "The kiln runs at 1200 degrees", "project": project})[1]
    before, head = tree_snapshot(mcp.store), git(mcp.store, "rev-parse", "HEAD")
    huge = "lorem ipsum " * 100_000
    cases = [
        # ~1,000 tags passed SQLite's expression depth: a traceback.
        ("search", {"query": "kiln", "tags": [f"t{n}" for n in range(991)]}, "a search takes at most 100"),
        ("search", {"query": "kiln", "tags": [f"t{n}" for n in range(101)]}, "`tag`"),
        ("list_notes", {"sort": huge}, "`sort`"),
        ("list_notes", {"since": huge}, "`since`"),
        ("update_scratchpad", {"action": huge, "project": project}, "`action`"),
        ("restore", {"id": "../x"}, "is not an id"),  # the only id tool without the check
        ("restore", {"id": "x" * 1_000_000}, "`id`"),
        ("add_episode", {"goal": "g", "outcome": "completed", "project": project,
                         "links": [note["id"]] * 101}, "at most 100"),
        ("remember", {"text": "\u200b\u200d\ufeff\u202e", "project": project}, "empty"),
    ]
    for tool, arguments, said in cases:
        message = mcp.error(tool, arguments)
        assert said in message and len(message) < 500, (tool, message[:300])
    assert tree_snapshot(mcp.store) == before and git(mcp.store, "rev-parse", "HEAD") == head


def test_memory_md_the_scratchpad_and_an_episode_stop_at_1_mb_however_they_grow(mcp):
    """Items of 300 KB added one by one: each file stops short of 1 MB, as a note and a
    MEMORY.md replaced whole do (a scratchpad of 15 MB was made so, which the index refused)."""
    project = "grows"
    item = "y" * 300_000
    for tool, arguments in (
            ("project_memory", {"action": "add", "section": "lessons", "text": item,
                                "project": project}),
            ("update_scratchpad", {"action": "note", "text": item, "project": project})):
        for _ in range(3):
            mcp.ok(tool, arguments)
        message = mcp.error(tool, arguments)
        assert "larger than 1024 KB" in message, message
    started = mcp.ok("add_episode", {"goal": "grow", "outcome": "in_progress",
                                     "project": project})[1]
    for _ in range(3):
        mcp.ok("update_episode", {"id": started["id"], "steps": [f"{item} => ok"]})
    message = mcp.error("update_episode", {"id": started["id"], "steps": [f"{item} => ok"]})
    assert "larger than 1024 KB" in message, message
    for path in mcp.store.rglob("*.md"):
        assert path.stat().st_size <= 1024 * 1024, path


def test_a_long_recall_query_leaves_the_notes_in_the_block(mcp):
    """A query of 7,000 characters took the whole budget in the block's heading, and the five
    notes it matched were left out; the heading and the JSON now repeat 200 characters."""
    project = "long-ask"
    for number in range(5):
        mcp.ok("remember", {"text": f"The blog deploy step {number} uses blue-green", "project": project,
                            "force": True})
    text, data = mcp.ok("recall", {"query": "blog " * 1_400, "project": project})
    assert data["omitted"] == 0 and text.count("blue-green") == 5, text[:500]
    assert len(data["query"]) == 201 and data["query"].endswith("…")


def test_show_names_the_links_of_an_imported_note(mcp, tmp_path):
    """A [[wikilink]] between two imported notes: `show` names the linked id in its text
    (the body keeps only the title), as `memctl show` does (docs/sync.md)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Payments.md").write_text("Payments are settled through [[Ledger]].\n")
    (vault / "Ledger.md").write_text("The ledger is append-only.\n")
    run = run_memctl("import", str(vault), "--json", store=mcp.store, project="linked",
                     env={"MEMCTL_NOW": PINNED_NOW})
    assert run.exit_code == 0, run.stderr
    _, listed = mcp.ok("list_notes", {"project": "linked"})
    ids = {row["title"]: row["id"] for row in listed["notes"]}
    text, shown = mcp.ok("show", {"id": ids["Payments"]})
    assert shown["note"]["links"] == [ids["Ledger"]]
    assert ids["Ledger"] in text


def test_show_and_the_note_resource_say_an_ambiguous_prefix_is_ambiguous(mcp):
    # A prefix that starts an episode's id and a note's: the one episode is not shown.
    from mcp.shared.exceptions import MCPError

    # Dropped by hand (ids chosen so that the prefix is this note's and this episode's only,
    # whatever else the module's store holds): the server reads them at its next call.
    note, episode, prefix = "01m9qqqqqqqqaaaa", "01m9qqqqqqqqbbbb", "01m9qqqqqqqq"
    stamp = "created: 2026-11-30T08:00:00.000Z\nupdated: 2026-11-30T08:00:00.000Z\n"
    (mcp.store / "prefixes" / "notes" / "fact").mkdir(parents=True, exist_ok=True)
    (mcp.store / "prefixes" / "notes" / "fact" / f"beside-{note}.md").write_text(
        f"---\nid: {note}\ntype: fact\n{stamp}---\nA note beside an episode\n")
    (mcp.store / "prefixes" / "episodes" / "2026-11").mkdir(parents=True, exist_ok=True)
    (mcp.store / "prefixes" / "episodes" / "2026-11" / f"2026-11-30-beside-{episode}.md").write_text(
        f"---\nid: {episode}\ntype: episode\nproject: prefixes\ngoal: An episode beside a "
        f"note\noutcome: completed\n{stamp}---\n# An episode beside a note\n")
    message = mcp.error("show", {"id": prefix})
    assert f"id prefix {prefix!r} is ambiguous" in message
    with pytest.raises(MCPError) as refused:
        mcp.read(f"memctl://notes/{prefix}")
    assert "ambiguous" in str(refused.value)
    _, whole = mcp.ok("show", {"id": episode})
    assert episode in str(whole)


def test_a_note_that_does_not_parse_is_said_so_by_the_resource_and_the_review(mcp):
    """The note resource showed a broken note's last good fields as if it were well, without
    its problem or text; `review` said "Nothing to tidy." while its structured problems
    named the file."""
    _, added = mcp.ok("remember", {"text": "The numbat queue drains hourly",
                                   "project": "brokenres"})
    path = mcp.store / added["path"]
    good = path.read_text()
    path.write_text(good.replace("type: fact", "type: [fact", 1))
    try:
        [content] = mcp.read(f"memctl://notes/{added['id']}").contents
        assert "front matter does not parse" in content.text
        assert "the file as it is" in content.text and "type: [fact" in content.text
        text, review = mcp.ok("review", {"project": "brokenres"})
        assert any(problem["kind"] == "parse_errors" for problem in review["problems"])
        assert "Problems of the whole store" in text and "Nothing to tidy." not in text
        text, found = mcp.ok("search", {"query": "numbat", "project": "brokenres"})
        assert [hit["id"] for hit in found["hits"]] == [added["id"]]  # its last good version
        assert "Files that do not parse" in text and added["path"] in text
    finally:
        path.write_text(good)
    text, review = mcp.ok("review", {"project": "brokenres"})
    assert not any(problem["kind"] == "parse_errors" for problem in review["problems"])


def test_the_review_names_the_note_a_recall_left_out_as_a_secret(mcp):
    """`recall` left a note out as a likely secret, "the `review` tool lists it", but the
    review said only "likely secrets: 1" and sent the model to `memctl health`, a command it
    cannot run: each problem now names its files (masked), in the text and in `places`."""
    token = "ghp_" + "z9Y8x7W6v5U4t3S2r1Q0" * 2
    _, added = mcp.ok("remember", {"text": f"The yak deploy token is {token}",
                                   "project": "yakreview", "allow_secret": True})
    try:
        text, recalled = mcp.ok("recall", {"project": "yakreview"})
        assert recalled["secrets_left_out"] == 1 and "the `review` tool lists it" in text
        text, review = mcp.ok("review", {"project": "yakreview"})
        [secrets] = [problem for problem in review["problems"] if problem["kind"] == "secrets"]
        assert any(place.startswith(added["path"] + ":") for place in secrets["places"])
        assert added["path"] in text and "ghp_****" in text
        assert token not in text and "memctl health" not in text
    finally:
        mcp.ok("forget", {"id": added["id"]})


def test_an_id_with_two_dots_is_refused_by_the_schema_and_the_message_says_why(mcp):
    """The schema's id pattern took `a..b`, which the tool then refused as "not an id
    (letters, digits, '.', '_', '-')": letters and dots only, so the model could not tell
    what was wrong. The pattern now states the rule, and the message names `..`."""
    import re

    pattern = mcp.tools["show"].input_schema["properties"]["id"]["pattern"]
    assert re.search(pattern, "a..b") is None and re.search(pattern, "a.b")
    links = mcp.tools["add_episode"].input_schema["properties"]["links"]["items"]["pattern"]
    assert re.search(links, "x..") is None
    text = mcp.error("show", {"id": "a..b"})
    assert "'a..b' is not an id" in text and "'..'" in text, text


def test_forget_names_the_notes_left_superseded_and_the_tool_that_brings_one_back(mcp):
    """The forgotten note had superseded another and had no successor: the older note stays
    superseded, and the result says so, naming the `restore` tool (never a CLI command)."""
    old = mcp.ok("remember", {"text": "The kilo service stores its data in MySQL 5",
                              "project": "kilo"})[1]["id"]
    new = mcp.ok("remember", {"text": "The kilo service moved its data to PostgreSQL 16",
                              "project": "kilo", "force": True})[1]["id"]
    mcp.ok("supersede", {"old_id": old, "new_id": new})
    text, data = mcp.ok("forget", {"id": new})
    assert data["left_superseded"] == [old] and data["repointed"] == []
    assert old in text and "the `restore` tool" in text and "memctl" not in text


def test_a_store_without_git_names_memctl_init_as_a_command_for_the_user(tmp_path):
    """A write to a store whose `.git` went names `memctl init` the way every message to a
    model names a CLI command (a command for the user to run), not as if the model could run
    it; the CLI still prints the command as it is."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    (store / ".git").rename(tmp_path / "git-away")

    async def script(session) -> tuple[bool, str]:
        result = await session.call_tool("remember", {"text": "Sierra has no git"})
        return result.is_error, result.content[0].text

    is_error, text = run_session(store, script)
    assert is_error
    assert f"`memctl init {store}` (a command for the user to run)" in text, text
    cli = run_memctl("add", "Tango has no git", store=store, env=subprocess_env(store))
    assert cli.exit_code == 1
    assert f"run `memctl init {store}` to make one" in cli.stderr, cli.stderr


def test_a_secret_in_a_step_or_a_tag_names_the_argument_and_the_item(mcp):
    """A secret in `add_episode`'s third step was "the text … (line 3)" (the goal, summary and
    steps joined), and one in a tag "the tags looks like…": the argument is named as the
    tool takes it, and a list's finding by its item."""
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    said = mcp.error("add_episode", {"goal": "Fix the flaky login", "outcome": "completed",
                                     "steps": ["ran the tests", "read the logs",
                                               f"used {token}"]})
    assert said.startswith("`steps` looks like it contains a secret") and "(item 3)" in said
    said = mcp.error("remember", {"text": "Deploys go through the runner",
                                  "tags": ["deploy", token]})
    assert said.startswith("`tags` looks like it contains a secret") and "(item 2)" in said


def test_a_prompt_argument_sent_as_null_is_not_given_and_one_of_another_type_is_named(tmp_path):
    """Prompt arguments are strings: `"project": null` (clients fill optional arguments so)
    and `"task": 123` were answered "Invalid request parameters", naming nothing."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    lines = [INITIALIZE, INITIALIZED, *(json.dumps(
        {"jsonrpc": "2.0", "id": ident, "method": "prompts/get",
         "params": {"name": "session_start", "arguments": arguments}})
        for ident, arguments in ((21, {"task": "Fix the login", "project": None}),
                                 (22, {"task": 123}), (23, "Fix the login")))]
    done = subprocess.run([memctl_executable(), "mcp", "--no-watch"], env=subprocess_env(store),
                          cwd=str(tmp_path), input="\n".join(lines) + "\n", text=True,
                          capture_output=True, timeout=60)
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    assert "Fix the login" in json.dumps(answers[21]["result"]["messages"])
    assert answers[22]["error"]["code"] == -32602
    assert answers[22]["error"]["message"] == (
        "argument 'task' of prompt `session_start` must be text (a prompt's arguments are "
        "strings; leave out one you do not give)")
    assert answers[23]["error"]["code"] == -32602
    assert "of prompt `session_start` must be an object" in answers[23]["error"]["message"]
    assert "Traceback" not in done.stderr


def test_an_unknown_resource_and_a_call_without_an_arguments_object_are_worded(tmp_path):
    """`resources/read` of a 100 KB address was answered "Unknown resource: " and the whole
    address; `tools/call` with `arguments` that are no object (or a `name` that is no text)
    was "Invalid request parameters", naming nothing (docs/agents.md, "Too much of
    anything"; a tool's errors name what is wrong)."""
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    requests = [(31, "resources/read", {"uri": "memctl://notes/" + "x" * 100_000}),
                (32, "tools/call", {"name": "search", "arguments": ["x"]}),
                (33, "tools/call", {"name": "search", "arguments": "query"}),
                (34, "tools/call", {"name": 123, "arguments": {}}),
                (35, "tools/call", {"name": "search", "arguments": {"query": "anything"}}),
                (36, "tools/call", {"name": "y" * 100_000 + "\n", "arguments": ["x"]}),
                (37, "tools/call", {"name": "z" * 100_000, "arguments": {}}),
                (38, "resources/read", {"uri": "memctl://notes/01" + "v" * 50_000}),
                (39, "resources/read", {"uri": "memctl://nothing/here"}),
                (40, "tools/call", {"name": "w" * 100, "arguments": {}})]
    lines = [INITIALIZE, INITIALIZED, *(json.dumps(
        {"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        for ident, method, params in requests)]
    done = subprocess.run([memctl_executable(), "mcp", "--no-watch"], env=subprocess_env(store),
                          cwd=str(tmp_path), input="\n".join(lines) + "\n", text=True,
                          capture_output=True, timeout=60)
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    unknown = answers[31]["error"]
    assert unknown["code"] == -32602 and len(unknown["message"]) < 300, unknown["message"][:300]
    assert unknown["message"].startswith("Unknown resource: 'memctl://notes/xxx")
    # The whole answer, not its message alone: the SDK sent the address again as data.uri.
    assert len(json.dumps(answers[31])) < 1_000
    assert answers[31]["error"]["data"]["uri"] == "memctl://notes/" + "x" * 45 + "…"
    # A template's refusal (an id far too long) too; a short address comes back as it is.
    assert len(json.dumps(answers[38])) < 1_000, json.dumps(answers[38])[:300]
    assert answers[38]["error"]["message"].startswith("invalid value for `id`")
    assert answers[39]["error"]["data"] == {"uri": "memctl://nothing/here"}
    for ident, letter in ((36, "y"), (37, "z"), (40, "w")):  # a name is quoted back cut too
        assert len(json.dumps(answers[ident])) < 1_000
        assert answers[ident]["error"]["message"].startswith(f"there is no tool '{letter * 3}")
    for ident in (32, 33):
        assert answers[ident]["error"]["code"] == -32602
        assert answers[ident]["error"]["message"].startswith(
            "the arguments of tool `search` must be an object")
    assert answers[34]["error"]["message"].startswith("`name` of a tools/call request")
    assert "result" in answers[35]  # the server went on serving
    assert "Traceback" not in done.stderr


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, of the int sent on purpose
def test_over_http_a_prompt_argument_of_another_type_is_named_too(mcp):
    """The prompt arguments' check ran on stdio alone: over `--http` the SDK's bare "Invalid
    request parameters" came back (docs/agents.md: the same prompts on both transports)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import GetPromptRequest, GetPromptRequestParams, GetPromptResult

    port = free_port()
    with http_server(mcp.store, port):
        token = (mcp.store / ".memctl" / "mcp-token").read_text().strip()

        async def ask(session):
            said = []
            for arguments in ({"task": "Fix the login", "project": None}, {"task": 123}):
                request = GetPromptRequest(params=GetPromptRequestParams.model_construct(
                    name="session_start", arguments=arguments))
                try:
                    result = await session.send_request(request, GetPromptResult)
                    said.append(json.dumps(result.model_dump(mode="json")))
                except MCPError as exc:
                    said.append(exc.error.message)
            return said

        given, refused = http_call(f"http://127.0.0.1:{port}/mcp", token, ask)
    assert "Fix the login" in given
    assert refused.startswith("argument 'task' of prompt `session_start` must be text"), refused


def test_over_http_a_server_out_of_file_descriptors_keeps_serving(store_path):
    """Clients holding connections open with half a request each, past the server's limit of
    open files, ended it: asyncio logged the failed accept() through the SDK's rich handler,
    whose late import of rich.traceback failed for want of a descriptor. It now waits and
    serves again once the connections are gone. No token is needed to hold a connection."""
    import resource

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    port = free_port()
    said = store_path.parent / "server.err"  # a file: a pipe nobody reads would fill up
    with said.open("w") as err, http_server(store_path, port,
                                             stderr=err, preexec_fn=few_files) as process:
        held = []
        for _ in range(400):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                held[-1].sendall(b"GET /mcp HTTP/1.1\r\nHo")
            except OSError:
                break
        time.sleep(3)
        assert process.poll() is None, said.read_text()
        for connection in held:
            connection.close()
        time.sleep(2)
        token = (store_path / ".memctl" / "mcp-token").read_text().strip()

        async def ping(session):
            return await session.send_ping()

        http_call(f"http://127.0.0.1:{port}/mcp", token, ping)
        assert process.poll() is None
    log = said.read_text()
    assert "Traceback" not in log
    assert "cannot accept a connection: Too many open files; trying again in a second" in log
    # Once a second at most, as it says (it was tens of thousands of lines a second: asyncio
    # retries accept() up to the backlog's count on each wake-up); about 5 s were spent out
    # of descriptors here.
    assert log.count("cannot accept a connection") <= 8, log.count("cannot accept")


def test_the_recall_output_schema_names_every_key_the_recall_gives(mcp):
    """`secrets_left_out`, and each note's `corrected_by`, `contradicts` and
    `conflict_markers` (docs/agents.md) came back undeclared in the output schema: a client
    typed from the schema never saw which notes are corrected or in conflict."""
    mcp.ok("remember", {"text": "The schema key check uses port 7311", "type": "fact",
                        "project": "schema-keys"})
    _, data = mcp.ok("recall", {"project": "schema-keys"})
    schema = mcp.tools["recall"].output_schema
    assert data["notes"]
    assert set(data) <= set(schema["properties"]), set(data) - set(schema["properties"])
    items = schema["properties"]["notes"]["items"]
    if "$ref" in items:
        items = schema["$defs"][items["$ref"].rsplit("/", 1)[-1]]
    assert set(data["notes"][0]) <= set(items["properties"]), \
        set(data["notes"][0]) - set(items["properties"])
