"""The ACP agent: `initialize`, `session/list`, `/new`, `/load`, `/resume` (load without
the replay), `/fork` (a fork at the head, opened), `/prompt` and `/cancel`, answered on
the protocol's event loop, the work done on the main thread (worker.py).

Invariants: an ACP session id is the gitsessions session id (so `session/load` takes any
stored session, by id or by a prefix that then names it in what follows, and `chat
--resume ID` opens an editor's); each live session holds its lease until the server
stops. One turn at a time: a prompt to another session waits (a cancel meanwhile answers
it "cancelled" when its turn comes). A cancelled turn is saved as chat saves one after Ctrl-C
(`stopReason: "cancelled"`); a model or store error answers -32603 with the line
`gitsessions` would print; an unknown session or folder, or a block of a kind not
offered, -32602.
"""

import asyncio
from collections.abc import Callable
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from gitsessions.agent.assembly import Built
from gitsessions.agent.loop import Agent
from gitsessions.protocols.acp.events import AcpApprover, AcpEvents, replay
from gitsessions.protocols.acp.outbox import Outbox
from gitsessions.protocols.acp.worker import Worker
from gitsessions.services.sessions import manage
from gitsessions.store.errors import AmbiguousSessionId, SessionNotFound
from gitsessions.values.errors import GitsessionsError, InvalidInput
from gitsessions.values.records import label

# builds an agent for a workspace (and a session to resume, else a new one) into `stack`
Build = Callable[[ExitStack, Path, str | None, AcpApprover, AcpEvents], Built]
# `list` rows (values/records.py `label` names one), the most recent first: a
# project's (`--here`), or all
Rows = Callable[[Path | None], list[dict[str, Any]]]
# a line for the log (stderr, which editors keep): never stdout, the protocol's
Say = Callable[[str], None]
PAGE = 100  # sessions a session/list answer holds
# what a request naming a session (or a folder) gets wrong: answered -32602, invalid params
NOT_THERE = (SessionNotFound, AmbiguousSessionId, InvalidInput)


class OpenSession(NamedTuple):
    id: str  # as the client names it: the session's id, or the prefix it was loaded by
    agent: Agent
    events: AcpEvents
    stack: ExitStack


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks as they are, an embedded resource's text under
    its URI, a resource link as its URI (other blocks are refused first:
    `refused_block`)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f"{resource.uri}:\n{text}")
        elif kind == "resource_link":
            parts.append(block.uri)
    return "\n".join(parts)


def refused_block(blocks: list[Any]) -> str | None:
    """Why the prompt cannot be taken whole, when it holds a block the agent's
    `promptCapabilities` did not offer (image, audio; an embedded resource that is not
    text): the line answering it, so nothing of a prompt is dropped silently."""
    for n, block in enumerate(blocks):
        kind = getattr(block, "type", None)
        if kind == "resource" and not isinstance(getattr(block.resource, "text", None), str):
            kind = "binary resource"
        elif kind in ("text", "resource", "resource_link"):
            continue
        return (
            f"prompt block {n} is {kind or 'of no known type'}: gitsessions takes text, "
            "text resources and resource links (its promptCapabilities say image: false, "
            "audio: false)"
        )
    return None


def stop_reason(stopped: str | None) -> str:
    if stopped and "--max-steps" in stopped:
        return "max_turn_requests"
    return "end_turn"


