"""The store's gate for secrets: what a commit writes is redacted first.

Invariants:
- With redaction on, no message, header field, pin, plan item, compaction record or
  commit subject reaches the repository holding a value a rule in `values.secrets`
  matches; it holds `[REDACTED:<rule>]` instead.
- A `Finding` says where (file, message index), which rule and how many times, never
  the value, so findings can go to the audit log.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitsessions.values.secrets import redact, redact_value


@dataclass(frozen=True)
class Finding:
    """Secrets of one rule found in one place (a docstring also spares `dataclass`
    computing one from the signature at import)."""

    where: str  # transcript, context, session.json, pins, plan, compactions, commit message
    index: int | None  # the message's index in the transcript or the context
    rule: str
    count: int

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"where": self.where, "rule": self.rule, "count": self.count}
        if self.index is not None:
            found["index"] = self.index
        return found


OnRedacted = Callable[[str, list[Finding]], None]  # (session id, findings), when any


def redact_messages(
    messages: list[dict[str, Any]], where: str, first_index: int
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Each message redacted; findings carry the message's index (from `first_index`)."""
    findings: list[Finding] = []
    out: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        new, counts = redact_value(message)
        out.append(new)
        findings += [Finding(where, first_index + n, r, c) for r, c in sorted(counts.items())]
    return out, findings


def redact_named(value: Any, where: str) -> tuple[Any, list[Finding]]:
    new, counts = redact_value(value)
    return new, [Finding(where, None, r, c) for r, c in sorted(counts.items())]


def redact_subject(subject: str) -> tuple[str, list[Finding]]:
    new, counts = redact(subject)
    return new, [Finding("commit message", None, r, c) for r, c in sorted(counts.items())]
