"""`gitsessions acp` driven by the `agent-client-protocol` package's own client side
against the fake model server: served in this process (tests/acp_helpers.py) where the
protocol is the subject; started as a process (`spawn_agent_process`, stdio pipes, as an
editor starts it) where the process is: its start-up, exit, signals and line framing,
and one session end to end."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    connect_to_agent,
    spawn_agent_process,
    text_block,
)
from acp.helpers import audio_block, embedded_blob_resource, image_block, resource_block
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from gitsessions.agent.turns import CANCELLED
from gitsessions.store.sessions import SessionStore
from tests.acp_helpers import WAIT, acp_args, serve_in_process
from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI


class Editor:
    """An ACP client as an editor is one: it records every update, and answers each
    permission request with `answer` (an option id; None: the request is cancelled)."""

    def __init__(self, answer: str | None = "allow_once") -> None:
        self.answer = answer
        self.conn: Any = None  # the connection, for an answer that cancels the turn
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[tuple[Any, list[Any]]] = []
        self.replying = asyncio.Event()  # set at the first agent message chunk
        self.running = asyncio.Event()  # set when a tool call is reported in progress

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if isinstance(update, AgentMessageChunk):
            self.replying.set()
        if isinstance(update, ToolCallProgress) and update.status == "in_progress":
            self.running.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        if self.answer is None:  # the user stops the turn: cancel, then withdraw the question
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if self.answer == "withdraw":  # the same, the question withdrawn first
            asyncio.get_running_loop().create_task(self.conn.cancel(session_id=session_id))
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=self.answer, outcome="selected")
        )

    def text(self) -> str:
        return "".join(
            u.content.text for _sid, u in self.updates if isinstance(u, AgentMessageChunk)
        )

    def of(self, kind: type) -> list[Any]:
        return [u for _sid, u in self.updates if isinstance(u, kind)]


Session = Callable[[Any], Awaitable[None]]


async def _ready(conn: Any) -> None:
    ready = await asyncio.wait_for(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
        ),
        WAIT,
    )
    assert ready.protocol_version == PROTOCOL_VERSION
    assert ready.agent_capabilities.load_session is True
    assert ready.agent_capabilities.session_capabilities.list is not None
    assert ready.agent_info.name == "gitsessions"


def drive(server: FakeOpenAI, editor: Editor, tmp_path: Path, steps: Session) -> str:
    """Serve `gitsessions acp` in this process (tests/acp_helpers.py) to the package's
    client, initialize, run `steps(conn)`, close its input; its stderr."""
    log = tmp_path / "acp-stderr.txt"

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = connect_to_agent(editor, writer, reader)
        editor.conn = conn
        try:
            await _ready(conn)
            await asyncio.wait_for(steps(conn), WAIT)
        finally:
            await conn.close()

    code = serve_in_process(acp_args(server.base_url), client, log)
    assert code == 0  # it stopped on its own when its input closed
    return log.read_text()


def drive_process(server: FakeOpenAI, editor: Editor, tmp_path: Path, steps: Session) -> str:
    """As `drive`, `gitsessions acp` started as the editor starts it (`spawn_agent_process`,
    a real subprocess over stdio pipes)."""
    log = tmp_path / "acp-stderr.txt"

    async def main() -> None:
        with log.open("ab") as stderr:
            async with spawn_agent_process(
                editor,
                sys.executable,
                "-m",
                "gitsessions",
                "acp",
                *acp_args(server.base_url),
                env=dict(os.environ),
                cwd=REPO,
                # it exits on its own; under load that may take the SDK's 2 s and more
                transport_kwargs={"stderr": stderr, "shutdown_timeout": WAIT},
            ) as (conn, process):
                editor.conn = conn
                await _ready(conn)
                await asyncio.wait_for(steps(conn), WAIT)
        assert process.returncode == 0  # it stopped on its own when its input closed

    asyncio.run(main())
    return log.read_text()


async def new_session(conn: Any, cwd: Path) -> str:
    return (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id


async def prompt(conn: Any, session_id: str, text: str) -> str:
    answer = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    return answer.stop_reason


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def transcript(home: Path, session_id: str) -> list[dict[str, Any]]:
    store = SessionStore(home)
    try:
        return store.transcript(store.head(session_id))
    finally:
        store.close()


def test_a_prompt_streams_its_reply_as_chunks_into_a_new_session(server, ws, tmp_path, home):
    server.reply(content="Hello from the fake model, in pieces")
    editor = Editor()
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        assert await prompt(conn, ids[0], "say hello") == "end_turn"

    drive(server, editor, tmp_path, steps)
    chunks = editor.of(AgentMessageChunk)
    assert len(chunks) > 1  # streamed: the fake server sends the content in pieces
    assert editor.text() == "Hello from the fake model, in pieces"
    assert {sid for sid, _u in editor.updates} == {ids[0]}
    sent = server.requests[0]["messages"]
    assert sent[-1] == {"role": "user", "content": "say hello"}
    stored = transcript(home, ids[0])
    assert [m["role"] for m in stored[1:]] == ["user", "assistant"]
    assert stored[1]["content"] == "say hello"
    stored_ws = SessionStore(home)
    try:
        workspace = stored_ws.head(ids[0]).header["workspace"]["path"]
    finally:
        stored_ws.close()
    assert Path(workspace) == ws


WRITE = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\n"}}


@pytest.mark.parametrize("answer", ["reject_once", "allow_once"])
def test_a_write_asks_the_editor_and_its_answer_decides(server, ws, tmp_path, answer):
    server.reply(tool_calls=[WRITE])
    server.reply(content="done")
    editor = Editor(answer)
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        assert await prompt(conn, ids[0], "write a note") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert len(editor.asked) == 1
    call, options = editor.asked[0]
    assert call.tool_call_id == "call_0"
    assert "notes.txt" in call.title
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    assert options[1].name == "Always allow write_file in this session"
    diff = call.content[0]  # the editor shows what the call would write
    assert (diff.type, Path(diff.path), diff.old_text, diff.new_text) == (
        "diff",
        ws / "notes.txt",
        None,
        "hi\n",
    )
    started = editor.of(ToolCallStart)
    assert [(s.tool_call_id, s.kind, s.status) for s in started] == [("call_0", "edit", "pending")]
    final = editor.of(ToolCallProgress)[-1]
    result = server.requests[1]["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_0"
    assert final.content[0].content.text == result["content"]
    if answer == "reject_once":
        assert not (ws / "notes.txt").exists()
        assert final.status == "failed"
        assert "denied by the user" in result["content"]
    else:
        assert (ws / "notes.txt").read_text() == "hi\n"
        assert final.status == "completed"
        statuses = [u.status for u in editor.of(ToolCallProgress)]
        assert statuses.index("in_progress") < statuses.index("completed")


def test_a_running_command_reports_its_output_lines_before_it_ends(server, ws, tmp_path):
    command = "echo first-line; echo second-line"
    server.reply(tool_calls=[{"name": "run_shell", "arguments": {"command": command}}])
    server.reply(content="ran it")
    editor = Editor("allow_once")

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "run it") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert [s.kind for s in editor.of(ToolCallStart)] == ["execute"]
    updates = editor.of(ToolCallProgress)
    assert updates[0].status == "in_progress" and updates[-1].status == "completed"
    lines = [u.content[0].content.text for u in updates[1:-1]]
    assert lines and set(lines) <= {"first-line", "second-line"}
    assert "second-line" in updates[-1].content[0].content.text


def test_a_model_error_answers_the_prompt_with_it_and_the_session_goes_on(server, ws, tmp_path):
    server.fail(status=400, message="the model refuses this")
    server.reply(content="fine now")
    editor = Editor()
    errors: list[RequestError] = []

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        try:
            await prompt(conn, session_id, "first try")
        except RequestError as error:
            errors.append(error)
        assert await prompt(conn, session_id, "second try") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert len(errors) == 1 and "the model refuses this" in str(errors[0].data)
    assert editor.text() == "fine now"


def test_an_edit_asks_with_the_file_as_it_is_and_as_it_would_be(server, ws, tmp_path):
    (ws / "app.py").write_text("a = 1\nb = 2\n")
    edit = {"name": "edit_file", "arguments": {"path": "app.py", "old": "b = 2", "new": "b = 3"}}
    server.reply(tool_calls=[edit])
    server.reply(content="edited")
    editor = Editor("allow_once")

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "edit it") == "end_turn"

    drive(server, editor, tmp_path, steps)
    diff = editor.asked[0][0].content[0]
    assert (diff.old_text, diff.new_text) == ("a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert (ws / "app.py").read_text() == "a = 1\nb = 3\n"


def test_allow_always_asks_once_for_the_rest_of_the_session(server, ws, tmp_path):
    second = {"name": "write_file", "arguments": {"path": "more.txt", "content": "x\n"}}
    server.reply(tool_calls=[WRITE])
    server.reply(tool_calls=[second])
    server.reply(content="both written")
    editor = Editor("allow_always")

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "write two notes") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert len(editor.asked) == 1  # the second write_file ran unasked
    assert (ws / "notes.txt").exists() and (ws / "more.txt").exists()


def test_allow_always_for_a_command_covers_its_scope_only(server, ws, tmp_path):
    for command in ("ls", "ls -a", "pwd"):
        server.reply(tool_calls=[{"name": "run_shell", "arguments": {"command": command}}])
    server.reply(content="looked around")
    editor = Editor("allow_always")

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "look around") == "end_turn"

    drive(server, editor, tmp_path, steps)
    asked = [call.raw_input["command"] for call, _options in editor.asked]
    assert asked == ["ls", "pwd"]  # `ls -a` ran under the first "always"
    always = [o.name for o in editor.asked[0][1] if o.kind == "allow_always"]
    assert always == ["Always allow `ls ...` commands in this session"]  # chat's words


def test_cancel_during_a_held_streamed_reply_stops_the_turn_and_saves_it(
    server, ws, tmp_path, home
):
    held = threading.Event()
    server.reply(content="Held answer begins here, then the server waits", hold=held)
    editor = Editor()
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        turn = asyncio.create_task(prompt(conn, ids[0], "hold on"))
        await editor.replying.wait()  # the first piece arrived; the server holds the rest
        await conn.cancel(session_id=ids[0])
        assert await turn == "cancelled"
        held.set()
        server.reply(content="a fresh answer")
        assert await prompt(conn, ids[0], "again") == "end_turn"

    try:
        drive(server, editor, tmp_path, steps)
    finally:
        held.set()
    assert editor.text().startswith("Held")
    assert editor.text().endswith("a fresh answer")
    stored = transcript(home, ids[0])
    partial = [m for m in stored if m.get("interrupted")]
    assert len(partial) == 1 and partial[0]["content"].startswith("Held")
    # the next prompt is sent alone: the cancelled one is closed by the interruption note
    # (the list summary is asked after it: the cancelled first turn had none asked)
    turns = [r for r in server.requests if r.get("tools")]
    assert len(turns) == 2
    sent = turns[1]["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]
    assert sent[1]["content"] == "hold on" and sent[-1]["content"] == "again"
    assert "interrupted" in sent[2]["content"]
    replayed = Editor()

    async def load(conn: Any) -> None:
        await conn.load_session(cwd=str(ws), session_id=ids[0], mcp_servers=[])

    drive(server, replayed, tmp_path, load)
    assert [u.content.text for u in replayed.of(UserMessageChunk)] == ["hold on", "again"]
    assert replayed.text().startswith("Held")  # the partial reply, as it was cut
    assert "[gitsessions:" not in replayed.text()  # the note for the model is not shown
    assert replayed.text().endswith("a fresh answer")


def test_an_editor_that_leaves_mid_turn_stops_it_and_the_session_is_saved(
    server, ws, tmp_path, home
):
    held = threading.Event()
    server.reply(content="Held answer begins here, then the server waits", hold=held)
    editor = Editor()
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        turn = asyncio.create_task(prompt(conn, ids[0], "hold on"))
        await editor.replying.wait()
        turn.cancel()  # and leave: stdin closes with the turn still running

    try:
        drive(server, editor, tmp_path, steps)  # asserts it then exits on its own, with 0
    finally:
        held.set()
    stored = transcript(home, ids[0])
    assert stored[1]["content"] == "hold on"
    assert stored[-1].get("interrupted") and stored[-1]["content"].startswith("Held")


def test_cancel_before_any_of_the_reply_arrived_sends_nothing_more(server, ws, tmp_path, home):
    held = threading.Event()
    server.reply(content="never seen", hold=held, hold_at=0)  # held before the role chunk
    editor = Editor()
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        turn = asyncio.create_task(prompt(conn, ids[0], "hold on"))
        while not server.requests:  # the request reached the server, which holds it
            await asyncio.sleep(0.01)
        await conn.cancel(session_id=ids[0])
        assert await turn == "cancelled"

    try:
        drive(server, editor, tmp_path, steps)
    finally:
        held.set()
    assert editor.text() == ""
    stored = transcript(home, ids[0])
    assert [m["role"] for m in stored[1:]] == ["user"]  # the prompt, saved; no reply
    assert stored[1]["content"] == "hold on"


def test_cancel_while_the_last_title_is_awaited_cancels_the_next_turn(server, ws, tmp_path, home):
    """The list summary asked after the first reply is held by the server when the
    second prompt comes: that prompt waits for it, and a cancel meanwhile cancels the
    turn (chat's wait for a title takes a Ctrl-C as "skip the title" instead)."""
    held = threading.Event()
    server.reply(content="first answer")

    def title(request: dict[str, Any]) -> str:  # not streamed: held before its answer
        held.wait(WAIT)
        return "A title"

    server.responder = title
    editor = Editor()
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        assert await prompt(conn, ids[0], "first") == "end_turn"
        turn = asyncio.create_task(prompt(conn, ids[0], "second"))
        while len(server.requests) < 2:  # the title's request is held
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)  # the prompt request written before the cancel
        await conn.cancel(session_id=ids[0])
        await conn.initialize(protocol_version=PROTOCOL_VERSION)  # the cancel was read
        held.set()
        assert await turn == "cancelled"

    try:
        drive(server, editor, tmp_path, steps)
    finally:
        held.set()
    assert len(server.requests) == 2  # the second prompt was never sent
    store = SessionStore(home)
    try:
        assert store.head(ids[0]).header.get("summary") == "A title"  # kept, not skipped
    finally:
        store.close()


