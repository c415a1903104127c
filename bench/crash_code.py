"""Kill bench for code that follows its sessions (issue 40): `pull --code`, `sync` (which
makes the worktrees of the worktree forks it brings) and `worktree restore` of a pulled
fork, each killed at sampled rename/unlink/write/fsync calls (`strace -f -e
inject=SC:signal=KILL:when=N`; strace counts invocations per syscall per process, so the
git processes these commands start are killed too), on the second machine.

Prepared once, as the README's day: a bare origin of the project; machine A (a home, a
clone) with a session and a worktree fork whose exec turns write files, synced with its
code to a bare `sessions.git`; machine B (a home with that remote, marked for code, and
a clone). `pull --code` and `sync` start from B with nothing pulled; `worktree restore`
from B after `pull --code`. Every command is a real `python -m gitsessions` process; the
model is tests/fake_openai.py on 127.0.0.1.

After each kill, on a copy of B:
- every session B had before is there, at its head or a descendant (stock git);
- `git fsck --strict` is clean for B's store, and B's main checkout is as its origin left
  it (`git status` empty);
- the same command run again, then `worktree restore` of the fork if its worktree is
  not there, end with no manual cleanup (and B's clone `git fsck` clean: a killed `git
  worktree add` leaves git's entry unfinished, as git alone would, until then) in the
  state an unkilled run reaches: both
  sessions, their snapshot refs in the clone, the fork's worktree registered with git,
  clean, holding its latest turn's files.

    uv run python bench/crash_code.py --quick      # a few points per syscall, minutes
    uv run python bench/crash_code.py              # more points; about an hour
"""

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.crash import SEED, SYSCALLS, Check, check_refs, last_line, sample  # noqa: E402
from bench.store import table  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

COMMANDS = ["pull --code", "sync", "worktree restore"]
FILES = {"new.py": "NEW = 1\n", "sub/f.py": "x = 2\n"}  # what the fork's turns write
KILL_SYSCALLS = [s for s in SYSCALLS if s not in ("fdatasync", "renameat")]


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")  # fmt: skip
    return env


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True)


