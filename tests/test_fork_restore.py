"""A worktree fork pulled onto another machine is restored at its latest turn, and is
never resumed in that machine's main checkout (issue 40, item 2).

Two homes, two clones of one project whose `origin` is a bare repository (the code
remote), a bare `sessions.git` for the sessions (`Day`, as the README's day). On A: a
session, `fork --worktree`, and real exec turns in the fork that add `new.py` and rewrite
`sub/f.py`; `push --all --code`. On B: `pull --code`, then the fork. Stock git and the
files say what B's worktree and main checkout hold."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from acp import text_block

from tests.conftest import made_once, put_back
from tests.fake_openai import FakeOpenAI
from tests.project_helpers import tool
from tests.test_acp import Editor, drive
from tests.test_chat import PROMPT, plain
from tests.test_code_follows import Day
from tests.test_project_identity import exec_turn, git, gs


def write(
    server: FakeOpenAI, day: Day, session: str, path: str, content: str, on: str = "a"
) -> None:
    """One exec turn on A (or B) that writes `path` in the fork's worktree (resumed from
    that machine's main checkout: the fork works in its worktree from anywhere)."""
    home, clone = (day.home_a, day.clone_a) if on == "a" else (day.home_b, day.clone_b)
    server.reply(content=None, tool_calls=[tool("write_file", path=path, content=content)])
    server.reply(content=f"wrote {path}")
    done = gs(home, clone, "exec", f"write {path}", "--resume", session,
              "--base-url", server.base_url, "--model", "m", "--auto-approve")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not made here" not in done.stderr and "worktree restore" not in done.stderr


def forked_on_a_pulled_on_b(tmp_path: Path) -> tuple[Day, str, int]:
    """The fork's id and its last turn, pulled with its code onto B."""
    day = Day(tmp_path)
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, day.home_a, day.clone_a, "start")
        made = gs(day.home_a, day.clone_a, "fork", sid, "--worktree", "--json")
        assert made.returncode == 0, made.stderr
        fork = json.loads(made.stdout)["id"]
        write(server, day, fork, "new.py", "NEW = 1\n")
        write(server, day, fork, "sub/f.py", "x = 2\n")
    assert (day.clone_a / "sub" / "f.py").read_text() == "x = 1\n"  # A's checkout untouched
    day.a("push", "--all", "--code")
    day.b("pull", "--code")
    log = git("--git-dir", str(day.home_b / "store.git"), "log",
              "--format=%(trailers:key=Turn,valueonly)", f"refs/heads/sessions/{fork}")  # fmt: skip
    last = max(int(n) for n in log.split() if n.isdigit())
    return day, fork, last


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Day, str, int]:
    """`forked_on_a_pulled_on_b` once for the module, in an environment of its own, and a
    copy of it as made: (where, the copy, the day, the fork, its last turn)."""
    root = tmp_path_factory.mktemp("pulled")
    where, saved = root / "day", root / "saved"
    where.mkdir()
    day, fork, last = made_once(root, lambda _home: forked_on_a_pulled_on_b(where))
    shutil.copytree(where, saved, symlinks=True)
    return where, saved, day, fork, last


@pytest.fixture
def pulled(made: tuple[Path, Path, Day, str, int]) -> tuple[Day, str, int]:
    """The fork pulled onto B, as `forked_on_a_pulled_on_b` leaves it, at the module's
    place (its homes and clones hold their paths), put back for each test."""
    where, saved, day, fork, last = made
    put_back(saved, where)
    return day, fork, last


def untouched(clone: Path) -> None:
    """B's main checkout holds only what its origin gave it."""
    assert git("status", "--porcelain", "--untracked-files=all", cwd=clone) == ""
    assert (clone / "sub" / "f.py").read_text() == "x = 1\n"


def worktree_of(day: Day, fork: str) -> Path:
    return day.home_b / "worktrees" / f"shop-{fork[:8]}"


