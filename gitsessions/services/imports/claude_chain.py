"""Claude Code's file as the tree it is: which lines make each conversation it holds. A
conversation is a path from a branch's newest line back to its root (`walk`), plus the
lines of the same steps that hang off it (`close`: parallel calls and their results
are chained one after another, so a call and its result can be off the path).

Invariants:
- Every line is in the index, in file order; a line whose parent is not in the file is
  joined to the line before it on its own side (`Index.joined`); only a first line, or
  one saying it has none, is a root.
- `close` adds, until nothing changes, each line whose parent is on the path and that is
  a result, more of the same message, or nothing to import: one step, in any order.
- `branches` covers every line with content: the main path, then, newest first, each
  branch left (an edited prompt, `/rewind`, a retry) with the line where it leaves.
Memory: uuid -> (parent, line), a flag and a uuid per line, a bitmap per path.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ANSWER = 1  # a user line of tool results only
CONTENT = 2  # something to import: a prompt, a reply, a result, a compaction's summary
SIDE = 4  # on a side chain (`isSidechain`: a subagent's lines)
ASSISTANT = 8
MAX_BRANCHES = 200  # branches of one file imported as forks; the rest counted


def answers(obj: dict[str, Any]) -> bool:
    """Whether a user line holds tool results (Claude Code writes each of a reply's
    parallel calls' results on a line of its own, whose parent is that call's line)."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def has_content(obj: dict[str, Any]) -> bool:
    """Whether a chained line holds anything the import keeps: a prompt typed, a reply's
    text, call or thinking, a tool's result, a compaction's summary."""
    kind = obj.get("type")
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if kind == "user":
        if obj.get("isMeta") is True:
            return False
        if isinstance(content, str):
            return bool(content.strip())
        return isinstance(content, list) and any(isinstance(b, dict) for b in content)
    if kind == "assistant":
        return isinstance(content, str) or (
            isinstance(content, list) and any(isinstance(b, dict) for b in content)
        )
    return False


@dataclass
class Index:
    """What the first pass keeps of each chained line."""

    parents: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    flags: bytearray = field(default_factory=lambda: bytearray(1))  # per line number
    messages: dict[int, str] = field(default_factory=dict)  # assistant line -> message id
    uuids: list[str | None] = field(default_factory=lambda: [None])  # per line number
    joined: int = 0  # lines whose parent is not in the file, joined to the line before
    _unseen: list[tuple[str, int, str | None]] = field(default_factory=list)
    _previous: list[str | None] = field(default_factory=lambda: [None, None])

    def add(self, uuid: str, parent: str | None, number: int, flags: int, message: Any) -> None:
        """A line, in file order; `parent` None for a root."""
        if number >= len(self.flags):
            grown = max(number + 1 - len(self.flags), len(self.flags))
            self.flags.extend(bytes(grown))
            self.uuids.extend([None] * grown)
        self.flags[number] = flags
        self.uuids[number] = uuid
        if flags & ASSISTANT and isinstance(message, str):
            self.messages[number] = message
        side = 1 if flags & SIDE else 0
        if parent is not None and parent not in self.parents:
            self._unseen.append((uuid, number, self._previous[side]))
        self.parents[uuid] = (parent, number)
        self._previous[side] = uuid

    def repair(self, keep: str | None = None) -> None:
        """Join each line whose parent never came to the line before it on its side (a
        file's first line stays a root); a parent `keep` is left as it is."""
        for uuid, number, before in self._unseen:
            parent = self.parents[uuid][0]
            if parent is None or parent in self.parents or parent == keep:
                continue
            self.parents[uuid] = (before, number)
            self.joined += before is not None
        self._unseen = []

    def flag(self, number: int) -> int:
        return self.flags[number] if number < len(self.flags) else 0

    def uuid_at(self, number: int) -> str | None:
        return self.uuids[number] if 0 <= number < len(self.uuids) else None


def walk(
    start: str | None, index: Index, lines: int, side: bool | None = None
) -> tuple[bytearray, int | None]:
    """The path from `start` back through its parents (only lines of that side, when
    `side` is given): a bitmap of its line numbers, and the line whose parent is not in
    the file (None: the path reached its root)."""
    path = bytearray(lines + 1)
    parents = index.parents
    seen: set[str] = set()
    while start is not None and start not in seen:
        parent, number = parents[start]
        if side is not None and bool(index.flag(number) & SIDE) != side:
            break
        seen.add(start)
        path[number] = 1
        if parent is not None and parent not in parents:
            return path, number
        start = parent
    return path, None


def close(path: bytearray, index: Index, side: bool) -> None:
    """Mark on `path` the lines of its steps that hang off it (see the invariants)."""
    parents, messages = index.parents, index.messages
    changed = True
    while changed:
        changed = False
        for parent, number in parents.values():
            if path[number] or parent is None or parent not in parents:
                continue
            above = parents[parent][1]
            flags = index.flag(number)
            if not path[above] or bool(flags & SIDE) != side:
                continue
            same_reply = flags & ASSISTANT and messages.get(number) == messages.get(above)
            if flags & ANSWER or not flags & CONTENT or same_reply:
                path[number] = 1
                changed = True


@dataclass
class Branch:
    """A path of the file other than its main one: its newest line, its lines, the
    line where it leaves the main path (the last they share before either holds a line
    the other does not: up to it both hold the same lines; None: none), and the uuid of
    its first line off the main path (what names the branch: it stays as it grows)."""

    tip: str
    path: bytearray
    fork_line: int | None
    first: str


def main_path(start: str | None, index: Index, lines: int, side: bool) -> bytearray:
    path, _cut = walk(start, index, lines, side)
    close(path, index, side)
    return path


def branches(main: bytearray, index: Index, lines: int, side: bool) -> Iterator[Branch]:
    """A path for each branch with content off `main` (of lines on `side`), newest
    first, until every such line is on a path; at most `MAX_BRANCHES`."""
    covered = bytearray(main)
    made = 0
    for uuid, (_parent, number) in reversed(list(index.parents.items())):
        flags = index.flag(number)
        if covered[number] or not flags & CONTENT or bool(flags & SIDE) != side:
            continue
        if made == MAX_BRANCHES:
            return
        path = main_path(uuid, index, lines, side)
        off = off_path(path, main)
        ends = [n for n in (off, off_path(main, path)) if n > 0]
        last = _and(path, main).rfind(1, 0, min(ends, default=len(path)))
        yield Branch(uuid, path, last if last > 0 else None, index.uuid_at(off) or uuid)
        made += 1
        covered = union(covered, path)


def off_path(path: bytearray, other: bytearray) -> int:
    """The first line of `path` not on `other` (-1: none)."""
    return (int.from_bytes(path) & ~int.from_bytes(other)).to_bytes(len(path)).find(1)


def _and(a: bytearray, b: bytearray) -> bytes:
    return (int.from_bytes(a) & int.from_bytes(b)).to_bytes(len(a))


def union(a: bytearray, b: bytearray) -> bytearray:
    """The lines on `a` or on `b`."""
    return bytearray((int.from_bytes(a) | int.from_bytes(b)).to_bytes(len(a)))


def left_over(covered: bytearray, index: Index) -> int:
    """Lines with content that no path holds."""
    return sum(1 for _p, n in index.parents.values() if not covered[n] and index.flag(n) & CONTENT)


def newest(path: bytearray, index: Index) -> str | None:
    """The uuid of the path's last line in the file (where its next line continues)."""
    last = path.rfind(1)
    return index.uuid_at(last) if last > 0 else None
