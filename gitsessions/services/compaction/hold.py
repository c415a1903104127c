"""The hold an undone compaction puts on auto-compaction (`compaction_undone` in the
header, written by `undoing`): kept apart so the turn loop reads it without the engine.

After an undo that left the context at `tokens`, the compaction undone having left
`after_tokens`, auto-compaction runs once the context is over
`tokens + (threshold - after_tokens)`: it has grown since the undo by as much as would
have taken the compacted context past the threshold again. Never above the budget
(`max_context_tokens`: past it no request can be sent), never below the threshold. The
hold is over with the next compaction (the header's `counts.compactions` moves on).
"""

from collections.abc import Mapping
from typing import Any

from gitsessions.services.compaction.compaction_policy import Policy

HOLD = "compaction_undone"


def auto_threshold(policy: Policy, header: Mapping[str, Any]) -> float:
    """The token count over which auto-compaction runs for a session with `header`:
    the policy's threshold, raised after an undo (see the module's invariants)."""
    base = policy.trim_threshold * policy.max_context_tokens
    hold = header.get(HOLD)
    if not isinstance(hold, dict):
        return base
    if hold.get("compactions") != (header.get("counts") or {}).get("compactions"):
        return base  # a compaction came since: the hold is over
    tokens, left = hold.get("tokens"), hold.get("after_tokens")
    if not isinstance(tokens, int) or not isinstance(left, int):
        return base
    held = tokens + max(0.0, base - left)
    return max(base, min(float(policy.max_context_tokens), held))
