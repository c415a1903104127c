"""Sync bench for one project on a team remote: `pull --here` against a whole pull.

P projects x S sessions each (default 100 x 100 = 10,000 sessions of M = 6 messages, two
turns each) are pushed with `gitsessions push --all` to a bare repository. Then, from a
clone of project 0 (a real repository whose root commit is that project's identity):

- `pull` of everything into an empty home;
- `pull --here` into another empty home;
- the baseline: a whole `pull` from a remote that holds project 0's sessions alone.

"Bytes" are what crossed: the pack (what the receiving store's `objects/` grew by) plus
the ref listing the remote sent, computed from the refs it carries (pkt-lines of
`<sha> <ref>\\n`: a whole pull lists every ref, `pull --here` only those under its
project's prefixes, git's protocol v2 `ref-prefix`). Each command is a new process.

    uv run python bench/projects.py --projects 10 --per-project 20     # quick
    uv run python bench/projects.py                                    # 10,000 sessions
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

from bench.store import Messages, make_header, turn_change  # noqa: E402
from bench.sync import Took, bare, gitsessions, objects_bytes  # noqa: E402
from gitsessions.store import maintenance  # noqa: E402
from gitsessions.store.sessions import Change, SessionStore  # noqa: E402
from gitsessions.values.records import empty_usage  # noqa: E402

SEED = 20261202


def real_project(work: Path) -> tuple[Path, str]:
    """A clone with one commit: project 0, whose root commit names it."""
    clone = work / "project0"
    clone.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="B", GIT_AUTHOR_EMAIL="b@example.com",
               GIT_COMMITTER_NAME="B", GIT_COMMITTER_EMAIL="b@example.com")  # fmt: skip
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    (clone / "README").write_text("project 0\n")
    subprocess.run(["git", "-C", str(clone), "add", "README"], check=True, env=env)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "root"], check=True, env=env)
    root = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    return clone, root


def generate(home: Path, roots: list[str], per_project: int, messages: int) -> dict[str, list[str]]:
    """`per_project` sessions of `messages` messages in each project, then gc."""
    gen = Messages(SEED)
    store = SessionStore(home, redact=False, background_maintenance=False)
    ids: dict[str, list[str]] = {}
    for p, root in enumerate(roots):
        for n in range(per_project):
            header = make_header(gen, f"project {p} session {n}")
            header["workspace"] = {"path": f"/home/dev/p{p}", "repo_root": f"/home/dev/p{p}",
                                   "branch": "main", "head": root,
                                   "project": {"roots": [root], "remotes": []}}  # fmt: skip
            system = {"role": "system", "content": "You are a coding agent."}
            head = store.create(header, Change(context=[system], append=[system]))
            context: list[dict[str, Any]] = [system]
            usage, count = empty_usage(), 1
            while count < messages:
                turn = gen.turn(4)[: messages - count]
                change, context, usage = turn_change(head, context, turn, usage)
                head = store.commit(head, change, event="turn", subject=f"turn {count}")
                count += len(turn)
            ids.setdefault(root, []).append(head.id)
    maintenance.repack(store.git)
    store.close()
    return ids


def listing_bytes(remote: Path, prefixes: list[str] | None) -> int:
    """The bytes of the ref listing the remote sends: every ref, or those under `prefixes`."""
    out = subprocess.run(["git", "--git-dir", str(remote), "for-each-ref",
                          "--format=%(objectname) %(refname)"],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    total = 0
    for line in out.splitlines():
        ref = line.split(" ", 1)[1]
        if prefixes is None or any(ref.startswith(p) for p in prefixes):
            total += 4 + len(line) + 1
    return total


def pulled(home: Path, cwd: Path, remote: Path, *flags: str) -> tuple[Took, int]:
    gitsessions(home, "remote", "add", "origin", str(remote))
    before = objects_bytes(home / "store.git") if (home / "store.git").exists() else 0
    old = Path.cwd()
    os.chdir(cwd)
    try:
        took = gitsessions(home, "pull", *flags)
    finally:
        os.chdir(old)
    return took, objects_bytes(home / "store.git") - before


def measure(work: Path, projects: int, per_project: int, messages: int) -> dict[str, Any]:
    clone, root0 = real_project(work)
    roots = [root0] + [f"{p:040x}" for p in range(1, projects)]  # ids of other projects
    start = time.perf_counter()
    home_a = work / "a"
    ids = generate(home_a, roots, per_project, messages)
    res: dict[str, Any] = {
        "projects": projects,
        "per_project": per_project,
        "messages": messages,
        "generate_s": round(time.perf_counter() - start, 1),
    }
    remote = bare(work / "team.git")
    gitsessions(home_a, "remote", "add", "origin", str(remote))
    res["push_all_s"] = round(gitsessions(home_a, "push", "--all").wall, 2)

    alone = bare(work / "alone.git")  # project 0's sessions only: the baseline
    gitsessions(home_a, "remote", "add", "alone", str(alone))
    gitsessions(home_a, "push", "alone", *ids[root0])

    prefixes = [f"refs/gitsessions/projects/{root0}/", "refs/gitsessions/tombstones"]
    whole, whole_pack = pulled(work / "b", clone, remote)
    here, here_pack = pulled(work / "c", clone, remote, "--here")
    base, base_pack = pulled(work / "d", clone, alone)
    rows = {
        "whole pull": (whole, whole_pack, listing_bytes(remote, None)),
        "pull --here": (here, here_pack, listing_bytes(remote, prefixes)),
        "baseline (project alone)": (base, base_pack, listing_bytes(alone, None)),
    }
    res["steps"] = {
        name: {
            "wall_s": round(t.wall, 3),
            "cpu_s": round(t.cpu, 3),
            "pack_bytes": pack,
            "listing_bytes": listing,
            "bytes": pack + listing,
        }
        for name, (t, pack, listing) in rows.items()
    }
    base_bytes = res["steps"]["baseline (project alone)"]["bytes"]
    for row in res["steps"].values():
        row["x_baseline"] = round(row["bytes"] / base_bytes, 2) if base_bytes else 0.0
    store = SessionStore(work / "c")
    res["here_sessions"] = len(store.ids())
    store.close()
    return res


def table(res: dict[str, Any]) -> str:
    lines = [
        f"{res['projects']} projects x {res['per_project']} sessions x {res['messages']} "
        f"messages (generated in {res['generate_s']} s; push --all {res['push_all_s']} s); "
        f"pull --here brought {res['here_sessions']} sessions",
        f"{'step':26} {'wall':>8} {'cpu':>8} {'pack':>12} {'listing':>10} {'bytes':>12} {'x':>6}",
    ]
    for name, row in res["steps"].items():
        lines.append(
            f"{name:26} {row['wall_s']:>7.2f}s {row['cpu_s']:>7.2f}s {row['pack_bytes']:>12,} "
            f"{row['listing_bytes']:>10,} {row['bytes']:>12,} {row['x_baseline']:>6.2f}"
        )
    lines.append("x: bytes against the baseline (goal for pull --here: at most 2.00)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--per-project", type=int, default=100)
    parser.add_argument("--messages", type=int, default=6)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "projects.json")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-projects-bench-"))
    try:
        res = measure(work, args.projects, args.per_project, args.messages)
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
