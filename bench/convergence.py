"""Convergence bench: three homes, one remote, many rounds of random work and syncs.

The long run of `tests/test_convergence.py` (the simulation is `tests/convergence_sim.py`):
for each seed, 3 homes (3 machines, each its own GITSESSIONS_HOME) and one bare
repository; each round one or two homes do random work through the real store and
services (new sessions, turns, renames, forks, deletes, manual compactions), then homes
push (`--all`, sometimes `--prune`) and pull in a random order, two of them at the same
moment in some rounds. At the end each home pulls and pushes twice and pulls once more,
and the checks run: same sessions (ids and heads), no message lost (against the log of
every message written), one fork per divergence, tombstones travel, tombstones win, and
a second pull changes nothing.

By default the syncs run in this process and a concurrent pair is two threads (sync
runs stock git as child processes, so they overlap on the remote); `--cli` makes every
sync a real `gitsessions push|pull --json` child process (a pair: two processes);
`--busy` lets the first home of a pair work meanwhile (a turn under the session's lease,
as a running agent: the pull leaves that session `busy`).

    uv run python bench/convergence.py                      # 5 seeds x 60 rounds
    uv run python bench/convergence.py --seeds 3 --rounds 50 --cli
    uv run python bench/convergence.py --busy
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.convergence_sim import check, holding, simulate  # noqa: E402

FIRST_SEED = 20261202


def measure(work: Path, seed: int, rounds: int, cli: bool, busy: bool) -> dict[str, Any]:
    start = time.perf_counter()
    run = simulate(work / f"seed-{seed}", seed, rounds, cli=cli, busy=busy)
    took = time.perf_counter() - start
    failures = check(run)
    held = holding(run.homes["a"])
    return {
        "seed": seed,
        "rounds": rounds,
        "seconds": round(took, 1),
        "work": {k: v for k, v in sorted(run.counts.items()) if not _sync(k)},
        "syncs": {k: v for k, v in sorted(run.counts.items()) if _sync(k)},
        "messages_written": len(run.written),
        "sessions_deleted": len(run.deleted),
        "pull_forks": run.pull_forks,
        "sessions_at_end": len(held.heads),
        "sync_errors": run.errors,
        "failures": {name: len(found) for name, found in failures.items()},
        "failure_examples": {name: found[:3] for name, found in failures.items() if found},
    }


def _sync(kind: str) -> bool:
    """Whether a count of the run's is of syncs (or their outcomes), not of work."""
    return kind.startswith(("pull", "push", "concurrent pair", "work during"))


def table(results: list[dict[str, Any]]) -> str:
    checks = list(results[0]["failures"])
    short = {
        "same sessions": "same",
        "no message lost": "lost",
        "one fork per divergence": "1 fork",
        "tombstones travel": "tomb trav",
        "tombstones win": "tomb win",
        "second pull changes nothing": "2nd pull",
        "git fsck clean": "fsck",
    }
    head = f"{'seed':>9} {'rounds':>6} {'s':>6} {'msgs':>5} {'dels':>4} {'pairs':>5} {'forks':>5}"
    lines = [head + "".join(f" {short.get(c, c):>9}" for c in checks)]
    for res in results:
        row = (
            f"{res['seed']:>9} {res['rounds']:>6} {res['seconds']:>6.1f} "
            f"{res['messages_written']:>5} {res['sessions_deleted']:>4} "
            f"{res['syncs'].get('concurrent pair', 0):>5} {res['pull_forks']:>5}"
        )
        lines.append(row + "".join(f" {res['failures'][c]:>9}" for c in checks))
    lines.append("(check columns: failures found; 0 = the check holds)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--cli", action="store_true", help="every sync a gitsessions process")
    parser.add_argument("--busy", action="store_true", help="a home sometimes works while it syncs")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "convergence.json")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-convergence-bench-"))
    results: list[dict[str, Any]] = []
    try:
        for n in range(args.seeds):
            results.append(measure(work, FIRST_SEED + n, args.rounds, args.cli, args.busy))
            print(f"seed {FIRST_SEED + n}: {results[-1]['seconds']} s", file=sys.stderr)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res: dict[str, Any] = {
        "mode": ("cli processes" if args.cli else "in-process, threads")
        + (", busy" if args.busy else ""),
        "runs": results,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load": os.getloadavg(),
            "git": subprocess.run(
                ["git", "--version"], capture_output=True, text=True
            ).stdout.strip(),
        },
    }
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
