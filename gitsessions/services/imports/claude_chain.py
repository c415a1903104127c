"""Claude Code's chain of lines: which lines of a file make a conversation.

Chained lines name their `parentUuid`; a chain is walked from its newest line back to
its root (`walk`). Claude Code 2.1.x writes each of a reply's parallel calls' results on
a user line of its own whose parent is that call's line: a branch of one line, which
`attach` puts on the chain its parent is on (`answers`: lines of tool results only);
any other line off the chain is an abandoned branch (a prompt edited or retried).
Memory: an index of uuid -> (parent, line number) and a bitmap of line numbers.
"""

from typing import Any


def answers(obj: dict[str, Any]) -> bool:
    """Whether a user line holds tool results (Claude Code writes each of a reply's
    parallel calls' results on a line of its own, whose parent is that call's line)."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def attach(chain: bytearray, answers: set[str], parents: dict[str, tuple[str | None, int]]) -> int:
    """Mark on `chain` each line of tool results off it whose parent is on it (a
    parallel call's result: a branch of one line); how many were marked."""
    marked = 0
    for uuid in answers:
        parent, number = parents[uuid]
        if chain[number] or parent is None or parent not in parents:
            continue
        if chain[parents[parent][1]]:
            chain[number] = 1
            marked += 1
    return marked


def newest(chain: bytearray, parents: dict[str, tuple[str | None, int]]) -> str | None:
    """The uuid of the chain's last line in the file (where its next line continues)."""
    last = chain.rfind(1)
    if last <= 0:
        return None
    return next((u for u, (_p, n) in parents.items() if n == last), None)


def walk(
    start: str | None,
    parents: dict[str, tuple[str | None, int]],
    lines: int,
    within: dict[str, None] | None,
) -> tuple[bytearray, int, int | None]:
    """The chain from `start` back through its parents (only lines in `within`, when
    given): a bitmap of its line numbers, its length, and the line whose parent is
    missing from the file (None: the chain reached its root)."""
    chain = bytearray(lines + 1)
    seen: set[str] = set()
    while start is not None and start not in seen and (within is None or start in within):
        seen.add(start)
        parent, number = parents[start]
        chain[number] = 1
        if parent is not None and parent not in parents:
            return chain, len(seen), number
        start = parent
    return chain, len(seen), None
