"""Running a compaction on a stored session and recording it as one commit.

Invariant: the store changes only when compaction succeeded and changed the context,
through the one write path (`services.sessions.writer`), with an audit line.
Then one commit replaces `context.json`, appends the record to `compactions.json` and
adds the summarizer's usage to the header's `usage`, with subject `compact: B -> A tokens` and
trailers `Event: compact`, `Tokens-Before`, `Tokens-After`, `Trigger`, `Stages`. The
transcript is never touched. Any failure leaves the session exactly as it was.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitsessions.services.compaction.clearing import Count
from gitsessions.services.compaction.compaction import (
    CompactionResult,
    Mode,
    Summarize,
    compact,
)
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.compaction.continuation import SummaryRequest, SummaryResult
from gitsessions.services.compaction.ledger import LedgerBuilder
from gitsessions.services.hooks.hooks import NO_HOOKS, Hooks
from gitsessions.services.model.model import ModelClient
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.records import add_usage

Cost = Callable[[str, int, int], float]


@dataclass(frozen=True)
class Recorded:
    result: CompactionResult
    head: Head  # the new head when a commit was made, else the head compaction started from
    committed: bool


def make_summarizer(
    client: ModelClient, model: str, spent: list[tuple[str, int, int]] | None = None
) -> Summarize:
    """A `summarize` callable that asks `model` through `client`; each call's usage is
    appended to `spent` as (model, prompt tokens, completion tokens), whatever becomes
    of the summary."""

    def summarize(request: SummaryRequest) -> SummaryResult:
        completion = client.complete(
            request.messages,
            model=model,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            summary=True,  # its own deadline: a slow local model reads the whole input
        )
        usage = completion.usage
        result = SummaryResult(
            text=completion.message.get("content") or "",
            model=completion.model or model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )
        if spent is not None:
            spent.append((result.model, result.prompt_tokens, result.completion_tokens))
        return result

    return summarize


def _ledger_from(compactions: list[Any], total: int) -> LedgerBuilder:
    """The ledger as the last compaction left it (to be fed what came since), or a new
    one when there is none (the first compaction reads the transcript whole)."""
    last = compactions[-1] if compactions else None
    state = last.get("ledger") if isinstance(last, dict) else None
    if isinstance(state, dict):
        try:
            builder = LedgerBuilder.from_state(state)
        except ValueError:
            return LedgerBuilder()
        if builder.through <= total:
            return builder
    return LedgerBuilder()


def compact_session(
    store: SessionStore,
    head: Head,
    *,
    policy: Policy,
    summarize: Summarize,
    count: Count,
    cost: Cost,
    trigger: Mode,
    clear_only: bool = False,
    dry_run: bool = False,
    focus: str | None = None,
    hooks: Hooks = NO_HOOKS,
    count_request: Count | None = None,
) -> Recorded:
    """Compact the working context of the session at `head` and commit the result; the
    pre-compact and post-compact hooks run around it (not for a dry run). `count` counts
    the context with the agent's tool schemas, `count_request` the summary request,
    which carries none (see `compact`)."""
    if dry_run:
        hooks = NO_HOOKS
    hooks.run("pre-compact", head.id, head.commit.decode(), trigger=trigger, focus=focus)
    try:
        recorded = _compact_session(
            store,
            head,
            policy,
            summarize,
            (count, count_request or count),
            cost,
            trigger,
            clear_only,
            dry_run,
            focus,
        )
    except GitsessionsError as error:
        hooks.run(
            "post-compact", head.id, None, trigger=trigger, outcome="failed", error=str(error)
        )
        raise
    result = recorded.result
    hooks.run(
        "post-compact",
        head.id,
        recorded.head.commit.decode() if recorded.committed else None,
        trigger=trigger,
        outcome=result.outcome,
        before_tokens=result.before_tokens,
        after_tokens=result.after_tokens,
        stages=list(result.stages) if recorded.committed else [],
    )
    return recorded


def _compact_session(
    store: SessionStore,
    head: Head,
    policy: Policy,
    summarize: Summarize,
    counts: tuple[Count, Count],
    cost: Cost,
    trigger: Mode,
    clear_only: bool,
    dry_run: bool,
    focus: str | None,
) -> Recorded:
    """Reads what the context and the new messages need, not the whole transcript: the
    context's own lines, the transcript from the oldest line the context refers to (its
    tool outputs and messages that may be cleared or cut), and, for the ledger, the
    messages since the last compaction (whose record carries the ledger's state)."""
    lines = store.context_lines(head)
    context = [message for message, _ref in lines]
    total = head.counts.get("messages", 0)
    compactions = store.read(head, "compactions")
    builder = _ledger_from(compactions, total)
    refs = [r for m, r in lines if r is not None and m.get("role") != "system"]
    start = min([*refs, total])
    first = min(start, builder.through)
    tail = store.transcript(head, first)
    builder.feed(tail[builder.through - first :], builder.through)
    plan, pins = store.read(head, "plan"), store.read(head, "pins")
    count, count_request = counts
    result = compact(
        context,
        policy,
        summarize,
        count,
        count_request=count_request,
        mode=trigger,
        clear_only=clear_only,
        dry_run=dry_run,
        focus=focus,
        transcript=tail[start - first :],
        transcript_start=start,
        ledger=builder.ledger(plan, pins),
        plan=plan,
        pins=pins,
    )
    if not result.changed:
        return Recorded(result, head, False)
    usage = store.read(head, "usage")
    if result.summarizer_model and result.usage:
        prompt = result.usage.get("prompt_tokens", 0)
        completion = result.usage.get("completion_tokens", 0)
        usage = add_usage(
            usage,
            result.summarizer_model,
            prompt,
            completion,
            cost(result.summarizer_model, prompt, completion),
        )
    earlier = [{k: v for k, v in c.items() if k != "ledger"} for c in compactions]
    compactions = [*earlier, {**result.record(now_iso()), "ledger": builder.state()}]
    edit = Edit(
        Change(
            header=touch(head.header), context=result.messages, compactions=compactions, usage=usage
        ),
        "compact",
        f"compact: {result.before_tokens} -> {result.after_tokens} tokens",
        {
            "Tokens-Before": result.before_tokens,
            "Tokens-After": result.after_tokens,
            "Trigger": trigger,
            "Stages": ",".join(result.stages),
        },
    )
    # built from this very head (the caller holds the lease): a moved branch is an error
    written = writer.audited(
        store, "compact", head.id, lambda: writer.commit_on(store, head, edit), trigger=trigger
    )
    return Recorded(result, written.head, written.committed)