def gs(
    root: Path, home: str, clone: Path, args: list[str], prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m gitsessions ARGS` with the home `root/home`, in `clone`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_"))}
    env.update(GITSESSIONS_HOME=str(root / home), HOME=str(root / "userhome"),
               GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(root / "xdg"))  # fmt: skip
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "gitsessions", *args], cwd=clone, env=env,
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def ok(done: subprocess.CompletedProcess[str], what: str) -> subprocess.CompletedProcess[str]:
    if done.returncode != 0:
        raise SystemExit(f"{what} failed: {done.stderr[-2000:]}")
    return done


@dataclass
class Base:
    root: Path  # holds origin.git, sessions.git, A/, homeA/, B/shop (clone), homeB/
    fork: str
    main: str

    @staticmethod
    def clone_b(root: Path) -> Path:
        return root / "B" / "shop"


def respond(request: dict[str, Any]) -> str | dict[str, Any]:
    """`write PATH` writes PATH (with its content in FILES), then says so; a request
    without tools (a summary) gets a title."""
    if not request.get("tools"):
        return "a title"
    last = request["messages"][-1]
    said = str(last.get("content") or "")
    if last["role"] == "user" and said.startswith("write "):
        path = said.removeprefix("write ")
        arguments = {"path": path, "content": FILES[path]}
        return {"tool_calls": [{"name": "write_file", "arguments": arguments}]}
    return "done"


def prepare(root: Path, url: str, server: FakeOpenAI) -> Base:
    seed = root / "seed"
    seed.mkdir(parents=True)
    ok(git("init", "-q", "-b", "main", cwd=seed), "git init")
    (seed / "sub").mkdir()
    (seed / "sub" / "f.py").write_text("x = 1\n")
    (seed / "README").write_text("shop\n")
    ok(git("add", "-A", cwd=seed), "git add")
    ok(git("commit", "-qm", "first", cwd=seed), "git commit")
    ok(git("clone", "-q", "--bare", str(seed), str(root / "origin.git"), cwd=root), "bare")
    ok(git("init", "-q", "--bare", str(root / "sessions.git"), cwd=root), "sessions.git")
    clone_a = root / "A" / "shop"
    ok(git("clone", "-q", str(root / "origin.git"), str(clone_a), cwd=root), "clone A")
    ok(git("clone", "-q", str(root / "origin.git"), str(Base.clone_b(root)), cwd=root), "B")
    for home, clone in (("homeA", clone_a), ("homeB", Base.clone_b(root))):
        remote = ["remote", "add", "origin", str(root / "sessions.git"), "--code"]
        ok(gs(root, home, clone, remote), "remote add")
    model = ["--base-url", url, "--model", "m", "--auto-approve", "--json"]
    server.responder = respond
    main = json.loads(ok(gs(root, "homeA", clone_a, ["exec", "start", *model]), "exec").stdout)
    forked = ok(gs(root, "homeA", clone_a, ["fork", main["session"], "--worktree", "--json"]),
                "fork --worktree")  # fmt: skip
    fork = json.loads(forked.stdout)["id"]
    for path in FILES:
        ok(gs(root, "homeA", clone_a, ["exec", f"write {path}", "--resume", fork, *model]),
           "exec in the fork")  # fmt: skip
    ok(gs(root, "homeA", clone_a, ["sync"]), "sync on A")
    return Base(root, fork, main["session"])


def copy(base: Base, dest: Path, pulled: bool) -> Path:
    """A copy of the prepared directory; with `pulled`, B has run `pull --code`."""
    shutil.copytree(base.root, dest, symlinks=True)
    if pulled:
        ok(gs(dest, "homeB", Base.clone_b(dest), ["pull", "--code"]), "pull --code")
    return dest


def session_refs(home: Path) -> dict[str, str]:
    listed = git("--git-dir", str(home / "store.git"), "for-each-ref",
                 "--format=%(refname:lstrip=3) %(objectname)", "refs/heads/sessions/",
                 cwd=home.parent)  # fmt: skip
    return dict(line.split(" ", 1) for line in listed.stdout.splitlines() if " " in line)


def argv(command: str, base: Base) -> list[str]:
    return command.split() + ([base.fork[:8]] if command == "worktree restore" else [])


def verify(case: Path, base: Base, command: str, before: dict[str, str]) -> Check:
    """The checks of the module docstring on `case`, after a kill."""
    home, clone = case / "homeB", Base.clone_b(case)
    check = Check()
    if (home / "store.git").exists():
        check_refs(home, before, set(), check, "after the kill")
        fsck = git("--git-dir", str(home / "store.git"), "fsck", "--strict", "--no-dangling",
                   cwd=case)  # fmt: skip
        if fsck.returncode != 0:
            check.problems.append("store fsck: " + last_line(fsck.stderr + fsck.stdout))
    if git("status", "--porcelain", "--untracked-files=all", cwd=clone).stdout:
        check.problems.append("B's main checkout changed")
    again = gs(case, "homeB", clone, argv(command, base))
    worktree = home / "worktrees" / f"shop-{base.fork[:8]}"
    if again.returncode != 0 and not (command == "worktree restore" and worktree.is_dir()):
        check.problems.append(f"{command} again: {last_line(again.stderr)}")
    if "Traceback" in again.stderr:
        check.problems.append(f"{command} again: traceback {last_line(again.stderr)}")
    if not worktree.is_dir():
        restored = gs(case, "homeB", clone, ["worktree", "restore", base.fork[:8]])
        if restored.returncode != 0:
            check.problems.append("worktree restore after: " + last_line(restored.stderr))
    # the clone is checked once the next command ran: a killed `git worktree add` leaves
    # git's entry unfinished (as git itself would), which that command clears
    fsck = git("fsck", "--strict", "--no-dangling", cwd=clone)
    if fsck.returncode != 0:
        check.problems.append("clone fsck: " + last_line(fsck.stderr + fsck.stdout))
    check_refs(home, before, set(), check, "after the next commands")
    if set(session_refs(home)) < {base.main, base.fork}:
        check.problems.append("a session did not arrive")
    snaps = git("for-each-ref", "--format=%(refname:lstrip=3)", "refs/gitsessions/snapshots/",
                cwd=clone).stdout.split()  # fmt: skip
    if not {base.main, base.fork} <= set(snaps):
        check.problems.append("a snapshot ref did not arrive")
    for path, content in FILES.items():
        there = worktree / path
        if not there.is_file() or there.read_text() != content:
            check.problems.append(f"the fork's worktree lacks its latest {path}")
            break
    else:
        if git("status", "--porcelain", cwd=worktree).stdout:
            check.problems.append("the fork's worktree is not clean")
        listed = git("worktree", "list", "--porcelain", cwd=clone).stdout
        if f"worktree {os.path.realpath(worktree)}" not in listed:
            check.problems.append("the fork's worktree is not registered with git")
    return check


def count(base: Base, work: Path, command: str) -> dict[str, int]:
    """Per syscall, the most invocations one traced process made in an unkilled run."""
    case = copy(base, work / "count", command == "worktree restore")
    try:
        trace = case / "strace.out"
        prefix = ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=" + ",".join(SYSCALLS)]
        ok(gs(case, "homeB", Base.clone_b(case), argv(command, base), prefix), command)
        per: dict[tuple[str, str], int] = {}
        for line in trace.read_text(errors="replace").splitlines():
            pid, _, rest = line.partition(" ")
            name = rest.strip().partition("(")[0]
            if name in KILL_SYSCALLS:
                per[(pid, name)] = per.get((pid, name), 0) + 1
        counts: dict[str, int] = {}
        for (_pid, name), n in per.items():
            counts[name] = max(counts.get(name, 0), n)
        return counts
    finally:
        shutil.rmtree(case, ignore_errors=True)


def run_point(base: Base, work: Path, command: str, syscall: str, n: int) -> dict[str, Any]:
    case = copy(base, work / f"{command.replace(' ', '-')}-{syscall}-{n}",
                command == "worktree restore")  # fmt: skip
    try:
        before = session_refs(case / "homeB") if (case / "homeB" / "store.git").exists() else {}
        prefix = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
                  "-e", f"inject={syscall}:signal=KILL:when={n}"]  # fmt: skip
        done = gs(case, "homeB", Base.clone_b(case), argv(command, base), prefix)
        killed = done.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL) or done.returncode
        check = verify(case, base, command, before)
        return {"command": command, "syscall": syscall, "n": n, "exit": done.returncode,
                "killed": bool(killed), "stderr": last_line(done.stderr),
                **check.verdict()}  # fmt: skip
    finally:
        shutil.rmtree(case, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 points per command and syscall")
    parser.add_argument("--points", type=int, help="points per command and syscall (default 12)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "crash_code.json")
    args = parser.parse_args()
    if not shutil.which("strace"):
        raise SystemExit("strace not found: apt-get install strace")
    points = args.points or (3 if args.quick else 12)
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    rng = random.Random(SEED)
    root = Path(tempfile.mkdtemp(prefix="gitsessions-crash-code-"))
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    try:
        with FakeOpenAI() as server:
            base = prepare(root / "base", server.base_url, server)
            for command in commands:
                counts[command] = count(base, root, command)
                for syscall, total in sorted(counts[command].items()):
                    for n in sample(total, points, rng):
                        result = run_point(base, root, command, syscall, n)
                        results.append(result)
                        mark = "ok" if result["ok"] else "FAIL " + "; ".join(result["problems"])
                        print(f"{command:18} {syscall:8} {n:5}  {mark}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for command in commands:
        mine = [r for r in results if r["command"] == command]
        calls = ", ".join(f"{k} {v}" for k, v in sorted(counts.get(command, {}).items()))
        rows.append([command, calls, len(mine), sum(r["killed"] for r in mine),
                     sum(r["lost_count"] for r in mine),
                     sum(not r["ok"] for r in mine)])  # fmt: skip
    header = ["command", "calls (most in one process)", "kills", "died", "sessions lost", "failed"]
    print()
    print(table("kills of code that follows its sessions (machine B)", header, rows))
    wall = time.perf_counter() - started
    print(f"{sum(not r['ok'] for r in results)} failed cases; total {wall:.0f} s")
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "python": platform.python_version(), "cpus": os.cpu_count(), "points": points,
            "seed": SEED, "wall_s": wall, "counts": counts}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
