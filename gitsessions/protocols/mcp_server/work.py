"""The MCP server's tools as typed functions over the store: their parameters and answers
(TypedDicts) are what the SDK derives each input and output schema from.

Invariants:
- Scoped as the agent's session tools are (`agent.scope`, through
  services/sessions/session_tools.py): the project's sessions (by identity, any clone)
  and their forks unless `--all-sessions`; an id out of scope and one that exists
  nowhere get the same answer.
- `pin`, `rename`, `fork`, `merge_session` exist only with `--allow-writes`, through the
  CLI's services (`merge_session` merges code where `merge` would, else the server's folder).
- Every answer is bounded (`PAGE` messages, `TEXT` characters each, `LIMIT` items).
- A function returns or raises `GitsessionsError`, in the call thread, never on the loop.
"""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, NotRequired, cast

from pydantic import Field
from typing_extensions import TypedDict

from gitsessions.agent.scope import workspace_sessions
from gitsessions.protocols.mcp_server.tools import ID_LENGTH, LIMIT, PAGE, TEXT
from gitsessions.services.code import fork_merge
from gitsessions.services.code.line_origin import line_origin
from gitsessions.services.code.workspace import project_of
from gitsessions.services.compaction.history import view
from gitsessions.services.sessions import manage, revisions, session_diff
from gitsessions.services.sessions.session_tools import messages_in, resolve_in, search
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.messages import text_of
from gitsessions.values.records import label

OUT_OF_SCOPE = (
    "no session {text!r} among this project's sessions (the server reaches only this "
    "project's sessions unless it is started with --all-sessions)"
)
Rows = Callable[[bool, Path | None], list[dict[str, Any]]]

# each parameter's type, bounds and description: what the SDK derives the input schema from
SessionArg = Annotated[
    str,
    Field(
        max_length=ID_LENGTH,
        description="A session id, or a unique prefix of at least 4 characters.",
    ),
]
Revision = Annotated[str, Field(max_length=ID_LENGTH, description="A session id or revision.")]
Archived = Annotated[bool, Field(description="Also list archived sessions.")]
SessionsLimit = Annotated[
    int, Field(ge=1, le=LIMIT, description=f"Sessions to return, 1 to {LIMIT}.")
]
HitsLimit = Annotated[int, Field(ge=1, le=LIMIT, description=f"Hits to return, 1 to {LIMIT}.")]
Query = Annotated[str, Field(max_length=1000, description="Words to find (each a prefix).")]
Start = Annotated[int, Field(ge=0, description="Index of the first message, 0 or more.")]
Count = Annotated[int, Field(ge=1, le=PAGE, description=f"Messages in the page, 1 to {PAGE}.")]
File = Annotated[
    str,
    Field(max_length=4096, description="A file of the project, relative to its root or absolute."),
]
Line = Annotated[int, Field(ge=1, description="The line number (1-based).")]
Note = Annotated[str, Field(max_length=10_000, description="The note.")]
Title = Annotated[str, Field(max_length=1000, description="The new title.")]
At = Annotated[
    str | None,
    Field(max_length=ID_LENGTH, description="turn:N or a commit (default: the head)."),
]
ForkTitle = Annotated[str | None, Field(max_length=1000, description="The fork's title.")]
Number = Annotated[int, Field(ge=1, description="The compaction's number (1 is the first).")]
Into = Annotated[
    str | None,
    Field(max_length=ID_LENGTH, description="The session to merge into (default: the parent)."),
]
Side = Annotated[bool, Field(description="Merge this side (the conversation, or the code).")]
Force = Annotated[
    bool, Field(description="Snapshot workspace changes no snapshot holds first, then merge.")
]


class SessionRow(TypedDict):
    id: str
    label: str
    messages: int
    active_at: NotRequired[str | None]
    parent_id: NotRequired[str | None]
    archived: NotRequired[bool]
    workspace: NotRequired[str | None]
    made_by: NotRequired[Any]


class Listed(TypedDict):
    sessions: list[SessionRow]


class Hit(TypedDict):
    session: str
    sessions: NotRequired[list[str]]
    title: NotRequired[str]
    index: int | None
    role: str
    snippet: str
    marks: NotRequired[list[list[int]]]


class Found(TypedDict):
    hits: list[Hit]


class Message(TypedDict):
    index: int
    role: str | None
    text: str
    tool_calls: NotRequired[list[Any]]


class Page(TypedDict):
    session: str
    total: int
    messages: list[Message]
    next: int | None


class Header(TypedDict):  # and every other field of the session's header
    id: str
    head: str


class Origin(TypedDict):
    path: str
    line: int
    text: str
    session: str | None
    turn: int | None
    commit: NotRequired[str | None]
    title: NotRequired[str]
    prompt: NotRequired[str]
    show: NotRequired[str | None]


class Pinned(TypedDict):
    session: str
    pins: int


class Renamed(TypedDict):
    session: str
    title: str


class Forked(TypedDict):
    id: str
    parent_id: str | None


class MergedCode(TypedDict):
    files: list[dict[str, str]]
    conflicts: list[str]
    base: str
    theirs: str
    ours: str
    result: str | None
    saved: str | None


class Merged(TypedDict):
    fork: str
    into: str
    commit: str | None
    committed: bool
    code: MergedCode | None


def _cut(text: str) -> str:
    return (
        text if len(text) <= TEXT else text[:TEXT] + f" [... {len(text) - TEXT:,} characters cut]"
    )


