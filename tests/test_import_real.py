"""`import --from claude-code|codex` on files shaped like the ones real agents write
(tests/fixtures/real, each modelled on public session files: see SOURCES there).

Every expectation is counted from the fixture itself, not written down: the calls and
outputs it holds (joined by `tool_use_id` / `call_id`), which calls truly have no output,
and its last reply. A finished file (plain import, unchanged for an hour) must come in
whole: nothing held back, every call imported, every real output at its call, a stub
only where the source has no output, the last reply present; and a turn resumed on it
must send a request a strict server accepts (valid tool names, every call answered,
roles in order)."""

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gitsessions.services.imports.assemble import NO_RESULT
from tests.conftest import exec_args, run_gitsessions
from tests.fake_openai import alternation_error

REAL = Path(__file__).parent / "fixtures" / "real"
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ROLES = {"system", "user", "assistant", "tool"}

# (case, --from, files relative to REAL): a subagent's file is imported with its main file
CASES = [
    ("claude-1.0.17", "claude-code", ["claude-1.0.17/4143e2cb-5904-4f96-a73e-e0c7361d16a5.jsonl"]),
    ("claude-1.0.35", "claude-code", ["claude-1.0.35/8457398d-5ea6-4c2e-a375-5337e094b931.jsonl"]),
    (
        "claude-2.1.78",
        "claude-code",
        [
            "claude-2.1.78/1f31a11a-7065-4cf6-a0b4-272a1ee3c6db.jsonl",
            "claude-2.1.78/1f31a11a-7065-4cf6-a0b4-272a1ee3c6db/subagents/"
            "agent-a07a40a92b210ea65.jsonl",
        ],
    ),
    ("claude-2.1.81", "claude-code", ["claude-2.1.81/cf325176-4a45-4241-a012-9cc9e24d86d7.jsonl"]),
    ("claude-2.1.92", "claude-code", ["claude-2.1.92/876cc65d-fcec-4643-a610-05e1980d26d2.jsonl"]),
    ("claude-tree", "claude-code", ["claude-tree"]),  # a project folder: tests/test_import_tree.py
    ("codex-legacy", "codex", ["codex-legacy"]),
    ("codex-0.34", "codex", ["codex-0.34"]),
    ("codex-0.63", "codex", ["codex-0.63"]),
    ("codex-0.117", "codex", ["codex-0.117"]),
    ("codex-desktop-0.118", "codex", ["codex-desktop-0.118"]),
    ("codex-0.121", "codex", ["codex-0.121"]),
]


@dataclass
class Facts:
    """What a source holds, read straight from its lines."""

    calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    outputs: dict[str, str] = field(default_factory=dict)  # call id -> its output as text
    last_reply: str = ""  # the main chain's last assistant text

    @property
    def unanswered(self) -> set[str]:
        return set(self.calls) - set(self.outputs)


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    for raw in path.read_text(encoding="utf-8").split("\n"):  # not splitlines(): U+0085
        if raw.strip():
            yield json.loads(raw)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)


def claude_facts(path: Path, facts: Facts) -> None:
    subagent = "/subagents/" in path.as_posix()
    for obj in _lines(path):
        message = obj.get("message")
        if obj.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue  # progress copies of a subagent's lines are not the chat
        blocks = message.get("content")
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_use":
                facts.calls[block["id"]] = block["name"]
            elif kind == "tool_result":
                facts.outputs[block["tool_use_id"]] = _text(block.get("content"))
            elif (
                kind == "text"
                and obj["type"] == "assistant"
                and (subagent or not obj.get("isSidechain"))
            ):
                facts.last_reply = block["text"]


def codex_facts(path: Path, facts: Facts) -> None:
    for obj in _lines(path):
        if "payload" in obj:  # a typed line; the untyped format has bare items
            if obj.get("type") != "response_item":
                continue
            obj = obj["payload"]
        item = obj if isinstance(obj, dict) else {}
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            facts.calls[item["call_id"]] = item.get("name") or "local_shell"
        elif kind in ("function_call_output", "custom_tool_call_output"):
            facts.outputs[item["call_id"]] = _text(item.get("output"))
        elif kind == "message" and item.get("role") == "assistant":
            facts.last_reply = _text(item["content"])


def staged(tmp_path: Path, files: list[str]) -> list[Path]:
    """The case's files copied under tmp_path, last written an hour ago: finished files."""
    out = []
    for rel in files:
        source = REAL / rel
        found = sorted(source.glob("*.jsonl")) if source.is_dir() else [source]
        for path in found:
            target = tmp_path / "src" / path.relative_to(REAL)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            old = time.time() - 3600
            os.utime(target, (old, old))
            out.append(target)
    return out


def facts_of(fmt: str, paths: list[Path]) -> Facts:
    facts = Facts()
    for path in paths:
        (claude_facts if fmt == "claude-code" else codex_facts)(path, facts)
    return facts


def imported(cli: Any, fmt: str, paths: list[Path]) -> tuple[Any, list[str]]:
    result = cli("import", "--from", fmt, *map(str, paths))
    sids = [line.split("\t")[0] for line in result.stdout.splitlines() if "\t" in line]
    return result, sids


