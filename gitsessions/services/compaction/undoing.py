"""Undoing the last compaction (`compact --undo`, `\\compact undo`) as one new commit, and
the hold that keeps auto-compaction from running again at once.

Invariants:
- Nothing is lost: the compaction commit and record stay, the transcript gains one
  `[compaction undone]` record (never sent), the commit goes through the writer.
- The newest compaction not yet undone is undone (a second undo takes back N-1).
- The context becomes the one before the compaction plus what came since; when it
  changed otherwise since (`\\undo`, a rewind) the undo is refused, nothing written.
- The hold (`compaction_undone` in the header): auto-compaction waits until the context
  grew by what would take the compacted one past the threshold again, and never lets a
  request exceed the budget (`hold.auto_threshold`).
"""

from collections.abc import Callable
from dataclasses import dataclass

from gitsessions.services.compaction.history import UNDO_EVENT, NoSuchCompaction, find
from gitsessions.services.compaction.hold import HOLD
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit, Written
from gitsessions.store.reader import Head
from gitsessions.store.sessions import Change, SessionStore, touch
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import Message
from gitsessions.values.plural import plural

Count = Callable[[list[Message]], int]
MARK = "[compaction undone]"


class CannotUndo(GitsessionsError):
    """The last compaction cannot be undone; nothing was written."""


@dataclass(frozen=True)
class Undone:
    number: int
    before_tokens: int  # the context's size before the undo
    after_tokens: int  # and after it
    since: int  # messages the context gained after the compaction, kept
    written: Written

    def said(self, session_id: str) -> str:
        """What the undo did, in one line (`compact --undo`, `\\compact undo`)."""
        return (
            f"undid compaction {self.number} of {session_id[:8]}: {self.before_tokens:,} -> "
            f"{self.after_tokens:,} tokens; auto-compaction waits until the context grows anew"
        )


def next_to_undo(head: Head) -> int:
    """The number of the compaction an undo takes back (0: none left)."""
    total = head.counts.get("compactions", 0)
    hold = head.header.get(HOLD)
    if isinstance(hold, dict) and hold.get("compactions") == total:
        undone = hold.get("compaction")
        if isinstance(undone, int) and 0 < undone <= total:
            return undone - 1
    return total


def undo_last(store: SessionStore, head: Head, context: list[Message], count: Count) -> Undone:
    """Write the working context as it was before the newest compaction not undone yet.
    `context` is the session's current context (the agent's, or the stored one)."""
    number = next_to_undo(head)
    if number == 0:
        why = "it has none" if not head.counts.get("compactions") else "all are undone"
        raise CannotUndo(f"no compaction to undo in session {head.id[:8]}: {why}")
    try:
        found = find(store, head, number)
    except NoSuchCompaction as error:
        raise CannotUndo(str(error)) from None
    if not context:
        raise CannotUndo(f"session {head.id[:8]} has no working context to restore into")
    before = store.read(found.before, "context")
    after = store.read(found.after, "context")
    if context[1 : len(after)] != after[1:]:
        raise CannotUndo(
            f"the working context changed since compaction {number} other than by new "
            "messages (an undo or a rewind); nothing was written"
        )
    since = context[len(after) :]
    restored = [context[0], *before[1:], *since]
    tokens_now, tokens = count(context), count(restored)
    header = touch(
        head.header,
        **{
            HOLD: {
                "compaction": number,
                "compactions": head.counts.get("compactions", 0),
                "tokens": tokens,
                "after_tokens": _recorded_after(store, found.after, number),
            }
        },
    )
    mark: Message = {
        "role": "system",
        "content": f"{MARK} compaction {number} taken back: the working context is as it "
        f"was before it ({tokens_now} -> {tokens} tokens), with "
        f"{plural(len(since), 'message')} added since",
    }
    edit = Edit(
        Change(header=header, context=restored, append=[mark]),
        UNDO_EVENT,
        f"compact undo: compaction {number}, {tokens_now} -> {tokens} tokens",
        {"Compaction": number, "Tokens-Before": tokens_now, "Tokens-After": tokens},
    )
    written = writer.audited(
        store, UNDO_EVENT, head.id, lambda: writer.commit_on(store, head, edit), compaction=number
    )
    return Undone(number, tokens_now, tokens, len(since), written)


def _recorded_after(store: SessionStore, after: Head, number: int) -> int:
    records = store.read(after, "compactions")
    value = records[number - 1].get("after_tokens") if len(records) >= number else None
    return value if isinstance(value, int) else 0
