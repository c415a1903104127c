"""Source files written to the shapes Claude Code and Codex CLI document (issue 22):
several versions' worth of fields, for tests/test_imports.py and bench/import.py."""

import json
from pathlib import Path
from typing import Any

CLAUDE_SESSION = "5f0c8a52-7d7e-4b8e-9a51-3c0a1f2b4d6e"
CODEX_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"


class ClaudeFile:
    """A Claude Code session file built a line at a time: chained lines get a uuid and
    the previous line's uuid as their parentUuid."""

    def __init__(
        self, path: Path, session: str = CLAUDE_SESSION, cwd: str = "/home/dev/proj"
    ) -> None:
        self.path, self.session, self.cwd = path, session, cwd
        self.lines: list[str] = []
        self.last: str | None = None
        self.n = 0
        self.clock = 0

    def _stamp(self) -> str:
        self.clock += 1
        minute, second = self.clock // 60 % 60, self.clock % 60
        return f"2026-10-01T09:{minute:02d}:{second:02d}.{self.clock % 1000:03d}Z"

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def add(self, obj: dict[str, Any]) -> None:
        self.lines.append(json.dumps(obj))

    def chained(self, kind: str, message: dict[str, Any] | None, **extra: Any) -> str:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        obj: dict[str, Any] = {
            "parentUuid": extra.pop("parentUuid", self.last),
            "isSidechain": extra.pop("isSidechain", False),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": extra.pop("version", "1.0.98"),
            "gitBranch": "main",
            "type": kind,
            **({"message": message} if message is not None else {}),
            "uuid": uuid,
            "timestamp": self._stamp(),
            **extra,
        }
        self.add(obj)
        self.last = uuid
        return uuid

    def prompt(self, text: str, **extra: Any) -> str:
        return self.chained("user", {"role": "user", "content": text}, **extra)

    def reply(
        self, mid: str, blocks: list[dict[str, Any]], stop: str | None = None, **extra: Any
    ) -> str:
        """One line per content block, all sharing `mid` (how Claude Code splits a reply)."""
        uuid = ""
        for n, block in enumerate(blocks):
            last = n == len(blocks) - 1
            uuid = self.chained(
                "assistant",
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [block],
                    "stop_reason": stop if last else None,
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 100,
                        "cache_creation_input_tokens": 0,
                        "output_tokens": 7,
                    },
                },
                requestId=f"req_{mid}",
                **extra,
            )
        return uuid

    def results(self, *pairs: tuple[str, str], error: bool = False, **extra: Any) -> str:
        blocks = [
            {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": error}
            for tid, text in pairs
        ]
        return self.chained(
            "user",
            {"role": "user", "content": blocks},
            toolUseResult={"stdout": pairs[0][1], "stderr": "", "interrupted": False},
            **extra,
        )

    def write(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(line + "\n" for line in self.lines), encoding="utf-8")
        return self.path


def claude_session(path: Path) -> ClaudeFile:
    """A session of two turns with a split reply, tool calls (one parallel pair, one
    error), a compaction, metadata lines of several versions and one unknown type."""
    f = ClaudeFile(path)
    f.add(
        {
            "type": "file-history-snapshot",
            "messageId": "m0",
            "snapshot": {},
            "isSnapshotUpdate": False,
        }
    )
    f.prompt("the parser test is flaky, fix it")
    f.reply(
        "msg_01",
        [
            {"type": "thinking", "thinking": "Let me look at the test.", "signature": "sig=="},
            {"type": "text", "text": "I'll read the test first."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "Read",
                "input": {"file_path": "/home/dev/proj/test_parser.py"},
            },
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "Bash",
                "input": {"command": "pytest -q"},
            },
        ],
        stop="tool_use",
    )
    f.results(("toolu_01", "def test_parse(): ..."), ("toolu_02", "1 failed"))
    f.reply(
        "msg_02",
        [{"type": "tool_use", "id": "toolu_03", "name": "Bash", "input": {"command": "false"}}],
        stop="tool_use",
    )
    f.results(("toolu_03", "exit code 1"), error=True)
    f.add({"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-10-01T09:10:00Z"})
    f.add({"type": "brand-new-kind", "data": 1})
    leaf = f.reply(
        "msg_03", [{"type": "text", "text": "Fixed: the test now seeds its RNG."}], stop="end_turn"
    )
    f.add({"type": "summary", "summary": "Fix the flaky parser test", "leafUuid": leaf})
    f.chained("system", None, subtype="turn_duration", content="", durationMs=1200)
    boundary = f.chained(
        "system",
        None,
        parentUuid=None,
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=f.last,
        compactMetadata={"trigger": "manual", "preTokens": 48213},
        version="2.0.14",
    )
    f.last = boundary
    f.chained(
        "user",
        {"role": "user", "content": "This session is being continued. Summary: parser fixed."},
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
        version="2.0.14",
    )
    f.add({"type": "custom-title", "customTitle": "Parser flake", "sessionId": f.session})
    f.prompt("now run the whole suite", version="2.0.14")
    f.reply("msg_04", [{"type": "text", "text": "All 120 tests pass."}], stop="end_turn")
    return f


def codex_session(path: Path, session: str = CODEX_SESSION) -> list[str]:
    """A rollout: meta, a turn with a function call and its output, reasoning (encrypted),
    token counts, a compaction, an unknown line type; returned as its lines."""

    def line(kind: str, payload: dict[str, Any], n: int) -> str:
        return json.dumps(
            {"timestamp": f"2026-10-02T10:00:{n:02d}.000Z", "type": kind, "payload": payload}
        )

    lines = [
        line(
            "session_meta",
            {
                "id": session,
                "timestamp": "2026-10-02T10:00:00.000Z",
                "cwd": "/home/dev/proj",
                "originator": "codex_cli_rs",
                "cli_version": "0.46.0",
                "model_provider": "openai",
                "base_instructions": {"text": "You are Codex, a coding agent."},
                "git": {
                    "commit_hash": "abc",
                    "branch": "main",
                    "repository_url": "git@github.com:o/r.git",
                },
            },
            0,
        ),
        line(
            "turn_context",
            {"cwd": "/home/dev/proj", "model": "gpt-5-codex", "approval_policy": "on-request"},
            1,
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "list the files"}],
            },
            2,
        ),
        line("event_msg", {"type": "user_message", "message": "list the files"}, 3),
        line(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Listing."}],
                "encrypted_content": "gAAAAB...",
            },
            4,
        ),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "call_1",
            },
            5,
        ),
        line(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "last_token_usage": {
                        "input_tokens": 900,
                        "cached_input_tokens": 0,
                        "output_tokens": 20,
                    }
                },
            },
            6,
        ),
        line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": '{"output":"a.py\\nb.py","metadata":{"exit_code":0}}',
            },
            7,
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Two files: a.py and b.py."}],
            },
            8,
        ),
        line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"last_token_usage": {"input_tokens": 950, "output_tokens": 12}},
            },
            9,
        ),
        line("future_line_type", {"x": 1}, 10),
        line("compacted", {"message": "Summary: the user listed files."}, 11),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "thanks"}],
            },
            12,
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "You're welcome."}],
            },
            13,
        ),
        line(
            "event_msg",
            {
                "type": "token_count",
                "info": {"last_token_usage": {"input_tokens": 300, "output_tokens": 5}},
            },
            14,
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return lines
