"""Code travels with the chat: each session's `refs/gitsessions/snapshots/<id>` in its
project, pushed to and fetched from that project's remote with stock git.

Invariants:
- Never forced (no `+`): a ref that moved differently is refused and reported. The one
  exception loses nothing: a session a pull found diverged takes the remote's ref after
  this repository's was copied to its fork's (created, never moved), so both lines'
  turns check out the code they ran on.
- The repository is the current directory's when it is the session's project by
  identity, else the header's; a fetch writes only into a repository that is the
  session's project by identity (a pulled header naming another folder writes nothing).
- A pull's `--code` touches the project's unchanged sessions only where the ref is
  missing (`if_missing`). Git runs with hooks, `ext::` and remote programs off.
"""

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitsessions.services.code.code_scan import ScanFailed, Scanner
from gitsessions.services.code.project_id import identity, recorded, same_project
from gitsessions.services.code.projectgit import run

Here = tuple[Path | None, Mapping[str, list[str]] | None]  # workspace.project_of(cwd)

SNAPSHOTS = "refs/gitsessions/snapshots/"
NO_REMOTE = "no remote"  # its project repository (the detail) has no remote of that name


@dataclass(frozen=True)
class CodeOutcome:
    id: str
    result: str  # pushed, fetched, kept, up to date, no snapshot, no repository, no remote,
    # refused
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "result": self.result}
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True)
class CodeSession:
    """A session whose snapshots move: its id, the id they are stored under on the
    remote, and its header's workspace; `kept_as`: a pull found it diverged and made
    this home's line that fork (this repository's snapshots go there first);
    `if_missing`: fetched only when its repository has no snapshot ref of it yet, and
    nothing said when the remote has none either (a session the pull did not change)."""

    id: str
    source: str
    workspace: Mapping[str, Any]
    kept_as: str | None = None
    if_missing: bool = False


def _git(repo: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(repo, env, *args, timeout=600)


def _repo(
    workspace: Mapping[str, Any],
    here: Here,
    env: Mapping[str, str],
    writing: bool,
    identities: dict[str, Any],
) -> Path | None:
    """The repository a session's snapshots move from or (`writing`) into;
    `identities`: each recorded repository's identity, asked of git once a run."""
    known = recorded({"workspace": workspace})
    root, here_identity = here
    if root is not None and (
        same_project(here_identity, known) or str(root) == workspace.get("repo_root")
    ):
        return root
    where = workspace.get("repo_root") or workspace.get("path")
    if not where or not Path(str(where)).is_dir():
        return None
    if writing:
        if str(where) not in identities:
            identities[str(where)] = identity(Path(str(where)), env)
        if not (known and same_project(identities[str(where)], known)):
            return None
    return Path(str(where))


def _refs(repo: Path, env: Mapping[str, str]) -> dict[str, str]:
    done = _git(repo, env, "for-each-ref", "--format=%(refname) %(objectname)", SNAPSHOTS)
    pairs = [line.split(" ", 1) for line in done.stdout.splitlines() if " " in line]
    return {name: sha for name, sha in pairs}


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith(("fatal", "error"))]
    return ((errors or lines or ["git failed"])[-1])[:200]


def _by_repo(
    sessions: Iterable[CodeSession], here: Here, env: Mapping[str, str], writing: bool
) -> tuple[dict[Path, list[CodeSession]], list[CodeOutcome]]:
    grouped: dict[Path, list[CodeSession]] = {}
    identities: dict[str, Any] = {}
    missing: list[CodeOutcome] = []
    for session in sessions:
        repo = _repo(session.workspace, here, env, writing, identities)
        if repo is None and session.if_missing:
            continue  # not changed by the pull, and no repository here to fetch into
        if repo is None:
            where = str(session.workspace.get("path") or "none recorded")
            hint = "; run it in a clone of the session's project" if writing else ""
            missing.append(CodeOutcome(session.id, "no repository", f"workspace {where}{hint}"))
        else:
            grouped.setdefault(repo, []).append(session)
    return grouped, missing


def push_code(
    sessions: Iterable[CodeSession],
    remote: str,
    env: Mapping[str, str],
    here: Here = (None, None),
    allow_secrets: bool = False,
) -> list[CodeOutcome]:
    """Push each session's snapshot ref to `remote` of its project (never forced). A
    session whose snapshots hold a secret the remote does not have yet (code_scan.py)
    is refused, naming the file and the rule, unless `allow_secrets`."""
    grouped, outcomes = _by_repo(sessions, here, env, writing=False)
    for repo, group in sorted(grouped.items()):
        if missing := _without_remote(repo, group, remote, env):
            outcomes += missing
            continue
        present = _refs(repo, env)
        sending = [s for s in group if SNAPSHOTS + s.id in present]
        outcomes += [CodeOutcome(s.id, "no snapshot") for s in group if s not in sending]
        if not allow_secrets:
            refused = _with_secrets(repo, env, remote, sending)
            outcomes += refused
            sending = [s for s in sending if s.id not in {o.id for o in refused}]
        if not sending:
            continue
        specs = [f"{SNAPSHOTS}{s.id}:{SNAPSHOTS}{s.id}" for s in sending]
        done = _git(repo, env, "push", "--porcelain", remote, *specs)
        status = _porcelain(done.stdout)
        for s in sending:
            flag, summary = status.get(SNAPSHOTS + s.id, ("!", _one_line(done.stderr)))
            if flag == "=":
                outcomes.append(CodeOutcome(s.id, "up to date"))
            elif flag in (" ", "*"):
                outcomes.append(CodeOutcome(s.id, "pushed", f"to {remote}"))
            else:
                outcomes.append(CodeOutcome(s.id, "refused", summary))
    return outcomes


