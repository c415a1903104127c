"""Undoing the last compaction (`compact --undo`, `\\compact undo`): the working context
as it was before it, plus what came since, as one new commit; and the hold that keeps
auto-compaction from running again at once.

Invariants:
- Nothing is lost: the compaction commit stays in history, `compactions.json` keeps its
  record, the transcript gains one record (a system message starting `[compaction
  undone]`, never sent to a model), and the commit (`Event: compact-undo`, trailers
  `Compaction`, `Tokens-Before`, `Tokens-After`) goes through the one write path.
- The compaction undone is the newest not undone yet: after undoing N, a second undo
  takes back N-1 (while no compaction came since).
- The context after the undo is the context before the compaction (its system prompt
  the current one) followed by every message the context gained since the compaction;
  when the context changed in another way since (a `\\undo`, a rewind), the undo is
  refused and nothing is written.
- The hold: the header's `compaction_undone` records the undo (`compaction`, the
  `compactions` count then, `tokens`: the context's size at the undo, `after_tokens`:
  what the compaction had left). While no compaction came since, auto-compaction runs
  only once the context has grown, since the undo, by as much as would have taken the
  compacted context past the threshold again (`tokens + threshold - after_tokens`), and
  in any case before a request would exceed the budget (`hold.auto_threshold`).
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
