"""Kill bench for a pull of thousands of new sessions (issue 46, item 4).

Prepared once: a remote that a team filled, `--sessions` (2,000) sessions of one project
made by `git fast-import` from one real session (bench/scale_team.py), and a home with
that remote and a few sessions of its own, nothing pulled yet. Then `pull` runs as a
real `python -m gitsessions` process under strace, counted once, and is killed at
sampled invocations N of each syscall, sqlite's `pwrite64` and `fdatasync` (the listing
cache) among them (`strace -f -e inject=SC:signal=KILL:when=N`;
strace counts per process, so the git processes the pull starts are killed too: its
`fetch`, its `cat-file` reads).

After each kill, on a copy of the home:
- every session the home had is there at its head (stock git), and `git fsck --strict`
  is clean;
- the next `pull`, not killed, ends with exit 0, and then every session of the remote
  and of the home is a branch at its head there (nothing lost);
- `list --json` lists each of them once (no session listed twice, none missing), and
  prints the same as a `list --json` whose listing cache is built anew from the store
  (the rows the killed and the finishing pull wrote are the store's).

    uv run python bench/crash_pull.py --quick      # 2 points per syscall, a few minutes
    uv run python bench/crash_pull.py              # 6 points per syscall, 2,000 sessions
"""

import argparse
import json
import platform
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.crash import (  # noqa: E402
    SEED,
    Check,
    check_refs,
    git,
    gitsessions,
    last_line,
    sample,
    session_refs,
)
from bench.projects import real_project  # noqa: E402
from bench.scale_team import add_sessions, template  # noqa: E402
from bench.scale_team import git as team_git  # noqa: E402
from bench.store import table  # noqa: E402

# sqlite writes the listing cache by pwrite64 and syncs it by fdatasync
KILL_SYSCALLS = ["rename", "unlink", "write", "pwrite64", "fsync", "fdatasync"]
OWN = 3  # sessions the home has before it pulls


def prepare(root: Path, sessions: int) -> tuple[Path, set[str]]:
    """`root/base` (a home, under `home/`, with the remote and `OWN` sessions of its
    own) and the ids the remote holds."""
    work = root / "make"
    work.mkdir(parents=True)
    clone, project = real_project(work)
    base = root / "base"
    shutil.copytree(template(work, clone, project), base / "home")  # a session of its own
    remote = root / "team.git"
    team_git(remote, "init", "-q", "--bare")
    for args in (["remote", "add", "origin", str(remote)], ["push", "--all"]):
        done = gitsessions(base, args)
        if done.returncode:
            raise SystemExit(f"{args[0]} failed: {done.stderr[-2000:]}")
    head = team_git(remote, "for-each-ref", "--format=%(objectname)", "refs/heads/sessions/")
    add_sessions(remote, head, project, 0, sessions)
    mine = next(iter(session_refs(base / "home") or {}))
    for n in range(OWN - 1):  # more of its own, never pushed
        forked = gitsessions(base, ["fork", mine, "--title", f"own {n}"])
        if forked.returncode:
            raise SystemExit(f"fork failed: {forked.stderr[-2000:]}")
    listed = team_git(
        remote, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/heads/sessions/"
    )
    return base, set(listed.split())


def listing(case: Path) -> tuple[list[str], str] | str:
    """`(ids as listed, the output)`, or what went wrong."""
    done = gitsessions(case, ["list", "--json", "--include-archived"])
    if done.returncode or "Traceback" in done.stderr:
        return f"list failed: {last_line(done.stderr)}"
    try:
        return [row["id"] for row in json.loads(done.stdout)], done.stdout
    except (json.JSONDecodeError, KeyError, TypeError):
        return "list printed no JSON list"


