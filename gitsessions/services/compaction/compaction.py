"""Tiered compaction of the working context: a pure function, tested without a server.

Invariant: `compact(messages, policy, summarize, count, ...)` never mutates its input and
never breaks tool call/result pairing. Either it returns a `CompactionResult` whose
messages are valid and smaller than before, or an unchanged-context outcome
("not_needed", "nothing_to_compact"), or it raises a `CompactionError` and the caller's
context stays exactly as it was. The transcript is never rewritten: a cleared tool
output becomes a stub naming its transcript message index and `read_session`.

Stage 1 ("clear") first cuts every giant message (over `giant_share` of the budget and
GIANT_MIN_TOKENS: a tool-call argument, a reply, a tool output, a user message, anywhere
in the context, the current turn included) to a head and a tail that name its transcript
message, then replaces old tool outputs with stubs, oldest first, until the context is
at or under the target. Protected: the newest tool result always; in the current turn
(after the latest user message) the newest outputs within `current_turn_allowance`
tokens; before it, any of the last `keep_recent_tool_results` tool results.
Stage 2 ("summarize") cuts at the latest user message after index 1, keeps the system
prompt and everything from the cut on, and replaces the rest with one continuation note
(a user message, see `continuation`) holding the summary and the ledger (see `ledger`).
Whether to ask the model at all is one decision, made before the request, for the run
and the dry run alike: when the context with an empty summary is not smaller than what
the summary must beat, summarizing cannot help, the model is not asked, and both say so
(keeping stage 1's clearing where there was some). A giant message is cut by `giants`.

Transcript indices: a context tool message is matched to the transcript by
`tool_call_id`, in order (the context is a subsequence of the transcript), so callers
pass the transcript and nothing parallel to the messages. Without a transcript the
context is taken to be the transcript (a session never compacted before).
"""

