"""The git gitsessions runs on a project runs nothing the project's `.git` names: an
fsmonitor, hooks, clean and smudge filters, an external diff or textconv, commit signing,
remote-side programs are planted by hand in a real repository's config, and code
snapshots, rewind, `diff --code`, `fork --worktree` and code push/pull must run none of
them (no marker file appears) and still give the right result: the raw bytes."""

import json
import os
import subprocess
from pathlib import Path

from gitsessions.services.code import code_sync, snapshots, snapshotter
from gitsessions.services.code.projectgit import command
from gitsessions.services.code.workspace import describe
from tests.project_helpers import (
    fsck_project,
    gitsessions,
    make_project,
    pgit,
    tree_files,
    write_turn,
)

HOOKS = (
    "post-checkout", "post-index-change", "reference-transaction", "pre-push",
    "pre-auto-gc", "post-commit", "pre-commit",
)  # fmt: skip


def plant(root: Path, markers: Path) -> None:
    """Every command-running setting a hostile shell could write into `.git`: each one
    touches a file in `markers` when it runs. The clean filter upper-cases, the smudge
    filter reverses lines, so a result through either is visibly wrong."""
    markers.mkdir(exist_ok=True)
    touch = f"touch {markers}/"
    settings = {
        "core.fsmonitor": f"{touch}fsmonitor; false",
        "filter.evil.clean": f"{touch}clean; tr a-z A-Z",
        "filter.evil.smudge": f"{touch}smudge; rev",
        "filter.evil.required": "true",
        "diff.external": f"{touch}extdiff; true",
        "diff.evil.textconv": f"{touch}textconv; cat",
        "diff.evil.command": f"{touch}diffcommand; true",
        "commit.gpgSign": "true",
        "gpg.program": f"{touch}gpg; false",
        "core.pager": f"{touch}pager; cat",
        "log.showSignature": "true",
    }
    for key, value in settings.items():
        pgit(root, "config", key, value)
    info = root / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* filter=evil diff=evil\n")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\n{touch}hook-{name}\n")
        hook.chmod(0o755)


def ran(markers: Path) -> list[str]:
    return sorted(os.listdir(markers)) if markers.exists() else []


def snapshot_of(root: Path, session: str) -> str:
    return pgit(root, "rev-parse", f"refs/gitsessions/snapshots/{session}").strip()


def test_a_code_snapshot_runs_nothing_the_project_planted(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    markers = tmp_path / "markers"
    plant(root, markers)
    (root / "link").symlink_to("notes.txt")
    sid = write_turn(server, root, "hello.txt", "lower case bytes\n", snapshot=True)
    assert ran(markers) == []
    files = tree_files(root, snapshot_of(root, sid))
    assert files["hello.txt"] == b"lower case bytes\n"  # raw: no clean filter upper-cased it
    assert files["src/app.py"] == b"print('v2, unstaged')\n"
    assert files["link"] == b"notes.txt"  # a symbolic link's blob is its target
    assert "src/old.py" not in files and "build/out.bin" not in files
    modes = pgit(root, "ls-tree", "-r", snapshot_of(root, sid))
    assert any(m.startswith("120000 ") and m.endswith("\tlink") for m in modes.splitlines())
    fsck_project(root)


def test_rewind_runs_no_smudge_filter_or_hook(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "first line\nsecond line\n", snapshot=True)
    write_turn(server, root, "one.txt", "edited\n", sid, snapshot=True)
    markers = tmp_path / "markers"
    plant(root, markers)
    done = gitsessions("rewind", sid[:8], "--to", "turn:1", "--code", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []
    assert (root / "one.txt").read_bytes() == b"first line\nsecond line\n"  # not smudged


def test_diff_code_runs_no_external_diff_or_textconv(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "one\n", snapshot=True)
    write_turn(server, root, "one.txt", "one\ntwo\n", sid, snapshot=True)
    markers = tmp_path / "markers"
    plant(root, markers)
    done = gitsessions("diff", f"{sid[:8]}@turn:1", f"{sid[:8]}@turn:2", "--code", "--json",
                       cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []
    stat = json.loads(done.stdout)["code"]["stat"]
    assert any("one.txt" in line and "1 +" in line for line in stat), stat


def test_fork_worktree_runs_no_checkout_hook_or_smudge_filter(server, tmp_path, home):
    root = make_project(tmp_path / "project")
    sid = write_turn(server, root, "one.txt", "first line\nsecond line\n", snapshot=True)
    markers = tmp_path / "markers"
    plant(root, markers)
    done = gitsessions("fork", sid, "--worktree", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []
    path = Path(json.loads(done.stdout)["worktree"]["path"])
    assert (path / "one.txt").read_bytes() == b"first line\nsecond line\n"


def test_code_push_and_fetch_run_no_hook_or_remote_program(tmp_path):
    root = make_project(tmp_path / "project")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    pgit(root, "remote", "add", "origin", str(bare))
    sid = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    env = dict(os.environ)
    project = snapshots.find_project(root, env)
    assert project is not None
    taken = snapshotter.take(project, env, sid, "gitsessions snapshot: test")
    markers = tmp_path / "markers"
    plant(root, markers)
    for side in ("receive", "upload"):
        program = f"touch {markers}/{side}pack; git-{side}-pack"
        pgit(root, "config", f"remote.origin.{side}pack", program)
    session = code_sync.CodeSession(sid, sid, describe(root, env))
    pushed = code_sync.push_code([session], "origin", env)
    assert [o.result for o in pushed] == ["pushed"], pushed
    assert ran(markers) == []
    pgit(root, "-c", "core.hooksPath=/dev/null", "update-ref", "-d", snapshots.snapshot_ref(sid))
    fetched = code_sync.fetch_code([session], "origin", env)
    assert [o.result for o in fetched] == ["fetched"], fetched
    assert ran(markers) == []
    assert snapshot_of(root, sid) == taken.commit


def test_the_overrides_come_after_the_callers_own_command_line_config(tmp_path):
    root = make_project(tmp_path / "project")
    env = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
           "GIT_CONFIG_VALUE_0": "touch x"}  # fmt: skip
    argv, full = command(root, env, "config", "core.fsmonitor")
    assert full["GIT_CONFIG_KEY_0"] == "core.fsmonitor"  # the caller's stays
    done = subprocess.run(argv, env=full, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "false"


def test_a_snapshot_keeps_git_s_file_modes(tmp_path):
    """Hashing without update-index keeps what it would record: the execute bit on
    disk, or with core.fileMode false the mode the index has."""
    env = dict(os.environ)
    sid = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    root = make_project(tmp_path / "project")
    (root / "run.sh").write_text("echo one\n")
    (root / "run.sh").chmod(0o755)
    project = snapshots.find_project(root, env)
    assert project is not None
    taken = snapshotter.take(project, env, sid, "gitsessions snapshot: test")
    assert pgit(root, "ls-tree", taken.commit, "run.sh").startswith("100755 ")
    pgit(root, "add", "run.sh")
    pgit(root, "config", "core.fileMode", "false")
    (root / "run.sh").write_text("echo two\n")
    (root / "run.sh").chmod(0o644)
    (root / "new.sh").write_text("echo new\n")
    (root / "new.sh").chmod(0o755)
    again = snapshotter.take(project, env, sid, "gitsessions snapshot: test")
    assert pgit(root, "ls-tree", again.commit, "run.sh").startswith("100755 ")
    assert pgit(root, "ls-tree", again.commit, "new.sh").startswith("100644 ")
    assert tree_files(root, again.commit)["run.sh"] == b"echo two\n"
