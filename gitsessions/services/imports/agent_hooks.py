"""The hooks that make Claude Code (`settings.json`: `Stop`, `PreCompact`, `SessionEnd`)
and Codex (`config.toml`: a top-level `notify`) mirror each session as it runs:
installed into their own configuration, removed again, nothing else touched.

Invariants:
- An entry is ours when its command holds `MARK` (Codex: ends with `CODEX_MARK`);
  install adds ours once, uninstall removes ours alone; every other key, hook and line
  stays. Codex has one `notify`: one the user set is never replaced.
- A file is written whole or not at all (a temporary file renamed over it), its mode
  kept; a symlinked file is written at its target, the link kept.
"""

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from gitsessions.values.errors import InvalidInput

MARK = "import --from"  # in every Claude Code command this module installs, and no other
CODEX_MARK = "# gitsessions"  # ends the notify line this module writes
CLAUDE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
_NOTIFY = re.compile(r"^\s*notify\s*=", re.MULTILINE)


def install_claude(settings: Path, command: str) -> str:
    """Add the hooks to Claude Code's `settings` file; what was done, in words."""
    data = _read_json(settings)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{settings}: 'hooks' is not an object; nothing was changed")
    added = []
    for event in CLAUDE_EVENTS:
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise InvalidInput(f"{settings}: hooks.{event} is not a list; nothing was changed")
        if any(_ours(entry) for entry in entries):
            continue
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if event == "PreCompact":
            entry["matcher"] = ""
        entries.append(entry)
        added.append(event)
    if not added:
        return "already installed"
    _write(settings, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return f"installed for {', '.join(added)}"


def uninstall_claude(settings: Path) -> str:
    if not settings.exists():
        return "not installed"
    data = _read_json(settings)
    hooks = data.get("hooks")
    removed = []
    if isinstance(hooks, dict):
        for event in CLAUDE_EVENTS:
            entries = hooks.get(event)
            if isinstance(entries, list) and any(_ours(e) for e in entries):
                hooks[event] = [e for e in entries if not _ours(e)]
                if not hooks[event]:
                    del hooks[event]
                removed.append(event)
        if not hooks:
            del data["hooks"]
    if not removed:
        return "not installed"
    _write(settings, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return f"removed from {', '.join(removed)}"


def install_codex(config: Path, argv: list[str]) -> str:
    """Set Codex's `notify` to `argv` in `config` (TOML); refused when one is set."""
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    if _NOTIFY.search(text):
        if _notify_line(text).rstrip().endswith(CODEX_MARK):
            return "already installed"
        raise InvalidInput(
            f"{config} already sets notify (Codex runs one program); nothing was changed"
        )
    line = "notify = " + json.dumps(argv, ensure_ascii=False) + f"  {CODEX_MARK}\n"
    _write(config, line + text)  # first: a top-level key must come before any table
    return "installed as notify"


def uninstall_codex(config: Path) -> str:
    if not config.exists():
        return "not installed"
    text = config.read_text(encoding="utf-8")
    kept = [
        line
        for line in text.splitlines(keepends=True)
        if not (_NOTIFY.match(line) and line.rstrip().endswith(CODEX_MARK))
    ]
    if len(kept) == len(text.splitlines(keepends=True)):
        return "not installed"
    _write(config, "".join(kept))
    return "notify removed"


def _notify_line(text: str) -> str:
    match = _NOTIFY.search(text)
    return text[match.start() : text.find("\n", match.start())] if match else ""


def _ours(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
        return False
    return any(
        isinstance(h, dict) and MARK in str(h.get("command", "")) and "gitsessions" in str(h)
        for h in entry["hooks"]
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput(f"{path}: not JSON ({error}); nothing was changed") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: not a JSON object; nothing was changed")
    return data


def _write(link: Path, text: str) -> None:
    path = Path(os.path.realpath(link))  # through a symlink to its target, the link kept
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(name, mode)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def _object(payload: str) -> dict[str, Any] | None:
    """A hook's JSON payload as an object, or None when it is not one."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def hook_transcript(format_: str, payload: str, sessions_root: Path) -> Path | None:
    """The source file a hook's JSON names: Claude Code's `transcript_path`; for Codex's
    notify, the rollout whose name ends with its `thread-id` under `sessions_root`."""
    data = _object(payload)
    if data is None:
        return None
    if format_ == "claude-code":
        path = data.get("transcript_path")
        return Path(path) if isinstance(path, str) and path else None
    thread = data.get("thread-id") or data.get("thread_id") or data.get("session_id")
    if not isinstance(thread, str) or not re.fullmatch(r"[0-9A-Za-z-]{8,64}", thread):
        return None
    found = sorted(sessions_root.rglob(f"rollout-*{thread}.jsonl"))
    return found[-1] if found else None


def hook_ended(format_: str, payload: str) -> bool:
    """Whether a hook's JSON says the session (Claude Code's `SessionEnd`) or the turn
    (Codex's `agent-turn-complete`) is over: nothing more is written to what it names."""
    data = _object(payload)
    if data is None:
        return False
    if format_ == "claude-code":
        return data.get("hook_event_name") == "SessionEnd"
    return data.get("type") == "agent-turn-complete"
