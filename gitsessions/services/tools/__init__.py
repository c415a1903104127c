"""The agent's tools: OpenAI function tools confined to a workspace, and their dispatcher.

`create_registry(root, env, approve=...)` gives the six workspace tools; the agent adds
the session tools with `registry.register(name, SESSION_TOOLS[name], handler)` and calls
`registry.dispatch(call)` for each tool call. Dispatch never raises for model mistakes:
they come back as `ToolOutcome(ok=False)` with content starting `error: `.
"""

from gitsessions.services.tools.builtin import create_registry
from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.output import DEFAULT_OUTPUT_LIMIT, truncate
from gitsessions.services.tools.registry import (
    Approver,
    Handler,
    ToolOutcome,
    ToolRegistry,
    approve_all,
    deny_all,
)
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.schemas import (
    BUILTIN_TOOLS,
    MUTATING_TOOLS,
    READ_SESSION,
    SEARCH_SESSIONS,
    SESSION_TOOLS,
    UPDATE_PLAN,
)
from gitsessions.services.tools.shell import exit_line
from gitsessions.services.tools.workspace import OutsideWorkspace, Workspace

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_OUTPUT_LIMIT",
    "MUTATING_TOOLS",
    "READ_SESSION",
    "SEARCH_SESSIONS",
    "SESSION_TOOLS",
    "UPDATE_PLAN",
    "Approver",
    "Handler",
    "OutsideWorkspace",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "Workspace",
    "approve_all",
    "create_registry",
    "deny_all",
    "exit_line",
    "truncate",
]
