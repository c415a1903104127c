"""The agent's tools: OpenAI function tools confined to a workspace, and their dispatcher.

`create_registry(root, env, approve=...)` gives the six workspace tools; the agent adds
the session tools with `registry.register(name, SESSION_TOOLS[name], handler)` and calls
`registry.dispatch(call)` for each tool call. Dispatch never raises for model mistakes:
they come back as `ToolOutcome(ok=False)` with content starting `error: `.
"""

from gitsessions.services.tools.builtin import create_registry
from gitsessions.services.tools.errors import ToolError
from gitsessions.services.tools.preview import FileChange
from gitsessions.services.tools.registry import (
    Approver,
    NotAsked,
    ToolOutcome,
    ToolRegistry,
    approve_all,
)
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.schemas import BUILTIN_TOOLS, MUTATING_TOOLS, SESSION_TOOLS

__all__ = [
    "BUILTIN_TOOLS",
    "MUTATING_TOOLS",
    "SESSION_TOOLS",
    "Approver",
    "FileChange",
    "NotAsked",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "approve_all",
    "create_registry",
]
