"""How sessions are told apart in listings (`list`, the picker): a label, a fork's origin,
forks in a tree under their parent, the sessions of this project.

Everything here works on `list` rows (`list_row`): plain dicts read from the catalog, so
nothing opens a session. A chat whose first request failed reads `(no reply)`
(`values/records.never_answered`); a fresh `exec` whose first request fails leaves none.
"""

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.store.catalog import Catalog
from gitsessions.values.ids import short
from gitsessions.values.listed import list_row as list_row  # what `list --json` prints
from gitsessions.values.records import label as label  # `listing.label`: what names a row
from gitsessions.values.records import merged_forks

if TYPE_CHECKING:
    from gitsessions.store.sessions import SessionStore


def session_rows(
    store: "SessionStore | Catalog", include_archived: bool, workspace: Path | None = None
) -> list[dict[str, Any]]:
    """`list` rows, the most recently active first (`parent_deleted` set); with
    `workspace`, only the sessions of that workspace's project and their forks."""
    catalog = store if isinstance(store, Catalog) else Catalog(store)
    return list(open_rows(catalog, include_archived, workspace)[0])


def open_rows(
    catalog: Catalog, include_archived: bool, workspace: Path | None = None
) -> tuple[Iterator[dict[str, Any]], Callable[[], int]]:
    """`session_rows`, one at a time, in the same order, and what counts them (a query
    of its own: asked only when a listing is cut): the catalog refreshed now (its
    `damaged` then holds), each row read as cached (`Catalog.stream_rows`). With
    `workspace`, the rows come from the cache's project index (`Catalog.stream`'s
    `within`): only that project's sessions are read."""
    catalog.refresh()
    known = catalog.ids
    merged = catalog.merged()
    within = None
    if workspace is not None:  # the project's sessions, from any of its folders
        from gitsessions.agent.scope import project_in  # `--here` only
        from gitsessions.services.code.workspace import project_of

        within = project_in(catalog.values, workspace, *project_of(workspace, os.environ))

    def rows() -> Iterator[dict[str, Any]]:
        for row in catalog.stream_rows(include_archived, within):
            parent = row.get("parent_id")
            row["parent_deleted"] = bool(parent) and parent not in known
            row["merged_into"] = merged.get(row["id"])
            yield row

    return rows(), lambda: catalog.count(include_archived, within)


def rows_of(
    headers: list[dict[str, Any]], include_archived: bool, workspace: Path | None = None
) -> list[dict[str, Any]]:
    """`session_rows` of headers already read (`Catalog.headers`)."""
    rows = [list_row(h) for h in headers]
    mark_deleted_parents(rows, (h["id"] for h in headers))
    merged = merged_forks(headers, {h["id"]: str(h.get("head")) for h in headers})
    for row in rows:
        row["merged_into"] = merged.get(row["id"])
    if not include_archived:
        rows = [r for r in rows if not r["archived"]]
    if workspace is not None:  # the project's sessions, from any of its folders
        from gitsessions.agent.scope import workspace_sessions  # `--here` only
        from gitsessions.services.code.workspace import project_of

        reached = workspace_sessions(headers, workspace, *project_of(workspace, os.environ))
        rows = [r for r in rows if r["id"] in reached]
    rows.sort(key=lambda r: (r["active_at"] or "", r["id"]), reverse=True)
    return rows


def record(row: Mapping[str, Any]) -> list[object]:
    """`list` into a pipe: id, active_at, messages, compactions, parent id, workspace, label."""
    return [
        row["id"],
        row["active_at"] or "-",
        row["messages"],
        row["compactions"],
        row["parent_id"] or "-",
        row["workspace"] or "-",
        label(row) + marks(row),
    ]


def marks(row: Mapping[str, Any]) -> str:
    """What a listing appends to a session's label: ` (no reply)` when no request of it
    ever reached a model (a failed start), ` (archived)`, ` (merged into <id8>)`."""
    merged = row.get("merged_into")
    return (
        (" (no reply)" if row.get("no_reply") else "")
        + (" (archived)" if row.get("archived") else "")
        + (f" (merged into {short(merged)})" if merged else "")
    )


def origin(row: Mapping[str, Any]) -> str:
    """`fork of <short id>` for a fork (`(parent deleted)` when its parent is gone),
    `imported from <source>` for an imported session."""
    parts = []
    parent = row.get("parent_id")
    if parent:
        gone = " (parent deleted)" if row.get("parent_deleted") else ""
        parts.append(f"fork of {short(parent)}{gone}")
    if row.get("imported_from"):
        parts.append(f"imported from {row['imported_from']}")
    return ", ".join(parts)


def mark_deleted_parents(rows: list[dict[str, Any]], ids: Iterable[str]) -> None:
    """Set each row's `parent_deleted`: it names a parent no longer in the store."""
    known = set(ids)
    for row in rows:
        row["parent_deleted"] = bool(row.get("parent_id")) and row["parent_id"] not in known


def as_tree(rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """`rows` (in their order) as `(depth, row)`, each fork right under its parent; a fork
    whose parent is not among `rows` (deleted, archived, elsewhere) is a root."""
    shown = {r["id"] for r in rows}
    children: dict[str, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    for row in rows:
        parent = row.get("parent_id")
        if isinstance(parent, str) and parent in shown and parent != row["id"]:
            children.setdefault(parent, []).append(row)
        else:
            roots.append(row)
    out: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()

    def walk(row: dict[str, Any], depth: int) -> None:
        if row["id"] in seen:
            return
        seen.add(row["id"])
        out.append((depth, row))
        for child in children.get(row["id"], []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    for row in rows:  # a parent cycle (a hand-edited header) still shows every row
        walk(row, 0)
    return out
