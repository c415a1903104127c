"""A worktree fork's mark in its header, and `check`, the one gate every use of it passes:
a pulled header can say anything, so a mark is trusted only when this home's record
`store.git/gitsessions/worktrees/<id>` (written by `remember`, never pushed, pulled,
exported or imported) names the same path, repository and branch (this home's record
wins over another home's mark), and, to be worked in (`Checked.live`), the header does
not say it was removed and `git worktree list` lists the path. Anything else is
`Checked.refused` and the caller works in the current directory, saying so in one line.

Read before a resumed chat's prompt: imports only the standard library,
store/homerecords.py and projectgit.py; records read bounded (`MAX_RECORD`), git given
`GIT_TIMEOUT`.
"""

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitsessions.services.code.projectgit import run
from gitsessions.store import homerecords

RECORD_FORMAT = "gitsessions.worktree-made/1"
MAX_RECORD = 64 * 1024
GIT_TIMEOUT = 10.0
_SESSION_ID = re.compile(r"[0-9a-f]{32}")
# what would make `git -C REPO` look at another repository than REPO
_LOCATING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
             "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
             "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")  # fmt: skip
_KEYS = ("path", "repo", "branch")


class Checked(NamedTuple):
    """A header's worktree mark as `check` found it.

    `mark` is None when the header has none or it is refused; else the mark, its path,
    repository and branch as this home recorded them. `refused` says why a mark is not
    trusted (None: it is, or there is none). `live`: the worktree is there, registered
    with git, and not marked removed: the tools may work in it."""

    mark: dict[str, Any] | None
    refused: str | None
    live: bool


NO_MARK = Checked(None, None, False)


def mark_of(header: Mapping[str, Any]) -> dict[str, Any] | None:
    """The header's worktree mark as the header says it, or None. Not to be trusted:
    `check` says whether it may be used."""
    mark = header.get("worktree")
    return dict(mark) if isinstance(mark, dict) and mark.get("path") else None


def _record_path(home: Path, session_id: str) -> Path:
    return home / "store.git" / "gitsessions" / "worktrees" / session_id


def remember(home: Path, session_id: str, mark: Mapping[str, Any]) -> None:
    """Record that this home made the worktree of `mark` for `session_id` (written to a
    temporary file, fsynced, renamed into place)."""
    assert _SESSION_ID.fullmatch(session_id)
    record = {"format": RECORD_FORMAT, "session": session_id, **{k: str(mark[k]) for k in _KEYS}}
    homerecords.write(_record_path(home, session_id), record)


def forget(home: Path, session_id: str) -> None:
    """Drop the record of the session's worktree (its fork was not made)."""
    if _SESSION_ID.fullmatch(session_id):
        _record_path(home, session_id).unlink(missing_ok=True)


def records(home: Path) -> dict[str, tuple[dict[str, str], float]]:
    """Every worktree this home recorded making: {session id: (its path, repo and
    branch, the record's time)}; a record that cannot be read is left out."""
    folder = home / "store.git" / "gitsessions" / "worktrees"
    try:
        names = [n for n in os.listdir(folder) if _SESSION_ID.fullmatch(n)]
    except OSError:
        return {}
    found: dict[str, tuple[dict[str, str], float]] = {}
    for name in names:
        record = _recorded(home, name)
        try:
            when = os.stat(folder / name).st_mtime
        except OSError:
            continue
        if record is not None:
            found[name] = (record, when)
    return found


def _recorded(home: Path, session_id: str) -> dict[str, str] | None:
    """What this home recorded for the session's worktree, or None."""
    if not _SESSION_ID.fullmatch(session_id):
        return None
    record = homerecords.read(_record_path(home, session_id), MAX_RECORD)
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return None
    if record.get("session") != session_id:
        return None
    if not all(isinstance(record.get(k), str) and record[k] for k in _KEYS):
        return None
    return {k: record[k] for k in _KEYS}


def is_recorded(home: Path, session_id: str) -> bool:
    """Whether this home has a record of a worktree of the session (made, adopted or
    removed here), whatever the session's header says."""
    return _SESSION_ID.fullmatch(session_id) is not None and _record_path(home, session_id).exists()


def listed_by_git(repo: Path, path: Path, env: Mapping[str, str]) -> bool:
    """Whether `git worktree list` of the repository at `repo` lists `path` as one of
    its linked worktrees (and `repo` as one of its working trees)."""
    clean = {k: v for k, v in env.items() if k not in _LOCATING}
    try:
        done = run(repo, clean, "worktree", "list", "--porcelain", timeout=GIT_TIMEOUT,
                   text=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    if done.returncode != 0:
        return False
    listed = [
        os.path.realpath(os.fsdecode(line[len(b"worktree ") :]))
        for line in done.stdout.splitlines()
        if line.startswith(b"worktree ")
    ]
    # the first one listed is the main working tree; the worktree is a linked one
    return os.path.realpath(repo) in listed and os.path.realpath(path) in listed[1:]


def check(
    home: Path, session_id: str, header: Mapping[str, Any], env: Mapping[str, str] | None
) -> Checked:
    """The worktree mark of the header of session `session_id` (the id its branch names:
    a header may claim another), if this home made it for that session; `live` (asked
    of git only when `env` is given) when it may be worked in now."""
    said = mark_of(header)
    if said is None:
        return NO_MARK
    recorded = _recorded(home, session_id) if header.get("id") == session_id else None
    if recorded is None:
        return Checked(None, "this home did not make", False)
    if any(str(said.get(k)) != recorded[k] for k in _KEYS):
        # another home's mark (it made the fork's worktree there, and its commit came
        # with a pull): this home's own worktree is the one worked in here
        said = {"base": said.get("base"), "removed_at": None}
    mark = {**said, **recorded}
    if env is None or mark.get("removed_at") or not Path(recorded["path"]).is_dir():
        return Checked(mark, None, False)
    return Checked(mark, None, listed_by_git(Path(recorded["repo"]), Path(recorded["path"]), env))


def workspace_for(header: Mapping[str, Any], mark: Mapping[str, Any]) -> Path:
    """Where a worktree fork's tools work: its recorded workspace when it is inside the
    worktree of `mark` (a mark `check` trusted), else the worktree's root."""
    root = Path(os.path.realpath(mark["path"]))
    recorded = (header.get("workspace") or {}).get("path")
    if isinstance(recorded, str) and recorded:
        inside = Path(os.path.realpath(recorded))
        if inside.is_relative_to(root) and inside.is_dir():
            return Path(recorded)
    return Path(mark["path"])
