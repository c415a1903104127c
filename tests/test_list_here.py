"""`list --here` answered from the listing cache's project index (`Catalog.stream`'s
`within`): the sessions the header-by-header rule (`scope.workspace_sessions`, through
`listing.rows_of`) finds, in the same order, and no other project's."""

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitsessions.cli import listing
from gitsessions.services.code.project_id import identity
from gitsessions.store.catalog import Catalog
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header

OTHER_ROOT = "f" * 40


def _repo(path: Path, remote: str) -> str:
    """A repository at `path` with one commit and a remote; its root commit."""
    env = dict(os.environ, GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com",
               GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@example.com")  # fmt: skip
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "--allow-empty", "-m", path.name],
                   check=True, env=env)  # fmt: skip
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def _session(store: SessionStore, title: str, **fields: Any) -> str:
    sid = new_id()
    header = new_header(sid, now_iso(), title=title)
    header.update(fields)
    system = {"role": "system", "content": "You are a coding agent."}
    store.create(header, Change(context=[system], append=[system]))
    return sid


@pytest.fixture
def project(tmp_path: Path, store: SessionStore) -> tuple[Path, dict[str, str]]:
    """Project `a` (with a folder `sub`, a symlink `link` to it, a clone elsewhere, a
    worktree) and project `b`; sessions of each, named by what should find them."""
    here, there = tmp_path / "a", tmp_path / "b"
    root = _repo(here, "https://example.com/team/a.git")
    _repo(there, "https://example.com/team/b.git")
    (here / "sub").mkdir()
    (tmp_path / "link").symlink_to(here)
    elsewhere = str(tmp_path / "clone-of-a")
    a_id = {"roots": [root], "remotes": ["example.com/team/a"]}
    s: dict[str, str] = {}
    s["path"] = _session(store, "path", workspace={"path": str(here)})
    s["symlink"] = _session(store, "symlink", workspace={"path": str(tmp_path / "link")})
    s["repo_root"] = _session(store, "sub", workspace={"path": str(here / "sub"),
                                                       "repo_root": str(here)})  # fmt: skip
    s["identity"] = _session(store, "clone", workspace={"path": elsewhere, "project": a_id})
    no_commit = {"roots": [], "remotes": ["example.com/team/a"]}
    s["remote"] = _session(store, "remote", workspace={"path": elsewhere, "project": no_commit})
    s["worktree"] = _session(store, "wt", workspace={"path": elsewhere},
                             worktree={"repo": str(here)})  # fmt: skip
    s["fork"] = _session(store, "fork", parent_id=s["identity"], workspace={"path": "/x"})
    s["fork2"] = _session(store, "fork of fork", parent_id=s["fork"])
    s["archived"] = _session(store, "old", archived=True, workspace={"path": str(here)})
    # not here: another project, another root with the same remote, a malformed identity
    s["-b"] = _session(store, "b", workspace={"path": str(there), "repo_root": str(there)})
    other = {"roots": [OTHER_ROOT], "remotes": ["example.com/team/a"]}
    s["-other-root"] = _session(store, "o", workspace={"path": elsewhere, "project": other})
    s["-fork-of-b"] = _session(store, "fb", parent_id=s["-b"], workspace={"path": elsewhere})
    bad = {"roots": root, "remotes": []}  # not a list: no identity
    s["-malformed"] = _session(store, "m", workspace={"path": elsewhere, "project": bad})
    assert identity(here, os.environ) == a_id
    return here, s


@pytest.mark.parametrize("include_archived", [False, True])
@pytest.mark.parametrize("folder", ["", "sub"])
def test_the_project_index_finds_what_the_header_rule_finds(
    store: SessionStore, project: tuple[Path, dict[str, str]], include_archived: bool, folder: str
) -> None:
    here, s = project
    workspace = here / folder
    catalog = Catalog(store)
    rows, count = listing.open_rows(catalog, include_archived, workspace)
    streamed = list(rows)
    found = [r["id"] for r in streamed]
    by_rule = listing.rows_of(catalog.headers(), include_archived, workspace)
    assert found == [r["id"] for r in by_rule] and count() == len(found)
    assert streamed == by_rule  # the rows cached beside the headers: those made from them
    wanted = {sid for name, sid in s.items() if not name.startswith("-")}
    if not include_archived:
        wanted.discard(s["archived"])
    if folder:  # recorded in the project's root folder alone, not in its repository
        wanted -= {s["path"], s["symlink"], s["archived"]}
    assert set(found) == wanted


def test_list_here_lists_only_this_projects_sessions(
    cli: Any, store: SessionStore, project: tuple[Path, dict[str, str]], monkeypatch: Any
) -> None:
    here, s = project
    monkeypatch.chdir(here)
    listed = [row["id"] for row in cli.json("list", "--here")]
    assert s["-b"] not in listed and s["path"] in listed and s["fork2"] in listed
    assert len(listed) == len([name for name in s if not name.startswith("-")]) - 1
    monkeypatch.chdir(here.parent / "b")
    assert {row["id"] for row in cli.json("list", "--here")} == {s["-b"], s["-fork-of-b"]}


def test_the_index_follows_a_header_that_moves_and_a_session_deleted(
    store: SessionStore, project: tuple[Path, dict[str, str]]
) -> None:
    here, s = project
    catalog = Catalog(store)
    head = store.head(s["path"])
    moved = {**head.header, "workspace": {"path": str(here.parent / "b")}}
    store.commit(head, Change(header=moved), event="edit", subject="moved")
    store.delete(store.head(s["identity"]))  # its forks are no longer reached through it
    rows, _total = listing.open_rows(catalog, True, here)
    found = {r["id"] for r in rows}
    assert s["path"] not in found and s["identity"] not in found and s["fork"] not in found
    assert s["symlink"] in found
