"""The chat's prompt line as the line editor and the plain reader share it: the prompt
strings, which lines are commands, the input history.

Invariants:
- Nothing here touches the terminal, and nothing here imports the line editor
  (cli/chat_editor.py) or the input line (cli/chat_input.py): both import this, and
  the input line imports the editor only once a prompt shows on a terminal.
"""

from collections.abc import Callable
from pathlib import Path

from gitsessions.services.sessions import chat_history

PROMPT = "> "
CONTINUATION = ". "
# the in-chat commands, for completion (tests/test_chat_input.py: Slash's own)
COMMANDS = (
    "blame", "compact", "diff", "exit", "fork", "help", "info", "mcp", "merge", "pin", "plan",
    "quit", "retry", "rewind", "search", "sessions", "title", "undo",
)  # fmt: skip


class EmptyCancel(KeyboardInterrupt):
    """Ctrl-C at a prompt with nothing typed: the chat says how to leave."""


def is_command(line: str) -> bool:
    """Whether a line is a command (`Slash.is_command`): `\\` and a word (an unknown one
    is said so), or `/` and a command's name (`/sessions`); any other line is a prompt,
    `/srv/app.py fails` too, and `//text` sends `/text` (`as_prompt`)."""
    if line[:1] == "\\":
        return line[1:2].isalpha()
    words = line[1:].split(maxsplit=1)
    return line[:1] == "/" and bool(words) and words[0].lower() in COMMANDS


def as_prompt(line: str) -> str:
    """A line as the prompt it sends: `//text` sends `/text` (a slash a command would take)."""
    return line.replace("//", "/", 1) if line.lstrip().startswith("//") else line


class History:
    """The input history: the entries of `<home>/chat_history` (each tagged with its
    session: `services.sessions.chat_history`, so deleting a session drops what was
    typed in it) and the prompts typed since the chat began, each one entry (a prompt
    of several lines too); with `redact`, secrets typed at the prompt are redacted
    before the file is written. Only the line editor adds to it, as readline did."""

    def __init__(self, home: Path, redact: bool = True) -> None:
        self.home = home
        self.redact = redact
        self.loaded = [line for _session, line in chat_history.load(home)[-chat_history.LIMIT :]]
        self.typed: list[str] = []
        # the session ids `\\diff ID` completes, read when first asked (set by cli/chat.py)
        self.sessions: Callable[[], list[tuple[str, str]]] = list

    def add(self, prompt: str) -> None:
        if prompt.strip():
            self.typed.append(prompt)

    def save(self, session: str) -> str | None:
        """Store the prompts typed since the last save, tagged with `session`; why they
        could not be (a read-only or full home), else None."""
        # the secret rules: 10 ms a chat's prompt does not need
        from gitsessions.values.secrets import redact

        typed, self.typed = self.typed, []
        if self.redact:
            typed = [redact(line)[0] for line in typed]
        try:
            chat_history.append(self.home, session, typed)
        except OSError as error:
            return error.strerror or type(error).__name__
        return None
