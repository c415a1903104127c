"""The chat's input line: a prompt read (by the line editor, or a plain line into a pipe)
and the keys typed ahead; what it shares with the editor is cli/chat_line.py's.

Invariants:
- Nothing here imports rich, the store or the agent; `PROMPT_SHOWN` is set once a prompt
  shows, and background work waits for it (never competing with the prompt).
- On a terminal the first prompt is written at once and keys typed while prompt_toolkit
  loads wait unechoed and raw (`_held`) until the editor takes them.
- Keys typed while a turn runs wait in the next prompt's line, never sent until Enter.
- Nothing typed before a question answers it: a question calls `discard_ahead` as it
  shows (as sudo does), dropping what waits, and says how many keys it dropped.
"""

import os
import re
import select
import sys
import termios
import threading
from collections.abc import Callable
from typing import Any

from gitsessions.cli.chat_line import CONTINUATION, PROMPT, History, is_command
from gitsessions.cli.plain import Sink, StreamOf
from gitsessions.values.plural import plural

LEAVE_HINT = "(Ctrl-D or \\exit to leave)"
AHEAD_LIMIT = 64 * 1024  # bytes of typed-ahead text kept; more is read and dropped

PROMPT_SHOWN = threading.Event()


def on_terminal() -> bool:
    """Whether the line editor can run: stdin and stdout are terminals."""
    return os.isatty(0) and os.isatty(1)


def read_prompt(history: History | None = None) -> str:
    """One prompt. On a terminal the line editor's, starting with what was typed ahead
    (while a turn ran); raises KeyboardInterrupt (`EmptyCancel` on an empty line) for Ctrl-C
    and EOFError for Ctrl-D on an empty line (or the end of input), the cursor then at
    the start of the next line."""
    if not on_terminal():
        PROMPT_SHOWN.set()
        return _plain()
    ahead = "\n".join(text for text in (_take_ahead(), _clean(_pending(0))) if text)
    if not ahead and _ended.is_set():  # Ctrl-D typed while a turn ran: leave, as asked
        _ended.clear()
        raise EOFError
    _ended.clear()
    if "gitsessions.cli.chat_editor" not in sys.modules:
        # the first prompt: shown now, the editor takes over once imported
        with _held(0):
            # prompt_toolkit: imported once the prompt shows
            from gitsessions.cli import chat_editor
    else:
        from gitsessions.cli import chat_editor
    return chat_editor.read(history, ahead, PROMPT_SHOWN.set, keep_ahead)


def _plain() -> str:
    """Lines read by `input`; at the end of input (or Ctrl-C) the line is ended, as
    the editor ends it."""
    try:
        typed = [input(PROMPT)]
        while typed[-1].endswith("\\") and not is_command(typed[0]):
            typed.append(input(CONTINUATION))
    except (EOFError, KeyboardInterrupt):
        notes = Sink(StreamOf("stderr").file, colour=False)  # where notes go, as before
        notes.line()
        notes.flush()
        raise
    return "\n".join(line[:-1] if n < len(typed) - 1 else line for n, line in enumerate(typed))


def unechoed() -> Callable[[], None]:
    """Keys typed from now on are not echoed (a turn runs: an echo would land in the
    reply or the spinner, and an echoed `^C` at the end of a spinner's full-width line
    wraps it, leaving its last frame on the screen); they wait for the next prompt,
    which shows them. Returns what restores the terminal's modes."""
    return _modes(lambda mode: mode & ~termios.ECHO)


def echoed() -> Callable[[], None]:
    """Keys typed are echoed (a question is read by a plain line read); the restorer."""
    return _modes(lambda mode: mode | termios.ECHO)


def _modes(change: Callable[[int], int]) -> Callable[[], None]:
    if not on_terminal():
        return lambda: None
    try:
        saved = termios.tcgetattr(0)
        mode = termios.tcgetattr(0)
        mode[3] = change(mode[3])
        termios.tcsetattr(0, termios.TCSANOW, mode)
    except termios.error:
        return lambda: None
    return lambda: termios.tcsetattr(0, termios.TCSANOW, saved)


# -- keys typed ahead ---------------------------------------------------------------------

_ahead: list[str] = []
_ended = threading.Event()  # a Ctrl-D was typed ahead (on a line of its own)


def discard_ahead() -> int:
    """Drop every key typed before a question that is being shown: what waits in the
    terminal's input queue and what was kept for the next prompt (typed while the turn
    ran, or read with the prompt's Enter), a Ctrl-D included. None of it answers the
    question, and none of it is left in the next prompt's line. How many keys (an
    arrow key is one); 0 when stdin is not a terminal."""
    keys = sum(len(text) for text in _ahead)
    _ahead.clear()
    if on_terminal():
        keys += _keys(_pending(0))
    if _ended.is_set():
        keys += 1
        _ended.clear()
    return keys


def discarded_note(keys: int) -> str:
    """What a question says of the keys `discard_ahead` dropped ("" for none)."""
    return f"(discarded {plural(keys, 'key')} typed before the question)" if keys else ""


def keep_ahead(typed: str) -> None:
    """Keys the line editor read past the end of its prompt (typed with its Enter, in
    the same read): kept for the next prompt, like keys typed during a turn."""
    text = _clean(typed.encode("utf-8", "surrogatepass"))
    if text:
        _ahead.append(text)


def _take_ahead() -> str:
    text = "\n".join(_ahead)
    _ahead.clear()
    return text


def _pending(fd: int) -> bytes:
    """The bytes waiting in terminal `fd`'s input queue, a line not yet ended included,
    read without waiting; the terminal's modes are restored after."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        return b""
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ICANON | termios.ECHO)
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 0, 0
    read = bytearray()
    try:
        termios.tcsetattr(fd, termios.TCSANOW, mode)
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            if len(read) < AHEAD_LIMIT:
                read += chunk[: AHEAD_LIMIT - len(read)]
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    # a Ctrl-D typed in the terminal's line mode waits in the queue as a NUL byte
    # (the end of input a line read would have returned): the chat is asked to end
    before, nul, _after = bytes(read).partition(b"\x00")
    if nul and (not before or before.endswith((b"\r", b"\n"))):
        _ended.set()
    return before


_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|[^\[O])?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _keys(data: bytes) -> int:
    """How many keys typed `data` holds: an escape sequence (an arrow key) is one."""
    text = _ESCAPES.sub("\x1b", data.decode("utf-8", "replace"))
    return len(text.replace("\r\n", "\r"))


def _clean(data: bytes) -> str:
    """Typed bytes as text for a prompt: line ends as newlines, a backspace applied,
    escape sequences (arrow keys) and other control characters dropped."""
    if not data:
        return ""
    text = _ESCAPES.sub("", data.decode("utf-8", "replace"))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept: list[str] = []
    for char in text:
        if char in "\x7f\x08":
            if kept and kept[-1] != "\n":
                kept.pop()
        else:
            kept.append(char)
    return _CONTROLS.sub("", "".join(kept)).strip("\n")


class _held:
    """The prompt written at once, the terminal raw and unechoed until the editor is
    imported: keys typed meanwhile (Enter, Ctrl-C included) wait for it, not echoed
    after the prompt. Then the cursor goes back to the start of the line, where the
    editor draws the same prompt."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None
        self.out = Sink(StreamOf("stdout").file, colour=False)

    def __enter__(self) -> None:
        try:
            self.saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR | termios.IXON)
            mode[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN)
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        except termios.error:
            self.saved = None
        self.out.text(PROMPT)
        self.out.flush()

    def __exit__(self, *_: object) -> None:
        self.out.line_start()
        self.out.flush()
        if self.saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
