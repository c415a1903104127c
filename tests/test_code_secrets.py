"""`push --code` sends no secret no one committed (issue 42, item 4): a turn's snapshot
holds untracked, not-ignored files (an AWS key, a GitHub token, a private key), and the
snapshot push is scanned as the session push is. A session whose snapshots hold one is
refused, the file and rule named, and nothing of its code reaches the project's origin
(a bare repository, read back with stock git); `--allow-secrets` sends it."""

import json
import os
import subprocess
from pathlib import Path

from gitsessions.services.code.snapshots import find_project
from gitsessions.services.code.snapshotter import take
from gitsessions.services.code.workspace import describe
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.secrets_corpus import ALNUM, B32, B64, _pem, chars

SNAPSHOTS = "refs/gitsessions/snapshots/"


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    return subprocess.run(
        ["git", *ident, "-C", str(repo), *args], capture_output=True, check=True, input=input
    ).stdout


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project repository with one commit, pushed to its `origin`, a bare repository."""
    proj, origin = tmp_path / "project", tmp_path / "project-origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    (proj / "app.py").write_text("print('v1')\n")
    _git(proj, "add", "app.py")
    _git(proj, "commit", "-q", "-m", "v1")
    _git(proj, "remote", "add", "origin", str(origin))
    _git(proj, "push", "-q", "origin", "HEAD:refs/heads/main")
    return proj, origin


def _session_with_snapshot(home: Path, proj: Path) -> str:
    """A session of `proj` and a real snapshot of its working tree as it is now."""
    store = SessionStore(home, background_maintenance=False)
    try:
        sid = new_id()
        workspace = describe(proj, os.environ)
        store.create(new_header(sid, now_iso(), title="code", workspace=workspace), Change())
    finally:
        store.close()
    project = find_project(proj, os.environ)
    assert project is not None
    take(project, os.environ, sid, "turn 1")
    return sid


def _everything_in(bare: Path) -> bytes:
    """Every object of the bare repository, as stock git reads it."""
    return _git(bare, "cat-file", "--batch-all-objects", "--batch")


def test_a_snapshot_holding_secrets_is_refused_and_nothing_of_it_is_sent(
    cli, home, tmp_path, monkeypatch
):
    proj, origin = _project(tmp_path)
    # a token the project itself committed and pushed is on origin already: only what the
    # remote lacks is scanned, so it stops nothing
    (proj / "config.py").write_text(f"TOKEN = 'ghp_{chars(ALNUM, 36)}'\n")
    _git(proj, "add", "config.py")
    _git(proj, "commit", "-q", "-m", "config")
    _git(proj, "push", "-q", "origin", "HEAD:refs/heads/main")
    _git(proj, "fetch", "-q", "origin")
    clean = _session_with_snapshot(home, proj)  # before the files came: nothing to refuse
    aws = "AKIA" + chars(B32, 16)
    aws_secret = chars(B64, 39) + "7"
    github = "ghp_" + chars(ALNUM, 36)
    pem = _pem("RSA")
    (proj / "deploy.env").write_text(
        f"AWS_ACCESS_KEY_ID={aws}\nAWS_SECRET_ACCESS_KEY={aws_secret}\n"
    )
    (proj / "notes.txt").write_text(f"token for the bot: {github}\n")
    (proj / "id_rsa").write_text(pem + "\n")
    leaky = _session_with_snapshot(home, proj)
    assert b"id_rsa" in _git(proj, "ls-tree", "-r", "--name-only", SNAPSHOTS + leaky)

    bare = tmp_path / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    cli("remote", "add", "origin", str(bare))
    monkeypatch.chdir(proj)
    done = cli("push", clean, leaky, "--code", "--json", code=1)
    report = json.loads(done.stdout)
    assert {s["id"]: s["result"] for s in report["sessions"]} == {clean: "new", leaky: "new"}
    code = {c["id"]: c for c in report["code"]}
    assert code[clean]["result"] == "pushed"
    assert code[leaky]["result"] == "refused"
    for named in (
        "deploy.env: aws-access-key-id",
        "id_rsa: private-key",
        "notes.txt: github-token",
    ):
        assert named in code[leaky]["detail"], code[leaky]
    assert aws not in done.stdout + done.stderr and github not in done.stdout + done.stderr

    remote_refs = _git(origin, "for-each-ref", "--format=%(refname)").decode().split()
    assert SNAPSHOTS + clean in remote_refs and SNAPSHOTS + leaky not in remote_refs
    sent = _everything_in(origin)
    for secret in (aws, aws_secret, github, pem.splitlines()[1]):
        assert secret.encode() not in sent

    # asked for: it goes (the test would see it)
    done = cli("push", leaky, "--code", "--allow-secrets", "--json")
    assert json.loads(done.stdout)["code"] == [
        {"id": leaky, "result": "pushed", "detail": "to origin"}
    ]
    assert github.encode() in _everything_in(origin)
    # what went once is not scanned again: a later push of it is up to date, not refused
    done = cli("push", leaky, "--code", "--json")
    assert json.loads(done.stdout)["code"] == [{"id": leaky, "result": "up to date"}]
