"""Canonical JSON: one byte encoding per value.

Sorted keys, UTF-8 (no ASCII escaping), two-space indent, a final newline. Identical
content gives identical bytes, so identical git blobs, and `git diff` stays readable.
JSONL lines use the compact form (sorted keys, no spaces) so one message is one line.
Values that have no such encoding (NaN, a lone surrogate from a non-UTF-8 argument) are
refused with `InvalidInput` before anything is written.
"""

import json
from typing import Any

from gitsessions.values.errors import InvalidInput


def _encode(value: Any, **options: Any) -> bytes:
    try:
        return json.dumps(
            value, sort_keys=True, ensure_ascii=False, allow_nan=False, **options
        ).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("text is not valid UTF-8 (it holds a lone surrogate)") from None
    except ValueError as error:  # NaN or Infinity
        raise InvalidInput(f"not storable as JSON: {error}") from None


def dumps(value: Any) -> bytes:
    """Encode `value` as canonical, human-diffable JSON bytes."""
    return _encode(value, indent=2) + b"\n"


def dumps_line(value: Any) -> bytes:
    """Encode `value` as one canonical JSON line (no newline)."""
    return _encode(value, separators=(",", ":"))


def scrub(value: Any) -> Any:
    """`value` with every string made encodable: a lone surrogate becomes U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value
