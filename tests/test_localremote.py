"""A remote on this machine is listed from its files (store/localremote.py) exactly as
`git ls-remote` lists it, and anything not plainly an ordinary repository is left to
`git ls-remote`; stock git's version is noted in the store once, keyed by the binary."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.store import localremote
from tests.conftest import REPO, fsck
from tests.test_sync import contents, make, pushed, results, say, summary


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(where), *args], check=True, capture_output=True, text=True
    )
    return done.stdout


def ls_remote(where: Path) -> dict[bytes, bytes]:
    out = subprocess.run(["git", "ls-remote", str(where)], check=True, capture_output=True).stdout
    refs = {}
    for line in out.splitlines():
        sha, name = line.split(b"\t")
        if name.startswith(b"refs/") and not name.endswith(b"^{}"):
            refs[name] = sha
    return refs


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A bare repository with packed refs, loose refs, a loose ref shadowing a packed
    one, and an annotated tag (its peeled line)."""
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    for n in range(3):
        (work / "f").write_text(str(n))
        subprocess.run(["git", "-C", str(work), "add", "f"], check=True)
        subprocess.run(
            ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t",
             "commit", "-q", "-m", f"c{n}"], check=True,
        )  # fmt: skip
    where = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(where)], check=True)
    for n in range(3):
        git(where, "update-ref", f"refs/heads/sessions/{n:032x}", f"HEAD~{n}")
    git(where, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "-m", "t", "v1", "HEAD")
    git(where, "pack-refs", "--all")
    git(where, "update-ref", f"refs/heads/sessions/{1:032x}", "HEAD")  # loose over packed
    git(where, "update-ref", f"refs/heads/sessions/{7:032x}", "HEAD~1")  # loose only
    git(where, "update-ref", "-d", f"refs/heads/sessions/{2:032x}")  # gone from packed
    return where


def test_a_plain_bare_repository_lists_as_ls_remote_does(bare, tmp_path):
    env = {"HOME": str(tmp_path / "nohome")}
    found = localremote.refs(str(bare), env)
    assert found == ls_remote(bare)
    assert localremote.refs("file://" + str(bare), env) == found


def test_anything_not_plainly_ordinary_is_left_to_git(bare, tmp_path):
    env = {"HOME": str(tmp_path / "nohome")}
    assert localremote.refs(str(bare), None) is None  # the environment is the caller's
    assert localremote.refs(os.path.relpath(bare), env) is None
    assert localremote.refs(f"ssh://host{bare}", env) is None
    assert localremote.refs(f"file://host{bare}", env) is None
    assert localremote.refs(str(tmp_path / "missing.git"), env) is None

    def changed(change) -> None:  # each on a fresh copy
        copy = tmp_path / "copy.git"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(bare, copy, symlinks=True)
        change(copy)
        assert localremote.refs(str(copy), env) is None, change

    changed(lambda c: git(c, "config", "uploadpack.hideRefs", "refs/heads/sessions"))
    changed(lambda c: git(c, "config", "include.path", "other"))
    changed(lambda c: git(c, "config", "extensions.refStorage", "reftable"))
    changed(lambda c: (c / "reftable").mkdir())
    changed(lambda c: (c / "objects" / "info" / "alternates").write_text("/elsewhere\n"))
    changed(lambda c: (c / "refs" / "odd").write_text("ref: refs/heads/main\n"))
    changed(lambda c: (c / "packed-refs").write_text("not a ref line\n"))
    changed(lambda c: (c / ".git").mkdir())
    changed(lambda c: (c / "shallow").write_text("0" * 40 + "\n"))

    gitconfig = tmp_path / "home" / ".gitconfig"
    gitconfig.parent.mkdir()
    gitconfig.write_text("[transfer]\n\thideRefs = refs/heads/sessions\n")
    assert localremote.refs(str(bare), {"HOME": str(gitconfig.parent)}) is None
    global_file = tmp_path / "global"
    global_file.write_text("[uploadpack]\n\thiderefs = refs/x\n")
    assert localremote.refs(str(bare), {**env, "GIT_CONFIG_GLOBAL": str(global_file)}) is None


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


def started(trace: Path) -> list[str]:
    """The git commands a `GIT_TRACE2_EVENT` file says were started."""
    import json

    out = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "start":
            out.append(" ".join(event["argv"]))
    return out


@pytest.mark.parametrize("form", ["path", "file://"])
def test_an_incremental_pull_from_a_path_packs_there_and_indexes_here(
    cli, home, tmp_path, monkeypatch, form
):
    """A session that moved on a plain repository here comes by the remote's
    `pack-objects` into our `index-pack` (no `upload-pack`, no `git fetch`), offered
    what both hold; a new session, with nothing in common, still goes by `git fetch`."""
    bare, url, sid = pushed(cli, home, tmp_path, form)
    other = tmp_path / "other"
    cli("--home", str(other), "remote", "add", "origin", url)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert results(summary(cli, other, "pull")) == {sid: "created"}
    assert any(" fetch " in c for c in started(trace))

    say(home, sid, "more")
    fresh = make(home, tag="b")
    cli("push", "--all")
    trace.unlink()
    assert results(summary(cli, other, "pull")) == {sid: "updated", fresh: "created"}
    assert any(" fetch " in c for c in started(trace))  # the new one: nothing in common

    say(home, sid, "again")
    cli("push", "--all")
    trace.unlink()
    assert results(summary(cli, other, "pull")) == {sid: "updated", fresh: "unchanged"}
    commands = started(trace)
    assert any("pack-objects" in c and str(bare) in c for c in commands), commands
    assert any("index-pack" in c for c in commands), commands
    assert not any(" fetch " in c or "upload-pack" in c for c in commands), commands
    assert contents(other, sid) == contents(home, sid)
    assert not list((other / "store.git" / "objects" / "pack").glob("*.keep"))
    fsck(other)


def test_an_unreadable_remote_commit_is_left_to_git_fetch(cli, home, tmp_path, monkeypatch):
    """The commit our tip names cannot be read in the remote (a damaged object): no
    local pack is tried, `git fetch` runs and decides, and nothing here is lost."""
    from gitsessions.cli.app import app

    bare, _url, sid = pushed(cli, home, tmp_path)
    other = tmp_path / "other"
    cli("--home", str(other), "remote", "add", "origin", str(bare))
    cli("--home", str(other), "pull")
    before = contents(other, sid)
    tip = git(bare, "rev-parse", f"refs/heads/sessions/{sid}").strip()
    say(home, sid, "more")
    cli("push", "--all")
    loose = bare / "objects" / tip[:2] / tip[2:]
    assert loose.exists()  # a small push is unpacked there
    loose.chmod(0o600)
    loose.write_bytes(b"not zlib")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    result = cli.runner.invoke(app, ["--home", str(other), "pull"], catch_exceptions=False)
    assert result.exit_code in (0, 1) and "Traceback" not in result.stderr
    commands = started(trace)
    assert any(" fetch " in c for c in commands), commands
    assert contents(other, sid) in (before, contents(home, sid))
    fsck(other)
