"""Hooks bench: what the git hooks add to a `git commit`, and what a lifecycle hook adds
to a turn.

A project repository with a linked worktree, and a home of `--sessions` sessions (one of
them records the worktree in its header, as `fork --worktree` does). Each case makes
`--commits` real `git commit -q -m` calls and reports the median milliseconds per commit:

  no hooks                 plain git
  hooks, main checkout     hooks installed, no GITSESSIONS_SESSION (no store read)
  hooks, agent commit      GITSESSIONS_SESSION set, as run_shell sets it
  hooks, session worktree  a commit in the session's worktree (reads the session list)

Then `Hooks.run` of a post-turn hook that exits at once (the cost a turn pays), and of no
hook at all. Prints a table; writes JSON to bench/results/hooks.json (or `--out`).

    uv run python bench/hooks.py [--sessions 200] [--commits 10]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gitsessions.services.hooks.hooks import Hooks  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.clock import now_iso  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], env=env, check=True, capture_output=True)


def per_commit(cwd: Path, env: dict[str, str], commits: int) -> float:
    """Median milliseconds of `git commit` in `cwd`."""
    times: list[float] = []
    for n in range(commits):
        (cwd / "file.txt").write_text(f"{cwd.name} {n}\n")
        git(cwd, env, "add", "-A")
        start = time.perf_counter()
        git(cwd, env, "commit", "-q", "-m", f"change {n}")
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run_hook(hooks: Hooks, times: int) -> float:
    spent: list[float] = []
    for _ in range(times):
        start = time.perf_counter()
        hooks.run("post-turn", "0" * 32, "0" * 40, turn=1)
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "hooks.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-hooks-bench-"))
    try:
        results = measure(work, args.sessions, args.commits)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k in results["ms"])
    print(f"{'case':<{width}}  ms (median)")
    for case, ms in results["ms"].items():
        print(f"{case:<{width}}  {ms:8.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


def measure(work: Path, sessions: int, commits: int) -> dict[str, Any]:
    home = work / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_"))}
    env.update(
        GITSESSIONS_HOME=str(home),
        HOME=str(work),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    project, worktree = work / "project", work / "fork"
    project.mkdir()
    git(project, env, "init", "-q", "-b", "main")
    git(project, env, "config", "user.name", "Bench")
    git(project, env, "config", "user.email", "bench@example.com")
    (project / "file.txt").write_text("start\n")
    git(project, env, "add", "-A")
    git(project, env, "commit", "-q", "-m", "start")
    git(project, env, "worktree", "add", "-q", "-b", "gitsessions/bench", str(worktree))

    store = SessionStore(home, background_maintenance=False)
    system = {"role": "system", "content": "bench"}
    for n in range(sessions):
        header = new_header(new_id(), now_iso(), title=f"session {n}")
        if n == sessions // 2:
            header["worktree"] = {"path": str(worktree), "branch": "gitsessions/bench"}
        store.create(header, Change(context=[system], append=[system]))
    store.close()

    ms: dict[str, float] = {}
    ms["no hooks"] = per_commit(project, env, commits)
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "hooks", "install", "--workspace", str(project)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(done.stderr)
    ms["hooks, main checkout"] = per_commit(project, env, commits)
    agent = {**env, "GITSESSIONS_SESSION": new_id()}
    ms["hooks, agent commit"] = per_commit(project, agent, commits)
    ms["hooks, session worktree"] = per_commit(worktree, env, commits)

    hooks = Hooks(home, env, 5.0)
    ms["Hooks.run, no hook"] = run_hook(hooks, 50)
    hook = home / "hooks" / "post-turn"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    ms["Hooks.run, hook exits 0"] = run_hook(hooks, 20)
    return {
        "sessions": sessions,
        "commits": commits,
        "ms": ms,
        "load_average": os.getloadavg(),
        "time": now_iso(),
    }


if __name__ == "__main__":
    main()
