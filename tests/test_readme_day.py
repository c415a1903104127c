"""The README's worked example ("A day with gitsessions"), run for real, line by line, in
the order the README shows it: every `gitsessions` command of its shell blocks runs
against the fake model server (`chat` a process on a real pty, the others in this
test's process), in a real project, with a second home and a clone of the project for
"the laptop", a bare repository for the remote and a Claude Code session file to
import. What the README names by example is put in for real: `~/src/shop` the project
(on the laptop its clone), `3f2a` the session the first chat made, `9c1e` the fork, the
remote's URL the bare repository. Each step is then checked for what the README says
it does."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect

from tests.conftest import REPO, TERMINAL_VARIABLES, run_gitsessions
from tests.fake_openai import FakeOpenAI
from tests.import_fixtures import claude_session
from tests.test_chat import PROMPT, plain

README = (REPO / "README.md").read_text(encoding="utf-8")
DAY = README.split("## A day with gitsessions", 1)[1].split("\n## ", 1)[0]
SHELL_BLOCKS = re.findall(r"^```sh\n(.*?)^```", DAY, re.MULTILINE | re.DOTALL)
APPROVAL = "[y/N/a]"


def day_lines() -> list[str]:
    return [line.strip() for block in SHELL_BLOCKS for line in block.splitlines() if line.strip()]


def responder(request: dict[str, Any]) -> str | dict[str, Any]:
    """Each prompt of a chat writes cart.py (asking first), then says it is done; a
    request without tools (the one-line summary) gets a title."""
    if not request.get("tools"):
        return "Cart total off by one"
    last = request["messages"][-1]
    if last["role"] == "user":
        turn = sum(message["role"] == "user" for message in request["messages"])
        arguments = {"path": "cart.py", "content": f"TOTAL = {turn}\n"}
        return {"tool_calls": [{"name": "write_file", "arguments": arguments}]}
    return "Fixed: the total now counts every item."


class Machine:
    """One machine of the day: its home, its clone of the project, its environment."""

    def __init__(self, home: Path, project: Path, base_url: str, user_home: Path) -> None:
        self.home, self.project, self.cwd = home, project, project
        self.env = dict(
            os.environ,
            GITSESSIONS_HOME=str(home),
            GITSESSIONS_BASE_URL=base_url,
            GITSESSIONS_MODEL="fake-model",
            CLAUDE_CONFIG_DIR=str(user_home / ".claude"),
            TERM="xterm",
            COLUMNS="120",
            LINES="50",
        )

    def run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        """A command but chat, in this process (`run_gitsessions`) with this machine's
        environment but the terminal's (the chat's pty has its own)."""
        env = {k: v for k, v in self.env.items() if k not in TERMINAL_VARIABLES}
        env.update({k: os.environ[k] for k in TERMINAL_VARIABLES if k in os.environ})
        result = run_gitsessions(*args, env=env, cwd=self.cwd)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def chat(self, args: list[str], prompts: list[str]) -> str:
        """`gitsessions chat ARGS` on a pty: each prompt sent, each approval answered
        yes, then Ctrl-D; what it printed."""
        child = pexpect.spawn(
            sys.executable,
            ["-m", "gitsessions", *args],
            env=self.env,
            cwd=str(self.cwd),
            encoding="utf-8",
            timeout=60,
            dimensions=(50, 120),
        )
        child.linesep = "\r"  # Enter, as a terminal sends it (\n is Ctrl-J: a new line)
        child.expect(PROMPT)
        shown = plain(child.before)
        for prompt in prompts:
            child.sendline(prompt)
            while child.expect([re.escape(APPROVAL), PROMPT]) == 0:
                shown += plain(child.before)
                child.sendline("y")
            shown += plain(child.before)
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
        assert child.exitstatus == 0, shown
        return shown + plain(child.before)

    def sessions(self) -> list[dict[str, Any]]:
        return json.loads(self.run(["list", "--json"]).stdout)

    def here(self) -> list[dict[str, Any]]:
        """`list --here`, run in this machine's clone of the project."""
        cwd, self.cwd = self.cwd, self.project
        try:
            return json.loads(self.run(["list", "--here", "--json"]).stdout)
        finally:
            self.cwd = cwd


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def make_project(root: Path) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root)
    (root / "cart.py").write_text("TOTAL = 0\n")
    git("add", "cart.py", cwd=root)
    identity = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    git(*identity, "commit", "-qm", "cart", cwd=root)
    return root


