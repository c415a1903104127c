"""What a turn is made of and reports: the agent's settings, the events the CLI renders,
a turn's result, its errors, and what a reply's transcript record adds.

Kept apart from the loop (`agent/loop.py`) so that what renders a turn (cli/progress.py,
protocols/acp/) needs none of the loop's imports.
"""

import time
from typing import TYPE_CHECKING, Any, NamedTuple

from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message

if TYPE_CHECKING:
    from gitsessions.services.compaction.compaction import CompactionResult
    from gitsessions.services.model.completion import Completion
    from gitsessions.services.model.model import Retry
    from gitsessions.services.tools import ToolOutcome

CANCELLED = "error: cancelled by the user before this tool finished"
# what follows a reply the server cut at its token limit (`finish_reason: "length"`)
CUT_MARK = "[reply cut at the server's token limit]"
CUT_REASONS = ("length",)  # the finish reasons that mean the reply was cut


class AgentConfig(NamedTuple):
    model: str
    summary_model: str
    policy: Policy
    max_steps: int = 50
    max_failed_steps: int = 3
    stream: bool = True
    summary_every: int = 10
    # when the list summary is asked (`agent/titling.py`): "background", in a thread after
    # the reply's commit, taken up later (chat, acp); "wait", the same but retried as any
    # request (exec waits for it after printing); "later", not asked here: `summary_due`
    # holds the request for the caller to hand on (exec's worker); "off", never
    summary: str = "background"


class Events:
    """What the loop reports as it goes; the CLI renders it. Defaults do nothing."""

    def waiting(self, active: bool) -> None: ...
    def busy(self, reason: str | None) -> None:
        """Work the user waits for besides a reply (compaction, the title): `reason` while
        it runs, None when it is over."""

    def text(self, delta: str) -> None: ...
    def reply(self, message: Message) -> None: ...
    def reply_cut(self, message: Message) -> None:
        """`message`, just replied, was cut at the server's token limit."""

    def tool_started(self, call: dict[str, Any]) -> None: ...
    def tool_running(self, call: dict[str, Any]) -> None:
        """The call is approved and runs now (until `tool_finished`)."""

    def tool_output(self, line: str) -> None:
        """A running tool's last output line, as it changes (from another thread)."""

    def tool_finished(self, outcome: "ToolOutcome") -> None: ...
    def compacted(self, result: "CompactionResult") -> None: ...
    def notice(self, text: str) -> None: ...

    def retrying(self, retry: "Retry") -> None:
        """Wait before a refused request (429, 5xx) is sent again; the CLI counts down."""
        time.sleep(retry.seconds)


class TurnResult(NamedTuple):
    reply: str
    steps: int
    compacted: bool
    stopped: str | None = None  # why the turn ended before the model finished
    finish_reason: str | None = None  # the last reply's, as the server said it


class Undone(NamedTuple):
    """A turn taken out of the working context: its number (None when the history does
    not say) and its prompt."""

    turn: int | None
    prompt: str


class NothingToRetry(GitsessionsError):
    """`retry` with no prompt in the context."""


class PromptNotSaved(GitsessionsError):
    """The commit of a turn's prompt failed (a read-only or full home, a lost race):
    nothing was sent and the session is as it was; the CLI says where the prompt still
    is (chat: its input history)."""

    def __init__(self, cause: Exception) -> None:
        if isinstance(cause, OSError):
            where = f": {cause.filename}" if cause.filename else ""
            reason = f"{cause.strerror or type(cause).__name__}{where}"
        else:
            reason = str(cause)
        super().__init__(f"the prompt could not be saved, so it was not sent: {reason}")
        self.exit_code = getattr(cause, "exit_code", 1)


class ReplyNotSaved(GitsessionsError):
    """The model replied but committing the step failed. `result` is the turn as far as it
    got (its reply included) so the CLI can still show it; the step stays pending in the
    session, and the next checkpoint commits it."""

    def __init__(self, cause: Exception, result: TurnResult) -> None:
        reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else cause
        super().__init__(
            f"the reply could not be saved: {reason}; the session keeps its last saved step"
        )
        self.result = result
        self.exit_code = getattr(cause, "exit_code", 1)


def reply_meta(completion: "Completion", model: str) -> dict[str, Any]:
    """What a reply's transcript record adds to the message: the model that answered,
    the request's usage, and the finish reason of a reply the server cut (never sent to
    a model)."""
    usage = completion.usage
    meta: dict[str, Any] = {
        "model": completion.model or model,
        "usage": None
        if usage is None
        else {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens},
    }
    if completion.finish_reason in CUT_REASONS:
        meta["finish_reason"] = completion.finish_reason
    return meta
