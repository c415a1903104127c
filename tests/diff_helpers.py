"""Sessions for the diff and revision tests, written through the public write path
(`services.sessions.writer`), turns numbered in their trailers as the agent numbers them."""

from typing import Any

from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import add_usage, new_header

SYSTEM = {"role": "system", "content": "You are a helpful coding agent."}


def new_session(
    store: SessionStore,
    title: str,
    turns: int = 0,
    tag: str = "",
    workspace: dict[str, Any] | None = None,
) -> Head:
    """A session with `turns` user/assistant turns, one commit each."""
    head = writer.create(
        store,
        new_header(new_id(), now_iso(), title=title, workspace=workspace),
        Change(context=[SYSTEM], append=[SYSTEM]),
        operation=None,
    )
    for n in range(1, turns + 1):
        head = turn(store, head, n, tag)
    return head


def turn(
    store: SessionStore,
    head: Head,
    n: int,
    tag: str = "",
    *,
    plan: list[dict[str, Any]] | None = None,
    trailers: dict[str, Any] | None = None,
) -> Head:
    """Turn `n`: a prompt and its reply (one request of 10 + 5 tokens) in one commit."""
    messages = [
        {"role": "user", "content": f"question {n} {tag}".strip() + "\nsecond line"},
        {"role": "assistant", "content": f"answer {n} {tag}".strip()},
    ]
    usage = add_usage(store.read(head, "usage"), "fake-model", 10, 5, 0.001)
    change = Change(
        header=touch(head.header),
        context=store.read(head, "context") + messages,
        append=messages,
        append_meta=[{}, {"model": "fake-model", "usage": {"prompt_tokens": 10}}],
        usage=usage,
        plan=plan,
    )
    edit = Edit(
        change, "turn", f"turn {n}: question {n}", {"Turn": n, "Step": 0, **(trailers or {})}
    )
    return writer.commit_on(store, head, edit).head


def commit(store: SessionStore, head: Head, change: Change, event: str, **trailers: Any) -> Head:
    """Any other event, through the writer."""
    return writer.commit_on(store, head, Edit(change, event, event, trailers)).head
