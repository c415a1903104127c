"""Sync over the transports the other sync tests do not start: ssh (`ssh://` and the
scp-style `user@host:path`, through an `ssh` that runs the remote command on this
machine) and smart HTTP that asks for credentials (the URL carries them; they never
show in any output), all through stock git, the one transport."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, fsck
from tests.git_servers import fake_ssh, git_http
from tests.test_sync import contents, make, results, say, summary

PASSWORD = "pw-Zq81xT"


@pytest.mark.parametrize("style", ["ssh://", "scp"])
def test_two_homes_sync_over_ssh(cli, home, tmp_path, monkeypatch, style):
    bare = tmp_path / "server" / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    ssh = fake_ssh(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{ssh.parent}{os.pathsep}{os.environ['PATH']}")
    url = f"ssh://me@devbox:2222{bare}" if style == "ssh://" else f"me@devbox:{bare}"

    sid = make(home, tag="laptop")
    cli("remote", "add", "origin", url)
    assert results(summary(cli, home, "push", sid)) == {sid: "new"}
    other = tmp_path / "home-b"
    cli("--home", str(other), "remote", "add", "origin", url)
    assert results(summary(cli, other, "pull")) == {sid: "created"}
    say(home, sid, "more")
    assert results(summary(cli, home, "push", sid)) == {sid: "updated"}
    assert results(summary(cli, other, "pull")) == {sid: "updated"}
    assert contents(other, sid) == contents(home, sid)

    calls = (ssh.parent / "ssh.log").read_text().splitlines()
    assert calls and all("me@devbox" in call for call in calls)  # it went through ssh
    if style == "ssh://":
        assert all("2222" in call for call in calls)
    fsck(other)
    check = subprocess.run(["git", "--git-dir", str(bare), "fsck", "--strict"], check=False)
    assert check.returncode == 0


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def _run(home: Path, *args: str) -> Done:
    """The CLI in a process of its own with no controlling terminal, as from cron or a
    script (git must fail at once where it would ask for a password, never wait)."""
    ran = subprocess.run(
        [sys.executable, "-m", "gitsessions", "--home", str(home), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    return Done(ran.returncode, ran.stdout, ran.stderr)


def test_credentials_in_an_http_url_work_and_never_show(home, tmp_path):
    root = tmp_path / "server"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(root / "sessions.git")], check=True)
    sid = make(home, tag="laptop")
    with git_http(root, auth=("alice", PASSWORD)) as base:
        good = base.replace("http://", f"http://alice:{PASSWORD}@") + "/sessions.git"
        bad = base.replace("http://", "http://alice:wrong-pass@") + "/sessions.git"
        outputs = [_run(home, "remote", "add", "origin", good)]
        outputs.append(pushed := _run(home, "push", sid, "--json"))
        assert pushed.returncode == 0, pushed.stderr
        assert results(json.loads(pushed.stdout)) == {sid: "new"}
        outputs.append(listed := _run(home, "remote", "list"))
        assert "alice" not in listed.stdout and "***@127.0.0.1" in listed.stdout
        outputs.append(_run(home, "remote", "list", "--json"))

        other = tmp_path / "home-b"
        outputs.append(_run(other, "remote", "add", "origin", bad))
        outputs.append(refused := _run(other, "pull"))
        errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert refused.returncode != 0 and len(errors) == 1, refused.stderr
        assert errors[0].startswith("error: cannot fetch from http://***@127.0.0.1")
        assert "warning" not in refused.stderr
        assert not (other / "store.git" / "refs" / "remotes").exists() or not list(
            (other / "store.git" / "refs" / "remotes").rglob("*")
        )
        outputs.append(_run(other, "remote", "remove", "origin"))
        outputs.append(_run(other, "remote", "add", "origin", good))
        outputs.append(pulled := _run(other, "pull", "--json"))
        assert results(json.loads(pulled.stdout)) == {sid: "created"}, pulled.stderr
    assert contents(other, sid) == contents(home, sid)
    for done in outputs:
        for secret in (PASSWORD, "wrong-pass"):
            assert secret not in done.stdout + done.stderr
