"""Issue 30: a finished source file is imported whole (finished decided from evidence,
not from its last line's shape), every result reaches its call by id whatever lines
stand between, and the report says what had no result."""

import json
import os
import time
from pathlib import Path
from typing import Any

from gitsessions.services.imports import claude_code, codex
from gitsessions.services.imports.assemble import NO_RESULT, ORPHAN, REASONING_ONLY
from tests.import_fixtures import CODEX_SESSION, ClaudeFile

STALE = 120  # seconds: older than `finished.QUIET`


def export(cli: Any, sid: str) -> dict[str, Any]:
    return json.loads(cli("export", sid).stdout)


def outcome(cli: Any, fmt: str, path: Path) -> dict[str, Any]:
    [one] = json.loads(cli("import", "--from", fmt, str(path), "--json").stdout)
    return one  # type: ignore[no-any-return]


def unterminated(f: ClaudeFile) -> ClaudeFile:
    """A Claude Code 1.0.x session: every assistant line's stop_reason null, the file
    ending on a reply with no later line."""
    f.prompt("what does main.py do?")
    f.reply("msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}])
    f.results(("toolu_1", "print('hi')"))
    f.reply("msg_2", [{"type": "text", "text": "It prints hi."}])
    return f


def test_a_finished_file_ending_on_a_reply_with_no_stop_reason_is_imported_whole(cli, tmp_path):
    path = unterminated(ClaudeFile(tmp_path / "s.jsonl")).write()
    result = cli("import", "--from", "claude-code", str(path), "--json")
    [one] = json.loads(result.stdout)
    assert one["held_from_line"] is None and "held back" not in result.stderr
    contents = [m.get("content") for m in export(cli, one["session"])["messages"]]
    assert contents == ["what does main.py do?", None, "print('hi')", "It prints hi."]


def test_a_hook_run_holds_back_what_may_grow_until_the_file_is_quiet_or_ended(cli, tmp_path):
    path = unterminated(ClaudeFile(tmp_path / "s.jsonl")).write()
    sid = claude_code.derived_id(ClaudeFile(path).session)

    def hook(event: str) -> None:
        payload = json.dumps({"hook_event_name": event, "transcript_path": str(path)})
        assert cli("import", "--from", "claude-code", "--hook", "--payload", payload).stderr == ""

    hook("Stop")  # written a moment ago, by an agent still running: the reply may grow
    assert len(export(cli, sid)["messages"]) == 3
    old = time.time() - STALE
    os.utime(path, (old, old))  # unchanged for two minutes: finished
    hook("Stop")
    assert export(cli, sid)["messages"][-1]["content"] == "It prints hi."
    other = tmp_path / "other"
    path.touch()  # written just now, and the hook says the session ended
    payload = json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(path)})
    cli("--home", str(other), "import", "--from", "claude-code", "--hook", "--payload", payload)
    done = json.loads(cli("--home", str(other), "export", sid).stdout)
    assert done["messages"][-1]["content"] == "It prints hi."  # the session ended


def test_a_call_a_finished_file_never_answers_gets_a_stub_and_is_counted(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("run it")
    f.reply("msg_1", [{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}}])
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    [one] = json.loads(result.stdout)
    assert one["stubbed"] == 1 and one["held_from_line"] is None
    assert "1 tool call without a result in the source" in result.stderr
    assert export(cli, one["session"])["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "toolu_9",
        "content": NO_RESULT,
    }


def test_a_file_that_grows_after_a_whole_import_appends_only_what_is_new(cli, tmp_path):
    f = unterminated(ClaudeFile(tmp_path / "s.jsonl"))
    path = f.write()
    first = outcome(cli, "claude-code", path)
    f.prompt("and test_main.py?")
    f.reply("msg_3", [{"type": "text", "text": "It tests that."}])
    f.write()
    again = outcome(cli, "claude-code", path)
    assert (again["status"], again["messages"], again["read_from_line"]) == ("appended", 2, 5)
    grown = export(cli, first["session"])
    fresh = tmp_path / "fresh"
    cli("--home", str(fresh), "import", "--from", "claude-code", str(path))
    whole = json.loads(cli("--home", str(fresh), "export", first["session"]).stdout)
    assert grown["transcript"] == whole["transcript"]
    texts = [m.get("content") for m in grown["messages"]]
    assert texts.count("It prints hi.") == 1 and texts[-1] == "It tests that."