def verify(case: Path, before: dict[str, str], remote: set[str]) -> Check:
    """The checks of the module docstring, on `case` after a killed pull."""
    home = case / "home"
    check = Check()
    check_refs(home, before, set(), check, "after the kill")
    fsck = git(home, "fsck", "--strict", "--no-progress", "--no-dangling")
    if fsck.returncode != 0 or "error" in fsck.stderr.lower():
        check.problems.append("git fsck: " + last_line(fsck.stderr + fsck.stdout))
    again = gitsessions(case, ["pull"])
    if again.returncode or "Traceback" in again.stderr:
        check.problems.append(f"the next pull exited {again.returncode}: {last_line(again.stderr)}")
    refs = check_refs(home, before, set(), check, "after the next pull")
    expected = set(before) | remote
    check.lost += sorted(sid for sid in remote - set(refs) if sid not in check.lost)
    listed = listing(case)
    if isinstance(listed, str):
        check.problems.append(listed)
        return check
    ids, shown = listed
    if len(ids) != len(set(ids)):
        check.problems.append(f"{len(ids) - len(set(ids))} sessions listed twice")
    if set(ids) != expected:
        check.problems.append(
            f"list: {len(expected - set(ids))} missing, {len(set(ids) - expected)} unknown"
        )
    (home / "index.sqlite").unlink(missing_ok=True)
    rebuilt = listing(case)
    if isinstance(rebuilt, str) or rebuilt[1] != shown:
        check.problems.append("list from a cache built anew differs from the pull's")
    return check


def count_calls(case: Path) -> tuple[dict[str, int], float, int]:
    """Per syscall of `KILL_SYSCALLS`, the most invocations any one process of the pull
    made (strace counts per process); its seconds and exit code."""
    trace = case / "strace.out"
    prefix = ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=" + ",".join(KILL_SYSCALLS)]
    started = time.perf_counter()
    done = gitsessions(case, ["pull"], prefix, timeout=900)
    seconds = time.perf_counter() - started
    per: dict[tuple[str, str], int] = {}
    for line in trace.read_text(errors="replace").splitlines():
        if found := re.match(r"^(\d+)\s+(\w+)\(", line):
            key = (found[1], found[2])
            per[key] = per.get(key, 0) + 1
    counts: dict[str, int] = {}
    for (_pid, name), n in per.items():
        counts[name] = max(counts.get(name, 0), n)
    return counts, seconds, done.returncode


def run_point(base: Path, work: Path, remote: set[str], syscall: str, n: int) -> dict[str, Any]:
    case = work / f"{syscall}-{n}"
    shutil.copytree(base, case, symlinks=True)
    try:
        before = session_refs(case / "home") or {}
        prefix = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}"]
        prefix += ["-e", f"inject={syscall}:signal=KILL:when={n}"]
        done = gitsessions(case, ["pull"], prefix, timeout=900)
        killed = done.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
        check = verify(case, before, remote)
        return {"syscall": syscall, "n": n, "killed": killed, "exit": done.returncode,
                "stderr": last_line(done.stderr), **check.verdict()}  # fmt: skip
    finally:
        shutil.rmtree(case, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--points", type=int, default=6, help="kill points per syscall")
    parser.add_argument("--quick", action="store_true", help="2 points per syscall")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "crash_pull.json")
    args = parser.parse_args()
    if not shutil.which("strace"):
        raise SystemExit("strace is needed: apt-get install strace")
    points = 2 if args.quick else args.points
    rng = random.Random(SEED)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gs-crash-pull-") as tmp:
        root = Path(tmp)
        base, remote = prepare(root, args.sessions)
        counted = root / "count"
        shutil.copytree(base, counted, symlinks=True)
        counts, seconds, code = count_calls(counted)
        print(f"pull of {len(remote)} sessions: {seconds:.1f} s, exit {code}, calls {counts}")
        results: list[dict[str, Any]] = []
        for syscall in KILL_SYSCALLS:
            for n in sample(counts.get(syscall, 0), points, rng):
                result = run_point(base, root, remote, syscall, n)
                results.append(result)
                state = (
                    "ok"
                    if result["ok"]
                    else f"FAILED {result['problems']} lost {result['lost_count']}"
                )
                print(
                    f"  {syscall} #{n}: {'killed' if result['killed'] else 'not killed'}, {state}"
                )
    rows = []
    for syscall in KILL_SYSCALLS:
        mine = [r for r in results if r["syscall"] == syscall]
        failed = sum(not r["ok"] for r in mine)
        lost = sum(r["lost_count"] for r in mine)
        rows.append([syscall, len(mine), sum(r["killed"] for r in mine), failed, lost])
    heads = ["syscall", "points", "killed", "failures", "sessions lost"]
    print(table(f"pull of {len(remote)} new sessions killed", heads, rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    minutes = round((time.perf_counter() - started) / 60, 1)
    args.out.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "host": platform.node(),
        "sessions": len(remote), "calls": counts, "minutes": minutes, "results": results,
    }, indent=1))  # fmt: skip
    if any(not r["ok"] for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
