"""The chat's input history: `<home>/chat_history`, one `{"session": ID, "line": TEXT}`
line each, oldest first, at most `LIMIT` lines.

Invariants:
- Every line names its session, so a delete drops its lines (`forget`); an unowned line
  (an older readline file) is dropped at the next rewrite.
- Never edited in place: a private temporary file, fsynced, renamed, the directory
  fsynced, under an exclusive flock (`chat_history.lock`): a crash leaves the old or the
  new file whole and two chats saving at once both keep their lines.
"""

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from gitsessions.values.ids import is_session_id

FILE = "chat_history"
LIMIT = 1000


def _path(home: Path) -> Path:
    return home / FILE


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    fd = os.open(home / f"{FILE}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def load(home: Path) -> list[tuple[str, str]]:
    """`(session id, line)` pairs, oldest first; unreadable or untagged lines skipped."""
    try:
        data = _path(home).read_bytes()
    except OSError:
        return []
    import json  # only with a history to read: `chat` loads it before its prompt

    entries: list[tuple[str, str]] = []
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if (
            isinstance(record, dict)
            and is_session_id(record.get("session"))
            and isinstance(record.get("line"), str)
        ):
            entries.append((record["session"], record["line"]))
    return entries


def _replace(home: Path, entries: Sequence[tuple[str, str]]) -> None:
    # json: only when there is a history to rewrite
    import json

    path = _path(home)
    temp = path.with_name(f"{FILE}.{os.getpid()}.tmp")
    body = b"".join(
        json.dumps({"session": sid, "line": line}, ensure_ascii=False).encode("utf-8", "replace")
        + b"\n"
        for sid, line in entries[-LIMIT:]
    )
    for stale in home.glob(f"{FILE}.*.tmp"):  # left by a crash; we hold the lock
        stale.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(body)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, path)
    directory = os.open(home, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def append(home: Path, session: str, lines: Iterable[str]) -> None:
    """Add the lines typed in `session` (blank ones skipped) and keep the newest LIMIT."""
    new = [(session, line) for line in lines if line.strip()]
    if not new:
        return
    with _locked(home):
        _replace(home, [*load(home), *new])


def forget(home: Path, session: str) -> int:
    """Drop every line typed in `session` (and any line of no session, and any temporary
    file a crash left); returns how many lines went."""
    if not _path(home).exists() and not any(home.glob(f"{FILE}.*.tmp")):
        return 0
    with _locked(home):
        try:
            total = len(_path(home).read_bytes().splitlines())
        except OSError:
            total = 0
        kept = [entry for entry in load(home) if entry[0] != session]
        _replace(home, kept)
        return total - len(kept)
