"""The heads this home gave each session branch: `store.git/gitsessions/heads`.

Invariants:
- `<session id> <commit id>` is appended (fsynced) before the branch moves to it, under
  the branch's flock and only while the branch holds the expected value (a commit written
  here, or a remote head a pull accepted); a kill between leaves a line `doctor` finds
  the branch behind.
- It is the only record `doctor --repair` restores or fast-forwards a branch from: a
  commit that came any other way (a fetched pack, a remote-tracking ref, any `Session:`
  trailer) is never in it, so nothing from outside can name where a branch goes.
- Append-only, except `compact` (gc, under the exclusive lock), which keeps what doctor
  can still use; ids only, no session text; a malformed line is skipped.
"""

import os
import re
from collections import deque
from collections.abc import Iterable, Mapping, Set
from pathlib import Path

from gitsessions.values.ids import is_session_id

_LINE = re.compile(rb"([0-9a-f]{32}) ([0-9a-f]{40})\n")
_LONGEST = 80  # a line is 74 bytes
KEEP = 64  # heads per session a reader keeps: the newest that still passes is used


def _path(store_path: Path) -> Path:
    return store_path / "gitsessions" / "heads"


def record(store_path: Path, moves: Iterable[tuple[str, bytes]]) -> None:
    """Append `(session id, commit)` for each branch about to move, in one fsynced write."""
    data = b"".join(sid.encode() + b" " + sha + b"\n" for sid, sha in moves)
    if not data:
        return
    path = _path(store_path)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def heads(store_path: Path, keep: int = KEEP) -> dict[str, list[bytes]]:
    """`{session id: [commit, ...]}`: the last `keep` heads recorded for it, oldest
    first (memory bounded by sessions, not by commits)."""
    out: dict[str, deque[bytes]] = {}
    try:
        file = _path(store_path).open("rb")
    except FileNotFoundError:
        return {}
    with file:
        while line := file.readline(_LONGEST):
            while not line.endswith(b"\n"):  # damage: skip the rest of an overlong line
                more = file.readline(_LONGEST)
                if not more:
                    break
                line = b"x" + more
            match = _LINE.fullmatch(line)
            if match is not None and is_session_id(match.group(1).decode()):
                sid = match.group(1).decode()
                if sid not in out:
                    out[sid] = deque(maxlen=keep)
                out[sid].append(match.group(2))
    return {sid: list(shas) for sid, shas in out.items()}


def compact(store_path: Path, branches: Mapping[str, bytes], deleted: Set[str]) -> None:
    """Rewrite the record with what `doctor` can still use (gc, under the store's
    exclusive lock): for a session with a branch, its head and whatever was recorded
    after that head (a move that may not have happened); for one with no branch that
    was not deleted (lost), its last heads; nothing for a deleted one. A branch whose
    head was never recorded (a store older than the record) gets it now. Written whole
    and fsynced beside the record, then renamed over it: a kill leaves one or the other."""
    recorded = heads(store_path)
    lines: list[tuple[str, bytes]] = []
    for sid in sorted(recorded.keys() | branches.keys()):
        shas = recorded.get(sid, [])
        head = branches.get(sid)
        if head is None:
            kept = [] if sid in deleted else shas
        elif head in shas:
            kept = shas[len(shas) - 1 - shas[::-1].index(head) :]
        else:
            kept = [head, *shas]
        lines.extend((sid, sha) for sha in kept)
    path = _path(store_path)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    new = path.with_name(path.name + ".new")
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(sid.encode() + b" " + sha + b"\n" for sid, sha in lines))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(new, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
