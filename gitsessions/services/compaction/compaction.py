"""Tiered compaction of the working context: a pure function, tested without a server.

Invariant: `compact` never mutates its input nor breaks call/result pairing: it returns
valid, smaller messages, an unchanged outcome ("not_needed", "nothing_to_compact"), or
raises `CompactionError` with the context as it was. The transcript is never rewritten:
a cleared output is a stub naming its transcript index and `read_session`.

Stage 1 (`clearing`): giant messages cut to a head and tail (`giants`), then old tool
outputs stubbed, oldest first, to the target; protected: the newest result, the current
turn's within `current_turn_allowance`, the last `keep_recent_tool_results`. Stage 2
cuts at the latest user message, keeps the system prompt and the rest, and replaces the
older part by one continuation note (summary, `ledger`, the user's words). Whether to ask
the model is one decision for the run and the dry run: not when an empty summary would
not beat the target. Context tool messages match the transcript by `tool_call_id`.
"""

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from gitsessions.services.compaction import user_words
from gitsessions.services.compaction.clearing import Count, candidates, clear
from gitsessions.services.compaction.compaction_policy import (
    CompactionRejected,
    Policy,
    SummarizerFailed,
)
from gitsessions.services.compaction.continuation import (
    SummaryRequest,
    SummaryResult,
    is_note,
    make_note,
    summary_request,
)
from gitsessions.services.compaction.ledger import Ledger, build_ledger
from gitsessions.values.clock import iso, now_iso
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message, pairing_errors, validate_messages
from gitsessions.values.plural import plural

Summarize = Callable[[SummaryRequest], SummaryResult]
Mode = Literal["auto", "manual"]
Outcome = Literal["compacted", "not_needed", "nothing_to_compact"]

UNCHANGED = "; the context is unchanged"


@dataclass(frozen=True)
class CompactionResult:
    """What compaction did (or, with `dry_run`, would do) to the working context."""

    outcome: Outcome
    messages: list[Message]
    before_tokens: int
    after_tokens: int
    trigger: Mode
    max_context_tokens: int
    stages: tuple[str, ...] = ()
    cleared: tuple[int, ...] = ()
    summarized: int = 0
    summary: str | None = None
    summarizer_model: str | None = None
    usage: dict[str, int] | None = None
    notes: tuple[str, ...] = ()
    dry_run: bool = False
    after_min: int | None = None  # a dry run's summary: at least this many tokens after

    @property
    def changed(self) -> bool:
        """Whether the messages differ from the input (never with `dry_run`)."""
        return self.outcome == "compacted" and not self.dry_run

    @property
    def over_limit(self) -> bool:
        """Whether the context is still over max_context_tokens."""
        return self.after_tokens > self.max_context_tokens

    def but(self, **changes: Any) -> "CompactionResult":
        """A copy with `changes` applied."""
        return dataclasses.replace(self, **changes)

    def record(self, time: datetime | str | None = None) -> dict[str, Any]:
        """The entry for compactions.json; `time` defaults to now (ISO 8601 UTC)."""
        if time is None:
            time = now_iso()
        elif isinstance(time, datetime):
            time = iso(time)
        summarizer = None
        if self.summarizer_model is not None:
            summarizer = {"model": self.summarizer_model, "usage": dict(self.usage or {})}
        return {
            "time": time,
            "trigger": self.trigger,
            "stages": list(self.stages),
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
            "summary": self.summary,
            "summarizer": summarizer,
            "cleared": list(self.cleared),
        }


