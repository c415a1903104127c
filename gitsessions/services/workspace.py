"""What a session records about its workspace: path, and for a git repository its root,
branch and HEAD, read with stock git (never written)."""

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.values.records import empty_workspace


def _git(path: Path, env: Mapping[str, str], *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe(path: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The workspace record for `path` (git fields None outside a repository)."""
    record = empty_workspace(str(path))
    root = _git(path, env, "rev-parse", "--show-toplevel")
    if root is None:
        return record
    record["repo_root"] = root
    record["branch"] = _git(path, env, "symbolic-ref", "--short", "-q", "HEAD")
    record["head"] = _git(path, env, "rev-parse", "-q", "--verify", "HEAD")
    return record


def repo_root(path: Path, env: Mapping[str, str]) -> Path | None:
    """The root of the git repository holding `path`, or None."""
    root = _git(path, env, "rev-parse", "--show-toplevel")
    return Path(root) if root else None


def head_of(path: Path, env: Mapping[str, str]) -> str | None:
    """The workspace's HEAD commit, or None (not a repository, or no commit yet)."""
    return _git(path, env, "rev-parse", "-q", "--verify", "HEAD")
