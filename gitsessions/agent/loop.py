"""The turn loop: before every model request check the budget (compact if needed), ask the
model, run the tool calls it made, commit at every step boundary; stop when it answers
without tool calls.

Invariants:
- The user's prompt is committed before the first request, so a failing model never
  loses it, and every step (a reply plus its tool results) is committed before the next
  request: a crash or a Ctrl-C loses at most the step in flight.
- No request is sent that the estimate says is over `max_context_tokens`.
- Every tool call gets exactly one result in the context, even when a tool is cancelled.
- A reply the model did not finish (its stream was cut, broke, ran out of time, or was
  stopped by Ctrl-C) is recorded in the transcript only, marked `"incomplete": true`
  (and `"interrupted": true` after a Ctrl-C), with its tool calls under
  `unsent_tool_calls`: they are never run (their arguments may be cut), and the context is
  left as it was, so sending the prompt again is a clean retry.
- With code snapshots on, every step commit after the prompt names the code it ended
  with (`Code-Snapshot`): the prompt's snapshot is taken in a thread while the model
  answers, and waited for before any tool runs or the next commit is made.
- A reply is never lost to a failed commit: `ReplyNotSaved` carries the turn as far as it
  got, and the step stays pending, so the next checkpoint commits it. A prompt whose
  commit fails is taken back (`PromptNotSaved`): nothing was sent, nothing is pending.
- A new prompt is never glued to one left unanswered: an interruption note (an
  assistant message, agent/interrupted.py) closes the old one first.
- At most one model request at a time: the list summary asked in the background
  (agent/titling.py) is taken up before the next request is sent.
"""

import functools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from gitsessions.agent.loop_session import LoopSession
from gitsessions.agent.subjects import step_subject, turn_subject
from gitsessions.agent.titling import (
    SummaryDue,
    TitleJob,
    summary_line,
    summary_subject,
    title_request,
)
from gitsessions.services.compaction.compaction_policy import (
    CompactionError,
    ContextStillTooLarge,
    Policy,
    should_compact,
)
from gitsessions.services.hooks.audit import audit
from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.model.model import (
    Completion,
    ModelClient,
    ModelError,
    RequestInterrupted,
    Retry,
)
from gitsessions.services.tools import ToolOutcome, ToolRegistry
from gitsessions.store.tokencounts import TokenCounts
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message, text_of
from gitsessions.values.plural import plural
from gitsessions.values.tokens import TokenCounter

if TYPE_CHECKING:  # the compaction engine is imported when a context first needs it
    from gitsessions.services.compaction.compaction import CompactionResult
    from gitsessions.services.compaction.compactor import Cost
    from gitsessions.services.tools.mcp_hub import McpHub

CANCELLED = "error: cancelled by the user before this tool finished"


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
    def tool_started(self, call: dict[str, Any]) -> None: ...
    def tool_running(self, call: dict[str, Any]) -> None:
        """The call is approved and runs now (until `tool_finished`)."""

    def tool_output(self, line: str) -> None:
        """A running tool's last output line, as it changes (from another thread)."""

    def tool_finished(self, outcome: ToolOutcome) -> None: ...
    def compacted(self, result: "CompactionResult") -> None: ...
    def notice(self, text: str) -> None: ...

    def retrying(self, retry: Retry) -> None:
        """Wait before a refused request (429, 5xx) is sent again; the CLI counts down."""
        time.sleep(retry.seconds)


class TurnResult(NamedTuple):
    reply: str
    steps: int
    compacted: bool
    stopped: str | None = None  # why the turn ended before the model finished


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


