"""Where sources keep their sessions, and the files a path names.

Claude Code: `$CLAUDE_CONFIG_DIR/projects/` (default `~/.claude/projects/`), one
`<session id>.jsonl` per session in a folder per project, a subagent's own file under
`<session id>/subagents/` (older versions: `agent-<id>.jsonl` beside the sessions).
Codex: `$CODEX_HOME/sessions/` (default `~/.codex/sessions/`),
`YYYY/MM/DD/rollout-<time>-<id>.jsonl`. The environment is handed in, never read here.
"""

from collections.abc import Mapping
from pathlib import Path

from gitsessions.values.errors import InvalidInput

FORMATS = ("claude-code", "codex")


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
                (p for p in path.rglob("*.jsonl") if p.is_file()),
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
