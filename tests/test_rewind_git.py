"""`rewind` trusts git (issue 40): a file whose content HEAD or any commit of the
project holds is not work no snapshot holds; uncommitted work still refuses."""

import json
from pathlib import Path

from tests.conftest import exec_args
from tests.project_helpers import fsck_project, pgit


def agent_writes(cli, server, root: Path, content: str, session: str | None = None) -> str:
    """One exec turn in which the agent writes `content` into a.py."""
    server.reply(content=None, tool_calls=[
        {"name": "write_file", "arguments": {"path": "a.py", "content": content}}
    ])  # fmt: skip
    server.reply(content="done")
    resume = ["--resume", session] if session else []
    done = cli(*exec_args(server, root), "write a.py", "--auto-approve", "--json", *resume)
    return json.loads(done.stdout)["session"]


def two_turns(cli, server, tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "project"
    root.mkdir()
    pgit(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("base\n")
    pgit(root, "add", "-A")
    pgit(root, "commit", "-q", "-m", "initial")
    sid = agent_writes(cli, server, root, "agent one\n")
    agent_writes(cli, server, root, "agent two\n", sid)
    return root, sid


def test_rewind_over_a_committed_edit_proceeds_and_says_where_git_has_it(
    cli, server, tmp_path, home
):
    root, sid = two_turns(cli, server, tmp_path)
    (root / "a.py").write_text("mine\n")
    pgit(root, "commit", "-q", "-a", "-m", "my edit")
    head = pgit(root, "rev-parse", "HEAD")
    done = cli("rewind", sid, "--to", "turn:1", "--code", "--workspace", str(root))
    assert "a.py: your committed version is in git: git show HEAD:a.py" in done.stderr
    assert "  M a.py" in done.stderr and "saved the workspace" not in done.stderr
    assert (root / "a.py").read_text() == "agent one\n"
    assert pgit(root, "show", "HEAD:a.py") == "mine\n"
    assert pgit(root, "rev-parse", "HEAD") == head
    fsck_project(root)


def test_rewind_over_a_version_another_commit_holds_names_that_commit(cli, server, tmp_path, home):
    root, sid = two_turns(cli, server, tmp_path)
    (root / "a.py").write_text("kept on a branch\n")
    pgit(root, "commit", "-q", "-a", "-m", "on a branch")
    kept = pgit(root, "rev-parse", "HEAD").strip()
    pgit(root, "branch", "keep")
    pgit(root, "reset", "-q", "--soft", "HEAD~")  # HEAD no longer holds it; `keep` does
    done = cli("rewind", sid, "--to", "turn:1", "--code", "--workspace", str(root))
    assert f"a.py: your own version is in git: git show {kept[:12]}:a.py" in done.stderr
    assert (root / "a.py").read_text() == "agent one\n"
    assert pgit(root, "show", f"{kept[:12]}:a.py") == "kept on a branch\n"


def test_rewind_over_an_uncommitted_edit_still_refuses_naming_only_it(cli, server, tmp_path, home):
    root, sid = two_turns(cli, server, tmp_path)
    (root / "a.py").write_text("mine\n")
    pgit(root, "commit", "-q", "-a", "-m", "my edit")
    (root / "b.py").write_text("new, not committed\n")
    rewind = ("rewind", sid, "--to", "turn:1", "--code", "--workspace", str(root))
    done = cli(*rewind, code=1)
    # a.py is in git: only b.py is work no snapshot (and no commit) holds
    assert "the workspace has changes no snapshot" in done.stderr and "(b.py)" in done.stderr
    assert (root / "a.py").read_text() == "mine\n" and (root / "b.py").exists()
    (root / "b.py").unlink()
    (root / "a.py").write_text("mine, and more not committed\n")
    done = cli(*rewind, code=1)
    assert "no snapshot" in done.stderr and "(a.py)" in done.stderr
    assert "is in git" not in done.stderr
    assert (root / "a.py").read_text() == "mine, and more not committed\n"


def test_snapshot_restore_over_a_version_a_commit_holds_proceeds_and_names_it(
    cli, server, tmp_path, home
):
    """`snapshot restore` trusts git as rewind does: the version it overwrites is in a
    commit HEAD does not reach from its tree; uncommitted work still refuses."""
    root, sid = two_turns(cli, server, tmp_path)
    first = pgit(root, "log", "-1", "--format=%H", "--grep=^gitsessions snapshot:",
                 f"refs/gitsessions/snapshots/{sid}").strip()  # fmt: skip
    (root / "a.py").write_text("kept on a branch\n")
    pgit(root, "commit", "-q", "-a", "-m", "on a branch")
    kept = pgit(root, "rev-parse", "HEAD").strip()
    pgit(root, "branch", "keep")
    pgit(root, "reset", "-q", "--soft", "HEAD~")
    done = cli("snapshot", "restore", first[:12], "--workspace", str(root))
    assert f"a.py: your own version is in git: git show {kept[:12]}:a.py" in done.stderr
    assert "saved the working tree" not in done.stderr
    assert pgit(root, "show", f"{first}:a.py") == (root / "a.py").read_text()
    (root / "a.py").write_text("not committed anywhere\n")
    refused = cli("snapshot", "restore", first[:12], "--workspace", str(root), code=1)
    assert "no snapshot holds (a.py)" in refused.stderr
    assert (root / "a.py").read_text() == "not committed anywhere\n"