def test_a_claude_meta_line_between_a_call_and_its_result_keeps_the_result(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("use the skill")
    f.reply(
        "msg_1",
        [{"type": "tool_use", "id": "toolu_s", "name": "Skill", "input": {"skill": "x"}}],
        stop="tool_use",
    )
    f.prompt("Base directory for this skill: /skills/x", isMeta=True)
    f.results(("toolu_s", "Launching skill: x"))
    f.reply("msg_2", [{"type": "text", "text": "Done."}], stop="end_turn")
    one = outcome(cli, "claude-code", f.write())
    assert (one["stubbed"], one["orphans"]) == (0, 0)
    messages = export(cli, one["session"])["messages"]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "toolu_s",
        "content": "Launching skill: x",
    }
    assert messages[3]["content"] == "Base directory for this skill: /skills/x"


class Rollout:
    """A Codex rollout (0.116+ shape) built a line at a time."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines, self.clock = path, [], 0
        self.add("session_meta", {"id": CODEX_SESSION, "cwd": "/p", "cli_version": "0.117.0"})

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.clock += 1
        stamp = f"2026-10-02T10:00:{self.clock % 60:02d}.000Z"
        self.lines.append(json.dumps({"timestamp": stamp, "type": kind, "payload": payload}))

    def message(self, role: str, text: str) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        self.add(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
        )

    def call(self, call_id: str, name: str = "shell_command", arguments: str = "{}") -> None:
        payload = {"type": "function_call", "name": name, "arguments": arguments}
        self.add("response_item", {**payload, "call_id": call_id})

    def output(self, call_id: str, text: str) -> None:
        self.add(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": text}
        )

    def event(self, kind: str, **fields: Any) -> None:
        self.add("event_msg", {"type": kind, **fields})

    def tokens(self) -> None:
        usage = {"input_tokens": 10, "output_tokens": 2}
        self.event("token_count", info={"last_token_usage": usage})

    def write(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(x + "\n" for x in self.lines), encoding="utf-8")
        return self.path


def test_a_codex_output_reaches_its_call_across_developer_messages_and_events(cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.event("task_started", turn_id="t1")
    r.message("user", "build it")
    r.call("call_a", arguments='{"command":"make"}')
    r.call("call_b", arguments='{"command":"ls"}')
    r.tokens()
    r.event("exec_command_end", call_id="call_a", exit_code=0)
    r.message("developer", "Approved command prefix saved: make")
    r.output("call_a", "built")
    r.tokens()
    r.output("call_b", "a.c")
    r.message("assistant", "Built.")
    r.tokens()
    r.event("task_complete", turn_id="t1", last_agent_message="Built.")
    one = outcome(cli, "codex", r.write())
    assert (one["stubbed"], one["orphans"], one["held_from_line"]) == (0, 0, None)
    messages = export(cli, one["session"])["messages"]
    assert [(m["role"], m.get("content")) for m in messages[1:]] == [
        ("assistant", None),
        ("tool", "built"),
        ("tool", "a.c"),
        ("system", "Approved command prefix saved: make"),
        ("assistant", "Built."),
    ]


def test_codex_task_complete_ends_the_turn_in_a_hook_run(cli, tmp_path, monkeypatch):
    home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(home))
    name = f"rollout-2026-10-02T10-00-00-{CODEX_SESSION}.jsonl"
    r = Rollout(home / "sessions" / name)
    r.message("user", "hello")
    r.message("assistant", "Hi.")  # no token_count after it
    r.event("task_complete", turn_id="t1")
    r.write()
    payload = json.dumps({"thread-id": CODEX_SESSION})  # not the turn's end itself
    cli("import", "--from", "codex", "--hook", "--payload", payload)
    sid = codex.derived_id(CODEX_SESSION)
    assert export(cli, sid)["messages"][-1]["content"] == "Hi."


def test_a_codex_web_search_is_a_visible_note(cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "what is new in python?")
    action = {"type": "search", "query": "python 3.14 release notes"}
    r.add("response_item", {"type": "web_search_call", "status": "completed", "action": action})
    r.message("assistant", "Free threading.")
    one = outcome(cli, "codex", r.write())
    [reply] = [m for m in export(cli, one["session"])["messages"] if m["role"] == "assistant"]
    assert reply["content"] == "[web search: python 3.14 release notes]\n\nFree threading."


def test_a_file_of_the_other_format_names_the_right_from(cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "hello")
    claude = unterminated(ClaudeFile(tmp_path / "c.jsonl")).write()
    result = cli("import", "--from", "claude-code", str(r.write()), code=1)
    assert "is a codex session file: import it with --from codex" in result.stderr
    assert result.stdout == ""
    result = cli("import", "--from", "codex", str(claude), code=1)
    assert "is a claude-code session file: import it with --from claude-code" in result.stderr


def test_a_line_too_big_once_decoded_is_skipped_by_number_and_the_rest_imported(
    cli, tmp_path, monkeypatch
):
    from gitsessions.services.imports import lines

    monkeypatch.setattr(lines, "MAX_DECODED", 16 * 1024)  # the bench measures 128 MiB's
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("hello")
    f.add({"type": "file-history-snapshot", "snapshot": {"x": [{}] * 1000}})  # ~4 KB
    f.reply("msg_1", [{"type": "text", "text": "Hi."}], stop="end_turn")
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    [one] = json.loads(result.stdout)
    [damage] = one["damaged"]
    assert (
        damage["line"] == 2
        and damage["reason"] == "about 144 KiB once decoded, over the 16 KiB limit"
    )
    assert "warning: " in result.stderr and "line 2 skipped" in result.stderr
    assert [m["content"] for m in export(cli, one["session"])["messages"]] == ["hello", "Hi."]


def test_a_file_that_grows_after_its_end_was_settled_keeps_what_was_imported(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("run it")
    f.reply("msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}])
    f.reply("msg_2", [{"type": "thinking", "thinking": "waiting", "signature": "s"}])
    path = f.write()
    first = outcome(cli, "claude-code", path)  # finished: the call stubbed, the reasoning kept
    assert first["stubbed"] == 1
    f.results(("toolu_1", "late"))  # the file grew after all (a resumed session)
    f.prompt("again")
    f.reply("msg_3", [{"type": "text", "text": "Done."}], stop="end_turn")
    f.write()
    again = outcome(cli, "claude-code", path)  # read on from the end of the first import
    assert (again["status"], again["read_from_line"], again["orphans"]) == ("appended", 4, 1)
    transcript = export(cli, first["session"])["transcript"]
    contents = [r["message"].get("content") for r in transcript]
    late = f"{ORPHAN} toolu_1]\nlate"  # its call was settled without it: kept as a note
    assert contents == ["run it", None, NO_RESULT, REASONING_ONLY, late, "again", "Done."]
    assert transcript[3]["source"]["reasoning"][0]["thinking"] == "waiting"


def test_a_codex_message_whose_role_is_not_a_string_is_counted_not_a_crash(tmp_path):
    """Found by mypy: the role was looked up in a dict as it came, so a list there raised
    TypeError (unhashable) out of the import."""
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "hello")
    r.add("response_item", {"type": "message", "role": ["user"], "content": "x"})
    r.add("response_item", {"type": "message", "role": {"a": 1}, "content": "y"})
    r.message("assistant", "hi")
    read = codex.source(r.write(), lambda _sid: False)
    assert [type(item).__name__ for item in read.items()] == ["Prompt", "Reply"]
    assert sorted(read.tally.ignored) == ["messages of role ['user']", "messages of role {'a': 1}"]
