"""`memctl mcp`: the same memory operations for MCP clients, over stdio (one client) or
streamable HTTP (`memctl mcp --http`: several clients on one store, behind a bearer token).

Built on the official MCP Python SDK (2.x, `MCPServer`), an optional extra: the SDK is
imported only when `memctl mcp` starts, and a missing SDK is a one-line error saying what to
install.

What a client gets (docs/agents.md lists each):
- tools for the whole life of a memory, each with a title, annotations (read-only,
  destructive, idempotent hints), an input schema stating memctl's own bounds and choices
  (`core/vocab.py`, `core/arguments.py`), and structured output under a declared output
  schema next to a text block written for a model to read;
- resources: every project's MEMORY.md and SCRATCHPAD.md, and any note or episode by id (a
  resource template), with a list-changed notification when one of those files appears;
- prompts: session start, end of task, and consolidation.

Every tool calls the same services as the CLI (`memctl.services`), so the same checks apply
(duplicates, supersession, secrets, names, budgets, ids that must exist) and each rule is
enforced in one place: the schemas publish the bounds, the services refuse what is outside
them. Errors a caller can cause come back as tool errors of one line worded for a model
(`MCP_WORDING`: tool arguments and tool names, never CLI flags; a wrongly typed argument is
named the same way, never with the validator's dump). Over stdio, stdout carries only the
protocol.

This file deliberately has no `from __future__ import annotations`: the SDK reads the tool
functions' annotations to build their schemas, and they must be real objects.
"""

import contextlib
import dataclasses
import hmac
import io
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Optional

from memctl import __version__
from memctl.core import arguments
from memctl.core.arguments import MAX_FIELD_CHARS, MAX_LINKS, MAX_TAGS
from memctl.core.clock import seconds_setting
from memctl.core.errors import QUOTED_CHARS, Front, MemctlError, arg, machine_error, quoted
from memctl.core.ids import VALID_ID
from memctl.core.jsontop import top_level_members
from memctl.core.query import shown_query
from memctl.core.sections import MEMORY_SECTIONS
from memctl.core.textfile import is_utf8_name
from memctl.core.vocab import (
    GLOBAL,
    IMPORTANCE_RANGE,
    KIND_TYPES,
    LIST_SORTS,
    LIST_STATUSES,
    MAX_LIMIT,
    MAX_PROJECT_BYTES,
    NOTE_TYPES,
    OUTCOMES,
    PROJECT_NAME,
)
from memctl.services import retrieval, serving, watching, working
from memctl.services.stores import Store


class _OnFirstUse:
    """A services module imported when a tool first uses it, not when the server starts:
    `notes`, `upkeep` and `recall` bring the write-time checks, YAML, the secret scanner,
    similarity, health, sync and the importers, which answering `initialize` does not need
    (docs/architecture.md, "Lazy imports")."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._module: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._module is None:
            self._module = self._load()
        return getattr(self._module, name)


def _load_notes() -> Any:
    from memctl.services import notes as module

    return module


def _load_upkeep() -> Any:
    from memctl.services import upkeep as module

    return module


def _load_recall() -> Any:
    from memctl.services import recall as module

    return module


notes = _OnFirstUse(_load_notes)
upkeep = _OnFirstUse(_load_upkeep)
recalling = _OnFirstUse(_load_recall)


def _warm_up() -> None:
    """Import what the tools use, once the client has its answer to `initialize`: the
    first call then does not wait for it."""
    for module in (notes, upkeep, recalling):
        module.__name__  # noqa: B018 - the attribute access imports the module


INSTALL_HINT = "pip install 'memctl-md[mcp]'"  # the distribution is memctl-md (docs/agents.md)
DEFAULT_HTTP_PORT = 8765
HTTP_PATH = "/mcp"
PROJECT_MEMORY_ACTIONS = ("show", "add", "replace")
SCOPES = ("project", "global")

INSTRUCTIONS = """\
memctl is long-term memory kept as Markdown files in git, shared with the user (they read and
edit the same files). Use it like this:
- At the start of a task, call `recall` (with a few words about the task as `query`) and treat
  what it returns as context: project constraints, decisions, progress, lessons, your working
  scratchpad, and the notes that matter most. Corrections come first: obey them.
- When you learn something worth keeping beyond this session — a fact about the project, a
  user preference, a rule, a decision and its reason, a pitfall, a procedure that worked —
  call `remember` once, with one self-contained statement. Do not store secrets or chat.
- When the user corrects you, `remember` it with type `correction` (and `corrects` = the id).
- When a topic comes up that memory may know about, call `search` before guessing; `show`
  gives a whole note, `list_notes` browses them.
- When a note is wrong or out of date: `update_note` fixes it in place, `supersede` marks it
  replaced by a newer note, `forget` deletes it.
- Keep `update_scratchpad` current on long tasks; record finished task phases with
  `add_episode`; put lasting project-level decisions, constraints, progress and lessons in
  `project_memory` (action `add`).
- The prompts `session_start`, `end_of_task` and `consolidate` walk through each step.
"""

NOTE_TYPE_HELP = (
    "fact (how things are), preference (what the user likes), rule (must/never), decision "
    "(a choice and why), correction (you were wrong; this is right), skill (how to do a "
    "task), error (a pitfall and its fix), experience (a procedure that worked)"
)


class McpWording(Front):
    """Errors worded for a model: tool arguments and tools, not CLI options and commands."""

    ARGUMENTS = {"step": "steps", "link": "links", "global": "scope", "ID": "id",
                 "OLD": "old_id", "NEW": "new_id", "SECTION": "section"}
    TOOLS = {"list": "the `list_notes` tool", "search": "the `search` tool",
             "show": "the `show` tool", "show ID": "the `show` tool",
             "get": "the `get` tool", "recall": "the `recall` tool",
             "add": "the `remember` tool", "forget": "the `forget` tool",
             "edit": "the `update_note` tool", "supersede": "the `supersede` tool",
             "restore": "the `restore` tool", "health": "the `review` tool",
             "scratch show": "the `update_scratchpad` tool, action show",
             "scratch note": "the `update_scratchpad` tool, action note",
             "episode list": "the `list_episodes` tool",
             "episode show": "the `show` tool",
             "episode update": "the `update_episode` tool",
             "project show": "the `project_memory` tool, action show",
             "project add": "the `project_memory` tool, action add",
             "project edit": "the `project_memory` tool, action replace",
             "project replace": "the `project_memory` tool, action replace"}

    def option(self, name: str) -> str:
        return f"`{self.ARGUMENTS.get(name, name.lower() if name.isupper() else name)}`"

    def command(self, name: str) -> str:
        tool = self.TOOLS.get(name)
        if tool is not None:
            return tool
        return f"`memctl {name}` (a command for the user to run)"

    def render(self, message: str) -> str:
        # Two CLI commands one tool does (`project edit` or `project replace`) are named once.
        rendered = super().render(message)
        for tool in set(self.TOOLS.values()):
            if f"{tool} or {tool}" in rendered:
                rendered = rendered.replace(f"{tool} or {tool}", tool)
        return rendered


MCP_WORDING = McpWording()


def _require_sdk() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise MemctlError(
            f"`memctl mcp` needs the MCP Python SDK (version 2): {INSTALL_HINT}"
        ) from None
    return MCPServer


def serve(store: Store, default_project: str, *, watch: bool = True) -> None:
    """Run the server on stdin/stdout until the client goes away. With `watch`, a watcher
    thread keeps the index fresh, so a call does not walk the store (docs/agents.md)."""
    import anyio

    end_wait = answer_at_end_seconds()
    server = build_server(store, default_project)
    with _running(store, watch, server):
        anyio.run(_serve_stdio, server, end_wait)


async def _serve_stdio(server: Any, end_wait: float) -> None:
    """`server.run("stdio")`, but every request gets an answer. memctl reads stdin itself
    (`_wire_lines`; the SDK still writes stdout) and hands on what the SDK reads from each
    line, except:
    - a line the SDK cannot read as a JSON-RPC message, which it dropped without a word, so
      a client waiting for that id waited for ever (a lone surrogate in a string,
      `"\\ud800"`: valid JSON, no Unicode text, did that to any tool call): a request
      whose id can still be read gets an error answer (`unreadable_request`);
    - a request whose id no answer can carry (`1.5`, `true`, `null`), which the SDK reads
      as a notification, dropping the id, so it was never answered either: JSON-RPC's
      invalid request, with the id null (`_request_read_as_notification`).
    Anything else goes on to the server as before. At the end of stdin, the requests read
    before it are answered before the SDK's loop ends (`_answer`), and a client that closed
    stdout ends the server quietly (tests/test_mcp.py)."""
    import anyio
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    client_gone = False
    with _wire_lines() as lines:
        try:
            # The SDK's own reader gets nothing (stdin is read above); it writes stdout.
            async with stdio_server(stdin=anyio.wrap_file(io.StringIO())) as (_, stdout_stream):
                await _answer(lowlevel, lines, stdout_stream, end_wait)
        except* (BrokenPipeError, ConnectionResetError):
            client_gone = True
    if client_gone:
        raise BrokenPipeError  # the client closed stdout: the command ends quietly


async def _answer(lowlevel: Any, lines: AsyncIterator[str], stdout_stream: Any,
                  end_wait: float) -> None:
    """Hand each line of stdin to the SDK's server (`_serve_stdio`'s rules), and its answers
    to stdout; at the end of stdin, answer what was read before it first."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification, jsonrpc_message_adapter

    send, receive = anyio.create_memory_object_stream[Any](0)
    answers, answered = anyio.create_memory_object_stream[SessionMessage](0)
    waiting = _Unanswered(end_wait)

    async def forward() -> None:
        async with send:
            async for line in lines:
                try:
                    item = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - the SDK's reader's rule
                    answer = unreadable_request(exc)
                    if answer is None:
                        await send.send(exc)
                    else:
                        await answers.send(SessionMessage(answer))
                    continue
                if isinstance(item, JSONRPCNotification) \
                        and _request_read_as_notification(line):
                    await answers.send(SessionMessage(_invalid_id()))
                    continue
                waiting.handed_on(item)
                await send.send(SessionMessage(item))
            # stdin has ended: the requests read before its end are answered first
            # (`printf '…' | memctl mcp` gets every answer), within `end_wait` seconds;
            # one still running then is told so (its thread ends its work before the exit).
            with anyio.move_on_after(end_wait):
                await waiting.none_left()
            for answer in waiting.too_late():  # (past the relay, which drops the SDK's)
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stdout_stream.send(SessionMessage(answer))

    async def relay() -> None:
        async with answered, stdout_stream:
            async for message in answered:
                if not waiting.take(message.message):
                    continue
                try:
                    await stdout_stream.send(message)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    waiting.give_up()  # stdout is gone: nobody reads an answer
                    return

    async with anyio.create_task_group() as group:
        reading = anyio.CancelScope()

        async def read() -> None:
            with reading:
                await forward()

        group.start_soon(read)
        group.start_soon(relay)  # ends when the SDK closes `answers`, after the last
        await lowlevel.run(receive, answers, lowlevel.create_initialization_options())
        reading.cancel()


