"""Issue 39, item 3: a finished file is read to its last byte, newline or not; a line cut
in the middle of a file still being written is the only one held back, and damage once
the file is finished. A file whose last line was read without its newline reads on when
it grows."""

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from gitsessions.services.imports import lines
from tests.import_fixtures import ClaudeFile
from tests.test_import_evidence import STALE, Rollout, export, unterminated


def without_last_newline(path: Path) -> Path:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    path.write_bytes(data[:-1])
    return path


def imported(cli: Any, fmt: str, path: Path, **kw: Any) -> tuple[dict[str, Any], str]:
    result = cli("import", "--from", fmt, str(path), "--json", **kw)
    [one] = json.loads(result.stdout)
    return one, result.stderr


def test_read_objects_takes_a_whole_last_line_and_reads_on_past_its_newline(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}')
    tally = lines.Tally()
    assert list(lines.read_objects(path, tally)) == [(1, {"a": 1}), (2, {"b": 2})]
    assert (tally.lines, tally.bytes, tally.partial_tail) == (2, 17, False)
    assert tally.sha256 == lines.prefix_sha256(path, 17)
    with open(path, "ab") as file:
        file.write(b'\n{"c": 3}\n')
    more = lines.Tally()
    assert list(lines.read_objects(path, more, offset=17, line=2)) == [(3, {"c": 3})]
    assert (more.lines, more.bytes, more.damaged) == (3, 10, [])
    assert lines.offset_of_line(path, 3, offset=17, line=2) == 18


def test_a_cut_last_line_is_held_back_and_damage_only_once_settled(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    tally = lines.Tally()
    assert list(lines.read_objects(path, tally)) == [(1, {"a": 1})]
    assert (tally.lines, tally.bytes, tally.partial_tail, tally.damaged) == (1, 9, True, [])
    tally.settle_tail()
    tally.settle_tail()
    assert [n for n, _why in tally.damaged] == [2] and tally.damaged_count == 1
    assert "cut off" in tally.damaged[0][1]


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_last_line_without_its_newline_is_imported_and_the_file_read_on_when_it_grows(
    cli, tmp_path, fmt
):
    if fmt == "claude-code":
        f: Any = unterminated(ClaudeFile(tmp_path / "s.jsonl"))
        last = "It prints hi."
    else:
        f = Rollout(tmp_path / "rollout.jsonl")
        f.message("user", "what does main.py do?")
        f.call("call_1", arguments='{"command":"cat main.py"}')
        f.tokens()
        f.output("call_1", "print('hi')")
        f.message("assistant", last := "It prints hi.")
    path = without_last_newline(f.write())
    first, said = imported(cli, fmt, path)
    assert first["held_from_line"] is None and first["damaged"] == [], said
    assert first["lines"] == len(f.lines)
    assert export(cli, first["session"])["messages"][-1]["content"] == last
    count = len(f.lines)
    if fmt == "claude-code":
        f.prompt("and test_main.py?")
        f.reply("msg_3", [{"type": "text", "text": "It tests that."}], stop="end_turn")
    else:
        f.message("user", "and test_main.py?")
        f.message("assistant", "It tests that.")
    with open(path, "a", encoding="utf-8") as file:  # the writer's newline, then more lines
        file.write("".join("\n" + line for line in f.lines[count:]) + "\n")
    again, said = imported(cli, fmt, path)
    assert (again["status"], again["read_from_line"], again["damaged"]) == (
        "appended",
        count + 1,
        [],
    ), said
    assert again["messages"] == 2 and again["lines"] == len(f.lines)
    grown = export(cli, first["session"])
    assert [m.get("content") for m in grown["messages"]][-3:] == [
        last,
        "and test_main.py?",
        "It tests that.",
    ]
    fresh = tmp_path / "fresh"  # the grown file imported whole gives the same session
    cli("--home", str(fresh), "import", "--from", fmt, str(path))
    whole = json.loads(cli("--home", str(fresh), "export", first["session"]).stdout)
    assert grown["transcript"] == whole["transcript"]
    assert imported(cli, fmt, path)[0]["status"] == "unchanged"


def test_a_cut_last_line_is_held_back_while_fresh_and_reported_once_the_file_is_old(cli, tmp_path):
    f = ClaudeFile(tmp_path / "s.jsonl")
    f.prompt("run the tests")
    f.reply(
        "msg_a",
        [{"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "pytest"}}],
        stop="tool_use",
    )
    f.raw('{"type": "user", "message": {"role": "user", "con')  # cut as it was written
    path = without_last_newline(f.write())
    first, said = imported(cli, "claude-code", path)
    assert (first["status"], first["held_from_line"], first["damaged"]) == ("created", 2, [])
    assert "from line 2 held back" in said and "skipped" not in said
    old = time.time() - STALE
    os.utime(path, (old, old))  # unchanged for two minutes: finished, the line never ends
    again, said = imported(cli, "claude-code", path)
    assert again["status"] == "appended" and again["held_from_line"] is None
    assert [d["line"] for d in again["damaged"]] == [3]
    assert "line 3 skipped: cut off" in said
    contents = [m.get("content") for m in export(cli, first["session"])["messages"]]
    assert contents[-1] == "[no result was recorded in the imported session]"
