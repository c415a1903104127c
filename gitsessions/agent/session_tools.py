"""The tools that work on sessions rather than files: update_plan, read_session and
search_sessions. They read the store (never the working context), so whatever
compaction removed from the context stays recoverable by transcript index. They reach
only the sessions `scope` allows (this workspace's, unless the user passed
`--all-sessions`); a session out of reach reads as if it did not exist.

read_session pages: a page holds at most READ_LIMIT messages and fits the registry's output
limit whole (only a single message longer than the limit is cut), and it ends with either
the `start` of the next page or a line saying there is no more, so following the pages
shows every selected message exactly once. search_sessions shows at most SEARCH_LIMIT
hits and says so when there are more."""

import json
from typing import TYPE_CHECKING, Any

from gitsessions.agent.scope import Scope
from gitsessions.agent.session import AgentSession
from gitsessions.services.tools import SESSION_TOOLS, ToolError, ToolRegistry, ToolResult
from gitsessions.values.messages import text_of
from gitsessions.values.plural import plural

if TYPE_CHECKING:
    from gitsessions.store.sessions import SessionStore

READ_LIMIT = 40  # messages per read_session call
SEARCH_LIMIT = 20  # hits per search_sessions call
PAGE_ROOM = 400  # characters of the output limit kept for a page's header and last line


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


OUT_OF_REACH = (
    "no session {text!r} among this workspace's sessions (the session tools reach only "
    "sessions of this workspace and their forks unless the user starts gitsessions with "
    "--all-sessions)"
)


def resolve_in(
    store: "SessionStore", allowed: set[str] | None, text: str, out_of_reach: str = OUT_OF_REACH
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


def register_session_tools(registry: ToolRegistry, session: AgentSession, scope: Scope) -> None:
    store = session.store

    def resolve(text: str) -> str:
        return resolve_in(store, scope.sessions(store, session.id), text)

    def update_plan(args: dict[str, Any]) -> ToolResult:
        items = [{"step": item["step"], "status": item["status"]} for item in args["items"]]
        session.set_plan(items)
        lines = [f"[{item['status']}] {item['step']}" for item in items] or ["(empty plan)"]
        return ToolResult("plan saved:\n" + "\n".join(lines))

    def read_session(args: dict[str, Any]) -> ToolResult:
        if args["session"]:
            head = store.head(resolve(args["session"]))
            if head.id == session.id:
                head = session.head
        else:
            head = session.head
        total = head.counts.get("messages", 0)
        start = args["start"] or 0
        end = total if args["end"] is None else min(args["end"], total)
        if start >= total:
            raise ToolError(
                f"start {start} is past the end: the transcript has {plural(total, 'message')}"
            )
        query = (args["query"] or "").lower()
        picked: list[str] = []
        following: int | None = None  # the index the next page starts at, if any
        budget = registry.output_limit - PAGE_ROOM  # a page is never cut in the middle
        size = 0
        position = start
        while position < end and following is None:
            chunk = store.transcript(head, position, min(end, position + 256))
            for offset, message in enumerate(chunk):
                if query and query not in json.dumps(message, ensure_ascii=False).lower():
                    continue
                rendered = _render(position + offset, message)
                size += len(rendered) + 2
                if len(picked) == READ_LIMIT or (picked and size > budget):
                    following = position + offset
                    break
                picked.append(rendered)
            position += len(chunk) or 1
        header = f"session {head.id} transcript: {plural(total, 'message')}"
        what = "matches" if query else "messages"
        if not picked:
            return ToolResult(f"{header}; none matched in [{start}, {end})")
        if following is None:
            tail = f"[no more {what} in [{start}, {end})]"
        else:
            tail = (
                f"[more {what}: call read_session again with start={following} and the same "
                "session, end and query]"
            )
        return ToolResult(header + "\n\n" + "\n\n".join(picked) + "\n\n" + tail)

    def search_sessions(args: dict[str, Any]) -> ToolResult:
        from gitsessions.services.sessions.search import SearchIndex  # sqlite: when the model asks

        hits = SearchIndex(store).search(
            args["query"],
            include_archived=False,
            limit=SEARCH_LIMIT + 1,
            sessions=scope.sessions(store, session.id),
        )
        if not hits:
            return ToolResult("no matches")
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
        return ToolResult("\n".join(lines))

    registry.register("update_plan", SESSION_TOOLS["update_plan"], update_plan)
    registry.register("read_session", SESSION_TOOLS["read_session"], read_session)
    registry.register("search_sessions", SESSION_TOOLS["search_sessions"], search_sessions)
