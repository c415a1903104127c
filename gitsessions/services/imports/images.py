"""An image in a source's tool result, kept as a file of the session (`store.files`).

Invariants:
- The decoded bytes are a blob of their own (`files/<sha256>.<ext>`, kept once), never in
  the message or record: the message names the file (`[image: image/png, 12 KB,
  files/...]`), so a resume sends the reference; the gate scans the message, not pixels.
- Only PNG, JPEG, GIF or WebP of valid base64, at most `MAX_BYTES` each and `MAX_RECORD`
  a result; any other image is named with why it was not kept.
"""

import base64
import binascii
from typing import Any

from gitsessions.store.files import EXTENSIONS, MAX_BYTES, MAX_RECORD, name_of

MEDIA_TYPES = tuple(EXTENSIONS)


def kept(block: dict[str, Any], files: dict[str, bytes] | None) -> str:
    """The text a tool result's image `block` (Anthropic's `{"type": "image", "source":
    {"type": "base64", "media_type", "data"}}`) becomes; the image added to `files`
    (name -> bytes, the tool message's) when it is kept (never, when `files` is None:
    a message that keeps none)."""
    given = block.get("source")
    source: dict[str, Any] = given if isinstance(given, dict) else {}
    media = source.get("media_type")
    shown = str(media)[:60] if isinstance(media, str) else "unknown type"
    data = source.get("data")
    if source.get("type") != "base64" or not isinstance(data, str):
        return f"[image: {shown}, not kept: no image data in the source]"
    size = _size(len(data) * 3 // 4)
    if files is None:
        return f"[image: {shown}, {size}, not kept]"
    if media not in MEDIA_TYPES:
        return f"[image: {shown}, {size}, not kept: not a PNG, JPEG, GIF or WebP image]"
    too_big = f"not kept: over the {MAX_BYTES // 2**20} MiB an image may hold"
    if len(data) * 3 // 4 > MAX_BYTES + 2:  # not decoded: too big whatever its padding
        return f"[image: {shown}, {size}, {too_big}]"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[image: {shown}, not kept: its data is not base64]"
    size = _size(len(raw))
    if len(raw) > MAX_BYTES:
        return f"[image: {shown}, {size}, {too_big}]"
    name = name_of(raw, media)
    if name not in files and len(raw) + sum(map(len, files.values())) > MAX_RECORD:
        limit = MAX_RECORD // 2**20
        return f"[image: {shown}, {size}, not kept: over the {limit} MiB a tool result keeps]"
    files[name] = raw
    return f"[image: {shown}, {size}, {name}]"


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MB"
    return f"{max(1, round(count / 1024))} KB"
