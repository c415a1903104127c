"""`services.code.workspace.no_repository`: a turn in a plain directory starts no git process,
and the shortcut never says "no repository" where git finds one (checked against stock
git in each layout: plain, inside a work tree, a bare repository, a linked worktree, a
symbolic link into a repository, GIT_DIR)."""

import os
import subprocess
from pathlib import Path

import pytest

from gitsessions.services.code.snapshots import find_project
from gitsessions.services.code.workspace import describe, head_of, no_repository


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)


def git_finds_one(path: Path, env: dict[str, str]) -> bool:
    for args in (("rev-parse", "--show-toplevel"), ("rev-parse", "-q", "--verify", "HEAD"),
                 ("rev-parse", "--git-dir")):  # fmt: skip
        if git("-C", str(path), *args, cwd=path, env=env).returncode == 0:
            return True
    return False


@pytest.fixture
def layouts(tmp_path: Path) -> dict[str, Path]:
    env = dict(os.environ)
    plain = tmp_path / "plain" / "deep"
    plain.mkdir(parents=True)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x",
        cwd=repo)  # fmt: skip
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), cwd=repo, env=env)
    link = tmp_path / "link"
    link.symlink_to(repo / "sub")
    return {"plain": plain, "repo": repo / "sub", "bare": bare, "linked": linked, "link": link}


def test_no_repository_is_said_only_where_git_finds_none(layouts: dict[str, Path]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for name, path in layouts.items():
        if no_repository(path, env):
            assert not git_finds_one(path, env), name
    assert no_repository(layouts["plain"], env)
    assert not any(no_repository(layouts[n], env) for n in ("repo", "bare", "linked", "link"))
    with_git_dir = {**env, "GIT_DIR": str(layouts["repo"].parent / ".git")}
    assert not no_repository(layouts["plain"], with_git_dir)
    assert git_finds_one(layouts["plain"], with_git_dir)


def test_a_plain_directory_is_described_without_git(
    layouts: dict[str, Path], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    spy = tmp_path / "bin"
    spy.mkdir()
    calls = tmp_path / "calls"
    (spy / "git").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 128\n')
    (spy / "git").chmod(0o755)
    spied = {**env, "PATH": f"{spy}{os.pathsep}{env.get('PATH', '')}"}
    plain = layouts["plain"]
    assert describe(plain, spied)["repo_root"] is None
    assert head_of(plain, spied) is None
    assert find_project(plain, spied) is None
    assert not calls.exists()  # no git started
    assert head_of(layouts["repo"], spied) is None and calls.exists()  # a repository: asked
    described = describe(layouts["repo"], env)
    assert described["repo_root"] == str(layouts["repo"].parent.resolve())
    assert described["head"] and head_of(layouts["repo"], env) == described["head"]
