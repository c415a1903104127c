"""`\\compact undo` in the chat, through a real pseudo-terminal: the compaction taken
back, and auto-compaction held until the context grows anew (issue 44)."""

import json

from tests.conftest import run_gitsessions
from tests.test_auto_compaction import responder
from tests.test_chat import leave, say, spawn


def chatty(request: dict) -> dict:
    """`responder`, but a prompt asking for a greeting is answered at once."""
    messages = request["messages"]
    if messages[-1]["role"] == "user" and messages[-1]["content"].endswith("just say hi"):
        return {"content": "hi", "usage": None}
    return responder(request)


def test_compact_undo_in_the_chat_holds_auto_compaction(server, tmp_path):
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "big.txt").write_text(" ".join(f"w{i:04d}" for i in range(700)))
    server.responder = chatty
    child = spawn(server.base_url, ws, "--max-context-tokens", "4000")
    say(child, "read big.txt")
    assert "compacted" in say(child, "read it again")  # the threshold was passed
    undone = say(child, "\\compact undo")
    assert "undid compaction 1" in undone and "grows anew" in undone
    assert "compaction held until 4,000 tokens" in say(child, "\\info")
    asked = len(server.requests)
    hi = say(child, "just say hi")
    assert "hi" in hi and "compacting" not in hi  # over the threshold, held
    sent = server.requests[asked:]
    assert len(sent) == 1  # no summary asked: only the turn's request
    texts = [m.get("content") or "" for m in sent[0]["messages"]]
    assert not any("<session_context_data>" in t for t in texts[1:])  # no note
    # the context as it was before the compaction, and the reply that came after it
    assert [t for t in texts if t.startswith(("read", "just"))] == [
        "read big.txt",
        "read it again",
        "just say hi",
    ]
    assert "\\compact undo" in say(child, "\\help")
    again = say(child, "\\compact undo")
    assert "error: no compaction to undo" in again and "all are undone" in again
    leave(child)
    sid = json.loads(run_gitsessions("list", "--json").stdout)[0]["id"]
    log = json.loads(run_gitsessions("log", sid, "--json").stdout)
    assert [e["event"] for e in log if e["event"].startswith("compact")] == [
        "compact-undo",
        "compact",
    ]
    assert server.rejected == []
