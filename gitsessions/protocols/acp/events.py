"""The agent's events as ACP session updates, its approvals as permission requests, and
a stored session's transcript replayed as the updates that made it.

Invariants: every tool call the model makes is one `tool_call` (pending), then, when
it runs, `tool_call_update`s (in_progress, the last output line while it runs), then
one final update (completed or failed, with the result the model got). "Allow always"
is the chat's "always" (agent/shell_scope.py `always_offer`): the tool for the rest of this
session, for run_shell the command's scope, and never offered where chat offers none;
kept by this home for the session, as chat's (agent/granted.py).
"""

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import AllowedOutcome, PermissionOption, ToolKind

from gitsessions.agent.granted import Granted
from gitsessions.agent.interrupted import LEAD
from gitsessions.agent.shell_scope import NoScope, always_offer, offer_words
from gitsessions.agent.turns import CANCELLED, Events
from gitsessions.protocols.acp.outbox import Outbox
from gitsessions.services.compaction.continuation import is_note
from gitsessions.services.tools import ToolOutcome
from gitsessions.services.tools.describe import describe_call
from gitsessions.services.tools.registry import Preview
from gitsessions.values.messages import Message, text_of

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_files": "read",
    "read_session": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "run_shell": "execute",
    "search_files": "search",
    "search_sessions": "search",
    "update_plan": "think",
}
ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"


def kind_of(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def arguments_of(call: dict[str, Any]) -> Any:
    raw = (call.get("function") or {}).get("arguments") or ""
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


def call_started(call: dict[str, Any]) -> Any:
    name = str((call.get("function") or {}).get("name") or "?")
    return start_tool_call(
        str(call.get("id") or ""),
        describe_call(call),
        kind=kind_of(name),
        status="pending",
        raw_input=arguments_of(call),
    )


def call_finished(call_id: str, content: str, ok: bool) -> Any:
    return update_tool_call(
        call_id,
        status="completed" if ok else "failed",
        content=[tool_content(text_block(content))],
    )


class AcpEvents(Events):
    """One session's events, sent through `outbox`."""

    def __init__(self, outbox: Outbox, session_id: str, say: Callable[[str], None]) -> None:
        self.outbox = outbox
        self.say = say  # notices: a line for the log, never the protocol's stdout
        self.session_id = session_id
        self.call: dict[str, Any] | None = None  # the tool call being dispatched
        self._running: str | None = None  # the call whose output lines are sent
        self._lock = threading.Lock()

    def _send(self, update: Any) -> None:
        self.outbox.send(self.session_id, update)

    def text(self, delta: str) -> None:
        self._send(update_agent_message_text(delta))

    def tool_started(self, call: dict[str, Any]) -> None:
        self.call = call
        self._send(call_started(call))

    def tool_running(self, call: dict[str, Any]) -> None:
        with self._lock:
            self._running = str(call.get("id") or "")
            self._send(update_tool_call(self._running, status="in_progress"))

    def tool_output(self, line: str) -> None:  # from the tool's output reader
        with self._lock:
            if self._running is not None:
                self._send(
                    update_tool_call(self._running, content=[tool_content(text_block(line))])
                )

    def tool_finished(self, outcome: ToolOutcome) -> None:
        with self._lock:
            self._running = None
            self._send(call_finished(outcome.call_id, outcome.content, outcome.ok))
        self.call = None

    def cancelled(self) -> None:
        """The turn was cancelled: a call it left open ends failed, with the result its
        save gave it (agent/loop.py CANCELLED)."""
        with self._lock:
            call, self.call, self._running = self.call, None, None
            if call is not None:
                self._send(call_finished(str(call.get("id") or ""), CANCELLED, False))

    def notice(self, text: str) -> None:
        self.say(text)


class AcpApprover:
    """The registry's approver: a `session/request_permission` per call needing one
    (allow once, allow always when chat would offer it, reject), or an "always" given
    before in this session. A request the client answers "cancelled" (it cancels the
    turn) interrupts the turn as the cancel's own SIGINT would."""

    def __init__(self, events: AcpEvents, interrupt: Callable[[], None]) -> None:
        self.events = events
        self.interrupt = interrupt  # raises KeyboardInterrupt: the turn is cancelled
        self.preview: Preview | None = None  # the registry's, once it is built
        self.workspace: Path | None = None  # where the paths a preview names are
        self.granted = Granted()  # bound to the session once it is built

    def __call__(self, name: str, arguments: Any) -> bool:
        if self.granted.allows(name, arguments):
            return True
        offer = always_offer(name, arguments)
        options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
        if not isinstance(offer, NoScope):  # in chat's words (`a: always allow ...`)
            words = offer_words(offer).removeprefix("a: always allow ")
            options.append(
                PermissionOption(
                    option_id=ALLOW_ALWAYS, name=f"Always allow {words}", kind="allow_always"
                )
            )
        options.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
        call = self.events.call or {"id": "", "function": {"name": name, "arguments": ""}}
        asked = update_tool_call(
            str(call.get("id") or ""),
            title=describe_call(call),
            kind=kind_of(name),
            status="pending",
            content=self._diff(name, arguments),
            raw_input=arguments,
        )
        answer = self.events.outbox.ask(self.events.session_id, asked, options).outcome
        if not isinstance(answer, AllowedOutcome):  # "cancelled": the turn is being cancelled
            self.interrupt()
            return False
        if answer.option_id == REJECT:
            return False
        if answer.option_id == ALLOW_ALWAYS and not isinstance(offer, NoScope):
            try:
                self.granted.grant(offer)
            except OSError:  # it holds while this agent runs; a resumed session asks again
                self.events.notice('note: the "always" is not kept for a resumed session')
        return answer.option_id in (ALLOW_ONCE, ALLOW_ALWAYS)

    def _diff(self, name: str, arguments: Any) -> list[Any] | None:
        """A file call's change as the editor shows a diff (the file as it is now, and
        as the call would leave it), when it can be read; else nothing."""
        if self.preview is None or self.workspace is None or not isinstance(arguments, dict):
            return None
        change = self.preview(name, arguments)
        if change is None or change.after is None or (change.exists and change.before is None):
            return None
        path = str(self.workspace / change.path)
        return [tool_diff_content(path, change.after, change.before)]


def replay(messages: Iterable[Message]) -> Iterable[Any]:
    """The updates that show a stored transcript: prompts as user message chunks,
    replies as agent message chunks, each tool call started and finished with its
    result (failed when the result is an error or a denial). The system prompt and
    notes gitsessions writes for the model (a compaction's continuation note, the note
    closing a cancelled prompt) are not shown."""
    for message in messages:
        role = message.get("role")
        if role == "user" and not is_note(message):
            yield update_user_message_text(text_of(message))
        elif role == "assistant":
            text = text_of(message)
            if text and not text.startswith(LEAD):
                yield update_agent_message_text(text)
            for call in message.get("tool_calls") or []:
                yield call_started(call)
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            content = text_of(message)
            ok = not content.startswith(("error:", "denied", "not run"))
            yield call_finished(call_id, content, ok)
