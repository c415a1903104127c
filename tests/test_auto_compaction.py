"""Auto-compaction firing in the middle of a turn, seen from the model server's side."""

import json
import re

from gitsessions.values.messages import pairing_errors
from tests.conftest import run_gitsessions

SUMMARIZER = "You write the continuation summary"
TITLE = "Write a one-line title"


def responder(request: dict) -> dict:
    """A model that reads big.txt once per turn, then answers; and a summarizer. It
    reports no usage, so the agent's token estimate stays uncalibrated."""
    messages = request["messages"]
    system = messages[0]["content"]
    if system.startswith(SUMMARIZER):
        return {
            "content": "Goal: inspect big.txt twice. Constraint: read only.",
            "usage": (700, 30),
        }
    if system.startswith(TITLE):
        return {"content": "Reading big.txt"}
    if messages[-1]["role"] == "user":
        return {
            "content": None,
            "usage": None,
            "tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}],
        }
    return {"content": "I read big.txt.", "usage": None}


def test_auto_compaction_mid_turn(server, tmp_path, home):
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "big.txt").write_text(" ".join(f"w{i:04d}" for i in range(700)))
    server.responder = responder
    common = (
        "--base-url",
        server.base_url,
        "--model",
        "fake",
        "--workspace",
        str(ws),
        "--max-context-tokens",
        "4000",
        "--json",
    )
    first = run_gitsessions("exec", "read big.txt", *common)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["compacted"] is False
    second = run_gitsessions("exec", "read it again", "--continue", *common)
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert result["compacted"] is True and result["reply"] == "I read big.txt."
    summarize_at = next(
        i
        for i, r in enumerate(server.requests)
        if r["messages"][0]["content"].startswith(SUMMARIZER)
    )
    # the turn's first request came before compaction, the one after it carries the note
    after = server.requests[summarize_at + 1]["messages"]
    assert after[0]["role"] == "system"
    # the note and the kept prompt go as one user message: roles alternate (the server
    # is strict); the stored context keeps them apart
    assert after[1]["role"] == "user" and "<session_context_data>" in after[1]["content"]
    assert "Goal: inspect big.txt twice." in after[1]["content"]
    assert after[1]["content"].endswith("</session_context_data>\n\nread it again")
    assert after[2]["role"] == "assistant"
    assert server.rejected == []
    assert not pairing_errors(after)
    assert after[-1]["role"] == "tool"  # mid-turn: the tool result of this turn is kept
    assert re.search(r"compacted [\d,]+ -> [\d,]+ tokens \(auto\)", second.stderr)
    info = json.loads(run_gitsessions("info", result["session"], "--json").stdout)
    assert info["compactions"] == 1 and info["messages"] == 9
    log = json.loads(run_gitsessions("log", result["session"], "--json").stdout)
    compact = [e for e in log if e["event"] == "compact"]
    assert len(compact) == 1 and compact[0]["tokens_after"] < compact[0]["tokens_before"]
    # every request the agent sent fit the budget it was given
    assert all(r.get("max_tokens") in (None, 1024, 40) for r in server.requests)


def test_tool_output_larger_than_budget_is_truncated(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "huge.txt").write_text("x" * 200_000 + "\n")
    server.responder = responder
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": "cat huge.txt"}}]
    )
    done = run_gitsessions(
        "exec",
        "cat it",
        "--base-url",
        server.base_url,
        "--model",
        "fake",
        "--workspace",
        str(ws),
        "--max-context-tokens",
        "4000",
        "--auto-approve",
    )
    assert done.returncode == 0, done.stderr
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert len(result) <= 4000 and "characters cut" in result


def test_kept_counts_decide_compaction_exactly_as_a_fresh_count(server, tmp_path, home):
    """Issue 24: the token counts a turn keeps (`tokens.sqlite`) are exact, so where a
    decision depends on them (compact or not, the refusal over the budget, the counts a
    compaction records) a turn reading them decides as a turn counting everything anew.
    Two copies of one session run the same turn, one with the counts kept by its first
    turn and one without any: the same compaction, the same tokens, the same requests."""
    import shutil

    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "big.txt").write_text(" ".join(f"w{i:04d}" for i in range(700)))
    server.responder = responder
    common = ["--base-url", server.base_url, "--model", "fake", "--workspace", str(ws),
              "--max-context-tokens", "4000", "--json"]  # fmt: skip
    first = run_gitsessions("exec", "read big.txt", *common)
    assert first.returncode == 0, first.stderr
    assert (home / "tokens.sqlite").exists()  # the first turn counted, and kept its counts
    fresh = tmp_path / "fresh-home"
    shutil.copytree(home, fresh, ignore=shutil.ignore_patterns("tokens.sqlite", "*.lock"))
    results = []
    for where in (home, fresh):
        seen = len(server.requests)
        done = run_gitsessions("--home", str(where), "exec", "read it again", "--continue",
                               *common)  # fmt: skip
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        log = json.loads(
            run_gitsessions("--home", str(where), "log", result["session"], "--json").stdout
        )
        compacts = [(e["tokens_before"], e["tokens_after"]) for e in log if e["event"] == "compact"]
        sent = [r["messages"][1:] for r in server.requests[seen:]]  # (the system prompt
        results.append((result["compacted"], compacts, sent))  # names the home's path)
    assert results[0][0] is True and len(results[0][1]) == 1
    assert results[0] == results[1]
