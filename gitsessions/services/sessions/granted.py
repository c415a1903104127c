"""The approvals an "always" answer granted a session (`tools`, and run_shell `commands` as
`agent/shell_scope.Scope`), kept in `store.git/gitsessions/approvals/<session id>`.

Invariants:
- Beside the session, never in it: never pushed, pulled, exported or imported, so a
  session from elsewhere arrives with no approvals and none of its commits grants one.
  Read back on resume (chat, `exec --resume`, ACP load); `delete` removes it; a fork
  starts without.
- Hostile input: read at most `MAX_RECORD` bytes; a record of another format or session,
  or holding anything but words, grants nothing; at most `MAX_ENTRIES` count.
"""

import re
from pathlib import Path
from typing import Any, NamedTuple

from gitsessions.store import homerecords

RECORD_FORMAT = "gitsessions.approvals/1"
MAX_RECORD = 64 * 1024
MAX_ENTRIES = 200
MAX_WORD = 1024
_SESSION_ID = re.compile(r"[0-9a-f]{32}")

Command = tuple[tuple[str, ...], bool]  # (words, exact)


class Grants(NamedTuple):
    """A session's granted approvals: tool names, and run_shell scopes."""

    tools: tuple[str, ...] = ()
    commands: tuple[Command, ...] = ()


NONE = Grants()


def _path(home: Path, session_id: str) -> Path:
    return home / "store.git" / "gitsessions" / "approvals" / session_id


def load(home: Path, session_id: str) -> Grants:
    """What this home granted the session (nothing, for a record missing or not sound)."""
    if not _SESSION_ID.fullmatch(session_id):
        return NONE
    return _grants(homerecords.read(_path(home, session_id), MAX_RECORD), session_id) or NONE


def _grants(record: Any, session_id: str) -> Grants | None:
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return None
    if record.get("session") != session_id:
        return None
    tools, commands = record.get("tools", []), record.get("commands", [])
    if not isinstance(tools, list) or not isinstance(commands, list):
        return None
    if not all(_word(t) for t in tools):
        return None
    kept: list[Command] = []
    for entry in commands:
        if not isinstance(entry, dict) or not isinstance(entry.get("exact"), bool):
            return None
        words = entry.get("words")
        if not isinstance(words, list) or not words or not all(_word(w) for w in words):
            return None
        kept.append((tuple(words), entry["exact"]))
    return Grants(tuple(tools[:MAX_ENTRIES]), tuple(kept[:MAX_ENTRIES]))


def _word(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_WORD


def save(home: Path, session_id: str, grants: Grants) -> None:
    """Write the session's grants (a temporary file, fsynced, renamed into place)."""
    assert _SESSION_ID.fullmatch(session_id)
    path = _path(home, session_id)
    record = {
        "format": RECORD_FORMAT,
        "session": session_id,
        "tools": sorted(set(grants.tools))[:MAX_ENTRIES],
        "commands": [{"words": list(words), "exact": exact} for words, exact in grants.commands][
            :MAX_ENTRIES
        ],
    }
    homerecords.write(path, record)


def described(home: Path, session_id: str) -> list[str]:
    """What this home granted a session, each in the words the approval offered it
    (`write_file`, `git log ...`, an exact command line), as `info` shows them."""
    grants = load(home, session_id)
    commands = [words[0] if exact else " ".join(words) + " ..." for words, exact in grants.commands]
    return sorted(grants.tools) + commands


def forget(home: Path, session_id: str) -> None:
    """Drop the session's grants (it is deleted)."""
    if _SESSION_ID.fullmatch(session_id):
        _path(home, session_id).unlink(missing_ok=True)
