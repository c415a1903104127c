"""Every failure of the disk or of a damaged store is one line and exit 1, never a
traceback, and changes nothing: a read-only home, a full disk, a truncated pack, a bad
`store.git/config`, a corrupt loose object. The CLI runs in this process (a traceback
would be an exception raised here): the faults, not the process, are the subject."""

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git, loosen, run_gitsessions

ROOT = os.geteuid() == 0


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A fresh tmpfs of `size` at `path` (the test is skipped where it cannot be mounted)."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0700"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)]).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, chunk: int = 65536) -> Path:
    """A file written into `disk` until it is full (the last chunk that did not fit
    dropped); remove it to free the room."""
    filler = disk / "filler"
    with contextlib.suppress(OSError), open(filler, "wb") as f:
        while True:
            f.write(b"x" * chunk)
            f.flush()
    return filler


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
    return errors[0]


def _make(env: dict[str, str], count: int = 2) -> list[str]:
    """`count` sessions imported, in this process: the faults come after."""
    ids = []
    for n in range(count):
        done = run_gitsessions("import", "-", env=env, input=_export(n))
        assert done.returncode == 0, done.stderr
        ids.append(done.stdout.strip().split()[-1])
    return ids


def _export(n: int) -> str:
    import json

    return json.dumps(
        {
            "format": "gitsessions.session/1",
            "id": uuid.uuid4().hex,
            "title": f"fault {n}",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "messages": [],
            "transcript": [
                {"role": "user", "content": f"hello {n}"},
                {"role": "assistant", "content": "hi"},
            ],
        }
    )


def _snapshot(home: Path) -> str:
    return git(home / "store.git", "for-each-ref", "--format=%(objectname) %(refname)").stdout


needs_root = pytest.mark.skipif(not ROOT, reason="mounting a tmpfs needs root")


@needs_root
def test_a_read_only_home_gives_one_line_errors(tmp_path):
    with tmpfs(tmp_path / "ro", "8m") as home:
        env = {**os.environ, "GITSESSIONS_HOME": str(home)}
        ids = _make(env)
        assert run_gitsessions("list", env=env).returncode == 0
        before = _snapshot(home)
        subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
        short = ids[0][:8]
        for args in (
            ["rename", short, "new title"],
            ["pin", short, "a note"],
            ["fork", short],
            ["archive", short],
            ["delete", short, "--yes"],
            ["gc"],
            ["import", "-"],
            ["exec", "--resume", short, "hello"],
        ):
            result = run_gitsessions(*args, env=env, input=_export(7))
            line = _one_line(result)
            assert "Read-only file system" in line and "gitsessions doctor" in line, (args, line)
        # reading still works (export logs itself, so it cannot), and nothing changed
        assert run_gitsessions("info", short, env=env).returncode == 0
        assert "hello 0" in run_gitsessions("show", short, env=env).stdout
        assert "Read-only file system" in _one_line(run_gitsessions("export", short, env=env))
        assert _snapshot(home) == before


@needs_root
def test_a_full_disk_gives_one_line_errors_and_keeps_every_session(tmp_path):
    with tmpfs(tmp_path / "full", "1m") as home:
        env = {**os.environ, "GITSESSIONS_HOME": str(home)}
        ids = _make(env)
        before = _snapshot(home)
        filler = fill(home)
        for args in (["rename", ids[0][:8], "t" * 50], ["pin", ids[1][:8], "n" * 4000]):
            result = run_gitsessions(*args, env=env)
            if result.returncode == 0:
                continue  # it fit in what was left
            line = _one_line(result)
            assert "No space left on device" in line and "gitsessions doctor" in line
        after = _snapshot(home)
        for line in before.splitlines():  # every session still there, at its head or newer
            assert line.split()[1] in after
        filler.unlink()
        assert run_gitsessions("rename", ids[0][:8], "after", env=env).returncode == 0
        assert git(home / "store.git", "fsck", "--strict", check=False).returncode == 0


@needs_root
def test_a_lease_whose_pid_cannot_be_written_is_let_go(tmp_path):
    """On a full disk a lease cannot write its pid: it is refused, and not held, so a
    long-lived process (a chat, a server) can take it once there is room again."""
    from gitsessions.store.lease import Lease

    with tmpfs(tmp_path / "full", "1m") as home:
        sid = uuid.uuid4().hex
        (home / "leases").mkdir()
        (home / "leases" / f"{sid}.lock").touch()
        fill(home)
        with contextlib.suppress(OSError), open(home / "crumbs", "wb", buffering=0) as f:
            while True:  # what the 64 KiB chunks left, a byte at a time
                f.write(b"x")
        with pytest.raises(OSError, match="No space left"):
            Lease(home, sid)
        (home / "filler").unlink()
        with Lease(home, sid) as lease:  # not "in use by another gitsessions process"
            assert lease.path.read_text() == str(os.getpid())


def test_a_truncated_pack_is_one_line_and_named_by_every_reader(home, make_session):
    head = make_session(turns=3)
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    assert run_gitsessions("gc", env=env).returncode == 0
    pack = next((home / "store.git" / "objects" / "pack").glob("*.pack"))
    saved = pack.read_bytes()
    pack.chmod(0o600)
    pack.write_bytes(saved[: len(saved) // 2])
    line = _one_line(run_gitsessions("show", head.id[:8], env=env))
    assert "gitsessions doctor" in line
    # `gc` filled the header cache (it looks up the projects the sessions worked in), and
    # a warm row is read without the pack; with the cache cold (another machine's first
    # `list`, or the cache rebuilt) the header is read from the pack
    (home / "index.sqlite").unlink(missing_ok=True)
    listed = run_gitsessions("list", env=env)  # the others would still be listed
    assert listed.returncode == 0 and "doctor" in listed.stdout
    searched = run_gitsessions("search", "question", env=env)
    assert searched.returncode == 0 and "doctor" in searched.stderr
    gc = run_gitsessions("gc", env=env)
    assert gc.returncode == 0 and "nothing was packed or purged" in gc.stderr
    assert pack.read_bytes() == saved[: len(saved) // 2]  # gc did not touch it
    doctor = run_gitsessions("doctor", env=env)
    assert doctor.returncode == 1 and head.id in doctor.stdout
    pack.write_bytes(saved)


def test_a_bad_store_config_is_one_line(home, make_session):
    make_session(turns=1)
    config = home / "store.git" / "config"
    saved = config.read_bytes()
    config.write_text("[core\nthis is not = = config\n")
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    line = _one_line(run_gitsessions("list", env=env))
    assert "config" in line and "gitsessions doctor" in line
    config.write_bytes(saved)


def test_a_corrupt_loose_object_is_one_line(home, make_session):
    head = make_session(turns=1)
    loosen(home / "store.git")
    sha = head.tree.decode()
    obj = home / "store.git" / "objects" / sha[:2] / sha[2:]
    saved = obj.read_bytes()
    obj.chmod(0o600)
    obj.write_bytes(b"\x78\x9c garbage")
    env = {**os.environ, "GITSESSIONS_HOME": str(home)}
    line = _one_line(run_gitsessions("show", head.id[:8], env=env))
    assert sha[:12] in line and "gitsessions doctor" in line
    obj.write_bytes(saved)
    shutil.rmtree(home / "leases", ignore_errors=True)
