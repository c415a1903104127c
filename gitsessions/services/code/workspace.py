"""What a session records about its workspace: path, and for a git repository its root,
branch and HEAD, read with stock git (never written; projectgit.py's hardened commands).

A directory git surely finds no repository from (`no_repository`: nothing that looks
like one in it or above it, no GIT_DIR naming one) is answered without
starting git: a turn in a plain directory would start four git processes to learn, four
times, that there is none.
"""

import os
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.code.project_id import identity
from gitsessions.services.code.projectgit import run
from gitsessions.values.records import empty_workspace

NO_REPOSITORY_NOTE = "note: the workspace is not in a git repository; no code snapshots"


def _git(path: Path, env: Mapping[str, str], *args: str) -> str | None:
    try:
        done = run(path, env, *args, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def no_repository(path: Path, env: Mapping[str, str]) -> bool:
    """True only when git surely finds no repository from `path`: none of GIT_DIR,
    GIT_WORK_TREE, GIT_COMMON_DIR in `env` (they name one outright; the other variables
    of git's search only narrow it), and neither `path` nor a parent of it
    (as given, and with symbolic links resolved, as git walks it) holds a `.git` entry or
    a `HEAD` file (a bare repository, or a git directory). False whenever in doubt: git
    is asked then."""
    if any(env.get(name) for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")):
        return False
    try:
        seen: set[Path] = set()
        for start in (path.absolute(), path.resolve()):
            for directory in (start, *start.parents):
                if directory in seen:
                    continue
                seen.add(directory)
                if os.path.lexists(directory / ".git") or os.path.lexists(directory / "HEAD"):
                    return False
    except (OSError, RuntimeError):  # unreadable, or a symbolic link loop
        return False
    return True


def describe(path: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The workspace record for `path` (git fields None outside a repository; `project`:
    the repository's identity, `project_id.identity`; `user` and `host`: who made the
    session, on which machine)."""
    record = empty_workspace(str(path))
    record["user"] = env.get("USER") or env.get("LOGNAME") or None  # who, on which machine:
    record["host"] = socket.gethostname() or None  # shown with a pulled session (`info`)
    if no_repository(path, env):
        return record
    root = _git(path, env, "rev-parse", "--show-toplevel")
    if root is None:
        return record
    record["repo_root"] = root
    record["branch"] = _git(path, env, "symbolic-ref", "--short", "-q", "HEAD")
    record["head"] = _git(path, env, "rev-parse", "-q", "--verify", "HEAD")
    record["project"] = identity(Path(root), env)
    return record


def repo_root(path: Path, env: Mapping[str, str]) -> Path | None:
    """The root of the git repository holding `path`, or None."""
    if no_repository(path, env):
        return None
    root = _git(path, env, "rev-parse", "--show-toplevel")
    return Path(root) if root else None


def head_of(path: Path, env: Mapping[str, str]) -> str | None:
    """The workspace's HEAD commit, or None (not a repository, or no commit yet)."""
    if no_repository(path, env):
        return None
    return _git(path, env, "rev-parse", "-q", "--verify", "HEAD")


def project_of(
    path: Path, env: Mapping[str, str]
) -> tuple[Path | None, dict[str, list[str]] | None]:
    """The repository root holding `path` and its identity (both None outside one)."""
    root = repo_root(path, env)
    return root, identity(root, env) if root is not None else None
