"""`gitsessions view` bench: the index of 1,000 sessions and the first page of a
100,000-message session, each served (goal under 0.5 s), and `view`'s start-up (the
process spawned until it prints its URL) against `list`'s (spawned until it exits into a
pipe), over the same small store (goal: within 1.5x).

The stores are written through the store's API in a temporary directory: 1,000 sessions
of one turn each; one session of 100,000 messages in 25,000 turns of four (prompt, tool
call, output, reply; each reply with the usage a server reports), a commit each (so a
chunk each, as the agent writes them), with a compaction every 2,500 turns; the view is served
in this process and asked over http.client (first request, then the median of `--reps`);
the first index request builds the header cache, as a first `list` does.
The page's peak Python allocation is measured once more under tracemalloc.

    uv run python bench/view.py [--reps 5] [--out bench/results/view.json]
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gitsessions.cli.state import State  # noqa: E402
from gitsessions.cli.view_cmd import source_of  # noqa: E402
from gitsessions.protocols.web.server import COOKIE, ViewServer  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.background import wait_for_maintenance  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402

GOAL_PAGE_S = 0.5
GOAL_START_RATIO = 1.5
SYSTEM = {"role": "system", "content": "You are a coding agent."}
COMPACT_EVERY = 2500  # turns


def many(home: Path, count: int) -> None:
    store = SessionStore(home, background_maintenance=False)
    for n in range(count):
        when = f"2026-12-01T{n // 3600 % 24:02}:{n // 60 % 60:02}:{n % 60:02}Z"
        header = new_header(new_id(), when, title=f"session {n}: fix bug {n * 7 % 101}")
        msgs = [SYSTEM, {"role": "user", "content": f"question {n}"},
                {"role": "assistant", "content": f"answer {n}"}]  # fmt: skip
        store.create(header, Change(context=msgs, append=msgs))
    maintenance.merge_packs(store.git)  # what background maintenance would have left
    store.close()
    wait_for_maintenance(home / "store.git")


def long_session(home: Path, messages: int) -> str:
    """One session of `messages` transcript messages: a commit a turn of four (prompt,
    tool call, output, reply, the replies with the usage a server reports), as the agent
    commits them, and a compaction every `COMPACT_EVERY` turns."""
    store = SessionStore(home, background_maintenance=False)
    sid = new_id()
    head = store.create(new_header(sid, "2026-12-01T00:00:00Z", title="long"),
                        Change(context=[SYSTEM], append=[SYSTEM]))  # fmt: skip
    tokens, turn, compactions = 1000, 0, []
    while head.counts["messages"] < messages:
        turn += 1
        usage = {"prompt_tokens": tokens, "completion_tokens": 50}
        arguments = json.dumps({"path": f"m{turn}.py"})
        call = {"id": f"c{turn}", "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
        batch = [
            {"role": "user", "content": f"task {turn}: read m{turn}.py"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": f"def f{turn}(): pass\n" * 20},
            {"role": "assistant", "content": f"m{turn}.py read"},
        ][: messages - head.counts["messages"]]
        meta = [{}, {"usage": usage}, {}, {"usage": {**usage, "prompt_tokens": tokens + 400}}]
        head = store.commit(
            head, Change(context=[SYSTEM, *batch], append=batch, append_meta=meta[: len(batch)]),
            event="turn", subject=f"turn {turn}: task {turn}", trailers={"Turn": turn, "Step": 2},
        )  # fmt: skip
        tokens += 600
        if turn % 500 == 0:  # what background maintenance would have done meanwhile
            maintenance.merge_packs(store.git)
        if turn % COMPACT_EVERY == 0:
            newest = store.records(head, head.counts["messages"] - 1)[0]
            compactions.append({"time": newest["time"], "trigger": "auto",
                                "stages": ["summarize"], "before_tokens": tokens,
                                "after_tokens": 3000, "summary": "s", "summarizer": None,
                                "cleared": []})  # fmt: skip
            head = store.commit(
                head, Change(context=[SYSTEM], compactions=list(compactions)), event="compact",
                subject=f"compact: {tokens} -> 3000 tokens",
                trailers={"Tokens-Before": tokens, "Tokens-After": 3000, "Trigger": "auto"},
            )  # fmt: skip
            tokens = 3000
    maintenance.merge_packs(store.git)
    store.close()
    wait_for_maintenance(home / "store.git")
    return sid


def get(server: ViewServer, path: str) -> tuple[float, int, int]:
    """(seconds, status, bytes) of one request."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    start = time.perf_counter()
    connection.request("GET", path, headers={"Cookie": f"{COOKIE}={server.token}"})
    answer = connection.getresponse()
    body = answer.read()
    took = time.perf_counter() - start
    connection.close()
    return took, answer.status, len(body)


