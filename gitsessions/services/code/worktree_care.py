"""Worktrees and branches of worktree forks no session knows (a `fork --worktree` killed
before its commit), as `doctor` finds them and `--repair` removes them.

Invariants:
- A finding: this home's record of a session the store lacks and this home did not
  delete, older than `FRESH`; a folder under `<home>/worktrees/` nothing names; a
  `gitsessions/<id8>` branch nothing names.
- Nothing of the user's is lost: repair removes only a recorded worktree that `git status
  --porcelain --ignored` finds clean (`git worktree remove`, no --force), its branch only
  when it holds nothing but the fork's own start; anything else is reported with the git
  command that would remove it. An unnamed folder or branch is never removed.
"""

import os
import re
import shlex
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from gitsessions.services.code.snapshots import REF_PREFIX, Project, SnapshotError, git, out
from gitsessions.services.code.worktree_mark import check, forget, listed_by_git, records
from gitsessions.services.code.worktrees import BRANCH_PREFIX, WORKTREES_DIR
from gitsessions.services.sessions.doctor import Finding
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import SessionStore
from gitsessions.store.tombstones import deleted

FRESH = 600.0  # seconds: a record younger than this may be a fork being made now
FORK_START = "gitsessions: uncommitted work of "
_SHORT_ID = re.compile(r".-([0-9a-f]{8})\Z")
_BRANCH = re.compile(re.escape(BRANCH_PREFIX) + r"([0-9a-f]{8})")


def check_worktrees(
    store: SessionStore, env: Mapping[str, str], where: Iterable[Project], repair: bool
) -> list[Finding]:
    """The worktrees and branches no session knows, each a finding (see the module);
    `where`: the projects whose branches are looked at."""
    home = store.home
    headers = Catalog(store).headers()
    known = {str(h.get("id")) for h in headers}
    gone = deleted(store.git.path)
    named: set[str] = set()
    for header in headers:
        mark = check(home, str(header.get("id")), header, None).mark
        if mark is not None:
            named.add(os.path.realpath(mark["path"]))
    findings: list[Finding] = []
    now = time.time()
    recorded: set[tuple[str, str]] = set()
    for sid, (record, when) in sorted(records(home).items()):
        named.add(os.path.realpath(record["path"]))
        recorded.add((os.path.realpath(record["repo"]), record["branch"]))
        if sid in known or sid in gone or now - when < FRESH:
            continue
        findings.append(_unmade(home, env, sid, record, repair))
    findings += _unnamed(home, env, named, known | gone)
    findings += _branches(env, where, recorded, known | gone)
    return findings


def _unmade(
    home: Path, env: Mapping[str, str], sid: str, record: Mapping[str, str], repair: bool
) -> Finding:
    """The worktree and branch a fork of `sid` that never became a session left: all
    removed with `repair` when none of it holds anything else, else all kept."""
    path, repo, branch = Path(record["path"]), Path(record["repo"]), record["branch"]
    kept: list[str] = []  # why it cannot go by itself
    commands: list[str] = []  # what removes it all, as the user would type it
    worktree = path.exists()
    if worktree:
        if not (repo.is_dir() and listed_by_git(repo, path, env)):
            kept.append(f"{path} is not a worktree of {repo}")
            commands.append(f"rm -r {shlex.quote(str(path))}")
        elif not _clean(path, env):
            kept.append("the worktree holds uncommitted, untracked or ignored files")
            commands.append(_git(repo, "worktree", "remove", "--force", str(path)))
        else:
            commands.append(_git(repo, "worktree", "remove", str(path)))
    ours = repo.is_dir() and branch.startswith(BRANCH_PREFIX)
    has_branch = ours and _has_branch(repo, env, branch)
    if has_branch:
        unsaved = _unsaved(repo, env, branch)
        if unsaved:
            kept.append(f"its branch holds {unsaved} commit(s) no other ref holds")
        commands.append(_git(repo, "branch", "-D", branch))
    detail = (
        f"worktree {path} and branch {branch} of a `fork --worktree` that did not finish "
        f"(session {sid} was never made)"
    )
    if kept:
        detail += f"; kept: {'; '.join(kept)}; to remove them: {' && '.join(commands)}"
        return Finding("worktree", str(path), detail)
    if not repair:
        detail += "; `gitsessions doctor --repair` removes them (they hold nothing else)"
        return Finding("worktree", str(path), detail)
    done = not worktree or _run(repo, env, "worktree", "remove", str(path))
    done = done and (not has_branch or _run(repo, env, "branch", "-D", branch))
    if not done:
        detail += f"; git refused to remove them: {' && '.join(commands)}"
        return Finding("worktree", str(path), detail)
    forget(home, sid)
    return Finding("worktree", str(path), detail + "; removed", True)


