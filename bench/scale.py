"""Scale bench (issue 9): giant messages and search over many forks.

Everything runs in a temporary directory made at run time (removed at the end); message
content comes from a fixed seed. Each case runs the real `gitsessions` CLI in a child
process against the fake OpenAI server of the tests (127.0.0.1, no network) and reports
its wall time and peak RSS (`wait4`), so one case cannot inflate another's numbers.

Sections:
- giant: one `exec` turn after a session holding a 20 MB tool-call argument (`arg`), a
  30 MB assistant reply (`reply`), and a turn whose model answers with a 20 MB tool call
  (`mid-turn`: the giant is in the current turn, so only stage 1 can shrink it). Reported:
  exit code, seconds, peak RSS, and whether the next request fit the budget.
- search: a 1,000-turn session forked 0 / 10 / 100 times; `search` in a new process, the
  first one after the forks (it refreshes the index) and a second one; index bytes.
- team (only when named): a remote of `--sessions` sessions of one project, pulled and
  listed in a fresh home (bench/scale_team.py, issue 46).

    uv run python bench/scale.py                    # both sections, a few minutes
    uv run python bench/scale.py --only giant --out /tmp/scale.json
    uv run python bench/scale.py --only team --sessions 5000
"""

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.measured import CODE, environment, run_cli, run_measured  # noqa: E402
from bench.scale_team import team_cases  # noqa: E402
from gitsessions.services.compaction.continuation import is_note, note_data  # noqa: E402
from gitsessions.services.compaction.ledger import LEDGER_HEADING  # noqa: E402
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.clock import now_iso  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402
from gitsessions.values.tokens import default_counter  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

SEED = 20250101
BUDGET = 24_000
SUMMARIZER = "You write the continuation summary"
WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "config", "parser", "token",
         "index", "cache", "session")  # fmt: skip


def text_of_size(chars: int, rng: random.Random) -> str:
    """Code-like lines (so tiktoken sees ordinary text, not one pathological run)."""
    lines: list[str] = []
    size = 0
    while size < chars:
        name, call = rng.choice(WORDS), rng.choice(WORDS)
        line = f"{name}_{rng.randrange(10**6)} = {call}({rng.random():.6f})"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


# -- giant messages ---------------------------------------------------------------------


def _call(call_id: str, path: str, content: str) -> dict[str, Any]:
    arguments = json.dumps({"path": path, "content": content})
    return {"id": call_id, "type": "function",
            "function": {"name": "write_file", "arguments": arguments}}  # fmt: skip


def giant_session(home: Path, workspace: Path, kind: str, rng: random.Random) -> str:
    """A session whose last turn holds a giant tool argument or reply."""
    system = {"role": "system", "content": "You are a coding agent."}
    turn: list[dict[str, Any]] = [{"role": "user", "content": "write the data file"}]
    if kind == "arg":
        big = text_of_size(20_000_000, rng)
        turn += [
            {"role": "assistant", "content": None, "tool_calls": [_call("c1", "data.txt", big)]},
            {"role": "tool", "tool_call_id": "c1", "content": "wrote data.txt (20000000 chars)"},
            {"role": "assistant", "content": "Done: data.txt is written."},
        ]
    else:
        turn.append({"role": "assistant", "content": text_of_size(30_000_000, rng)})
    sid = new_id()
    store = SessionStore(home, background_maintenance=False)
    try:
        header = new_header(sid, now_iso(), title=kind, workspace={"path": str(workspace)})
        head = store.create(header, Change(context=[system], append=[system]))
        store.commit(head, Change(context=[system, *turn], append=turn), event="import",
                     subject="import")  # fmt: skip
    finally:
        store.close()
    return sid


