"""Crash bench: kill write commands at every rename/unlink/write/fsync, kill them at random
times, load the store from many processes, and fill the disk; count lost sessions.

Every command runs as a real `python -m gitsessions` process against a copy of a prepared
home: `--sessions` small sessions (default 300, more than the 256 loose refs at which the
store packs its refs, so ref packing runs inside every write), one bigger session for
`exec` and `compact`, an exported session for `import`, and a workspace. The model is
tests/fake_openai.py, served from this process on 127.0.0.1.

After every kill (or injected error) the copy is checked:
- every session that existed before still exists (stock `git for-each-ref`), except the
  one being deleted, and is at its old head or a descendant of it (`merge-base
  --is-ancestor`);
- `git fsck --strict` reports no error (dangling objects are fine);
- the next commands work without manual cleanup: `list --json` lists every session, and a
  `rename` of another session succeeds; afterwards no session is missing either.
Any of these failing is a failure; a session missing at any point is a loss.

Modes (`--modes`, default all):
  strace   for each command, count its rename*/unlink*/write/fsync calls once under strace,
           then kill it at sampled invocations N (`strace -f -e inject=SC:signal=KILL:when=N`;
           strace counts invocations per syscall per traced process/thread). With
           `--enospc`, also fail each sampled write/fsync with ENOSPC (no kill) and require
           a one-line error. Skipped, with a note, when strace is missing.
  random   SIGKILL mixed commands after a delay drawn uniformly over that command's measured
           duration (interpreter start-up included, but not only it).
  load     8 processes x N commits on distinct sessions plus 4 on one shared session
           (store API; retry on ConcurrentUpdate) while `delete` and `gc` run in a loop
           through the CLI: every commit present, commits/s, p50/p99 latency.
  enospc   root only: the home on a 2 MB tmpfs, filled to leave 0..256 KB, one write command
           each: no traceback, one-line errors, no session lost, works again once space is
           freed. Skipped, with a note, if not root or the mount fails.

    uv run python bench/crash.py --quick                # smoke run, a few minutes
    uv run python bench/crash.py                        # full run; allow an hour or more
    uv run python bench/crash.py --modes strace --commands gc,delete --points 20
"""

import argparse
import contextlib
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.store import autopack_off, table  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.background import wait_for_maintenance  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

SEED = 20261201
CREATED = "2026-01-01T00:00:00Z"
SYSCALLS = ["rename", "renameat", "renameat2", "unlink", "unlinkat", "write", "fsync", "fdatasync"]
ENOSPC_SYSCALLS = {"write", "fsync", "fdatasync"}
MODES = ["strace", "random", "load", "enospc"]
COMMANDS = ["exec", "compact", "fork", "rename", "pin", "import", "delete", "gc", "doctor"]

FULL: dict[str, Any] = {
    "sessions": 300,
    "points": 40,  # injection points per (command, syscall) at most
    "kills": 200,
    "load_commits": 200,
    "load_shared_commits": 100,
    "free_kb": [0, 4, 8, 16, 32, 64, 128, 256],  # ENOSPC mode: space left on the tmpfs
}
QUICK: dict[str, Any] = {
    "sessions": 270,
    "points": 1,
    "kills": 6,
    "load_commits": 20,
    "load_shared_commits": 10,
    "free_kb": [0],
}


# -- the prepared home ---------------------------------------------------------------------


@dataclass
class Base:
    """A prepared directory: home/ (the store), ws/ (a workspace), export.json."""

    root: Path
    ids: list[str]  # small sessions, sorted
    big: str  # the session exec and compact work on
    url: str  # the fake model server

    @property
    def target(self) -> str:
        return self.ids[0]

    @property
    def other(self) -> str:
        return self.ids[-1]


