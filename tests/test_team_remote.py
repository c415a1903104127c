"""A team on one remote (issue 21, item 4): a real access-controlled git host, gitolite
behind sshd on 127.0.0.1, with a user who may write the sessions repository and one who
may only read it. The writer pushes; the reader pulls and sees who made each session on
which machine; the reader's push is refused in one line and nothing changes on either
side."""

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI
from tests.git_servers import gitolite, gitolite_missing

CONF = "repo sessions\n    RW = alice\n    R = bob\n"


@pytest.fixture
def host(tmp_path: Path):  # type: ignore[no-untyped-def]
    missing = gitolite_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    with gitolite(tmp_path / "host", CONF, ("alice", "bob")) as server:
        yield server


def gs(home: Path, user: str, host, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`gitsessions ARGS` as `user` on their home, in this process."""
    env = dict(os.environ, GITSESSIONS_HOME=str(home), USER=user, LOGNAME=user,
               GIT_SSH_COMMAND=host.ssh(user))  # fmt: skip
    return run_gitsessions(*args, env=env, cwd=home.parent)


def test_a_writer_and_a_reader_share_one_gitolite_remote(host, tmp_path):
    alice, bob = tmp_path / "alice-home", tmp_path / "bob-home"
    for home, user in ((alice, "alice"), (bob, "bob")):
        home.mkdir()
        done = gs(home, user, host, "remote", "add", "origin", host.url("sessions"))
        assert done.returncode == 0, done.stderr
    with FakeOpenAI(strict=True) as server:
        server.reply(content="hello from alice")
        server.reply(content="Greeting")
        done = gs(alice, "alice", host, "exec", "hi", "--base-url", server.base_url,
                  "--model", "m", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        sid = json.loads(done.stdout)["session"]
    pushed = gs(alice, "alice", host, "push", "--all")
    assert pushed.returncode == 0, pushed.stderr

    pulled = gs(bob, "bob", host, "pull", "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert json.loads(pulled.stdout)["sessions"] == [{"id": sid, "result": "created"}]
    info = json.loads(gs(bob, "bob", host, "info", sid, "--json").stdout)
    assert (info["workspace"]["user"], info["workspace"]["host"]) == ("alice", socket.gethostname())
    listed = json.loads(gs(bob, "bob", host, "list", "--json").stdout)
    assert listed[0]["made_by"] == f"alice@{socket.gethostname()}"
    shown = gs(bob, "bob", host, "info", sid)
    assert f"alice@{socket.gethostname()}" in shown.stdout
    from gitsessions.cli.list_table import table

    rows = [(0, dict(listed[0], made_by=f"alice@{socket.gethostname()}"))]
    from rich.console import Console

    console = Console(width=120, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(table(rows, 120))
    assert f"by alice@{socket.gethostname()}" in console.export_text()

    # bob may read, not write: his push is one line, and nothing moved anywhere
    with FakeOpenAI(strict=True) as server:
        server.reply(content="bob was here")
        done = gs(bob, "bob", host, "exec", "more", "--resume", sid, "--base-url",
                  server.base_url, "--model", "m")  # fmt: skip
        assert done.returncode == 0, done.stderr
    before = gs(bob, "bob", host, "info", sid, "--json").stdout
    refused = gs(bob, "bob", host, "push", sid)
    assert refused.returncode == 1, refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "DENIED" in errors[0], refused.stderr
    assert gs(bob, "bob", host, "info", sid, "--json").stdout == before
    again = gs(alice, "alice", host, "pull", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["sessions"] == [{"id": sid, "result": "unchanged"}]

    # a user the host does not know gets one line too
    stranger = tmp_path / "eve-home"
    stranger.mkdir()
    gs(stranger, "eve", host, "remote", "add", "origin", host.url("sessions"))
    env_key = host.ssh("alice").replace(str(host.root / "alice"), str(host.root / "host"))
    done = run_gitsessions(
        "pull", env=dict(os.environ, GITSESSIONS_HOME=str(stranger), GIT_SSH_COMMAND=env_key)
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Permission denied (publickey)" in errors[0], done.stderr
    assert "repository exists" not in errors[0]  # git's advice is not the error
