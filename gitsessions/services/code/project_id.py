"""What identifies a project wherever it is cloned: its root commits and its remotes' URLs,
normalised; sessions are found by it before their recorded path.

Invariants:
- Recorded once at creation (`workspace.project`, sorted, at most `MOST` entries), read
  with projectgit's commands; nothing written to the project.
- Same project: a shared root commit; remotes decide only when one has no commit yet; a
  header without an identity is matched by its path alone (nothing guessed).
- A pulled identity decides only which list a session shows in, never where a tool works.
"""

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.services.code.projectgit import OBJECT_ID, run

MOST = 16  # roots or remotes kept: a repository of many merged histories lists a few
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # user@host:path, as git reads it
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?(/.*)?$", re.I)


def normalize_url(url: str) -> str:
    """One spelling of a remote's URL: host and path, no scheme, user, port, `.git` or
    trailing slash (`git@github.com:o/r.git` and `https://github.com/o/r` give
    `github.com/o/r`); a local path stays a path, without `.git`."""
    text = url.strip()
    match = _URL.match(text) or (None if "://" in text else _SCP.match(text))
    if match:
        host, path = match.group(1).lower(), (match.group(2) or "").lstrip("/")
        text = f"{host}/{path}"
    text = text.rstrip("/")
    return text[:-4] if text.endswith(".git") else text


def _git_lines(root: Path, env: Mapping[str, str], *args: str) -> list[str]:
    try:
        done = run(root, env, *args, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.splitlines() if done.returncode == 0 else []


def identity(root: Path, env: Mapping[str, str]) -> dict[str, list[str]] | None:
    """The identity of the repository at `root` (None when it has neither a commit nor
    a remote)."""
    roots = sorted(
        line
        for line in _git_lines(root, env, "rev-list", "--max-parents=0", "HEAD")
        if OBJECT_ID.fullmatch(line)
    )[:MOST]
    urls = _git_lines(root, env, "config", "--get-regexp", r"^remote\..*\.url$")
    remotes = sorted({normalize_url(line.partition(" ")[2]) for line in urls} - {""})[:MOST]
    if not roots and not remotes:
        return None
    return {"roots": roots, "remotes": remotes}


def recorded(header: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """The identity a session header records, when it is well formed."""
    workspace = header.get("workspace")
    value = workspace.get("project") if isinstance(workspace, Mapping) else None
    if not isinstance(value, Mapping):
        return None
    found: dict[str, list[str]] = {}
    for key in ("roots", "remotes"):
        items = value.get(key)
        if not isinstance(items, list):
            return None
        found[key] = [item for item in items[:MOST] if isinstance(item, str)]
    return found


def same_project(a: Mapping[str, list[str]] | None, b: Mapping[str, list[str]] | None) -> bool:
    """Whether two identities name one project (see the invariants)."""
    if not a or not b:
        return False
    if a["roots"] and b["roots"]:
        return not set(a["roots"]).isdisjoint(b["roots"])
    return not set(a["remotes"]).isdisjoint(b["remotes"])
