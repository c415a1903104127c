"""The audit log: `<home>/audit.jsonl`, one JSON object per line, append-only.

Invariants:
- Lines are only ever appended (O_APPEND, one write per line), never rewritten or
  removed; `delete` leaves its own line here. The file is private to the user (0600).
- A line holds no text of any session (no title, prompt, path, argument or output), so
  it may outlive a deleted session: only ids, operation and tool names, outcomes, rule
  and error-class names, numbers and digests. Any other string is written as its
  SHA-256 digest (`sha256:<hex>`), whatever a caller passes.
"""

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from gitsessions.values.canonical import dumps_line
from gitsessions.values.clock import now_iso

TOKEN = re.compile(r"[A-Za-z0-9_.:-]{0,80}")  # ids, names, digests: never free text


def _safe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_safe(item) for item in value]
    if isinstance(value, dict):  # e.g. redaction findings: {where, index, rule, count}
        return {str(_safe(key)): _safe(item) for key, item in value.items()}
    text = str(value)
    if TOKEN.fullmatch(text):
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def audit(home: Path, operation: str, session: str | None, outcome: str, **extra: Any) -> None:
    """Append one line: time, operation, session id, outcome and any extra fields."""
    record = {
        "time": now_iso(),
        "operation": _safe(operation),
        "session": _safe(session),
        "outcome": _safe(outcome),
        **{key: _safe(value) for key, value in extra.items()},
    }
    fd = os.open(home / "audit.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, dumps_line(record) + b"\n")
    finally:
        os.close(fd)
