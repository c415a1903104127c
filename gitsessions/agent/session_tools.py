"""The tools that work on sessions rather than files, as the agent registers them:
update_plan (this session's plan), and read_session and search_sessions, which run
services/sessions/session_tools.py (the MCP server runs the same) within the sessions
`scope` reaches (this workspace's, unless the user passed `--all-sessions`)."""

from typing import Any

from gitsessions.agent.scope import Scope
from gitsessions.agent.session import AgentSession
from gitsessions.services.sessions.session_tools import read_text, resolve_in, search_text
from gitsessions.services.tools import SESSION_TOOLS, ToolRegistry, ToolResult


def register_session_tools(registry: ToolRegistry, session: AgentSession, scope: Scope) -> None:
    store = session.store

    def update_plan(args: dict[str, Any]) -> ToolResult:
        items = [{"step": item["step"], "status": item["status"]} for item in args["items"]]
        session.set_plan(items)
        lines = [f"[{item['status']}] {item['step']}" for item in items] or ["(empty plan)"]
        return ToolResult("plan saved:\n" + "\n".join(lines))

    def read_session(args: dict[str, Any]) -> ToolResult:
        head = session.head
        if args["session"]:
            found = resolve_in(store, scope.sessions(store, session.id), args["session"])
            head = session.head if found == session.id else store.head(found)
        text = read_text(
            store, head, args["start"] or 0, args["end"], args["query"] or "", registry.output_limit
        )
        return ToolResult(text)

    def search_sessions(args: dict[str, Any]) -> ToolResult:
        return ToolResult(search_text(store, args["query"], scope.sessions(store, session.id)))

    registry.register("update_plan", SESSION_TOOLS["update_plan"], update_plan)
    registry.register("read_session", SESSION_TOOLS["read_session"], read_session)
    registry.register("search_sessions", SESSION_TOOLS["search_sessions"], search_sessions)
