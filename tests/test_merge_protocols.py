"""Issue 44, item 4: the MCP server's `merge_session` (a write tool, only with
--allow-writes) and `show_compaction` (a read tool), called by the `mcp` SDK's client
over stdio; ACP's `session/resume` and `session/fork`, called by the
`agent-client-protocol` SDK's client (the server in this process). Real servers, the
fake model server."""

import asyncio
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import AgentMessageChunk, ClientCapabilities

from gitsessions.services.sessions import manage
from gitsessions.store.sessions import SessionStore
from tests.acp_helpers import WAIT, acp_args, serve_in_process
from tests.conftest import git
from tests.diff_helpers import turn
from tests.test_acp import Editor
from tests.test_compact_cli import big_session, compact
from tests.test_mcp_server import call, project
from tests.test_merge_reads import merged_pair

SUMMARY = "Goal: read every module. Done: modules 0-3."


def test_mcp_merges_a_fork_and_shows_a_compaction(cli, server, store, make_session, tmp_path):
    here = project(tmp_path, "here")
    big = big_session(store, make_session)
    server.reply(content=SUMMARY)
    compact(cli, server, big.id)
    parent = turn(store, make_session(turns=1, title="parent"), 2, "parent")
    fork = turn(store, manage.fork(store, parent.id, "the fork"), 3, "the fork's finding")
    reads = asyncio.run(
        call(
            here,
            [("show_compaction", {"session": big.id, "number": 1}),
             ("merge_session", {"session": fork.id})],
            "--all-sessions",
        )
    )  # fmt: skip
    tools, shown, denied = reads
    assert "show_compaction" in tools and "merge_session" not in tools
    assert not shown.error, shown.text
    assert shown.data["compaction"] == 1 and shown.data["summary"]["text"].count(SUMMARY) == 1
    assert shown.data["summarized_total"] == len(shown.data["summarized"]) > 0
    assert denied.error and "merge_session" in denied.text  # a write: not offered
    assert cli.json("show", big.id, "--compaction", "1")["summarized"] == shown.data["summarized"]

    tools, merged, again = asyncio.run(
        call(
            here,
            [("merge_session", {"fork": fork.id[:8], "code": False}),
             ("merge_session", {"fork": fork.id, "code": False})],
            "--all-sessions", "--allow-writes",
        )
    )  # fmt: skip
    assert "merge_session" in tools
    assert not merged.error, merged.text
    assert merged.data["into"] == parent.id and merged.data["committed"]
    assert merged.data["code"] is None
    line = git(store.git.path, "rev-list", "--parents", "-n", "1", merged.data["commit"])
    assert line.stdout.split()[1:] == [parent.commit.decode(), fork.commit.decode()]
    assert not again.error and again.data["committed"] is False  # already merged
    context = store.read(store.head(parent.id), "context")
    assert "the fork's finding" in context[-1]["content"] and context[-1]["role"] == "user"


def drive(server: Any, editor: Editor, tmp_path: Path, steps: Any) -> None:
    """`gitsessions acp` served in this process (tests/acp_helpers.py), with the unstable
    methods on at the client too (the SDK routes session/resume and session/fork as
    unstable), initialized, then `steps(conn, ready)`."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = connect_to_agent(editor, writer, reader, use_unstable_protocol=True)
        editor.conn = conn
        try:
            ready = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
            )
            await asyncio.wait_for(steps(conn, ready), WAIT)
        finally:
            await conn.close()

    log = tmp_path / "acp-stderr.txt"
    assert serve_in_process(acp_args(server.base_url), client, log) == 0


def test_acp_resumes_and_forks_a_stored_session(server, tmp_path, home):
    ws = tmp_path / "project"
    ws.mkdir()
    store = SessionStore(home)
    parent, _fork = merged_pair(store)
    before = store.head(parent).counts["messages"]
    store.close()
    server.reply(content="resumed reply")
    server.reply(content="forked reply")
    editor = Editor()
    made: list[str] = []

    async def steps(conn: Any, ready: Any) -> None:
        capabilities = ready.agent_capabilities.session_capabilities
        assert capabilities.resume is not None and capabilities.fork is not None
        await conn.resume_session(cwd=str(ws), session_id=parent, mcp_servers=[])
        assert editor.updates == []  # a resume replays nothing
        answer = await conn.prompt(session_id=parent, prompt=[text_block("go on")])
        assert answer.stop_reason == "end_turn"
        forked = await conn.fork_session(cwd=str(ws), session_id=parent, mcp_servers=[])
        made.append(forked.session_id)
        answer = await conn.prompt(session_id=forked.session_id, prompt=[text_block("fork on")])
        assert answer.stop_reason == "end_turn"

    drive(server, editor, tmp_path, steps)
    assert [u.content.text for _s, u in editor.updates if isinstance(u, AgentMessageChunk)]
    store = SessionStore(home)
    try:
        resumed = store.head(parent)
        assert resumed.counts["messages"] >= before + 2
        said = [m.get("content") for m in store.transcript(resumed)]
        assert said[-2:] == ["go on", "resumed reply"]
        fork = store.head(made[0])
        assert fork.header["parent_id"] == parent and fork.id != parent
        texts = [m.get("content") for m in store.transcript(fork)]
        assert "fork on" in texts and "forked reply" in texts and "go on" in texts
        # the merged fork's conclusion went with the resumed session's request
        sent = server.requests[0]["messages"]
        assert any("<merged_fork_data>" in str(m.get("content")) for m in sent)
    finally:
        store.close()