class GitsessionsAcp:
    """The ACP `Agent` (acp.interfaces.Agent, duck-typed as the package's router
    expects): one per connection."""

    def __init__(self, worker: Worker, build: Build, rows: Rows, say: Say) -> None:
        self.worker = worker
        self.say = say
        self.build = build
        self.rows = rows
        self.live: dict[str, OpenSession] = {}
        self.prompting: set[str] = set()
        self.outbox: Outbox | None = None

    def on_connect(self, conn: Client) -> None:
        self.outbox = Outbox(asyncio.get_running_loop(), conn)

    async def _on_main(self, fn: Callable[[], Any], naming: bool = False) -> Any:
        """`fn`'s result, run on the main thread; an expected failure answered with its
        line: as invalid params (-32602) when `naming` (the request names a session or
        folder) and the session or folder named is not there or not usable, else as an
        internal error (-32603)."""
        try:
            return await asyncio.wrap_future(self.worker.submit(fn))
        except GitsessionsError as error:
            if naming and isinstance(error, NOT_THERE):
                raise RequestError.invalid_params({"details": str(error)}) from None
            raise RequestError.internal_error({"details": str(error)}) from None

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:  # fmt: skip

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    fork=SessionForkCapabilities(),
                ),
            ),
            agent_info=Implementation(name="gitsessions", version=version("gitsessions")),
        )

    def _open(self, cwd: str, session_id: str | None) -> OpenSession:
        """On the main thread: the session built (or the live one) and kept."""
        if session_id is not None and session_id in self.live:
            return self.live[session_id]
        assert self.outbox is not None
        events = AcpEvents(self.outbox, session_id or "", self.say)  # its id once built
        approver = AcpApprover(events, self.worker.interrupt_turn)
        stack = ExitStack()
        try:
            built = self.build(stack, Path(cwd), session_id, approver, events)
        except BaseException:
            stack.close()
            raise
        agent = built.agent
        approver.preview = agent.registry.preview  # reads the files as the tools will
        approver.workspace = built.workspace
        approver.granted.bind(agent.session.store.home, agent.session.id)  # a resumed one's
        events.session_id = session_id or agent.session.id
        live = OpenSession(events.session_id, agent, events, stack)
        self.live[live.id] = live
        return live

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The sessions of the project at `cwd` (as `list --here` finds them: any folder
        or clone of it), else all; archived ones left out; a page of PAGE at a time."""
        start = int(cursor) if cursor and cursor.isdigit() else 0
        rows = await self._on_main(lambda: self.rows(Path(cwd) if cwd else None))
        placed = [r for r in rows if r.get("workspace")]  # ACP needs each one's folder
        page, more = placed[start : start + PAGE], start + PAGE < len(placed)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r["id"],
                    cwd=r["workspace"],
                    title=label(r),
                    updated_at=r["active_at"],
                )
                for r in page
            ],
            next_cursor=str(start + PAGE) if more else None,
        )

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        live = await self._on_main(lambda: self._open(cwd, None), naming=True)
        return NewSessionResponse(session_id=live.agent.session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None,
        additional_directories: Any = None, **kwargs: Any,
    ) -> LoadSessionResponse:  # fmt: skip
        def load() -> None:
            live = self._open(cwd, session_id)
            session = live.agent.session
            if session.is_draft:
                return
            records = session.store.iter_records(session.head)  # a chunk in memory at a time
            for update in replay(record["message"] for _n, record in records):
                live.events.outbox.send(live.id, update)
            live.events.outbox.flush()

        await self._on_main(load, naming=True)
        return LoadSessionResponse()

    async def resume_session(
        self, cwd: str, session_id: str, additional_directories: Any = None,
        mcp_servers: Any = None, **kwargs: Any,
    ) -> ResumeSessionResponse:  # fmt: skip
        """As `session/load`, without replaying the transcript (the client has it)."""
        await self._on_main(lambda: self._open(cwd, session_id), naming=True)
        return ResumeSessionResponse()

    async def fork_session(
        self, cwd: str, session_id: str, additional_directories: Any = None,
        mcp_servers: Any = None, **kwargs: Any,
    ) -> ForkSessionResponse:  # fmt: skip
        """A fork of the session at its head (what it has pending saved first), opened
        in `cwd` as a session of its own; the session forked stays open too."""

        def fork() -> str:
            source = self._open(cwd, session_id)
            agent = source.agent
            agent.save()
            if agent.session.is_draft:
                raise InvalidInput(f"session {session_id} has nothing to fork yet")
            store = agent.session.store
            made = manage.fork(store, agent.session.id, hooks=agent.hooks)
            return self._open(cwd, made.id).id

        return ForkSessionResponse(session_id=await self._on_main(fork, naming=True))

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        live = self.live.get(session_id)
        if live is None:
            raise RequestError.invalid_params({"details": f"no session {session_id} is open"})
        refused = refused_block(prompt)
        if refused:
            raise RequestError.invalid_params({"details": refused})
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"details": "the prompt is empty"})
        self.prompting.add(session_id)
        try:
            reason = await self._on_main(lambda: self._turn(live, text))
        finally:
            self.prompting.discard(session_id)
            if self.worker.cancel_for == session_id:
                self.worker.cancel_for = None
        return PromptResponse(stop_reason=reason)

    def _turn(self, live: OpenSession, text: str) -> str:
        """On the main thread: one turn, its updates all written before it answers."""
        agent = live.agent
        results: list[Any] = []
        # The summary asked after the last reply is taken up first, outside the
        # interruptible turn: the wait for it skips on a Ctrl-C (agent/loop.py), which
        # would take a cancel for itself; a cancel asked meanwhile stops the turn at once.
        agent.settle_title()
        try:
            ran = self.worker.run_turn(live.id, lambda: results.append(agent.run_turn(text)))
            if not ran:
                agent.save()
                live.events.cancelled()
        finally:
            live.events.outbox.flush()
        if not ran:
            return "cancelled"
        stopped = results[0].stopped if results else None
        if stopped:  # why the turn ended early, said in the reply as exec says it
            live.events.outbox.send(live.id, update_agent_message_text(f"\n\n{stopped}"))
            live.events.outbox.flush()
        return stop_reason(stopped)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if session_id in self.prompting:
            self.worker.cancel(session_id)

    def close(self) -> None:
        """On the main thread: what each live session has pending saved (the list
        summary asked in the background after a reply included), its lease released."""
        for live in self.live.values():
            try:
                live.agent.save()
            except (OSError, GitsessionsError) as error:
                self.say(f"error: session {live.agent.session.id}: {error}")
            finally:
                live.stack.close()
        self.live.clear()
