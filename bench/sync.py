"""Sync bench: push to a bare repository, pull into an empty home, incremental pull.

N sessions x M messages (default 1,000 x 50, one commit per turn, packed by `gc` as a
store in use would be) are pushed with `gitsessions push --all` to a bare repository
path, pulled into an empty home with `gitsessions pull`, then K sessions get one more
turn and are pushed and pulled again. Baseline: stock `git push` / `git fetch` of the
same refs between the same kind of repositories (fresh bare ones). "Bytes" are what the
receiving side's `objects/` grew by: for a transfer through a path that is the pack that
crossed, the same bytes a network transport carries (plus its small index).

Each command is a new process (the real CLI), timed with wall clock and with the CPU
seconds it and its children (git) used: on a shared machine the CPU is the steadier
number. Everything lives in one temporary directory, removed at the end unless --keep.

    uv run python bench/sync.py --sessions 100 --messages 50     # quick, ~1 minute
    uv run python bench/sync.py                                  # 1,000 x 50
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.store import Messages, make_header, turn_change  # noqa: E402
from gitsessions.services.sync import remotes  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.records import empty_usage  # noqa: E402

SEED = 20260101
REFS = "refs/heads/sessions/*"


def objects_bytes(git_dir: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(git_dir / "objects"):
        for name in files:
            total += (Path(dirpath) / name).stat().st_size
    return total


def generate(home: Path, sessions: int, messages: int) -> list[str]:
    """`sessions` sessions of `messages` messages, one commit per turn, then gc."""
    gen = Messages(SEED)
    store = SessionStore(home, redact=False, background_maintenance=False)
    ids: list[str] = []
    for n in range(sessions):
        header = make_header(gen, f"bench session {n}")
        system = {"role": "system", "content": "You are a coding agent."}
        head = store.create(header, Change(context=[system], append=[system]))
        context: list[dict[str, Any]] = [system]
        usage = empty_usage()
        count = 1
        while count < messages:
            turn = gen.turn(4)[: messages - count]
            change, context, usage = turn_change(head, context, turn, usage)
            head = store.commit(head, change, event="turn", subject=f"turn {count}")
            count += len(turn)
        ids.append(head.id)
    maintenance.repack(store.git)
    store.close()
    return ids


def change_some(home: Path, ids: list[str]) -> None:
    gen = Messages(SEED + 1)
    store = SessionStore(home, redact=False, background_maintenance=False)
    for sid in ids:
        head = store.head(sid)
        context = store.read(head, "context")
        change, _ctx, _usage = turn_change(head, context, gen.turn(4), store.read(head, "usage"))
        store.commit(head, change, event="turn", subject="turn more")
    store.close()


@dataclass(frozen=True)
class Took:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and every child it waited for


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str] | None = None) -> Took:
    start, cpu = time.perf_counter(), _cpu()
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    took = Took(time.perf_counter() - start, _cpu() - cpu)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{result.stderr[-2000:]}")
    return took


def gitsessions(home: Path, *args: str) -> Took:
    # as installed: bytecode cached (a shell with PYTHONDONTWRITEBYTECODE would make every
    # command compile the package again, ~0.3 s of each time)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    return run([sys.executable, "-m", "gitsessions", "--home", str(home), *args], env)


def git(*args: str) -> Took:
    return run(["git", *args])


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def measure(
    work: Path, sessions: int, messages: int, changed: int, reuse: Path | None
) -> dict[str, Any]:
    res: dict[str, Any] = {"sessions": sessions, "messages": messages, "changed": changed}
    home_a, home_b = work / "a", work / "b"
    start = time.perf_counter()
    if reuse is not None:  # a home generated by an earlier run (--keep), copied
        shutil.copytree(reuse, home_a)
        store = SessionStore(home_a)
        ids = sorted(store.ids())
        for remote in remotes.list_remotes(store):  # a kept home remembers its remote
            remotes.remove_remote(store, remote["name"])
        store.close()
        res["sessions"] = len(ids)
    else:
        ids = generate(home_a, sessions, messages)
    res["generate_s"] = round(time.perf_counter() - start, 1)
    store_a = home_a / "store.git"
    res["store_bytes"] = objects_bytes(store_a)

    remote, remote_git = bare(work / "remote.git"), bare(work / "remote-git.git")
    gitsessions(home_a, "remote", "add", "origin", str(remote))
    rows: dict[str, dict[str, float]] = {}

    def step(name: str, ours: Took, ours_bytes: int, theirs: Took, theirs_bytes: int) -> None:
        rows[name] = {
            "gitsessions_s": round(ours.wall, 3),
            "git_s": round(theirs.wall, 3),
            "time_ratio": round(ours.wall / theirs.wall, 2) if theirs.wall else 0.0,
            "gitsessions_cpu_s": round(ours.cpu, 3),
            "git_cpu_s": round(theirs.cpu, 3),
            "gitsessions_bytes": ours_bytes,
            "git_bytes": theirs_bytes,
            "bytes_ratio": round(ours_bytes / theirs_bytes, 2) if theirs_bytes else 0.0,
        }

    def push(name: str) -> None:
        before = objects_bytes(remote), objects_bytes(remote_git)
        ours = gitsessions(home_a, "push", "--all")
        theirs = git("--git-dir", str(store_a), "push", "-q", str(remote_git), f"{REFS}:{REFS}")
        sent = objects_bytes(remote) - before[0], objects_bytes(remote_git) - before[1]
        step(name, ours, sent[0], theirs, sent[1])

    push("first push")

    fetched_git = bare(work / "b-git.git")
    gitsessions(home_b, "remote", "add", "origin", str(remote))
    ours = gitsessions(home_b, "pull")
    spec = f"{REFS}:refs/remotes/origin/sessions/*"
    theirs = git("--git-dir", str(fetched_git), "fetch", "-q", str(remote_git), spec)
    first_pull = (ours, objects_bytes(home_b / "store.git"), theirs, objects_bytes(fetched_git))
    step("first pull", *first_pull)

    change_some(home_a, ids[:changed])
    push("incremental push")
    before = objects_bytes(home_b / "store.git"), objects_bytes(fetched_git)
    ours = gitsessions(home_b, "pull")
    theirs = git("--git-dir", str(fetched_git), "fetch", "-q", str(remote_git), spec)
    step(
        "incremental pull",
        ours,
        objects_bytes(home_b / "store.git") - before[0],
        theirs,
        objects_bytes(fetched_git) - before[1],
    )
    res["steps"] = rows
    startup = [gitsessions(home_b, "remote", "list") for _ in range(3)]
    res["cli_startup_s"] = round(min(t.wall for t in startup), 3)
    res["cli_startup_cpu_s"] = round(min(t.cpu for t in startup), 3)
    res["incremental_pull_vs_first"] = round(
        rows["incremental pull"]["gitsessions_s"] / first_pull[0].wall, 3
    )
    res["incremental_pull_vs_first_cpu"] = round(
        rows["incremental pull"]["gitsessions_cpu_s"] / first_pull[0].cpu, 3
    )
    fsck = subprocess.run(
        ["git", "--git-dir", str(remote), "fsck", "--strict", "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    res["remote_fsck_ok"] = fsck.returncode == 0
    return res


def table(res: dict[str, Any]) -> str:
    lines = [
        f"{res['sessions']} sessions x {res['messages']} messages "
        f"(generated in {res['generate_s']} s, store {res['store_bytes'] / 1e6:.1f} MB), "
        f"{res['changed']} changed for the incremental step",
        f"{'step':18} {'gitsessions':>12} {'git':>8} {'x':>6} {'gs cpu':>8} {'git cpu':>8} "
        f"{'gs bytes':>12} {'git bytes':>12} {'x':>6}",
    ]
    for name, row in res["steps"].items():
        lines.append(
            f"{name:18} {row['gitsessions_s']:>11.2f}s {row['git_s']:>7.2f}s "
            f"{row['time_ratio']:>6.2f} {row['gitsessions_cpu_s']:>7.2f}s "
            f"{row['git_cpu_s']:>7.2f}s {row['gitsessions_bytes']:>12,} "
            f"{row['git_bytes']:>12,} {row['bytes_ratio']:>6.2f}"
        )
    lines.append(
        f"(each gitsessions time includes the CLI's start-up: {res['cli_startup_s']:.2f} s, "
        f"{res['cli_startup_cpu_s']:.2f} s of CPU)"
    )
    lines.append(
        f"incremental pull / first pull: {res['incremental_pull_vs_first']:.1%} "
        f"(CPU: {res['incremental_pull_vs_first_cpu']:.1%}); "
        f"remote fsck --strict ok: {res['remote_fsck_ok']}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "sync.json")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--reuse", type=Path, help="copy this generated home (a/ of a --keep run) instead"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-sync-bench-"))
    try:
        res = measure(work, args.sessions, args.messages, args.changed, args.reuse)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
    }
    print(table(res))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