# How long a server whose stdin has ended waits for the answers to the requests it read
# before (docs/agents.md): MEMCTL_MCP_END_WAIT seconds, else this.
ANSWER_AT_END_SECONDS = 30.0


def answer_at_end_seconds() -> float:
    return seconds_setting("MEMCTL_MCP_END_WAIT", ANSWER_AT_END_SECONDS, 3600)


class _Unanswered:
    """The requests handed to the SDK that it has not answered yet, by id (a client that
    sends one id twice gets two answers): when stdin ends, the server waits for them (the SDK
    cancels every request in flight at the end of its input). A request the client cancels
    (`notifications/cancelled`) gets no answer, so it is not waited for; one still running
    when the wait ends is answered here with an error (`too_late`), and the SDK's own answer,
    should one come after, is not sent again (`take`)."""

    def __init__(self, end_wait: float) -> None:
        import anyio

        self.end_wait = end_wait
        self.waiting: dict[int | str, list[int | str]] = {}  # key -> the ids as sent
        self.told: Counter[int | str] = Counter()  # answered here, at the end
        self.changed = anyio.Event()

    def handed_on(self, item: Any) -> None:
        from mcp_types import JSONRPCNotification, JSONRPCRequest

        if isinstance(item, JSONRPCRequest):
            key = _id_key(item.id)
            if key is not None:
                self.waiting.setdefault(key, []).append(item.id)
        elif isinstance(item, JSONRPCNotification) and item.method == "notifications/cancelled":
            params = item.params if isinstance(item.params, dict) else {}
            self._drop(_id_key(params.get("requestId")))

    def take(self, message: Any) -> bool:
        """Whether to send the SDK's `message`: an answer counts off its request; one to a
        request answered here already is dropped."""
        from mcp_types import JSONRPCError, JSONRPCResponse

        if not isinstance(message, (JSONRPCResponse, JSONRPCError)):
            return True
        key = _id_key(message.id)
        if key is not None and self.told[key]:
            self.told[key] -= 1
            return False
        self._drop(key)
        return True

    def too_late(self) -> list[Any]:
        """An error answer for each request still running, with its id as sent: the server
        is ending."""
        from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError

        message = (f"the server is ending: its input closed and this call had not finished "
                   f"{self.end_wait:g} s later; whether it took effect is not known: look with "
                   "search or list_notes")
        answers = [JSONRPCError(jsonrpc="2.0", id=request_id,
                                error=ErrorData(code=INTERNAL_ERROR, message=message))
                   for sent in self.waiting.values() for request_id in sent]
        self.told.update({key: len(sent) for key, sent in self.waiting.items()})
        self.waiting.clear()
        return answers

    def give_up(self) -> None:
        self.waiting.clear()
        self.changed.set()

    def _drop(self, key: int | str | None) -> None:
        sent = self.waiting.get(key) if key is not None else None
        if sent:
            sent.pop(0)
            if not sent:
                del self.waiting[key]
            self.changed.set()

    async def none_left(self) -> None:
        import anyio

        while self.waiting:
            await self.changed.wait()
            self.changed = anyio.Event()


def _id_key(request_id: object) -> int | str | None:
    """A request id as the SDK matches it (`"5"` and `5` are one id to it: a cancellation
    naming either cancels the request, which then gets no answer); None for what no request's
    id is (a list in a cancellation, say)."""
    from mcp.shared.dispatcher import coerce_request_id

    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    return coerce_request_id(request_id)


@contextmanager
def _wire_lines() -> Iterator[AsyncIterator[str]]:
    """The lines of the client's stdin, read (as the SDK reads them: UTF-8, a byte that is
    none read as U+FFFD) from a private copy of fd 0, with fd 0 itself on the null device
    while serving, so a child process or a stray read never takes the client's bytes. The
    copy is never closed: the reading thread may still wait on it when the server ends."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield _lines_of(io.TextIOWrapper(os.fdopen(wire, "rb", closefd=False),
                                         encoding="utf-8", errors="replace"))
    finally:
        os.dup2(wire, 0)


async def _lines_of(wire: io.TextIOWrapper) -> AsyncIterator[str]:
    """Each line of `wire`, read by a daemon thread and handed over one at a time (a client
    that floods the server waits for it). A thread of anyio's pool waited on stdin too, and
    the end of the event loop waited for it: Ctrl-C left `memctl mcp` hanging until the
    client wrote again (tests/test_mcp.py). A daemon thread does not hold the exit. The
    thread only wakes the loop (`call_soon_threadsafe`), never runs a task in it: a task it
    started as the loop ended was cancelled there and logged as a traceback."""
    import asyncio

    loop = asyncio.get_running_loop()
    ready = asyncio.Event()  # a line, or the end (None), is in `handed`
    handed: list[str | None] = []
    taken = threading.Event()  # the loop has taken the line: the thread reads the next

    def hand(item: str | None) -> bool:
        handed.append(item)
        try:
            loop.call_soon_threadsafe(ready.set)
        except RuntimeError:  # the event loop has ended: nobody reads any more
            return False
        return True

    def read() -> None:
        try:
            for line in wire:
                taken.clear()
                if not hand(line):
                    return
                taken.wait()
        except BaseException:  # noqa: BLE001 - the server has ended, or stdin is unreadable
            pass
        hand(None)

    threading.Thread(target=read, name="memctl-mcp-stdin", daemon=True).start()
    while True:
        await ready.wait()
        ready.clear()
        line = handed.pop(0)
        if line is None:
            return
        taken.set()
        yield line


def prompt_arguments_as_text(params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A `prompts/get` request's params as the SDK takes them (every argument a string),
    and None; or the params and the message refusing them. An argument sent as null is left
    out, as not given (clients fill optional ones so); one of another type (`"task": 123`)
    is refused naming it, where the SDK answered "Invalid request parameters" and named
    nothing (docs/agents.md: a prompt's errors are worded as the tools' are)."""
    arguments = params.get("arguments")
    name = params.get("name")
    prompt = f"prompt `{name}`" if isinstance(name, str) else "the prompt"
    if arguments is None:
        return params, None
    if not isinstance(arguments, dict):
        return params, f"the arguments of {prompt} must be an object of text values"
    wrong = [key for key, value in arguments.items()
             if value is not None and not isinstance(value, str)]
    if wrong:
        named = ", ".join(quoted(key) for key in wrong[:5])
        return params, (f"{'arguments' if len(wrong) > 1 else 'argument'} {named} of "
                        f"{prompt} must be text (a prompt's arguments are strings; leave out "
                        "one you do not give)")
    if any(value is None for value in arguments.values()):
        given = {key: value for key, value in arguments.items() if value is not None}
        return {**params, "arguments": given}, None
    return params, None


MAX_TOOL_NAME = QUOTED_CHARS  # longer than any of memctl's tools: no name is quoted back longer


def tool_call_refusal(params: dict[str, Any]) -> str | None:
    """Why a `tools/call` request's params are not a call the SDK can take, worded, or None:
    a `name` that is no text, or `arguments` that are no object (`["x"]`, `"query"`), were
    answered "Invalid request parameters", naming nothing."""
    name = params.get("name")
    if not isinstance(name, str):
        return "`name` of a tools/call request must be the tool's name, as text"
    if len(name) > MAX_TOOL_NAME or not name.isprintable():
        # No tool is so named; the SDK's "Unknown tool: NAME" quoted a 100 KB name back whole.
        return f"there is no tool {quoted(name)}; tools/list gives the tools"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        # The name is quoted back cut, as any value (docs/agents.md, "Too much of anything").
        shown = f"`{name}`" if len(name) <= 60 and name.isprintable() else quoted(name)
        return (f"the arguments of tool {shown} must be an object, one member per argument "
                "(tools/list gives each tool's)")
    return None


class WordedParams:
    """SDK middleware (it runs before the SDK validates a request's params, for every
    transport, stdio and HTTP alike): `prompt_arguments_as_text` on each `prompts/get`,
    `tool_call_refusal` on each `tools/call`."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method in ("prompts/get", "tools/call") and isinstance(ctx.params, dict):
            from mcp.shared.exceptions import MCPError
            from mcp_types import INVALID_PARAMS

            if ctx.method == "tools/call":
                params, refused = ctx.params, tool_call_refusal(ctx.params)
            else:
                params, refused = prompt_arguments_as_text(ctx.params)
            if refused is not None:
                raise MCPError(code=INVALID_PARAMS, message=refused)
            if params is not ctx.params:
                ctx = dataclasses.replace(ctx, params=params)
        return await call_next(ctx)


def _request_read_as_notification(line: str) -> bool:
    """Whether `line`, which the SDK read as a notification, has an `id` at its top level
    (its key spelled in any JSON escape, `"\\u0069d"`): a request whose id the SDK could not
    take (a fraction, true, null, an object), which must be answered. Linear in the line."""
    try:
        message: Any = json.loads(line)
    except (RecursionError, ValueError):
        # Deeper than Python reads, or a number longer than it converts: the top level alone.
        message = top_level_members(line)
    return isinstance(message, dict) and "id" in message


def _invalid_id() -> Any:
    """JSON-RPC's invalid request for a request whose id no answer can carry, with the id
    null, so the client hears why."""
    from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
        code=INVALID_REQUEST, message="the request's id must be a string or a whole number"))


def unreadable_request(error: Exception) -> Any | None:
    """The JSON-RPC error answering a line the SDK could not read (its validation `error`):
    for that request's id when the line is a request whose id can be read, at the top level
    of the line however deeply it nests; with no id (null, as JSON-RPC says) for a line that
    is no JSON; else None (a notification, a response). Linear in the line's size."""
    from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
    from pydantic import ValidationError

    problems = error.errors() if isinstance(error, ValidationError) else []
    # The line itself (a JSON error), or the object read from it: the input of an error
    # about the message as a whole, or about a field missing at its top (never one nested
    # in it, whose "id" is no request's).
    line = next((problem["input"] for problem in problems
                 if (problem.get("type") == "json_invalid"
                     and isinstance(problem.get("input"), str | bytes))
                 or (isinstance(problem.get("input"), dict)
                     and len(problem.get("loc", ())) <= (2 if problem.get("type") == "missing"
                                                         else 1))
                 or (isinstance(problem.get("input"), list)  # a batch: the message itself
                     and len(problem.get("loc", ())) <= 1)),
                None)
    try:
        if isinstance(line, bytes):
            line = line.decode("utf-8")
        if isinstance(line, str) and not line.strip():
            return None  # a blank line between messages: nothing was asked
        if isinstance(line, str):
            try:
                line = json.loads(line)  # Python's reader takes a lone surrogate
            except (RecursionError, ValueError) as exc:
                # Nested deeper than it reads, or a number longer than Python converts (4,300
                # digits): valid JSON whose top level can still be read. Else no JSON.
                if isinstance(exc, ValueError) and "integer string conversion" not in str(exc):
                    raise
                line = top_level_members(line)
                if line is None:
                    raise ValueError("no JSON") from None
    except ValueError:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
            code=PARSE_ERROR, message="not a JSON-RPC message: each line must be one JSON object"))
    if isinstance(line, list):
        # A JSON-RPC batch, which MCP no longer takes (the SDK drops it without a word):
        # one error, with the id null, so the client hears why.
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
            code=INVALID_REQUEST, message="a batch (a JSON array of messages) is not taken: "
            "send each request on a line of its own"))
    if not isinstance(line, dict) or "method" not in line:
        return None
    if "id" not in line:
        return None  # a notification: JSON-RPC answers none
    ident = line.get("id")
    try:
        if isinstance(ident, bool) or not isinstance(ident, int | str) \
                or not is_utf8_name(json.dumps(ident, ensure_ascii=False)):
            return _invalid_id()  # an id no answer can carry (a fraction, true, null, ...)
        # (A member read over, `OPAQUE`, is left out of this look for a lone surrogate.)
        readable = is_utf8_name(json.dumps(line, ensure_ascii=False,
                                           default=lambda _opaque: None))
    except (ValueError, RecursionError):
        return None  # an object the SDK read, deeper than Python writes: no id to trust
    if readable:
        code, message = INVALID_REQUEST, "not a JSON-RPC request this server can read"
    else:
        code, message = INVALID_PARAMS, ("a string of the request holds a lone surrogate (an "
                                         "escape such as \\ud800 without its pair), which is "
                                         "no Unicode text: send the text as valid UTF-8")
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))