def test_restore_of_a_pulled_fork_checks_out_its_latest_turn_and_names_it(pulled):
    day, fork, last = pulled
    said = day.b("worktree", "restore", fork[:8])
    path = worktree_of(day, fork)
    assert f"turn {last}" in said, said
    assert (path / "new.py").read_text() == "NEW = 1\n"
    assert (path / "sub" / "f.py").read_text() == "x = 2\n"
    # committed on the fork's branch, as stock git sees it; nothing left uncommitted
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=path).strip() == f"gitsessions/{fork[:8]}"
    assert git("show", "HEAD:new.py", cwd=path) == "NEW = 1\n"
    assert git("status", "--porcelain", "--untracked-files=all", cwd=path) == ""
    untouched(day.clone_b)


def test_exec_resume_of_a_pulled_fork_without_its_worktree_says_the_command(pulled):
    day, fork, _ = pulled
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[tool("write_file", path="oops.py", content="1\n")])
        server.reply(content="wrote it")
        done = gs(day.home_b, day.clone_b, "exec", "go on", "--resume", fork[:8],
                  "--base-url", server.base_url, "--model", "m", "--auto-approve")  # fmt: skip
        assert server.requests == []  # refused before the model is asked
    assert done.returncode != 0
    assert f"gitsessions worktree restore {fork[:8]}" in done.stderr, done.stderr
    untouched(day.clone_b)
    assert not worktree_of(day, fork).exists()


def test_acp_load_of_a_pulled_fork_without_its_worktree_says_the_command(
    pulled, tmp_path, monkeypatch
):
    day, fork, _ = pulled
    monkeypatch.setenv("GITSESSIONS_HOME", str(day.home_b))
    refused: list[str] = []

    async def load(conn) -> None:  # type: ignore[no-untyped-def]
        try:
            await conn.load_session(cwd=str(day.clone_b), session_id=fork, mcp_servers=[])
            await conn.prompt(session_id=fork, prompt=[text_block("go on")])
        except Exception as error:  # the ACP error answer the editor gets
            refused.append(str(error) + json.dumps(getattr(error, "data", None)))

    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[tool("write_file", path="oops.py", content="1\n")])
        drive(server, Editor(), tmp_path, load)
        assert server.requests == []
    assert len(refused) == 1 and f"gitsessions worktree restore {fork[:8]}" in refused[0]
    untouched(day.clone_b)


def chat_on_b(day: Day, server: FakeOpenAI, fork: str) -> pexpect.spawn:
    """`chat --resume FORK` in a real terminal, in B's main checkout."""
    env = dict(os.environ, TERM="xterm", COLUMNS="200", LINES="50",
               GITSESSIONS_HOME=str(day.home_b))  # fmt: skip
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--resume", fork[:8], "--base-url", server.base_url,
         "--model", "fake-model", "--auto-approve"],
        env=env, encoding="utf-8", timeout=60, cwd=str(day.clone_b), dimensions=(50, 200),
    )  # fmt: skip
    child.linesep = "\r"
    child.expect(r"\[y/N\] ")
    assert f"worktree restore {fork[:8]}" in plain(child.before)
    return child


def test_chat_resume_offers_the_restore_and_goes_on_in_the_worktree_on_yes(pulled):
    day, fork, last = pulled
    with FakeOpenAI(strict=True) as server:
        child = chat_on_b(day, server, fork)
        child.sendline("y")
        child.expect(PROMPT)
        path = worktree_of(day, fork)
        shown = plain(child.before)
        assert f"turn {last}" in shown and "working in the worktree" in shown, shown
        server.reply(content=None, tool_calls=[tool("write_file", path="more.py", content="2\n")])
        server.reply(content="wrote more.py")
        child.sendline("write more.py")
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
    assert child.exitstatus == 0
    assert (path / "more.py").read_text() == "2\n"
    assert (path / "new.py").read_text() == "NEW = 1\n"
    untouched(day.clone_b)


