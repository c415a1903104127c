"""Which of the workspace's changes git already holds, so `rewind` writing a snapshot over
them loses nothing (the user edited what the agent wrote and committed it).

Invariants:
- Held: the path's blob is HEAD's there, else any commit reachable from any ref holds it
  at any path (one bounded `git log --all --find-object` walk for all paths); a path the
  workspace lacks is held only when HEAD lacks it too.
- Past `MAX_PATHS` or `SEARCH_SECONDS` paths count as not held, never as held.
- Read-only, through projectgit.py, pathspecs literal.
"""

import os
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from gitsessions.services.code.projectgit import DIFF_SAFE, run
from gitsessions.services.code.snapshots import Project, git

MAX_PATHS = 64
SEARCH_SECONDS = 10.0
LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}


@dataclass(frozen=True)
class Held:
    """`path` as the workspace has it is in git: in commit `where` ("HEAD" or an id)
    at `there` (default: `path`), or removed there too (`removed`)."""

    path: str
    where: str
    removed: bool = False
    there: str = ""

    def hint(self) -> str:
        """The note a rewind prints: where the user's version is, as a command."""
        if self.removed:
            return f"{self.path}: your removal is committed ({self.where} has no such file)"
        whose = "committed" if self.where == "HEAD" else "own"
        shown = shlex.quote(f"{self.where}:{self.there or self.path}")
        return f"{self.path}: your {whose} version is in git: git show {shown}"


def held_by_git(
    project: Project, env: Mapping[str, str], tree: str, head: str | None, paths: list[str]
) -> list[Held]:
    """Where git holds those of `paths` it holds as `tree` has them (HEAD first), in
    the order of `paths`; none past a bound."""
    if len(paths) > MAX_PATHS:
        return []
    mine = _entries(project, env, tree, paths) if paths else {}
    theirs = _entries(project, env, head, paths) if head and paths else {}
    held: dict[str, Held] = {}
    wanted: dict[str, str] = {}  # blob -> path
    for path in paths:
        blob = mine.get(path)
        if blob is None:
            if path not in theirs:  # removed here and there: the removal is committed
                held[path] = Held(path, "HEAD", removed=True)
        elif theirs.get(path) == blob:
            held[path] = Held(path, "HEAD")
        else:
            wanted[blob] = path
    for blob, (commit, at) in _commits_holding(project, env, set(wanted)).items():
        held[wanted[blob]] = Held(wanted[blob], commit[:12], there=at)
    return [held[p] for p in paths if p in held]


def _entries(
    project: Project, env: Mapping[str, str], treeish: str, paths: list[str]
) -> dict[str, str]:
    """path -> blob id of `paths` in `treeish` (missing paths left out)."""
    done = git(project.root, env, "ls-tree", "-r", "-z", "--full-tree", treeish, "--", *paths,
               extra=LITERAL)  # fmt: skip
    entries: dict[str, str] = {}
    for entry in done.stdout.split(b"\0"):
        if b"\t" in entry:
            meta, path = entry.split(b"\t", 1)
            kind, oid = meta.split()[1:3]
            if kind == b"blob":
                entries[os.fsdecode(path)] = oid.decode()
    return entries


def _commits_holding(
    project: Project, env: Mapping[str, str], blobs: set[str]
) -> dict[str, tuple[str, str]]:
    """blob -> (a commit that holds it, its path there), for those of `blobs` some
    commit reachable from any ref holds; none when the walk ran out of time or failed."""
    if not blobs:
        return {}
    finds = [f"--find-object={b}" for b in sorted(blobs)]
    try:
        done = run(project.root, env, "log", "--all", "-m", "--raw", "-z", "--no-abbrev",
                   "--no-renames", *DIFF_SAFE, "--format=%x01%H", *finds, timeout=SEARCH_SECONDS,
                   text=False, start_new_session=True)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    found: dict[str, tuple[str, str]] = {}
    commit = ""
    fields = done.stdout.split(b"\0")  # `\x01HASH`, then `:mode mode src dst status`, path
    for field, after in zip(fields, [*fields[1:], b""], strict=True):
        text = field.decode("utf-8", "surrogateescape").strip()
        if text.startswith("\x01"):
            commit = text[1:]
        elif text.startswith(":") and len(text.split()) == 5:
            blob = text.split()[3]
            if blob in blobs and blob not in found and commit:
                found[blob] = (commit, os.fsdecode(after))
    return found
