"""The project's `.git` growth from code snapshots, per N one-turn sessions (issue 24).

    uv run python bench/footprint.py                 # 1,000 sessions
    uv run python bench/footprint.py --sessions 200

Generates a small git project (`--files` files, committed, one unstaged edit and one
untracked file, as a project mid-work is), then runs N one-turn sessions' snapshots
in-process: each a new session id and one `Snapshotter` step, as the prompt of a
one-turn `exec` takes it (no model: the snapshot is all a turn writes in the project).
It does that twice, in two copies of the project:

- `untidied`: the refs and objects left as git writes them (what gitsessions did before
  footprint.py: a loose ref file per session, loose objects);
- `tidied`: as gitsessions now runs (footprint.py packs refs and objects as it goes);

and measures each `.git` before and after (bytes on disk, as `du` counts blocks, and
apparent bytes; files; loose refs; loose objects; packs), then once more after
`gitsessions gc`'s project step (project_care.clean). Goal: at most 2 MB added per
1,000 sessions.

Then retention (issue 21): one session of `--turns` turns (in-process `Agent.run_turn`
against the tests' fake model server, a real store) in a project of `--files` files
whose "build" writes `--output-bytes` of new untracked output before each turn; the
`.git` growth as left (the default retention keeps every turn), and after
`snapshot prune --keep 20` plus `git gc --prune=now`.

    uv run python bench/footprint.py --turns 1000 --output-bytes 5000000 --files 10000

Prints tables, writes JSON to bench/results/footprint.json (or --out).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitsessions.agent.loop import Agent  # noqa: E402
from gitsessions.agent.session import AgentSession  # noqa: E402
from gitsessions.agent.turns import AgentConfig  # noqa: E402
from gitsessions.services.code import footprint, retention, snapshots, snapshotter  # noqa: E402
from gitsessions.services.code.workspace import head_of  # noqa: E402
from gitsessions.services.compaction.compaction_policy import Policy  # noqa: E402
from gitsessions.services.model.model import ModelClient  # noqa: E402
from gitsessions.services.settings.config import resolve_model_settings  # noqa: E402
from gitsessions.services.tools import approve_all, create_registry  # noqa: E402
from gitsessions.store.sessions import SessionStore  # noqa: E402
from gitsessions.values.ids import new_id  # noqa: E402
from gitsessions.values.tokens import TokenCounter  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "gc.auto=0"]


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *IDENTITY, *args], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout


def generate(root: Path, files: int) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for i in range(files):
        path = root / f"src/d{i // 100}/f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# file {i}\n" + "x = 1\n" * 20)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    git(root, "gc", "-q")  # the project as a user's is: packed
    (root / "src/d0/f0.py").write_text("# edited, unstaged\n")
    (root / "notes.txt").write_text("untracked notes\n")


def measure(git_dir: Path) -> dict[str, int]:
    blocks = apparent = files = 0
    for folder, _dirs, names in os.walk(git_dir):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            blocks += st.st_blocks * 512
            apparent += st.st_size
            files += 1
    loose_refs = git_dir / "refs" / "gitsessions" / "snapshots"
    counts = dict(
        line.split(": ", 1)
        for line in git(git_dir.parent, "count-objects", "-v").splitlines()
        if ": " in line
    )
    return {
        "disk_bytes": blocks,
        "apparent_bytes": apparent,
        "files": files,
        "loose_snapshot_refs": len(os.listdir(loose_refs)) if loose_refs.is_dir() else 0,
        "loose_objects": int(counts["count"]),
        "packs": int(counts["packs"]),
    }


def run_sessions(root: Path, sessions: int, tidied: bool) -> float:
    env = dict(os.environ)
    started = time.perf_counter()
    for _ in range(sessions):
        sid = new_id()
        taker = snapshotter.Snapshotter(root, env, sid)
        if not tidied:
            taker._tidy = lambda project: None  # type: ignore[method-assign]
        message = f"gitsessions snapshot: session {sid[:8]} turn 1.0"
        assert taker(message) is not None, taker.notes
    return time.perf_counter() - started


def clean(root: Path) -> None:
    """`gitsessions gc`'s step in a project: a forced tidy (no session was deleted)."""
    project = snapshots.find_project(root, os.environ)
    assert project is not None
    footprint.tidy(project, os.environ, force=True)


