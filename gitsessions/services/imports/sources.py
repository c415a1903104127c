"""Where sources keep their sessions, and the files a path names.

Claude Code: `$CLAUDE_CONFIG_DIR/projects/` (default `~/.claude/projects/`), one
`<session id>.jsonl` per session in a folder per project, a subagent's own file under
`<session id>/subagents/` (older versions: `agent-<id>.jsonl` beside the sessions).
Codex: `$CODEX_HOME/sessions/` (default `~/.codex/sessions/`),
`YYYY/MM/DD/rollout-<time>-<id>.jsonl`. The environment is handed in, never read here.
"""

from collections.abc import Mapping
from pathlib import Path

from gitsessions.services.imports.lines import read_objects
from gitsessions.values.errors import InvalidInput

FORMATS = ("claude-code", "codex")
SNIFF = 20  # lines read to tell the formats apart
CODEX_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
CODEX_ITEMS = ("message", "function_call", "function_call_output", "reasoning")


def default_root(format_: str, env: Mapping[str, str], home: Path) -> Path:
    """The folder a source keeps its sessions in."""
    if format_ == "claude-code":
        config = env.get("CLAUDE_CONFIG_DIR")
        return (Path(config) if config else home / ".claude") / "projects"
    codex = env.get("CODEX_HOME")
    return (Path(codex) if codex else home / ".codex") / "sessions"


def session_files(paths: list[Path]) -> list[Path]:
    """Every `.jsonl` file `paths` name (a folder: those under it, sorted, subagents'
    files last), each once."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            # a subagent's file after every main one: its session is a fork of its main's
            found += sorted(
                (p for p in path.rglob("*.jsonl") if p.is_file() and _session_like(p)),
                key=lambda p: (
                    "subagents" in p.relative_to(path).parts or p.name.startswith("agent-"),
                    str(p),
                ),
            )
        elif path.is_file():
            found.append(path)
        else:
            raise InvalidInput(f"{path}: no such file or folder")
    unique: dict[Path, None] = {}
    for path in found:
        unique.setdefault(path.resolve(), None)
    return list(unique)


def _session_like(path: Path) -> bool:
    """Whether a file found in a folder may be a session file: not one of Codex's own
    indexes beside its rollouts (`session_index.jsonl`, `history.jsonl`)."""
    return path.name not in ("session_index.jsonl", "history.jsonl")


def format_of(path: Path) -> str | None:
    """Which source's format `path` is in, from its first lines: Claude Code's lines
    name a `sessionId` and a `type` of user, assistant or system; Codex's are
    `{timestamp, type, payload}` (older ones: its meta object, then bare response items).
    None when they tell neither."""
    for number, obj in read_objects(path):
        kind = obj.get("type")
        if kind in ("user", "assistant", "system") and "sessionId" in obj:
            return "claude-code"
        if kind in CODEX_TYPES and isinstance(obj.get("payload"), dict):
            return "codex"
        if kind in CODEX_ITEMS and "sessionId" not in obj and "uuid" not in obj:
            return "codex"
        if number >= SNIFF:
            break
    return None
