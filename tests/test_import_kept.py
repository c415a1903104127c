"""Issue 39, item 5: nothing of a source quietly missing. A reply of reasoning only that
no reply follows is kept; an older Codex rollout's cwd and times are recorded; an empty
tool output is resumed as a text that says so; an image in a tool result is kept as a
file of the session (a blob of its own, `files/<sha256>.png`) and named in the message."""

import base64
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from gitsessions.services.imports import codex
from gitsessions.services.imports.assemble import (
    NO_RESULT,
    REASONING_ONLY,
    Assembler,
    Output,
    Prompt,
    Reply,
    Result,
    call,
)
from gitsessions.services.imports.mirror import assembled
from gitsessions.store.files import MAX_BYTES
from gitsessions.values.messages import NO_OUTPUT, alternating
from tests.conftest import exec_args, git, run_gitsessions
from tests.import_fixtures import ClaudeFile
from tests.test_import_evidence import Rollout, export
from tests.test_import_real import request_problems

LEGACY = Path(__file__).parent / "fixtures" / "real" / "codex-legacy"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(2000)).decode()


def imported(cli: Any, fmt: str, path: Path) -> dict[str, Any]:
    [one] = json.loads(cli("import", "--from", fmt, str(path), "--json").stdout)
    return one  # type: ignore[no-any-return]


def test_a_reasoning_only_reply_that_nothing_follows_is_kept(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("think about it")
    f.reply("msg_1", [{"type": "thinking", "thinking": "Hmm, deeply.", "signature": "s"}])
    one = imported(cli, "claude-code", f.write())
    [record] = export(cli, one["session"])["transcript"][-1:]
    assert record["message"] == {"role": "assistant", "content": REASONING_ONLY}
    assert record["source"]["reasoning"][0]["thinking"] == "Hmm, deeply."
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "think about it")
    r.add("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
    [record] = export(cli, imported(cli, "codex", r.write())["session"])["transcript"][-1:]
    assert record["message"]["content"] == REASONING_ONLY
    assert record["source"]["reasoning"] == [{"summary": [], "encrypted_content": "gAAA"}]


def test_a_whole_read_of_a_grown_file_settles_as_the_first_import_did():
    """Where a finished file's end settled a carried reasoning, a read of the grown file
    from its start (`imported.settled`) emits the same outputs first."""
    start: list[Any] = [
        Prompt("run it", 1),
        Reply("m1", 2, calls=[call("t1", "Bash", {})]),
        Reply("m2", 3, reasoning=[{"thinking": "waiting"}]),
    ]
    first = Assembler()
    done: list[Output] = list(assembled(first, iter(start), True, []))
    assert first.forced and not first.carried
    assert [o.message.get("content") for o in done] == ["run it", None, NO_RESULT, REASONING_ONLY]  # type: ignore[union-attr]
    grown = [*start, Result("t1", "late", 4), Prompt("again", 5), Reply("m3", 6, text=["Done."])]
    again = list(assembled(Assembler(), iter(grown), True, [3]))
    assert again[: len(done)] == done and len(again) == len(done) + 3  # the late result a note


def test_an_older_codex_rollout_records_its_cwd_and_times(cli):
    [path] = LEGACY.glob("*.jsonl")
    one = imported(cli, "codex", path)
    doc = export(cli, one["session"])
    assert doc["imported"]["cwd"] == "/home/ana/src/inkwell"
    info = cli.json("info", one["session"])
    assert info["workspace"]["path"] == "/home/ana/src/inkwell"
    assert info["created_at"] == "2025-07-21T08:30:00Z"
    assert info["updated_at"] == "2025-07-21T08:30:00Z"


def test_a_newer_rollout_keeps_its_meta_cwd_over_the_environment_context(cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "<environment_context>\n  <cwd>/elsewhere</cwd>\n</environment_context>")
    r.message("user", "hello")
    one = imported(cli, "codex", r.write())
    assert export(cli, one["session"])["imported"]["cwd"] == "/p"
    assert codex.scan(r.path).cwd == "/elsewhere"


def test_an_empty_output_is_sent_as_a_text_that_says_so():
    sent = alternating(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a", "x", {})]},
            {"role": "tool", "tool_call_id": "a", "content": " \n"},
            {"role": "tool", "tool_call_id": "b", "content": []},
            {"role": "tool", "tool_call_id": "c", "content": "0 files"},
        ]
    )
    assert [m["content"] for m in sent[2:]] == [NO_OUTPUT, NO_OUTPUT, "0 files"]


