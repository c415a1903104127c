"""A worktree mark that arrives from outside (a pull) is never trusted: resume, the git
hooks' session lookup, `worktree list|remove` use a worktree only when this home made it
for that session and git lists it as a worktree of its repository. The hostile sessions
are made in a second home and pushed to a real bare remote; the victim home pulls them
with the real CLI; the fake model server asks for a real `run_shell`."""

import json
import os
import subprocess
from pathlib import Path

from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.project_helpers import gitsessions, make_project, pgit

SHELL = "pwd > where.txt; touch pwned"


def tool(name: str, **arguments: str) -> dict:
    return {"name": name, "arguments": arguments}


def in_home(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a real subprocess with `home` as its GITSESSIONS_HOME."""
    saved = os.environ["GITSESSIONS_HOME"]
    os.environ["GITSESSIONS_HOME"] = str(home)
    try:
        return gitsessions(*args, cwd=cwd)
    finally:
        os.environ["GITSESSIONS_HOME"] = saved


def hostile_session(attacker: Path, mark: dict, workspace: Path | None = None) -> str:
    """A session of the attacker's home whose header carries `mark` as its worktree."""
    store = SessionStore(attacker, background_maintenance=False)
    try:
        sid = new_id()
        header = new_header(sid, now_iso(), title="innocent looking")
        header["worktree"] = mark
        if workspace is not None:
            header["workspace"] = {"path": str(workspace), "repo_root": str(workspace)}
        system = {"role": "system", "content": "You are a coding agent."}
        prompt = {"role": "user", "content": "hello"}
        reply = {"role": "assistant", "content": "hi"}
        store.create(
            header, Change(context=[system, prompt, reply], append=[system, prompt, reply])
        )
        return sid
    finally:
        store.close()


def pulled(tmp_path: Path, home: Path, mark: dict, workspace: Path | None = None) -> str:
    """The hostile session, pushed by the attacker's home and pulled into `home`."""
    attacker = tmp_path / "attacker-home"
    sid = hostile_session(attacker, mark, workspace)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    for who in (attacker, home):
        added = in_home(who, "remote", "add", "origin", str(bare), cwd=tmp_path)
        assert added.returncode == 0, added.stderr
    sent = in_home(attacker, "push", "--all", cwd=tmp_path)
    assert sent.returncode == 0, sent.stderr
    got = gitsessions("pull", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    return sid


def resume_with_shell(server, sid: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    server.reply(content=None, tool_calls=[tool("run_shell", command=SHELL)])
    server.reply(content="done")
    return gitsessions(
        "exec", "go on", "--resume", sid[:8], "--base-url", server.base_url,
        "--model", "fake-model", "--auto-approve", cwd=cwd,
    )  # fmt: skip


def refused_line(stderr: str, sid: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if f"session {sid[:8]} names a worktree this home did not make" in line
    ]


def test_a_pulled_mark_naming_any_directory_is_refused(server, tmp_path, home):
    target = tmp_path / "not-yours"  # stands for /etc: a directory the session never made
    target.mkdir()
    other = make_project(tmp_path / "other-project")
    mark = {"path": str(target), "branch": "gitsessions/11111111", "base": None,
            "repo": str(other), "removed_at": None}  # fmt: skip
    sid = pulled(tmp_path, home, mark)
    here = tmp_path / "here"
    here.mkdir()
    done = resume_with_shell(server, sid, here)
    assert done.returncode == 0, done.stderr
    assert not (target / "pwned").exists() and not (target / "where.txt").exists()
    assert (here / "pwned").exists()
    assert (here / "where.txt").read_text().strip() == str(here)
    said = refused_line(done.stderr, sid)
    assert len(said) == 1 and f"({target})" in said[0] and f"work in {here}" in said[0]
    assert "working in the worktree" not in done.stderr
    assert not pgit(other, "for-each-ref", "refs/gitsessions").strip()


def test_a_pulled_mark_naming_another_project_writes_nothing_there(server, tmp_path, home):
    other = make_project(tmp_path / "other-project")
    before = pgit(other, "for-each-ref")
    status = pgit(other, "status", "--porcelain", "--untracked-files=all")
    mark = {"path": str(other), "branch": "main", "base": None, "repo": str(other),
            "removed_at": None}  # fmt: skip
    sid = pulled(tmp_path, home, mark, workspace=other)
    here = make_project(tmp_path / "here")
    done = resume_with_shell(server, sid, here)
    assert done.returncode == 0, done.stderr
    assert len(refused_line(done.stderr, sid)) == 1
    assert not (other / "pwned").exists()
    assert pgit(other, "for-each-ref") == before  # no snapshot ref landed in it
    assert pgit(other, "status", "--porcelain", "--untracked-files=all") == status
    assert (here / "pwned").exists()
    assert pgit(here, "rev-parse", f"refs/gitsessions/snapshots/{sid}").strip()


def test_a_pulled_mark_on_a_real_worktree_is_not_listed_removed_or_hooked(tmp_path, home):
    from tests.test_git_hooks import hook_env

    project = make_project(tmp_path / "project")
    users = tmp_path / "users-worktree"  # the user's own worktree, made with stock git
    pgit(project, "worktree", "add", "-q", "-b", "mine", str(users))
    (users / "work.txt").write_text("uncommitted work of the user\n")
    mark = {"path": str(users), "branch": "mine", "base": None, "repo": str(project),
            "removed_at": None}  # fmt: skip
    sid = pulled(tmp_path, home, mark)

    listed = gitsessions("worktree", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sid not in listed.stdout and str(users) not in listed.stdout

    removed = gitsessions("worktree", "remove", sid[:8], "--force", cwd=tmp_path)
    assert removed.returncode != 0
    lines = removed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "did not make" in lines[0]
    assert (users / "work.txt").read_text() == "uncommitted work of the user\n"
    assert str(users) in pgit(project, "worktree", "list", "--porcelain")
    assert not pgit(project, "for-each-ref", "refs/gitsessions").strip()

    restored = gitsessions("worktree", "restore", sid[:8], cwd=tmp_path)
    assert restored.returncode != 0 and "did not make" in restored.stderr

    env = hook_env()
    installed = subprocess.run(
        ["gitsessions", "hooks", "install", "--workspace", str(project)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    for args in (["add", "-A"], ["commit", "-q", "-m", "user work"]):
        done = subprocess.run(
            ["git", "-C", str(users), "-c", "user.name=T", "-c", "user.email=t@t", *args],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert sid not in pgit(users, "log", "-1", "--format=%B")


def test_a_legit_worktree_fork_pushed_changed_and_pulled_back_is_refused(server, tmp_path, home):
    """This home made the worktree; a fast-forward from the remote that moves the mark
    elsewhere is not trusted: the fork still resumes in the worktree this home made."""
    root = make_project(tmp_path / "project")
    server.reply(content="ok")
    server.reply(content="A title")
    done = gitsessions(
        "exec", "hello", "--base-url", server.base_url, "--model", "fake-model",
        "--workspace", str(root), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    forked = gitsessions("fork", sid, "--worktree", "--json", cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    made = json.loads(forked.stdout)
    path = Path(made["worktree"]["path"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    resumed = resume_with_shell(server, made["id"], elsewhere)  # legitimate: in the worktree
    assert resumed.returncode == 0, resumed.stderr
    assert f"working in the worktree of session {made['id'][:8]}" in resumed.stderr
    assert (path / "where.txt").read_text().strip() == str(path)
    assert not (elsewhere / "pwned").exists()

    # the attacker pulls it, points the mark somewhere else, and pushes it back
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    attacker = tmp_path / "attacker-home"
    for who in (home, attacker):
        added = in_home(who, "remote", "add", "origin", str(bare), cwd=tmp_path)
        assert added.returncode == 0, added.stderr
    assert in_home(home, "push", "--all", cwd=tmp_path).returncode == 0
    assert in_home(attacker, "pull", cwd=tmp_path).returncode == 0
    target = tmp_path / "not-yours"
    target.mkdir()
    store = SessionStore(attacker, background_maintenance=False)
    try:
        head = store.head(made["id"])
        header = dict(head.header, worktree=dict(head.header["worktree"], path=str(target)))
        store.commit(head, Change(header=header), event="rename", subject="rename")
    finally:
        store.close()
    assert in_home(attacker, "push", "--all", cwd=tmp_path).returncode == 0
    got = gitsessions("pull", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert f"{made['id'][:8]}\tupdated" in got.stdout  # a fast-forward of this home's fork

    # the mark it names is not used: this home's own record of the worktree is
    again = resume_with_shell(server, made["id"], elsewhere)
    assert again.returncode == 0, again.stderr
    assert not refused_line(again.stderr, made["id"])
    assert not (target / "pwned").exists()
    assert not (elsewhere / "pwned").exists()
    assert (path / "pwned").exists()