@pytest.mark.parametrize("answer", [None, "withdraw"])
def test_cancel_while_the_editor_asks_permission_runs_nothing(server, ws, tmp_path, home, answer):
    """The editor cancels the turn and answers its question "cancelled", in either
    order: the call is not run and nothing more is asked of the model."""
    server.reply(tool_calls=[WRITE])
    editor = Editor(answer)
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        assert await prompt(conn, ids[0], "write a note") == "cancelled"

    drive(server, editor, tmp_path, steps)
    assert len(editor.asked) == 1
    assert not (ws / "notes.txt").exists()
    assert len(server.requests) == 1  # nothing more was asked of the model
    stored = transcript(home, ids[0])
    assert stored[-1]["role"] == "tool" and stored[-1]["content"] == CANCELLED
    assert [(u.status, u.content[0].content.text) for u in editor.of(ToolCallProgress)] == [
        ("failed", CANCELLED)
    ]


def test_a_turn_stopped_early_says_why(server, ws, tmp_path):
    for _ in range(3):
        server.reply(tool_calls=[WRITE])
    editor = Editor("reject_once")

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "write a note") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert len(editor.asked) == 3
    assert editor.text().endswith(
        "stopped: 3 steps in a row where every tool call failed or was denied"
    )


def test_cancel_during_a_running_command_stops_it_and_saves_the_turn(server, ws, tmp_path, home):
    server.reply(tool_calls=[{"name": "run_shell", "arguments": {"command": "sleep 120"}}])
    editor = Editor("allow_once")
    ids: list[str] = []

    async def steps(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        turn = asyncio.create_task(prompt(conn, ids[0], "wait a while"))
        await editor.running.wait()
        await conn.cancel(session_id=ids[0])
        assert await turn == "cancelled"

    drive_process(server, editor, tmp_path, steps)  # SIGINT to a process's main thread
    assert len(server.requests) == 1  # the cancelled command's result was never sent
    stored = transcript(home, ids[0])
    assert stored[-1]["role"] == "tool" and stored[-1]["tool_call_id"] == "call_0"
    assert stored[-1]["content"] == CANCELLED
    final = editor.of(ToolCallProgress)[-1]  # the editor sees the call end, not hang
    assert (final.tool_call_id, final.status) == ("call_0", "failed")
    assert final.content[0].content.text == CANCELLED


def test_load_replays_a_stored_session_and_goes_on_with_it(server, ws, tmp_path):
    server.reply(tool_calls=[WRITE])
    server.reply(content="wrote notes.txt")
    first = Editor("allow_once")
    ids: list[str] = []

    async def make(conn: Any) -> None:
        ids.append(await new_session(conn, ws))
        assert await prompt(conn, ids[0], "write a note") == "end_turn"

    drive(server, first, tmp_path, make)
    server.reply(content="still here")
    again = Editor()

    async def load(conn: Any) -> None:  # by a prefix, as `gitsessions list` shows ids
        await conn.load_session(cwd=str(ws), session_id=ids[0][:8], mcp_servers=[])
        replayed = len(again.updates)
        assert replayed > 0  # written before the load's answer
        assert await prompt(conn, ids[0][:8], "are you there?") == "end_turn"

    drive(server, again, tmp_path, load)
    users = [u.content.text for u in again.of(UserMessageChunk)]
    assert users == ["write a note"]
    starts = again.of(ToolCallStart)
    assert [(s.tool_call_id, s.title) for s in starts] == [
        ("call_0", "write_file: notes.txt (1 line)")
    ]
    finished = again.of(ToolCallProgress)
    assert [(f.tool_call_id, f.status) for f in finished] == [("call_0", "completed")]
    assert again.text() == "wrote notes.txtstill here"
    assert {sid for sid, _u in again.updates} == {ids[0][:8]}  # named as the client named it
    sent = server.requests[-1]["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[-1]["content"] == "are you there?"


def test_load_of_an_unknown_session_is_an_error_and_the_server_goes_on(server, ws, tmp_path):
    server.reply(content="still serving")
    editor = Editor()
    errors: list[RequestError] = []

    async def steps(conn: Any) -> None:
        try:
            await conn.load_session(cwd=str(ws), session_id="feedfacefeedface", mcp_servers=[])
        except RequestError as error:
            errors.append(error)
        session_id = await new_session(conn, ws)
        assert await prompt(conn, session_id, "hello") == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert len(errors) == 1 and "feedface" in str(errors[0].data)
    assert errors[0].code == -32602  # invalid params, as ACP's schema says: not -32603
    assert editor.text() == "still serving"


@pytest.mark.parametrize(
    "block",
    [
        image_block("iVBORw0KGgo=", "image/png"),
        audio_block("UklGRg==", "audio/wav"),
        resource_block(embedded_blob_resource("file:///x.bin", "AAEC")),
    ],
    ids=["image", "audio", "blob"],
)
def test_a_prompt_block_of_a_kind_not_offered_is_refused_not_dropped(server, ws, tmp_path, block):
    """The agent offers image: false and audio: false: a prompt holding such a block (or
    a binary resource) is answered with an error naming it, and nothing of it runs."""
    server.reply(content="a text prompt still works")
    errors: list[RequestError] = []

    async def steps(conn: Any) -> None:
        session_id = await new_session(conn, ws)
        try:
            await conn.prompt(session_id=session_id, prompt=[text_block("look at this"), block])
        except RequestError as error:
            errors.append(error)
        assert await prompt(conn, session_id, "and now?") == "end_turn"

    editor = Editor()
    drive(server, editor, tmp_path, steps)
    assert len(errors) == 1 and errors[0].code == -32602
    assert "prompt block 1 is" in str(errors[0].data) and "image: false" in str(errors[0].data)
    assert server.requests[0]["messages"][-1]["content"] == "and now?"
    assert "look at this" not in json.dumps(server.requests)  # nothing of it ran
    assert editor.text() == "a text prompt still works"


def test_list_names_this_projects_sessions_or_all(server, ws, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    server.responder = lambda request: "an answer"
    ids: dict[str, str] = {}

    async def steps(conn: Any) -> None:
        for name, folder in (("here", ws), ("there", other)):
            ids[name] = await new_session(conn, folder)
            assert await prompt(conn, ids[name], f"a prompt {name}") == "end_turn"
        await conn.new_session(cwd=str(ws), mcp_servers=[])  # a draft: not stored, not listed
        mine = await conn.list_sessions(cwd=str(ws))
        assert [(s.session_id, Path(s.cwd)) for s in mine.sessions] == [(ids["here"], ws)]
        assert mine.sessions[0].title and mine.sessions[0].updated_at
        assert mine.next_cursor is None
        every = await conn.list_sessions()
        # both (in the order of their last activity, which a background title may change)
        assert sorted(s.session_id for s in every.sessions) == sorted(ids.values())

    drive(server, Editor(), tmp_path, steps)


def test_acp_without_pipes_is_refused_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "acp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=WAIT,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: acp talks to an editor over pipes (stdin is not one)")
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_acp_stops_cleanly_when_its_input_closes_at_once():
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "acp"],
        input="",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=WAIT,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_sigint_that_is_no_cancel_is_ignored(server, ws):
    """A SIGINT no session/cancel asked for (a Ctrl-C at a terminal, a stray signal)
    stops nothing: the server answers on, and stops when its input closes."""
    child = subprocess.Popen(
        [sys.executable, "-m", "gitsessions", "acp", "--base-url", server.base_url],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, cwd=REPO,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        for n in (1, 2):
            request = {"jsonrpc": "2.0", "id": n, "method": "initialize",
                       "params": {"protocolVersion": 1}}  # fmt: skip
            child.stdin.write(json.dumps(request) + "\n")
            child.stdin.flush()
            assert json.loads(child.stdout.readline())["id"] == n
            if n == 1:
                child.send_signal(signal.SIGINT)
        child.stdin.close()
        assert child.wait(timeout=WAIT) == 0
    finally:
        if child.poll() is None:
            child.kill()


def test_stdout_carries_json_rpc_only_while_notes_go_to_stderr(server, ws):
    """Plain JSON-RPC lines, as any client writes them: every line the server writes on
    stdout is one JSON-RPC message; its notes (no git repository here) are on stderr
    (no price note: the fake server is on this machine, a local model)."""
    server.reply(tool_calls=[{"name": "list_files", "arguments": {}}])
    server.reply(content="listed")
    child = subprocess.Popen(
        [sys.executable, "-m", "gitsessions", "acp", "--base-url", server.base_url,
         "--model", "fake-model"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=REPO,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None

    def ask(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                      "params": params}) + "\n")  # fmt: skip
        child.stdin.flush()
        while True:
            message = json.loads(child.stdout.readline())
            assert message["jsonrpc"] == "2.0"
            if message.get("id") == n:
                return message

    try:
        assert ask(1, "initialize", {"protocolVersion": 1})["result"]["protocolVersion"] == 1
        session_id = ask(2, "session/new", {"cwd": str(ws), "mcpServers": []})["result"][
            "sessionId"
        ]
        prompt = [{"type": "text", "text": "list the files"}]
        answer = ask(3, "session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert answer["result"]["stopReason"] == "end_turn"
        child.stdin.close()
        rest = child.stdout.read()
        assert child.wait(timeout=WAIT) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines())
    stderr = child.stderr.read() if child.stderr else ""
    assert "not in a git repository" in stderr and "no price known" not in stderr


def test_lines_are_capped_and_errors_echo_no_input():
    """A line over the 16 MiB cap is answered with one short error (the request's id,
    -32600), never read whole nor echoed; a rejected request within the cap gets its
    error without its input; a line that is not JSON gets -32700; the server goes on."""
    from gitsessions.protocols.acp.lines import LINE_CAP

    child = subprocess.Popen(
        [sys.executable, "-m", "gitsessions", "acp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None

    def bad_prompt(n: int, size: int) -> None:
        head = b'{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":' % n
        child.stdin.write(head + b'{"sessionId":"s","prompt":"')
        for _ in range(size // (1 << 20)):
            child.stdin.write(b"A" * (1 << 20))
        child.stdin.write(b'"}}\n')

    try:
        bad_prompt(1, 1 << 20)  # within the cap: an invalid prompt, 1 MiB of it
        bad_prompt(2, LINE_CAP + (4 << 20))  # past the cap
        child.stdin.write(b"not json\n")
        child.stdin.write(b'{"jsonrpc":"2.0","id":3,"method":"initialize",'
                          b'"params":{"protocolVersion":1}}\n')  # fmt: skip
        child.stdin.close()
        lines = child.stdout.read().splitlines()
        assert child.wait(timeout=WAIT) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert [len(line) < 4000 for line in lines] == [True] * 4
    invalid, over, garbage, ready = (json.loads(line) for line in lines)
    assert (invalid["id"], invalid["error"]["code"]) == (1, -32602)
    assert (over["id"], over["error"]["code"]) == (2, -32600)
    assert "16 MiB" in over["error"]["message"]
    assert (garbage["id"], garbage["error"]["code"]) == (None, -32700)
    assert ready["id"] == 3 and ready["result"]["protocolVersion"] == 1
