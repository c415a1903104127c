"""When compaction starts and how far it goes (`Policy`, `should_compact`), and the
errors it raises: all the turn loop needs before a context is over its threshold.

Kept apart from the engine (`services/compaction/compaction.py`, which names all of it too), so
a turn that never compacts does not import the engine, its ledger and its notes.
"""

from dataclasses import dataclass

from gitsessions.values.errors import GitsessionsError

GIANT_MIN_TOKENS = 2000  # a message is giant over this and giant_share of the budget


class CompactionError(GitsessionsError):
    """Compaction did not happen; the context is unchanged."""


class InvalidPolicy(CompactionError):
    """A compaction policy value is out of range."""


class SummarizerFailed(CompactionError):
    """The summarizer raised; the context is unchanged."""


class CompactionRejected(CompactionError):
    """The summary or the compacted context failed a guard; the context is unchanged."""


class ContextStillTooLarge(CompactionError):
    """Even after compaction the context is over max_context_tokens."""


@dataclass(frozen=True)
class Policy:
    """When to compact and how far. `target` is a fraction of max_context_tokens
    (None: trim_threshold); compaction aims to end at or under it. The ledger of a
    continuation note gets `ledger_share` of max_context_tokens, its quotes of the user's
    own earlier messages `user_words_share`; a message over
    `giant_share` of it (and GIANT_MIN_TOKENS) is cut in stage 1."""

    max_context_tokens: int = 24000
    trim_threshold: float = 0.8
    keep_recent_tool_results: int = 3
    current_turn_allowance: int = 2000
    summary_max_tokens: int = 1024
    target: float | None = None
    ledger_share: float = 0.1
    user_words_share: float = 0.1
    giant_share: float = 0.25

    def __post_init__(self) -> None:
        if self.max_context_tokens <= 0:
            raise InvalidPolicy("max_context_tokens must be a positive number of tokens")
        for name in ("trim_threshold", "target", "ledger_share", "user_words_share", "giant_share"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise InvalidPolicy(f"{name} must be a fraction in (0, 1], got {value}")
        for name in ("keep_recent_tool_results", "current_turn_allowance"):
            if getattr(self, name) < 0:
                raise InvalidPolicy(f"{name} must be 0 or more")
        if self.summary_max_tokens <= 0:
            raise InvalidPolicy("summary_max_tokens must be positive")

    @property
    def target_tokens(self) -> float:
        """The token count compaction aims to end at or under."""
        ratio = self.trim_threshold if self.target is None else self.target
        return ratio * self.max_context_tokens

    @property
    def giant_keep_chars(self) -> int:
        """How many characters of a giant text stay (a head and a tail)."""
        return max(1000, self.max_context_tokens // 8)

    @property
    def ledger_tokens(self) -> int:
        """The most tokens the ledger of a continuation note may take."""
        return int(self.ledger_share * self.max_context_tokens)

    @property
    def user_words_tokens(self) -> int:
        """The most tokens a continuation note's quotes of the user's words may take."""
        return int(self.user_words_share * self.max_context_tokens)


def should_compact(tokens: int, policy: Policy) -> bool:
    """Trigger when `tokens` is over trim_threshold x max_context_tokens (not at it)."""
    return tokens > policy.trim_threshold * policy.max_context_tokens
