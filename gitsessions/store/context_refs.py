"""The working context stored by reference to the transcript (format 2): `context.json`
lists items, `{"from": a, "to": b}` for transcript messages a..b-1 and `{"inline": k}`
for message k of `context-inline.json`, which holds only what the transcript does not
(the continuation note, cleared-output stubs, another workspace's system prompt).

Invariant: an item refers to a transcript line only when the context's message equals
that line's (as canonical JSON): writers hand plain messages, `match` finds each one's
line among the candidates (the base context's lines and this commit's, from the end),
and anything unmatched stays inline. A reference is matched, never trusted.
"""

import bisect
from collections.abc import Sequence
from typing import Any

from gitsessions.store.errors import StoreCorrupt
from gitsessions.values.canonical import dumps_line

Message = dict[str, Any]
Candidate = tuple[bytes, int | None]  # a message's canonical line, the transcript line it is


def key(message: Message) -> bytes:
    return dumps_line(message)


def match(
    context: Sequence[Message],
    candidates: Sequence[Candidate],
    keys: Sequence[bytes] | None = None,
) -> list[Candidate]:
    """Each context message's key and transcript index (None: keep it inline); `keys`:
    the messages' keys when the caller has them already."""
    by_key: dict[bytes, list[int]] = {}
    for at, (text, _ref) in enumerate(candidates):
        by_key.setdefault(text, []).append(at)
    out: list[Candidate] = []
    bound = len(candidates)  # matches go right to left through the candidates
    texts = list(keys) if keys is not None else [key(m) for m in context]
    for text in reversed(texts):
        found = by_key.get(text, [])
        k = bisect.bisect_left(found, bound) - 1
        if k >= 0:
            bound = found[k]
            out.append((text, candidates[bound][1]))
        else:
            out.append((text, None))
    out.reverse()
    return out


def encode(
    context: Sequence[Message], refs: Sequence[int | None]
) -> tuple[list[dict[str, int]], list[Message]]:
    """The items of context.json and the messages of context-inline.json."""
    items: list[dict[str, int]] = []
    inline: list[Message] = []
    for message, ref in zip(context, refs, strict=True):
        if ref is None:
            items.append({"inline": len(inline)})
            inline.append(message)
        elif items and items[-1].get("to") == ref:
            items[-1]["to"] = ref + 1
        else:
            items.append({"from": ref, "to": ref + 1})
    return items, inline


def references(items: Any, inline_count: int, messages: int) -> list[int | None]:
    """Each context message's transcript index (None: inline, in order), checked."""
    if not isinstance(items, list):
        raise StoreCorrupt("context.json: the context is not a list")
    refs: list[int | None] = []
    used = 0
    for item in items:
        if isinstance(item, dict) and set(item) == {"inline"} and item["inline"] == used:
            refs.append(None)
            used += 1
        elif (
            isinstance(item, dict)
            and set(item) == {"from", "to"}
            and all(type(item[k]) is int for k in ("from", "to"))
            and 0 <= item["from"] < item["to"] <= messages
        ):
            refs.extend(range(item["from"], item["to"]))
        else:
            raise StoreCorrupt(f"context.json: bad item {str(item)[:60]}")
    if used != inline_count:
        raise StoreCorrupt("context.json and context-inline.json disagree")
    return refs
