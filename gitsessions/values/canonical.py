"""Canonical JSON: one byte encoding per value.

Sorted keys, UTF-8 (no ASCII escaping), two-space indent, a final newline. Identical
content gives identical bytes, so identical git blobs, and `git diff` stays readable.
JSONL lines use the compact form (sorted keys, no spaces) so one message is one line.
"""

import json
from typing import Any


def dumps(value: Any) -> bytes:
    """Encode `value` as canonical, human-diffable JSON bytes."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False)
    return (text + "\n").encode("utf-8")


def dumps_line(value: Any) -> bytes:
    """Encode `value` as one canonical JSON line (no newline)."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return text.encode("utf-8")