def compact(
    messages: Sequence[Message],
    policy: Policy,
    summarize: Summarize,
    count: Count,
    *,
    mode: Mode = "auto",
    clear_only: bool = False,
    dry_run: bool = False,
    focus: str | None = None,
    transcript: Sequence[Message] | None = None,
    transcript_start: int = 0,
    ledger: Ledger | None = None,
    plan: Sequence[Mapping[str, Any]] = (),
    pins: Sequence[str] = (),
    count_request: Count | None = None,
) -> CompactionResult:
    """Compact `messages` (system prompt first) under `policy`.

    `mode="auto"` clears, then summarizes only if still over the target; if the summary
    fails but clearing alone fits under max_context_tokens, the cleared context is kept
    (and `notes` says so); otherwise the error propagates and nothing changes.
    `mode="manual"` clears and always summarizes when there are older turns, all or
    nothing. `clear_only` runs stage 1 alone; `dry_run` reports without summarizing.
    `transcript` (default: `messages`) feeds the ledger and the stubs' indices: it may be
    the transcript's tail from message `transcript_start` on (what the context's tool
    outputs need), with `ledger` read beforehand (incrementally, see `ledger`); `plan`
    items are {"text" or "step", "status"}; `pins` are kept verbatim in every note.
    `count` counts the context as it is sent (the agent's tool schemas included);
    `count_request` (default `count`) counts the summary request, which carries its own
    system prompt and the data, never the agent's tools, so their tokens are not taken
    from the summarizer's input.

    Raises `SummarizerFailed` or `CompactionRejected` (context unchanged) and
    `InvalidMessages` for a malformed context. A result still over the limit is not an
    error: see `over_limit`.
    """
    validate_messages(list(messages), "context", check_pairing=False)
    work = copy.deepcopy(list(messages))
    before = count(work)
    base = _Base(before, mode, policy.max_context_tokens, dry_run)
    record = work if transcript is None else list(transcript)
    start = transcript_start if transcript is not None else 0
    call = _Call(
        work,
        record,
        start,
        policy,
        count,
        count_request or count,
        base,
        paired=not pairing_errors(work),
    )
    stage1 = call.cleared()
    boundaries = [i for i, m in enumerate(work) if i > 1 and m["role"] == "user"]

    summarizing = not clear_only and (mode == "manual" or stage1.tokens > policy.target_tokens)
    if summarizing and not boundaries:
        call.notes.append("cannot summarize: no user message after the first one to cut at")
        summarizing = False
    if not summarizing:
        return call.unsummarized(stage1, has_older=bool(boundaries) and not clear_only)

    cut = boundaries[-1]
    if all(is_note(m) for m in work[1:cut]):  # only the last note: nothing new to summarize
        call.notes.append("nothing new to summarize since the last compaction")
        if stage1.result is not None:
            return call.keep(stage1.result)
        return base.result(work, before, (), (), call.notes, outcome="nothing_to_compact")
    if ledger is None:
        ledger = build_ledger(record, plan, pins)
    planned = call.plan(stage1, cut, ledger, focus)
    if planned.floor >= planned.beat:
        return call.not_asked(stage1, planned)
    if dry_run:
        return call.estimate(planned)
    return call.summarize(stage1, planned, summarize)


# -- stage 2 and guards --------------------------------------------------------------


def _summarize(request: SummaryRequest, summarize: Summarize) -> SummaryResult:
    try:
        result = summarize(request)
    except GitsessionsError as error:
        raise SummarizerFailed(f"summarizer failed: {error}{UNCHANGED}") from error
    if not result.text or not result.text.strip():
        raise CompactionRejected(f"compaction rejected: the summary is empty{UNCHANGED}")
    return result


@dataclass(frozen=True)
class _Base:
    """The fields every result of one `compact` call shares."""

    before_tokens: int
    trigger: Mode
    max_context_tokens: int
    dry_run: bool

    def result(
        self,
        messages: list[Message],
        after: int,
        stages: tuple[str, ...],
        cleared: Sequence[int],
        notes: Sequence[str] = (),
        *,
        outcome: Outcome = "compacted",
        **extra: Any,
    ) -> CompactionResult:
        return CompactionResult(
            outcome=outcome,
            messages=messages,
            before_tokens=self.before_tokens,
            after_tokens=after,
            trigger=self.trigger,
            max_context_tokens=self.max_context_tokens,
            stages=stages,
            cleared=tuple(cleared),
            notes=tuple(notes),
            dry_run=self.dry_run,
            **extra,
        )


def _guarded(
    result: CompactionResult, paired: bool, original: list[Message] | None
) -> CompactionResult:
    """Check the guards every returned result passes; a dry run returns `original`."""
    if result.after_tokens >= result.before_tokens:
        raise CompactionRejected(
            f"compaction rejected: the result is not smaller ({result.after_tokens} >= "
            f"{result.before_tokens} tokens){UNCHANGED}"
        )
    if paired:
        errors = pairing_errors(result.messages)
        if errors:
            raise CompactionRejected(f"compaction rejected: it would break pairing: {errors[0]}")
    return result if original is None else result.but(messages=original)


