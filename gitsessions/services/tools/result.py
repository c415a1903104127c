"""What a tool handler returns: the text for the model plus facts for the audit log.

`content` is exactly what the model reads (the ledger reads the transcript, so content
and the call's arguments are all it gets). `exit_code` is set only by `run_shell` when
the command finished. `ok=False` marks a failure the loop should count.
"""

from typing import NamedTuple


class ToolResult(NamedTuple):
    """The value of one tool execution."""

    content: str
    ok: bool = True
    exit_code: int | None = None
