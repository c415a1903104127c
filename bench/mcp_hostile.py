"""Peak memory and time of `exec` against hostile MCP servers (issue 32's goal: peak RSS
under 200 MB in every case, each ending in one line within the timeout).

    uv run python bench/mcp_hostile.py

Each case is one real `exec` process (against the tests' fake model server, which
asks for one call of the server's tool where the case calls one) with one server of
tests/hostile_servers.py in its config.toml: `endless` (a one-line result that never
ends), `huge-200MB` (a 200 MB one-line result), `tools-100k` (100,000 tools in one
listing), `tools-3000` (more than the context budget holds), `timeout` (a call past
`tool_timeout_sec`, then one more), and `plain` (an ordinary call, for comparison).
The `exec` process reports its own peak RSS (getrusage of itself, not of the server);
the outcome is the tool's result, or the server's one line on stderr.

Prints a table; writes JSON to bench/results/mcp_hostile.json (or --out).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI  # noqa: E402

HOSTILE = ROOT / "tests" / "hostile_servers.py"
TIMEOUT = 20  # tool_timeout_sec of every case but `timeout`
# (name, hostile kind, its argument, tool_timeout_sec, the calls the model asks for)
CASES: list[tuple[str, str, str, int, list[dict[str, Any]]]] = [
    ("plain", "sleep", "", TIMEOUT, [{"seconds": 0}]),
    ("endless", "endless", "", TIMEOUT, [{}]),
    ("huge-200MB", "huge", "200", TIMEOUT, [{}]),
    ("tools-100k", "tools", "100000", TIMEOUT, []),
    ("tools-3000", "tools", "3000", TIMEOUT, []),
    ("timeout", "sleep", "", 2, [{"seconds": 60}, {"seconds": 0}]),
]
WRAPPER = """
import atexit, os, resource, runpy, sys
def report():
    with open(os.environ["BENCH_RSS_FILE"], "w") as file:
        file.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(report)
sys.argv = ["gitsessions", *sys.argv[1:]]
runpy.run_module("gitsessions", run_name="__main__")
"""


def run_case(work: Path, name: str, kind: str, arg: str, timeout: int, calls: list[Any]) -> dict:  # type: ignore[type-arg]
    home, project = work / name / "home", work / name / "project"
    home.mkdir(parents=True)
    project.mkdir()
    args = [str(HOSTILE), "mcp", kind, arg]
    (home / "config.toml").write_text(
        f"[mcp_servers.h]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
        f"tool_timeout_sec = {timeout}\nstartup_timeout_sec = 30\n"
    )
    tool = "mcp__h__t0" if kind == "tools" else "mcp__h__flood"
    rss_file = work / name / "rss"
    env = {**os.environ, "GITSESSIONS_HOME": str(home), "BENCH_RSS_FILE": str(rss_file)}
    with FakeOpenAI(strict=False) as server:
        for arguments in calls:
            server.reply(content=None, tool_calls=[{"name": tool, "arguments": arguments}])
        server.reply(content="Done.")
        server.reply(content="Title")
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", WRAPPER, "exec", "go", "--auto-approve", "--base-url",
             server.base_url, "--model", "m", "--max-context-tokens", "24000"],
            capture_output=True, text=True, cwd=project, env=env, timeout=600,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.monotonic() - started
        results = max(
            ([m["content"] for m in r["messages"] if m["role"] == "tool"] for r in server.requests),
            key=len,
            default=[],
        )
    lines = [line for line in done.stderr.splitlines() if line.startswith("mcp:")]
    outcome = results or lines
    return {
        "case": name,
        "exit": done.returncode,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(int(rss_file.read_text()) / 1024, 1) if rss_file.exists() else None,
        "terminal_lines": len(lines),
        "outcome": [" ".join(o.split())[:160] for o in outcome],
        "one_line_each": all("\n" not in o for o in outcome),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mcp_hostile.json")
    parser.add_argument("--case", action="append", help="only these cases (repeatable)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gs-mcp-bench-") as work:
        for case in CASES:
            if args.case and case[0] not in args.case:
                continue
            rows.append(run_case(Path(work), *case))
            row = rows[-1]
            print(f"{row['case']:<12} exit {row['exit']}  {row['seconds']:>6.2f} s  "
                  f"{row['peak_rss_mb']:>6} MB  lines {row['terminal_lines']}  "
                  f"{row['outcome'][0][:90] if row['outcome'] else '-'}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"goal_peak_rss_mb": 200, "tool_timeout_sec": TIMEOUT, "cases": rows}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
