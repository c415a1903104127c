"""A pull's fork: this home's line of a session made a new session, when the remote's
line takes the id (diverged) or the remote deleted it while this home holds history the
remote never had.

Invariant: the fork is committed through the writer (`services.sessions.writer`: fresh
id, `parent_id` the original, `fork_point` the last commit the remote had of it, the
title marked with why); its post-fork hook is only named here (`HookCall`), and run by
the caller once the pull is done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitsessions.services.sync.report import HookCall
from gitsessions.values.ids import MAX_TITLE, new_id, short

if TYPE_CHECKING:
    from gitsessions.store.reader import Head
    from gitsessions.store.sessions import SessionStore


def fork_line(writing: SessionStore, ours: Head, why: str, base: bytes | None) -> Head:
    """This home's line of a session made a new session by a pull (`why` marks its
    title), its fork point `base`, the last commit the remote had of it."""
    from gitsessions.services.sessions import writer
    from gitsessions.values.clock import now_iso

    title = _fork_title(ours, why)
    return writer.fork(
        writing, ours, new_id(), title=title, created_at=now_iso(), fork_point=base,
        operation="pull",
    )  # fmt: skip


def fork_hooks(fork: Head | None, remote: str) -> list[HookCall]:
    """The post-fork hook call for a fork a pull made (none for None)."""
    from gitsessions.services.sessions.manage import fork_details

    if fork is None:
        return []
    return [("post-fork", fork.id, fork.commit.decode(), {**fork_details(fork), "remote": remote})]


def _fork_title(head: Head, why: str) -> str:
    title = str(head.header.get("title") or short(head.id))
    mark = f" ({why})"
    return title[: MAX_TITLE - len(mark)] + mark
