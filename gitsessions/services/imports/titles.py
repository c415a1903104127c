"""A session's title from a source's prompt: the words the user typed, without the
markup the source wraps around them or puts in their place.

Claude Code writes a slash command as `<command-message>`, `<command-name>` and
`<command-args>` elements, its output as `<local-command-stdout>`, and adds
`<system-reminder>`, `<local-command-caveat>` and `<task-notification>` text; Codex adds
`<environment_context>` and `<user_instructions>`. Those elements go (a command's name
and arguments stay, as `/name args`); a prompt left empty is no title.
"""

import re
from typing import Any

DROPPED = (
    "system-reminder",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "command-message",
    "task-notification",
    "environment_context",
    "user_instructions",
    "turn_aborted",
    "INSTRUCTIONS",
    "ide_opened_file",
    "ide_selection",
)
KEPT = ("command-name", "command-args", "command-contents")
SCANNED = 20_000  # characters of a prompt looked at
_DROPPED = "|".join(re.escape(t) for t in DROPPED)
_DROP = re.compile(rf"<({_DROPPED})\b[^>]*>.*?(?:</\1>|\Z)", re.DOTALL)
_UNWRAP = re.compile(rf"</?(?:{'|'.join(re.escape(t) for t in KEPT)})\b[^>]*>")


def prompt_title(content: Any) -> str | None:
    """The typed words of a prompt's `content` (a string or content parts), on one line;
    None when markup is all it holds."""
    if isinstance(content, list):
        content = "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    if not isinstance(content, str):
        return None
    text = _UNWRAP.sub(" ", _DROP.sub(" ", content[:SCANNED]))
    text = " ".join(text.split())
    if not text or text.startswith("Caveat: The messages below were generated"):
        return None
    return text