def tools(
    store: SessionStore,
    env: Mapping[str, str],
    workspace: Path,
    rows: Rows,
    all_sessions: bool,
    allow_writes: bool,
) -> dict[str, Callable[..., Any]]:
    """Each offered tool, by name: a typed function, its answer a TypedDict;
    `GitsessionsError` (one line) for an expected failure. `rows` lists the sessions
    (`list` rows, the most recent first) of a workspace, or all with None."""
    project = None if all_sessions else project_of(workspace, env)  # once, not per call

    def reach() -> set[str] | None:
        if project is None:
            return None
        return workspace_sessions(Catalog(store).headers(), workspace, *project)

    def resolve(text: str) -> str:
        return resolve_in(store, reach(), text, OUT_OF_SCOPE)

    def list_sessions(include_archived: Archived = False, limit: SessionsLimit = 50) -> Listed:
        scope = None if all_sessions else workspace
        return {"sessions": [_listed(r) for r in rows(include_archived, scope)[:limit]]}

    def search_sessions(query: Query, limit: HitsLimit = 20) -> Found:
        hits = search(store, query, limit, reach())
        return {"hits": [cast(Hit, h.as_dict()) for h in hits]}

    def blame(file: File, line: Line = 1) -> Origin:
        found = line_origin(store, env, workspace / file, line, reach(), inside=workspace)
        return cast(Origin, found.as_dict())

    done: dict[str, Callable[..., Any]] = {
        "list_sessions": list_sessions,
        "search_sessions": search_sessions,
        "blame": blame,
    }
    done |= _session_tools(store, resolve)
    if allow_writes:
        done |= _write_tools(store, resolve)

        def merge_session(
            fork: SessionArg,
            into: Into = None,
            chat: Side = True,
            code: Side = True,
            force: Force = False,
        ) -> Merged:
            fork_id = resolve(fork)
            into_id = resolve(into) if into is not None else None

            def where(head: Head) -> Path:  # read under its lease, as `merge` finds it
                return fork_merge.place(store.home, head, env, workspace)

            merged = fork_merge.merge(store, env, fork_id, into_id, workspace=where, chat=chat,
                                      code=code, force=force)  # fmt: skip
            return _merged(merged)

        done["merge_session"] = merge_session
    return done


def _session_tools(
    store: SessionStore, resolve: Callable[[str], str]
) -> dict[str, Callable[..., Any]]:
    """The tools that read one session (or two); `resolve` turns a session argument
    into an id in the server's scope."""

    def read_session(session: SessionArg, start: Start = 0, count: Count = PAGE) -> Page:
        head = store.head(resolve(session))
        total = head.counts.get("messages", 0)
        end = min(total, start + count)
        page = [_shown(n, m) for n, m in messages_in(store, head, start, end)]
        following = end if end < total else None
        return {"session": head.id, "total": total, "messages": page, "next": following}

    def session_info(session: SessionArg) -> Header:
        head = store.head(resolve(session))
        header = dict(head.header)
        header.pop("system_prompt", None)
        return cast(Header, {**header, "id": head.id, "head": head.commit.decode()})

    def diff_sessions(a: Revision, b: Revision) -> dict[str, Any]:
        def side(text: str) -> Any:
            name = text.split("@", 1)[0].split("~", 1)[0]
            return revisions.resolve(store, resolve(name) + text[len(name) :])

        return session_diff.diff(store, side(a), side(b))

    def show_compaction(session: SessionArg, number: Number) -> dict[str, Any]:
        head = store.head(resolve(session))
        data = view(store, head, number)
        for key in ("summarized", "cleared"):  # bounded: the first LIMIT of each
            data[f"{key}_total"] = len(data[key])
            data[key] = data[key][:LIMIT]
        if data["summary"] is not None:
            data["summary"]["text"] = _cut(data["summary"]["text"])
        return data

    return {
        "read_session": read_session,
        "session_info": session_info,
        "diff_sessions": diff_sessions,
        "show_compaction": show_compaction,
    }


def _write_tools(
    store: SessionStore, resolve: Callable[[str], str]
) -> dict[str, Callable[..., Any]]:
    """The tools offered only with `--allow-writes`, through the CLI's services."""

    def pin(session: SessionArg, text: Note) -> Pinned:
        sid = resolve(session)
        _written, pins = manage.pin(store, sid, text)
        return {"session": sid, "pins": len(pins)}

    def rename(session: SessionArg, title: Title) -> Renamed:
        sid = resolve(session)
        manage.rename(store, sid, title)
        return {"session": sid, "title": title}

    def fork(session: SessionArg, at: At = None, title: ForkTitle = None) -> Forked:
        sid = resolve(session)
        head = manage.fork(store, sid, at=at, title=title)
        return {"id": head.id, "parent_id": head.header.get("parent_id")}

    return {"pin": pin, "rename": rename, "fork": fork}


def _merged(done: fork_merge.ForkMerge) -> Merged:
    return cast(Merged, done.as_json())


def _listed(row: Mapping[str, Any]) -> SessionRow:
    """A `list` row as list_sessions answers it."""
    fields = ("id", "messages", "active_at", "parent_id", "archived", "workspace")
    listed = {**{f: row[f] for f in fields}, "label": label(row), "made_by": row.get("made_by")}
    return cast(SessionRow, listed)


def _shown(index: int, message: Mapping[str, Any]) -> Message:
    """A transcript message as read_session answers it: its text cut at `TEXT`."""
    calls = message.get("tool_calls")
    shown: Message = {"index": index, "role": message.get("role"), "text": _cut(text_of(message))}
    if calls:
        shown["tool_calls"] = calls
    return shown
