"""Tombstone flood bench (issue 42, item 5): a remote whose tombstone commit lists
`--ids` session ids it never had (default 200,000) beside `--sessions` honest sessions.

Measured, each command a new process (the real CLI), wall seconds and the CPU seconds
it and its children (git) used:

- pull: the first pull into a home with one session of its own (what it records of the
  flood: `MAX_LEARNED` at most, in one write; the fsyncs of `store.git/gitsessions/deleted`
  counted under strace when strace is there, in a run of its own);
- pull again: the next pull, which takes the next `MAX_LEARNED`;
- push to a mirror: how many of the flood's ids the mirror's tombstones then list (none:
  an id no session here ever had goes only to a remote holding a branch of it).

Baseline: the same home pulling a remote with no tombstones. Prints a table and writes
JSON (`--out`). Everything lives in one temporary directory, removed unless --keep.

    uv run python bench/tombstones.py --ids 20000     # quick
    uv run python bench/tombstones.py                 # 200,000 ids
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gitsessions.services.sync.deletions import MAX_LEARNED  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.clock import now_iso  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.records import new_header  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str] | None = None, stdin: bytes = b"") -> dict[str, Any]:
    """Run `cmd` to its end: wall and CPU seconds, its output; fails loudly."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    took = {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu}
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {done.stderr.decode()[-2000:]}")
    return {**took, "out": done.stdout.decode(), "err": done.stderr.decode()}


def gs(home: Path, *args: str, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    return run([*prefix, sys.executable, "-m", "gitsessions", *args], env)


def plumb(repo: Path, *args: str, stdin: bytes = b"") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.org"}  # fmt: skip
    return str(run(["git", "--git-dir", str(repo), *args], env, stdin)["out"]).strip()


def flooded(repo: Path, ids: list[str]) -> None:
    """Point `repo`'s tombstone ref at a commit listing `ids` (stock git plumbing)."""
    blob = plumb(
        repo, "hash-object", "-w", "--stdin", stdin="".join(f"{i}\n" for i in ids).encode()
    )
    tree = plumb(repo, "mktree", stdin=f"100644 blob {blob}\tdeleted\n".encode())
    plumb(
        repo,
        "update-ref",
        "refs/gitsessions/tombstones",
        plumb(repo, "commit-tree", tree, "-m", "t"),
    )


def listed(repo: Path) -> int:
    ask = [
        "git",
        "--git-dir",
        str(repo),
        "rev-parse",
        "--verify",
        "-q",
        "refs/gitsessions/tombstones",
    ]
    tip = subprocess.run(ask, capture_output=True, text=True)
    if tip.returncode != 0:
        return 0
    return len(plumb(repo, "show", f"{tip.stdout.strip()}:deleted").split())


def fsyncs(home: Path, tmp: Path) -> int | None:
    """The fsyncs of `deleted` in a traced first pull of a copy of `home` (None: no strace)."""
    if shutil.which("strace") is None:
        return None
    copy = tmp / "traced"
    shutil.copytree(home, copy, symlinks=True)
    trace = tmp / "strace.out"
    deleted = copy / "store.git" / "gitsessions" / "deleted"
    gs(copy, "pull", prefix=("strace", "-f", "-qq", "-o", str(trace), "-P", str(deleted),
                             "-e", "trace=fsync,fdatasync"))  # fmt: skip
    return len([line for line in trace.read_text().splitlines() if "sync(" in line])


def measure(tmp: Path, ids: int, sessions: int) -> dict[str, Any]:
    writer, home, base = tmp / "writer", tmp / "home", tmp / "baseline"
    origin, plain, mirror = tmp / "origin.git", tmp / "plain.git", tmp / "mirror.git"
    for repo in (origin, plain, mirror):
        run(["git", "init", "-q", "--bare", str(repo)])
    _make(writer, sessions)
    for remote in (origin, plain):
        gs(writer, "remote", "add", remote.stem, str(remote))
        gs(writer, "push", remote.stem, "--all")
    flooded(origin, sorted(new_id() for _ in range(ids)))
    for where, remote in ((home, origin), (base, plain)):
        _make(where, 1)
        gs(where, "remote", "add", "origin", str(remote))
    traced = fsyncs(home, tmp)
    res: dict[str, Any] = {"ids": ids, "sessions": sessions, "cap": MAX_LEARNED}
    res["baseline pull"] = _took(gs(base, "pull"))
    res["pull"] = _took(gs(home, "pull"))
    res["pull again"] = _took(gs(home, "pull"))
    deleted = home / "store.git" / "gitsessions" / "deleted"
    res["recorded"] = len(deleted.read_text().splitlines())
    res["fsyncs of deleted (first pull)"] = traced
    gs(home, "remote", "add", "mirror", str(mirror))
    res["push to mirror"] = _took(gs(home, "push", "mirror", "--all"))
    res["ids the mirror lists"] = listed(mirror)
    return res


def _make(home: Path, count: int) -> None:
    """`count` one-turn sessions in `home`, through the store (as `bench/sync.py`)."""
    store = SessionStore(home, redact=False, background_maintenance=False)
    try:
        for n in range(count):
            system = {"role": "system", "content": "You are a coding agent."}
            head = store.create(
                new_header(new_id(), now_iso(), title=f"s{n}"),
                Change(context=[system], append=[system]),
            )
            question = {"role": "user", "content": f"question {n}"}
            store.commit(head, Change(append=[question]), event="turn", subject="turn 1")
    finally:
        store.close()


def _took(took: dict[str, Any]) -> dict[str, float]:
    return {"wall": round(took["wall"], 3), "cpu": round(took["cpu"], 3)}


def table(res: dict[str, Any]) -> str:
    rows = [
        f"{res['ids']:,} ids the remote never had, {res['sessions']} sessions, cap {res['cap']:,}",
        f"{'step':<16} {'wall s':>8} {'cpu s':>8}",
    ]
    for step in ("baseline pull", "pull", "pull again", "push to mirror"):
        rows.append(f"{step:<16} {res[step]['wall']:>8.2f} {res[step]['cpu']:>8.2f}")
    rows.append(f"recorded after two pulls: {res['recorded']:,}")
    rows.append(f"fsyncs of deleted in the first pull: {res['fsyncs of deleted (first pull)']}")
    rows.append(f"ids the mirror lists after the push: {res['ids the mirror lists']:,}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ids", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "tombstones.json")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gitsessions-tombstones-bench-"))
    try:
        res = measure(tmp, args.ids, args.sessions)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    res["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    print(table(res))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
