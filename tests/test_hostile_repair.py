"""`doctor --repair` restores or fast-forwards a branch only to a commit this home wrote
or accepted into that very session's branch, and only one pull would accept (a format
this build reads, the tree's session id the branch's).

Each attack is built with stock git plumbing in a bare remote, pulled into the home
(so its objects are in the store, as fetched packs are), then repaired."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from gitsessions.store import headlog
from gitsessions.values.ids import new_id
from tests.conftest import Cli, git
from tests.test_sync import make, pushed, results, summary

IDENTITY = {
    "GIT_AUTHOR_NAME": "attacker",
    "GIT_AUTHOR_EMAIL": "attacker@example.com",
    "GIT_COMMITTER_NAME": "attacker",
    "GIT_COMMITTER_EMAIL": "attacker@example.com",
    "GIT_AUTHOR_DATE": "2030-01-01T00:00:00Z",  # newer than anything of the home
    "GIT_COMMITTER_DATE": "2030-01-01T00:00:00Z",
}


def _plumb(bare: Path, *args: str, input: str | None = None) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(bare), *args],
        input=input,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **IDENTITY},
    )
    return done.stdout.strip()


def _forge(bare: Path, base: str, parent: str | None, trailer: str, **header: object) -> str:
    """A commit in `bare`: `base`'s tree with session.json's fields set to `header`,
    `parent` as its parent, `Session: <trailer>` in its message."""
    doc = json.loads(_plumb(bare, "cat-file", "blob", f"{base}:session.json"))
    blob = _plumb(bare, "hash-object", "-w", "--stdin", input=json.dumps({**doc, **header}))
    entries = [
        line for line in _plumb(bare, "ls-tree", base).splitlines()
        if not line.endswith("\tsession.json")
    ]  # fmt: skip
    entries.append(f"100644 blob {blob}\tsession.json")
    tree = _plumb(bare, "mktree", input="\n".join(entries) + "\n")
    message = f"turn 9: forged\n\nSession: {trailer}\nEvent: turn\n"
    parents = ["-p", parent] if parent else []
    return _plumb(bare, "commit-tree", tree, *parents, "-m", message)


def _advertise(bare: Path, sid: str, commit: str) -> None:
    _plumb(bare, "update-ref", f"refs/heads/sessions/{sid}", commit)


def _head(home: Path, sid: str) -> str | None:
    done = git(home / "store.git", "rev-parse", "-q", "--verify", f"refs/heads/sessions/{sid}",
               check=False)  # fmt: skip
    return done.stdout.strip() or None


def _in_store(home: Path, sha: str) -> bool:
    return git(home / "store.git", "cat-file", "-e", sha, check=False).returncode == 0


def _repair(cli: Cli, home: Path) -> dict:  # type: ignore[type-arg]
    result = cli("--home", str(home), "doctor", "--json", "--repair", code=0)
    return json.loads(result.stdout)


def _hijack(bare: Path, sid: str, head: str) -> str:
    """A commit built on `sid`'s head, naming `sid` in its trailer."""
    return _forge(bare, head, head, sid, title="HIJACKED by trailer")


def test_a_trailer_on_another_sessions_branch_never_moves_a_session(cli, home, tmp_path):
    bare, _url, sid = pushed(cli, home, tmp_path)
    head = _head(home, sid)
    assert head is not None
    hijack = _hijack(bare, sid, head)
    carrier = new_id()
    _advertise(bare, carrier, _forge(bare, head, hijack, carrier, id=carrier, title="carrier"))
    pulled = summary(cli, home, "pull")
    assert results(pulled) == {sid: "unchanged", carrier: "created"}
    assert _in_store(home, hijack)  # the attack's commit is here, on the carrier's branch
    _repair(cli, home)
    assert _head(home, sid) == head
    assert "HIJACKED" not in cli("--home", str(home), "list").stdout


def test_a_trailer_on_a_refused_branch_never_moves_a_session(cli, home, tmp_path):
    bare, _url, sid = pushed(cli, home, tmp_path)
    head = _head(home, sid)
    assert head is not None
    hijack = _hijack(bare, sid, head)
    carrier = new_id()
    _advertise(bare, carrier, hijack)  # its tree says it is `sid`: pull refuses it
    pulled = summary(cli, home, "pull")
    assert results(pulled) == {sid: "unchanged", carrier: "refused"}
    assert _in_store(home, hijack)
    _repair(cli, home)
    assert _head(home, sid) == head and _head(home, carrier) is None


def test_a_lagging_branch_is_restored_to_its_own_head_not_a_hijack(cli, home, tmp_path):
    bare, _url, sid = pushed(cli, home, tmp_path)
    head = _head(home, sid)
    assert head is not None
    hijack = _hijack(bare, sid, head)
    carrier = new_id()
    _advertise(bare, carrier, _forge(bare, head, hijack, carrier, id=carrier, title="carrier"))
    summary(cli, home, "pull")
    git(home / "store.git", "update-ref", f"refs/heads/sessions/{sid}", f"{head}~1")
    repaired = _repair(cli, home)
    assert {(f["kind"], f["subject"]) for f in repaired["findings"]} == {("behind", sid)}
    assert _head(home, sid) == head


