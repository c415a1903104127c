"""Issue 30: Claude Code's chain as real files hold it: each parallel call's result on
a line of its own whose parent is that call's line (a branch of one line, not an
abandoned branch), and a file that starts in the middle of a session."""

import json
from typing import Any

from gitsessions.services.imports import claude_code
from gitsessions.services.imports.assemble import NO_PROMPT, ORPHAN
from tests.fake_openai import alternation_error
from tests.import_fixtures import ClaudeFile


def export(cli: Any, sid: str) -> dict[str, Any]:
    return json.loads(cli("export", sid).stdout)


def tool(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": call_id}}


def test_parallel_results_whose_parents_are_their_calls_reach_them(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("read three files")
    a = f.reply("msg_1", [tool("toolu_a")])
    b = f.reply("msg_1", [tool("toolu_b")])
    c = f.reply("msg_1", [tool("toolu_c")], stop="tool_use")
    f.results(("toolu_b", "B"), parentUuid=b)  # as 2.1.x writes them: each under its call
    f.results(("toolu_a", "A"), parentUuid=a)
    f.results(("toolu_c", "C"), parentUuid=c)
    f.reply("msg_2", [{"type": "text", "text": "Read all three."}], stop="end_turn")
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    [one] = json.loads(result.stdout)
    assert (one["stubbed"], one["orphans"], one["ignored"]) == (0, 0, {})
    messages = export(cli, one["session"])["messages"]
    assert [(m["role"], m.get("content")) for m in messages[2:5]] == [
        ("tool", "A"),
        ("tool", "B"),
        ("tool", "C"),
    ]
    assert messages[-1]["content"] == "Read all three."


def test_a_file_ending_on_parallel_results_keeps_every_call(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("read two files")
    a = f.reply("msg_1", [tool("toolu_a")])
    b = f.reply("msg_1", [tool("toolu_b")], stop="tool_use")
    f.results(("toolu_b", "B"), parentUuid=b)
    f.results(("toolu_a", "A"), parentUuid=a)  # the newest line: its parent is the first call
    [one] = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    assert (one["stubbed"], one["orphans"]) == (0, 0)
    [reply] = [m for m in export(cli, one["session"])["messages"] if m.get("tool_calls")]
    assert [c["id"] for c in reply["tool_calls"]] == ["toolu_a", "toolu_b"]


def test_a_file_that_starts_in_the_middle_of_a_session_is_a_valid_context(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.last = "a-line-not-in-this-file"
    f.results(("toolu_0", "from before"))
    f.reply("msg_1", [{"type": "text", "text": "Carrying on."}], stop="end_turn")
    f.prompt("thanks")
    [one] = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    assert one["orphans"] == 1
    messages = export(cli, claude_code.derived_id(f.session))["messages"]
    assert messages[:2] == [  # the result whose call came before the file, kept as a note
        {"role": "user", "content": f"{ORPHAN} toolu_0]\nfrom before"},
        {"role": "assistant", "content": "Carrying on."},
    ]
    assert alternation_error(messages) is None


def test_a_reply_that_comes_first_in_a_file_follows_a_note_saying_so(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.last = "a-line-not-in-this-file"
    f.reply("msg_1", [{"type": "text", "text": "Carrying on."}], stop="end_turn")
    [one] = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    messages = export(cli, one["session"])["messages"]
    assert [m["content"] for m in messages] == [NO_PROMPT, "Carrying on."]


def test_a_side_chain_with_tool_calls_in_a_main_file_is_one_session(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("delegate the search")
    task = f.reply("msg_1", [tool("toolu_task")], stop="tool_use")
    f.prompt("find the bug", parentUuid=None, isSidechain=True)  # 1.0.x: the subagent inline
    for n in range(3):
        f.reply(f"msg_s{n}", [tool(f"toolu_s{n}")], stop="tool_use", isSidechain=True)
        f.results((f"toolu_s{n}", f"found {n}"), isSidechain=True)
    f.reply("msg_s9", [{"type": "text", "text": "Found it."}], stop="end_turn", isSidechain=True)
    f.results(("toolu_task", "Found it."), parentUuid=task)
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    outcomes = json.loads(result.stdout)
    assert [o["status"] for o in outcomes] == ["created", "created"]
    side = export(cli, outcomes[1]["session"])["messages"]
    assert side[0]["content"] == "find the bug" and side[-1]["content"] == "Found it."


def test_a_1_0_file_of_a_resumed_session_is_a_session_of_its_own(cli, tmp_path):
    first, later = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    a = ClaudeFile(tmp_path / f"{first}.jsonl", session=first)
    a.prompt("start")
    a.reply("msg_1", [{"type": "text", "text": "Started."}])
    b = ClaudeFile(tmp_path / f"{later}.jsonl", session=first)  # the lines it resumed from
    b.lines = list(a.lines)
    b.last = a.last
    b.session = later
    b.prompt("go on")
    b.reply("msg_2", [{"type": "text", "text": "Went on."}])
    result = cli("import", "--from", "claude-code", str(b.write()), str(a.write()), "--json")
    outcomes = json.loads(result.stdout)
    assert [o["status"] for o in outcomes] == ["created", "created"]
    assert [o["source_id"] for o in outcomes] == [later, first]


def test_codex_session_index_beside_the_rollouts_is_not_a_session(cli, tmp_path):
    index = tmp_path / "session_index.jsonl"
    thread = {"id": "019d47a1-9e9c-7171-b063-752c5657820e", "thread_name": "Hunt", "updated_at": 1}
    index.write_text(json.dumps(thread) + "\n")
    result = cli("import", "--from", "codex", str(index), "--json")
    assert [o["status"] for o in json.loads(result.stdout)] == ["empty"]


def test_a_compaction_whose_logical_parent_is_not_in_the_file_keeps_what_came_before(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("read the config")
    f.reply("msg_1", [tool("toolu_a")], stop="tool_use")
    f.results(("toolu_a", "port = 8080"))
    f.reply("msg_2", [{"type": "text", "text": "It listens on 8080."}], stop="end_turn")
    f.chained(
        "system",
        None,
        parentUuid=None,
        subtype="compact_boundary",
        logicalParentUuid="a-line-never-written",  # as 2.1.17 and 2.1.42 left some
        compactMetadata={"trigger": "auto", "preTokens": 150_000},
    )
    f.chained("user", {"role": "user", "content": "Summary: the port."}, isCompactSummary=True)
    f.prompt("and the host?")
    f.reply("msg_3", [{"type": "text", "text": "localhost."}], stop="end_turn")
    result = cli("import", "--from", "claude-code", str(f.write()), "--json")
    [one] = json.loads(result.stdout)
    assert (one["joined"], one["compactions"], one["ignored"]) == (1, 1, {})
    assert "1 line whose parent is not in the file joined to the line before it" in result.stderr
    transcript = export(cli, one["session"])["transcript"]
    contents = [record["message"].get("content") for record in transcript]
    assert contents[:4] == ["read the config", None, "port = 8080", "It listens on 8080."]
    assert contents[-2:] == ["and the host?", "localhost."]


def test_parallel_results_out_of_order_with_the_next_turn_under_the_first_call(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("read three files")
    a = f.reply("msg_1", [tool("toolu_a")])
    b = f.reply("msg_1", [tool("toolu_b")])
    c = f.reply("msg_1", [tool("toolu_c")], stop="tool_use")
    f.results(("toolu_c", "C"), parentUuid=c)
    f.results(("toolu_b", "B"), parentUuid=b)
    f.results(("toolu_a", "A"), parentUuid=a)  # the last written: the next turn goes on here
    f.reply("msg_2", [{"type": "text", "text": "Read all three."}], stop="end_turn")
    f.prompt("thanks")
    [one] = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    assert (one["stubbed"], one["orphans"], one["joined"], one["ignored"]) == (0, 0, 0, {})
    messages = export(cli, one["session"])["messages"]
    [reply] = [m for m in messages if m.get("tool_calls")]
    assert [c["id"] for c in reply["tool_calls"]] == ["toolu_a", "toolu_b", "toolu_c"]
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["A", "B", "C"]
    assert [m["content"] for m in messages[-2:]] == ["Read all three.", "thanks"]
    assert alternation_error(messages) is None


def test_a_branch_from_a_line_hanging_off_the_main_path_is_a_fork_imported_once(cli, tmp_path):
    """Claude Code hangs lines with nothing to import (`turn_duration`, hook progress)
    off a reply, at times after the main path went on from that reply; a prompt typed
    under one after a rewind branches there."""
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("list the files")
    reply = f.reply("msg_1", [{"type": "text", "text": "Three files."}], stop="end_turn")
    f.prompt("open the last")  # the main path goes on from the reply
    went_on = f.reply("msg_3", [{"type": "text", "text": "It holds the config."}])
    f.last = reply
    f.chained("system", None, subtype="turn_duration", durationMs=900)  # hangs off the reply
    f.prompt("open the first")  # the branch: under the turn_duration line
    empty = f.reply("msg_2", [{"type": "text", "text": "It is empty."}], stop="end_turn")
    f.last = went_on
    f.prompt("and the second?")  # the main path, written last
    f.reply("msg_4", [{"type": "text", "text": "Also empty."}], stop="end_turn")
    path = f.write()
    result = cli("import", "--from", "claude-code", str(path), "--json")
    main, fork = json.loads(result.stdout)
    assert (fork["status"], fork["fork_of"]) == ("created", main["session"])
    doc = export(cli, fork["session"])
    assert doc["title"] == "open the first"  # its first prompt past the fork point
    contents = [m["content"] for m in doc["messages"]]
    assert contents == ["list the files", "Three files.", "open the first", "It is empty."]
    assert export(cli, main["session"])["messages"][-3]["content"] == "It holds the config."
    # a summary of the branch's reply: the file is read whole again, the fork assembled
    # from the file's start this time, and it must begin with what was imported
    f.add({"type": "summary", "summary": "The first file", "leafUuid": empty})
    again = json.loads(cli("import", "--from", "claude-code", str(f.write()), "--json").stdout)
    assert [(o["session"], o["status"], o["messages"]) for o in again] == [
        (main["session"], "appended", 0),  # the bytes read, in its header
        (fork["session"], "appended", 0),  # and its summary
    ]
    assert export(cli, fork["session"])["summary"] == "The first file"
