"""The chat's input line: the prompt, continuation lines, the readline history.

Invariant: nothing here imports rich, the store or the agent. `chat` shows its first
prompt with only this module, its settings and a plain banner loaded; everything else
is built while the user types (cli/opening.py). `PROMPT_SHOWN` is set once a prompt is
on the screen (by readline's pre-input hook, right after it drew the prompt; without
readline or a terminal, as the prompt is about to show): what runs in the background
waits for it, so it never competes with the prompt for the interpreter.
"""

import os
import threading
from pathlib import Path

from gitsessions.services.sessions import chat_history

PROMPT = "> "
CONTINUATION = ". "

PROMPT_SHOWN = threading.Event()


def is_command(line: str) -> bool:
    """Whether a line is a slash command (`\\help`, `/sessions`...); `Slash.is_command`."""
    return line[:1] in ("\\", "/") and line[1:2].isalpha()


def read_prompt() -> str:
    """One prompt; a line ending in a backslash continues on the next line. A prompt of
    several lines is one entry of the input history, whole (readline kept each line)."""
    if not _hooked():
        PROMPT_SHOWN.set()
    typed = [input(PROMPT)]
    while typed[-1].endswith("\\") and not is_command(typed[0]):
        typed.append(input(CONTINUATION))
    prompt = "\n".join(line[:-1] if n < len(typed) - 1 else line for n, line in enumerate(typed))
    if len(typed) > 1:
        _one_entry(typed, prompt)
    return prompt


def _one_entry(typed: list[str], prompt: str) -> None:
    """Replace the history's entries of the lines `typed` (each as readline added it:
    a non-empty line, its backslash kept) with one entry, `prompt`, which the Up arrow
    brings back whole."""
    import sys

    readline = sys.modules.get("readline")  # imported by `History`; none: no history
    if readline is None:
        return
    for line in reversed(typed):
        length = readline.get_current_history_length()
        if not line or length == 0:
            continue
        if readline.get_history_item(length) == line:  # 1-based, as readline counts
            readline.remove_history_item(length - 1)  # 0-based
    readline.add_history(prompt)


def _hooked() -> bool:
    """Whether readline draws this prompt (it does when stdin and stdout are terminals)
    and then calls `PROMPT_SHOWN.set` (the hook `History` installs)."""
    return _hook_installed.is_set() and os.isatty(0) and os.isatty(1)


_hook_installed = threading.Event()


class History:
    """Readline input history, kept in `<home>/chat_history` with each line tagged by its
    session (`services.sessions.chat_history`), so deleting a session drops what was typed in it;
    with `redact`, secrets typed at the prompt are redacted before the file is written."""

    def __init__(self, home: Path, redact: bool = True) -> None:
        self.home = home
        self.redact = redact
        try:
            import readline
        except ImportError:  # pragma: no cover - not on this platform
            self.readline = None
            return
        self.readline = readline
        if hasattr(readline, "set_pre_input_hook"):
            readline.set_pre_input_hook(lambda: PROMPT_SHOWN.set())
            _hook_installed.set()
        for _session, line in chat_history.load(home)[-chat_history.LIMIT :]:
            readline.add_history(line)
        self.start = readline.get_current_history_length()

    def save(self, session: str) -> str | None:
        """Store the lines typed since the chat began, tagged with `session`; why they
        could not be (a read-only or full home), else None."""
        if self.readline is None:
            return None
        from gitsessions.values.secrets import redact

        rl = self.readline
        typed = [
            rl.get_history_item(n)
            for n in range(self.start + 1, rl.get_current_history_length() + 1)
        ]
        if self.redact:
            typed = [redact(line)[0] if line else line for line in typed]
        self.start = rl.get_current_history_length()
        try:
            chat_history.append(self.home, session, [line for line in typed if line])
        except OSError as error:
            return error.strerror or type(error).__name__
        return None
