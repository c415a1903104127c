"""Counting that does not grow (issue 24, item 1): one `exec --resume` turn of a session of
N=27 and N=1,000 messages, the whole transcript in the working context, default budget
(24,000 tokens), against the tests' fake OpenAI server (127.0.0.1, no network).

The messages are short (a prompt and a one-line reply per turn), so the larger session is
far over the byte bound that lets a turn skip the tokenizer, yet well under the budget:
no compaction runs. What is measured is the whole `exec` process (wall seconds from spawn
to exit, its CPU seconds and peak RSS from `wait4`: on a shared machine CPU is the
steadier number), medians of `--reps` runs, each turn interleaved
(27, 1,000, 27, ...). Before a measured run, one unmeasured turn on each session leaves
it as a previous turn would (a user of the session has run turns before).

`--code LABEL=DIR` (repeatable) runs the gitsessions package found in DIR (e.g. `git
archive` of an older commit) instead of this checkout, each in homes of its own, all
interleaved in one run: before and after on the same machine at the same load.

    uv run python bench/counts.py [--reps 7] [--out bench/results/counts.json]
    git archive 24f369c | tar -x -C /tmp/before
    uv run python bench/counts.py --code before=/tmp/before --code after=.
"""

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import store as bench  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

SIZES = (27, 1_000)
WAITER = bench.WAITER.replace(
    "usage.ru_maxrss / 1024,", "usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime,"
)


def measured(cmd: list[str], env: dict[str, str]) -> tuple[float, int, float, float, str]:
    """Run `cmd` from a small waiter process: (wall seconds, exit status, peak RSS MB,
    CPU seconds, stderr's end) of that process alone (see `bench.spawn_measured`)."""
    waiter = subprocess.run(
        [sys.executable, "-c", WAITER], input=json.dumps([cmd, env]), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    seconds, code, rss, cpu, error = json.loads(waiter.stdout)
    return seconds, code, rss, cpu, error


def build(home: Path, n: int) -> None:
    """A session of `n` messages (system, then user / assistant turns); id in home/id."""
    store = SessionStore(home, background_maintenance=False)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    turn = 0
    while len(messages) < n:
        turn += 1
        messages.append({"role": "user", "content": f"turn {turn}: say ok and the number"})
        messages.append({"role": "assistant", "content": f"ok {turn}"})
    messages = messages[:n]
    header = new_header(f"{n:032x}", "2026-01-01T00:00:00Z", title=f"counts {n}")
    head = store.create(header, Change(context=messages, append=messages))
    store.close()
    (home / "id").write_text(head.id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--code", action="append", default=[], metavar="LABEL=DIR")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "counts.json")
    args = parser.parse_args()
    codes = dict(c.split("=", 1) for c in args.code) or {"this checkout": str(REPO)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITSESSIONS_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports read cached bytecode
    cases = [(label, n) for label in codes for n in SIZES]
    seconds: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    rss: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    cpu: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        work = Path(tmp)
        env["HOME"] = str(work)
        commands: dict[tuple[str, int], tuple[list[str], dict[str, str]]] = {}
        for label, n in cases:
            home = work / f"home-{len(commands)}"
            builder = multiprocessing.get_context("fork").Process(target=build, args=(home, n))
            builder.start()
            builder.join()
            code = Path(codes[label]).resolve()
            run = [sys.executable, "-P", "-c", "from gitsessions.cli.app import main; main()"]
            commands[label, n] = (
                [*run, "--home", str(home), "exec", "--resume", (home / "id").read_text(),
                 "--base-url", server.base_url, "--model", "m", "--workspace", str(work),
                 "go on"],
                {**env, "PYTHONPATH": str(code)},
            )  # fmt: skip
            measured(*commands[label, n])  # a previous turn
        for _ in range(args.reps):
            for case in cases:
                took, status, peak, spent, error = measured(*commands[case])
                if status:
                    raise RuntimeError(f"exec failed at {case}: {error}")
                seconds[case].append(took)
                rss[case].append(peak)
                cpu[case].append(spent)
    rows = {
        case: {
            "median_s": statistics.median(seconds[case]),
            "rss_mb": statistics.median(rss[case]),
            "cpu_s": statistics.median(cpu[case]),
            "seconds": [round(s, 4) for s in seconds[case]],
            "rss_each_mb": [round(r, 1) for r in rss[case]],
        }
        for case in cases
    }
    ratios = {
        label: {
            "time": rows[label, SIZES[-1]]["median_s"] / rows[label, SIZES[0]]["median_s"],
            "rss": rows[label, SIZES[-1]]["rss_mb"] / rows[label, SIZES[0]]["rss_mb"],
            "cpu": rows[label, SIZES[-1]]["cpu_s"] / rows[label, SIZES[0]]["cpu_s"],
        }
        for label in codes
    }
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "load": os.getloadavg(),
        "reps": args.reps,
        "code": codes,
        "rows": {f"{label} N={n}": row for (label, n), row in rows.items()},
        "ratios": ratios,
    }
    print(f"exec --resume, one turn ({args.reps} runs each, interleaved, medians)")
    print(f"{'code':<14} {'messages':>9} {'wall':>9} {'CPU':>9} {'peak RSS':>9}")
    for (label, n), row in rows.items():
        print(f"{label:<14} {n:>9,} {row['median_s'] * 1000:>6.0f} ms "
              f"{row['cpu_s'] * 1000:>6.0f} ms {row['rss_mb']:>6.1f} MB")  # fmt: skip
    for label, ratio in ratios.items():
        print(f"{label}: N={SIZES[-1]:,} / N={SIZES[0]} = {ratio['time']:.2f}x wall, "
              f"{ratio['cpu']:.2f}x CPU, {ratio['rss']:.2f}x RSS (goal: at most 1.2x)")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