def _after_initialize(server: Any, action: Callable[[], None]) -> None:
    """Run `action` when the first client says it has the answer to `initialize` (once:
    over HTTP every client says it)."""
    from mcp_types import NotificationParams

    first = threading.Lock()

    async def initialized(context: Any, params: Any) -> None:
        if first.acquire(blocking=False):
            action()

    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is not None and hasattr(lowlevel, "add_notification_handler"):
        lowlevel.add_notification_handler("notifications/initialized", NotificationParams,
                                          initialized)


@contextmanager
def _running(store: Store, watch: bool, server: Any) -> Iterator[None]:
    """What the server holds while it runs (`serving.kept_open`), and with `watch` its own
    watcher (`memctl watch` in a thread), stopped however the server ends: the client gone
    (stdin closed), SIGTERM or SIGHUP (then the process still dies of the signal, as it would
    without a watcher), an error."""
    warm_up = threading.Thread(target=_warm_up, name="memctl-warm-up", daemon=True)
    with serving.kept_open(store):
        if not watch:
            _after_initialize(server, warm_up.start)
            yield
            return
        with _watching(store, server, warm_up.start):
            yield


# The watcher begins once the client has its answer to `initialize` (its first pass would
# slow the answer down: bench/bench_mcp.py), or this many seconds after the start at the
# latest (a client that sends no `notifications/initialized`).
WATCH_AFTER = 1.0


@contextmanager
def _watching(store: Store, server: Any, warm_up: Callable[[], None]) -> Iterator[None]:
    keeper = watching.BackgroundWatcher(store, say=_say)

    def begin() -> None:
        warm_up()
        keeper.go()

    _after_initialize(server, begin)

    def terminate(signum: int, frame: object) -> None:
        keeper.stop()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    caught = [sig for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
              if sig is not None]
    before = {sig: signal.signal(sig, terminate) for sig in caught}
    keeper.start(after=WATCH_AFTER)
    try:
        yield
    finally:
        keeper.stop()
        for sig, handler in before.items():
            signal.signal(sig, handler)