def _turn(n: int, size: int) -> list[dict[str, Any]]:
    words = " ".join(f"line{n}_{i}" for i in range(size // 10))
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{n}.py"})},
    }
    return [
        {"role": "user", "content": f"task {n}: read module_{n}.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": words},
        {"role": "assistant", "content": f"module {n} read"},
    ]


def make_sessions(home: Path, count: int, big_turns: int = 4) -> tuple[list[str], str]:
    """`count` two-message sessions and one bigger one, all refs loose (autopack off)."""
    store = SessionStore(home)
    system = {"role": "system", "content": "You are a helpful coding agent."}
    ids: list[str] = []
    with autopack_off():
        for i in range(count):
            sid = new_id()
            head = store.create(
                new_header(sid, CREATED, title=f"session {i}"),
                Change(context=[system], append=[system]),
            )
            msgs = [
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": f"answer {i}"},
            ]
            store.commit(
                head, Change(context=[system, *msgs], append=msgs), event="turn", subject="turn 1"
            )
            ids.append(sid)
        big = new_id()
        head = store.create(
            new_header(big, CREATED, title="big session"),
            Change(context=[system], append=[system]),
        )
        context = [system]
        for n in range(big_turns):
            msgs = _turn(n, 3000)
            context += msgs
            head = store.commit(
                head, Change(context=list(context), append=msgs), event="turn", subject="turn"
            )
    store.close()
    return sorted(ids), big


def prepare(root: Path, sessions: int, url: str) -> Base:
    """The base every case copies. Objects are packed by stock git (refs stay loose)."""
    root.mkdir(parents=True)
    home = root / "home"
    ids, big = make_sessions(home, sessions)
    git(home, "repack", "-a", "-d", "-q")
    (root / "ws").mkdir()
    base = Base(root, ids, big, url)
    done = gitsessions(root, ["export", ids[1], "-o", str(root / "export.json")])
    if done.returncode != 0:
        raise RuntimeError(f"export failed: {done.stderr.strip()}")
    return base


def copy_base(base: Base, dest: Path) -> Path:
    shutil.copytree(base.root, dest, symlinks=True)
    return dest


def has_doctor(base: Base) -> bool:
    return gitsessions(base.root, ["doctor", "--help"]).returncode == 0


def command_argv(name: str, case: Path, base: Base) -> list[str]:
    """The gitsessions arguments of write command `name`, run in `case` (a base copy)."""
    model = ["--base-url", base.url, "--model", "fake-model"]
    return {
        "exec": [
            *("exec", "one more turn", "--resume", base.big),
            *("--workspace", str(case / "ws"), *model),
        ],
        "compact": ["compact", base.big, "--max-context-tokens", "3000", *model],
        "fork": ["fork", base.target, "--title", "forked"],
        "rename": ["rename", base.target, "renamed"],
        "pin": ["pin", base.target, "a pinned note"],
        "import": ["import", str(case / "export.json"), "--new-id"],
        "delete": ["delete", base.target, "--yes"],
        "gc": ["gc"],
        "doctor": ["doctor", "--repair"],
    }[name]


# -- running things ------------------------------------------------------------------------


def child_env(case: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSESSIONS_", "OPENAI_"))
    }
    env.update(
        GITSESSIONS_HOME=str(case / "home"),
        HOME=str(case / "userhome"),
        XDG_DATA_HOME=str(case / "xdg-data"),
        XDG_CONFIG_HOME=str(case / "xdg-config"),
        GIT_CONFIG_NOSYSTEM="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def python_argv(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "gitsessions", *args]


def gitsessions(
    case: Path, args: list[str], prefix: list[str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), *python_argv(args)],
        capture_output=True,
        text=True,
        env=child_env(case),
        cwd=case,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def git(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), *args],
        capture_output=True,
        text=True,
        env=env,
    )


