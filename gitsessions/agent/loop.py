"""The turn loop: before every request check the budget (compact if needed), ask the model,
run its tool calls, commit at every step boundary; stop at a reply without tool calls.

Invariants:
- The prompt is committed before the first request and every step before the next: a
  crash or Ctrl-C loses at most the step in flight. A failed commit keeps the reply
  (`ReplyNotSaved`, the step stays pending); a prompt whose commit fails is taken back
  (`PromptNotSaved`: nothing sent).
- No request over `max_context_tokens`; every tool call gets exactly one result, even
  when cancelled.
- An unfinished reply (cut, broken, timed out, Ctrl-C) goes to the transcript only
  (`incomplete`, `interrupted`, `unsent_tool_calls`: never run), the context unchanged,
  so sending the prompt again is a clean retry; a `length` cut reply is kept as any.
- With snapshots on, every step commit names its code (`Code-Snapshot`); the prompt's
  snapshot is waited for before a tool runs or the next commit.
- A new prompt is never glued to an unanswered one (agent/interrupted.py closes it), and
  one request at a time: a background summary is taken up before the next request.
"""

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitsessions.agent.budget import ContextBudget
from gitsessions.agent.interrupted import interruption_note
from gitsessions.agent.step_snapshots import StepSnapshots
from gitsessions.agent.subjects import step_subject, turn_subject
from gitsessions.agent.titling import (
    SummaryDue,
    TitleJob,
    summary_line,
    summary_subject,
    summary_wanted,
    title_request,
)
from gitsessions.agent.turn_history import last_kept_turn, last_step
from gitsessions.agent.turns import (
    CANCELLED,
    CUT_REASONS,
    AgentConfig,
    Events,
    NothingToRetry,
    PromptNotSaved,
    ReplyNotSaved,
    TurnResult,
    Undone,
    reply_meta,
)
from gitsessions.services.compaction.compaction_policy import CompactionError
from gitsessions.services.hooks.audit import audit
from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.model.completion import Completion
from gitsessions.services.model.errors import ModelError, RequestInterrupted
from gitsessions.services.model.model import ModelClient
from gitsessions.services.tools import ToolOutcome, ToolRegistry
from gitsessions.services.tools.mcp_hub import McpHub
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message, text_of
from gitsessions.values.plural import plural
from gitsessions.values.tokens import TokenCounter

if TYPE_CHECKING:  # the compaction engine is imported when a context first needs it
    from gitsessions.agent.session import AgentSession
    from gitsessions.services.compaction.compaction import CompactionResult
    from gitsessions.services.compaction.compactor import Cost


class Agent:
    def __init__(
        self,
        session: "AgentSession",
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
        self.snapshots = StepSnapshots(code_snapshot) if code_snapshot else None
        self.hooks = hooks
        self.tools = registry.definitions()  # fixed once the agent is built: sent every request
        self._title: TitleJob | None = None  # the list summary, asked in the background
        self.summary_due: SummaryDue | None = None  # with summary="later": to hand on
        self._summary_asked = False  # by this process (`titling.summary_wanted`)
        self.budget = ContextBudget(counter, self.tools, session.store.home, config.policy)

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
        if self.snapshots is not None:  # the code the prompt found, taken as the model thinks
            self.snapshots.start(f"session {session.id[:8]} turn {session.turn}.0")
        return self._after_turn(self._steps)

    def retry_turn(self) -> TurnResult:
        """Finish the last turn, whose prompt (and maybe some steps) was saved but which
        the model never finished (it was down, or the process was stopped)."""
        assert self.session.unanswered_prompt() is not None
        self.settle_title()
        first = last_step(self.session.store, self.session.head, self.session.turn) + 1
        return self._after_turn(lambda: self._steps(first=first))

    def _close_unanswered(self) -> bool:
        """Answer an unanswered prompt in the context with an interruption note saying
        what partial reply had arrived (whether one was added). Tool calls left without
        a result are answered first (`save`)."""
        session = self.session
        if session.unanswered_prompt() is None:
            return False
        # the compaction package (13 ms on an exec) only when a prompt was left unanswered
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
        from gitsessions.services.compaction.continuation import is_note  # as above

        self.save()
        context = self.session.context
        prompts = [
            i for i, m in enumerate(context) if i > 0 and m.get("role") == "user" and not is_note(m)
        ]
        if not prompts:
            return None
        at = prompts[-1]
        turn = last_kept_turn(self.session.store, self.session.head)
        self.session.set_context(context[:at])
        subject = f"undo: turn {turn}" if turn else "undo: the last prompt"
        trailers = {"Undone-Turn": turn} if turn else {}
        self.session.checkpoint(subject, event="undo", trailers=trailers)
        return Undone(turn, text_of(context[at]))

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
            raw, compacted_now = self.budget.ensure(self.session, self._auto_compact)
            compacted |= compacted_now
            completion = self._request(raw, step)
            try:
                message, finish = completion.message, completion.finish_reason
                self.session.add(message, **reply_meta(completion, self.config.model))
                self.events.reply(message)
                if finish in CUT_REASONS:
                    self.events.reply_cut(message)
                calls = message.get("tool_calls") or []
                if not calls:
                    result = TurnResult(text_of(message), taken, compacted, finish_reason=finish)
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
                why = f"{plural(failed_in_a_row, 'step')} in a row where every tool call"
                return TurnResult("", taken, compacted, f"stopped: {why} failed or was denied")
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
        if self.snapshots is not None and snapshot:
            label = f"session {self.session.id[:8]} turn {self.session.turn}.{step}"
            trailers["Code-Snapshot"] = self.snapshots.named(label, fresh)
        return trailers

    # -- budget --------------------------------------------------------------------------

    def estimate(self) -> int:
        return self.budget.estimate(self.session.context)

    def _auto_compact(self, reason: str) -> "CompactionResult | None":
        return self.compact("auto", reason=reason)

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
        # the compaction engine (13 ms on an exec): only when a context needs it
        from gitsessions.services.compaction.compactor import compact_session, make_summarizer

        spent: list[tuple[str, int, int]] = []
        try:
            recorded = compact_session(
                self.session.store,
                self.session.head,
                policy=self.config.policy,
                summarize=make_summarizer(self.client, self.config.summary_model, spent),
                count=lambda messages: self.counter.estimate(messages, self.tools),
                count_request=self.counter.estimate,  # a summary request carries no tools
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
        """After the turns `titling.summary_wanted` names: ask for the list summary as
        `config.summary` says (`agent/titling.py`); `settle_title` takes it up."""
        turn, mode, header = self.session.turn, self.config.summary, self.session.head.header
        every = self.config.summary_every
        if mode == "off" or not summary_wanted(turn, every, header, self._summary_asked):
            return
        self._summary_asked = True
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
            trailers = self._trailers(
                last_step(self.session.store, self.session.head, self.session.turn), fresh=False
            )
            self.session.checkpoint(subject, trailers=trailers)
        except (OSError, GitsessionsError) as error:  # still pending: the next commit has it
            self.events.notice(f"the list summary is not saved yet: {error}")

    # -- tools ---------------------------------------------------------------------------

    def _run_tools(self, calls: list[dict[str, Any]]) -> list[ToolOutcome]:
        if self.snapshots is not None:  # a snapshot being taken must not see the tools' writes
            self.snapshots.settle()
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
