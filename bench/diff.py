"""Diff bench: how long `diff A B` takes as the histories grow.

Cases, for sessions of N turns (one commit each):
- `fork at head`: a fork made at the parent's last turn, one more turn on each side;
- `fork at turn 1`: a fork made after turn 1, then N-1 more turns on the parent: the
  walk to the ancestor crosses the parent's whole history;
- `earlier turn`: a session against its own `@turn:1`;
- `unrelated`: two sessions of N turns that share nothing (both read from empty).
Everything runs in a temporary home removed at the end; the store is packed (gc) before
measuring, as a long-lived store would be. Prints a table; writes JSON.

    uv run python bench/diff.py --quick
    uv run python bench/diff.py --turns 100,1000 --out /tmp/diff.json
"""

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gitsessions.services.sessions import manage, session_diff, writer  # noqa: E402
from gitsessions.services.sessions.revisions import resolve  # noqa: E402
from gitsessions.services.sessions.writer import Edit  # noqa: E402
from gitsessions.store.sessions import Change, Head, SessionStore, touch  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402

REPS = 5
LINE = "{:>6}  {:<16} {:>10}  {:>12}  {:>13}"


def make(store: SessionStore, title: str, turns: int, first: int = 1) -> Head:
    system = {"role": "system", "content": "You are a helpful coding agent."}
    head = writer.create(
        store,
        new_header(new_id(), "2026-12-01T10:00:00Z", title=title),
        Change(context=[system], append=[system]),
        operation=None,
    )
    return more(store, head, turns, first)


def more(store: SessionStore, head: Head, turns: int, first: int) -> Head:
    for n in range(first, first + turns):
        messages = [
            {"role": "user", "content": f"question {n}: " + "words " * 40},
            {"role": "assistant", "content": f"answer {n}: " + "more words " * 60},
        ]
        context = store.read(head, "context")[-40:] + messages
        change = Change(header=touch(head.header), context=context, append=messages)
        edit = Edit(change, "turn", f"turn {n}: question {n}", {"Turn": n, "Step": 0})
        head = writer.commit_on(store, head, edit).head
    return head


def timed(store: SessionStore, a: str, b: str) -> dict[str, Any]:
    times = []
    data: dict[str, Any] = {}
    for _ in range(REPS):
        start = time.perf_counter()
        data = session_diff.diff(store, resolve(store, a), resolve(store, b))
        times.append(time.perf_counter() - start)
    sides = [data[s]["changes"] for s in ("a", "b")]
    return {
        "median_ms": round(statistics.median(times) * 1000, 2),
        "commits_since_ancestor": [s["commits"] for s in sides],
        "messages_appended": [len(s["messages"]["appended"]) for s in sides],
        "ancestor": data["ancestor"]["kind"],
    }


def run(ns: list[int]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "home", background_maintenance=False)
        for n in ns:
            parent = make(store, "parent", n)
            at_head = manage.fork(store, parent.id, "fork at head")
            more(store, at_head, 1, n + 1)
            parent = more(store, parent, 1, n + 1)
            early = make(store, "early parent", 1)
            late = manage.fork(store, early.id, "fork at turn 1")
            more(store, late, 1, 2)
            more(store, early, n - 1, 2)
            other = make(store, "other", n)
            manage.gc(store)
            cases = {
                "fork at head": (parent.id, at_head.id),
                "fork at turn 1": (early.id, late.id),
                "earlier turn": (f"{parent.id}@turn:1", parent.id),
                "unrelated": (parent.id, other.id),
            }
            for name, (a, b) in cases.items():
                rows.append({"turns": n, "case": name, **timed(store, a, b)})
                show(rows[-1])
        store.close()
    return rows


def show(row: dict[str, Any]) -> None:
    """One row of the table, printed as soon as it is measured."""
    commits = "/".join(map(str, row["commits_since_ancestor"]))
    messages = "/".join(map(str, row["messages_appended"]))
    print(LINE.format(row["turns"], row["case"], row["median_ms"], commits, messages), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sessions only")
    parser.add_argument("--turns", help="session sizes, comma-separated (default 100,1000,5000)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "diff.json")
    args = parser.parse_args()
    ns = [50, 200] if args.quick else [100, 1_000, 5_000]
    if args.turns:
        ns = [int(n) for n in args.turns.split(",")]
    print(LINE.format("turns", "case", "median ms", "commits A/B", "messages A/B"), flush=True)
    rows = run(ns)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "bench": "diff",
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "reps": REPS,
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
