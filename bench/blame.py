"""Blame bench (issue 34): `gitsessions blame FILE` on a project whose sessions took many
turns, warm and cold, against `git blame` of the same file in the project.

The project holds one FILE of `--lines` lines. Its history of code snapshots is laid out
exactly as docs/format.md ("In the project") says a session's is: per session a ref
`refs/gitsessions/snapshots/<id>`, snapshot commits (subject `gitsessions snapshot:
session <id8> turn N.S`, parent the project's HEAD) held by keep commits (first parent
the new snapshot, second the ref's previous value). Each turn is a `N.0` snapshot (the
code the prompt found; every fifth turn a person edited two lines before it) and a
`N.1` (the turn's step: five lines rewritten). They are written by one `git fast-import`
(taking them through the agent, 10,000 snapshots of a few git processes each, takes far
longer than the blame being measured); then three more turns are taken by the real
snapshot code (`snapshotter.take`), so the blame reads both. Prints a table; writes JSON.

    uv run python bench/blame.py --quick
    uv run python bench/blame.py            # 200 sessions, 5,000 turns, 2,000 lines
"""

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gitsessions.services.code import snapshots, snapshotter  # noqa: E402

REPS = 5
START = 1_790_000_000


def git(root: Path, *args: str, input: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], input=input, capture_output=True,
                          check=True)  # fmt: skip
    return done.stdout.decode().strip()


def build(root: Path, sessions: int, turns: int, lines: int, seed: int = 7) -> int:
    """The project and its snapshot history; how many snapshots were written."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    body = [f"line {i:05d} = {rng.random():.6f}" for i in range(lines)]
    (root / "big.py").write_text("\n".join(body) + "\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "initial")
    head = git(root, "rev-parse", "HEAD")
    ids = [uuid.uuid4().hex for _ in range(sessions)]
    stream: list[bytes] = []
    mark = 0
    tips: dict[str, int] = {}
    clock = START
    ident = b"gitsessions <gitsessions@localhost>"

    def commit(subject: str, ref: str, parents: list[str], text: list[str] | None) -> int:
        nonlocal mark, clock
        mark += 1
        clock += 1
        out = b"commit %s\nmark :%d\nauthor %s %d +0000\ncommitter %s %d +0000\n" % (
            ref.encode(), mark, ident, clock, ident, clock)  # fmt: skip
        message = subject.encode()
        out += b"data %d\n%s\n" % (len(message), message)
        out += b"from %s\n" % parents[0].encode()
        out += b"".join(b"merge %s\n" % p.encode() for p in parents[1:])
        if text is not None:
            data = ("\n".join(text) + "\n").encode()
            out += b"M 100644 inline big.py\ndata %d\n%s\n" % (len(data), data)
        stream.append(out + b"\n")
        return mark

    per = max(1, turns // sessions)
    for n, sid in enumerate(ids):
        ref = f"refs/gitsessions/snapshots/{sid}"
        scratch = f"refs/bench/{n}"
        for t in range(1, per + 1):
            if t % 5 == 0:  # a person's edit between turns
                for i in rng.sample(range(lines), 2):
                    body[i] = f"line {i:05d} = person {n}.{t}"
            for step in (0, 1):
                if step == 0 and t % 5 and sid in tips:
                    continue  # the code the prompt found is the last step's: no new snapshot
                if step == 1:
                    for i in rng.sample(range(lines), 5):
                        body[i] = f"line {i:05d} = session {n} turn {t}"
                snap = commit(f"gitsessions snapshot: session {sid[:8]} turn {t}.{step}",
                              scratch, [head], list(body))  # fmt: skip
                if sid in tips:
                    tip = commit(f"gitsessions keep: session {sid[:8]}", ref,
                                 [f":{snap}", f":{tips[sid]}"], None)  # fmt: skip
                else:
                    stream.append(b"reset %s\nfrom :%d\n\n" % (ref.encode(), snap))
                    tip = snap
                tips[sid] = tip
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(stream),
                   check=True)  # fmt: skip
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/bench/").split()
    git(root, "update-ref", "--stdin", input="".join(f"delete {r}\n" for r in refs).encode())
    (root / "big.py").write_text("\n".join(body) + "\n")
    # three turns by the real snapshot code, in a session of their own
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    sid = uuid.uuid4().hex
    for t in (1, 2, 3):
        snapshotter.take(
            project, os.environ, sid, f"gitsessions snapshot: session {sid[:8]} turn {t}.0"
        )
        body[t] = f"line {t:05d} = the real snapshot code, turn {t}"
        (root / "big.py").write_text("\n".join(body) + "\n")
        snapshotter.take(
            project, os.environ, sid, f"gitsessions snapshot: session {sid[:8]} turn {t}.1"
        )
    git(root, "gc", "-q")
    subjects = git(root, "log", "--format=%s", "--glob=refs/gitsessions/snapshots/*")
    return sum(1 for s in subjects.splitlines() if s.startswith("gitsessions snapshot:"))


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return took, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="20 sessions, 500 turns")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "blame.json")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.turns = 20, 500
    with tempfile.TemporaryDirectory(prefix="gitsessions-bench-blame-") as tmp:
        root = Path(tmp) / "project"
        began = time.perf_counter()
        count = build(root, args.sessions, args.turns, args.lines)
        built = time.perf_counter() - began
        env = {**os.environ, "GITSESSIONS_HOME": str(Path(tmp) / "home")}
        cmd = [sys.executable, "-m", "gitsessions", "blame", "big.py", "--json"]
        runs = [timed(cmd, env, root) for _ in range(REPS + 1)]
        # one more turn's snapshot: the next blame grows the kept history by one
        project = snapshots.find_project(root, os.environ)
        assert project is not None
        sid = uuid.uuid4().hex
        (root / "big.py").write_text((root / "big.py").read_text().replace("line 00010", "x 10"))
        snapshotter.take(
            project, os.environ, sid, f"gitsessions snapshot: session {sid[:8]} turn 1.1"
        )
        after_turn = timed(cmd, env, root)[0]
        rows = [json.loads(line) for line in runs[-1][1].splitlines()]
        by_agent = sum(1 for r in rows if r["session"])
        gitb = [timed(["git", "blame", "--porcelain", "big.py"], env, root)[0] for _ in range(REPS)]
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "sessions": args.sessions,
        "turns": args.turns,
        "snapshots": count,
        "file_lines": args.lines,
        "build_s": round(built, 2),
        "blame_cold_s": round(runs[0][0], 3),
        "blame_warm_median_s": round(statistics.median(t for t, _ in runs[1:]), 3),
        "blame_after_one_more_turn_s": round(after_turn, 3),
        "git_blame_median_s": round(statistics.median(gitb), 3),
        "lines_by_a_turn": by_agent,
        "lines_by_a_person": len(rows) - by_agent,
    }
    print(f"{'measured':<34} {'value':>10}")
    keys = ["sessions", "turns", "snapshots", "file_lines", "blame_cold_s",
            "blame_warm_median_s", "blame_after_one_more_turn_s", "git_blame_median_s",
            "lines_by_a_turn", "lines_by_a_person"]  # fmt: skip
    for key in keys:
        print(f"{key:<34} {result[key]:>10}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