def serve_http(store: Store, default_project: str, *, host: str = "127.0.0.1",
               port: int = DEFAULT_HTTP_PORT, allow_remote: bool = False,
               watch: bool = True) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted. Every request must
    carry the bearer token (`serving.http_token`); a non-loopback host is refused unless
    `allow_remote` (docs/agents.md, "The HTTP transport", has the security notes)."""
    host, port = serving.http_options(host, port, allow_remote)
    # Bound first: no token is made for a server whose port is taken. It listens only once
    # the token is on disk: a client that connects as soon as the port answers (and the
    # tests, which wait for that) reads the token file right away.
    listener = _bind(host, port)
    _plain_log_handler()  # before the SDK's: its rich one is no handler for a server at its limits
    try:
        token = serving.http_token(store)
        server = build_server(store, default_project)
    except BaseException:
        listener.close()
        raise
    import uvicorn  # an SDK dependency, loaded only for --http
    from mcp.server.transport_security import TransportSecuritySettings

    shown = f"[{host}]" if ":" in host else host
    security = None  # beyond loopback the Host header is whatever name reaches the machine
    if arguments.is_loopback(host):
        # DNS rebinding: a web page's requests to a hostile name that resolves here carry that
        # name in Host (and its page in Origin); only this machine's own names get through.
        # Each name with any port, and bare: a client of port 80 sends `Host: localhost`.
        names = sorted({shown, "127.0.0.1", "localhost", "[::1]"})
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[form for name in names for form in (f"{name}:*", name)],
            allowed_origins=[form for name in names
                             for form in (f"http://{name}:*", f"http://{name}")])
    logging.getLogger("mcp.server.streamable_http").addFilter(_quiet_disconnects)
    app = BearerGate(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host,
                                                transport_security=security), token.token)
    _say(f"serving the store {store.root} (project {default_project}) at "
         f"http://{shown}:{port}{HTTP_PATH}")
    if token.created:
        _say(f"made a bearer token (kept in {token.path}, readable only by you): {token.token}")
    _say("clients must send `Authorization: Bearer <token>`; the token is "
         + (f"${serving.TOKEN_ENV}" if token.source == "env" else f"in {token.path}"))
    if not arguments.is_loopback(host):
        _say("warning: listening on a non-loopback address; the token and all memory travel "
             "unencrypted unless a TLS proxy is in front (docs/agents.md)")
    _listen(listener, host, port)
    with _running(store, watch, server):
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                      lifespan="on", server_header=False,
                                      http=_headers_in_time())).run(sockets=[listener])


# A connection must have sent a request's line and headers this soon after it opened or after
# its last answer (uvicorn's keep-alive wait stops at the first byte): one that sent half a request
# and nothing more held its connection and a file descriptor for ever, and a few hundred such
# left no room for the clients (docs/agents.md, "The HTTP transport").
HEADER_SECONDS = 10.0


def _headers_in_time() -> Any:
    """uvicorn's h11 protocol, with a timer from the connection's start, and again from each
    answer, that closes it when no whole request's headers came by then. "h11"
    as it is when uvicorn's protocol is not the one known."""
    try:
        import h11
        from uvicorn.protocols.http.h11_impl import H11Protocol
    except ImportError:
        return "h11"
    if not all(hasattr(H11Protocol, name) for name in (
            "connection_made", "connection_lost", "on_response_complete",
            "timeout_keep_alive_handler")):
        return "h11"

    class HeadersInTime(H11Protocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.headers_timer = self.loop.call_later(HEADER_SECONDS, self.headers_late)

        def on_response_complete(self) -> None:
            # The next request's headers are due as soon after this answer: uvicorn's
            # keep-alive timer stops at the first byte received, so a connection that was
            # answered once and then sent half a request held its file descriptor for ever.
            super().on_response_complete()
            self.headers_timer.cancel()
            if not self.transport.is_closing():
                self.headers_timer = self.loop.call_later(HEADER_SECONDS, self.headers_late)

        def headers_late(self) -> None:
            # IDLE, with no request being answered: the line and headers of the next request
            # are not whole yet.
            if self.conn.their_state is h11.IDLE \
                    and (self.cycle is None or self.cycle.response_complete):
                self.timeout_keep_alive_handler()

        def connection_lost(self, exc: Exception | None) -> None:
            self.headers_timer.cancel()
            super().connection_lost(exc)

    return HeadersInTime


def _plain_log_handler() -> None:
    """A plain handler on the root logger, so that the SDK's (`logging.basicConfig` with
    rich's, which imports `rich.traceback` when it first shows an exception) is never made:
    a server out of file descriptors (clients holding hundreds of connections open, half a
    request each) had asyncio log that `accept()` failed, rich's import then failed for want
    of a descriptor, and the error ended the server. With this one the log line is written
    and asyncio accepts again once descriptors are free (tests/test_mcp.py)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("memctl mcp: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
    logging.getLogger("asyncio").addFilter(_one_line_out_of_resources)


_out_of_resources_said = [float("-inf")]  # when the line below was last logged (monotonic)


def _one_line_out_of_resources(record: logging.LogRecord) -> bool:
    """asyncio's `socket.accept() out of system resource` as one line, without the socket
    and the traceback it adds each time it tries again, and at most once a second while it
    lasts: asyncio tries `accept()` up to the backlog's count (2048) on each wake-up, and
    schedules a retry for each, so unfiltered it wrote tens of thousands of lines a second."""
    if "out of system resource" in str(record.msg):
        moment = time.monotonic()
        if moment - _out_of_resources_said[0] < 1:
            return False
        _out_of_resources_said[0] = moment
        error = record.exc_info[1] if record.exc_info else None
        record.msg = "cannot accept a connection: " + (
            f"{error.strerror or error}" if isinstance(error, OSError) else "out of resources"
        ) + "; trying again in a second"
        record.args = ()
        record.exc_info = None
    return True


def _quiet_disconnects(record: logging.LogRecord) -> bool:
    """Drop the SDK's log of a client that went away in the middle of its request body (a
    client that timed out, was killed, lost its network): a 40-line traceback on stderr each
    time, drawn on the event loop, so that a few hundred of them held every other client up
    for seconds; nothing is wrong with the server."""
    from starlette.requests import ClientDisconnect

    return not (record.exc_info and isinstance(record.exc_info[1], ClientDisconnect))


def _bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is announced: a port in use is one
    `error:` line, not the web server's log. It does not listen yet (`_listen`): a client
    connecting meanwhile is refused, as by no server."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise _cannot_listen(host, port, exc) from None
    return listener


def _listen(listener: socket.socket, host: str, port: int) -> None:
    try:
        listener.listen(128)
    except OSError as exc:  # another socket bound to the port listened first
        listener.close()
        raise _cannot_listen(host, port, exc) from None


def _cannot_listen(host: str, port: int, exc: OSError) -> MemctlError:
    return MemctlError(f"cannot listen on {host} port {port}: {exc.strerror or exc}; "
                       f"choose another {arg('port')}")


def _say(message: str) -> None:
    sys.stderr.write(f"memctl mcp: {message}\n")
    sys.stderr.flush()


class BearerGate:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401 and
    never reaches the MCP app. The comparison takes the same time whatever the token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and not self.allowed(scope):
            body = json.dumps({"error": "unauthorized",
                               "error_description": "send Authorization: Bearer <token> "
                                                    "(the token `memctl mcp --http` printed "
                                                    "or keeps in .memctl/mcp-token)"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"www-authenticate", b'Bearer realm="memctl"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def allowed(self, scope: dict[str, Any]) -> bool:
        given = b""
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                given = value
                break
        scheme, _, credential = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token)


def _schema(**rule: Any) -> Callable[[dict[str, Any]], None]:
    """A pydantic `json_schema_extra` that states memctl's own rule for one tool argument in
    its schema (bounds, choices, a pattern: all from `core/`) and shows an optional argument
    as its own type (leaving it out is how a model says "none"). The services enforce the
    rule; the schema only tells the model."""

    def apply(schema: dict[str, Any]) -> None:
        schema.pop("title", None)
        branches = schema.get("anyOf")
        if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
            schema.pop("anyOf")
            schema.update(next(branch for branch in branches if branch != {"type": "null"}))
            if "default" in schema and schema["default"] is None:
                del schema["default"]
        schema.update(rule)

    return apply


# The JSON types a string is never taken for, and how an error names them.
_NOT_TEXT = {"integer": "a whole number", "boolean": "true or false", "number": "a number",
             "object": "an object"}


def _wrong_type(name: str, given: Any, reason: str) -> str:
    """One line naming the argument, the value given (JSON, cut) and why it is refused."""
    shown = json.dumps(given, ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 60 else shown[:60] + "…"
    return f"invalid value for `{name}`: {shown} ({reason})"


def _validation_message(error: Any) -> str:
    """One line for a tool argument of the wrong kind (pydantic's first error), naming the
    argument the way every other error does, without pydantic's dump or its link."""
    problems = error.errors(include_url=False)
    if not problems:
        return "invalid arguments"
    first = problems[0]
    name = ".".join(str(part) for part in first.get("loc", ()) if not isinstance(part, int)) \
        or "arguments"
    if first.get("type") == "missing":
        return f"`{name}` is required"
    expected = {"int_type": "a whole number", "int_parsing": "a whole number",
                "int_from_float": "a whole number", "string_type": "a string",
                "bool_type": "true or false", "bool_parsing": "true or false",
                "list_type": "a list", "dict_type": "an object", "float_type": "a number",
                "float_parsing": "a number"}.get(str(first.get("type")))
    reason = expected and f"expected {expected}" or str(first.get("msg", "not accepted")).lower()
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return _wrong_type(name, first.get("input"), reason) + more


def build_server(store: Store, default_project: str) -> Any:  # noqa: C901, PLR0915 - one closure per tool
    MCPServer = _require_sdk()
    import anyio
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.mcpserver import UserMessage
    from mcp.server.mcpserver.exceptions import (
        ResourceNotFoundError,
        ToolError,
        UnexpectedToolError,
    )
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, Resource, TextContent, ToolAnnotations
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    def Arg(description: str, **rule: Any) -> Any:  # noqa: N802 - reads like a type
        # Strict: a value is taken only as its own type, never converted (`true` is not the
        # importance 1, "yes" not true, "3" not 3); a wrong one is named (`_validation_message`).
        return Field(description=description, strict=True, json_schema_extra=_schema(**rule))

    # Ids, projects and tags: every argument of these kinds is declared through one of
    # these, whose rules are the constants their validators use (core/ids.py, core/vocab.py,
    # core/arguments.py), so no schema states less than is enforced, nor other bounds
    # (tests/test_mcp.py::test_every_id_project_and_tag_argument_states_its_rule).
    def id_arg(description: str) -> Any:
        return Arg(description, pattern=VALID_ID.pattern)

    def ids_arg(description: str) -> Any:
        return Arg(description, maxItems=MAX_LINKS,
                   items={"type": "string", "pattern": VALID_ID.pattern})

    def tags_arg(description: str) -> Any:
        return Arg(description, maxItems=MAX_TAGS,
                   items={"type": "string", "maxLength": MAX_FIELD_CHARS})

    low_importance, high_importance = IMPORTANCE_RANGE
    ProjectArg = Annotated[
        Optional[str],
        Arg(f"Project name; default {default_project!r} (the current project); 'global' is "
            "the scope every project sees.", pattern=PROJECT_NAME.pattern,
            maxLength=MAX_PROJECT_BYTES),  # at most as many characters as bytes
    ]
    AllProjectsArg = Annotated[bool, Arg("Every project, not just this one and global.")]
    IdArg = Annotated[str, id_arg("A note id, or its first characters (as listed).")]
    AllowSecretArg = Annotated[
        bool, Arg("Write although the text looks like a secret: only when the user confirmed "
                  "it is not one.")
    ]
    TagsArg = Annotated[Optional[list[str]], tags_arg("A few lowercase tags.")]
    NoteTypeArg = Annotated[Optional[str], Arg(NOTE_TYPE_HELP, enum=list(NOTE_TYPES))]
    OutcomeArg = Annotated[Optional[str], Arg("How the task ended.", enum=list(OUTCOMES))]

    def short_line(description: str) -> Any:
        return Arg(description, maxLength=MAX_FIELD_CHARS)

    def limit_arg(description: str, low: int = 1) -> Any:
        return Arg(description, minimum=low, maximum=MAX_LIMIT)

    # --- structured output: one model per result, published as the tool's output schema -----

    class Out(BaseModel):
        model_config = ConfigDict(extra="allow")  # a note's own extra fields pass through

    class NoteOut(Out):
        """A note: its front matter fields, path and, when shown whole, body."""

        id: str
        type: str
        project: str
        importance: int
        tags: list[str]
        status: str
        title: str
        path: str
        subject: Optional[str] = None
        predicate: Optional[str] = None
        created: Optional[str] = None
        updated: Optional[str] = None
        expires: Optional[str] = None
        pinned: bool = False
        superseded_by: Optional[str] = None
        corrects: Optional[str] = None
        source: Optional[str] = None
        source_episode: Optional[str] = None
        body: Optional[str] = None
        access_count: Optional[int] = None
        last_accessed: Optional[str] = None
        corrected_by: Optional[list[str]] = None  # `get`: the live corrections of the note

    class StepOut(Out):
        action: str
        result: str

    class EpisodeOut(Out):
        """An episode: one task's goal, steps, outcome and the notes it linked."""

        id: str
        project: str
        goal: str
        outcome: str
        created: Optional[str] = None
        updated: Optional[str] = None
        steps: list[StepOut]
        summary: Optional[str] = None
        links: list[str]
        tags: list[str]
        path: str
        body: Optional[str] = None

    class Added(Out):
        id: str
        path: str
        action: str = Field(json_schema_extra={"enum": ["created", "merged"]})
        superseded: list[str]
        similar: list[str]
        not_superseded: list[str] = Field(default_factory=list, description=(
            "Active notes of the same subject and predicate whose file does not parse: "
            "not superseded; fix them, then `supersede`"))

    class RecalledOut(Out):
        id: str
        date: Optional[str] = None
        type: str
        text: str
        project: str
        importance: int
        cut: bool
        path: str
        reason: str
        corrected_by: list[str] = []
        contradicts: list[str] = []
        conflict_markers: Optional[int] = None

    class RecallOut(Out):
        project: str
        query: Optional[str] = None
        no_match: bool
        secrets_left_out: int = 0
        memory_md: Optional[str] = None
        scratchpad: Optional[str] = None
        notes: list[RecalledOut]
        truncated: bool
        omitted: int
        memory_md_cut: bool
        scratchpad_cut: bool
        budget: dict[str, int]
        warnings: list[str]

    class HitOut(Out):
        id: str
        path: str
        project: str
        type: Optional[str] = None
        kind: str
        title: str
        snippet: str
        importance: Optional[int] = None
        status: Optional[str] = None
        score: float
        tags: list[str] = []
        updated: Optional[str] = None

    class SearchOut(Out):
        query: str
        hits: list[HitOut]
        truncated: bool
        unreadable_files: list[str]
        stale_matches: int = Field(0, description=(
            "With no hit: the stale entries that match (include_stale shows them)"))
        other_project_matches: int = Field(0, description=(
            "With no hit: the entries of other projects that match (all_projects shows them)"))

    class NotesOut(Out):
        notes: list[NoteOut]
        count: int

    class ShowOut(Out):
        kind: str = Field(json_schema_extra={"enum": ["note", "episode"]})
        note: Optional[NoteOut] = None
        episode: Optional[EpisodeOut] = None

    class UpdateOut(Out):
        id: str
        path: str
        changed: list[str]
        superseded: list[str]
        similar: list[str]
        note: NoteOut

    class SupersedeOut(Out):
        id: str
        path: str
        status: str
        superseded_by: str

    class ForgetOut(Out):
        forgotten: str
        title: str
        path: str
        successor: Optional[str]
        repointed: list[str]
        left_superseded: list[str]
        unreadable: list[str]
        kept_text: Optional[str]

    class RestoreOut(Out):
        id: str
        path: str
        status: str
        previous_path: str

    class ScratchOut(Out):
        project: str
        path: str
        text: Optional[str] = None
        focus: Optional[str] = None
        questions: list[str]
        next: list[str]
        done: list[str]
        notes: list[str]
        changed: bool
        message: Optional[str] = None
        episode: Optional[dict[str, Any]] = None

    class EpisodesOut(Out):
        episodes: list[EpisodeOut]
        count: int
        unreadable_files: list[str]

    class MemoryOut(Out):
        project: str
        path: str
        exists: bool
        text: Optional[str] = None
        size: int
        max_bytes: int
        over_budget: bool
        changed: bool
        section: Optional[str] = None
        item: Optional[str] = None
        warning: Optional[str] = None

    class BriefOut(Out):
        id: str
        project: str
        type: str
        path: str
        title: str

    class PairOut(Out):
        a: BriefOut
        b: BriefOut
        score: float
        reasons: list[str]

    class ProblemOut(Out):
        kind: str
        count: int
        message: str
        places: list[str] = Field(default_factory=list, description=(
            "The files it is in, as path:line: what (the first 20)"))

    class ReviewOut(Out):
        project: Optional[str] = None
        near_duplicates: list[PairOut]
        contradictions: list[PairOut]
        expired: list[BriefOut]
        unrecalled: list[BriefOut]
        unrecalled_days: Optional[float] = None
        problems: list[ProblemOut] = Field(description=(
            "The health report's summary of problems: the whole store's, whatever project"))

    class Server(MCPServer):  # type: ignore[misc, valid-type]
        """The SDK's server with memctl's error wording and list-changed notifications."""

        async def call_tool(self, name: str, arguments: dict[str, Any],
                            context: Any = None) -> Any:
            # The SDK drops arguments a tool does not take: a misspelt `importnce` would be
            # written as the default without a word, so it is refused, naming the real ones.
            if not arguments_taken:  # the tools are all registered before the first call
                for listed in await self.list_tools():
                    properties = (listed.input_schema or {}).get("properties", {})
                    arguments_taken[listed.name] = list(properties)
                    arguments_kind[listed.name] = {key: schema.get("type")
                                                   for key, schema in properties.items()}
            taken = arguments_taken.get(name)
            unknown = [key for key in arguments or {} if taken is not None and key not in taken]
            if unknown:
                raise ToolError(f"the `{name}` tool takes no argument `{unknown[0]}`; it takes "
                                + ", ".join(f"`{key}`" for key in taken or ()))
            # The SDK reads a string argument as JSON first (a list some clients send as its
            # text): for a list that is kept, but a string is never a flag or a number.
            for key, value in (arguments or {}).items():
                kind = arguments_kind.get(name, {}).get(key)
                if isinstance(value, str) and kind in _NOT_TEXT:
                    raise ToolError(_wrong_type(key, value, f"expected {_NOT_TEXT[kind]}"))
            try:
                result = await super().call_tool(name, arguments, context)
            except UnexpectedToolError as exc:
                # A full disk, a file size limit, a damaged SQLite file: the machine's, said
                # in one line as the CLI says it (tests/test_mcp.py); anything else is a bug.
                said = machine_error(exc.__cause__) if exc.__cause__ is not None else None
                if said is not None:
                    raise ToolError(MCP_WORDING.render(said)) from None
                logging.getLogger("memctl.mcp").error("tool %s failed", name, exc_info=exc)
                raise ToolError(f"the `{name}` tool failed unexpectedly (a bug in memctl; the "
                                "server's log has the details)") from None
            except ToolError as exc:
                raise ToolError(tool_error_text(exc)) from None
            if name not in read_only_tools:  # a read makes no file appear (~2 ms a call saved)
                await notify_if_files_changed(context)
            return result

        async def get_prompt(self, name: str, arguments: Optional[dict[str, Any]] = None,
                             context: Any = None) -> Any:
            # As for tools: an argument the prompt does not take, or a required one left
            # out, is one line naming it (the SDK's own errors name neither, or log a
            # traceback); a failure of the prompt itself is a bug, logged.
            if not prompt_arguments:
                prompt_arguments.update(
                    (listed.name, {given.name: bool(given.required)
                                   for given in listed.arguments or ()})
                    for listed in await self.list_prompts())
            taken = prompt_arguments.get(name)
            if taken is None:
                raise MCPError(code=INVALID_PARAMS, message=(
                    f"there is no prompt `{name}`; the prompts are "
                    + ", ".join(f"`{known}`" for known in prompt_arguments)))
            listed_arguments = ", ".join(f"`{key}`" for key in taken) or "none"
            unknown = [key for key in arguments or {} if key not in taken]
            if unknown:
                raise MCPError(code=INVALID_PARAMS, message=(
                    f"the `{name}` prompt takes no argument `{unknown[0]}`; it takes "
                    f"{listed_arguments}"))
            # A required argument given as "" (or blanks) is as missing: `session_start`
            # with an empty task recalled for nothing.
            missing = [key for key, required in taken.items()
                       if required and not str((arguments or {}).get(key) or "").strip()]
            if missing:
                empty = missing[0] in (arguments or {})
                raise MCPError(code=INVALID_PARAMS, message=(
                    f"`{missing[0]}` is required{' and may not be empty' if empty else ''}: "
                    f"the `{name}` prompt takes {listed_arguments}"))
            try:
                return await super().get_prompt(name, arguments, context)
            except MCPError:
                raise
            except Exception as exc:  # noqa: BLE001 - what the SDK makes of a prompt's failure
                logging.getLogger("memctl.mcp").error("prompt %s failed", name, exc_info=exc)
                raise MCPError(code=INTERNAL_ERROR, message=(
                    f"the `{name}` prompt failed unexpectedly (a bug in memctl; the server's "
                    "log has the details)")) from None

        async def read_resource(self, uri: Any, context: Any = None) -> Any:
            try:
                return await super().read_resource(uri, context)
            except ResourceNotFoundError as exc:
                # The SDK's "Unknown resource: URI" quoted a 100 KB address back whole; a value
                # quoted back is cut (docs/agents.md, "Too much of anything").
                from mcp.shared.exceptions import MCPError
                from mcp_types import INVALID_PARAMS

                message = str(exc)
                if message.startswith("Unknown resource: "):
                    message = (f"Unknown resource: {quoted(str(uri))}; the server's resources "
                               "are listed by resources/list and resources/templates/list")
                # Raised as the answer itself: the SDK's answer to a ResourceNotFoundError
                # adds the whole address again, as `data.uri` (a template's refusal of a
                # 50 KB id too). The address as it is, cut as any value quoted back.
                address = str(uri)
                if len(address) > QUOTED_CHARS:
                    address = address[:QUOTED_CHARS] + "…"
                raise MCPError(code=INVALID_PARAMS, message=message,
                               data={"uri": address}) from None

        async def list_resources(self) -> list[Any]:
            listed = await super().list_resources()
            try:
                files = await anyio.to_thread.run_sync(current_files)
            except MemctlError as exc:
                raise MCPError(code=INTERNAL_ERROR, message=exc.render(MCP_WORDING)) from None
            for found in files:
                name = "MEMORY.md" if found.kind == "memory" else "SCRATCHPAD.md"
                listed.append(Resource(
                    uri=f"memctl://projects/{found.project}/{name}",
                    name=f"{found.project}/{name}", mime_type="text/markdown", size=found.size,
                    title=(f"Project memory of {found.project}" if found.kind == "memory"
                           else f"Scratchpad of {found.project}"),
                    description=("Constraints, decisions, progress and lessons (L2 memory)."
                                 if found.kind == "memory" else
                                 "Working memory: focus, open questions, next steps, done, "
                                 "notes.")))
            return listed

    arguments_taken: dict[str, list[str]] = {}  # tool name -> its arguments, at the first call
    arguments_kind: dict[str, dict[str, Any]] = {}  # tool name -> argument -> its JSON type
    prompt_arguments: dict[str, dict[str, bool]] = {}  # prompt -> argument -> required

    def tool_error_text(exc: Exception) -> str:
        """The one line a model reads: memctl's own message, or the first argument of the
        wrong kind, without the SDK's prefix (`Error executing tool …`)."""
        cause = exc.__cause__
        if isinstance(cause, ValidationError):
            text = _validation_message(cause)
        elif isinstance(cause, ToolError):  # raised by `guarded()`: already worded
            text = str(cause)
        else:
            text = str(exc)
        return " ".join(line.strip() for line in text.splitlines() if line.strip())

    server = Server(
        "memctl",
        title="memctl memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    # The SDK states no `listChanged` for resources unless told at initialization, and
    # offers no public setting for it: this instance's options say it (both transports
    # build them through this method), so clients know to expect the notification.
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is not None and hasattr(lowlevel, "create_initialization_options"):
        plain_options = lowlevel.create_initialization_options

        def with_list_changed(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
            return plain_options(notification_options or NotificationOptions(
                resources_changed=True), *args, **kwargs)

        lowlevel.create_initialization_options = with_list_changed
    if lowlevel is not None and isinstance(getattr(lowlevel, "middleware", None), list):
        lowlevel.middleware.append(WordedParams())

    # The SDK runs plain functions on worker threads; one call at a time keeps the store's
    # lock, git and the index connection simple (and serves several HTTP clients in turn).
    serial = threading.Lock()
    served = serving.ServedStore(store)

    @contextmanager
    def held() -> Iterator[None]:
        """One call's hold on the store: the lock, then the check that the store is still
        the store this server opened (`serving.ServedStore`), before anything is read."""
        with serial:
            served.check()
            yield

    def current_files() -> list[Any]:
        with held():
            return working.agent_files(store)

    known_files = {(found.project, found.kind) for found in working.agent_files(store)}

    async def notify_if_files_changed(context: Any) -> None:
        """After a tool ran: when a MEMORY.md or SCRATCHPAD.md appeared or went, the
        resource list changed; tell the client (the handshake era through its session, the
        2026 era through the SDK's subscription bus; each is a no-op in the other era)."""
        try:
            now_files = {(found.project, found.kind)
                         for found in await anyio.to_thread.run_sync(current_files)}
        except MemctlError:  # the store is gone: the next call says so
            return
        if now_files == known_files:
            return
        known_files.clear()
        known_files.update(now_files)
        if context is None:
            return
        try:
            await context.request_context.session.send_resource_list_changed()
        except Exception:  # noqa: BLE001 - a notification is best effort, never an error
            pass
        try:
            await context.notify_resources_changed()
        except Exception:  # noqa: BLE001 - idem
            pass

    @contextmanager
    def guarded() -> Iterator[None]:
        try:
            with held():
                yield
        except MemctlError as exc:
            raise ToolError(exc.render(MCP_WORDING)) from exc

    def resolve(project: Optional[str], global_scope: bool = False) -> str:
        if global_scope:
            return GLOBAL
        if project is None:
            return default_project
        # "" is bad input, as `--project ""` is for the CLI: never the default project
        # silently (the model may have lost the name it meant).
        return arguments.scope_name(project)

    read_only_tools: set[str] = set()

    def tool(title: str, description: str, *, read_only: bool = False,
             destructive: bool = False, idempotent: bool = False
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = server.tool(
            title=title, description=description,
            annotations=ToolAnnotations(
                title=title, read_only_hint=read_only,
                destructive_hint=None if read_only else destructive,
                idempotent_hint=idempotent, open_world_hint=False))

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            if read_only:
                read_only_tools.add(function.__name__)
            return register(function)

        return decorate

    def reply(text: str, data: dict[str, Any]) -> Any:
        """A result: the text a model reads, and the same facts as structured content (plain
        JSON, checked by the SDK against the tool's output schema)."""
        clean = json.loads(json.dumps(data, ensure_ascii=False, default=str))
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=clean)

    def ids_line(label: str, ids: list[str]) -> str:
        return f"{label}: {', '.join(ids)}" if ids else ""

    def lines(*parts: str) -> str:
        return "\n".join(part for part in parts if part)

    def note_line(row: dict[str, Any]) -> str:
        date = str(row.get("updated") or row.get("created") or "")[:10]
        status = "" if row.get("status") in (None, "active") else f", {row['status']}"
        return (f"- `{row['id']}` ({row.get('type')}, {row.get('project')}, importance "
                f"{row.get('importance')}{status}, {date}) {row.get('title') or ''}")

    def note_text(data: dict[str, Any]) -> str:
        head = [f"# {data.get('title') or data['id']}",
                f"id `{data['id']}` · {data.get('type')} · project {data.get('project')} · "
                f"importance {data.get('importance')} · {data.get('status')} · {data.get('path')}"]
        fields = [f"{key}: {data[key]}" for key in ("subject", "predicate", "tags", "expires",
                                                     "pinned", "superseded_by", "corrects",
                                                     "source_episode", "links", "created", "updated")
                  if data.get(key) not in (None, [], False, "")]
        if data.get("corrected_by"):  # as recall marks it: read the correction first
            head[1] += " · corrected by " + ", ".join(f"`{c}`" for c in data["corrected_by"])
        return lines(*head, "; ".join(fields), "", str(data.get("body") or "").strip())

    def episode_text(data: dict[str, Any]) -> str:
        return lines(f"Episode `{data['id']}` ({data.get('project')}, {data.get('outcome')}, "
                     f"{str(data.get('created') or '')[:10]}): {data.get('goal')}",
                     f"path {data.get('path')}", "",
                     str(data.get("body") or "").strip())

    # --- tools ----------------------------------------------------------------------------

    @tool(
        "Remember a note",
        "Store one durable memory: a fact, preference, rule, decision, correction, skill, "
        "error or experience, as one self-contained statement (say what it is about; no 'it' "
        "or 'this'). memctl checks first: a near-duplicate is not stored twice (action "
        "'merged', the existing id comes back); a note with the same subject+predicate "
        "replaces the old one (listed in 'superseded'); a similar note that may contradict it "
        "is listed in 'similar' (check it with `show`). Text that looks like a secret is "
        "refused.",
    )
    def remember(
        text: Annotated[str, Arg("The memory, one statement; Markdown allowed.")],
        type: NoteTypeArg = "fact",
        importance: Annotated[
            Optional[int],
            Arg(f"{low_importance}-{high_importance}; leave out to let memctl judge (rules and "
                "corrections rank higher).", minimum=low_importance, maximum=high_importance),
        ] = None,
        tags: TagsArg = None,
        subject: Annotated[
            Optional[str],
            short_line("What the note is about (e.g. 'blog-backend'); with predicate, a newer "
                       "note on the same subject+predicate supersedes the older one."),
        ] = None,
        predicate: Annotated[
            Optional[str], short_line("Which property of the subject (e.g. 'database').")
        ] = None,
        expires: Annotated[
            Optional[str], Arg("When it stops being true: a date, a span (30d, 6m) or tomorrow.")
        ] = None,
        scope: Annotated[
            str,
            Arg("'global' for the user's cross-project memory (preferences that hold "
                "everywhere); 'project' (default) for the current project.", enum=list(SCOPES)),
        ] = "project",
        project: ProjectArg = None,
        corrects: Annotated[
            Optional[str], id_arg("For a correction: the id of the note it corrects.")
        ] = None,
        source_episode: Annotated[
            Optional[str], id_arg("The id of the episode this was learnt in.")
        ] = None,
        force: Annotated[
            bool, Arg("Write even when a near-duplicate exists (rarely right).")
        ] = False,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, Added]:
        with guarded():
            in_global = arguments.choice(scope, SCOPES, "scope") == "global"
            result = notes.remember(
                store, text, note_type=type or "fact", project=resolve(project, in_global),
                importance=importance, tags=tags or [], subject=subject, predicate=predicate,
                expires=expires, corrects=corrects, source_episode=source_episode, force=force,
                allow_secret=allow_secret, source="mcp")
            data = result.to_dict()
        if result.action == "merged":
            head = (f"Not stored twice: a near-duplicate of note `{result.id}`, which was "
                    f"refreshed instead ({result.path}).")
        else:
            head = f"Stored note `{result.id}` ({result.path})."
        if result.corrects:
            head += (f" A correction of `{result.corrects}`: that note stays active, the "
                     "correction ranks ahead of it.")
        return reply(lines(head, ids_line("Superseded (no longer active)", result.superseded),
                           ids_line("Not superseded: same subject and predicate, but the file "
                                    "does not parse (fix it, then `supersede`)",
                                    result.not_superseded),
                           ids_line("Similar notes that may contradict it (check with `show`)",
                                    result.similar)), data)

    @tool(
        "Recall memory for a task",
        "The compact memory block for the current project: MEMORY.md (constraints, decisions, "
        "progress, lessons), the working scratchpad, and the most relevant notes (corrections "
        "and rules first), each with its id, within a size budget. Call it at the start of a "
        "task; pass a few words about the task as `query` to steer which notes come back. A "
        "note ending in … was cut: `show` it for the whole text.",
        read_only=True, idempotent=True,
    )
    def recall(
        query: Annotated[Optional[str], Arg("What the task is about, a few keywords.")] = None,
        project: ProjectArg = None,
        limit: Annotated[
            Optional[int], limit_arg("At most this many notes (default: the setting "
                                     "recall.max_notes, 8).", low=0)
        ] = None,
    ) -> Annotated[CallToolResult, RecallOut]:
        with guarded():
            result = recalling.recall(store, resolve(project), query, max_notes=limit,
                                      wording=MCP_WORDING)
        return reply(result.markdown, result.to_dict())

    @tool(
        "Search memory",
        'Ranked full-text search of memory (English and Chinese; words, prefixes, "quoted '
        'phrases"; questions welcome), in the current project and global memory. Returns hits '
        "best first with id, type, title and a snippet; `show` an id for the whole note. "
        "Superseded, expired and archived notes are left out unless include_stale is true.",
        read_only=True, idempotent=True,
    )
    def search(
        query: Annotated[str, Arg("Words to look for.")],
        project: ProjectArg = None,
        all_projects: AllProjectsArg = False,
        type: Annotated[
            Optional[str], Arg("Only notes of this type, or other entries (memory, scratchpad, "
                               "episode).", enum=list(NOTE_TYPES + KIND_TYPES))
        ] = None,
        tags: Annotated[
            Optional[list[str]], tags_arg("Only entries with all these tags.")
        ] = None,
        since: Annotated[
            Optional[str], Arg("Only entries updated since a date, a span (7d, 2w), today or yesterday.")
        ] = None,
        limit: Annotated[
            Optional[int], limit_arg("At most this many hits (default: the setting "
                                     "search.default_limit, 20).")
        ] = None,
        include_stale: Annotated[
            bool, Arg("Also superseded, expired and archived notes.")
        ] = False,
    ) -> Annotated[CallToolResult, SearchOut]:
        with guarded():
            found = retrieval.search(
                store, query, project=None if all_projects else resolve(project),
                all_projects=all_projects, types=[type] if type else [], tags=tags or [],
                since=since, limit=limit, include_stale=include_stale)
        hits = [hit.to_dict() for hit in found.hits]
        shown = shown_query(query)
        data = {"query": shown, "hits": hits, "truncated": found.truncated,
                "unreadable_files": [str(error) for error in found.parse_errors],
                "stale_matches": found.stale_matches,
                "other_project_matches": found.other_project_matches}
        if not hits and (found.stale_matches or found.other_project_matches):
            text = lines(f"No live entry matches {shown!r}"
                         + ("" if all_projects else " in this project or global") + ".",
                         *([f"{found.stale_matches} stale (superseded, archived or expired) "
                            "entries do: include_stale shows them."]
                           if found.stale_matches else []),
                         *([f"Other projects hold {found.other_project_matches} matching "
                            f"entr{'y' if found.other_project_matches == 1 else 'ies'}: "
                            "all_projects shows them."]
                           if found.other_project_matches else []))
        elif not hits:
            text = (f"No entry matches {shown!r}. Try other words, fewer words, or "
                    "include_stale / all_projects.")
        else:
            text = lines(f"{len(hits)} hit{'s' if len(hits) != 1 else ''} for {shown!r}, "
                         "best first:",
                         *(f"{number}. `{hit['id']}` ({hit.get('type') or hit['kind']}, "
                           f"{hit['project']}) {hit['title']} — {hit['snippet']}"
                           for number, hit in enumerate(hits, start=1)))
        if found.truncated:
            text += "\n(The query was cut to its first words.)"
        if data["unreadable_files"]:  # as `memctl search` warns on stderr
            text += ("\nFiles that do not parse (their last good version is used, or they are "
                     "left out): " + "; ".join(data["unreadable_files"]))
        return reply(text, data)

    @tool(
        "Get the exact fact",
        "The exact fact, in one step: the active note(s) about `subject` (and `predicate`), "
        "newest first, with their fields and body. Use it when you know what the fact is about "
        "(e.g. subject 'blog-backend', predicate 'database'); `search` finds notes by words.",
        read_only=True, idempotent=True,
    )
    def get(
        subject: Annotated[str, short_line("What the fact is about, as stored in notes' "
                                           "subject.")],
        predicate: Annotated[
            Optional[str], short_line("Which property of the subject (e.g. 'database').")
        ] = None,
        project: ProjectArg = None,
        all_projects: AllProjectsArg = False,
    ) -> Annotated[CallToolResult, NotesOut]:
        with guarded():
            found = notes.get(store, subject, predicate,
                              project=None if all_projects else resolve(project))
        rows = [fact.to_dict() for fact in found]
        return reply("\n\n".join(note_text(row) for row in rows),
                     {"notes": rows, "count": len(rows)})

    @tool(
        "Show a note or episode",
        "One note (or episode) in full, by id or an unambiguous id prefix: its fields and "
        "body.",
        read_only=True, idempotent=True,
    )
    def show(id: IdArg) -> Annotated[CallToolResult, ShowOut]:
        with guarded():
            shown = notes.show(store, id)
            data = shown.to_dict()
        if shown.episode is not None:
            return reply(episode_text(data), {"kind": "episode", "episode": data})
        if shown.broken is not None:
            return reply(broken_text(shown.broken, data), {"kind": "note", "note": data})
        return reply(note_text(data), {"kind": "note", "note": data})

    @tool(
        "List notes",
        "Browse notes with filters, newest first (or by importance, type, project): id, "
        "type, project, importance, date and title of each; `show` one for its text. By "
        "default the active notes of the current project and global.",
        read_only=True, idempotent=True,
    )
    def list_notes(
        project: ProjectArg = None,
        all_projects: AllProjectsArg = False,
        type: Annotated[Optional[str], Arg("Only this type.", enum=list(NOTE_TYPES))] = None,
        tag: Annotated[Optional[str], short_line("Only notes with this tag.")] = None,
        status: Annotated[
            str, Arg("Only this status, or any.", enum=list(LIST_STATUSES))
        ] = "active",
        since: Annotated[
            Optional[str], Arg("Only notes updated since a date, a span (7d, 2w), today or yesterday.")
        ] = None,
        sort: Annotated[
            str, Arg("Order (newest or highest first).", enum=list(LIST_SORTS))
        ] = "updated",
        limit: Annotated[int, limit_arg("At most this many notes.")] = 50,
    ) -> Annotated[CallToolResult, NotesOut]:
        with guarded():
            rows, _index = notes.list_notes(
                store, project=None if all_projects else resolve(project), note_type=type,
                tag=tag, status=status, since=since, sort=sort, limit=limit)
        more = (f"\n(Only the first {limit}: raise `limit` or narrow the filters for more.)"
                if len(rows) == limit else "")
        text = (lines(f"{len(rows)} note{'s' if len(rows) != 1 else ''}:",
                      *(note_line(row) for row in rows)) + more
                if rows else "No notes match these filters.")
        return reply(text, {"notes": rows, "count": len(rows)})

    @tool(
        "Update a note",
        "Change one note in place, keeping its id: its text and/or fields (importance, tags, "
        "subject, predicate, expires, pinned). Leave out what stays; an empty subject, "
        "predicate or expires removes it; tags replaces the tags. The same checks as "
        "`remember`: values are validated, secrets refused, another note with the same "
        "subject+predicate is superseded by this one, and similar notes that may contradict "
        "it are listed. To replace a note by a different statement, prefer `remember` + "
        "`supersede`, which keeps the history readable.",
        destructive=True, idempotent=True,
    )
    def update_note(
        id: IdArg,
        text: Annotated[Optional[str], Arg("The note's new text (replaces the old text).")] = None,
        importance: Annotated[
            Optional[int], Arg(f"{low_importance}-{high_importance}.", minimum=low_importance,
                               maximum=high_importance)
        ] = None,
        tags: TagsArg = None,
        subject: Annotated[Optional[str], short_line("What the note is about; '' removes it.")
                           ] = None,
        predicate: Annotated[Optional[str], short_line("Which property of the subject; '' "
                                                       "removes it.")] = None,
        expires: Annotated[
            Optional[str], Arg("When it stops being true: a date, a span (30d, 6m) or tomorrow; '' "
                               "removes it.")
        ] = None,
        pinned: Annotated[
            Optional[bool], Arg("Pinned notes always come in recall and are never archived.")
        ] = None,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, UpdateOut]:
        with guarded():
            result = notes.update(store, id, text=text, importance=importance, tags=tags,
                                  subject=subject, predicate=predicate, expires=expires,
                                  pinned=pinned, allow_secret=allow_secret)
        data = {**result.to_dict(), "note": result.note.to_dict()}
        head = (f"Updated note `{result.note.id}`: {', '.join(result.changed)} "
                f"({result.note.path})." if result.changed else
                f"Nothing changed: note `{result.note.id}` already says that.")
        return reply(lines(head, ids_line("Superseded (no longer active)", result.superseded),
                           ids_line("Similar notes that may contradict it (check with `show`)",
                                    result.similar)), data)

    @tool(
        "Supersede a note",
        "Mark note `old_id` as replaced by note `new_id`: the old note stays on disk and in "
        "history but leaves recall and default search. Use it when a newer note makes an "
        "older one outdated (write the new one with `remember` first).",
        idempotent=True,
    )
    def supersede(
        old_id: Annotated[str, id_arg("The note that is no longer true.")],
        new_id: Annotated[str, id_arg("The note that replaces it.")],
    ) -> Annotated[CallToolResult, SupersedeOut]:
        with guarded():
            old, new = notes.supersede(store, old_id, new_id)
        return reply(f"Note `{old.id}` is superseded by `{new.id}` ({old.path}).",
                     {"id": old.id, "path": old.path, "status": old.status,
                      "superseded_by": new.id})

    @tool(
        "Forget a note",
        "Delete a note that is wrong or no longer wanted (a tombstone keeps sync from bringing "
        "it back; git history keeps the text). To replace outdated knowledge, prefer "
        "`remember` with the same subject+predicate, `supersede`, or a correction.",
        destructive=True, idempotent=False,
    )
    def forget(id: IdArg) -> Annotated[CallToolResult, ForgetOut]:
        with guarded():
            done = notes.forget(store, id)
        note = done.note
        said = "\n".join([f"Forgot note `{note.id}`: {note.title}",
                          *(MCP_WORDING.render(message) for message in done.messages())])
        return reply(said, {"forgotten": note.id, "title": note.title, "path": note.path,
                            "successor": done.successor, "repointed": done.repointed,
                            "left_superseded": done.left_superseded,
                            "unreadable": done.unreadable, "kept_text": done.kept_text})

    @tool(
        "Update the scratchpad",
        "Your working memory for the task at hand (SCRATCHPAD.md, also read by the user). "
        "Actions: show; focus (replace the current focus with text); question (add an open "
        "question); next (add a numbered next step); done (text = the step's number or words: "
        "moves it to Done with the time); note (add a timed observation); resolve (text = the "
        "open question's number or words, with an optional answer: it becomes a timed note); "
        "clear (empty it when the task is over; with archive=true and an outcome it is kept "
        "as an episode).",
        destructive=True,
    )
    def update_scratchpad(
        action: Annotated[
            str, Arg("What to do.", enum=list(working.SCRATCH_ACTIONS)),
        ],
        text: Annotated[
            Optional[str],
            Arg("The text for focus/question/next/note, or N for done and resolve."),
        ] = None,
        answer: Annotated[
            Optional[str], Arg("With resolve: the answer to the question.")
        ] = None,
        project: ProjectArg = None,
        archive: Annotated[
            bool, Arg("With clear: keep the finished state as an episode first.")
        ] = False,
        outcome: Annotated[
            Optional[str], Arg("With clear and archive: how the task ended.", enum=list(OUTCOMES))
        ] = None,
        goal: Annotated[
            Optional[str], Arg("With clear and archive: the goal (default: the focus).")
        ] = None,
        summary: Annotated[
            Optional[str], Arg("With clear and archive: what to remember about it.")
        ] = None,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, ScratchOut]:
        with guarded():
            view = working.scratchpad(store, resolve(project), action, text, archive=archive,
                                      outcome=outcome, goal=goal, summary=summary,
                                      allow_secret=allow_secret, answer=answer)
            data = view.to_dict()
        data.pop("exists", None)
        if action.strip().lower() == "show":  # the service took it case-insensitively
            text_out = view.text if view.text is not None else (
                f"No {view.path} yet; action focus or next starts one.")
        else:
            text_out = f"{view.message} ({view.path})"
        return reply(text_out, data)

    @tool(
        "Record an episode",
        "Record an episode: what happened in one task or task phase, for later search. Give "
        "the goal, the steps as 'action => result', the outcome (say it honestly: completed, "
        "partial, in_progress or failed), a short summary, and the ids of notes it produced.",
    )
    def add_episode(
        goal: Annotated[str, Arg("What the task set out to do.")],
        outcome: Annotated[str, Arg("How it ended.", enum=list(OUTCOMES))],
        steps: Annotated[
            Optional[list[str]], Arg("In order, each 'action => result'.")
        ] = None,
        summary: Annotated[Optional[str], Arg("What to remember about it.")] = None,
        links: Annotated[
            Optional[list[str]], ids_arg("Ids of notes this task produced or used.")
        ] = None,
        tags: TagsArg = None,
        project: ProjectArg = None,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, EpisodeOut]:
        with guarded():
            episode = working.add_episode(
                store, resolve(project), goal=goal, outcome=outcome, steps=steps or [],
                summary=summary, links=links or [], tags=tags or [], source="mcp",
                allow_secret=allow_secret)
        return reply(f"Recorded episode `{episode.id}` ({episode.outcome}): {episode.goal} "
                     f"({episode.path}).", episode.to_dict())

    @tool(
        "List episodes",
        "Episodes (what happened in past tasks: goal, outcome, steps), newest first, of the "
        "current project (or every project); `show` one for its whole text.",
        read_only=True, idempotent=True,
    )
    def list_episodes(
        project: ProjectArg = None,
        all_projects: AllProjectsArg = False,
        outcome: OutcomeArg = None,
        limit: Annotated[int, limit_arg("At most this many episodes.")] = 20,
    ) -> Annotated[CallToolResult, EpisodesOut]:
        with guarded():
            found, problems = working.list_episodes(
                store, None if all_projects else [resolve(project)], outcome=outcome,
                limit=limit)
        rows = [episode.to_dict(with_body=False) for episode in found]
        text = (lines(f"{len(rows)} episode{'s' if len(rows) != 1 else ''}, newest first:",
                      *(f"- `{row['id']}` ({row['project']}, {row['outcome']}, "
                        f"{str(row['created'])[:10]}, {len(row['steps'])} step{'' if len(row['steps']) == 1 else 's'}) {row['goal']}"
                        for row in rows))
                if rows else "No episodes.")
        return reply(text, {"episodes": rows, "count": len(rows), "unreadable_files": problems})

    @tool(
        "Update or finish an episode",
        "Change an episode recorded before, by id: finish=true ends an in_progress one (outcome "
        "required: completed, partial or failed); otherwise a new outcome or summary. Steps, "
        "links and tags given are added to those it has.",
    )
    def update_episode(
        id: Annotated[str, id_arg("The episode's id, or its first characters.")],
        outcome: OutcomeArg = None,
        finish: Annotated[
            bool, Arg("End an in_progress episode (outcome required).")
        ] = False,
        summary: Annotated[Optional[str], Arg("A new summary (replaces it).")] = None,
        steps: Annotated[
            Optional[list[str]], Arg("More steps, each 'action => result'.")
        ] = None,
        links: Annotated[
            Optional[list[str]], ids_arg("Ids of more notes it produced or used.")
        ] = None,
        tags: Annotated[Optional[list[str]], tags_arg("Tags to add.")] = None,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, EpisodeOut]:
        with guarded():
            change = working.finish_episode if finish else working.update_episode
            episode = change(store, id, outcome=outcome, summary=summary, steps=steps or [],
                             links=links or [], tags=tags or [], allow_secret=allow_secret)
            data = episode.to_dict()
        return reply(f"Episode `{episode.id}` ({episode.outcome}): {episode.goal} "
                     f"({episode.path}).", data)

    @tool(
        "Project memory (MEMORY.md)",
        "The project's L2 memory, MEMORY.md: constraints, decisions, progress, lessons — read "
        "whole every session, so keep items short and lasting. Actions: show; add (append a "
        "dated item to `section`: constraints, decisions, progress or lessons); replace (the "
        "whole file becomes `text`: use it to distil the file when it grows past its budget).",
        destructive=True,
    )
    def project_memory(
        action: Annotated[str, Arg("What to do.", enum=list(PROJECT_MEMORY_ACTIONS))],
        section: Annotated[
            Optional[str],
            Arg("For add: the section (its Chinese name works too: 技术约束, 关键决策, 当前进度, "
                "教训).", enum=list(MEMORY_SECTIONS)),
        ] = None,
        text: Annotated[
            Optional[str], Arg("For add: the item. For replace: the whole file.")
        ] = None,
        project: ProjectArg = None,
        allow_secret: AllowSecretArg = False,
    ) -> Annotated[CallToolResult, MemoryOut]:
        with guarded():
            chosen = arguments.choice(action, PROJECT_MEMORY_ACTIONS, "action")
            working.check_project_memory_arguments(chosen, section=section, text=text)
            name = resolve(project)
            if chosen == "show":
                view = working.project_memory_show(store, name)
            elif chosen == "add":
                view = working.project_memory_add(store, name, section, text or "",
                                                  allow_secret=allow_secret)
            else:
                view = working.project_memory_replace(store, name, text or "",
                                                      allow_secret=allow_secret)
            data = view.to_dict()
            warning = view.warning(MCP_WORDING)
        if warning:
            data["warning"] = warning
        if chosen == "show":
            text_out = view.text if view.text is not None else (
                f"No {view.path} yet; action add creates it.")
        elif chosen == "add":
            text_out = f"Added to {view.section} in {view.path}: {view.item}"
        else:
            text_out = (f"Replaced {view.path} ({view.size} bytes)." if view.changed
                        else f"{view.path} already had that text.")
        return reply(lines(text_out, f"Warning: {warning}" if warning else ""), data)

    def broken_text(broken: Exception, data: dict[str, Any]) -> str:
        """A note whose file does not parse: its problem first, then the file as it is
        (docs/format.md)."""
        return lines(f"{broken}; the file as it is (search and recall use its last good "
                     "version):", "", data["raw"])

    def review_text(data: dict[str, Any]) -> str:
        def brief(entry: dict[str, Any]) -> str:
            return f"`{entry['id']}` ({entry['type']}, {entry['project']}) {entry['title']}"

        parts = [f"Memory review of {data['project'] or 'every project'}:"]
        for key, label in (("near_duplicates", "Near-duplicates (keep one: `forget` or "
                                               "`supersede` the other)"),
                           ("contradictions", "May contradict each other (`show` both; "
                                              "`supersede`, `update_note` or `forget`)")):
            parts.append(f"\n{label}: {len(data[key])}")
            parts.extend(f"- {brief(pair['a'])}\n  vs {brief(pair['b'])} (score "
                         f"{pair['score']}{', ' + ', '.join(pair['reasons']) if pair['reasons'] else ''})"
                         for pair in data[key])
        parts.append(f"\nExpired (archive, renew `expires` with `update_note`, or `forget`): "
                     f"{len(data['expired'])}")
        parts.extend(f"- {brief(entry)}, expired {entry.get('expires')}"
                     for entry in data["expired"])
        parts.append(f"\nNot recalled for {data['unrecalled_days']:g} days or more (still "
                     f"true? still useful?): {len(data['unrecalled'])}")
        parts.extend(f"- {brief(entry)}, idle {entry.get('days')} days"
                     for entry in data["unrecalled"])
        if data["problems"]:
            # The report's summary: the whole store's, whatever project was asked about.
            parts.append("\nProblems of the whole store (the files of each named, the first "
                         "20):")
            for problem in data["problems"]:
                parts.append(f"- {problem['message']}")
                parts.extend(f"  - {place}" for place in problem.get("places", []))
        if not any(data[key] for key in upkeep.REVIEW_KEYS) and not data["problems"]:
            parts.append("\nNothing to tidy.")
        return "\n".join(parts)

    @tool(
        "Review memory health",
        "What needs tidying in memory, from the health report: near-duplicate pairs, pairs "
        "that may contradict each other, expired notes, and notes nobody recalled for months; "
        "each with ids. Resolve them with `show`, `update_note`, `supersede`, `forget` "
        "(the `consolidate` prompt walks through it).",
        read_only=True, idempotent=True,
    )
    def review(
        project: ProjectArg = None,
        all_projects: AllProjectsArg = False,
    ) -> Annotated[CallToolResult, ReviewOut]:
        with guarded():
            data = upkeep.review(store, None if all_projects else resolve(project))
        return reply(review_text(data), data)

    @tool(
        "Restore a note",
        "Bring an archived or superseded note back to active (the reverse of the TTL sweep "
        "or of `supersede`).",
        idempotent=True,
    )
    def restore(id: IdArg) -> Annotated[CallToolResult, RestoreOut]:
        with guarded():
            note, previous_path = upkeep.restore(store, id)
        # A superseded note is restored where it is: a move is named only when there was one.
        where = (note.path if previous_path == note.path
                 else f"moved from {previous_path} to {note.path}")
        return reply(f"Restored note `{note.id}` ({where}).",
                     {"id": note.id, "path": note.path, "status": note.status,
                      "previous_path": previous_path})

    # --- resources ------------------------------------------------------------------------
    # The files an agent reads whole, per project, and any note or episode by id. Listed
    # dynamically (`Server.list_resources`); read through these templates.

    def resource_failure(exc: MemctlError) -> Exception:
        return ResourceNotFoundError(exc.render(MCP_WORDING))

    @server.resource(
        "memctl://projects/{project}/MEMORY.md", name="project-memory",
        title="Project memory (MEMORY.md)", mime_type="text/markdown",
        description="A project's L2 memory: constraints, decisions, progress, lessons.")
    def memory_resource(project: str) -> str:
        try:
            with held():
                view = working.project_memory_show(store, arguments.scope_name(project))
        except MemctlError as exc:
            raise resource_failure(exc) from None
        if view.text is None:
            raise ResourceNotFoundError(f"{view.path} does not exist yet")
        return view.text

    @server.resource(
        "memctl://projects/{project}/SCRATCHPAD.md", name="scratchpad",
        title="Scratchpad (SCRATCHPAD.md)", mime_type="text/markdown",
        description="A project's working memory: focus, open questions, next steps, done, "
                    "notes.")
    def scratchpad_resource(project: str) -> str:
        try:
            with held():
                view = working.scratchpad(store, arguments.scope_name(project), "show")
        except MemctlError as exc:
            raise resource_failure(exc) from None
        if view.text is None:
            raise ResourceNotFoundError(f"{view.path} does not exist yet")
        return view.text

    @server.resource(
        "memctl://notes/{id}", name="note", title="A note or episode by id",
        mime_type="text/markdown",
        description="One note (or episode), whole: a header with its fields, then its text. "
                    "An unambiguous id prefix works too.")
    def note_resource(id: str) -> str:
        try:
            with held():
                shown = notes.show(store, id)
                data = shown.to_dict()
        except MemctlError as exc:
            raise resource_failure(exc) from None
        if shown.episode is not None:
            return episode_text(data)
        # Never the last good fields alone, as if the note were well (the `show` tool's text).
        return broken_text(shown.broken, data) if shown.broken is not None else note_text(data)

    # --- prompts --------------------------------------------------------------------------

    def prompt_failure(exc: MemctlError) -> Exception:
        return MCPError(code=INVALID_PARAMS, message=exc.render(MCP_WORDING))

    @server.prompt(
        name="session_start", title="Start a session: recall memory for this task",
        description="The memory block for the task at hand (project memory, scratchpad, the "
                    "notes that matter for it) and how to use memory while working.")
    def session_start(
        task: Annotated[str, Field(description="What this session is about, in a few words.")],
        project: Annotated[Optional[str], Field(description="The project (default: the "
                                                            "current one).")] = None,
    ) -> list[Any]:
        try:
            with held():
                result = recalling.recall(store, resolve(project), task, wording=MCP_WORDING)
        except MemctlError as exc:
            raise prompt_failure(exc) from None
        return [UserMessage(lines(
            f"I am starting a task: {task}",
            "",
            "Here is what memctl remembers that bears on it. Treat it as context; corrections "
            "override anything else you believe.",
            "",
            result.markdown,
            "",
            "While working: `search` memory before guessing when a topic may have history; "
            "`remember` each lasting fact, decision, preference, pitfall or procedure as one "
            "self-contained note (a correction of a note with type correction and `corrects`); "
            "keep `update_scratchpad` current (focus, next steps, done). Never store secrets."))]

    @server.prompt(
        name="end_of_task", title="End of task: record the episode and the lessons",
        description="What to write to memory when a task (or a phase of it) ends: the "
                    "episode, the lessons, lasting project facts, and a clean scratchpad.")
    def end_of_task(
        outcome: Annotated[Optional[str], Field(
            description=f"How it ended: {', '.join(OUTCOMES)} (say it honestly).")] = None,
        project: Annotated[Optional[str], Field(description="The project (default: the "
                                                            "current one).")] = None,
    ) -> list[Any]:
        try:
            with held():
                name = resolve(project)
                chosen = arguments.outcome(outcome) if outcome else None
                pad = working.scratchpad(store, name, "show")
        except MemctlError as exc:
            raise prompt_failure(exc) from None
        state = pad.state
        said = f"The outcome is {chosen}." if chosen else (
            f"First decide the honest outcome: {', '.join(OUTCOMES)}.")
        return [UserMessage(lines(
            f"The task in project {name} has ended. {said} Record it in memctl:",
            "",
            "1. `add_episode` with the goal, the steps in order as 'action => result' (what you "
            "did and what came of it, failures too), the outcome, a two-line summary, and the "
            "ids of the notes the task produced or used in `links`.",
            "2. For each lesson a future session should know (a pitfall and its fix, a "
            "procedure that worked, a decision and its reason): `remember` it as one "
            "self-contained note of type error, experience or decision, with source_episode "
            "= the new episode's id. `search` first so you update (`update_note`) or "
            "`supersede` an existing note instead of repeating it.",
            "3. Lasting project-level changes: `project_memory` action add, section "
            "decisions, progress, constraints or lessons (one short dated line each).",
            "4. `update_scratchpad` action clear with archive false (the episode already "
            "keeps the story), or leave it if the work continues.",
            "",
            "The scratchpad as it stands:" if pad.text else "There is no scratchpad.",
            (f"focus: {state.focus or '-'}\nnext: {'; '.join(state.next) or '-'}\n"
             f"done: {'; '.join(state.done) or '-'}\nnotes: {'; '.join(state.notes) or '-'}\n"
             f"open questions: {'; '.join(state.questions) or '-'}") if pad.text else ""))]

    @server.prompt(
        name="consolidate", title="Consolidate memory: resolve duplicates, contradictions "
                                  "and stale notes",
        description="Walks the health report's near-duplicates, possible contradictions, "
                    "expired and long-unrecalled notes, and asks to resolve each with the "
                    "tools.")
    def consolidate(
        project: Annotated[Optional[str], Field(description="The project (default: the "
                                                            "current one); 'all' for every "
                                                            "project.")] = None,
    ) -> list[Any]:
        try:
            with held():
                scope = None if project == "all" else resolve(project)
                data = upkeep.review(store, scope)
        except MemctlError as exc:
            raise prompt_failure(exc) from None
        return [UserMessage(lines(
            "Consolidate memctl's memory. Work through the list below, one item at a time:",
            "- Near-duplicates: `show` both; keep the better note (`update_note` it to carry "
            "anything only the other says), then `supersede` the other by it (or `forget` it "
            "when it adds nothing).",
            "- Possible contradictions: `show` both and decide which is true now. `supersede` "
            "the outdated one by the current one; if neither is right, `remember` the truth "
            "and supersede both; if they do not really conflict, make each self-contained "
            "with `update_note`. Ask the user when you cannot tell.",
            "- Expired notes: if still true, `update_note` with a new `expires` (or '' to drop "
            "it); otherwise `forget` it or let the archive sweep take it.",
            "- Notes nobody recalled for long: keep what is still true and useful; `forget` "
            "what is not; `update_note` what is vague.",
            "Never delete a note you have not read. Finish with `review` to check the result, "
            "and say what you changed.",
            "",
            review_text(data)))]

    manager = getattr(server, "_tool_manager", None)  # the SDK offers no public listing of its
    for registered in manager.list_tools() if manager is not None else ():  # Tool objects
        _lean_output_schema(registered)
    return server


def _lean_output_schema(tool: Any) -> None:
    """The tool's output schema with each `$ref` replaced by the definition it names and each
    `anyOf` of bare types (pydantic's Optional) written as one list of types: the same schema,
    which a client checks every result against (the SDK's client does, with `jsonschema`)
    in a third less time: ~0.6 ms of a search's 10 hits (bench/bench_mcp.py). The SDK reads
    the schema from the tool's metadata at each listing and call."""
    metadata = getattr(tool, "fn_metadata", None)
    schema = getattr(metadata, "output_schema", None)
    if not isinstance(schema, dict):
        return
    definitions = schema.get("$defs", {})

    def lean(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [lean(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        target = node.get("$ref")
        if isinstance(target, str) and len(node) == 1 and target.startswith("#/$defs/"):
            name = target.removeprefix("#/$defs/")
            if name in definitions and name not in seen:  # a model holding itself keeps its $ref
                return lean(definitions[name], (*seen, name))
        result = {key: lean(value, seen) for key, value in node.items() if key != "$defs"}
        branches = result.get("anyOf")
        if isinstance(branches, list) and branches and "type" not in result and all(
                isinstance(branch, dict) and set(branch) == {"type"}
                and isinstance(branch["type"], str) for branch in branches):
            del result["anyOf"]
            result["type"] = [branch["type"] for branch in branches]
        return result

    leaner = lean(schema, ())
    if "$ref" in json.dumps(leaner):  # a definition refers to itself: keep the definitions
        leaner["$defs"] = lean(definitions, ())
    metadata.output_schema = leaner
