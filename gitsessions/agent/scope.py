"""Which sessions the session tools (`read_session`, `search_sessions`) may reach.

Invariant: unless the user asked for every session (`--all-sessions`), a model reaches
only the current session, the sessions of the current project (recorded in its
repository by identity, `project_id`, wherever it was cloned; else in the current
workspace, paths compared resolved), the worktree forks made of its repository, and the
forks of those, down any depth of `parent_id`. A session of another project, archived
or not, is out of reach whatever id or query the model sends.
"""

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.services.code.project_id import recorded as recorded_identity
from gitsessions.services.code.project_id import same_project
from gitsessions.services.code.workspace import project_of
from gitsessions.store.sessions import SessionStore

if TYPE_CHECKING:
    from gitsessions.store.catalog import Project


def _resolved(path: Any) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError, ValueError):
        return None


def workspace_sessions(
    headers: Iterable[Mapping[str, Any]],
    workspace: Path,
    project: Path | None = None,
    identity: Mapping[str, list[str]] | None = None,
) -> set[str]:
    """Ids of the sessions recorded in `workspace` (with `project`, a repository root:
    anywhere in that repository; with `identity`, that repository's: anywhere in a clone
    of it), of the worktree forks made of that repository (their own workspace is their
    worktree; so a fork whose parent is deleted is still here), and of every fork
    descending from one."""
    here = str(workspace.resolve())
    root = str(project.resolve()) if project is not None else None
    parent: dict[str, str | None] = {}
    inside: set[str] = set()
    for header in headers:
        sid = str(header.get("id"))
        parent[sid] = header.get("parent_id")
        recorded = header.get("workspace") or {}
        worktree = header.get("worktree")
        repo = _resolved(worktree.get("repo")) if isinstance(worktree, dict) else None
        if (
            _resolved(recorded.get("path")) == here
            or (root is not None and _resolved(recorded.get("repo_root")) == root)
            or (repo is not None and repo in (here, root))
            or same_project(identity, recorded_identity(header))
        ):
            inside.add(sid)
    reached = set(inside)
    for sid in parent:
        chain: list[str] = []
        node: str | None = sid
        while node is not None and node in parent and node not in reached and node not in chain:
            chain.append(node)
            node = parent[node]
        if node in reached:
            reached.update(chain)
    return reached


def project_in(
    values: Callable[[str], Iterable[str]],
    workspace: Path,
    project: Path | None = None,
    identity: Mapping[str, list[str]] | None = None,
) -> "Project":
    """What `workspace_sessions` matches, as the listing cache's project index asks it:
    of the folders sessions were recorded in (`values(kind)`, each once), those that
    resolve to `workspace` or to `project`; and `identity`."""
    from gitsessions.store.catalog import Project  # the cache (sqlite): `--here` only

    here = str(workspace.resolve())
    root = str(project.resolve()) if project is not None else None

    def resolving(kind: str, *to: str | None) -> list[str]:
        return [v for v in values(kind) if (r := _resolved(v)) is not None and r in to]

    return Project(
        paths=resolving("path", here),
        roots=resolving("root", root) if root is not None else [],
        repos=resolving("repo", here, root),
        commits=list(identity["roots"]) if identity else [],
        remotes=list(identity["remotes"]) if identity else [],
    )


def continued_here(
    headers: Iterable[Mapping[str, Any]], workspace: Path, env: Mapping[str, str]
) -> list[Mapping[str, Any]]:
    """What `--continue` picks from: the sessions recorded in `workspace`; when there are
    none, those of the same project (by identity) recorded in the same folder of their
    clone (`sub/dir` of a clone at another path, or on another machine)."""
    listed = list(headers)
    here = [h for h in listed if (h.get("workspace") or {}).get("path") == str(workspace)]
    if here:
        return here

    root, identity = project_of(workspace, env)
    if root is None or identity is None:
        return []
    inside = _relative(str(workspace), str(root))
    return [
        h
        for h in listed
        if same_project(identity, recorded_identity(h))
        and _relative(
            (h.get("workspace") or {}).get("path"), (h.get("workspace") or {}).get("repo_root")
        )
        == inside
    ]


def _relative(path: Any, root: Any) -> str | None:
    if not isinstance(path, str) or not isinstance(root, str):
        return None
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return None


class Scope:
    """`workspace` None means every session (the user passed `--all-sessions`); with
    `env`, the workspace's repository and its identity widen it (read once, when a
    session tool first runs, never before)."""

    def __init__(self, workspace: Path | None, env: Mapping[str, str] | None = None) -> None:
        self.workspace = workspace
        self.env = env
        self._project: tuple[Path | None, Mapping[str, list[str]] | None] | None = None

    def sessions(self, store: "SessionStore", current: str) -> set[str] | None:
        """The ids within reach now (None: all of them); always includes `current`."""
        if self.workspace is None:
            return None
        from gitsessions.store.catalog import Catalog  # sqlite: when a session tool runs

        if self._project is None:  # two git commands, not two for every tool call
            found = project_of(self.workspace, self.env) if self.env is not None else None
            self._project = found or (None, None)
        root, identity = self._project
        headers = Catalog(store).headers()
        return workspace_sessions(headers, self.workspace, root, identity) | {current}
