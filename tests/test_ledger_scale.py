"""A 100,000-message session, driven through auto-compaction by the real agent: the
ledger keeps to its share of the budget, so the next request fits."""

import json

from gitsessions.services.compaction.user_words import WORDS_HEADING
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from gitsessions.values.tokens import default_counter
from tests.conftest import run_gitsessions

SUMMARIZER = "You write the continuation summary"
FILES = 4_200


def _cycle(n: int, path: str) -> list[dict]:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {
            "name": "write_file",
            "arguments": json.dumps({"path": path, "content": f"value = {n}\n"}),
        },
    }
    return [
        {"role": "user", "content": f"step {n}: update {path}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"wrote {path}"},
        {"role": "assistant", "content": f"Updated {path} for step {n}; the tests pass now."},
    ]


def _long_session(store: SessionStore, workspace: str) -> str:
    """25,000 cycles of user, write_file call, result, reply: 100,001 messages touching
    4,200 files, plus src/hot.py changed often (early on) and src/latest.py last."""
    system = {"role": "system", "content": "You are a coding agent."}
    messages = [system]
    for n in range(25_000):
        if n == 24_999:
            path = "src/latest.py"
        elif n < 5_000 and n % 10 == 0:
            path = "src/hot.py"
        else:
            path = f"src/pkg{n % 42}/module_{n % FILES:04d}.py"
        messages += _cycle(n, path)
    sid = new_id()
    header = new_header(sid, now_iso(), title="long", workspace={"path": workspace})
    head = store.create(header, Change(context=[system], append=[system]))
    # the working context: the last 860 messages, over 80% of a 24,000-token budget
    store.commit(
        head,
        Change(context=[system, *messages[-860:]], append=messages[1:]),
        event="import",
        subject="import",
    )
    return sid


def responder(request: dict) -> dict:
    if request["messages"][0]["content"].startswith(SUMMARIZER):
        return {"content": "Goal: keep updating modules.", "usage": (900, 10)}
    return {"content": "Carrying on.", "usage": None}


def test_ledger_fits_its_share_at_100k_messages(server, tmp_path, home):
    ws = tmp_path / "ws"
    ws.mkdir()
    # the setup's messages hold no secret: written unscanned, as the store would write
    # them scanned (the scan of 100,000 messages was half the test's time)
    store = SessionStore(home, redact=False)
    try:
        sid = _long_session(store, str(ws))
    finally:
        store.close()
    server.responder = responder
    done = run_gitsessions(
        "exec", "go on", "--resume", sid, "--base-url", server.base_url, "--model", "fake",
        "--workspace", str(ws), "--json", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["compacted"] is True
    firsts = [r["messages"][0]["content"] for r in server.requests]
    summarized = next(i for i, first in enumerate(firsts) if first.startswith(SUMMARIZER))
    sent = server.requests[summarized + 1]
    note = sent["messages"][1]["content"]
    assert "<session_context_data>" in note
    assert "src/latest.py" in note and "src/hot.py" in note  # most recent, most often
    assert "more files; read_session lists them" in note
    tools = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]
    ledger = note[note.index("## Ledger") : note.index(WORDS_HEADING)]  # the user's quotes follow
    assert default_counter().count_context([{"role": "user", "content": ledger}]) <= 2_400 + 50
    assert default_counter().estimate(sent["messages"], tools) <= 24_000
