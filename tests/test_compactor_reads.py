"""A compaction of a stored session reads what the context and the new messages need:
the ledger is carried in the last compaction record, and older transcript lines are not
read at all (proved by removing one from the store), and it ends at the target."""

import json
from pathlib import Path

from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.compaction.compactor import compact_session
from gitsessions.services.compaction.continuation import SummaryRequest, SummaryResult
from gitsessions.services.compaction.ledger import build_ledger
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import loosen

POLICY = Policy(max_context_tokens=6000, keep_recent_tool_results=1, target=0.5)


def count(messages) -> int:
    return sum(len(json.dumps(m)) for m in messages) // 4 + 10


def summarize(request: SummaryRequest) -> SummaryResult:
    return SummaryResult("the summary", "fake", prompt_tokens=1, completion_tokens=1)


def turn(n: int) -> list[dict]:
    arguments = json.dumps({"path": f"f{n}.py"})
    call = {"id": f"c{n}", "type": "function",
            "function": {"name": "write_file", "arguments": arguments}}  # fmt: skip
    return [
        {"role": "user", "content": f"step {n}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"wrote f{n}.py " + "x" * 1200},
        {"role": "assistant", "content": f"done {n}"},
    ]


def grow(store: SessionStore, head, turns: range):
    for n in turns:
        messages = turn(n)
        context = store.read(head, "context") + messages
        head = store.commit(
            head, Change(context=context, append=messages), event="turn", subject=f"turn {n}"
        )
    return head


def compact(store: SessionStore, head):
    return compact_session(
        store, head, policy=POLICY, summarize=summarize, count=count,
        cost=lambda *_: 0.0, trigger="manual",
    )  # fmt: skip


def test_the_second_compaction_reads_no_line_before_the_first_one(home: Path) -> None:
    store = SessionStore(home, background_maintenance=False)
    system = {"role": "system", "content": "agent"}
    head = store.create(new_header(new_id(), now_iso()), Change(context=[system], append=[system]))
    head = grow(store, head, range(0, 12))
    first = compact(store, head)
    assert first.committed and first.result.after_tokens <= POLICY.target_tokens
    records = store.read(first.head, "compactions")
    assert records[-1]["ledger"]["through"] == first.head.counts["messages"]
    head = grow(store, first.head, range(12, 24))
    # take a line that only the first compaction read out of the store
    context_refs = {r for _m, r in store.context_lines(head) if r is not None}
    gone = next(
        (start, blob)
        for start, blob in store.segments(head)
        if start > 0 and start + 4 <= min(r for r in context_refs if r > 0)
    )
    loosen(home / "store.git")  # a commit writes a pack: its objects made loose files
    store.git.rescan()
    path = home / "store.git" / "objects" / gone[1][:2].decode() / gone[1][2:].decode()
    saved = path.read_bytes()
    path.unlink()
    try:
        second = compact(store, head)
    finally:
        path.write_bytes(saved)
    assert second.committed
    records = store.read(second.head, "compactions")
    assert "ledger" not in records[0] and records[1]["ledger"]["through"] == 1 + 24 * 4
    note = store.read(second.head, "context")[1]["content"]
    assert "f0.py" in note and "f23.py" in note  # the ledger spans both compactions
    whole = build_ledger([system, *(m for n in range(24) for m in turn(n))]).render(
        POLICY.ledger_tokens, lambda text: count([{"role": "user", "content": text}]) - count([])
    )
    assert whole.split("### Shell")[0] in note