def test_chat_resume_answered_no_stops_with_the_command(pulled):
    day, fork, _ = pulled
    with FakeOpenAI(strict=True) as server:
        child = chat_on_b(day, server, fork)
        child.sendline("n")
        child.expect(pexpect.EOF)
        child.wait()
        assert server.requests == []
    assert child.exitstatus != 0
    assert f"gitsessions worktree restore {fork[:8]}" in plain(child.before)
    assert not worktree_of(day, fork).exists()
    untouched(day.clone_b)


def test_one_sync_on_each_side_brings_a_worktree_fork_at_its_latest_turn_and_back(tmp_path):
    """The README's day with a remote that carries code: A forks with a worktree and the
    agent writes in it; `sync` on A, `sync` on B, and B's worktree of the fork holds its
    latest turn, blamed to the fork's turns; B's turns come back to A's own worktree."""
    day = Day(tmp_path, code=True)
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, day.home_a, day.clone_a, "start")
        made = gs(day.home_a, day.clone_a, "fork", sid, "--worktree", "--json")
        assert made.returncode == 0, made.stderr
        fork = json.loads(made.stdout)["id"]
        a_path = Path(json.loads(made.stdout)["worktree"]["path"])
        write(server, day, fork, "new.py", "NEW = 1\n")
        write(server, day, fork, "sub/f.py", "x = 2\n")
        day.a("sync")
        said = day.b("sync")
        path = worktree_of(day, fork)
        blamed = gs(day.home_b, path, "blame", "sub/f.py:1", "--json")
        [row] = [json.loads(line) for line in blamed.stdout.splitlines()]
        assert (row["session"], row["text"]) == (fork, "x = 2"), blamed.stderr
        assert f"made the worktree of {fork[:8]} here at the code of turn {row['turn']}" in said
        assert (path / "new.py").read_text() == "NEW = 1\n"
        untouched(day.clone_b)
        assert "made the worktree" not in day.b("sync")  # once

        write(server, day, fork, "from_b.py", "B = 1\n", on="b")  # in B's worktree
        assert (path / "from_b.py").exists() and not (day.clone_b / "from_b.py").exists()
        day.b("sync")
        day.a("sync")
        write(server, day, fork, "again.py", "A = 2\n")  # in A's own worktree still
    assert (a_path / "again.py").read_text() == "A = 2\n"
    assert not (day.clone_a / "again.py").exists()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace: apt-get install strace")
@pytest.mark.parametrize("file", ["HEAD", "commondir"])
def test_a_restore_killed_inside_git_worktree_add_is_finished_by_the_next(pulled, file):
    """`git worktree add` killed as it writes a file of its new entry (strace, limited to
    that file) leaves the entry locked "initializing" (with an empty `commondir`, one git
    cannot even list) and a folder: the next `worktree restore` clears them (the folder
    set aside, never deleted) and makes the worktree."""
    day, fork, last = pulled
    head = day.clone_b / ".git" / "worktrees" / f"shop-{fork[:8]}" / file
    env = dict(os.environ, GITSESSIONS_HOME=str(day.home_b))
    killed = subprocess.run(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(head), "-e", "trace=write",
         "-e", "inject=write:signal=KILL:when=1",
         sys.executable, "-m", "gitsessions", "worktree", "restore", fork[:8]],
        capture_output=True, text=True, cwd=day.clone_b, env=env, timeout=300,
    )  # fmt: skip
    assert killed.returncode == 1, killed.stderr  # git died: one line, nothing written
    assert (head.parent / "locked").read_text().startswith("initializing")  # what git left
    said = day.b("worktree", "restore", fork[:8])
    path = worktree_of(day, fork)
    assert f"turn {last}" in said or "on its branch" in said, said
    assert (path / "new.py").read_text() == "NEW = 1\n"
    assert git("status", "--porcelain", cwd=path) == ""
    assert "initializing" not in git("worktree", "list", "--porcelain", cwd=day.clone_b)
    git("fsck", "--strict", "--no-dangling", cwd=day.clone_b)
    untouched(day.clone_b)
