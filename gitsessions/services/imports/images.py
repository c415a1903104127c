"""An image in a source's tool result, kept in the record of the tool message.

Invariants:
- An image's base64 data is kept as the source wrote it, in the tool message's record
  (`source.images`, a list of `{"media_type", "data"}`), never in the message: the
  message says what it was and where it is kept (`[image: image/png, 12 KB, kept in
  this record's source.images[0]]`), so what is resumed sends the reference, not the
  bytes. The redaction gate applies to it as to all of a record's `source`.
- Only a PNG, JPEG, GIF or WebP image (`MEDIA_TYPES`) of valid base64 is kept, and at
  most `MAX_KEPT` characters of base64 in one record (a transcript chunk of 256 records
  stays far below the store's 64 MiB object limit); any other image is named in the
  message with why it was not kept.
"""

import base64
import binascii
from typing import Any

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_KEPT = 256 * 1024  # base64 characters of images kept in one record, at most


def kept(block: dict[str, Any], images: list[dict[str, str]] | None) -> str:
    """The text a tool result's image `block` (Anthropic's `{"type": "image", "source":
    {"type": "base64", "media_type", "data"}}`) becomes; the image appended to `images`
    (the record's `source.images`) when it is kept (never, when `images` is None: a
    message that keeps none)."""
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    media = source.get("media_type")
    shown = str(media)[:60] if isinstance(media, str) else "unknown type"
    data = source.get("data")
    if source.get("type") != "base64" or not isinstance(data, str):
        return f"[image: {shown}, not kept: no image data in the source]"
    size = _size(len(data) * 3 // 4)
    if images is None:
        return f"[image: {shown}, {size}, not kept]"
    if media not in MEDIA_TYPES:
        return f"[image: {shown}, {size}, not kept: not a PNG, JPEG, GIF or WebP image]"
    if len(data) + sum(len(i["data"]) for i in images) > MAX_KEPT:
        return f"[image: {shown}, {size}, not kept: over the {MAX_KEPT // 1024} KiB a record keeps]"
    try:
        size = _size(len(base64.b64decode(data, validate=True)))
    except (binascii.Error, ValueError):
        return f"[image: {shown}, not kept: its data is not base64]"
    images.append({"media_type": media, "data": data})
    return f"[image: {shown}, {size}, kept in this record's source.images[{len(images) - 1}]]"


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MB"
    return f"{max(1, round(count / 1024))} KB"