def session_refs(home: Path) -> dict[str, str] | None:
    """`{id: commit}` as stock git sees it; None if git cannot read the refs."""
    done = git(home, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sessions/")
    if done.returncode != 0:
        return None
    out: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, _, sha = line.partition(" ")
        out[name.rsplit("/", 1)[-1]] = sha
    return out


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# -- checking a case after a kill ----------------------------------------------------------


@dataclass
class Check:
    """What was wrong after one kill; empty lists mean the case passed."""

    lost: list[str] = field(default_factory=list)  # session ids missing at some point
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.lost and not self.problems

    def verdict(self) -> dict[str, Any]:
        """The fields every case record carries."""
        return {
            "ok": self.ok,
            "lost_count": len(self.lost),
            "lost": self.lost[:10],
            "problems": self.problems,
        }


def check_refs(
    home: Path, before: dict[str, str], may_vanish: set[str], check: Check, when: str
) -> dict[str, str]:
    refs = session_refs(home)
    if refs is None:
        check.problems.append(f"{when}: git for-each-ref failed")
        return {}
    for sid, old in before.items():
        new = refs.get(sid)
        if new is None:
            if sid not in may_vanish and sid not in check.lost:
                check.lost.append(sid)
            continue
        if new != old:
            done = git(home, "merge-base", "--is-ancestor", old, new)
            if done.returncode != 0:
                check.problems.append(
                    f"{when}: {sid[:8]} moved {old[:8]} -> {new[:8]}, not a descendant"
                )
    return refs


def verify(case: Path, before: dict[str, str], may_vanish: set[str], rename_id: str) -> Check:
    """The checks of the module docstring, on `case` after a killed or failed command."""
    home = case / "home"
    check = Check()
    check_refs(home, before, may_vanish, check, "after the kill")
    if check.lost:
        check.problems.append(f"after the kill: {len(check.lost)} sessions missing")
    if (home / "store.git").exists():  # a write may have started background packing
        wait_for_maintenance(home / "store.git")
    fsck = git(home, "fsck", "--strict", "--no-progress", "--no-dangling")
    if fsck.returncode != 0 or "error" in fsck.stderr.lower():
        check.problems.append("git fsck: " + last_line(fsck.stderr + fsck.stdout))
    listed = gitsessions(case, ["list", "--json", "--include-archived"])
    if listed.returncode != 0 or "Traceback" in listed.stderr:
        check.problems.append("next list failed: " + last_line(listed.stderr))
    else:
        try:
            rows = json.loads(listed.stdout)
            shown = {row["id"] for row in rows}
            refs = session_refs(home) or {}
            unlisted = set(refs) - shown
            if unlisted:
                check.problems.append(f"list misses {len(unlisted)} sessions git has")
        except (json.JSONDecodeError, KeyError, TypeError):
            check.problems.append("next list printed no JSON list")
    if rename_id in (session_refs(home) or {}):
        renamed = gitsessions(case, ["rename", rename_id, "after the crash"])
        if renamed.returncode != 0 or "Traceback" in renamed.stderr:
            check.problems.append("next rename failed: " + last_line(renamed.stderr))
    before_missing = len(check.lost)
    check_refs(home, before, may_vanish, check, "after the next commands")
    if len(check.lost) > before_missing:
        check.problems.append(
            f"after the next commands: {len(check.lost) - before_missing} more sessions missing"
        )
    return check


def one_line_error(done: subprocess.CompletedProcess[str]) -> str | None:
    """None if the command succeeded or failed with one clean line; else what is wrong."""
    if "Traceback" in done.stderr:
        frames = [
            line.strip() for line in done.stderr.splitlines() if line.strip().startswith("File ")
        ]
        where = frames[-1].replace(str(REPO) + os.sep, "") if frames else ""
        return f"traceback: {last_line(done.stderr)} ({where})"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    # notes and progress may come first; the failure itself is one `error:` line, last
    if len(errors) != 1 or lines[-1] != errors[0]:
        return f"{len(lines)}-line error: " + " | ".join(lines[-3:])[:300]
    return None


# -- strace injection ----------------------------------------------------------------------

_TRACE_LINE = re.compile(r"^(\d+)\s+(\w+)\(")


def count_syscalls(case: Path, args: list[str]) -> tuple[dict[str, int], float, int]:
    """Per syscall, the most invocations any one traced process made; duration; exit code."""
    trace = case / "strace.out"
    prefix = ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=" + ",".join(SYSCALLS)]
    started = time.perf_counter()
    done = gitsessions(case, args, prefix)
    seconds = time.perf_counter() - started
    per: dict[tuple[str, str], int] = {}
    for line in trace.read_text(errors="replace").splitlines():
        m = _TRACE_LINE.match(line)
        if m:
            per[(m.group(1), m.group(2))] = per.get((m.group(1), m.group(2)), 0) + 1
    counts: dict[str, int] = {}
    for (_pid, name), n in per.items():
        counts[name] = max(counts.get(name, 0), n)
    if done.returncode != 0:
        print(f"    {args[0]} under strace exited {done.returncode}: {last_line(done.stderr)}")
    return counts, seconds, done.returncode


def sample(count: int, cap: int, rng: random.Random) -> list[int]:
    """All of 1..count when it fits in `cap`; else the first, the last and an even spread
    (jittered by the seed); with a cap of 1, the middle one."""
    if count <= cap:
        return list(range(1, count + 1))
    if cap <= 1:
        return [max(1, count // 2)]
    step = (count - 1) / (cap - 1)
    picks = {round(1 + i * step) for i in range(cap)}
    jitter = max(0, int(step) - 1)
    return sorted({1, count} | {min(count, n + rng.randint(0, jitter)) for n in picks})


@dataclass
class Point:
    command: str
    syscall: str
    n: int
    fault: str  # "kill" or "enospc"


def run_point(base: Base, work: Path, point: Point, index: int) -> dict[str, Any]:
    case = copy_base(base, work / f"p{index}")
    try:
        before = session_refs(case / "home") or {}
        args = command_argv(point.command, case, base)
        action = "signal=KILL" if point.fault == "kill" else "error=ENOSPC"
        inject = f"inject={point.syscall}:{action}:when={point.n}"
        prefix = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={point.syscall}"]
        prefix += ["-e", inject]
        done = gitsessions(case, args, prefix)
        killed = done.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
        may_vanish = {base.target} if point.command == "delete" else set()
        check = verify(case, before, may_vanish, base.other)
        if point.fault == "enospc":
            bad = one_line_error(done)
            if bad:
                check.problems.append(bad)
        return {
            "command": point.command,
            "syscall": point.syscall,
            "n": point.n,
            "fault": point.fault,
            "killed": killed,
            "exit": done.returncode,
            "stderr": last_line(done.stderr),
            **check.verdict(),
        }
    finally:
        shutil.rmtree(case, ignore_errors=True)


def mode_strace(
    base: Base, work: Path, cfg: dict[str, Any], commands: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    if not shutil.which("strace"):
        return {"skipped": "strace not found: install strace to run fault injection"}
    rng = random.Random(SEED)
    counts: dict[str, dict[str, int]] = {}
    points: list[Point] = []
    for name in commands:
        case = copy_base(base, work / f"count-{name}")
        counts_, seconds, code = count_syscalls(case, command_argv(name, case, base))
        shutil.rmtree(case, ignore_errors=True)
        counts[name] = counts_
        print(f"    {name}: {seconds:.1f} s under strace, {counts_}", flush=True)
        if code != 0:
            continue
        for syscall, count in sorted(counts_.items()):
            for n in sample(count, cfg["points"], rng):
                points.append(Point(name, syscall, n, "kill"))
            if args.enospc and syscall in ENOSPC_SYSCALLS:
                for n in sample(count, max(1, cfg["points"] // 2), rng):
                    points.append(Point(name, syscall, n, "enospc"))
    print(f"    {len(points)} injection points", flush=True)
    results = run_all(
        points, lambda p, i: run_point(base, work, p, i), args.jobs, "strace", args.deadline
    )
    return {"counts": counts, "points": results}


def run_all(
    items: list[Any],
    fn: Callable[[Any, int], dict[str, Any]],
    jobs: int,
    label: str,
    deadline: float,
) -> list[dict[str, Any]]:
    """Run fn over items on `jobs` threads, printing progress; stop starting at `deadline`."""
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(pair: tuple[int, Any]) -> None:
        index, item = pair
        if time.time() > deadline:
            return
        result = fn(item, index)
        with lock:
            results.append(result)
            if not result["ok"]:
                print(f"    FAIL {describe(result)}", flush=True)
            if len(results) % 20 == 0:
                bad = sum(not r["ok"] for r in results)
                print(f"    {label}: {len(results)}/{len(items)} done, {bad} failed", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, enumerate(items)))
    if len(results) < len(items):
        print(f"    {label}: time limit, {len(items) - len(results)} not run", flush=True)
    return results


def describe(result: dict[str, Any]) -> str:
    where = (
        f"{result['command']} {result['fault']} at {result['syscall']} #{result['n']}"
        if "syscall" in result
        else f"{result['command']} killed after {result['delay_s']:.2f} s"
    )
    lost = f"lost {result['lost_count']}: " if result["lost_count"] else ""
    return f"{where}: {lost}{'; '.join(result['problems'])[:300]}"


# -- random kills --------------------------------------------------------------------------


def measure(base: Base, work: Path, args: list[str], jobs: int) -> float | None:
    """Median duration of `args` run `jobs` at once (as the kills will run), each on a fresh
    copy; None if it fails without a kill."""

    def one(index: int) -> float | None:
        case = copy_base(base, work / f"measure-{args[0]}-{index}")
        try:
            started = time.perf_counter()
            done = gitsessions(case, [a.replace(str(base.root), str(case)) for a in args])
            seconds = time.perf_counter() - started
        finally:
            shutil.rmtree(case, ignore_errors=True)
        if done.returncode != 0:
            print(f"    {args[0]} fails without a kill: {last_line(done.stderr)}", flush=True)
            return None
        return seconds

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        times = list(pool.map(one, range(max(1, jobs))))
    if any(t is None for t in times):
        return None
    return statistics.median(t for t in times if t is not None)


def debris(home: Path) -> list[str]:
    """dulwich lock files, half-written packs and packs without their index a killed
    writer left in the store (the store's own flock files, gitsessions.lock,
    maintenance.lock and locks/, are always there); `gc` removes them."""
    store = home / "store.git"
    unindexed = [p for p in store.glob("objects/pack/*.pack") if not p.with_suffix(".idx").exists()]
    found = [*store.rglob("*.lock"), *store.rglob("tmp_*"), *unindexed]
    names = [str(p.relative_to(store)) for p in found]
    flocks = ("gitsessions.lock", "maintenance.lock")
    return sorted(n for n in names if n not in flocks and not n.startswith("locks"))[:10]


def run_kill(base: Base, work: Path, item: tuple[str, float], index: int) -> dict[str, Any]:
    name, delay = item
    case = copy_base(base, work / f"k{index}")
    try:
        before = session_refs(case / "home") or {}
        proc = subprocess.Popen(
            python_argv(command_argv(name, case, base)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=child_env(case),
            cwd=case,
            start_new_session=True,
        )
        started = time.perf_counter()
        finished: float | None = None
        try:
            proc.wait(timeout=delay)
            finished = time.perf_counter() - started  # done before the kill: a wasted draw
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
        after = session_refs(case / "home") or {}
        left = debris(case / "home")
        may_vanish = {base.target} if name == "delete" else set()
        check = verify(case, before, may_vanish, base.other)
        return {
            "command": name,
            "delay_s": delay,
            "killed": code == -signal.SIGKILL,
            "finished_s": finished,
            "changed": after != before,
            "debris": left,
            **check.verdict(),
        }
    finally:
        shutil.rmtree(case, ignore_errors=True)


def mode_random(
    base: Base, work: Path, cfg: dict[str, Any], commands: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    # Kills are spread over the whole run; 3 in 4 are drawn after the interpreter start-up
    # (the time `--help` takes), so most land in the command's own work.
    startup = measure(base, work, ["--help"], args.jobs) or 0.0
    durations: dict[str, float] = {}
    for name in commands:
        seconds = measure(base, work, command_argv(name, base.root, base), args.jobs)
        if seconds is not None:
            durations[name] = seconds
    print(
        f"    start-up {startup:.2f} s; durations: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in durations.items()),
        flush=True,
    )
    rng = random.Random(SEED + 1)
    names = sorted(durations)
    results: list[dict[str, Any]] = []
    # Rounds until `kills` processes were really killed: a run that ended before its kill
    # (the machine got faster) teaches the real duration for the next round.
    for _round in range(5):
        wanted = cfg["kills"] - sum(r["killed"] for r in results)
        if wanted <= 0 or time.time() > args.deadline:
            break
        items = []
        for _ in range(wanted):
            name = rng.choice(names)
            low = 0.0 if rng.random() < 0.25 else min(startup, durations[name])
            items.append((name, rng.uniform(low, durations[name])))
        offset = len(results)
        results += run_all(
            items,
            lambda it, i, offset=offset: run_kill(base, work, it, offset + i),
            args.jobs,
            "random",
            args.deadline,
        )
        for name in names:
            ended = [r["finished_s"] for r in results if r["command"] == name and r["finished_s"]]
            if ended:
                durations[name] = min(durations[name], statistics.median(ended))
        print(
            f"    {sum(r['killed'] for r in results)} killed of {len(results)} runs; durations "
            + ", ".join(f"{k} {v:.2f} s" for k, v in durations.items()),
            flush=True,
        )
    return {"startup_s": startup, "durations_s": durations, "kills": results}


# -- load ----------------------------------------------------------------------------------

LOAD_WORKER = """
import json, sys, time
from pathlib import Path
from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.sessions import Change, SessionStore

home, sid, name, commits = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
store = SessionStore(home)
latencies, retries, errors = [], 0, []
done = 0
while done < commits:
    msg = {"role": "user", "content": f"{name}-{done} " + "padding " * 40}
    started = time.perf_counter()
    while True:
        try:
            head = store.head(sid)
            store.commit(head, Change(append=[msg], context=[msg]), event="turn",
                         subject=f"turn: {name}-{done}")
            break
        except ConcurrentUpdate:
            retries += 1
        except Exception as error:  # reported, then the commit is tried again
            errors.append(f"{type(error).__name__}: {error}"[:200])
            if len(errors) > 20:
                raise
    latencies.append(time.perf_counter() - started)
    done += 1
print(json.dumps({"latencies": latencies, "retries": retries, "errors": errors}))
"""


def mode_load(
    base: Base, work: Path, cfg: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    case = copy_base(base, work / "load")
    home = case / "home"
    try:
        store = SessionStore(home)
        system = {"role": "system", "content": "load"}
        with autopack_off():
            sessions = []
            for i in range(9):
                sid = new_id()
                store.create(new_header(sid, CREATED, title=f"load {i}"), Change(context=[system]))
                sessions.append(sid)
        store.close()
        distinct, shared = sessions[:8], sessions[8]
        workers = [(sid, f"d{i}", cfg["load_commits"]) for i, sid in enumerate(distinct)]
        workers += [(shared, f"s{i}", cfg["load_shared_commits"]) for i in range(4)]
        before = session_refs(home) or {}
        doomed = [sid for sid in base.ids[2:] if sid != base.other]  # deleted meanwhile
        env = child_env(case)
        env["PYTHONPATH"] = str(REPO)
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", LOAD_WORKER, str(home), sid, name, str(n)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=case,
            )
            for sid, name, n in workers
        ]
        churn = {"delete": 0, "gc": 0, "failures": []}
        stop = threading.Event()

        def churner() -> None:
            while not stop.is_set() and doomed:
                for args_ in (["delete", doomed.pop(), "--yes"], ["gc"]):
                    done = gitsessions(case, args_)
                    churn[args_[0]] += 1  # type: ignore[operator]
                    if done.returncode != 0:
                        churn["failures"].append(f"{args_[0]}: {last_line(done.stderr)}")  # type: ignore[attr-defined]

        thread = threading.Thread(target=churner)
        thread.start()
        outputs = [proc.communicate() for proc in procs]
        wall = time.perf_counter() - started
        stop.set()
        thread.join()
        latencies: list[float] = []
        problems: list[str] = []
        retries = 0
        worker_errors: list[str] = []
        for (_sid, name, _n), proc, (out, err) in zip(workers, procs, outputs, strict=True):
            if proc.returncode != 0:
                problems.append(f"worker {name} exited {proc.returncode}: {last_line(err)}")
                continue
            data = json.loads(out)
            latencies += data["latencies"]
            retries += data["retries"]
            worker_errors += [f"{name}: {e}" for e in data["errors"]]
        store = SessionStore(home)
        for sid in [*distinct, shared]:
            names = [name for s, name, _n in workers if s == sid]
            expected = {f"{name}-{i}" for s, name, n in workers if s == sid for i in range(n)}
            try:
                transcript = store.transcript(store.head(sid))
            except Exception as error:
                problems.append(f"session {sid[:8]} ({', '.join(names)}): {error}")
                continue
            found = [m["content"].split()[0] for m in transcript if m["role"] == "user"]
            missing = expected - set(found)
            if missing or len(found) != len(expected):
                problems.append(
                    f"session {sid[:8]}: {len(missing)} commits missing, "
                    f"{len(found) - len(set(found))} duplicated"
                )
        store.close()
        deleted = set(before) - set(session_refs(home) or {})
        lost = sorted(deleted - set(base.ids[2:]))
        wait_for_maintenance(home / "store.git")
        fsck = git(home, "fsck", "--strict", "--no-progress", "--no-dangling")
        if fsck.returncode != 0:
            problems.append("git fsck: " + last_line(fsck.stderr))
        commits = len(latencies)
        return {
            "workers": len(workers),
            "commits": commits,
            "wall_s": wall,
            "commits_per_s": commits / wall if wall else 0.0,
            "p50_ms": quantile(latencies, 0.5) * 1000,
            "p99_ms": quantile(latencies, 0.99) * 1000,
            "max_ms": max(latencies) * 1000 if latencies else float("nan"),
            "retries": retries,
            "worker_errors": worker_errors[:20],
            "deletes": churn["delete"],
            "gcs": churn["gc"],
            "churn_failures": churn["failures"],
            "lost": lost,
            "problems": problems,
            "ok": not problems and not lost and not churn["failures"],
        }
    finally:
        shutil.rmtree(case, ignore_errors=True)


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- ENOSPC on a small tmpfs ---------------------------------------------------------------


def mode_enospc(
    base: Base, work: Path, cfg: dict[str, Any], commands: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "not root: mounting a tmpfs needs root"}
    mnt = work / "tmpfs"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        return {"skipped": "mount -t tmpfs failed: " + last_line(mounted.stderr)}
    results: list[dict[str, Any]] = []
    try:
        size = sum(f.stat().st_size for f in base.root.rglob("*") if f.is_file())
        if size > 1_500_000:
            return {"skipped": f"the prepared home is {size} bytes; too big for a 2 MB tmpfs"}
        for name in commands:
            for free_kb in cfg["free_kb"]:
                if time.time() > args.deadline:
                    break
                case = mnt / "case"
                shutil.rmtree(case, ignore_errors=True)
                copy_base(base, case)
                filler = mnt / "filler"
                with contextlib.suppress(FileNotFoundError):
                    filler.unlink()
                stat = os.statvfs(mnt)
                fill = stat.f_bavail * stat.f_frsize - free_kb * 1024
                with open(filler, "wb") as f, contextlib.suppress(OSError):
                    f.write(b"\0" * max(0, fill))
                before = session_refs(case / "home") or {}
                done = gitsessions(case, command_argv(name, case, base))
                bad = one_line_error(done)
                check = Check()
                check_refs(case / "home", before, set(), check, "when full")
                if name == "delete":
                    check.lost = [s for s in check.lost if s != base.target]
                filler.unlink()
                after = verify(
                    case, before, {base.target} if name == "delete" else set(), base.other
                )
                check.lost += [s for s in after.lost if s not in check.lost]
                check.problems += after.problems
                if bad:
                    check.problems.append(bad)
                result = {
                    "command": name,
                    "free_kb": free_kb,
                    "exit": done.returncode,
                    "stderr": last_line(done.stderr),
                    "ok": check.ok,
                    "lost_count": len(check.lost),
                    "lost": check.lost[:10],
                    "problems": check.problems,
                }
                results.append(result)
                if not check.ok:
                    print(f"    FAIL {name} with {free_kb} KB free: {check.problems}", flush=True)
    finally:
        shutil.rmtree(mnt / "case", ignore_errors=True)
        subprocess.run(["umount", str(mnt)], capture_output=True)
    return {"runs": results}


# -- report --------------------------------------------------------------------------------


def summarize_points(results: list[dict[str, Any]], key: str | None) -> list[list[Any]]:
    """One row per value of `key` (one row in all when None)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r[key] if key else "(all)", []).append(r)
    return [
        [
            name,
            len(rs),
            sum(bool(r.get("killed")) for r in rs),
            sum(not r["ok"] for r in rs),
            sum(bool(r["lost_count"]) for r in rs),
            max(r["lost_count"] for r in rs),
        ]
        for name, rs in sorted(groups.items())
    ]


def report(results: dict[str, Any]) -> str:
    out: list[str] = []
    header = ["", "points", "killed", "failed", "with loss", "most lost"]
    st = results.get("strace", {})
    if "skipped" in st:
        out.append(f"strace: skipped ({st['skipped']})\n")
    elif st:
        pts = st["points"]
        for fault in ("kill", "enospc"):
            these = [p for p in pts if p["fault"] == fault]
            if not these:
                continue
            rows = summarize_points(these, "command") + summarize_points(these, None)
            out.append(table(f"strace {fault} injection, by command", header, rows))
            rows = summarize_points(these, "syscall")
            out.append(table(f"strace {fault} injection, by syscall", header, rows))
    rk = results.get("random", {})
    if rk:
        kills = rk["kills"]
        rows = [
            [
                name,
                sum(k["command"] == name for k in kills),
                sum(k["killed"] for k in kills if k["command"] == name),
                sum(k["changed"] for k in kills if k["command"] == name),
                sum(bool(k.get("debris")) for k in kills if k["command"] == name),
                sum(not k["ok"] for k in kills if k["command"] == name),
                sum(bool(k["lost"]) for k in kills if k["command"] == name),
                f"{rk['durations_s'].get(name, 0):.2f}",
            ]
            for name in sorted({k["command"] for k in kills})
        ]
        rows.append(
            [
                "(all)",
                len(kills),
                sum(k["killed"] for k in kills),
                sum(k["changed"] for k in kills),
                sum(bool(k.get("debris")) for k in kills),
                sum(not k["ok"] for k in kills),
                sum(bool(k["lost"]) for k in kills),
                "",
            ]
        )
        out.append(
            table(
                "random SIGKILL",
                [
                    "",
                    "runs",
                    "killed",
                    "refs moved",
                    "left locks",
                    "failed",
                    "with loss",
                    "normal s",
                ],
                rows,
            )
        )
    ld = results.get("load", {})
    if ld:
        out.append(
            table(
                "load",
                [
                    "workers",
                    "commits",
                    "commits/s",
                    "p50 ms",
                    "p99 ms",
                    "retries",
                    "deletes",
                    "gcs",
                    "problems",
                ],
                [
                    [
                        ld["workers"],
                        ld["commits"],
                        f"{ld['commits_per_s']:.1f}",
                        f"{ld['p50_ms']:.1f}",
                        f"{ld['p99_ms']:.1f}",
                        ld["retries"],
                        ld["deletes"],
                        ld["gcs"],
                        len(ld["problems"]) + len(ld["churn_failures"]) + len(ld["lost"]),
                    ]
                ],
            )
        )
        for p in ld["problems"] + ld["churn_failures"]:
            out.append(f"  load problem: {p}")
    en = results.get("enospc", {})
    if "skipped" in en:
        out.append(f"enospc: skipped ({en['skipped']})\n")
    elif en:
        runs = en["runs"]
        rows = [
            [
                name,
                sum(r["command"] == name for r in runs),
                sum(r["exit"] != 0 for r in runs if r["command"] == name),
                sum(not r["ok"] for r in runs if r["command"] == name),
                sum(bool(r["lost"]) for r in runs if r["command"] == name),
            ]
            for name in sorted({r["command"] for r in runs})
        ]
        out.append(
            table("ENOSPC on a 2 MB tmpfs", ["", "runs", "errored", "failed", "with loss"], rows)
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few points and kills: a smoke run")
    parser.add_argument("--modes", default="strace,random,load,enospc", help="comma-separated")
    parser.add_argument("--commands", help=f"comma-separated, of: {', '.join(COMMANDS)}")
    parser.add_argument("--sessions", type=int, help="small sessions in the prepared home")
    parser.add_argument("--points", type=int, help="strace points per command and syscall")
    parser.add_argument("--kills", type=int, help="random kills")
    parser.add_argument("--load-commits", type=int, help="commits per distinct-session worker")
    parser.add_argument("--load-shared-commits", type=int, help="commits per shared worker")
    parser.add_argument("--enospc", action="store_true", help="strace: inject ENOSPC too")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--minutes", type=float, default=0, help="stop starting cases after M")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "crash.json",
        help="JSON results file (default: bench/results/crash.json)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    for key in ("sessions", "points", "kills", "load_commits", "load_shared_commits"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    unknown += [c for c in (args.commands or "").split(",") if c and c not in COMMANDS]
    if unknown:
        parser.error(f"unknown modes or commands: {', '.join(unknown)}")
    args.deadline = time.time() + args.minutes * 60 if args.minutes else float("inf")

    root = Path(tempfile.mkdtemp(prefix="gitsessions-crash-"))
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "git": git(root, "--version").stdout.strip(),
        "strace": (
            subprocess.run(["strace", "-V"], capture_output=True, text=True).stdout.splitlines()
            or ["?"]
        )[0]
        if shutil.which("strace")
        else None,
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "seed": SEED,
        "config": cfg,
        "autopack_refs": maintenance.AUTOPACK_REFS,
    }
    results: dict[str, Any] = {}
    print(f"gitsessions crash bench ({meta['mode']}), work dir {root}", flush=True)
    try:
        with FakeOpenAI() as server:
            server.responder = lambda request: "ok"
            base = prepare(root / "base", cfg["sessions"], server.base_url)
            commands = args.commands.split(",") if args.commands else list(COMMANDS)
            if "doctor" in commands and not has_doctor(base):
                commands.remove("doctor")
                meta["note"] = "no `doctor` command in this version: not tested"
            meta["commands"] = commands
            for mode in modes:
                print(f"... {mode}", flush=True)
                t = time.perf_counter()
                if mode == "strace":
                    results[mode] = mode_strace(base, root, cfg, commands, args)
                elif mode == "random":
                    results[mode] = mode_random(base, root, cfg, commands, args)
                elif mode == "load":
                    results[mode] = mode_load(base, root, cfg, args)
                elif mode == "enospc":
                    small = prepare(root / "small", 20, server.base_url)
                    results[mode] = mode_enospc(small, root, cfg, commands, args)
                results[mode]["wall_s"] = time.perf_counter() - t
                print(f"    {results[mode]['wall_s']:.0f} s", flush=True)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    meta["loadavg_end"] = os.getloadavg()
    meta["wall_s"] = time.perf_counter() - started
    print()
    print(report(results))
    failures = [
        describe(r)
        for mode in ("strace", "random")
        for r in results.get(mode, {}).get("points" if mode == "strace" else "kills", [])
        if not r["ok"]
    ]
    print(f"{len(failures)} failed cases; total {meta['wall_s']:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"meta": meta, "results": results}, indent=2, default=str) + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