def test_a_resumed_import_with_an_empty_output_and_reasoning_last_is_a_valid_request(
    server, cli, tmp_path
):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("make the folder")
    f.reply(
        "msg_1",
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "mkdir x"}}],
        stop="tool_use",
    )
    f.results(("toolu_1", ""))
    f.reply("msg_2", [{"type": "thinking", "thinking": "Done, nothing to say.", "signature": "s"}])
    sid = imported(cli, "claude-code", f.write())["session"]
    stored = export(cli, sid)["messages"]
    assert stored[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": ""}
    ws = tmp_path / "ws"
    ws.mkdir()
    server.reply(content="Resumed.")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sid[:8], "go on")
    assert done.returncode == 0, done.stderr
    assert server.rejected == []
    sent = server.requests[0]["messages"]
    assert request_problems(sent) == []
    [tool] = [m for m in sent if m["role"] == "tool"]
    assert tool["content"] == NO_OUTPUT
    assert REASONING_ONLY in json.dumps(sent) and "Done, nothing to say." not in json.dumps(sent)


def screenshot(f: ClaudeFile, *images: dict[str, Any]) -> Path:
    f.prompt("look at the page")
    f.reply(
        "msg_1",
        [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.png"}}],
        stop="tool_use",
    )
    content = [{"type": "text", "text": "Screenshot:"}, *images]
    f.chained(
        "user",
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}],
        },
    )
    f.reply("msg_2", [{"type": "text", "text": "A login form."}], stop="end_turn")
    return f.write()


def image(media: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def stock_show(store: Path, what: str) -> bytes:
    """`git show <what>` (stock git) as bytes."""
    args = ["git", "--git-dir", str(store), "show", what]
    return subprocess.run(args, capture_output=True, check=True).stdout


def test_an_image_in_a_tool_result_is_kept_as_a_file_and_named_in_the_message(cli, tmp_path, home):
    raw = base64.b64decode(PNG)
    name = f"files/{hashlib.sha256(raw).hexdigest()}.png"
    path = screenshot(ClaudeFile(tmp_path / "s.jsonl"), image("image/png", PNG))
    sid = imported(cli, "claude-code", path)["session"]
    store = home / "store.git"
    head = git(store, "rev-parse", f"refs/heads/sessions/{sid}").stdout.strip()
    assert stock_show(store, f"{head}:{name}") == raw  # the image's exact bytes, a blob
    [record] = [r for r in export(cli, sid)["transcript"] if r["message"]["role"] == "tool"]
    said = f"[image: image/png, 2 KB, {name}]"
    assert record["message"]["content"] == f"Screenshot:\n{said}"
    assert record["source"] == {"files": [name]}  # named, no base64 in the record
    assert said in cli("show", sid).stdout
    tree = git(store, "ls-tree", "-r", head, "transcript").stdout
    chunks = [git(store, "cat-file", "blob", row.split()[2]).stdout for row in tree.splitlines()]
    assert not any(PNG[:100] in chunk for chunk in chunks)
    again = imported(cli, "claude-code", path)  # the same file again writes nothing
    assert again["status"] == "unchanged"
    assert git(store, "rev-parse", f"refs/heads/sessions/{sid}").stdout.strip() == head


def test_the_same_image_twice_is_one_blob(cli, tmp_path, home):
    f = ClaudeFile(tmp_path / "s.jsonl")
    screenshot(f, image("image/png", PNG), image("image/png", PNG))
    f.prompt("and again")
    f.reply("msg_3", [tool_use("toolu_2")], stop="tool_use")
    f.chained("user", tool_result("toolu_2", [image("image/png", PNG)]))
    f.reply("msg_4", [{"type": "text", "text": "Same page."}], stop="end_turn")
    sid = imported(cli, "claude-code", f.write())["session"]
    store = home / "store.git"
    listed = git(store, "ls-tree", f"refs/heads/sessions/{sid}", "files/").stdout.splitlines()
    assert len(listed) == 1
    name = f"files/{hashlib.sha256(base64.b64decode(PNG)).hexdigest()}.png"
    tools = [r for r in export(cli, sid)["transcript"] if r["message"]["role"] == "tool"]
    assert [r["message"]["content"].count(name) for r in tools] == [2, 1]
    assert [r["source"]["files"] for r in tools] == [[name], [name]]


def tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "a.png"}}


def tool_result(call_id: str, content: list[Any]) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return {"role": "user", "content": [block]}


def test_an_image_not_kept_says_why(cli, tmp_path, home):
    big = base64.b64encode(bytes(MAX_BYTES + 1)).decode()
    path = screenshot(
        ClaudeFile(tmp_path / "s.jsonl"),
        image("image/tiff", PNG),
        image("image/png", "not base64!"),
        image("image/png", big),
    )
    sid = imported(cli, "claude-code", path)["session"]
    [record] = [r for r in export(cli, sid)["transcript"] if r["message"]["role"] == "tool"]
    assert record["message"]["content"].splitlines()[1:] == [
        "[image: image/tiff, 2 KB, not kept: not a PNG, JPEG, GIF or WebP image]",
        "[image: image/png, not kept: its data is not base64]",
        "[image: image/png, 5.0 MB, not kept: over the 5 MiB an image may hold]",
    ]
    assert "source" not in record
    listed = git(home / "store.git", "ls-tree", f"refs/heads/sessions/{sid}").stdout
    assert "files" not in listed
