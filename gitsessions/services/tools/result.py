"""What a tool handler returns: the text for the model plus facts for the ledger.

`content` is exactly what the model reads. `changed_path` is set only by a tool that
changed a file, as the workspace-relative path. `exit_code` is set only by `run_shell`
when the command finished. `ok=False` marks a failure the loop should count.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolResult:
    """The value of one tool execution."""

    content: str
    ok: bool = True
    changed_path: str | None = None
    exit_code: int | None = None
