"""The context budget of one agent: before every request, whether the context fits
`max_context_tokens`, compacting it (through the agent) when over the threshold.

Invariants:
- A bound (kept counts plus the UTF-8 bytes of what was never counted) only ever decides
  "far under the threshold: count nothing", so no tokenizer loads then; past it the count
  is exact (kept counts and the tokenizer's for the rest, as a fresh count would give:
  `test_kept_counts_decide_compaction_exactly_as_a_fresh_count`), and that count decides
  auto-compaction, the refusal, calibration and the tokens a compaction records.
- No request is sent over `max_context_tokens`: `ContextStillTooLarge` instead.
- A failed automatic compaction is tried again at the next turn, not at every step.
- After `compact --undo` the threshold is raised until the context grows anew
  (`services/compaction/hold.py`), never above the budget.
"""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.services.compaction.compaction_policy import (
    ContextStillTooLarge,
    Policy,
)
from gitsessions.services.compaction.hold import auto_threshold
from gitsessions.store.tokencounts import TokenCounts
from gitsessions.values.messages import Message
from gitsessions.values.tokens import TokenCounter

if TYPE_CHECKING:
    from gitsessions.agent.session import AgentSession
    from gitsessions.services.compaction.compaction import CompactionResult


class ContextBudget:
    def __init__(
        self, counter: TokenCounter, tools: list[dict[str, Any]], home: Path, policy: Policy
    ) -> None:
        self.counter = counter
        self.tools = tools  # sent with every request, so counted with the context
        self.policy = policy
        self._failed_turn = -1  # the turn in which auto-compaction last failed
        self._kept = TokenCounts(home, counter)  # counts earlier turns made
        self._recalled = False  # whether the context's kept counts were read back
        # run once before the first check: what the server says it holds, asked while
        # the agent was built, waited for only now (agent/server_budget.py)
        self.first: Callable[[], object] | None = None

    def estimate(self, context: list[Message]) -> int:
        return self.counter.estimate(context, self.tools)

    def ensure(
        self, session: "AgentSession", compact: Callable[[str], "CompactionResult | None"]
    ) -> tuple[int | None, bool]:
        """Compact automatically when over the threshold. Returns the raw (uncalibrated)
        token count of the context about to be sent (None when it was not counted: under
        the threshold by a bound that needs no tokenizer, which then need not be loaded
        at all), and whether it compacted. The bound adds the counts kept by earlier
        turns (`tokens.sqlite`) and the bytes of what was never counted; only when it
        says the context may be near the threshold is the context counted exactly (the
        tokenizer encoding only messages without a kept count), and what it counted is
        kept. After a failed attempt, auto-compaction waits for the next turn instead
        of paying for the same failing summary at every step."""
        if self.first is not None:
            first, self.first = self.first, None
            first()
        policy = self.policy
        context = session.context
        if not self.counter.loaded:
            bound = self.counter.bound(context, self.tools, recall=self._kept.lookup)
            if bound <= policy.trim_threshold * policy.max_context_tokens:
                return None, False
        elif not self._recalled:  # loaded ahead (chat): what is kept need not be encoded
            self._kept.recall(self.counter.keys(context, self.tools))
        self._recalled = True
        try:
            return self._exact(session, compact)
        finally:
            self._kept.keep()

    def _exact(
        self, session: "AgentSession", compact: Callable[[str], "CompactionResult | None"]
    ) -> tuple[int, bool]:
        """The exact count of the context (compacting it when over the threshold)."""
        policy = self.policy
        raw = self.counter.count_context(session.context, self.tools)
        tokens = self.counter.scaled(raw)
        compacted = False
        threshold = auto_threshold(policy, session.head.header)  # raised after an undo
        if tokens > threshold and self._failed_turn != session.turn:
            share = 100 * tokens // policy.max_context_tokens
            reason = f"context at {share}% of {policy.max_context_tokens:,} tokens: compacting"
            result = compact(reason)
            if result is None:
                self._failed_turn = session.turn
            elif result.changed:
                compacted = True
                raw = self.counter.count_context(session.context, self.tools)
                tokens = result.after_tokens
        if tokens > policy.max_context_tokens:
            raise ContextStillTooLarge(
                f"the context is {tokens} tokens, over the budget of "
                f"{policy.max_context_tokens} (--max-context-tokens, or the context the model "
                "server holds when smaller), even after compaction; the session is saved. "
                f"Try `gitsessions compact {session.id[:8]} --focus TEXT`, a fork, or a "
                "larger --max-context-tokens"
            )
        return raw, compacted
