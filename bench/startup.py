"""Startup bench: how long each command takes as a new process, against the floor of
`python -c "import typer, rich"` measured in the same run.

Invariant: every number is the median of `--runs` (default 10) wall-clock runs of a fresh
process, after one warm-up run that writes the bytecode caches (a user's second run,
not their first). The store is made by the bench in a temp home (three sessions written
by `exec` against tests/fake_openai.py, which answers at once), so nothing of the user's
is read. `chat` is timed until its prompt appears on a pseudo-terminal; `exec` for one
whole turn. Goals (issue 10): list, info, show, log and --help at most 1.3x the floor,
chat's prompt 1.3x, exec 2x.

    uv run python bench/startup.py [--runs 10] [--json bench/results/startup.json]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI  # noqa: E402

PROMPT = re.compile(r"(?:^|[\r\n]|\x1b\[\?25h|\x1b\[2K)> ")
GOALS = {"--help": 1.3, "list": 1.3, "info": 1.3, "show": 1.3, "log": 1.3, "chat": 1.3}
GOALS["exec"] = 2.0


def median_of(runs: int, once: Callable[[], float]) -> float:
    once()  # warm-up: bytecode caches written, files in the page cache
    return statistics.median(once() for _ in range(runs))


def timed(cmd: list[str], env: dict[str, str]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, cwd=ROOT)
        seconds = time.perf_counter() - start
        if done.returncode:
            raise RuntimeError(f"{cmd[3:]} failed: {done.stderr.decode()[-500:]}")
        return seconds

    return once


def chat_prompt(cmd: list[str], env: dict[str, str]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        child = pexpect.spawn(
            cmd[0], cmd[1:], env=env, encoding="utf-8", timeout=60, cwd=str(ROOT),
            dimensions=(50, 120),
        )  # fmt: skip
        child.expect(PROMPT)
        seconds = time.perf_counter() - start
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
        return seconds

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = parser.parse_args()

    python = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="gitsessions-startup-"))
    workspace = tmp / "project"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITSESSIONS_", "OPENAI_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what a user runs: cached bytecode
    env.update(GITSESSIONS_HOME=str(tmp / "home"), TERM="xterm", COLUMNS="120", LINES="50")
    gs = [python, "-m", "gitsessions"]
    results: dict[str, float] = {}
    with FakeOpenAI() as server:
        server.models = ["fake-model"]
        model = ["--base-url", server.base_url, "--model", "fake-model"]
        exec_cmd = [*gs, "exec", "hello", *model, "--workspace", str(workspace)]
        for _ in range(3):
            timed(exec_cmd, env)()
        listed = subprocess.run([*gs, "list", "--json"], env=env, capture_output=True, check=True)
        session = json.loads(listed.stdout)[0]["id"][:8]
        commands: dict[str, Callable[[], float]] = {
            "floor": timed([python, "-c", "import typer, rich"], env),
            "--help": timed([*gs, "--help"], env),
            "list": timed([*gs, "list"], env),
            "info": timed([*gs, "info", session], env),
            "show": timed([*gs, "show", session], env),
            "log": timed([*gs, "log", session], env),
            "chat": chat_prompt([*gs, "chat", *model, "--workspace", str(workspace)], env),
            "exec": timed(exec_cmd, env),
        }
        for name, once in commands.items():
            results[name] = median_of(args.runs, once)
            print(f"  {name}: {results[name]:.3f} s", file=sys.stderr)

    floor = results["floor"]
    rows = []
    print(f"\nmedian of {args.runs} runs; floor = python -c 'import typer, rich'\n")
    print(f"{'command':<10} {'seconds':>8} {'x floor':>8} {'goal':>6}  ok")
    for name, seconds in results.items():
        ratio = seconds / floor
        goal = GOALS.get(name)
        ok = "" if goal is None else ("yes" if ratio <= goal else "NO")
        rows.append({"command": name, "seconds": round(seconds, 4), "ratio": round(ratio, 2),
                     "goal": goal, "ok": None if goal is None else ratio <= goal})  # fmt: skip
        goal_text = f"{goal:.1f}x" if goal else ""
        print(f"{name:<10} {seconds:>8.3f} {ratio:>7.2f}x {goal_text:>6}  {ok}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {"runs": args.runs, "python": sys.version.split()[0], "results": rows}
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
