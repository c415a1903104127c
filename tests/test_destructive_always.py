""" "always" for a destructive command covers that exact command line only (issue 31):
on a real pty, `a` for `rm -f one.txt` does not let `rm -f two.txt` run unasked."""

import pytest

from gitsessions.agent.shell_scope import Scope, scope_of
from tests.test_chat import PROMPT, leave, plain, spawn


def shell(server, command: str) -> None:
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
    )


def test_always_for_rm_asks_again_for_another_rm(server, tmp_path):
    ws = tmp_path / "project"
    ws.mkdir()
    for name in ("one.txt", "two.txt"):
        (ws / name).write_text("x\n")
    shell(server, "rm -f one.txt")
    shell(server, "rm -f two.txt")
    server.reply(content="Removed both.")
    child = spawn(server.base_url, ws)
    child.sendline("remove the files")
    child.expect_exact("[y/N/a] ")
    assert "a: always allow exactly this command in this session" in plain(child.before)
    child.sendline("a")
    child.expect_exact("[y/N/a] ")  # another rm: asked again
    assert "$ rm -f two.txt" in plain(child.before)
    child.sendline("y")
    child.expect(PROMPT)
    leave(child)
    assert not (ws / "one.txt").exists() and not (ws / "two.txt").exists()


@pytest.mark.parametrize(
    "command", ["rm -f x", "mv a b", "chmod -R 777 .", "git reset --hard", "git clean -fdx",
                "git push --force", "docker rm web", "kill 42"],
)  # fmt: skip
def test_destructive_commands_are_offered_only_exactly(command: str) -> None:
    assert scope_of(command) == Scope((command,), exact=True)