# -- one call's phases ---------------------------------------------------------------


@dataclass(frozen=True)
class _Stage1:
    """What stage 1 did to the context of one `compact` call."""

    messages: list[Message]  # the context with giants cut and old outputs stubbed
    clearing: list[tuple[int, int]]  # (position, transcript index) of each cut or cleared
    tokens: int  # the count of `messages`
    result: CompactionResult | None  # stage 1 alone as a result, when it changed anything


@dataclass(frozen=True)
class _Plan:
    """Stage 2 of one `compact` call as decided before the model is asked."""

    cut: int  # the latest user message after index 1: kept, with everything after it
    older: list[Message]  # what the summary replaces (unstubbed: the summarizer sees all)
    ledger_text: str
    words_text: str  # the note's quotes of the user's own earlier messages
    request: SummaryRequest
    kept_clear: list[int]  # transcript indices stage 1 cleared after the cut
    stages: tuple[str, ...]
    floor: int  # the context's tokens with an empty summary
    beat: int  # what the summarized context must be smaller than


@dataclass(frozen=True)
class _Call:
    """One `compact` call: its inputs, the notes its phases add, and the phases."""

    work: list[Message]  # a deep copy of the input context
    record: Sequence[Message]  # the transcript, from message `start` on
    start: int
    policy: Policy
    count: Count
    count_request: Count  # a summary request: no tool schemas
    base: _Base
    paired: bool  # whether the input's tool calls and results pair up
    notes: list[str] = dataclasses.field(default_factory=list)

    def keep(self, result: CompactionResult, *more: str) -> CompactionResult:
        """Stage 1's `result` with the notes (and `more`), guarded; a dry run returns the
        input messages."""
        original = self.work if self.base.dry_run else None
        return _guarded(result.but(notes=(*self.notes, *more)), self.paired, original)

    def cleared(self) -> _Stage1:
        """Stage 1: cut giants and clear old tool outputs, noting what was done."""
        before = self.base.before_tokens
        messages, clearing, unmatched, giants = clear(
            self.work, self.record, self.start, self.policy, self.count, before
        )
        after = self.count(messages) if clearing else before
        if unmatched:
            self.notes.append(f"kept {unmatched} tool outputs not found in the transcript")
        if not clearing:
            return _Stage1(messages, clearing, after, None)
        what = f"{len(clearing) - giants} tool outputs"
        if giants:
            what = f"{giants} giant messages (cut to a head and a tail) and {what}"
        self.notes.append(f"cleared {what}: {before:,} -> {after:,} tokens")
        result = self.base.result(messages, after, ("clear",), [i for _, i in clearing])
        return _Stage1(messages, clearing, after, result)

    def unsummarized(self, stage1: _Stage1, has_older: bool) -> CompactionResult:
        """The result when stage 2 does not run: stage 1's, or the context unchanged."""
        if stage1.result is not None:
            return self.keep(stage1.result)
        before = self.base.before_tokens
        if has_older or candidates(self.work, self.record, self.start, self.policy, self.count)[0]:
            self.notes.append(
                f"already at or under the target ({before:,} tokens); nothing changed"
            )
            return self.base.result(self.work, before, (), (), self.notes, outcome="not_needed")
        self.notes.append("nothing to compact: no older turns and no clearable tool output")
        return self.base.result(self.work, before, (), (), self.notes, outcome="nothing_to_compact")

    def plan(self, stage1: _Stage1, cut: int, ledger: Ledger, focus: str | None) -> _Plan:
        """Stage 2's request and what its result must beat; a dry run notes what it would do."""
        policy, count = self.policy, self.count
        older = self.work[1:cut]
        fixed = count([{"role": "user", "content": ""}])

        def tokens(text: str) -> int:
            return count([{"role": "user", "content": text}]) - fixed

        ledger_text = ledger.render(policy.ledger_tokens, tokens)
        said = user_words.said(older, is_note)
        words_text = user_words.render(said, policy.user_words_tokens, tokens)
        kept_clear = [index for position, index in stage1.clearing if position >= cut]
        stages = ("clear", "summarize") if kept_clear else ("summarize",)
        budget = policy.max_context_tokens - policy.summary_max_tokens
        request = summary_request(
            older,
            count=self.count_request,
            max_tokens=policy.summary_max_tokens,
            budget=budget,
            focus=focus,
        )
        self.notes.extend(request.notes)
        # One decision for the run and the dry run: the context with an empty summary. When
        # even that is not smaller than what the summary must beat (the input; auto mode: the
        # cleared context), summarizing cannot help and no model is asked.
        note = make_note("", ledger_text, words_text)
        floor = count([stage1.messages[0], note, *stage1.messages[cut:]])
        beat = stage1.tokens if self.base.trigger == "auto" else self.base.before_tokens
        if self.base.dry_run:
            self.notes.append(
                f"would summarize {plural(len(older), 'message')} before message {cut} "
                f"({count(older):,} tokens); after: {floor:,} tokens plus the summary (at most "
                f"{policy.summary_max_tokens:,})"
            )
        return _Plan(cut, older, ledger_text, words_text, request, kept_clear, stages, floor, beat)

    def not_asked(self, stage1: _Stage1, plan: _Plan) -> CompactionResult:
        """Summarizing cannot make the context smaller: stage 1's result, or the context
        unchanged (auto mode: refused)."""
        self.notes.append(
            f"summarizing cannot make the context smaller ({plan.floor:,} tokens without any "
            f"summary, {plan.beat:,} now); the model is not asked"
        )
        mode = self.base.trigger
        if stage1.result is not None and (mode == "manual" or not stage1.result.over_limit):
            return self.keep(stage1.result)
        if mode == "auto":
            raise CompactionRejected(f"compaction rejected: {self.notes[-1]}{UNCHANGED}")
        before = self.base.before_tokens
        return self.base.result(self.work, before, (), (), self.notes, outcome="not_needed")

    def estimate(self, plan: _Plan) -> CompactionResult:
        """A dry run's result: what the run does is summarize, and keep the result only if
        it is smaller."""
        estimate = plan.floor + self.policy.summary_max_tokens
        if estimate >= plan.beat:
            self.notes.append(
                f"the run keeps the summary only if it is under {plan.beat - plan.floor:,} "
                "tokens; a longer one is refused and nothing changes"
            )
        return self.base.result(
            self.work,
            estimate,
            plan.stages,
            plan.kept_clear,
            self.notes,
            summarized=len(plan.older),
            after_min=plan.floor,
        )

    def summarize(self, stage1: _Stage1, plan: _Plan, summarize: Summarize) -> CompactionResult:
        """Stage 2: ask for the summary and keep it only if the context gets smaller; auto
        mode falls back to stage 1's result when that fits under max_context_tokens."""
        kept_clear, stages, count = plan.kept_clear, plan.stages, self.count
        try:
            summary = _summarize(plan.request, summarize)
            note = make_note(summary.text, plan.ledger_text, plan.words_text)
            compacted = [stage1.messages[0], note, *stage1.messages[plan.cut :]]
            after = count(compacted)
            if after > self.policy.target_tokens:  # the kept turn itself is big: clear it too
                compacted, more, _, _ = clear(
                    compacted, self.record, self.start, self.policy, count, after
                )
                after = count(compacted) if more else after
                kept_clear = sorted([*kept_clear, *(index for _, index in more)])
                stages = ("clear", "summarize") if kept_clear else stages
            # manual mode: compared with the input by the guard
            if self.base.trigger == "auto" and after >= stage1.tokens:
                raise CompactionRejected(
                    f"compaction rejected: the summarized context is not smaller "
                    f"({after} >= {stage1.tokens} tokens){UNCHANGED}"
                )
        except (SummarizerFailed, CompactionRejected) as error:
            fallback = stage1.result
            if self.base.trigger == "auto" and fallback is not None and not fallback.over_limit:
                reason = str(error).removesuffix(UNCHANGED)
                return self.keep(fallback, f"kept the cleared tool outputs only: {reason}")
            raise
        summarized = plural(len(plan.older), "message")
        self.notes.append(f"summarized {summarized}: {stage1.tokens:,} -> {after:,} tokens")
        final = self.base.result(
            compacted,
            after,
            stages,
            kept_clear,
            self.notes,
            summarized=len(plan.older),
            summary=summary.text.strip(),
            summarizer_model=summary.model,
            usage=summary.usage(),
        )
        return _guarded(final, self.paired, None)