def _with_secrets(
    repo: Path, env: Mapping[str, str], remote: str, sending: list[CodeSession]
) -> list[CodeOutcome]:
    """A refusal for each session whose snapshot ref would send a secret (or that git
    could not scan): nothing of it is pushed."""
    scanner = Scanner(repo, env, remote, _held(repo, env, remote))
    refused: list[CodeOutcome] = []
    for s in sending:
        try:
            found = scanner.findings(SNAPSHOTS + s.id)
        except (ScanFailed, OSError, subprocess.SubprocessError) as error:
            refused.append(CodeOutcome(s.id, "refused", f"its code could not be scanned: {error}"))
            continue
        if found:
            more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
            refused.append(
                CodeOutcome(
                    s.id,
                    "refused",
                    f"secret in {'; '.join(found[:3])}{more}; nothing of its code was sent "
                    "(--allow-secrets sends it anyway)",
                )
            )
    return refused


def _held(repo: Path, env: Mapping[str, str], remote: str) -> list[str]:
    """The commits the remote's snapshot refs name that are here too (empty when the
    remote cannot say: the push itself then says why)."""
    done = _git(repo, env, "ls-remote", remote, SNAPSHOTS + "*")
    if done.returncode != 0:
        return []
    shas = sorted({line.split("\t", 1)[0] for line in done.stdout.splitlines() if "\t" in line})
    if not shas:
        return []
    checked = run(
        repo, env, "cat-file", "--batch-check=%(objectname) %(objecttype)",
        input="\n".join(shas) + "\n", timeout=600,
    )  # fmt: skip
    return [line.split()[0] for line in checked.stdout.splitlines() if line.endswith(" commit")]


def _without_remote(
    repo: Path, group: list[CodeSession], remote: str, env: Mapping[str, str]
) -> list[CodeOutcome]:
    """Each session of `group` as `NO_REMOTE` when `repo` has no remote named `remote`
    (one cause for them all, said once by the CLI); nothing when it has, or when `remote`
    is a URL or a path (git says what it finds there)."""
    if "/" in remote or ":" in remote or remote.startswith("."):
        return []
    if _git(repo, env, "config", "--get", f"remote.{remote}.url").returncode == 0:
        return []
    return [CodeOutcome(s.id, NO_REMOTE, str(repo)) for s in group]


def _porcelain(stdout: str) -> dict[str, tuple[str, str]]:
    """`{local ref: (flag, summary)}` from `git push --porcelain`."""
    out: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1:
            out[parts[1].split(":", 1)[0]] = (parts[0], parts[2])
    return out


def fetch_code(
    sessions: Iterable[CodeSession], remote: str, env: Mapping[str, str], here: Here = (None, None)
) -> list[CodeOutcome]:
    """Fetch each session's snapshot ref (the original's, for a pull's fork) from
    `remote` of its project (never forced)."""
    grouped, outcomes = _by_repo(sessions, here, env, writing=True)
    for repo, group in sorted(grouped.items()):
        outcomes += _keep(repo, env, [s for s in group if s.kept_as])
        present = _refs(repo, env)
        group = [s for s in group if not (s.if_missing and SNAPSHOTS + s.id in present)]
        if not group:
            continue
        if missing := _without_remote(repo, group, remote, env):
            outcomes += missing
            continue
        listed = _git(repo, env, "ls-remote", remote, SNAPSHOTS + "*")
        if listed.returncode != 0:
            why = _one_line(listed.stderr)
            outcomes += [CodeOutcome(s.id, "refused", why) for s in group]
            continue
        there = {line.split("\t")[1] for line in listed.stdout.splitlines() if "\t" in line}
        fetching = [s for s in group if SNAPSHOTS + s.source in there]
        outcomes += [
            CodeOutcome(s.id, "no snapshot")
            for s in group
            if s not in fetching and not s.if_missing
        ]
        if not fetching:
            continue
        before = _refs(repo, env)
        specs = [
            f"{'+' if s.kept_as else ''}{SNAPSHOTS}{s.source}:{SNAPSHOTS}{s.id}" for s in fetching
        ]
        done = _git(repo, env, "fetch", "--no-tags", "--no-write-fetch-head", remote, *specs)
        after = _refs(repo, env)
        for s in fetching:
            ref = SNAPSHOTS + s.id
            if done.returncode != 0 and after.get(ref) == before.get(ref):
                outcomes.append(CodeOutcome(s.id, "refused", _one_line(done.stderr)))
            elif after.get(ref) == before.get(ref):
                outcomes.append(CodeOutcome(s.id, "up to date"))
            else:
                outcomes.append(CodeOutcome(s.id, "fetched", f"from {remote}"))
    return outcomes


def _keep(repo: Path, env: Mapping[str, str], diverged: list[CodeSession]) -> list[CodeOutcome]:
    """Copy each diverged session's snapshot ref here to its fork's (created only: an
    existing ref of the fork is left as it is)."""
    present = _refs(repo, env)
    outcomes: list[CodeOutcome] = []
    for s in diverged:
        sha, fork = present.get(SNAPSHOTS + s.id), str(s.kept_as)
        if sha is None:
            continue
        done = _git(repo, env, "update-ref", SNAPSHOTS + fork, sha, "")
        if done.returncode == 0:
            outcomes.append(CodeOutcome(fork, "kept", f"this repository's of {s.id[:8]}"))
        else:
            outcomes.append(CodeOutcome(fork, "refused", _one_line(done.stderr)))
    return outcomes
