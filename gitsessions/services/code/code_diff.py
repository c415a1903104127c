"""`diff --code`: the project's diffstat between the code snapshots of two session states.

Invariants:
- A state's snapshot is the `Code-Snapshot:` trailer of its newest commit that has one.
- Only a 40/64-hex id from a trailer reaches git's command line (never an option).
- Stock `git diff --stat` runs in the current directory's repository when it is the
  sessions' project by identity, else the recorded one, with no external diff or
  textconv (projectgit.py); nothing written. A missing side, repository or failing git
  is one note, never an error; `full_diff` gives the command that prints the patch.
- `patch` (the web view's turn page) reads the patch, at most `limit` bytes and
  `TIMEOUT` seconds: git is stopped past them, so a huge change costs bounded memory and
  time.
"""

import shlex
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.code.project_id import recorded, same_project
from gitsessions.services.code.projectgit import DIFF_SAFE, OBJECT_ID, command, run
from gitsessions.services.code.workspace import project_of
from gitsessions.services.sessions.revisions import State
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.store.trailers import parse_trailers

TRAILER = "Code-Snapshot"
TIMEOUT = 60


def snapshot(store: SessionStore, head: Head) -> str | None:
    """The code snapshot recorded at or before `head`, or None."""
    for _commit_id, commit in store.history(head):
        value = parse_trailers(commit.message)[1].get(TRAILER, "").strip().lower()
        if value:
            return value if OBJECT_ID.fullmatch(value) else None
    return None


def code_diff(
    store: SessionStore, a: State, b: State, env: Mapping[str, str], here: Path | None = None
) -> dict[str, Any]:
    """`{"a", "b", "repo", "stat", "note", "full_diff"}`: the two snapshots, where they
    were compared, `git diff --stat`'s lines, why there is no stat when there is none,
    and the command that prints the whole patch (None without a stat)."""
    shas = {"a": snapshot(store, a.head), "b": snapshot(store, b.head)}
    repo = _here_if_same(here, (b.head, a.head), env) or _repo(b.head) or _repo(a.head)
    result: dict[str, Any] = {**shas, "repo": repo, "stat": [], "note": None, "full_diff": None}
    missing = [side.upper() for side, sha in shas.items() if sha is None]
    if missing:
        which = "neither side has a" if len(missing) == 2 else f"side {missing[0]} has no"
        result["note"] = f"{which} code snapshot: no code diff"
        return result
    if repo is None:
        result["note"] = "no project repository was recorded with these sessions: no code diff"
        return result
    old, new = str(shas["a"]), str(shas["b"])
    try:
        done = run(repo, env, "diff", *DIFF_SAFE, "--stat", old, new, "--", timeout=TIMEOUT,
                   errors="replace")  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        result["note"] = f"git diff could not run in {repo}: {error}"
        return result
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["failed"])[0]
        result["note"] = f"git diff failed in {repo}: {reason}"
        return result
    result["stat"] = done.stdout.rstrip("\n").splitlines()
    if not result["stat"]:
        result["note"] = "the two snapshots hold the same code"
    else:
        result["full_diff"] = shlex.join(["git", "-C", repo, "diff", old, new])
    return result


def _here_if_same(here: Path | None, heads: tuple[Head, ...], env: Mapping[str, str]) -> str | None:
    """The repository of `here` when it is the project of one of `heads`, else None."""
    if here is None:
        return None
    root, identity = project_of(here, env)
    if root is None or not any(same_project(identity, recorded(h.header)) for h in heads):
        return None
    return str(root)


def _repo(head: Head) -> str | None:
    workspace = head.header.get("workspace") or {}
    root = workspace.get("repo_root") if isinstance(workspace, dict) else None
    return root if isinstance(root, str) and root else None


def patch(result: Mapping[str, Any], env: Mapping[str, str], limit: int) -> tuple[str, bool]:
    """The whole patch between the snapshots of a `code_diff` result that has a stat
    (`git diff A B` in its repository, no external diff or textconv), cut at `limit`
    bytes; `(text, cut)`, `("", False)` when there is none or git fails."""
    if not result.get("full_diff"):
        return "", False
    old, new = str(result["a"]), str(result["b"])
    if not (OBJECT_ID.fullmatch(old) and OBJECT_ID.fullmatch(new)):
        return "", False
    argv, full = command(result["repo"], env, "diff", *DIFF_SAFE, old, new, "--")
    try:
        with subprocess.Popen(
            argv, env=full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as git:  # fmt: skip
            assert git.stdout is not None
            stuck = threading.Timer(TIMEOUT, git.kill)  # a git that hangs: what it wrote
            stuck.start()
            try:
                data = git.stdout.read(limit + 1)
            finally:
                stuck.cancel()
            git.kill()  # past `limit` (or done): nothing more is read
    except OSError:
        return "", False
    return data[:limit].decode("utf-8", "replace"), len(data) > limit