def test_a_session_never_advertised_is_never_created(cli, home, tmp_path):
    bare, _url, sid = pushed(cli, home, tmp_path)
    head = _head(home, sid)
    assert head is not None
    ghost = new_id()
    hidden = _forge(bare, head, None, ghost, id=ghost, title="never advertised")
    carrier = new_id()
    _advertise(bare, carrier, _forge(bare, head, hidden, carrier, id=carrier, title="carrier"))
    assert results(summary(cli, home, "pull"))[carrier] == "created"
    assert _in_store(home, hidden)
    _repair(cli, home)
    assert _head(home, ghost) is None
    assert ghost[:8] not in cli("--home", str(home), "list").stdout


def test_a_newer_format_session_pull_refused_is_never_restored(cli, home, tmp_path):
    bare, _url, sid = pushed(cli, home, tmp_path)
    head = _head(home, sid)
    assert head is not None
    future = new_id()
    newer = _forge(bare, head, None, future, id=future, format="gitsessions.header/3")
    _advertise(bare, future, newer)
    pulled = summary(cli, home, "pull")
    assert results(pulled)[future] == "refused"
    assert _in_store(home, newer)
    _repair(cli, home)
    assert _head(home, future) is None


def test_a_pulled_session_whose_branch_was_lost_is_restored(cli, home, tmp_path):
    """What a pull accepted into a session's branch is this home's: repair restores it."""
    _bare, url, _sid = pushed(cli, home, tmp_path)
    there = tmp_path / "home-b"
    theirs = make(there, tag="b")
    cli("--home", str(there), "remote", "add", "origin", url)
    cli("--home", str(there), "push", "--all")
    assert results(summary(cli, home, "pull"))[theirs] == "created"
    head = _head(home, theirs)
    assert head is not None
    git(home / "store.git", "update-ref", "-d", f"refs/heads/sessions/{theirs}")
    repaired = _repair(cli, home)
    assert {(f["kind"], f["subject"]) for f in repaired["findings"]} == {("lost", theirs)}
    assert _head(home, theirs) == head


@pytest.mark.parametrize(
    ("field", "value"),
    [("format", "gitsessions.header/3"), ("id", "0" * 32)],
    ids=["newer format", "another session's tree"],
)
def test_a_recorded_head_pull_would_refuse_is_never_used(cli, home, field, value):
    """Even a head this home recorded (here planted beside the store) passes the
    checks a pull makes before a branch is moved to it."""
    store_path = home / "store.git"
    sid = make(home, tag="a")
    head = _head(home, sid)
    assert head is not None
    planted = _forge(store_path, head, head, sid, **{field: value})
    (store_path / "gitsessions").mkdir(mode=0o700, exist_ok=True)  # a build before the record
    with (store_path / "gitsessions" / "heads").open("a") as log:
        log.write(f"{sid} {planted}\n")
    git(store_path, "update-ref", f"refs/heads/sessions/{sid}", f"{head}~1")
    repaired = _repair(cli, home)
    assert {(f["kind"], f["subject"]) for f in repaired["findings"]} == {("behind", sid)}
    assert _head(home, sid) == head  # the newest head that passes, not the planted one


def test_a_damaged_record_costs_only_its_damaged_lines(tmp_path):
    store_path = tmp_path / "store.git"
    store_path.mkdir()
    sid, other = new_id(), new_id()
    headlog.record(store_path, [(sid, b"a" * 40)])
    with (store_path / "gitsessions" / "heads").open("ab") as log:
        log.write(b"x" * 100_000 + b"\n" + b"not a line\n" + other.encode() + b" zz\n")
    headlog.record(store_path, [(sid, b"b" * 40), (other, b"c" * 40)])
    assert headlog.heads(store_path) == {sid: [b"a" * 40, b"b" * 40], other: [b"c" * 40]}
    assert headlog.heads(store_path, keep=1)[sid] == [b"b" * 40]


def test_gc_keeps_of_the_record_what_repair_can_still_use(cli, home):
    kept, gone, older = make(home, turns=5, tag="kept"), make(home, tag="gone"), make(home)
    store_path = home / "store.git"
    log = store_path / "gitsessions" / "heads"
    lines = log.read_text().splitlines()
    assert len([line for line in lines if line.startswith(kept)]) == 6  # create + 5 turns
    cli("delete", gone, "--yes")
    log.write_text("".join(f"{line}\n" for line in lines if not line.startswith(older)))
    cli("gc")  # `older` stands for a session of a store older than the record
    heads = headlog.heads(store_path)
    assert heads == {kept: [_head(home, kept).encode()], older: [_head(home, older).encode()]}
    head = _head(home, kept)
    git(store_path, "update-ref", "-d", f"refs/heads/sessions/{kept}")
    repaired = _repair(cli, home)
    assert ("lost", kept) in {(f["kind"], f["subject"]) for f in repaired["findings"]}
    assert _head(home, kept) == head
