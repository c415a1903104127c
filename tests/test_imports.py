"""`import --from claude-code|codex`: sources written to the documented shapes
(tests/import_fixtures.py), mapped to chat messages that pair, kept in step on a
re-import, refused when rewritten, and resumed here."""

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from gitsessions.services.imports import claude_code
from gitsessions.store.lease import Lease
from tests.conftest import exec_args, run_gitsessions
from tests.import_fixtures import (
    CLAUDE_SESSION,
    CODEX_SESSION,
    ClaudeFile,
    claude_session,
    codex_session,
)

SID = claude_code.derived_id(CLAUDE_SESSION)


def export(cli: Any, sid: str) -> dict[str, Any]:
    return json.loads(cli("export", sid).stdout)


def rows(result: Any) -> list[list[str]]:
    return [line.split("\t") for line in result.stdout.splitlines()]


@pytest.fixture
def claude_file(tmp_path: Path) -> ClaudeFile:
    return claude_session(
        tmp_path / "claude" / "projects" / "-work-proj" / f"{CLAUDE_SESSION}.jsonl"
    )


def test_a_claude_code_session_becomes_paired_chat_messages(cli, claude_file):
    path = claude_file.write()
    result = cli("import", "--from", "claude-code", str(path))
    assert rows(result) == [[SID, "created", "10", str(path.resolve())]]
    assert "unknown line types ignored: brand-new-kind (1)" in result.stderr
    doc = export(cli, SID)
    messages = [r["message"] for r in doc["transcript"]]
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant",
        "user", "user", "assistant",
    ]  # fmt: skip
    first = messages[1]  # one reply split over four lines sharing message.id
    assert first["content"] == "I'll read the test first."
    calls = first["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["Read", "Bash"]
    assert json.loads(calls[0]["function"]["arguments"]) == {
        "file_path": "/home/dev/proj/test_parser.py"
    }
    assert [m["tool_call_id"] for m in messages[2:4]] == ["toolu_01", "toolu_02"]
    assert messages[5]["content"] == "error: exit code 1"  # is_error
    # thinking is kept as data in the record, never in a message
    assert doc["transcript"][1]["source"]["reasoning"][0]["thinking"] == "Let me look at the test."
    assert "thinking" not in json.dumps(messages) and "toolUseResult" not in json.dumps(doc)
    assert doc["transcript"][1]["usage"] == {"prompt_tokens": 110, "completion_tokens": 7}
    # the compact boundary: a compaction with its before-token count; the context after it
    [compaction] = doc["compactions"]
    assert (compaction["before_tokens"], compaction["trigger"]) == (48213, "manual")
    assert compaction["summary"].startswith("This session is being continued")
    assert [m["content"] for m in doc["messages"]] == [
        compaction["summary"],
        "now run the whole suite",
        "All 120 tests pass.",
    ]
    assert (doc["title"], doc["summary"]) == ("Parser flake", "Fix the flaky parser test")
    assert doc["imported"]["id"] == CLAUDE_SESSION and doc["imported"]["cwd"] == "/home/dev/proj"
    assert doc["workspace"]["path"] == "/home/dev/proj" and doc["workspace"]["branch"] == "main"
    assert doc["created_at"] == "2026-10-01T09:00:01Z"
    listed = cli.json("list")
    assert [(r["id"], r["imported_from"]) for r in listed] == [(SID, "claude-code")]
    assert f"imported from\tclaude-code session {CLAUDE_SESSION}\n" in cli("info", SID).stdout
    # the export imports again (its records' `source` and header's `imported` included)
    cli("delete", SID, "--yes")
    again = Path(claude_file.path.parent / "export.json")
    again.write_text(json.dumps(doc))
    cli("import", str(again))
    assert export(cli, SID) == doc


def test_a_damaged_line_is_reported_by_number_and_the_rest_imported(cli, claude_file):
    claude_file.lines.insert(3, '{"type": "user", "message": {"role": "us')
    path = claude_file.write()
    result = cli("import", "--from", "claude-code", str(path))
    assert f"{path.resolve()}: line 4 skipped: malformed JSON" in result.stderr
    assert rows(result)[0][1:3] == ["created", "10"]


def test_importing_again_is_a_no_op(cli, claude_file, home):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    before = cli.json("info", SID)
    result = cli("import", "--from", "claude-code", str(path))
    assert rows(result) == [[SID, "unchanged", "0", str(path.resolve())]]
    assert cli.json("info", SID) == before
    assert "read 1 claude-code session file: 0 sessions imported, 1 unchanged" in result.stderr


def test_an_appended_source_imports_only_its_new_lines(cli, claude_file):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    first = export(cli, SID)
    claude_file.prompt("and the linter?")
    claude_file.reply("msg_05", [{"type": "text", "text": "Clean."}], stop="end_turn")
    claude_file.write()
    result = cli("import", "--from", "claude-code", str(path))
    assert rows(result)[0][1:3] == ["appended", "2"]
    doc = export(cli, SID)
    assert doc["transcript"][: len(first["transcript"])] == first["transcript"]
    assert [r["message"]["content"] for r in doc["transcript"][-2:]] == [
        "and the linter?",
        "Clean.",
    ]
    assert doc["messages"][-1]["content"] == "Clean."
    assert doc["usage"]["requests"] == first["usage"]["requests"] + 1
    log = cli("log", SID, "--steps").stdout.splitlines()
    assert len(log) == 4 and "import: 2 messages from claude-code" in log[0]


def test_a_rewritten_or_shortened_source_is_reported_and_not_merged(cli, claude_file):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    head = cli.json("info", SID)["head"]
    text = path.read_text()
    path.write_text(text.replace("flaky, fix it", "flaky, fix IT"))
    result = cli("import", "--from", "claude-code", str(path), code=1)
    assert rows(result)[0][1:3] == ["rewritten", "0"]
    assert "nothing written to session" in result.stderr
    path.write_text(text[: len(text) // 2].rsplit("\n", 1)[0] + "\n")
    result = cli("import", "--from", "claude-code", str(path), code=1)
    assert rows(result)[0][1] == "shortened"
    assert cli.json("info", SID)["head"] == head


def test_a_prompt_edited_in_the_source_since_its_import_is_a_fork_of_it(cli, claude_file):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    head = cli.json("info", SID)["head"]
    # a new branch from the first prompt (an edited follow-up): the active chain moved
    claude_file.last = "00000000-0000-4000-8000-000000000001"
    claude_file.reply("msg_10", [{"type": "text", "text": "A different answer."}], stop="end_turn")
    claude_file.write()
    result = cli("import", "--from", "claude-code", str(path), "--json")
    [fork] = json.loads(result.stdout)
    assert (fork["status"], fork["fork_of"]) == ("created", SID)
    assert "its path moved" in result.stderr
    assert cli.json("info", SID)["head"] == head  # what was imported stays as it was
    messages = json.loads(cli("export", fork["session"]).stdout)["messages"]
    assert messages[-1]["content"] == "A different answer."
    again = cli("import", "--from", "claude-code", str(path), "--json")
    assert [o["status"] for o in json.loads(again.stdout)] == ["unchanged"]


def test_an_open_reply_is_held_back_until_it_ends(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("run the tests")
    f.reply(
        "msg_a",
        [{"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "pytest"}}],
        stop="tool_use",
    )
    f.raw('{"type": "user", "message": {"role": "user", "con')  # a line still being written
    path = f.write()
    path.write_text(path.read_text().rstrip("\n"))
    result = cli("import", "--from", "claude-code", str(path))
    assert rows(result)[0][1:3] == ["created", "1"]
    assert "from line 2 held back" in result.stderr
    f.lines.pop()
    f.results(("toolu_a", "3 passed"))
    f.reply("msg_b", [{"type": "text", "text": "Green."}], stop="end_turn")
    f.write()
    result = cli("import", "--from", "claude-code", str(path))
    assert rows(result)[0][1:3] == ["appended", "3"]
    sid = claude_code.derived_id(f.session)
    contents = [r["message"].get("content") for r in export(cli, sid)["transcript"]]
    assert contents == ["run the tests", None, "3 passed", "Green."]


def test_a_codex_rollout_imports_with_its_calls_reasoning_and_compaction(
    cli, tmp_path, monkeypatch
):
    root = tmp_path / "codex"
    codex_session(
        root
        / "sessions"
        / "2026"
        / "10"
        / "02"
        / f"rollout-2026-10-02T10-00-00-{CODEX_SESSION}.jsonl"
    )
    monkeypatch.setenv("CODEX_HOME", str(root))
    result = cli("import", "--from", "codex")
    [[sid, status, count, _path]] = rows(result)
    assert (status, count) == ("created", "8")
    assert "unknown line types ignored: future_line_type (1)" in result.stderr
    doc = export(cli, sid)
    messages = [r["message"] for r in doc["transcript"]]
    assert messages[0] == {"role": "system", "content": "You are Codex, a coding agent."}
    assert messages[1] == {"role": "user", "content": "list the files"}
    call = messages[2]["tool_calls"][0]
    assert call["id"] == "call_1" and call["function"]["arguments"] == '{"command":["ls"]}'
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_1"
    assert messages[4]["content"] == "Two files: a.py and b.py."
    reasoning = doc["transcript"][2]["source"]["reasoning"][0]
    assert reasoning["encrypted_content"] == "gAAAAB..."  # kept as data, never sent
    assert doc["transcript"][2]["model"] == "gpt-5-codex"
    assert doc["transcript"][4]["usage"] == {"prompt_tokens": 950, "completion_tokens": 12}
    [compaction] = doc["compactions"]
    assert compaction["summary"] == "Summary: the user listed files."
    assert compaction["before_tokens"] == 962
    assert [m["content"] for m in doc["messages"]] == [
        "Summary: the user listed files.",
        "thanks",
        "You're welcome.",
    ]
    assert doc["imported"]["id"] == CODEX_SESSION and doc["imported"]["cwd"] == "/home/dev/proj"
    assert cli("import", "--from", "codex").stdout.split("\t")[1] == "unchanged"


def test_a_forked_codex_session_names_its_parent(cli, tmp_path):
    codex_session(tmp_path / "a.jsonl")
    fork = codex_session(tmp_path / "b.jsonl", session="0199a213-81c0-7800-8aa1-000000000002")
    meta = json.loads(fork[0])
    meta["payload"]["forked_from_id"] = CODEX_SESSION
    (tmp_path / "b.jsonl").write_text("\n".join([json.dumps(meta), *fork[1:]]) + "\n")
    result = cli("import", "--from", "codex", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    (parent, *_), (child, *_) = rows(result)
    assert {r["id"]: r["parent_id"] for r in cli.json("list")}[child] == parent


def test_import_resume_export_round_trip(server, cli, claude_file, tmp_path, home):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    imported = export(cli, SID)
    ws = tmp_path / "here"
    ws.mkdir()
    server.reply(content=None, tool_calls=[{"name": "Bash", "arguments": {"command": "ls"}}])
    server.reply(content="Done here.")
    done = run_gitsessions(*exec_args(server, ws), "--resume", SID[:8], "go on", "--json")
    assert done.returncode == 0, done.stderr
    assert "imported from claude-code: its tools Bash, Read are not this agent's" in done.stderr
    sent = server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and str(ws) in sent[0]["content"]  # our own prompt
    assert "now run the whole suite" in json.dumps(sent) and "go on" in sent[-1]["content"]
    refused = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "'Bash' is a tool of claude-code" in refused["content"]
    assert "Use run_shell (with its own arguments)" in refused["content"]
    doc = export(cli, SID)
    assert doc["transcript"][:10] == imported["transcript"]  # the import, then this turn
    contents = [r["message"].get("content") for r in doc["transcript"][10:]]
    assert contents[0] == "go on" and contents[-1] == "Done here."
    assert doc["imported"]["from"] == "claude-code"
    # continued here: the source's new lines are reported, not merged
    claude_file.prompt("more from claude")
    claude_file.reply("msg_09", [{"type": "text", "text": "ok"}], stop="end_turn")
    claude_file.write()
    result = cli("import", "--from", "claude-code", str(path), code=1)
    assert rows(result)[0][1] == "continued"


def test_the_default_folder_is_claude_config_dir_or_home(cli, claude_file, tmp_path, monkeypatch):
    claude_file.write()
    result = cli("import", "--from", "claude-code", code=1)
    assert "is not a folder" in result.stderr
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    assert rows(cli("import", "--from", "claude-code"))[0][1] == "created"
    result = cli("import", "--from", "nowhere", code=2)
    assert "unknown source 'nowhere'" in result.stderr
    assert "--new-id" in cli("import", "--from", "codex", "--new-id", code=2).stderr


def test_secrets_in_an_import_are_redacted_messages_and_reasoning_alike(cli, tmp_path, home):
    secret = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("what is in .env?")
    f.reply(
        "msg_s",
        [
            {"type": "thinking", "thinking": f"the token is {secret}", "signature": "s"},
            {"type": "tool_use", "id": "toolu_s", "name": "Read", "input": {"file_path": ".env"}},
        ],
        stop="tool_use",
    )
    f.results(("toolu_s", f"GITHUB_TOKEN={secret}"))
    f.reply("msg_t", [{"type": "text", "text": "It holds a GitHub token."}], stop="end_turn")
    cli("import", "--from", "claude-code", str(f.write()))
    doc = cli("export", claude_code.derived_id(f.session)).stdout
    assert secret not in doc and "[REDACTED:" in doc
    records = json.loads(doc)["transcript"]
    assert "[REDACTED:" in records[1]["source"]["reasoning"][0]["thinking"]
    assert "[REDACTED:" in records[2]["message"]["content"]
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    where = [f.get("where") for a in audit if a["operation"] == "redact" for f in a["findings"]]
    assert "source" in where and any(w != "source" for w in where)


def test_a_subagent_file_is_a_fork_of_its_main_session(cli, claude_file):
    main = claude_file.write()
    agent = ClaudeFile(main.parent / CLAUDE_SESSION / "subagents" / "agent-a1b2c3.jsonl")
    agent.prompt("search for the parser", isSidechain=True, agentId="a1b2c3")
    agent.reply("msg_sub", [{"type": "text", "text": "Found it in parser.py."}], stop="end_turn")
    agent.lines = [
        line.replace('"isSidechain": false', '"isSidechain": true') for line in agent.lines
    ]
    agent.write()
    result = cli("import", "--from", "claude-code", str(main.parent))
    (main_id, *_), (sub_id, status, count, path) = rows(result)
    assert main_id == SID and (status, count) == ("created", "2")
    assert path.endswith("agent-a1b2c3.jsonl")
    info = cli.json("info", sub_id)
    assert info["parent_id"] == SID and info["imported"]["id"] == f"{CLAUDE_SESSION}/a1b2c3"
    assert cli.json("info", SID)["imported"]["id"] == CLAUDE_SESSION


def test_side_chains_of_a_main_file_become_forks_of_its_session(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    top = f.prompt("use a subagent")
    f.prompt("subagent task", isSidechain=True, parentUuid=None)
    f.reply("msg_side", [{"type": "text", "text": "side answer"}], stop="end_turn")
    f.lines[-1] = f.lines[-1].replace('"isSidechain": false', '"isSidechain": true')
    f.last = top
    f.reply("msg_main", [{"type": "text", "text": "main answer"}], stop="end_turn")
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    main, side = json.loads(result.stdout)
    assert (main["messages"], side["messages"]) == (2, 2)
    assert main["ignored"] == {} and side["source_id"].startswith(f"{CLAUDE_SESSION}/side/")
    doc = export(cli, main["session"])
    assert [r["message"]["content"] for r in doc["transcript"]] == ["use a subagent", "main answer"]
    fork = export(cli, side["session"])
    assert [r["message"]["content"] for r in fork["transcript"]] == ["subagent task", "side answer"]
    assert fork["parent_id"] == main["session"] and fork["fork_point"] is None
    assert fork["imported"]["side_chain_of"] == CLAUDE_SESSION
    head = cli.json("info", side["session"])["head"]
    f.reply("msg_more", [{"type": "text", "text": "and more"}], stop="end_turn")
    again = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    # read on from the last import's end: no side-chain line there, its fork unchanged
    assert [(o["status"], o["messages"]) for o in again] == [("appended", 1)]
    assert again[0]["read_from_line"] == 5
    assert cli.json("info", side["session"])["head"] == head


def test_a_codex_rollback_takes_the_context_back_and_keeps_the_transcript(cli, tmp_path):
    path = tmp_path / "r.jsonl"
    lines = codex_session(path)[:10]  # through the first turn's reply
    more = [
        json.dumps({"timestamp": "2026-10-02T10:01:00.000Z", "type": "response_item",
                    "payload": {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "delete it all"}]}}),
        json.dumps({"timestamp": "2026-10-02T10:01:01.000Z", "type": "event_msg",
                    "payload": {"type": "thread_rolled_back", "num_turns": 1}}),
    ]  # fmt: skip
    path.write_text("".join(x + "\n" for x in [*lines, *more]))
    [[sid, status, count, _]] = rows(cli("import", "--from", "codex", str(path)))
    assert (status, count) == ("created", "6")
    doc = export(cli, sid)
    assert doc["transcript"][-1]["message"]["content"] == "delete it all"
    assert "delete it all" not in json.dumps(doc["messages"])
    assert doc["messages"][-1]["content"] == "Two files: a.py and b.py."


def test_an_older_codex_rollout_of_bare_items_imports_too(cli, tmp_path):
    """Rollouts before the {timestamp, type, payload} lines: the meta object first, then
    bare response items and `record_type: state` lines."""
    path = tmp_path / "rollout-2025-05-01T10-00-00-old.jsonl"
    lines = [
        {"id": "5b1e0c4a-0000-4000-8000-000000000009", "timestamp": "2025-05-01T10:00:00.000Z",
         "instructions": "old instructions", "git": {"branch": "dev"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1",
         "output": {"content": "no", "success": False}},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hello."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bye"}]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = cli("import", "--from", "codex", str(path))
    [[sid, status, count, _]] = rows(result)
    assert (status, count) == ("created", "6") and "unknown" not in result.stderr
    doc = export(cli, sid)
    assert [r["message"].get("content") for r in doc["transcript"]] == [
        "old instructions", "hi", None, "error: no", "Hello.", "bye"
    ]  # fmt: skip
    assert doc["workspace"]["branch"] == "dev"
    assert doc["imported"]["id"] == "5b1e0c4a-0000-4000-8000-000000000009"


def test_claude_code_hooks_mirror_a_session_as_it_runs(cli, claude_file, tmp_path, monkeypatch):
    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    settings = config / "settings.json"
    config.mkdir(exist_ok=True)
    mine = {
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
    }
    settings.write_text(json.dumps(mine))
    assert (
        "installed for Stop, PreCompact, SessionEnd"
        in cli("hooks", "install", "--claude-code").stderr
    )
    assert "already installed" in cli("hooks", "install", "--claude-code").stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["Stop"][0] == mine["hooks"]["Stop"][0]
    command = data["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    # run it as Claude Code does: a shell command, the event's JSON on stdin
    path = claude_file.write()
    event = {"session_id": CLAUDE_SESSION, "transcript_path": str(path), "hook_event_name": "Stop"}
    done = subprocess.run(
        command, shell=True, input=json.dumps(event), capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert cli.json("info", SID)["messages"] == 10
    bad = subprocess.run(command, shell=True, input="{oops", capture_output=True, text=True)
    assert bad.returncode == 0 and "import hook: the hook named no session file" in bad.stderr
    cli("hooks", "uninstall", "--claude-code")
    assert json.loads(settings.read_text()) == mine


def test_codex_notify_mirrors_a_session_and_never_replaces_the_users(cli, tmp_path, monkeypatch):
    root = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(root))
    root.mkdir()
    config = root / "config.toml"
    config.write_text('model = "gpt-5"\n\n[profiles.x]\nmodel = "o3"\n')
    assert "installed as notify" in cli("hooks", "install", "--codex").stderr
    text = config.read_text()
    assert text.endswith('model = "gpt-5"\n\n[profiles.x]\nmodel = "o3"\n')
    argv = tomllib.loads(text)["notify"]
    codex_session(
        root
        / "sessions"
        / "2026"
        / "10"
        / "02"
        / f"rollout-2026-10-02T10-00-00-{CODEX_SESSION}.jsonl"
    )
    event = {"type": "agent-turn-complete", "thread-id": CODEX_SESSION, "turn-id": "1"}
    done = subprocess.run([*argv, json.dumps(event)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [r["imported_from"] for r in cli.json("list")] == ["codex"]
    cli("hooks", "uninstall", "--codex")
    assert config.read_text() == 'model = "gpt-5"\n\n[profiles.x]\nmodel = "o3"\n'
    config.write_text('notify = ["my-notifier"]\n')
    assert "already sets notify" in cli("hooks", "install", "--codex", code=1).stderr
    assert config.read_text() == 'notify = ["my-notifier"]\n'


def test_a_session_in_use_is_skipped_with_a_warning_and_the_rest_imported(
    cli, claude_file, tmp_path, home
):
    path = claude_file.write()
    cli("import", "--from", "claude-code", str(path))
    claude_file.prompt("more")
    claude_file.reply("msg_m", [{"type": "text", "text": "ok"}], stop="end_turn")
    claude_file.write()
    other = ClaudeFile(tmp_path / "other.jsonl", session="11111111-2222-4333-8444-555555555555")
    other.prompt("hello")
    other.write()
    with Lease(home, SID):  # a resumed chat of it, say
        result = cli("import", "--from", "claude-code", str(path), str(other.path), code=1)
    assert "is in use by another gitsessions process" in result.stderr
    assert [r[1] for r in rows(result)] == ["created"]
    assert "read 2 claude-code session files: 1 session imported; 1 failed" in result.stderr
    assert rows(cli("import", "--from", "claude-code", str(path)))[0][1:3] == ["appended", "2"]


def test_list_names_where_an_imported_session_came_from():
    from gitsessions.cli.listing import list_row, origin

    header = {"id": SID, "imported": {"from": "codex"}, "parent_id": "ab" * 16}
    assert origin(list_row(header)) == "fork of abababab, imported from codex"
    assert origin(list_row({"id": SID})) == ""


def test_a_long_source_is_written_in_batches_of_part_records(cli, tmp_path):
    from gitsessions.services.imports.mirror import PART

    f = ClaudeFile(tmp_path / "long.jsonl")
    for n in range(PART // 2 + 10):
        f.prompt(f"question {n}")
        f.reply(f"msg_{n}", [{"type": "text", "text": f"answer {n}"}], stop="end_turn")
    result = cli("import", "--from", "claude-code", str(f.write()))
    assert rows(result)[0][1:3] == ["created", str(PART + 20)]
    sid = claude_code.derived_id(f.session)
    subjects = [line.split("\t")[4] for line in cli("log", sid, "--steps").stdout.splitlines()]
    assert subjects == [
        "import: 20 messages from claude-code",
        f"import: {CLAUDE_SESSION} (from claude-code)",
    ]
    doc = export(cli, sid)
    assert len(doc["transcript"]) == len(doc["messages"]) == PART + 20
    assert doc["messages"][-1]["content"] == f"answer {PART // 2 + 9}"


def test_a_line_longer_than_the_limit_is_damage_and_the_next_line_still_read(
    cli, tmp_path, monkeypatch
):
    from gitsessions.services.imports import lines

    monkeypatch.setattr(lines, "MAX_LINE", 4096)
    f = ClaudeFile(tmp_path / "big.jsonl")
    f.prompt("x" * 10_000)
    f.prompt("small")
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    [outcome] = json.loads(result.stdout)
    [damage] = outcome["damaged"]
    assert damage["line"] == 1 and damage["reason"].startswith("longer than")
    assert outcome["lines"] == 2 and outcome["messages"] == 1  # what the chain still reaches
    # its parent was the damaged line, the file's first: it is a root, nothing is joined
    assert (outcome["ignored"], outcome["joined"]) == ({}, 0)
    assert export(cli, outcome["session"])["messages"] == [{"role": "user", "content": "small"}]


def test_chat_resumes_an_imported_session_in_this_workspace(server, cli, claude_file, tmp_path):
    from tests.test_chat import leave, say, spawn

    cli("import", "--from", "claude-code", str(claude_file.write()))
    ws = tmp_path / "here"
    ws.mkdir()
    server.reply(content="Resumed here.")
    child = spawn(server.base_url, ws, "--resume", SID[:8])
    before = str(child.before)
    shown = say(child, "go on")
    assert "Resumed here." in shown
    leave(child)
    said = " ".join((before + shown).split())  # the note: before the prompt or with the turn
    assert "imported from claude-code: its tools Bash, Read are not this agent's" in said
    sent = server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and str(ws) in sent[0]["content"]
    assert "All 120 tests pass." in json.dumps(sent) and "go on" in sent[-1]["content"]
    assert export(cli, SID)["transcript"][-1]["message"]["content"] == "Resumed here."


@pytest.mark.parametrize("make", ["claude", "codex"])
def test_importing_line_by_line_gives_what_one_import_of_the_whole_file_gives(
    cli, claude_file, tmp_path, make, monkeypatch
):
    """The assembler never takes back what it emitted, and a re-import reads on from
    where the last stopped: the hook's import after every line the source writes (the
    file still being written: what may grow held back) ends where importing the
    finished file does."""
    codex_home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    if make == "claude":
        lines, fmt = list(claude_file.lines), "claude-code"
        path = tmp_path / "growing.jsonl"
        payload = json.dumps({"hook_event_name": "Stop", "transcript_path": str(path)})
    else:
        lines, fmt = codex_session(tmp_path / "whole.jsonl"), "codex"
        path = codex_home / "sessions" / f"rollout-2026-10-02T10-00-00-{CODEX_SESSION}.jsonl"
        path.parent.mkdir(parents=True)
        payload = json.dumps({"thread-id": CODEX_SESSION})
    for n in range(1, len(lines) + 1):
        path.write_text("".join(x + "\n" for x in lines[:n]))
        hooked = cli("import", "--from", fmt, "--hook", "--payload", payload)
        assert hooked.stderr == ""
    [sid] = [r["id"] for r in cli.json("list")]
    growing = export(cli, sid)
    assert growing["imported"]["resume"]["line"] > 1  # each import read on from there
    other = tmp_path / "other-home"
    cli("--home", str(other), "import", "--from", fmt, str(path))
    whole = json.loads(cli("--home", str(other), "export", sid).stdout)
    for key in ("transcript", "messages", "compactions", "usage", "title", "summary"):
        assert growing[key] == whole[key], key
    assert {k: v for k, v in growing["imported"].items() if k != "resume"} == {
        k: v for k, v in whole["imported"].items() if k != "resume"
    }


def test_an_older_subagent_file_beside_its_session_is_imported_after_it(cli, tmp_path):
    folder = tmp_path / "project"
    main = ClaudeFile(folder / "f0c8a52-main.jsonl")  # sorts after "agent-..."
    main.prompt("delegate it")
    main.write()
    agent = ClaudeFile(folder / "agent-77aa.jsonl")
    agent.prompt("the delegated task", isSidechain=True, agentId="77aa")
    agent.write()
    (first, *_), (second, *_) = rows(cli("import", "--from", "claude-code", str(folder)))
    assert first == SID
    assert cli.json("info", second)["parent_id"] == SID
