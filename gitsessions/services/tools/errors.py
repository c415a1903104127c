"""The base of every error a tool raises on purpose.

A `ToolError` is never a crash: the dispatcher turns it into an error result the model
reads and can correct (`error: <message>`), so its message is written for the model:
one line, saying what was wrong and what to do instead.
"""

from gitsessions.values.errors import GitsessionsError


class ToolError(GitsessionsError):
    """A tool call failed in an expected way; the message is shown to the model."""