def served(home: Path, path: str, reps: int) -> dict[str, Any]:
    state = State(home, dict(os.environ))
    server = ViewServer(source_of(state, None))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        first, status, size = get(server, path)
        assert status == 200, status
        times = [get(server, path)[0] for _ in range(reps)]
        tracemalloc.start()
        get(server, path)
        _now, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        server.shutdown()
        server.server_close()
        state.close()
    return {"first_s": first, "median_s": statistics.median(times), "max_s": max(times),
            "bytes": size, "peak_alloc_mb": peak / 1e6}  # fmt: skip


def startup(home: Path, reps: int) -> dict[str, Any]:
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "gitsessions"]
    lists, views = [], []
    for n in range(reps + 1):  # the first of each: a warm-up (bytecode caches)
        start = time.perf_counter()
        subprocess.run([*command, "list"], env=env, capture_output=True, check=True)
        took_list = time.perf_counter() - start
        start = time.perf_counter()
        view = subprocess.Popen([*command, "view"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        assert view.stdout is not None
        line = view.stdout.readline()
        took_view = time.perf_counter() - start
        view.terminate()
        view.wait()
        assert line.startswith("http://127.0.0.1:"), line
        if n:
            lists.append(took_list)
            views.append(took_view)
    return {"list_s": statistics.median(lists), "view_s": statistics.median(views),
            "ratio": statistics.median(views) / statistics.median(lists)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "view.json")
    args = parser.parse_args()
    results: dict[str, Any] = {"sessions": args.sessions, "messages": args.messages,
                               "load": os.getloadavg()}  # fmt: skip
    # in memory where there is a tmpfs: 25,000 commits, each fsynced, build in minutes there
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as work:
        small = Path(work) / "small"
        many(small, 3)
        results["startup"] = startup(small, args.reps)
        index_home = Path(work) / "index"
        many(index_home, args.sessions)
        results["index"] = served(index_home, "/", args.reps)
        long_home = Path(work) / "long"
        sid = long_session(long_home, args.messages)
        results["session"] = served(long_home, f"/s/{sid}", args.reps)
        middle = args.messages // 8
        results["turn"] = served(long_home, f"/s/{sid}/turn/{middle}", args.reps)
    rows = [
        (f"index, {args.sessions:,} sessions", results["index"]),
        (f"session page 1, {args.messages:,} messages", results["session"]),
        (f"turn {args.messages // 8:,} of it", results["turn"]),
    ]
    print(f"{'page':<34}{'first':>9}{'median':>9}{'max':>9}{'bytes':>10}{'peak MB':>9}  goal")
    for name, r in rows:
        goal = "" if name.startswith("turn") else f"< {GOAL_PAGE_S} s"
        ok = "" if not goal else (" ok" if r["median_s"] < GOAL_PAGE_S else " MISSED")
        print(f"{name:<34}{r['first_s']:>8.3f}s{r['median_s']:>8.3f}s{r['max_s']:>8.3f}s"
              f"{r['bytes']:>10,}{r['peak_alloc_mb']:>9.1f}  {goal}{ok}")  # fmt: skip
    s = results["startup"]
    verdict = "ok" if s["ratio"] <= GOAL_START_RATIO else "MISSED"
    print(f"start-up: list {s['list_s']:.3f} s, view (until its URL) {s['view_s']:.3f} s: "
          f"{s['ratio']:.2f}x (goal <= {GOAL_START_RATIO}x) {verdict}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
