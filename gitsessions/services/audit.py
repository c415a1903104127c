"""The audit log: `<home>/audit.jsonl`, one JSON object per line, append-only.

Invariant: lines are only ever appended (O_APPEND, one write per line), never rewritten
or removed; `delete` leaves its own line here. The file is private to the user (0600).
"""

import os
from pathlib import Path
from typing import Any

from gitsessions.values.canonical import dumps_line
from gitsessions.values.clock import now_iso


def audit(home: Path, operation: str, session: str | None, outcome: str, **extra: Any) -> None:
    """Append one line: time, operation, session id, outcome and any extra fields."""
    record = {
        "time": now_iso(),
        "operation": operation,
        "session": session,
        "outcome": outcome,
        **extra,
    }
    fd = os.open(home / "audit.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, dumps_line(record) + b"\n")
    finally:
        os.close(fd)
