"""Ref names from a remote (issue 42): a hostile server may advertise any name at any
commit, and a repository's `HEAD` may name a session branch. Only the names of the
store's own layout are taken; a bad one is one line naming the remote, the rest of the
pull goes on, no ref is ever read as a file from a remote's name, and nothing the
pull writes breaks stock git, dulwich or `doctor`.

A hostile advertisement comes from `git_http(extra=...)`: stock `git http-backend`
serving a real repository, its ref listing ending with names no repository can hold."""

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitsessions.store.refnames import all_keep_rules, breaks_rules
from tests.conftest import Cli, fsck, git
from tests.git_servers import git_http
from tests.test_hostile_remote import bare, plumb, tombstone
from tests.test_sync import make, refs, results, say, summary

SESSIONS = "refs/heads/sessions/"


def _served(tmp_path: Path, cli: Cli, writer: Path, *tags: str) -> tuple[Path, list[str]]:
    """A bare `origin.git` under `tmp_path / "served"` holding sessions made in `writer`."""
    ids = [make(writer, tag=tag) for tag in tags]
    origin = bare(tmp_path / "served" / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    return origin, ids


def _packed_names(home: Path) -> list[bytes]:
    path = home / "store.git" / "packed-refs"
    lines = path.read_bytes().splitlines() if path.exists() else []
    return [line.split(b" ", 1)[1] for line in lines if line and line[:1] not in b"#^"]


def test_a_hostile_ref_name_is_one_line_and_never_reaches_the_store(
    cli: Cli, home: Path, tmp_path: Path
):
    """The names sit at the commits a pull fetches (a new session's head and the
    tombstone commit), so before the fix both went into the remote-tracking refs."""
    origin, (sid,) = _served(tmp_path, cli, tmp_path / "writer", "shared")
    head = plumb(origin, "rev-parse", SESSIONS + sid).encode()
    dead = tombstone(origin, ["f" * 32]).encode()
    hostile = [
        (dead, b"refs/heads/sessions/../../../../x"),
        (dead, b"refs/gitsessions/tombstones\x1b[31m"),
        (head, b"refs/heads/sessions/" + b"a" * 300),
        (head, b"refs/heads/sessions/e\x1b]0;pwned\x07"),
        (head, b"refs/gitsessions/projects/../../heads/x"),
    ]
    with git_http(tmp_path / "served", extra=hostile) as base:
        cli("remote", "add", "origin", f"{base}/origin.git")
        pulled = cli("pull")
        assert "Traceback" not in pulled.stdout + pulled.stderr
        said = [line for line in pulled.stderr.splitlines() if "ref name" in line]
        assert len(said) == 1 and "origin" in said[0], pulled.stderr
        assert "\x1b" not in pulled.stderr and "\x07" not in pulled.stderr
        assert "refs/heads/sessions/../../../../x" in said[0]
        report = summary(cli, home, "pull")
        assert len(report["ignored_refs"]) == len(hostile)
    assert refs(home / "store.git", SESSIONS) == {SESSIONS + sid: head.decode()}
    names = _packed_names(home)
    assert names and not [n for n in names if b".." in n or b"\x1b" in n or len(n) > 255]
    assert not list((home / "store.git").parent.glob("x"))
    for command in (["list"], ["gc"], ["doctor"]):
        cli(*command)
    say(home, sid, "still writable")  # dulwich reads packed-refs: no PackedRefsException
    git(home / "store.git", "for-each-ref")  # stock git reads them
    fsck(home)


@contextmanager
def _guarded_fifo(path: Path) -> Iterator[list[bool]]:
    """A FIFO at `path`, and a thread that opens its other end: it returns when a
    reader opens the FIFO (`opened` then says so) and lets that reader go at once
    (end of file), so a regression fails instead of hanging. On leaving, the test's
    own open releases the thread."""
    os.mkfifo(path)
    opened: list[bool] = []
    done = threading.Event()

    def writer() -> None:
        with open(path, "wb"):
            if not done.is_set():
                opened.append(True)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        done.set()
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        thread.join(timeout=30)
        os.close(fd)


def test_a_ref_name_never_reads_a_file(cli: Cli, home: Path, tmp_path: Path):
    """`refs/heads/sessions/../../..` up to `/` and down to a FIFO, at the head of a
    session new here: a pull once read the file (a FIFO hung it for ever, holding
    the store's lock; `/dev/zero` filled the memory)."""
    make(home, tag="mine")  # so `refs/heads/sessions/` is a folder here, to climb out of
    origin, (sid,) = _served(tmp_path, cli, tmp_path / "writer", "new here")
    head = plumb(origin, "rev-parse", SESSIONS + sid).encode()
    fifo = tmp_path / "fifo"
    climb = b"refs/heads/sessions/" + b"../" * 40 + os.fsencode(fifo).lstrip(b"/")
    served = tmp_path / "served"
    with _guarded_fifo(fifo) as opened, git_http(served, extra=[(head, climb)]) as base:
        cli("remote", "add", "origin", f"{base}/origin.git")
        pulled = cli("pull")
        assert not opened, "the pull opened the FIFO a ref name pointed at"
    assert "Traceback" not in pulled.stdout + pulled.stderr
    assert f"{sid[:8]}\tcreated" in pulled.stdout
    assert "origin" in next(line for line in pulled.stderr.splitlines() if "ref name" in line)


def test_a_remote_whose_head_names_a_session_branch_pulls_as_any_other(
    cli: Cli, home: Path, tmp_path: Path
):
    """`git symbolic-ref HEAD refs/heads/sessions/<id>` on the remote: its `HEAD` is
    listed at a session's commit, and a pull once looked it up here ("store.git/HEAD
    does not hold a commit id"). A remote's HEAD is nothing to a pull."""
    origin, (first, second) = _served(tmp_path, cli, tmp_path / "writer", "one", "two")
    plumb(origin, "symbolic-ref", "HEAD", SESSIONS + first)
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == {first: "created", second: "created"}
    say(tmp_path / "writer", first, "later")
    cli("--home", str(tmp_path / "writer"), "push", "--all")
    pulled = cli("pull")
    assert f"{first[:8]}\tupdated" in pulled.stdout and "ref name" not in pulled.stderr
    assert (home / "store.git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert json.loads(cli("doctor", "--json").stdout)["healthy"]


def test_doctor_finds_and_repair_removes_a_dangerous_ref_name(cli: Cli, home: Path):
    """A store an earlier build bricked: a dangerous name in `packed-refs` and a loose
    ref whose file name holds an escape. `doctor` names both, `--repair` sets them
    aside without a traceback, and every session is still there."""
    sid = make(home, tag="kept")
    store = home / "store.git"
    git(store, "pack-refs", "--all")
    head = refs(store, SESSIONS)[SESSIONS + sid]
    packed = store / "packed-refs"
    packed.write_bytes(
        packed.read_bytes() + f"{head} refs/remotes/origin/sessions/../../../../x\n".encode()
    )
    loose = store / "refs" / "remotes" / "origin" / "sessions" / "e\x1b[1m"
    loose.parent.mkdir(parents=True)
    loose.write_text(head + "\n")
    assert git(store, "for-each-ref", check=False).returncode != 0  # stock git refuses it

    found = cli("doctor", "--json", code=1)
    subjects = {f["subject"]: f for f in json.loads(found.stdout)["findings"]}
    assert {f["kind"] for f in subjects.values()} == {"refs"}
    assert "store.git/packed-refs" in subjects
    assert any("\\x1b" in s for s in subjects), subjects
    refused = cli("rename", sid[:8], "renamed", code=1)  # dulwich's refusal, in one line
    assert refused.stderr.startswith("error: ") and "doctor --repair" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    repaired = cli("doctor", "--repair")
    assert "Traceback" not in repaired.stdout + repaired.stderr
    assert json.loads(cli("doctor", "--json").stdout)["healthy"]
    assert not loose.exists() and b".." not in packed.read_bytes()
    # the rename's commit, recorded before dulwich refused the move, is its head now
    assert json.loads(cli("info", sid[:8], "--json").stdout)["title"] == "renamed"
    say(home, sid, "after the repair")
    git(store, "for-each-ref")  # stock git reads the store again


def test_names_checked_together_are_judged_as_each_alone():
    """`all_keep_rules` (one search over every name a `packed-refs` write holds) says
    False exactly when `breaks_rules` finds one of them bad, wherever it sits."""
    good = [b"refs/heads/sessions/" + b"a" * 32, "refs/é".encode(), b"r" * 255, b"refs/a.lockx"]
    bad = [b"refs/a\nb", b"refs/x/../y", b"refs/a b", b"refs/a.lock", b"refs/a.lock/b",
           b"refs/a/", b"refs/a.", b"@", b"", b"/refs", b".refs", b"refs//a", b"refs/.a",
           b"refs/a@{b", b"refs/\x7f", b"r" * 256, b"refs/\xff", b"refs/a~", b"refs/a\\b",
           b"refs/a\tb", b"refs/a\n"]  # fmt: skip
    assert all_keep_rules(good)
    for name in good + bad:
        assert all_keep_rules([name]) == (breaks_rules(name) is None), name
        assert all_keep_rules([*good, name, *good]) == (breaks_rules(name) is None), name


def test_every_short_name_is_judged_together_as_alone():
    """Parity of the two searches over every name of up to four pieces, each piece a
    character or a part one of git's rules looks for: a rule of `breaks_rules` that
    `all_keep_rules` did not hold (or held differently) makes one of them disagree."""
    pieces = [b"a", b".", b"/", b"@", b"{", b".lock", b"\n", b" ", b"~", b"\xff", b"\xc3\xa9"]
    found = {b""}
    for _ in range(4):
        found |= {name + piece for name in found for piece in pieces}
    names = sorted(found)
    assert len(names) > 10_000 and b"a/.lock" in names
    disagree = [n for n in names if all_keep_rules([b"a", n, b"b"]) != (breaks_rules(n) is None)]
    assert disagree == []
    assert all_keep_rules([n for n in names if breaks_rules(n) is None])
