"""The MCP servers of `[mcp_servers]`, connected with the `mcp` SDK's client, and their
tools offered to the model next to the built-in ones.

Invariants:
- One thread runs an asyncio loop holding every server's connection (each in a task of
  its own, which opens and closes its transport, as the SDK's context managers want);
  the agent's thread calls into it and waits at most the server's `tool_timeout`.
- A server that fails to start within its `startup_timeout`, or dies later, is one
  line (`notes`), and the chat goes on without its tools: a call to one of them is an
  error result saying so. Nothing of a server reaches the terminal but that line (its
  stderr goes to `<home>/mcp/<name>.log`).
- A tool is offered as `mcp__<server>__<tool>` (names the model's API accepts; others
  are left out with a note), needs the user's approval like any tool that can change
  things, and its result goes through the registry's output limit, so through the
  same redaction and visible-safe printing as every tool output.
- A stdio server gets the SDK's default environment (no variables of ours, no keys)
  plus its `env`; an HTTP one, its headers from the named variables of `env`.
"""

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.tools.mcp_settings import McpServer
from gitsessions.services.tools.result import ToolResult

PREFIX = "mcp__"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


class McpHub:
    """Connected servers and their tools (see the module's invariants)."""

    def __init__(self, servers: list[McpServer], env: Mapping[str, str], logs: Path) -> None:
        self.servers = {s.name: s for s in servers}
        self.env = env
        self.logs = logs
        self.tools: dict[str, tuple[str, Any]] = {}  # offered name -> (server, mcp Tool)
        self.failed: dict[str, str] = {}  # server -> why it is not there
        self._sessions: dict[str, Any] = {}
        self._loop = asyncio.new_event_loop()
        self._closing: asyncio.Event | None = None
        self._tasks: list[Any] = []
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp")

    def start(self, notes: Callable[[str], None]) -> None:
        """Connect every server (all at once; each within its start-up timeout)."""
        if not self.servers:
            return
        self._thread.start()
        self._closing = self._call(self._make_event(), 5)
        waits = {
            name: asyncio.run_coroutine_threadsafe(self._open(server), self._loop)
            for name, server in self.servers.items()
        }
        for name, future in waits.items():
            server = self.servers[name]
            try:
                listed = future.result(server.startup_timeout + 5)
            except Exception as error:  # any failure of a server is its line (Ctrl-C is not)
                why = _why(error)
                self.failed[name] = why
                notes(f"mcp: server {name} did not start ({why}); its tools are not offered")
                continue
            for tool in listed:
                offered = tool_name(name, tool.name)
                if not server.offers(tool.name):
                    continue
                if not _NAME.match(offered):
                    notes(f"mcp: {name}'s tool {tool.name[:60]!r}: not a name the model can call")
                    continue
                self.tools[offered] = (name, tool)

    async def _make_event(self) -> asyncio.Event:
        return asyncio.Event()

    def _call(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _open(self, server: McpServer) -> list[Any]:
        """Start `server`'s connection in a task of its own; its tools once initialized."""
        ready: asyncio.Future[list[Any]] = self._loop.create_future()
        task = asyncio.ensure_future(self._hold(server, ready))
        self._tasks.append(task)
        try:
            return await asyncio.wait_for(ready, server.startup_timeout)
        except BaseException:
            task.cancel()  # a server that did not start in time is stopped, not left hanging
            raise

    async def _hold(self, server: McpServer, ready: "asyncio.Future[list[Any]]") -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(server, stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                listed = await session.list_tools()
                self._sessions[server.name] = session
                if not ready.done():
                    ready.set_result(list(listed.tools))
                assert self._closing is not None
                await self._closing.wait()
        except BaseException as error:  # told once, as the server's line
            if not ready.done():
                ready.set_exception(error)
            else:
                self.failed[server.name] = _why(error)
        finally:
            self._sessions.pop(server.name, None)

    def _transport(self, server: McpServer, stack: contextlib.AsyncExitStack) -> Any:
        if server.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = dict(server.headers)
            for header, variable in server.env_headers.items():
                if self.env.get(variable):
                    headers[header] = self.env[variable]
            if server.bearer_env and self.env.get(server.bearer_env):
                headers["Authorization"] = f"Bearer {self.env[server.bearer_env]}"
            client = httpx2.AsyncClient(headers=headers)
            return streamable_http_client(server.url, http_client=client)
        from mcp import StdioServerParameters, stdio_client

        self.logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        errlog = stack.enter_context(open(self.logs / f"{server.name}.log", "a"))  # noqa: SIM115
        params = StdioServerParameters(
            command=str(server.command),
            args=list(server.args),
            env=dict(server.env),
            cwd=server.cwd,
        )
        return stdio_client(params, errlog=errlog)

    def call(self, offered: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call an offered tool; every failure is an error result for the model."""
        name, tool = self.tools[offered]
        server = self.servers[name]
        session = self._sessions.get(name)
        if session is None:
            why = self.failed.get(name, "it is not connected")
            return ToolResult(f"error: MCP server {name} is gone ({why})", ok=False)
        try:
            result = self._call(session.call_tool(tool.name, dict(arguments)), server.tool_timeout)
        except TimeoutError:
            return ToolResult(
                f"error: {name}'s {tool.name} did not answer within {server.tool_timeout:g} s",
                ok=False,
            )
        except Exception as error:  # the server's failure, not ours (Ctrl-C is not)
            why = _why(error)
            if "closed" in why.lower():  # its process ended, or its connection did
                self._sessions.pop(name, None)
                self.failed[name] = why
                return ToolResult(f"error: MCP server {name} is gone ({why})", ok=False)
            return ToolResult(f"error: {name}'s {tool.name} failed: {why}", ok=False)
        text = _content(result)
        if getattr(result, "is_error", False):
            return ToolResult(f"error: {text}", ok=False)
        return ToolResult(text)

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(BaseException):
            if self._closing is not None:
                self._loop.call_soon_threadsafe(self._closing.set)
            if self._tasks:
                self._call(asyncio.wait(self._tasks, timeout=5), 10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _content(result: Any) -> str:
    """A call result as text: its text items; other items named; else its structured
    content as JSON."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        text = getattr(item, "text", None)
        kind = getattr(item, "type", "item")
        parts.append(text if isinstance(text, str) else f"[{kind} omitted]")
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts) or "(no content)"


def _why(error: BaseException) -> str:
    if isinstance(error, TimeoutError | asyncio.TimeoutError):
        return "it did not answer in time"
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:200]


def definition(offered: str, tool: Any) -> dict[str, Any]:
    """The OpenAI function tool for an MCP tool (its input schema as the parameters)."""
    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    description = (getattr(tool, "description", None) or "")[:1024]
    return {
        "type": "function",
        "function": {"name": offered, "description": description, "parameters": dict(schema)},
    }
