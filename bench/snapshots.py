"""Code snapshot costs on a generated project (issue 11's Performance section).

    uv run python bench/snapshots.py                 # 10,000 files, 100 MB
    uv run python bench/snapshots.py --files 2000 --file-bytes 10000 --runs 5

Generates a git project of `--files` files (`--file-bytes` each, in directories of 100),
commits it, then makes a few changes (staged, unstaged, untracked, an ignored build
directory) and measures, as medians of `--runs`:

- `git status --porcelain` on that tree (the baseline), and a snapshot of the unchanged
  tree (`snapshotter.take` when the previous snapshot holds the same tree: the common case
  at every step of a turn). Goal: at most 2x status.
- one turn (`Agent.run_turn`: the prompt's commit, one reply) against an instant model
  server (the tests' fake on 127.0.0.1), with and without snapshots, in-process; and the
  same as a whole `gitsessions exec --resume` process. Goal: at most 1.2x.
- `gitsessions fork ID --worktree` of that project against a plain `git worktree add` of
  the same commit.

Prints a table, writes JSON to bench/results/snapshots.json (or --out). Everything runs
in a temporary directory removed at the end.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitsessions.agent.loop import Agent  # noqa: E402
from gitsessions.agent.session import AgentSession  # noqa: E402
from gitsessions.agent.turns import AgentConfig  # noqa: E402
from gitsessions.services.code import snapshots, snapshotter, worktrees  # noqa: E402
from gitsessions.services.code.workspace import head_of  # noqa: E402
from gitsessions.services.compaction.compaction_policy import Policy  # noqa: E402
from gitsessions.services.model.model import ModelClient  # noqa: E402
from gitsessions.services.settings.config import resolve_model_settings  # noqa: E402
from gitsessions.services.tools import approve_all, create_registry  # noqa: E402
from gitsessions.store.sessions import SessionStore  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.tokens import TokenCounter  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *IDENTITY, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout


def median_of(runs: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def generate(root: Path, files: int, size: int) -> None:
    """`files` files of `size` bytes of varied text in directories of 100, committed,
    then a few changes of every kind."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    line = b"".join(bytes([97 + (i * 7) % 26]) for i in range(79)) + b"\n"
    for n in range(files):
        directory = root / f"pkg{n // 100:03d}"
        directory.mkdir(exist_ok=True)
        body = (f"# file {n}\n".encode() + line * (size // 80 + 1))[:size]
        (directory / f"mod{n % 100:02d}.py").write_bytes(body)
    (root / ".gitignore").write_text("build/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "generated")
    for n in range(min(3, files // 100)):  # unstaged edits
        (root / f"pkg{n:03d}" / "mod00.py").write_text(f"edited {n}\n")
    (root / "pkg000" / "mod01.py").write_text("staged\n")
    git(root, "add", "pkg000/mod01.py")
    for n in range(3):  # untracked
        (root / f"new{n}.py").write_text(f"new {n}\n")
    (root / "build").mkdir()
    for n in range(50):
        (root / "build" / f"out{n}.o").write_bytes(b"\0" * 1000)
    git(root, "status", "--porcelain")  # the user's index as a user has it: refreshed


def make_agent(
    store: SessionStore, server: FakeOpenAI, root: Path, session: AgentSession, snap: bool
) -> Agent:
    settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
    env = dict(os.environ)
    taker = snapshotter.Snapshotter(root, env, session.id) if snap else None
    return Agent(
        session,
        ModelClient(settings),
        create_registry(root, env, approve=approve_all),
        TokenCounter(),
        AgentConfig(
            model="m", summary_model="m", policy=Policy(), stream=False, summary_every=10**9
        ),
        lambda *a: 0.0,
        workspace_head=lambda: head_of(root, env),
        code_snapshot=taker,
    )


def cli(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GITSESSIONS_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "gitsessions", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--file-bytes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "snapshots.json")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary directory.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-bench-snap-"))
    results: dict[str, Any] = {
        "files": args.files,
        "file_bytes": args.file_bytes,
        "project_mb": round(args.files * args.file_bytes / 1e6, 1),
        "runs": args.runs,
        "load": os.getloadavg(),
    }
    try:
        run(work, args, results)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.out}")


def run(work: Path, args: argparse.Namespace, results: dict[str, Any]) -> None:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("GIT_"):
            del env[name]
    root = work / "project"
    start = time.perf_counter()
    generate(root, args.files, args.file_bytes)
    results["generate_s"] = round(time.perf_counter() - start, 2)
    print(f"generated {args.files} files ({results['project_mb']} MB) in {results['generate_s']} s")
    index_before = (root / ".git" / "index").read_bytes()

    status = median_of(args.runs, lambda: git(root, "status", "--porcelain"))
    project = snapshots.find_project(root, env)
    assert project is not None
    sid = new_id()
    first = time.perf_counter()
    snapshotter.take(project, env, sid, "gitsessions snapshot: bench first")
    first_s = time.perf_counter() - first
    take_s = median_of(
        args.runs, lambda: snapshotter.take(project, env, sid, "gitsessions snapshot: bench")
    )
    taker = snapshotter.Snapshotter(root, env, sid)  # what a turn uses: remembers the last one
    taker("gitsessions snapshot: bench warm")
    unchanged = median_of(args.runs, lambda: taker("gitsessions snapshot: bench"))
    assert (root / ".git" / "index").read_bytes() == index_before, "the user's index changed"

    home = work / "home"
    store = SessionStore(home, background_maintenance=False)
    turns: dict[str, float] = {}
    with FakeOpenAI() as server:
        for snap in (False, True):
            session = AgentSession.create(store, "system", {"path": str(root)}, "m")
            agent = make_agent(store, server, root, session, snap)
            agent.run_turn("warm up")
            turns["with" if snap else "without"] = median_of(
                args.runs, lambda agent=agent: agent.run_turn("hello")
            )
            if snap:  # the turn did record a snapshot
                message = store.git.get(agent.session.head.commit).message  # type: ignore[attr-defined]
                assert b"Code-Snapshot: " in message, message
            agent.client.close()
        store.close()
        exec_times: dict[str, float] = {}
        base = ["--base-url", server.base_url, "--model", "m", "--workspace", str(root)]
        made = cli("exec", "start", *base, "--json", home=home, cwd=work)
        assert made.returncode == 0, made.stderr
        exec_id = json.loads(made.stdout)["session"]
        for label, extra in (("without", ["--no-snapshots"]), ("with", [])):
            exec_times[label] = median_of(
                max(3, args.runs // 2),
                lambda extra=extra: cli(
                    "exec", "again", "--resume", exec_id, *base, *extra, home=home, cwd=work
                ),
            )

    start = time.perf_counter()
    forked = cli("fork", exec_id, "--worktree", "--json", home=home, cwd=work)
    fork_s = time.perf_counter() - start
    assert forked.returncode == 0, forked.stderr
    head = git(root, "rev-parse", "HEAD").strip()
    store = SessionStore(home, background_maintenance=False)
    plain: list[float] = []
    service: list[float] = []
    for n in range(4):  # alternated, so a burst of load (or of disk writeback) hits both

        def add_plain(n: int = n) -> None:
            start = time.perf_counter()
            target = str(work / f"plain{n}")
            git(root, "worktree", "add", "-q", "-b", f"bench-plain-{n}", target, head)
            plain.append(time.perf_counter() - start)

        def add_fork() -> None:
            start = time.perf_counter()
            worktrees.fork(store, env, exec_id)
            service.append(time.perf_counter() - start)

        for step in (add_plain, add_fork) if n % 2 == 0 else (add_fork, add_plain):
            step()
            subprocess.run(["sync"], check=False)  # each starts with the disk written back
    store.close()
    plain_s, fork_service_s = statistics.median(plain), statistics.median(service)

    results.update(
        {
            "git_status_s": status,
            "first_snapshot_s": first_s,
            "snapshot_unchanged_s": unchanged,
            "take_unchanged_s": take_s,
            "snapshot_vs_status": unchanged / status,
            "turn_in_process_without_s": turns["without"],
            "turn_in_process_with_s": turns["with"],
            "turn_in_process_ratio": turns["with"] / turns["without"],
            "exec_without_s": exec_times["without"],
            "exec_with_s": exec_times["with"],
            "exec_ratio": exec_times["with"] / exec_times["without"],
            "fork_worktree_s": fork_s,
            "git_worktree_add_s": plain_s,
            "fork_vs_worktree_add": fork_s / plain_s,
            "fork_worktree_in_process_s": fork_service_s,
        }
    )
    ms = lambda s: f"{s * 1000:8.1f} ms"  # noqa: E731
    rows = [
        ("git status --porcelain", ms(status), ""),
        ("first snapshot (cold)", ms(first_s), ""),
        ("snapshotter.take, unchanged tree", ms(take_s), f"{take_s / status:.2f}x status"),
        (
            "snapshot in a turn, unchanged",
            ms(unchanged),
            f"{unchanged / status:.2f}x status (goal <= 2)",
        ),
        ("turn in-process, no snapshots", ms(turns["without"]), ""),
        (
            "turn in-process, snapshots",
            ms(turns["with"]),
            f"{turns['with'] / turns['without']:.2f}x (goal <= 1.2)",
        ),
        ("exec process, --no-snapshots", ms(exec_times["without"]), ""),
        (
            "exec process, snapshots",
            ms(exec_times["with"]),
            f"{exec_times['with'] / exec_times['without']:.2f}x (goal <= 1.2)",
        ),
        ("git worktree add", ms(plain_s), ""),
        ("fork --worktree (CLI process)", ms(fork_s), f"{fork_s / plain_s:.2f}x git worktree add"),
        (
            "fork --worktree (in-process)",
            ms(fork_service_s),
            f"{fork_service_s / plain_s:.2f}x git worktree add",
        ),
    ]
    print(f"\n{'what':34} {'median':>11}  note")
    for what, value, note in rows:
        print(f"{what:34} {value:>11}  {note}")


if __name__ == "__main__":
    main()
