"""The chat's line editor on a terminal: prompt_toolkit's prompt, as IPython and aider use.

Invariants:
- A prompt is one string however typed: a bracketed paste is inserted whole and sent
  only by Enter; Alt-Enter, Ctrl-J and a trailing backslash insert a new line.
- The terminal is left as found after each prompt, and the cursor position is never
  asked (a late answer would read as typed text).
- History is `chat_line.History` (earlier chats, then this one); Tab completes in-chat
  commands and a session id after `\\diff `.
"""

import asyncio
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import History as Entries
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output.vt100 import Vt100_Output

from gitsessions.cli.chat_line import (
    COMMANDS,
    CONTINUATION,
    PROMPT,
    EmptyCancel,
    History,
    is_command,
)
from gitsessions.cli.plain import StreamOf


class _Entries(Entries):
    """prompt_toolkit's view of the chat's history (newest first, as it loads them)."""

    def __init__(self, history: History) -> None:
        super().__init__()
        self.history = history

    def load_history_strings(self) -> Iterable[str]:
        return reversed([*self.history.loaded, *self.history.typed])

    def store_string(self, string: str) -> None:
        self.history.add(string)


class _Completions(Completer):
    """`\\` or `/` and a command's first letters at the start of the line: the commands;
    after `\\diff `: the sessions' short ids, with their titles."""

    def __init__(self, sessions: Callable[[], list[tuple[str, str]]]) -> None:
        self.sessions = sessions

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if "\n" in before or before[:1] not in ("\\", "/"):
            return
        name, space, rest = before[1:].partition(" ")
        if not space:
            for command in COMMANDS:
                if command.startswith(name.lower()):
                    yield Completion(command, start_position=-len(name))
            return
        if name.lower() in ("diff", "merge") and " " not in rest:  # a session id next
            try:
                found = self.sessions()
            except Exception:  # a store that cannot be read completes nothing
                return
            for session_id, label in found:
                if session_id.startswith(rest):
                    yield Completion(session_id[:8], -len(rest), display_meta=label[:60])


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")  # Alt-Enter, or Esc then Enter
    @keys.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None and buffer.complete_state.current_completion:
            buffer.apply_completion(buffer.complete_state.current_completion)
            return
        document = buffer.document
        text = document.text
        if document.is_cursor_at_the_end and text.endswith("\\") and not is_command(text):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        empty = not event.current_buffer.text.strip()
        event.app.exit(exception=EmptyCancel() if empty else KeyboardInterrupt())

    return keys


_session: "PromptSession[str] | None" = None
_for: History | None = None


def _prompt_session(history: History | None) -> "PromptSession[str]":
    global _session, _for
    if _session is None or _for is not history:
        output = Vt100_Output.from_pty(StreamOf("stdout").file)
        output.enable_cpr = False
        _session = PromptSession(
            PROMPT,
            prompt_continuation=CONTINUATION,
            history=_Entries(history) if history is not None else None,
            completer=_Completions(history.sessions if history is not None else list),
            complete_while_typing=False,
            key_bindings=_bindings(),
            output=output,
            enable_suspend=False,
        )
        _for = history
    return _session


def read(
    history: History | None, ahead: str, shown: Callable[[], None], keep: Callable[[str], None]
) -> str:
    """One prompt, its line starting with `ahead`; `shown` is called once it is drawn,
    `keep` with the keys read past its Enter (`chat_input.keep_ahead`)."""

    def drawn() -> None:
        asyncio.get_running_loop().call_soon(shown)

    session = _prompt_session(history)
    try:
        return session.prompt(default=ahead, pre_run=drawn)
    finally:  # what it read past its Enter would be fed to the next prompt as keys
        keep("".join(key.data for key in get_typeahead(session.input)))
