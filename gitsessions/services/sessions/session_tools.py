"""read_session and search_sessions, written once for the agent's tools
(agent/session_tools.py) and the MCP server.

Invariants:
- They read the store, never a working context, so what compaction removed stays
  readable by transcript index; only sessions in the caller's reach (agent/scope.py),
  one out of reach reading as if absent (`resolve_in`); a transcript read a chunk at a
  time.
- `read_text` pages: at most READ_LIMIT messages fitting the output limit whole (only a
  single longer message cut), ending with the next `start` or "no more", so following the
  pages shows every message once; `search_text` shows SEARCH_LIMIT hits and says so.
"""

import json
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from gitsessions.services.tools import ToolError
from gitsessions.store.reader import Head, SessionReader
from gitsessions.values.messages import text_of
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.services.sessions.search import Hit
    from gitsessions.store.sessions import SessionStore

READ_LIMIT = 40  # messages per read_session call
SEARCH_LIMIT = 20  # hits per search_sessions call
PAGE_ROOM = 400  # characters of the output limit kept for a page's header and last line
CHUNK = 256  # transcript messages read at a time

OUT_OF_REACH = (
    "no session {text!r} among this workspace's sessions (the session tools reach only "
    "sessions of this workspace and their forks unless the user starts gitsessions with "
    "--all-sessions)"
)


def resolve_in(
    store: "SessionReader", allowed: set[str] | None, text: str, out_of_reach: str = OUT_OF_REACH
) -> str:
    """The full id `text` (an id or a prefix of at least 4 characters) names among
    `allowed` (None: every session, as the store resolves it). Whatever `allowed` does not
    hold, an unknown id or another project's id or prefix, gets the same answer,
    `out_of_reach` (formatted with `text`), so ids out of reach cannot be told from ids
    that do not exist; an ambiguous prefix is said only among ids within reach."""
    if allowed is None:
        return store.resolve(text)
    prefix = text.strip().lower()
    matches = sorted(sid for sid in allowed if sid.startswith(prefix)) if prefix else []
    if len(prefix) < 4 or len(matches) != 1 or not store.exists(matches[0]):
        if len(matches) > 1 and len(prefix) >= 4:
            raise ToolError(
                f"{text!r} matches {plural(len(matches), 'session')}; send more characters"
            )
        raise ToolError(out_of_reach.format(text=text))
    return matches[0]


def messages_in(
    store: "SessionReader", head: "Head", start: int, end: int, query: str = ""
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, message) of the transcript in [start, end), read a chunk at a time; with
    `query`, only the messages whose JSON holds it (case-insensitive)."""
    query = query.lower()
    position = start
    while position < end:
        chunk = store.transcript(head, position, min(end, position + CHUNK))
        for offset, message in enumerate(chunk):
            if not query or query in json.dumps(message, ensure_ascii=False).lower():
                yield position + offset, message
        position += len(chunk) or 1


def search(
    store: "SessionStore", query: str, limit: int, allowed: Collection[str] | None
) -> list["Hit"]:
    """The hits for `query` among `allowed` (None: every session), unarchived ones only."""
    from gitsessions.services.sessions.search import SearchIndex  # sqlite: when asked

    if not query.strip():
        raise ToolError("an empty query matches nothing: send some words")
    return SearchIndex(store).search(query, include_archived=False, limit=limit, sessions=allowed)


def _render(index: int, message: dict[str, Any]) -> str:
    head = f"[{index}] {message.get('role')}"
    if message.get("role") == "tool":
        head += f" (result of {message.get('tool_call_id')})"
    parts = [head]
    if text_of(message):
        parts.append(text_of(message))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            f"-> {function.get('name')}({function.get('arguments', '')}) id={call.get('id')}"
        )
    return "\n".join(parts)


def read_text(
    store: "SessionReader", head: "Head", start: int, end: int | None, query: str, room: int
) -> str:
    """A page of `head`'s transcript in [start, end) as text for a model, within `room`
    characters, ending with where the next page starts (or that there is none)."""
    total = head.counts.get("messages", 0)
    end = total if end is None else min(end, total)
    if start >= total:
        raise ToolError(
            f"start {start} is past the end: the transcript has {plural(total, 'message')}"
        )
    picked: list[str] = []
    following: int | None = None  # the index the next page starts at, if any
    budget = room - PAGE_ROOM  # a page is never cut in the middle
    size = 0
    for index, message in messages_in(store, head, start, end, query):
        rendered = _render(index, message)
        size += len(rendered) + 2
        if len(picked) == READ_LIMIT or (picked and size > budget):
            following = index
            break
        picked.append(rendered)
    header = f"session {head.id} transcript: {plural(total, 'message')}"
    what = "matches" if query else "messages"
    if not picked:
        return f"{header}; none matched in [{start}, {end})"
    if following is None:
        tail = f"[no more {what} in [{start}, {end})]"
    else:
        tail = (
            f"[more {what}: call read_session again with start={following} and the same "
            "session, end and query]"
        )
    return header + "\n\n" + "\n\n".join(picked) + "\n\n" + tail


def search_text(store: "SessionStore", query: str, allowed: Collection[str] | None) -> str:
    """At most SEARCH_LIMIT hits as text for a model, saying when there are more."""
    hits = search(store, query, SEARCH_LIMIT + 1, allowed)
    if not hits:
        return "no matches"
    lines = [
        f"{h.session} ({h.title or 'untitled'}) "
        + (f"(also in {', '.join(h.holders[1:])}) " if len(h.holders) > 1 else "")
        + f"{'message ' + str(h.index) if h.index is not None else h.role}: {h.snippet}"
        for h in hits[:SEARCH_LIMIT]
    ]
    if len(hits) > SEARCH_LIMIT:
        lines.append(
            f"[more than {SEARCH_LIMIT} matches: narrow the query, or page through one "
            "session with read_session and the same query]"
        )
    return "\n".join(lines)