class Agent:
    def __init__(
        self,
        session: LoopSession,
        client: ModelClient,
        registry: ToolRegistry,
        counter: TokenCounter,
        config: AgentConfig,
        cost: "Cost",
        events: Events | None = None,
        workspace_head: Callable[[], str | None] = lambda: None,
        code_snapshot: Callable[[str], str | None] | None = None,
        hooks: Hooks = NO_HOOKS,
        mcp: "McpHub | None" = None,
    ) -> None:
        self.session = session
        self.mcp = mcp  # the MCP servers whose tools `registry` offers (`\mcp` lists them)
        self.client = client
        self.registry = registry
        self.counter = counter
        self.config = config
        self.cost = cost
        self.events = events or Events()
        self.workspace_head = workspace_head
        # takes a code snapshot (its message) -> its commit in the project, or None
        self.code_snapshot = code_snapshot
        self._snapshot: str | None = None  # the newest snapshot this agent recorded
        self._pending: tuple[threading.Thread, dict[str, str | None]] | None = None
        self.hooks = hooks
        self.tools = registry.definitions()  # fixed once the agent is built: sent every request
        self._failed_turn = -1  # the turn in which auto-compaction last failed
        self._title: TitleJob | None = None  # the list summary, asked in the background
        self.summary_due: SummaryDue | None = None  # with summary="later": to hand on
        self._kept = TokenCounts(session.store.home, counter)  # counts earlier turns made
        self._recalled = False  # whether the context's kept counts were read back

    # -- turns ---------------------------------------------------------------------------

    def run_turn(self, prompt: str) -> TurnResult:
        """One user turn, run until the model answers without tool calls. A prompt left
        unanswered before it (a request cancelled or failed) is first closed by an
        interruption note (`agent/interrupted.py`): the new prompt is sent alone."""
        session = self.session
        self.settle_title()  # the title asked after the last reply goes first
        closed = self._close_unanswered()
        session.turn += 1
        session.add({"role": "user", "content": prompt})
        try:
            trailers = self._trailers(0, snapshot=False)
            session.checkpoint(turn_subject(session.turn, prompt), trailers=trailers)
        except (OSError, GitsessionsError) as error:
            session.turn -= 1
            session.withdraw(2 if closed else 1)  # never stored: the session is as it was
            raise PromptNotSaved(error) from error
        self._start_snapshot()  # the code the prompt found, taken while the model thinks
        return self._after_turn(self._steps)

    def retry_turn(self) -> TurnResult:
        """Finish the last turn, whose prompt (and maybe some steps) was saved but which
        the model never finished (it was down, or the process was stopped)."""
        assert self.session.unanswered_prompt() is not None
        self.settle_title()
        first = last_step(self.session) + 1
        return self._after_turn(lambda: self._steps(first=first))

    def _close_unanswered(self) -> bool:
        """Answer an unanswered prompt in the context with an interruption note saying
        what partial reply had arrived (whether one was added). Tool calls left without
        a result are answered first (`save`)."""
        session = self.session
        if session.unanswered_prompt() is None:
            return False
        from gitsessions.agent.interrupted import interruption_note
        from gitsessions.services.compaction.continuation import is_note

        if is_note(session.context[-1]):
            return False
        last = session.last_record()
        partial = last if last and last.get("incomplete") else None
        self.save()
        session.add(interruption_note(partial))
        return True

    def _after_turn(self, steps: Callable[[], TurnResult]) -> TurnResult:
        """Run the turn's steps, then the post-turn hook on what was committed (also when
        the turn failed with an error; not after Ctrl-C)."""
        try:
            result = steps()
        except GitsessionsError as error:
            self._post_turn(None, error)
            raise
        self._post_turn(result, None)
        return result

    def _post_turn(self, result: TurnResult | None, error: GitsessionsError | None) -> None:
        session = self.session
        self.hooks.run(
            "post-turn",
            session.id,
            session.head.commit.decode(),
            turn=session.turn,
            steps=result.steps if result else None,
            compacted=result.compacted if result else None,
            stopped=result.stopped if result else None,
            error=str(error) if error else None,
            workspace=(session.head.header.get("workspace") or {}).get("path"),
        )

    def retry(self) -> TurnResult:
        """Send the last prompt again: finish it when it has no reply yet, otherwise undo
        its turn (its answer leaves the context, not the transcript) and run it anew.
        Raises `NothingToRetry` when no prompt was sent yet."""
        if self.session.unanswered_prompt() is not None:
            return self.retry_turn()
        undone = self.undo()
        if undone is None:
            raise NothingToRetry("nothing to retry: no prompt was sent in this context yet")
        return self.run_turn(undone.prompt)

    def undo(self) -> Undone | None:
        """Drop the last turn (its prompt and everything after it) from the working
        context, recorded as one `undo` commit; the transcript keeps it. None when the
        context holds no prompt to drop (a continuation note is not one)."""
        from gitsessions.services.compaction.continuation import is_note

        self.save()
        context = self.session.context
        prompts = [
            i for i, m in enumerate(context) if i > 0 and m.get("role") == "user" and not is_note(m)
        ]
        if not prompts:
            return None
        at = prompts[-1]
        turn = self._last_kept_turn()
        self.session.set_context(context[:at])
        subject = f"undo: turn {turn}" if turn else "undo: the last prompt"
        trailers = {"Undone-Turn": turn} if turn else {}
        self.session.checkpoint(subject, event="undo", trailers=trailers)
        return Undone(turn, text_of(context[at]))

    def _last_kept_turn(self) -> int | None:
        """The newest turn whose prompt is still in the context: the newest turn that
        started (a `Step: 0` commit) and was not undone since, nor rewound away (a
        rewind of the chat to turn N drops the later turns of the commits before it)."""
        undone: set[str] = set()
        below: int | None = None  # turns after this one were rewound away
        for _commit_id, commit in self.session.store.history(self.session.head):
            subject, trailers = parse_trailers(commit.message)
            event = trailers.get("Event")
            if event == "undo":
                undone.add(trailers.get("Undone-Turn", ""))
            elif event == "rewind" and "chat" in subject.rpartition("(")[2]:
                to = trailers.get("Rewind-To", "")
                if to.isdigit():
                    below = int(to) if below is None else min(below, int(to))
            elif event == "turn" and trailers.get("Step") == "0":
                turn = trailers.get("Turn", "")
                if turn.isdigit() and turn not in undone and (below is None or int(turn) <= below):
                    return int(turn)
        return None

    def save(self) -> None:
        """Commit whatever is pending, first answering any tool call left without a result
        (after an interruption), so the stored context always has valid pairs."""
        session = self.session
        self.settle_title()
        if not session.dirty:
            return
        for call_id in session.open_calls():
            session.add({"role": "tool", "tool_call_id": call_id, "content": CANCELLED})
            audit(session.store.home, "tool", session.id, "cancelled", call_id=call_id)
        prompt = session.unanswered_prompt() or ""
        session.checkpoint(turn_subject(session.turn, prompt), trailers=self._trailers(0))

    def _steps(self, first: int = 1) -> TurnResult:
        """Steps until a reply without tool calls; numbered from `first` (a retried turn
        goes on after its saved steps), counted from 1 in the result."""
        compacted = False
        failed_in_a_row = 0
        for taken in range(1, self.config.max_steps + 1):
            step = first + taken - 1
            raw, compacted_now = self.ensure_budget()
            compacted |= compacted_now
            completion = self._request(raw, step)
            try:
                message = completion.message
                self.session.add(message, **reply_meta(completion, self.config.model))
                self.events.reply(message)
                calls = message.get("tool_calls") or []
                if not calls:
                    result = TurnResult(text_of(message), taken, compacted)
                    self._commit(step, message, result)
                    self._refresh_summary()  # after the commit: the reply never waits for it
                    return result
                outcomes = self._run_tools(calls)
            except KeyboardInterrupt:
                self.save()
                raise
            self._commit(step, message, TurnResult(text_of(message), taken, compacted))
            failed = all(not o.ok for o in outcomes)  # errors and denials alike
            failed_in_a_row = failed_in_a_row + 1 if failed else 0
            if failed_in_a_row >= self.config.max_failed_steps:
                return TurnResult(
                    "",
                    taken,
                    compacted,
                    f"stopped: {plural(failed_in_a_row, 'step')} in a "
                    "row where every tool call failed or was denied",
                )
        return TurnResult(
            "",
            self.config.max_steps,
            compacted,
            f"stopped: reached the limit of {plural(self.config.max_steps, 'step')} (--max-steps)",
        )

    def _commit(self, step: int, message: Message, result: TurnResult) -> None:
        """Checkpoint a step, its subject saying what `message` did; a failure (disk full, a
        lost race...) raises `ReplyNotSaved` carrying `result`, so the reply is not lost."""
        subject = step_subject(self.session.turn, step, message)
        fresh = bool(message.get("tool_calls"))  # a reply alone changed no file
        try:
            self.session.checkpoint(subject, trailers=self._trailers(step, fresh))
        except (OSError, GitsessionsError) as error:
            raise ReplyNotSaved(error, result) from error

    def _trailers(self, step: int, fresh: bool = True, snapshot: bool = True) -> dict[str, Any]:
        """A step's trailers; `fresh`: take a new code snapshot (a step that ran tools),
        else name the last one (the one taken while the model answered, if any);
        `snapshot=False`: name none (the prompt's commit: its snapshot is being taken)."""
        trailers: dict[str, Any] = {"Step": step, "Workspace-Head": self.workspace_head()}
        if self.code_snapshot is not None and snapshot:
            self._settle()
            if fresh or self._snapshot is None:
                label = f"session {self.session.id[:8]} turn {self.session.turn}.{step}"
                self._snapshot = self.code_snapshot(f"gitsessions snapshot: {label}")
            trailers["Code-Snapshot"] = self._snapshot
        return trailers

    def _start_snapshot(self) -> None:
        """Take a code snapshot in a thread (its git runs while the model answers); the
        next commit, or the next tool call, waits for it (`_settle`)."""
        if self.code_snapshot is None:
            return
        self._settle()
        take = self.code_snapshot
        label = f"session {self.session.id[:8]} turn {self.session.turn}.0"
        result: dict[str, str | None] = {}

        def run() -> None:
            result["commit"] = take(f"gitsessions snapshot: {label}")

        thread = threading.Thread(target=run, name="code-snapshot")
        thread.start()
        self._pending = (thread, result)

    def _settle(self) -> None:
        """Wait for the snapshot taken in the background, if any: it becomes the last."""
        if self._pending is None:
            return
        thread, result = self._pending
        self._pending = None
        thread.join()
        self._snapshot = result.get("commit")

    # -- budget --------------------------------------------------------------------------

    def estimate(self) -> int:
        return self.counter.estimate(self.session.context, self.tools)

    def ensure_budget(self) -> tuple[int | None, bool]:
        """Compact automatically when over the threshold. Returns the raw (uncalibrated)
        token count of the context about to be sent (None when it was not counted: under
        the threshold by a bound that needs no tokenizer, which then need not be loaded
        at all), and whether it compacted. The bound adds the counts kept by earlier
        turns (`tokens.sqlite`) and the bytes of what was never counted; only when it
        says the context may be near the threshold is the context counted exactly (the
        tokenizer encoding only messages without a kept count), and what it counted is
        kept. After a failed attempt, auto-compaction waits for the next turn instead
        of paying for the same failing summary at every step."""
        policy = self.config.policy
        context = self.session.context
        if not self.counter.loaded:
            bound = self.counter.bound(context, self.tools, recall=self._kept.lookup)
            if bound <= policy.trim_threshold * policy.max_context_tokens:
                return None, False
        elif not self._recalled:  # loaded ahead (chat): what is kept need not be encoded
            self._kept.recall(self.counter.keys(context, self.tools))
        self._recalled = True
        try:
            return self._budget(policy)
        finally:
            self._kept.keep()

    def _budget(self, policy: Policy) -> tuple[int, bool]:
        """The exact count of the context (compacting it when over the threshold)."""
        raw = self.counter.count_context(self.session.context, self.tools)
        tokens = self.counter.scaled(raw)
        compacted = False
        if should_compact(tokens, policy) and self._failed_turn != self.session.turn:
            share = 100 * tokens // policy.max_context_tokens
            reason = f"context at {share}% of {policy.max_context_tokens:,} tokens: compacting"
            result = self.compact("auto", reason=reason)
            if result is None:
                self._failed_turn = self.session.turn
            elif result.changed:
                compacted = True
                raw = self.counter.count_context(self.session.context, self.tools)
                tokens = result.after_tokens
        if tokens > policy.max_context_tokens:
            raise ContextStillTooLarge(
                f"the context is {tokens} tokens, over --max-context-tokens "
                f"{policy.max_context_tokens}, even after compaction; the session is saved. "
                f"Try `gitsessions compact {self.session.id[:8]} --focus TEXT`, a fork, or a "
                "larger --max-context-tokens"
            )
        return raw, compacted

    def compact(
        self,
        trigger: str,
        focus: str | None = None,
        clear_only: bool = False,
        reason: str = "compacting the context",
    ) -> "CompactionResult | None":
        """Compact now (committing what is pending first); None when it failed. Whatever
        the summarizer cost is counted, even when its summary was rejected."""
        self.save()
        self.events.busy(reason)
        try:
            return self._compact(trigger, focus, clear_only)
        finally:
            self.events.busy(None)

    def _compact(
        self, trigger: str, focus: str | None, clear_only: bool
    ) -> "CompactionResult | None":
        from gitsessions.services.compaction.compactor import compact_session, make_summarizer

        tools = self.tools
        spent: list[tuple[str, int, int]] = []
        try:
            recorded = compact_session(
                self.session.store,
                self.session.head,
                policy=self.config.policy,
                summarize=make_summarizer(self.client, self.config.summary_model, spent),
                count=lambda messages: self.counter.estimate(messages, tools),
                cost=self.cost,
                trigger="manual" if trigger == "manual" else "auto",
                clear_only=clear_only,
                focus=focus,
                hooks=self.hooks,
            )
        except CompactionError as error:
            self._count_spent(spent)
            self.events.notice(f"{trigger} compaction did not happen: {error}")
            return None
        if recorded.committed:
            self.session.adopt(recorded.head)
        if recorded.result.summarizer_model is None:  # a rejected summary still cost tokens
            self._count_spent(spent)
        self.events.compacted(recorded.result)
        return recorded.result

    def _count_spent(self, spent: list[tuple[str, int, int]]) -> None:
        for model, prompt, answer in spent:
            self.session.count_usage(model, prompt, answer, self.cost(model, prompt, answer))

    # -- model ---------------------------------------------------------------------------

    def _request(self, raw: int | None, step: int) -> Completion:
        """Send the context (`raw` tokens by our count, for calibration). A reply cut short
        is recorded (see `_keep_partial`) before its error goes on."""
        started = False

        def on_text(delta: str) -> None:
            nonlocal started
            if not started:
                started = True
                self.events.waiting(False)
            self.events.text(delta)

        self.events.waiting(True)
        try:
            completion = self.client.complete(
                self.session.context,
                model=self.config.model,
                tools=self.tools,
                stream=self.config.stream,
                on_text=on_text,
            )
        except ModelError as error:
            if error.partial is not None:
                self._keep_partial(error.partial, step)
            raise
        except RequestInterrupted as interrupt:  # Ctrl-C: what streamed so far is kept
            self.events.waiting(False)
            if interrupt.partial is not None:
                self._keep_partial(interrupt.partial, step, interrupted=True)
            raise
        finally:
            self.events.waiting(False)
        self._count(completion.model or self.config.model, completion)
        if raw is not None and completion.usage and completion.usage.prompt_tokens:
            self.counter.calibrate(raw, completion.usage.prompt_tokens)
        return completion

    def _keep_partial(self, partial: Completion, step: int, interrupted: bool = False) -> None:
        """Record a reply the model did not finish: in the transcript only, marked
        incomplete (and `interrupted` when the user stopped it with Ctrl-C), its tool
        calls kept under `unsent_tool_calls` and never run. A failed commit here leaves it
        pending (the next checkpoint saves it): the model's error is the one to report."""
        self._count(partial.model or self.config.model, partial)
        message = partial.message
        record: Message = {"role": "assistant", "content": text_of(message), "incomplete": True}
        if interrupted:
            record["interrupted"] = True
        if message.get("tool_calls"):
            record["unsent_tool_calls"] = message["tool_calls"]
        self.session.record(record, **reply_meta(partial, self.config.model))
        subject = step_subject(self.session.turn, step, record, cut=True)
        try:
            self.session.checkpoint(subject, trailers=self._trailers(step, fresh=False))
        except (OSError, GitsessionsError) as error:
            self.events.notice(f"the partial reply is not saved yet: {error}")

    def _count(self, model: str, completion: Completion) -> None:
        usage = completion.usage
        prompt = usage.prompt_tokens if usage else 0
        answer = usage.completion_tokens if usage else 0
        self.session.count_usage(model, prompt, answer, self.cost(model, prompt, answer))

    def _refresh_summary(self) -> None:
        """After the first turn and every `summary_every` turns: ask for the list summary
        as `config.summary` says (`agent/titling.py`); `settle_title` takes it up."""
        turn = self.session.turn
        mode = self.config.summary
        if mode == "off" or (turn != 1 and turn % self.config.summary_every):
            return
        request = title_request(self.session.context)
        if mode == "later":
            self.summary_due = SummaryDue(request, self.config.summary_model, turn)
            return
        client, model = self.client, self.config.summary_model
        retry = mode == "wait"  # no countdown over the prompt
        self._title = TitleJob(
            lambda: client.complete(
                request, model=model, temperature=0.0, max_tokens=40, retry=retry
            )
        )

    def settle_title(self, wait: bool = True) -> None:
        """Take up the list summary asked for in the background, if any: its usage
        counted and the summary recorded with the next commit (a failure said in one
        notice). Unless `wait`, only when it is done. While it is awaited a spinner says
        so; Ctrl-C skips it (the request is left to end on its own), quietly."""
        job = self._title
        if job is None or (not wait and not job.done.is_set()):
            return
        if not job.done.is_set():
            self.events.busy("writing the session title (Ctrl-C skips it)")
            try:
                while not job.done.wait(0.05):
                    pass
            except KeyboardInterrupt:
                self._title = None
                return
            finally:
                self.events.busy(None)
        self._title = None
        if job.error is not None or job.completion is None:
            self.events.notice(f"could not write the list summary: {job.error}")
            return
        completion = job.completion
        self._count(completion.model or self.config.summary_model, completion)
        summary = summary_line(completion)
        if summary:
            self.session.update_header(summary=summary)
        if self.session.pending:  # inside a turn: its next commit records it
            return
        subject = summary_subject(self.session.turn, summary)
        try:  # a commit of its own, `turn N: summary "..."`, at the turn's last step
            trailers = self._trailers(last_step(self.session), fresh=False)
            self.session.checkpoint(subject, trailers=trailers)
        except (OSError, GitsessionsError) as error:  # still pending: the next commit has it
            self.events.notice(f"the list summary is not saved yet: {error}")

    # -- tools ---------------------------------------------------------------------------

    def _run_tools(self, calls: list[dict[str, Any]]) -> list[ToolOutcome]:
        self._settle()  # a snapshot still running must not see the tools' writes
        outcomes: list[ToolOutcome] = []
        for call in calls:
            self.events.tool_started(call)
            outcome = self.registry.dispatch(
                call,
                running=functools.partial(self.events.tool_running, call),
                output=self.events.tool_output,
            )
            outcomes.append(outcome)
            self.session.add(outcome.message())
            self._audit(outcome)
            self.events.tool_finished(outcome)
        return outcomes

    def _audit(self, outcome: ToolOutcome) -> None:
        result = "denied" if outcome.denied else "ok" if outcome.ok else "error"
        audit(
            self.session.store.home,
            "tool",
            self.session.id,
            result,
            tool=outcome.tool,
            arguments_sha256=outcome.arguments_digest,
            duration=round(outcome.duration, 3),
            **({"exit_code": outcome.exit_code} if outcome.exit_code is not None else {}),
        )


def last_step(session: LoopSession) -> int:
    """The newest step saved in the session's current turn (0: only its prompt)."""
    for _commit_id, commit in session.store.history(session.head):
        trailers = parse_trailers(commit.message)[1]
        if "Turn" not in trailers:
            continue  # a compaction inside the turn
        if trailers["Turn"] != str(session.turn):
            return 0
        if trailers.get("Step", "").isdigit() and int(trailers["Step"]) > 0:
            return int(trailers["Step"])
    return 0


def reply_meta(completion: Completion, model: str) -> dict[str, Any]:
    """What a reply's transcript record adds to the message: the model that answered and
    the request's usage (never sent to a model)."""
    usage = completion.usage
    return {
        "model": completion.model or model,
        "usage": None
        if usage is None
        else {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens},
    }