def test_the_readme_day_runs_as_shown(tmp_path: Path):
    lines = day_lines()
    assert any(line.startswith("gitsessions chat") for line in lines), DAY
    user_home = Path(os.environ["HOME"])
    claude_session(user_home / ".claude" / "projects" / "-home-dev-proj" / "s.jsonl").write()
    remote = tmp_path / "sessions.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    desk_project = make_project(tmp_path / "desk" / "shop")
    code_remote = tmp_path / "shop.git"  # the project's own origin, where code goes
    git("init", "-q", "--bare", str(code_remote), cwd=tmp_path)
    git("remote", "add", "origin", str(code_remote), cwd=desk_project)
    git("push", "-q", "origin", "main", cwd=desk_project)
    laptop_project = tmp_path / "laptop" / "shop"
    git("clone", "-q", str(code_remote), str(laptop_project), cwd=tmp_path)

    with FakeOpenAI() as server:
        server.responder = responder
        desk = Machine(tmp_path / "desk-home", desk_project, server.base_url, user_home)
        laptop = Machine(tmp_path / "laptop-home", laptop_project, server.base_url, user_home)
        machine, ids, ran = desk, {}, []
        for line in lines:
            if line.startswith("#"):
                if "laptop" in line:
                    machine = laptop
                continue
            for part in line.split("&&"):
                words = [ids.get(word, word) for word in shlex.split(part, comments=True)]
                words = [str(machine.project) if w == "~/src/shop" else w for w in words]
                words = [str(remote) if w.endswith(":me/sessions.git") else w for w in words]
                if words[0] == "cd":
                    machine.cwd = Path(words[1])
                    continue
                assert words[0] == "gitsessions", line
                args, ran = words[1:], [*ran, words[1]]
                if args[0] == "chat":
                    first, before = not ids, machine.here()
                    prompts = ["the cart total is off by one; fix it"] * (2 if first else 1)
                    shown = machine.chat(args, prompts)
                    assert "Fixed" in shown, shown
                    if first:
                        ids["3f2a"] = machine.sessions()[0]["id"][:8]
                    if "--continue" in args:  # "takes up this project's newest session"
                        after = {s["id"]: s["messages"] for s in machine.here()}
                        assert after[before[0]["id"]] > before[0]["messages"], (before, after)
                    continue
                result = machine.run(args)
                if args[0] == "fork":
                    ids["9c1e"] = result.stdout.strip()[:8]
                check(args, result, machine, ids, desk_project)

    # the README's day touched every command it promises: chat, fork with code, rewind,
    # diff, sync on a second machine, import from Claude Code
    assert {"chat", "fork", "rewind", "diff", "sync", "import"} <= set(ran), ran
    assert "--worktree" in DAY and "--code" in DAY


def check(
    args: list[str],
    result: subprocess.CompletedProcess[str],
    machine: Machine,
    ids: dict[str, str],
    desk_project: Path,
) -> None:
    """What the README says each step does."""
    command = args[0]
    if command == "fork":
        fork = next(s for s in machine.sessions() if s["id"].startswith(ids["9c1e"]))
        assert fork["parent_id"].startswith(ids["3f2a"])
    elif command == "diff":
        assert "cart.py" in result.stdout, result.stdout  # the code, too
    elif command == "rewind":
        # turn 2 wrote TOTAL = 2; the fork's chat (its turn 3) worked in its own worktree
        assert (desk_project / "cart.py").read_text() == "TOTAL = 1\n"
        worktrees = list((machine.home / "worktrees").iterdir())
        assert [(w / "cart.py").read_text() for w in worktrees] == ["TOTAL = 3\n"]
    elif command == "sync" and machine.home.name == "laptop-home":
        assert {s["id"][:8] for s in machine.sessions()} == {ids["3f2a"], ids["9c1e"]}
        # the remote added with --code: the agent's code came along into the clone
        snapshots = git("for-each-ref", "--format=%(refname:lstrip=3)",
                        "refs/gitsessions/snapshots/", cwd=machine.project)  # fmt: skip
        assert {ids["3f2a"], ids["9c1e"]} <= {sid[:8] for sid in snapshots.split()}
        # and the fork's worktree, made here at its latest turn
        made = list((machine.home / "worktrees").iterdir())
        assert [(w / "cart.py").read_text() for w in made] == ["TOTAL = 3\n"], result.stderr
        assert "at the code of turn 3" in result.stderr, result.stderr
    elif command == "import":
        assert "created" in result.stdout, result.stdout
        imported = [s for s in machine.sessions() if s.get("imported_from") == "claude-code"]
        assert len(imported) == 1
