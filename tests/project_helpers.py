"""Real project repositories for the snapshot, worktree and rewind tests: committed
files, a staged change, an unstaged change, an untracked file and an ignored build
directory, and the facts about them that must never change behind the user's back."""

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import REPO, exec_args, run_gitsessions, run_gitsessions_process

IDENTITY = ["-c", "user.name=Tester", "-c", "user.email=tester@example.com"]


def pgit(repo: Path, *args: str, check: bool = True) -> str:
    """Stock git in the project; its stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, text=True, check=False
    )
    assert not check or done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def make_project(root: Path) -> Path:
    """A repository with every kind of change a snapshot must hold (or leave out)."""
    root.mkdir(parents=True)
    pgit(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "README.md").write_text("readme\n")
    (root / "src" / "app.py").write_text("print('v1')\n")
    (root / "src" / "old.py").write_text("old\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    pgit(root, "add", "-A")
    pgit(root, "commit", "-q", "-m", "initial")
    (root / "README.md").write_text("readme, staged edit\n")
    pgit(root, "add", "README.md")  # staged
    (root / "src" / "app.py").write_text("print('v2, unstaged')\n")  # unstaged
    (root / "src" / "old.py").unlink()  # deleted, unstaged
    (root / "notes.txt").write_text("untracked notes\n")  # untracked
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0ignored build output")
    (root / "debug.log").write_text("ignored log\n")
    pgit(root, "stash", "list")
    return root


def user_state(root: Path) -> dict[str, str]:
    """What the user sees of their repository: HEAD, the index, stash, status."""
    return {
        "head": pgit(root, "rev-parse", "HEAD"),
        "symbolic": pgit(root, "symbolic-ref", "HEAD"),
        "index": pgit(root, "ls-files", "-s", "--debug"),
        "staged": pgit(root, "diff", "--cached"),
        "stash": pgit(root, "stash", "list"),
        "status": pgit(root, "status", "--porcelain", "--untracked-files=all"),
        "refs": "".join(  # the user's own branches (a fork's gitsessions/<id8> is added)
            line + "\n"
            for line in pgit(root, "for-each-ref", "--format=%(refname)", "refs/heads").split()
            if not line.startswith("refs/heads/gitsessions/")
        ),
    }


def working_files(
    root: Path, ignored: tuple[str, ...] = ("build", "debug.log")
) -> dict[str, bytes]:
    """Every file of the working tree but `.git` and the ignored ones, with its bytes."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or rel.split("/")[0] in ignored:
            continue
        if path.is_file():
            files[rel] = path.read_bytes()
    return files


def tree_files(root: Path, rev: str) -> dict[str, bytes]:
    """Every file of a commit's tree, with its bytes (stock git)."""
    names = pgit(root, "ls-tree", "-r", "-z", "--name-only", rev).split("\0")
    out: dict[str, bytes] = {}
    for name in filter(None, names):
        done = subprocess.run(
            ["git", "-C", str(root), "cat-file", "blob", f"{rev}:{name}"],
            capture_output=True,
            check=True,
        )
        out[name] = done.stdout
    return out


def fsck_project(root: Path) -> None:
    done = subprocess.run(
        ["git", "-C", str(root), "fsck", "--strict", "--no-progress"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "error" not in done.stderr.lower(), done.stderr


def gitsessions(
    *args: str, cwd: Path, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The CLI run from `cwd` (not the repository's checkout), in this process."""
    return run_gitsessions(*args, input=input, timeout=timeout, cwd=cwd)


def gitsessions_process(
    *args: str, cwd: Path, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The CLI as a real subprocess, run from `cwd`: where the process is the subject."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return run_gitsessions_process(*args, env=env, input=input, timeout=timeout, cwd=cwd)


def trailers(home: Path, session: str, key: str) -> list[str]:
    """The values of trailer `key` on the session's commits, newest first ('' if none)."""
    done = subprocess.run(
        [
            "git", "--git-dir", str(home / "store.git"), "log",
            f"--format=%(trailers:key={key},valueonly,separator=)",
            f"refs/heads/sessions/{session}",
        ],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def tool(name: str, **arguments):  # type: ignore[no-untyped-def]
    return {"name": name, "arguments": arguments}


def write_turn(  # type: ignore[no-untyped-def]
    server,
    root: Path,
    path: str,
    content: str,
    session: str | None = None,
    snapshot: bool = False,
) -> str:
    """One exec turn that writes `path` in `root` (with a code snapshot, if `snapshot`);
    the session id."""
    server.reply(content=None, tool_calls=[tool("write_file", path=path, content=content)])
    server.reply(content=f"wrote {path}")
    args = [*exec_args(server, root), f"write {path}", "--auto-approve", "--json"]
    done = run_gitsessions(*args, *(["--resume", session] if session else []))
    assert done.returncode == 0, done.stderr
    if snapshot:
        assert "no code snapshot" not in done.stderr, done.stderr
    return json.loads(done.stdout)["session"]