def giant_case(root: Path, kind: str, timeout: float) -> dict[str, Any]:
    rng = random.Random(SEED)
    home, workspace = root / kind / "home", root / kind / "ws"
    workspace.mkdir(parents=True)
    big_call = None
    if kind == "mid-turn":
        big_call = _call("big", "data.txt", text_of_size(20_000_000, rng))
        resume: list[str] = []
    else:
        resume = ["--resume", giant_session(home, workspace, kind, rng)]
    sent: list[int] = []
    counter = default_counter()
    tools = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]

    def responder(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if messages[0]["content"].startswith(SUMMARIZER):
            return {"content": "Goal: write data.txt.", "usage": (900, 10)}
        if "tools" in request:
            sent.append(counter.count_context(messages, tools))
        if big_call is not None and messages[-1]["role"] == "user":
            return {"content": None, "tool_calls": [big_call], "usage": None}
        return {"content": "Next step done.", "usage": None}

    with FakeOpenAI() as server:
        server.responder = responder
        result = run_cli(
            ["exec", "next step", *resume, "--base-url", server.base_url, "--model", "fake",
             "--workspace", str(workspace), "--auto-approve", "--json"],
            environment(home), timeout,
        )  # fmt: skip
    result["requests_tokens"] = sent
    result["fits"] = result["code"] == 0 and all(n <= BUDGET for n in sent)
    result.pop("stdout")
    return result


# -- search over forks ------------------------------------------------------------------


def search_cases(root: Path, forks: Sequence[int], turns: int, timeout: float) -> list[dict]:
    """One 1,000-turn session, forked up to max(forks) times; after each step, a new
    process runs `search` twice (the first refreshes the index)."""
    rng = random.Random(SEED)
    home = root / "search" / "home"
    store = SessionStore(home, background_maintenance=False)
    rows: list[dict[str, Any]] = []
    try:
        sid = new_id()
        system = {"role": "system", "content": "You are a coding agent."}
        head = store.create(new_header(sid, now_iso(), title="long"),
                            Change(context=[system], append=[system]))  # fmt: skip
        body: list[dict[str, Any]] = []
        for n in range(turns):
            body += [
                {"role": "user", "content": f"turn {n}: " + text_of_size(400, rng)},
                {"role": "assistant", "content": f"reply {n}: " + text_of_size(1600, rng)},
            ]
        head = store.commit(head, Change(append=body), event="import", subject="import")
        made = 0
        for target in forks:
            while made < target:
                store.fork(head, new_id(), title=f"fork {made}", created_at=now_iso())
                made += 1
            env = environment(home)
            first = run_cli(["search", "turn 999:", "--json"], env, timeout)
            second = run_cli(["search", "reply 500:", "--json"], env, timeout)
            index = home / "search.sqlite"
            rows.append({
                "forks": target,
                "index_bytes": index.stat().st_size if index.exists() else 0,
                "first_search_seconds": first["seconds"],
                "second_search_seconds": second["seconds"],
                "first_search_rss_mb": first["peak_rss_mb"],
                "hits": len(json.loads(first["stdout"] or "[]")),
                "code": first["code"] or second["code"],
            })  # fmt: skip
    finally:
        store.close()
    return rows


# -- reads: show / log / export / import ----------------------------------------------


def _turn(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """One turn of four messages: prompt, a tool call, its result, a reply."""
    call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{n}.py"})},
    }
    return [
        {"role": "user", "content": f"turn {n}: " + text_of_size(200, rng)},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": text_of_size(1200, rng)},
        {"role": "assistant", "content": f"reply {n}: " + text_of_size(400, rng)},
    ]  # fmt: skip


def long_session(home: Path, messages: int, commits: int, rng: random.Random) -> str:
    """A session of `messages` messages written in `commits` commits (whole turns each),
    its working context the last few turns (as after compactions)."""
    store = SessionStore(home, background_maintenance=False)
    try:
        sid = new_id()
        system = {"role": "system", "content": "You are a coding agent."}
        head = store.create(new_header(sid, now_iso(), title=f"{messages} messages"),
                            Change(context=[system], append=[system]))  # fmt: skip
        turns = max(1, messages // 4)
        per_commit = max(1, turns // commits)
        recent: list[dict[str, Any]] = []
        for start in range(0, turns, per_commit):
            body = [m for n in range(start, min(turns, start + per_commit)) for m in _turn(n, rng)]
            recent = (recent + body)[-160:]  # ~25k tokens: over the budget
            head = store.commit(head, Change(context=[system, *recent], append=body),
                                event="turn", subject=f"turn {start + 1}: next",
                                trailers={"Turn": start + 1, "Step": 0})  # fmt: skip
    finally:
        store.close()
    return sid


def read_cases(root: Path, sizes: Sequence[int], timeout: float) -> list[dict[str, Any]]:
    """Per size: `show`, `log` and `export` against their `--json` forms (seconds, peak
    RSS, bytes of output), and `import` of the export (peak RSS)."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        rng = random.Random(SEED)
        home = root / f"reads-{size}" / "home"
        sid = long_session(home, size, min(1000, max(1, size // 4)), rng)
        env = environment(home)
        row: dict[str, Any] = {"messages": size, "code": 0}
        for name, args in [
            ("show", ["show", sid]), ("show_json", ["show", sid, "--json"]),
            ("log", ["log", sid]), ("log_json", ["log", sid, "--json"]),
        ]:  # fmt: skip
            result = run_cli(args, env, timeout)
            row[f"{name}_s"] = result["seconds"]
            row[f"{name}_mb"] = result["peak_rss_mb"]
            row["code"] = row["code"] or result["code"]
        export = root / f"reads-{size}" / "export.json"
        result = run_cli(["export", sid, "-o", str(export)], env, timeout)
        row["export_s"], row["export_mb"] = result["seconds"], result["peak_rss_mb"]
        row["export_bytes"] = export.stat().st_size if export.exists() else 0
        other = environment(root / f"reads-{size}" / "home2")
        result = run_cli(["import", str(export)], other, timeout)
        row["import_s"], row["import_mb"] = result["seconds"], result["peak_rss_mb"]
        row["code"] = row["code"] or result["code"]
        row["show_ratio"] = round(row["show_s"] / max(row["show_json_s"], 0.01), 2)
        row["log_ratio"] = round(row["log_s"] / max(row["log_json_s"], 0.01), 2)
        rows.append(row)
        shutil.rmtree(root / f"reads-{size}", ignore_errors=True)
    return rows


# -- compaction at length ---------------------------------------------------------------


COMPACT_ONCE = """
import json, sys, time
from pathlib import Path
from bench.compaction import local_summarizer
from gitsessions.services.compaction.compaction import Policy
from gitsessions.services.compaction.compactor import compact_session
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS
from gitsessions.store.sessions import SessionStore
from gitsessions.values.tokens import default_counter
home, sid = sys.argv[1:3]
store = SessionStore(Path(home), background_maintenance=False)
counter = default_counter()
tools = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]
start = time.perf_counter()
recorded = compact_session(
    store, store.head(sid), policy=Policy(max_context_tokens=24000, target=0.5),
    summarize=local_summarizer, count=lambda m: counter.estimate(m, tools),
    cost=lambda *usage: 0.0, trigger="auto")
ms = (time.perf_counter() - start) * 1000
result = recorded.result
print(json.dumps({"ms": ms, "before": result.before_tokens, "after": result.after_tokens,
                  "outcome": result.outcome}))
"""


def compaction_cases(root: Path, sizes: Sequence[int], timeout: float) -> list[dict[str, Any]]:
    """Per size: a session of that many messages compacted once (this builds the
    ledger), then 20 more turns, then one more compaction measured in a process of its
    own (five times, on copies of the store; the median): milliseconds of
    `compact_session` alone, the process's peak RSS, and the ledger's tokens in the
    continuation note."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        rng = random.Random(SEED)
        home = root / f"compact-{size}" / "home"
        sid = long_session(home, size, min(200, max(1, size // 4)), rng)
        env = environment(home)
        once = [sys.executable, "-c", COMPACT_ONCE, str(home), sid]
        first = run_measured(once, env, timeout)
        store = SessionStore(home, background_maintenance=False)
        try:
            head = store.head(sid)
            context = store.read(head, "context")
            body = [m for n in range(size, size + 20) for m in _turn(n, rng)]
            store.commit(head, Change(context=[*context, *body], append=body),
                         event="turn", subject="turn: more", trailers={"Turn": 1})  # fmt: skip
        finally:
            store.close()
        runs = []  # the same compaction on copies of the store: the median of 5
        for n in range(5):
            copy = root / f"compact-{size}" / f"copy{n}"
            shutil.copytree(home, copy, symlinks=True)
            run = run_measured([*once[:3], str(copy), sid], environment(copy), timeout)
            runs.append((json.loads(run["stdout"] or "{}").get("ms", 0), run))
            if n < 4:
                shutil.rmtree(copy)
        second = sorted(runs, key=lambda item: item[0])[2][1]
        home = root / f"compact-{size}" / "copy4"
        data = json.loads(second["stdout"] or "{}")
        store = SessionStore(home, background_maintenance=False)
        try:
            context = store.read(store.head(sid), "context")
        finally:
            store.close()
        notes = [note_data(m) for m in context if is_note(m)]
        ledger = notes[0].partition(LEDGER_HEADING)[2] if notes else ""
        rows.append({
            "messages": size,
            "first_ms": round(json.loads(first["stdout"] or "{}").get("ms", 0)),
            "ms": round(data.get("ms", 0)),
            "peak_rss_mb": second["peak_rss_mb"],
            "tokens_before": data.get("before"),
            "tokens_after": data.get("after"),
            "ledger_tokens": default_counter().count_text(ledger) if ledger else 0,
            "code": first["code"] or second["code"],
            "stderr": first["stderr"] + second["stderr"],
        })  # fmt: skip
        shutil.rmtree(root / f"compact-{size}", ignore_errors=True)
    return rows


def compaction_rate(root: Path, turns: int, target: str, timeout: float) -> dict[str, Any]:
    """`turns` exec turns, each reading a 5 KB file, at compact_target `target`: how many
    auto-compactions they caused (per 100 turns)."""
    rng = random.Random(SEED)
    home, workspace = root / f"rate-{target}" / "home", root / f"rate-{target}" / "ws"
    workspace.mkdir(parents=True)
    for n in range(turns):
        (workspace / f"m{n}.py").write_text(text_of_size(5000, rng))
    step = [0]

    def responder(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if messages[0]["content"].startswith(SUMMARIZER):
            return {"content": "Goal: read every module.", "usage": (900, 10)}
        if messages[-1]["role"] == "user":
            step[0] += 1
            call = {
                "id": f"c{step[0]}",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"m{step[0] - 1}.py"}),
                },
            }
            return {"content": None, "tool_calls": [call], "usage": None}
        return {"content": "Read it. " + text_of_size(300, rng), "usage": None}

    env = {**environment(home), "GITSESSIONS_COMPACT_TARGET": target}
    sid = ""
    with FakeOpenAI() as server:
        server.responder = responder
        for n in range(turns):
            resume = ["--resume", sid] if sid else []
            result = run_cli(
                ["exec", f"read m{n}.py", *resume, "--base-url", server.base_url,
                 "--model", "fake", "--workspace", str(workspace), "--auto-approve", "--json"],
                env, timeout)  # fmt: skip
            if result["code"]:
                return {"target": target, "turns": n, "code": result["code"],
                        "stderr": result["stderr"]}  # fmt: skip
            sid = sid or json.loads(result["stdout"])["session"]
    log = run_cli(["log", sid, "--json"], environment(home), timeout)
    compactions = sum(1 for e in json.loads(log["stdout"]) if e["event"] == "compact")
    return {"target": target, "turns": turns, "compactions": compactions,
            "per_100_turns": round(100 * compactions / turns, 1), "code": 0}  # fmt: skip


# -- output -----------------------------------------------------------------------------


def table(title: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only",
        default="giant,search,reads,compaction,rate",
        help="sections: giant,search,reads,compaction,rate,team (team: not by default)",
    )
    parser.add_argument("--sessions", type=int, default=50_000, help="sessions for team")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/scale.json")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per case")
    parser.add_argument("--forks", default="0,10,100", help="fork counts for search")
    parser.add_argument("--turns", type=int, default=1000, help="turns of the searched session")
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="messages per session for reads and compaction"
    )
    parser.add_argument("--rate-turns", type=int, default=100, help="exec turns for rate")
    parser.add_argument("--label", default="", help="a name for this run (e.g. before, after)")
    parser.add_argument("--code", type=Path, default=REPO,
                        help="run the gitsessions found in this directory (e.g. an older "
                        "checkout made with `git archive`); setup uses this one")  # fmt: skip
    args = parser.parse_args(argv)
    CODE[0] = args.code.resolve()
    sections = set(args.only.split(","))
    report: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "label": args.label,
        "code": str(CODE[0]) if CODE[0] != REPO else "this checkout",
        "python": platform.python_version(),
        "loadavg": os.getloadavg(),
    }
    root = Path(tempfile.mkdtemp(prefix="gitsessions-scale-"))
    steps: list[tuple[str, Callable[[], Any]]] = []
    if "giant" in sections:
        steps.append(("giant", lambda: [
            {"case": kind, **giant_case(root, kind, args.timeout)}
            for kind in ("arg", "reply", "mid-turn")
        ]))  # fmt: skip
    if "search" in sections:
        forks = [int(n) for n in args.forks.split(",")]
        steps.append(("search", lambda: search_cases(root, forks, args.turns, args.timeout)))
    sizes = [int(n) for n in args.sizes.split(",")]
    if "reads" in sections:
        steps.append(("reads", lambda: read_cases(root, sizes, args.timeout)))
    if "compaction" in sections:
        steps.append(("compaction", lambda: compaction_cases(root, sizes, args.timeout)))
    if "rate" in sections:
        steps.append(("rate", lambda: [compaction_rate(root, args.rate_turns, target, args.timeout)
                                       for target in ("0.8", "0.5")]))  # fmt: skip
    if "team" in sections:
        steps.append(("team", lambda: team_cases(root, args.sessions, args.timeout, run_cli,
                                                 environment)))  # fmt: skip
    columns = {
        "team": ["case", "seconds", "peak_rss_mb", "rows", "code"],
        "giant": ["case", "code", "seconds", "peak_rss_mb", "fits", "requests_tokens"],
        "search": ["forks", "index_bytes", "first_search_seconds", "second_search_seconds",
                   "first_search_rss_mb", "hits", "code"],
        "reads": ["messages", "show_s", "show_json_s", "show_ratio", "show_mb", "log_s",
                  "log_json_s", "log_ratio", "log_mb", "export_s", "export_mb", "import_s",
                  "import_mb", "code"],
        "compaction": ["messages", "first_ms", "ms", "peak_rss_mb", "tokens_before",
                       "tokens_after", "ledger_tokens", "code"],
        "rate": ["target", "turns", "compactions", "per_100_turns", "code"],
    }  # fmt: skip
    try:
        for name, step in steps:
            report[name] = step()
            print(table(f"== {name} {args.label}", report[name], columns[name]), flush=True)
            for row in report[name]:
                if row.get("code"):
                    print(f"  {row.get('case', row.get('forks'))}: {row.get('stderr', '')}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
