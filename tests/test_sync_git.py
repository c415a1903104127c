"""Stock git is sync's one transport: without it, or with one older than 2.29, push and
pull say so in one line and change nothing; its version is noted in the store once,
keyed by the binary; and a remote on this machine is listed as `git ls-remote` lists it,
whatever its refs look like (packed and loose, hidden, included config, alternates,
reftable)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, fsck
from tests.test_sync import contents, make, pushed, refs, results, say, summary

OLD_GIT = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "git version 2.20.1"; exit 0; fi
echo "this old git does nothing: $*" >&2
exit 1
"""


def gitsessions(home: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a process of its own, as a user runs it, with `PATH` set to `path`."""
    return subprocess.run(
        [sys.executable, "-m", "gitsessions", "--home", str(home), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PATH": path},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("which", ["no git", "git 2.20.1"])
def test_push_and_pull_without_a_new_enough_git_say_so_and_change_nothing(
    cli, home, tmp_path, which
):
    bare, _url, sid = pushed(cli, home, tmp_path)
    say(home, sid, "more")  # something a push would send
    other = tmp_path / "other"
    cli("--home", str(other), "remote", "add", "origin", str(bare))
    cli("--home", str(other), "pull")
    say(home, sid, "yet more")
    cli("push", "--all")  # something a pull would bring
    say(home, sid, "and more")
    binaries = tmp_path / "bin"
    binaries.mkdir()
    if which == "no git":
        path = str(binaries)  # nothing: the CLI itself needs no program from PATH
        expected = "error: push and pull need git on PATH"
    else:
        fake = binaries / "git"
        fake.write_text(OLD_GIT)
        fake.chmod(0o755)
        path = f"{binaries}{os.pathsep}{os.environ['PATH']}"
        expected = "error: push and pull need git 2.29 or newer (found 2.20.1)"
    before = {where: refs(where / "store.git") for where in (home, other)}
    remote_before = refs(bare)
    for where, args in ((home, ["push", "--all"]), (other, ["pull"]), (other, ["pull", "--json"])):
        done = gitsessions(where, path, *args)
        assert done.returncode == 1, done
        assert done.stderr.splitlines() == [expected], done.stderr
        assert done.stdout == ""
    assert {where: refs(where / "store.git") for where in (home, other)} == before
    assert refs(bare) == remote_before
    listed = gitsessions(other, path, "remote", "list")  # what needs no git still works
    assert listed.returncode == 0 and str(bare) in listed.stdout
    fsck(home)
    fsck(other)


NOTED = """
import sys
from pathlib import Path
from gitsessions.store import stockgit
stockgit.remember_version(Path(sys.argv[1]))
print(stockgit.version())
"""


def test_stock_gits_version_is_noted_in_the_store_for_that_binary(tmp_path):
    store = tmp_path / "store.git"
    store.mkdir()

    def version() -> str:
        done = subprocess.run([sys.executable, "-c", NOTED, str(store)], cwd=REPO,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout.strip()

    real = version()
    note = store / "gitsessions" / "git-version"
    key, noted = note.read_text().splitlines()
    assert real == str(tuple(int(p) for p in noted.split(".")))
    note.write_text(f"{key}\n9.99\n")  # the note is what a later sync believes...
    assert version() == "(9, 99)"
    note.write_text(f"{key} other\n9.99\n")  # ...only while it is of this binary
    assert version() == real
    note.write_text("garbage")
    assert version() == real and note.read_text().splitlines()[0] == key


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(where), *args], check=True, capture_output=True, text=True
    )
    return done.stdout


def ls_remote_sessions(where: Path) -> dict[str, str]:
    """`{session id: head}` of what `git ls-remote` lists under refs/heads/sessions/."""
    out = subprocess.run(["git", "ls-remote", str(where)], check=True, capture_output=True,
                         text=True).stdout  # fmt: skip
    prefix = "refs/heads/sessions/"
    found = {}
    for line in out.splitlines():
        sha, name = line.split("\t")
        if name.startswith(prefix):
            found[name[len(prefix) :]] = sha
    return found


def _reftable() -> bool:
    probe = subprocess.run(["git", "init", "-h"], capture_output=True, text=True, check=False)
    return "--ref-format" in probe.stdout + probe.stderr


SHAPES = ["packed and loose", "hideRefs", "included hideRefs", "alternates", "reftable"]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_local_remote_is_pulled_as_git_ls_remote_lists_it(cli, home, tmp_path, shape):
    if shape == "reftable" and not _reftable():
        pytest.skip("this git has no reftable")
    ids = [make(home, tag=str(n)) for n in range(3)]
    bare = tmp_path / "remote.git"
    init = ["--ref-format=reftable"] if shape == "reftable" else []
    subprocess.run(["git", "init", "-q", "--bare", *init, str(bare)], check=True)
    cli("remote", "add", "origin", str(bare))
    cli("push", "--all")
    url = bare
    if shape == "packed and loose":
        git(bare, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "-m", "t", "v1",
            f"refs/heads/sessions/{ids[0]}")  # fmt: skip
        git(bare, "pack-refs", "--all")
        say(home, ids[1], "more")
        cli("push", ids[1])  # a loose ref over its packed one
        git(bare, "update-ref", "-d", f"refs/heads/sessions/{ids[2]}")  # gone from packed
    elif shape == "hideRefs":
        git(bare, "config", "uploadpack.hideRefs", f"refs/heads/sessions/{ids[2]}")
    elif shape == "included hideRefs":
        extra = tmp_path / "extra.config"
        extra.write_text(f"[transfer]\n\thideRefs = refs/heads/sessions/{ids[2]}\n")
        git(bare, "config", "include.path", str(extra))
    elif shape == "alternates":
        url = tmp_path / "shared.git"  # its objects are the other repository's
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(bare), str(url)],
                       check=True)  # fmt: skip
        assert (url / "objects" / "info" / "alternates").exists()
    listed = ls_remote_sessions(url)
    assert len(listed) == (3 if shape in ("alternates", "reftable") else 2)
    other = tmp_path / "other"
    cli("--home", str(other), "remote", "add", "origin", str(url))
    assert results(summary(cli, other, "pull")) == {sid: "created" for sid in listed}
    assert _heads(other) == listed
    for sid in listed:
        assert contents(other, sid) == contents(home, sid)
    fsck(other)


def _heads(home: Path) -> dict[str, str]:
    prefix = "refs/heads/sessions/"
    return {name[len(prefix) :]: sha for name, sha in refs(home / "store.git", prefix).items()}
