"""A fork joined back (`merge`, `\\merge`, the MCP server's `merge_session`): its code
(merge_code.py) and then its conversation (sessions/merging.py), in one call.

Invariants:
- All of it happens under the lease of the session merged into (the caller's, in the
  chat) and the fork's (no agent of the fork runs meanwhile); the fork is never written.
- The code goes first: when it is refused (changes no snapshot holds, no snapshot)
  nothing is committed; the merge commit then names what the code merge did and the
  snapshot it left (`Code-Snapshot`).
- `chat=False` merges the code alone (no commit in the store); `code=False` the
  conversation alone (the workspace untouched).
"""

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsessions.services.code.merge_code import Merged, merge_code
from gitsessions.services.code.worktree_mark import check, workspace_for
from gitsessions.services.sessions import merging
from gitsessions.services.sessions.writer import Written
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short


@dataclass
class ForkMerge:
    fork: Head
    into: str
    code: Merged | None = None
    written: Written | None = None
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """What `merge --json` prints and the MCP tool `merge_session` answers."""
        code = self.code
        return {
            "fork": self.fork.id,
            "into": self.into,
            "commit": self.written.head.commit.decode() if self.written else None,
            "committed": bool(self.written and self.written.committed),
            "code": None
            if code is None
            else {
                "files": [{"status": s, "path": p} for s, p in code.files],
                "conflicts": code.conflicts,
                "base": code.base,
                "theirs": code.theirs,
                "ours": code.ours,
                "result": code.result,
                "saved": code.saved,
            },
        }


def place(home: Path, head: Head, env: Mapping[str, str], fallback: Path) -> Path:
    """Where a session's code is: its worktree (when this home made it:
    `worktree_mark.check`), else its recorded workspace when it is still there (not
    when its worktree mark is refused: the record came with it), else `fallback`."""
    checked = check(home, head.id, head.header, env)
    if checked.mark is not None and checked.live:
        return workspace_for(head.header, checked.mark)
    recorded = (head.header.get("workspace") or {}).get("path")
    if checked.refused is None and recorded and Path(recorded).is_dir():
        return Path(recorded)
    return fallback


def target(store: SessionStore, fork: Head, into: str | None) -> str:
    """The session a fork is merged into: `into`, else the fork's parent."""
    if into is not None:
        return store.resolve(into)
    parent = fork.header.get("parent_id")
    if not isinstance(parent, str) or not parent:
        raise InvalidInput(
            f"session {short(fork.id)} is not a fork; name the session to merge it into with --into"
        )
    if not store.exists(parent):
        raise InvalidInput(
            f"fork {short(fork.id)}'s parent {short(parent)} is not in this store; "
            "name another with --into"
        )
    return parent


def merge(
    store: SessionStore,
    env: Mapping[str, str],
    fork_id: str,
    into: str | None,
    *,
    workspace: Path | Callable[[Head], Path] | None,
    chat: bool = True,
    code: bool = True,
    force: bool = False,
    lease_held: bool = False,
) -> ForkMerge:
    """Merge fork `fork_id` into `into` (default: its parent). `workspace`: where the
    code of the session merged into is, or a function of its head (read under its
    lease) that says where (`place`; None with `code=False`); `lease_held`: the caller
    holds that session's lease (the chat)."""
    if not chat and not code:
        raise InvalidInput("nothing to merge: give --chat, --code or neither")
    fork = store.head(fork_id)
    into_id = target(store, fork, into)
    if into_id == fork.id:
        raise merging.NothingToMerge(f"cannot merge session {short(fork.id)} into itself")
    with contextlib.ExitStack() as held:
        if not lease_held:
            held.enter_context(Lease(store.home, into_id))
        held.enter_context(Lease(store.home, fork.id))
        fork = store.head(fork.id)
        head = store.head(into_id)
        done = ForkMerge(fork, into_id)
        if chat and not merging.already_merged(head, fork):
            merging.check(head, fork, merging.own_start(store, fork))
        if code:
            assert workspace is not None, "the code merges into a workspace"
            where = workspace if isinstance(workspace, Path) else workspace(head)
            done.code = merge_code(store, env, head, fork, where, force)
            done.notes += done.code.notes
        if chat:
            done.written = merging.merge_chat(
                store,
                into_id,
                fork,
                code_note=done.code.said() if done.code else "",
                snapshot=done.code.result if done.code else None,
                lease_held=True,
            )
    return done
