"""Which sessions the session tools (`read_session`, `search_sessions`) may reach.

Invariant: unless the user asked for every session (`--all-sessions`), a model reaches
only the current session, the sessions recorded in the current workspace (paths compared
resolved), the worktree forks made of its repository, and the forks of those, down any
depth of `parent_id`. A session of another
project, archived or not, is out of reach whatever id or query the model sends.
"""

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from gitsessions.store.sessions import SessionStore


def _resolved(path: Any) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError, ValueError):
        return None


def workspace_sessions(
    headers: Iterable[Mapping[str, Any]], workspace: Path, project: Path | None = None
) -> set[str]:
    """Ids of the sessions recorded in `workspace` (with `project`, a repository root:
    anywhere in that repository), of the worktree forks made of that repository (their
    own workspace is their worktree; so a fork whose parent is deleted is still here),
    and of every fork descending from one."""
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


class Scope(NamedTuple):
    """`workspace` None means every session (the user passed `--all-sessions`)."""

    workspace: Path | None

    def sessions(self, store: "SessionStore", current: str) -> set[str] | None:
        """The ids within reach now (None: all of them); always includes `current`."""
        if self.workspace is None:
            return None
        from gitsessions.store.catalog import Catalog  # sqlite: when a session tool runs

        return workspace_sessions(Catalog(store).headers(), self.workspace) | {current}