import bisect
import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from gitsessions.services.compaction.compaction_policy import (
    GIANT_MIN_TOKENS,
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
from gitsessions.services.compaction.giants import cut_message, last_index_of
from gitsessions.services.compaction.ledger import Ledger, build_ledger
from gitsessions.values.clock import iso, now_iso
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message, pairing_errors, text_of, validate_messages
from gitsessions.values.plural import plural

Count = Callable[[Sequence[Message]], int]
Summarize = Callable[[SummaryRequest], SummaryResult]
Mode = Literal["auto", "manual"]
Outcome = Literal["compacted", "not_needed", "nothing_to_compact"]

STUB_PREFIX = "[cleared tool output:"
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

    Raises `SummarizerFailed` or `CompactionRejected` (context unchanged) and
    `InvalidMessages` for a malformed context. A result still over the limit is not an
    error: see `over_limit`.
    """
    validate_messages(list(messages), "context", check_pairing=False)
    work = copy.deepcopy(list(messages))
    paired = not pairing_errors(work)
    record = work if transcript is None else list(transcript)
    before = count(work)
    base = _Base(before, mode, policy.max_context_tokens, dry_run)

    start = transcript_start if transcript is not None else 0
    cleared_msgs, clearing, unmatched, giants = _clear(work, record, start, policy, count, before)
    after_clear = count(cleared_msgs) if clearing else before
    notes: list[str] = []
    if unmatched:
        notes.append(f"kept {unmatched} tool outputs not found in the transcript")
    if clearing:
        what = f"{len(clearing) - giants} tool outputs"
        if giants:
            what = f"{giants} giant messages (cut to a head and a tail) and {what}"
        notes.append(f"cleared {what}: {before:,} -> {after_clear:,} tokens")
    stage1 = None
    if clearing:
        stage1 = base.result(cleared_msgs, after_clear, ("clear",), [i for _, i in clearing])
    boundaries = [i for i, m in enumerate(work) if i > 1 and m["role"] == "user"]

    summarizing = not clear_only and (mode == "manual" or after_clear > policy.target_tokens)
    if summarizing and not boundaries:
        notes.append("cannot summarize: no user message after the first one to cut at")
        summarizing = False
    if not summarizing and stage1 is not None:
        return _guarded(stage1.but(notes=tuple(notes)), paired, work if dry_run else None)
    if not summarizing:
        if (boundaries and not clear_only) or _candidates(work, record, start, policy, count)[0]:
            notes.append(f"already at or under the target ({before:,} tokens); nothing changed")
            return base.result(work, before, (), (), notes, outcome="not_needed")
        notes.append("nothing to compact: no older turns and no clearable tool output")
        return base.result(work, before, (), (), notes, outcome="nothing_to_compact")

    cut = boundaries[-1]
    older = work[1:cut]  # unstubbed: they are summarized away, so the summarizer sees all
    if all(is_note(m) for m in older):  # only the last note: nothing new to summarize
        notes.append("nothing new to summarize since the last compaction")
        if stage1 is not None:
            return _guarded(stage1.but(notes=tuple(notes)), paired, work if dry_run else None)
        return base.result(work, before, (), (), notes, outcome="nothing_to_compact")
    fixed = count([{"role": "user", "content": ""}])
    if ledger is None:
        ledger = build_ledger(record, plan, pins)
    ledger_text = ledger.render(
        policy.ledger_tokens, lambda text: count([{"role": "user", "content": text}]) - fixed
    )
    kept_clear = [index for position, index in clearing if position >= cut]
    stages = ("clear", "summarize") if kept_clear else ("summarize",)
    budget = policy.max_context_tokens - policy.summary_max_tokens
    request = summary_request(
        older, count=count, max_tokens=policy.summary_max_tokens, budget=budget, focus=focus
    )
    notes.extend(request.notes)
    # One decision for the run and the dry run: the context with an empty summary. When
    # even that is not smaller than what the summary must beat (the input; auto mode: the
    # cleared context), summarizing cannot help and no model is asked.
    floor = count([cleared_msgs[0], make_note("", ledger_text), *cleared_msgs[cut:]])
    beat = after_clear if mode == "auto" else before
    if dry_run:
        notes.append(
            f"would summarize {plural(len(older), 'message')} before message {cut} "
            f"({count(older):,} tokens); after: {floor:,} tokens plus the summary (at most "
            f"{policy.summary_max_tokens:,})"
        )
    if floor >= beat:
        notes.append(
            f"summarizing cannot make the context smaller ({floor:,} tokens without any "
            f"summary, {beat:,} now); the model is not asked"
        )
        if stage1 is not None and (mode == "manual" or not stage1.over_limit):
            kept = stage1.but(notes=tuple(notes))
            return _guarded(kept, paired, work if dry_run else None)
        if mode == "auto":
            raise CompactionRejected(f"compaction rejected: {notes[-1]}{UNCHANGED}")
        return base.result(work, before, (), (), notes, outcome="not_needed")
    if dry_run:  # what the run does: summarize, keep the result only if it is smaller
        estimate = floor + policy.summary_max_tokens
        if estimate >= beat:
            notes.append(
                f"the run keeps the summary only if it is under {beat - floor:,} tokens; "
                "a longer one is refused and nothing changes"
            )
        return base.result(
            work, estimate, stages, kept_clear, notes, summarized=len(older), after_min=floor
        )
    try:
        summary = _summarize(request, summarize)
        compacted = [cleared_msgs[0], make_note(summary.text, ledger_text), *cleared_msgs[cut:]]
        after = count(compacted)
        if after > policy.target_tokens:  # the kept turn itself is big: clear inside it too
            compacted, more, _, _ = _clear(compacted, record, start, policy, count, after)
            after = count(compacted) if more else after
            kept_clear = sorted([*kept_clear, *(index for _, index in more)])
            stages = ("clear", "summarize") if kept_clear else stages
        if mode == "auto" and after >= after_clear:  # manual: compared with the input below
            raise CompactionRejected(
                f"compaction rejected: the summarized context is not smaller "
                f"({after} >= {after_clear} tokens){UNCHANGED}"
            )
    except (SummarizerFailed, CompactionRejected) as error:
        if mode == "auto" and stage1 is not None and not stage1.over_limit:
            reason = str(error).removesuffix(UNCHANGED)
            kept = stage1.but(notes=(*notes, f"kept the cleared tool outputs only: {reason}"))
            return _guarded(kept, paired, None)
        raise
    notes.append(f"summarized {plural(len(older), 'message')}: {after_clear:,} -> {after:,} tokens")
    final = base.result(
        compacted,
        after,
        stages,
        kept_clear,
        notes,
        summarized=len(older),
        summary=summary.text.strip(),
        summarizer_model=summary.model,
        usage=summary.usage(),
    )
    return _guarded(final, paired, None)


def stub_for(message: Mapping[str, Any], index: int, tokens: int) -> str:
    """The text that replaces a cleared tool output: its size and how to read it back."""
    chars = len(text_of(message))
    return (
        f"{STUB_PREFIX} {chars} chars, ~{tokens} tokens. Read it back with "
        f"read_session(start={index}, end={index + 1}): transcript message {index}.]"
    )


def is_stub(message: Mapping[str, Any]) -> bool:
    """Whether a tool message was already cleared."""
    return message.get("role") == "tool" and text_of(message).startswith(STUB_PREFIX)


def transcript_indices(
    messages: Sequence[Mapping[str, Any]], transcript: Sequence[Mapping[str, Any]]
) -> list[int | None]:
    """For each message, the transcript index of the same tool result (None for other
    messages or when not found), matching tool_call_id from the end backwards: the
    context's tail is the transcript's tail, and servers that reuse ids (`call_0` every
    turn) would otherwise match an earlier turn's result."""
    where: dict[Any, list[int]] = {}
    for j, message in enumerate(transcript):
        if message.get("role") == "tool":
            where.setdefault(message.get("tool_call_id"), []).append(j)
    result: list[int | None] = [None] * len(messages)
    position = len(transcript)
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if message.get("role") != "tool":
            continue
        found = where.get(message.get("tool_call_id"), [])
        k = bisect.bisect_left(found, position) - 1
        if k >= 0:
            result[at] = found[k]
            position = found[k]
    return result


# -- stage 1 -------------------------------------------------------------------------


def _located(
    messages: Sequence[Message], record: Sequence[Message], start: int
) -> list[int | None]:
    """`transcript_indices` of `messages` in `record`, the transcript from `start` on."""
    return [None if i is None else i + start for i in transcript_indices(messages, record)]


def _candidates(
    messages: list[Message], record: Sequence[Message], start: int, policy: Policy, count: Count
) -> tuple[list[tuple[int, int, str, int]], int]:
    """Clearable (position, transcript index, stub, tokens saved), oldest first, and how many
    unprotected outputs were kept because the transcript does not hold them."""
    tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if not tools:
        return [], 0
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    latest_user = users[-1] if users else 0
    protected = {tools[-1]}
    fixed = count([])  # per-request overhead (tool schemas, priming): not the message's
    used = 0
    for position in reversed([i for i in tools if i > latest_user]):
        used += count([messages[position]]) - fixed
        if used > policy.current_turn_allowance:
            break
        protected.add(position)
    keep = policy.keep_recent_tool_results
    protected |= {i for i in (tools[-keep:] if keep else []) if i < latest_user}
    indices = _located(messages, record, start)
    found: list[tuple[int, int, str, int]] = []
    unmatched = 0
    for position in tools:
        message = messages[position]
        if position in protected or is_stub(message):
            continue
        index = indices[position]
        if index is None:
            unmatched += 1
            continue
        tokens = count([message]) - fixed
        stub = stub_for(message, index, tokens)
        saved = tokens + fixed - count([{**message, "content": stub}])
        if saved > 0:
            found.append((position, index, stub, saved))
    return found, unmatched


def _clear(
    messages: list[Message],
    record: Sequence[Message],
    start: int,
    policy: Policy,
    count: Count,
    total: int,
) -> tuple[list[Message], list[tuple[int, int]], int, int]:
    """Stage 1: a copy with giant messages cut and old outputs stubbed until at or under
    the target, the (position, transcript index) of each cut or cleared message, the
    unmatched count and how many giants were cut."""
    if total <= policy.target_tokens:
        return messages, [], 0, 0
    result, cleared = _cut_giants(messages, record, start, policy, count)
    giants = len(cleared)
    estimate = count(result) if cleared else total
    if estimate <= policy.target_tokens:
        return result, cleared, 0, giants
    found, unmatched = _candidates(result, record, start, policy, count)
    cut = {position for position, _ in cleared}
    for position, index, stub, saved in found:
        result[position] = {**result[position], "content": stub}
        if position not in cut:  # a cut giant output stubbed after all: listed once
            cleared.append((position, index))
        estimate -= saved
        if estimate <= policy.target_tokens:
            estimate = count(result)  # the per-message savings are an estimate: verify
            if estimate <= policy.target_tokens:
                break
    return result, sorted(cleared), unmatched, giants


def _cut_giants(
    messages: list[Message], record: Sequence[Message], start: int, policy: Policy, count: Count
) -> tuple[list[Message], list[tuple[int, int]]]:
    """A copy with each giant message found in the transcript cut to a head and a tail,
    and the (position, transcript index) of each."""
    fixed = count([])
    limit = max(GIANT_MIN_TOKENS, policy.giant_share * policy.max_context_tokens)
    giants = [
        p
        for p, m in enumerate(messages)
        if p and m.get("role") != "system" and count([m]) - fixed > limit
    ]
    if not giants:
        return list(messages), []
    tools = _located(messages, record, start)
    result = list(messages)
    cut: list[tuple[int, int]] = []
    bound = start + len(record)
    for position in reversed(giants):
        message = messages[position]
        index = tools[position] if message.get("role") == "tool" else None
        if index is None:
            found = last_index_of(record, message, bound - start)
            index = None if found is None else found + start
        if index is None:
            continue  # not in the transcript: cutting it would lose its text
        bound = index
        result[position] = cut_message(message, index, policy.giant_keep_chars)
        cut.append((position, index))
    return result, sorted(cut)


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