def retention_run(work: Path, files: int, turns: int, output: int, keep: int) -> dict[str, Any]:
    root = work / "retention"
    generate(root, files)
    env = dict(os.environ)
    store = SessionStore(work / "home", background_maintenance=False)
    before = measure(root / ".git")
    started = time.perf_counter()
    with FakeOpenAI() as server:
        settings = resolve_model_settings({"base_url": server.base_url, "model": "m"}, {}, {})
        session = AgentSession.create(store, "system", {"path": str(root)}, "m")
        agent = Agent(
            session,
            ModelClient(settings),
            create_registry(root, env, approve=approve_all),
            TokenCounter(),
            AgentConfig(
                model="m", summary_model="m", policy=Policy(), stream=False, summary_every=10**9
            ),
            lambda *a: 0.0,
            workspace_head=lambda: head_of(root, env),
            code_snapshot=snapshotter.Snapshotter(root, env, session.id),
        )
        build = root / "build"
        build.mkdir(exist_ok=True)
        for turn in range(turns):
            (build / "output.bin").write_bytes(os.urandom(output))  # a build's new output
            agent.run_turn(f"build {turn}")
        agent.client.close()
    seconds = time.perf_counter() - started
    as_left = measure(root / ".git")
    project = snapshots.find_project(root, env)
    assert project is not None
    default = retention.prune(store, project, env, dry_run=True)
    pruned = retention.prune(store, project, env, keep_turns=keep)
    git(root, "gc", "-q", "--prune=now")
    after = measure(root / ".git")
    git(root, "fsck", "--no-progress", "--connectivity-only")
    store.close()
    return {
        "turns": turns,
        "output_bytes": output,
        "keep": keep,
        "default_prune_drops": default.dropped_count,
        "dropped": pruned.dropped_count,
        "kept": pruned.kept,
        "added_disk_bytes": as_left["disk_bytes"] - before["disk_bytes"],
        "added_disk_bytes_after_prune_gc": after["disk_bytes"] - before["disk_bytes"],
        "seconds": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--output-bytes", type=int, default=1_000_000)
    parser.add_argument("--keep", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "footprint.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitsessions-footprint-"))
    results: dict[str, Any] = {"sessions": args.sessions, "files": args.files, "git": ""}
    try:
        results["git"] = git(work, "--version").strip()
        base = work / "base"
        generate(base, args.files)
        for mode in ("untidied", "tidied"):
            root = work / mode
            shutil.copytree(base, root, symlinks=True)
            before = measure(root / ".git")
            seconds = run_sessions(root, args.sessions, mode == "tidied")
            after = measure(root / ".git")
            clean(root)
            after_gc = measure(root / ".git")
            git(root, "fsck", "--no-progress", "--connectivity-only")
            results[mode] = {
                "before": before,
                "after": after,
                "after_gc": after_gc,
                "added_disk_bytes": after["disk_bytes"] - before["disk_bytes"],
                "added_disk_bytes_after_gc": after_gc["disk_bytes"] - before["disk_bytes"],
                "seconds": round(seconds, 2),
            }
        if args.turns:
            results["retention"] = retention_run(
                work, args.files, args.turns, args.output_bytes, args.keep
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    show(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def show(results: dict[str, Any]) -> None:
    n = results["sessions"]
    print(f"{n:,} one-turn sessions, {results['files']} files, {results['git']}")
    print("| .git growth | added on disk | files | loose refs | loose objects | packs | time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for mode in ("untidied", "tidied"):
        r = results[mode]
        rows = (("as left", "after", "added_disk_bytes"),
                ("after gc", "after_gc", "added_disk_bytes_after_gc"))  # fmt: skip
        for label, key, added in rows:
            m = r[key]
            print(
                f"| {mode}, {label} | {r[added] / 1e6:.2f} MB "
                f"| +{m['files'] - r['before']['files']} | {m['loose_snapshot_refs']} "
                f"| {m['loose_objects'] - r['before']['loose_objects']} | {m['packs']} "
                f"| {r['seconds']} s |"
            )
    r = results.get("retention")
    if r:
        print(f"\none session, {r['turns']:,} turns, {r['output_bytes']:,} bytes of new "
              "untracked build output a turn")  # fmt: skip
        print("| retention | .git growth | snapshots dropped |")
        print("| --- | --- | --- |")
        print(f"| default (every turn kept) | {r['added_disk_bytes'] / 1e6:.1f} MB "
              f"| {r['default_prune_drops']} |")  # fmt: skip
        pruned = r["added_disk_bytes_after_prune_gc"] / 1e6
        print(f"| `prune --keep {r['keep']}` + `git gc --prune=now` | {pruned:.1f} MB "
              f"| {r['dropped']} |")  # fmt: skip


if __name__ == "__main__":
    main()