def export(cli: Any, sid: str) -> dict[str, Any]:
    return json.loads(cli("export", sid).stdout)


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, list[Path], Facts]:
    _name, fmt, files = request.param
    paths = staged(tmp_path, files)
    assert paths, files
    return fmt, paths, facts_of(fmt, paths)


def test_the_fixtures_hold_what_the_cases_count_on():
    """Each fixture has calls, outputs and a last reply to check (the counts below would
    prove nothing on an empty file), and the cases cover every fixture in SOURCES."""
    listed = set(re.findall(r"^(\S+\.jsonl)$", (REAL / "SOURCES").read_text(), re.M))
    on_disk = {p.relative_to(REAL).as_posix() for p in REAL.rglob("*.jsonl")}
    assert listed == on_disk
    covered: set[str] = set()
    for _name, fmt, files in CASES:
        paths = [
            p
            for rel in files
            for p in (
                [REAL / rel] if rel.endswith(".jsonl") else sorted((REAL / rel).glob("*.jsonl"))
            )
        ]
        covered |= {p.relative_to(REAL).as_posix() for p in paths}
        facts = facts_of(fmt, paths)
        assert facts.calls and facts.outputs and facts.last_reply, files
    assert covered == on_disk
    # the true stub cases: a Claude Code file and a Codex file end on calls without output
    assert len(facts_of("claude-code", [REAL / CASES[3][2][0]]).unanswered) == 2
    assert len(facts_of("codex", sorted((REAL / "codex-0.121").glob("*.jsonl"))).unanswered) == 1


def test_a_finished_file_comes_in_whole(cli, case):
    fmt, paths, facts = case
    result, sids = imported(cli, fmt, paths)
    assert "held back" not in result.stderr, result.stderr
    assert "without a call" not in result.stderr, result.stderr
    assert sids
    records = [r for sid in sids for r in export(cli, sid)["transcript"]]
    messages = [r["message"] for r in records]
    called = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    assert called == set(facts.calls), "calls lost or invented"
    tool_messages: dict[str, list[Any]] = {}
    for m in messages:
        if m["role"] == "tool":
            tool_messages.setdefault(m["tool_call_id"], []).append(m["content"])
    for call_id in facts.calls:
        contents = tool_messages.get(call_id)
        assert contents, f"call {call_id} has no tool message"
        for content in contents:
            if call_id in facts.outputs:
                first = facts.outputs[call_id].strip().split("\n")[:1]
                assert content != NO_RESULT, f"the real output of {call_id} was stubbed"
                assert not first or first[0] in _text(content), (call_id, content)
            else:
                assert content == NO_RESULT, (call_id, content)
    stubbed = {cid for cid, cs in tool_messages.items() if NO_RESULT in cs}
    assert stubbed == facts.unanswered
    said = "\n".join(_text(m.get("content")) for m in messages if m["role"] == "assistant")
    assert facts.last_reply in said, "the last reply of the session was not imported"


def test_importing_a_finished_file_again_changes_nothing(cli, case):
    fmt, paths, _facts = case
    _first, sids = imported(cli, fmt, paths)
    before = {sid: export(cli, sid)["transcript"] for sid in sids}
    again, _ = imported(cli, fmt, paths)
    assert "held back" not in again.stderr
    assert {sid: export(cli, sid)["transcript"] for sid in sids} == before


def request_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What a strict OpenAI-compatible server would refuse in a request's messages."""
    problems = []
    alternation = alternation_error(messages)
    if alternation:
        problems.append(alternation)
    waiting: list[str] = []
    for n, m in enumerate(messages):
        if m.get("role") not in ROLES:
            problems.append(f"message {n} has role {m.get('role')!r}")
        if m.get("role") == "tool":
            if m.get("tool_call_id") in waiting:
                waiting.remove(m["tool_call_id"])
            else:
                problems.append(f"message {n} answers no open call")
            continue
        if waiting:
            problems.append(f"calls {waiting} unanswered before message {n}")
            waiting = []
        for c in m.get("tool_calls") or []:
            name = c["function"]["name"]
            if not TOOL_NAME.fullmatch(name):
                problems.append(f"tool name {name!r} is not valid for the API")
            try:
                json.loads(c["function"]["arguments"])
            except ValueError:
                problems.append(f"arguments of {c['id']} are not JSON")
            waiting.append(c["id"])
    if waiting:
        problems.append(f"calls {waiting} unanswered at the end")
    return problems


def test_a_turn_resumed_on_it_sends_a_valid_request(cli, case, server, tmp_path):
    fmt, paths, facts = case
    _result, sids = imported(cli, fmt, paths)
    ws = tmp_path / "ws"
    ws.mkdir()
    server.reply(content="Noted.")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sids[0], "go on", "--json")
    assert not server.rejected, server.rejected[0]["messages"] if server.rejected else None
    assert done.returncode == 0, done.stderr
    sent = server.requests[0]["messages"]
    assert request_problems(sent) == []
    assert sent[-1] == {"role": "user", "content": "go on"} or "go on" in json.dumps(sent[-1])
    stubs = [m for m in sent if m["role"] == "tool" and m.get("content") == NO_RESULT]
    assert len(stubs) <= len(facts.unanswered)
