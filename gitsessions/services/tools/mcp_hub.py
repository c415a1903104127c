"""The MCP servers of `[mcp_servers]`, connected with the `mcp` SDK's client, their tools
offered to the model beside the built-in ones.

Invariants:
- One thread's asyncio loop holds every connection (a task each, as the SDK's context
  managers want); a call waits at most `tool_timeout`, after which, or after a message
  over `mcp_stdio.MAX_MESSAGE`, the connection is closed and reopened by the next call.
- A server failing to start within `startup_timeout` is one line and the chat goes on;
  one that ends is restarted by the next call, at most `MAX_RESTARTS` times. Nothing of
  a server reaches the terminal but one line (its stderr and logs: `<home>/mcp/<name>.log`).
- A tool is offered as `mcp__<server>__<tool>` only when that name is valid in full and
  unique; at most `MAX_TOOLS` a server, each definition `MAX_DEFINITION` bytes. It needs
  approval like any tool; its result passes the output limit, redaction, visible text.
- A stdio server gets the SDK's default environment plus its `env` (no keys of ours).
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
from gitsessions.services.tools.mcp_stdio import Link, route_sdk_logging, stdio_transport, use_log
from gitsessions.services.tools.result import ToolResult

PREFIX = "mcp__"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the API's function names, matched in full
MAX_TOOLS = 5000  # tools read from one server (in at most MAX_PAGES pages of tools/list)
MAX_PAGES = 4
MAX_DEFINITION = 32 * 1024  # bytes of one tool's definition (name, description, schema)
MAX_RESTARTS = 3  # times a server that ended by itself is started again, per process


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
        self._stops: dict[str, asyncio.Event] = {}  # set: the server's connection closes
        self._holds: dict[str, Any] = {}  # server -> the task holding its connection
        self._links: dict[str, Link] = {}
        self._restart: set[str] = set()  # connections we closed: opened again on a call
        self._restarts: dict[str, int] = {}  # server -> starts after it ended by itself
        self._loop = asyncio.new_event_loop()
        self._tasks: list[asyncio.Task[None]] = []
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp")

    def start(self, notes: Callable[[str], None]) -> None:
        """Connect every server (all at once; each within its start-up timeout), and
        offer the tools whose names are unique and valid (one line per server about the
        rest)."""
        if not self.servers:
            return
        route_sdk_logging()
        self._thread.start()
        waits = {
            name: asyncio.run_coroutine_threadsafe(self._open(server), self._loop)
            for name, server in self.servers.items()
        }
        claims: dict[str, list[tuple[str, Any]]] = {}
        for name, future in waits.items():
            server = self.servers[name]
            try:
                listed, more = future.result(server.startup_timeout + 5)
            except Exception as error:  # any failure of a server is its line (Ctrl-C is not)
                why = self._why(name, error)
                self.failed[name] = why
                notes(f"mcp: server {name} did not start ({why}); its tools are not offered")
                continue
            bad_names: list[str] = []
            too_big: list[str] = []
            for tool in listed:
                if not isinstance(tool.name, str) or not server.offers(tool.name):
                    continue
                offered = tool_name(name, tool.name)
                if not _NAME.fullmatch(offered):
                    bad_names.append(repr(tool.name[:40]))
                elif len(json.dumps(definition(offered, tool), default=str)) > MAX_DEFINITION:
                    too_big.append(repr(tool.name[:40]))
                else:
                    claims.setdefault(offered, []).append((name, tool))
            said = []
            if more:
                said.append(f"only the first {MAX_TOOLS:,} of its tools are read")
            if bad_names:
                said.append(
                    f"{len(bad_names):,} tool names the model cannot call ({_some(bad_names)})"
                    " are not offered"
                )
            if too_big:
                said.append(
                    f"{len(too_big):,} tools with definitions over {MAX_DEFINITION // 1024} KiB"
                    f" ({_some(too_big)}) are not offered"
                )
            if said:
                notes(f"mcp: server {name}: " + "; ".join(said))
        for offered, holders in claims.items():
            if len(holders) == 1:
                self.tools[offered] = holders[0]
                continue
            names = list(dict.fromkeys(server for server, _ in holders))
            if len(names) > 1:
                notes(
                    f"mcp: servers {' and '.join(names)} both give the tool name {offered};"
                    " it is not offered"
                )
            else:
                notes(f"mcp: server {names[0]} lists {offered} twice; it is not offered")

    def _call(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _why(self, name: str, error: BaseException) -> str:
        link = self._links.get(name)
        if link is not None and link.cut is not None:
            return f"it sent {link.cut}"
        return _why(error)

    async def _open(self, server: McpServer) -> tuple[list[Any], bool]:
        """Start `server`'s connection in a task of its own; its tools once initialized
        (at most MAX_TOOLS), and whether it listed more."""
        ready: asyncio.Future[tuple[list[Any], bool]] = self._loop.create_future()
        self._stops[server.name] = asyncio.Event()
        self._links[server.name] = Link()
        task = asyncio.ensure_future(self._hold(server, ready))
        self._tasks.append(task)
        self._holds[server.name] = task
        try:
            return await asyncio.wait_for(ready, server.startup_timeout)
        except BaseException:
            task.cancel()  # a server that did not start in time is stopped, not left hanging
            raise

    async def _hold(
        self, server: McpServer, ready: "asyncio.Future[tuple[list[Any], bool]]"
    ) -> None:
        # the mcp SDK (pydantic): only with an MCP server configured
        from mcp import ClientSession

        self.logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        use_log(self.logs / f"{server.name}.log")  # the SDK's records of this task
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(server, stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                listed = await _list_tools(session)
                self._sessions[server.name] = session
                if not ready.done():
                    ready.set_result(listed)
                await self._stops[server.name].wait()
        except BaseException as error:  # told once, as the server's line
            if not ready.done():
                ready.set_exception(error)
            else:
                self.failed[server.name] = self._why(server.name, error)
        finally:
            self._sessions.pop(server.name, None)

    def _transport(self, server: McpServer, stack: contextlib.AsyncExitStack) -> Any:
        log = self.logs / f"{server.name}.log"
        if server.url is not None:
            # the HTTP transport (httpx2): only for a server given by URL
            from gitsessions.services.tools.mcp_http import http_transport

            headers = dict(server.headers)
            for header, variable in server.env_headers.items():
                if self.env.get(variable):
                    headers[header] = self.env[variable]
            if server.bearer_env and self.env.get(server.bearer_env):
                headers["Authorization"] = f"Bearer {self.env[server.bearer_env]}"
            link = self._links[server.name]
            return http_transport(server.url, headers, server.tool_timeout, link, log)
        errlog = stack.enter_context(open(log, "a"))  # noqa: SIM115
        return stdio_transport(
            str(server.command),
            list(server.args),
            dict(server.env),
            server.cwd,
            errlog,
            log,
            self._links[server.name],
        )

    def leave_out(self, name: str, why: str) -> None:
        """Offer none of `name`'s tools (for `why`), and close its connection."""
        self.tools = {o: held for o, held in self.tools.items() if held[0] != name}
        self.failed[name] = why
        self._sessions.pop(name, None)
        stop = self._stops.get(name)
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)

    def _disconnect(self, name: str) -> None:
        """Close `name`'s connection (its process stopped); opened again on its next call."""
        self._restart.add(name)
        self._sessions.pop(name, None)
        stop, task = self._stops.get(name), self._holds.get(name)
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        if task is not None:
            with contextlib.suppress(Exception):
                self._call(asyncio.wait([task], timeout=5), 6)

    def _may_start_again(self, name: str) -> bool:
        """Whether a call opens `name`'s connection again: always when we closed it, at
        most `MAX_RESTARTS` times when the server ended by itself (a crash, an exit)."""
        if name in self._restart:
            return True
        if not self._restarts_left(name):
            return False
        self._restarts[name] = self._restarts.get(name, 0) + 1
        return True

    def _restarts_left(self, name: str) -> bool:
        return self._restarts.get(name, 0) < MAX_RESTARTS

    def _reconnect(self, name: str) -> str | None:
        """Open a connection that ended again; why it failed, or None."""
        server = self.servers[name]
        try:
            self._call(self._open(server), server.startup_timeout + 5)
        except Exception as error:  # its line, for the model
            return self._why(name, error)
        self._restart.discard(name)
        self.failed.pop(name, None)  # running again (`\mcp`)
        return None

    def call(self, offered: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call an offered tool; every failure is an error result for the model. A call
        past the server's `tool_timeout`, or answered with a message over the byte cap,
        is cancelled and the connection closed; the next call opens it again."""
        name, tool = self.tools[offered]
        server = self.servers[name]
        if name not in self._sessions and self._may_start_again(name):
            why = self._reconnect(name)
            if why is not None:
                return ToolResult(f"error: MCP server {name} did not start again ({why})", ok=False)
        session = self._sessions.get(name)
        if session is None:
            why = self.failed.get(name, "it is not connected")
            return ToolResult(f"error: MCP server {name} is gone ({why})", ok=False)
        again = "the connection was closed (it starts again on the next call)"
        running = asyncio.run_coroutine_threadsafe(
            session.call_tool(tool.name, dict(arguments)), self._loop
        )
        try:
            result = running.result(server.tool_timeout)
        except TimeoutError:
            running.cancel()
            self._disconnect(name)
            return ToolResult(
                f"error: {name}'s {tool.name} did not answer within {server.tool_timeout:g} s;"
                f" the call was cancelled and {again}",
                ok=False,
            )
        except Exception as error:  # the server's failure, not ours (Ctrl-C is not)
            link = self._links.get(name)
            if link is not None and link.cut is not None:
                self._disconnect(name)
                return ToolResult(
                    f"error: {name}'s {tool.name} sent {link.cut}; it was cut while read"
                    f" and {again}",
                    ok=False,
                )
            why = _why(error)
            if "closed" in why.lower():  # its process ended, or its connection did
                self._sessions.pop(name, None)
                self.failed[name] = why
                stop = self._stops.get(name)  # its task ends (else it waits for close)
                if stop is not None:
                    self._loop.call_soon_threadsafe(stop.set)
                again = " (it starts again on the next call)" if self._restarts_left(name) else ""
                return ToolResult(f"error: MCP server {name} is gone ({why}){again}", ok=False)
            return ToolResult(f"error: {name}'s {tool.name} failed: {why}", ok=False)
        text = _content(result)
        if getattr(result, "is_error", False):
            return ToolResult(f"error: {text}", ok=False)
        return ToolResult(text)

    def close(self) -> None:
        """Close every connection (each server's process stopped, its transport closed),
        then the loop: nothing is left for the garbage collector to find open."""
        if self._thread.is_alive():
            with contextlib.suppress(BaseException):
                for stop in self._stops.values():
                    self._loop.call_soon_threadsafe(stop.set)
                if self._tasks:
                    self._call(_ended(self._tasks), 15)
                self._call(self._loop.shutdown_asyncgens(), 5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()


async def _ended(tasks: list["asyncio.Task[None]"]) -> None:
    """`tasks` ended: each waited for 5 s, then cancelled and waited for again."""
    _, pending = await asyncio.wait(tasks, timeout=5)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=5)


async def _list_tools(session: Any) -> tuple[list[Any], bool]:
    """At most MAX_TOOLS of the server's tools, from at most MAX_PAGES pages; and whether
    it has more."""
    # the mcp SDK: only with an MCP server configured
    from mcp.types import PaginatedRequestParams

    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        listed = await session.list_tools(params=params)
        tools.extend(listed.tools[: MAX_TOOLS - len(tools) + 1])
        cursor = listed.next_cursor
        if not cursor or len(tools) > MAX_TOOLS:
            break
    return tools[:MAX_TOOLS], len(tools) > MAX_TOOLS or bool(cursor)


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


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
