"""Hostile remotes, built by hand with stock git plumbing (`hash-object`, `mktree`,
`commit-tree`, `update-ref` on a bare repository): what they send never deletes a
session that lives here, never makes its id travel on as deleted, and never puts an
object into the store that `git fsck --strict` refuses."""

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import Cli, fsck, git
from tests.test_sync import make, refs, results, summary

SESSIONS = "refs/heads/sessions/"


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def plumb(repo: Path, *args: str, input: bytes = b"") -> str:
    """A stock git plumbing command on `repo`: its output, stripped."""
    ident = {
        **os.environ,
        "GIT_AUTHOR_NAME": "x",
        "GIT_AUTHOR_EMAIL": "x@example.org",
        "GIT_COMMITTER_NAME": "x",
        "GIT_COMMITTER_EMAIL": "x@example.org",
    }
    done = subprocess.run(
        ["git", "--git-dir", str(repo), *args], input=input, capture_output=True, env=ident
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().strip()


def tombstone(repo: Path, ids: list[str]) -> str:
    """Point the remote's `refs/gitsessions/tombstones` at a commit listing `ids`."""
    blob = plumb(
        repo, "hash-object", "-w", "--stdin", input="".join(f"{i}\n" for i in ids).encode()
    )
    tree = plumb(repo, "mktree", input=f"100644 blob {blob}\tdeleted\n".encode())
    commit = plumb(repo, "commit-tree", tree, "-m", "tombstones")
    plumb(repo, "update-ref", "refs/gitsessions/tombstones", commit)
    return commit


def deleted_file(home: Path) -> set[str]:
    path = home / "store.git" / "gitsessions" / "deleted"
    return set(path.read_text().split()) if path.exists() else set()


# -- hole 3: a remote's tombstones never delete or mark what lives here ------------------


def test_a_remote_tombstone_never_marks_a_live_session_nor_travels_on(cli: Cli, home, tmp_path):
    here_only = [make(home, tag="mine one"), make(home, tag="mine two")]  # never pushed
    shared = make(home, tag="shared")
    origin = bare(tmp_path / "origin.git")
    cli("remote", "add", "origin", str(origin))
    cli("push", shared)
    gone = "f" * 32  # deleted on the remote, never here
    tombstone(origin, [*here_only, shared, gone])

    pulled = cli("pull", "origin")
    for sid in here_only:
        assert (
            f"kept {sid[:8]}: deleted on origin, but it has history here the remote never had"
            in pulled.stderr
        )
    assert f"kept {shared[:8]}: deleted on origin; it stays here" in pulled.stderr
    store_refs = refs(home / "store.git", SESSIONS)
    assert {SESSIONS + sid for sid in [*here_only, shared]} <= set(store_refs)
    assert deleted_file(home) == {gone}  # the one deleted there and not here
    report = summary(cli, home, "pull")
    assert {k["id"] for k in report["kept"]} == {*here_only, shared}

    # a lost branch of such a session is still one `doctor --repair` restores
    lost = here_only[0]
    git(home / "store.git", "update-ref", "-d", SESSIONS + lost)
    repaired = json.loads(cli("doctor", "--repair", "--json").stdout)
    assert ("lost", lost) in {(f["kind"], f["subject"]) for f in repaired["findings"]}
    assert refs(home / "store.git", SESSIONS)[SESSIONS + lost] == store_refs[SESSIONS + lost]

    # a push to another remote sends them as sessions, not as deleted ones
    mirror = bare(tmp_path / "mirror.git")
    cli("remote", "add", "mirror", str(mirror))
    cli("push", "mirror", "--all")
    third = tmp_path / "home-c"
    cli("--home", str(third), "remote", "add", "mirror", str(mirror))
    got = results(summary(cli, third, "pull"))
    assert got == {sid: "created" for sid in [*here_only, shared]}
    assert deleted_file(third) == {gone}  # the remote's own deleted id still travels
    fsck(third)
