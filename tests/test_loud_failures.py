"""Loud failures: a cause every session shares is said once, in one line that says how to
fix it, with exit 1 (issue 31, item 4). Real project repositories, real homes, a real
bare remote, the real CLI in a subprocess."""

from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.test_project_identity import exec_turn, git, gs, sessions_remote


def project_without_remote(tmp_path: Path) -> Path:
    work = tmp_path / "proj"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "README").write_text("proj\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    return work


def sessions_remote_of(tmp_path: Path, home: Path) -> None:
    sessions = tmp_path / "sessions.git"
    assert gs(home, tmp_path, "remote", "add", "origin", str(sessions)).returncode == 0


def test_push_and_pull_code_without_the_projects_remote_say_so_once(tmp_path):
    proj = project_without_remote(tmp_path)
    home = tmp_path / "home"
    sessions_remote(tmp_path, home)
    with FakeOpenAI(strict=True) as server:
        made = [exec_turn(server, home, proj, f"work {n}") for n in range(3)]
    assert all(git("rev-parse", f"refs/gitsessions/snapshots/{s}", cwd=proj) for s in made)
    pushed = gs(home, proj, "push", "--all", "--code")
    assert pushed.returncode == 1, pushed.stderr
    lines = [line for line in pushed.stderr.splitlines() if "origin" in line and "code" in line]
    assert len(lines) == 1, pushed.stderr
    assert "git remote add origin URL" in lines[0] and "--code-remote NAME" in lines[0]
    assert str(proj) in lines[0]
    assert "Could not read from remote" not in pushed.stderr
    assert "pushed" in pushed.stderr  # the sessions themselves went
    other = tmp_path / "other-home"  # a second machine pulls them, with their code
    sessions_remote_of(tmp_path, other)
    pulled = gs(other, proj, "pull", "--code")
    assert pulled.returncode == 1, pulled.stderr
    assert pulled.stderr.count("git remote add origin URL") == 1
    # another name for the project's remote: --code-remote finds it
    bare = tmp_path / "code.git"
    git("init", "-q", "--bare", str(bare))
    git("remote", "add", "upstream", str(bare), cwd=proj)
    named = gs(home, proj, "push", "--all", "--code", "--code-remote", "upstream")
    assert named.returncode == 0, named.stderr
    assert git("for-each-ref", "refs/gitsessions/snapshots/", cwd=bare).count("\n") == 3


def test_push_and_pull_code_to_a_project_remote_that_is_down_say_so_once(tmp_path):
    """The project's remote is there but no server answers at its address: one line for
    every session's code, and exit 1 (the sessions themselves went)."""
    proj = project_without_remote(tmp_path)
    git("remote", "add", "origin", "http://127.0.0.1:9/code.git", cwd=proj)
    home = tmp_path / "home"
    sessions_remote(tmp_path, home)
    with FakeOpenAI(strict=True) as server:
        for n in range(3):
            exec_turn(server, home, proj, f"work {n}")
    other = tmp_path / "other-home"
    sessions_remote_of(tmp_path, other)
    for done, verb in (
        (gs(home, proj, "push", "--all", "--code"), "pushed"),
        (gs(other, proj, "pull", "--code"), "pulled"),
    ):
        assert done.returncode == 1, done.stderr
        lines = [line for line in done.stderr.splitlines() if "127.0.0.1:9" in line]
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("code of 3 sessions: refused (") and "connect" in lines[0]
        assert f"{verb} " in done.stderr and "3 " in done.stderr  # the sessions went
    assert len(gs(other, proj, "list").stdout.splitlines()) == 3