def _unnamed(home: Path, env: Mapping[str, str], named: set[str], ids: set[str]) -> list[Finding]:
    """Folders under the home's worktrees that nothing names (reported, never removed)."""
    try:
        entries = sorted((home / WORKTREES_DIR).iterdir())
    except OSError:
        return []
    findings = []
    for entry in entries:
        match = _SHORT_ID.search(entry.name)
        if not match or not entry.is_dir() or os.path.realpath(entry) in named:
            continue
        if any(sid.startswith(match[1]) for sid in ids):
            continue  # a session's, or a deleted one's (its worktree is kept on purpose)
        command = f"rm -r {shlex.quote(str(entry))}"
        common = _run_out(entry, env, "rev-parse", "--path-format=absolute", "--git-common-dir")
        if common:
            repo = Path(common).parent if Path(common).name == ".git" else Path(common)
            command = _git(repo, "worktree", "remove", str(entry))
        detail = f"a worktree folder no session of this home names; to remove it: {command}"
        findings.append(Finding("worktree", str(entry), detail))
    return findings


def _branches(
    env: Mapping[str, str],
    where: Iterable[Project],
    recorded: set[tuple[str, str]],
    ids: set[str],
) -> list[Finding]:
    """Branches `gitsessions/<short id>` of the projects that no session (live or deleted
    here) and no record names (reported, never removed: they may be another home's)."""
    findings = []
    seen: set[str] = set()
    for project in where:
        common = os.path.realpath(project.common or project.root / ".git")
        if common in seen:
            continue
        seen.add(common)
        root = Path(common).parent if Path(common).name == ".git" else project.root
        listed = _run_out(root, env, "for-each-ref", "--format=%(refname:short)",
                          f"refs/heads/{BRANCH_PREFIX}")  # fmt: skip
        for branch in listed.split():
            match = _BRANCH.fullmatch(branch)
            if not match or any(sid.startswith(match[1]) for sid in ids):
                continue
            if (os.path.realpath(root), branch) in recorded:
                continue  # a record's: reported with its worktree
            unsaved = _unsaved(root, env, branch)
            holds = f" (it holds {unsaved} commit(s) no other ref holds)" if unsaved else ""
            detail = (
                f"branch {branch} of a worktree fork no session of this home knows{holds}; "
                f"to remove it: {_git(root, 'branch', '-D', branch)}"
            )
            findings.append(Finding("branch", f"{root}: {branch}", detail))
    return findings


def _git(repo: Path, *args: str) -> str:
    """The command line a user would type."""
    return shlex.join(["git", "-C", str(repo), *args])


def _run(repo: Path, env: Mapping[str, str], *args: str) -> bool:
    try:
        return git(repo, env, *args, check=False).returncode == 0
    except SnapshotError:
        return False


def _run_out(where: Path, env: Mapping[str, str], *args: str) -> str:
    try:
        done = git(where, env, *args, check=False)
    except SnapshotError:
        return ""
    return out(done) if done.returncode == 0 else ""


def _clean(path: Path, env: Mapping[str, str]) -> bool:
    """Nothing in the worktree but what its HEAD holds: no change, untracked or ignored
    file."""
    try:
        done = git(path, env, "status", "--porcelain", "--ignored", "--untracked-files=all",
                   check=False)  # fmt: skip
    except SnapshotError:
        return False
    return done.returncode == 0 and not done.stdout.strip()


def _has_branch(repo: Path, env: Mapping[str, str], branch: str) -> bool:
    return _run(repo, env, "rev-parse", "-q", "--verify", f"refs/heads/{branch}")


def _unsaved(repo: Path, env: Mapping[str, str], branch: str) -> int:
    """How many commits on `branch` no other ref reaches, but the fork's own start (1
    when git cannot tell: a branch is never taken for empty on a failure)."""
    try:
        done = git(repo, env, "rev-list", f"refs/heads/{branch}", "--not",
                   f"--exclude={branch}", "--branches", "--tags", "--remotes",
                   f"--glob={REF_PREFIX}*", check=False)  # fmt: skip
    except SnapshotError:
        return 1
    if done.returncode != 0:
        return 1
    count = 0
    for commit in out(done).split():
        shown = _run_out(repo, env, "show", "-s", "--format=%T%x00%s%x00%(trailers:key=Code-"
                         "Snapshot,valueonly)", commit)  # fmt: skip
        tree, subject, snapshot = [*shown.split("\0"), "", ""][:3]
        snapshot = snapshot.strip()
        saved = (
            subject.startswith(FORK_START)
            and bool(snapshot)
            and tree == _run_out(repo, env, "rev-parse", "-q", "--verify", f"{snapshot}^{{tree}}")
        )
        count += not saved
    return count
