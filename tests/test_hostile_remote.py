"""Hostile remotes, built by hand with stock git plumbing (`hash-object`, `mktree`,
`commit-tree`, `update-ref` on a bare repository): what they send never deletes a
session that lives here without setting it aside (and forking what the remote never
had), and never puts an object into the store that `git fsck --strict` refuses."""

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import Cli, fsck, git
from tests.test_sync import contents, header, make, refs, results, say, summary

SESSIONS = "refs/heads/sessions/"
TRASH = "refs/gitsessions/trash/"


def head_of(home: Path, sid: str) -> str:
    """The head a session had, as this home's record of heads last names it."""
    lines = (home / "store.git" / "gitsessions" / "heads").read_text().split("\n")
    return [line.split()[1] for line in lines if line.startswith(sid)][-1]


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
    """The ids the home's deleted file lists (a learned one carries a mark after it)."""
    path = home / "store.git" / "gitsessions" / "deleted"
    words = path.read_text().split() if path.exists() else []
    return {word for word in words if len(word) == 32}


# -- hole 3: a remote's tombstones cost what lives here nothing but an id ----------------


def test_a_remote_tombstone_sets_aside_what_it_had_and_forks_what_it_never_had(
    cli: Cli, home, tmp_path
):
    """Tombstones win everywhere (issue 21), and a remote that lists ids it should not
    takes nothing: what it had is set aside for `undelete`, what it never had lives on
    as a fork that the next push sends."""
    here_only = [make(home, tag="mine one"), make(home, tag="mine two")]  # never pushed
    shared = make(home, tag="shared")
    before = {sid: contents(home, sid) for sid in [*here_only, shared]}
    origin = bare(tmp_path / "origin.git")
    cli("remote", "add", "origin", str(origin))
    cli("push", shared)
    gone = "f" * 32  # deleted on the remote, never here
    tombstone(origin, [*here_only, shared, gone])

    report = summary(cli, home, "pull")
    outcome = {o["id"]: o for o in report["sessions"]}
    assert {sid: outcome[sid]["result"] for sid in before} == dict.fromkeys(before, "deleted")
    assert "fork" not in outcome[shared]  # the remote had all of it
    forks = {sid: outcome[sid]["fork"] for sid in here_only}
    for sid, fork in forks.items():
        assert contents(home, fork) == before[sid]
        assert header(home, fork)["parent_id"] == sid
    assert set(refs(home / "store.git", SESSIONS)) == {SESSIONS + f for f in forks.values()}
    assert deleted_file(home) == {gone, *before}
    trash = refs(home / "store.git", "refs/gitsessions/trash/")
    assert set(trash) == {TRASH + shared}  # the forks hold the other two whole
    # the trash commit's one parent is the head the session had
    assert plumb(home / "store.git", "rev-parse", f"{trash[TRASH + shared]}^") == head_of(
        home, shared
    )
    assert results(summary(cli, home, "pull")) == {shared: "deleted here"}  # nothing more

    listed = json.loads(cli("undelete", "--json").stdout)
    assert [e["id"] for e in listed] == [shared]
    back = json.loads(cli("undelete", shared[:8], "--json").stdout)
    assert back["from"] == shared and contents(home, back["id"]) == before[shared]
    assert TRASH + shared not in refs(home / "store.git", "refs/gitsessions/trash/")

    # the forks and the undeleted session travel on as sessions, the ids of sessions
    # this home had as deleted; `gone`, never a session here, stays with origin
    mirror = bare(tmp_path / "mirror.git")
    cli("remote", "add", "mirror", str(mirror))
    cli("push", "mirror", "--all")
    third = tmp_path / "home-c"
    cli("--home", str(third), "remote", "add", "mirror", str(mirror))
    got = results(summary(cli, third, "pull"))
    assert got == {sid: "created" for sid in [*forks.values(), back["id"]]}
    assert deleted_file(third) == set(before)
    fsck(home)
    fsck(third)


def test_a_remote_tombstone_never_marks_a_session_whose_branch_is_lost_here(
    cli: Cli, home, tmp_path
):
    lost = make(home, tag="lost here")
    head = refs(home / "store.git", SESSIONS)[SESSIONS + lost]
    git(home / "store.git", "update-ref", "-d", SESSIONS + lost)  # lost, never deleted
    origin = bare(tmp_path / "origin.git")
    cli("remote", "add", "origin", str(origin))
    tombstone(origin, [lost])

    pulled = cli("pull", "origin")
    assert f"kept {lost[:8]}: deleted on origin, but its branch here is lost" in pulled.stderr
    assert lost not in deleted_file(home)
    repaired = json.loads(cli("doctor", "--repair", "--json").stdout)
    assert ("lost", lost) in {(f["kind"], f["subject"]) for f in repaired["findings"]}
    assert refs(home / "store.git", SESSIONS)[SESSIONS + lost] == head


# -- hole 5: what a pull brings passes the object checks before it joins the store -------


def _forge(repo: Path, sid: str, bad: list[tuple[bytes, bytes, str]]) -> str:
    """Move the remote's branch of `sid` to a child commit whose tree is its head's
    plus the `bad` entries (`(mode, name, hex sha)`), written as raw tree bytes with
    `hash-object --literally` (mktree refuses such names)."""
    head = plumb(repo, "rev-parse", SESSIONS + sid)
    entries = []
    for line in plumb(repo, "ls-tree", head).splitlines():
        meta, name = line.split("\t", 1)
        mode, _kind, sha = meta.split()
        entries.append((mode.encode().lstrip(b"0"), name.encode(), sha))
    entries += bad

    def key(entry: tuple[bytes, bytes, str]) -> bytes:
        return entry[1] + (b"/" if entry[0] == b"40000" else b"")

    raw = b"".join(m + b" " + n + b"\0" + bytes.fromhex(s) for m, n, s in sorted(entries, key=key))
    tree = plumb(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=raw)
    commit = plumb(repo, "commit-tree", tree, "-p", head, "-m", "turn 9: forged")
    plumb(repo, "update-ref", SESSIONS + sid, commit)
    return commit


def _hostile_entries(repo: Path) -> list[list[tuple[bytes, bytes, str]]]:
    """One bad entry set per forged session: `..`, a `.git` tree holding `config`,
    `../y`, and `.GIT` (another case)."""
    blob = plumb(repo, "hash-object", "-w", "--stdin", input=b"[core]\n\tbare = false\n")
    dot_git = plumb(repo, "mktree", input=f"100644 blob {blob}\tconfig\n".encode())
    return [
        [(b"100644", b"..", blob)],
        [(b"40000", b".git", dot_git)],
        [(b"100644", b"../y", blob)],
        [(b"40000", b".GIT", dot_git)],
    ]


def test_a_pull_refuses_sessions_whose_objects_fail_the_checks(cli: Cli, home, tmp_path):
    writer = tmp_path / "home-a"  # the remote's honest sessions come from here
    good = make(writer, tag="good")
    forged = [make(writer, tag=f"forged {n}") for n in range(4)]
    later = make(writer, tag="later")  # pulled honestly first, forged afterwards
    split = make(writer, tag="split")  # the same, and changed here meanwhile: diverged
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", later, split)
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == {later: "created", split: "created"}
    say(home, split, "only here")
    before = refs(home / "store.git", SESSIONS)
    sets = _hostile_entries(origin)
    _forge(origin, later, sets[0])  # a fast-forward whose tree holds `..`
    _forge(origin, split, sets[1])  # a diverged line: a fork would re-commit its tree
    # only sessions this store has a tip of: git fetch negotiates from those tips
    assert results(summary(cli, home, "pull")) == {later: "refused", split: "refused"}
    fsck(home)

    cli("--home", str(writer), "push", "--all", code=1)  # the two forged ones: diverged
    for sid, bad in zip(forged, sets, strict=True):
        _forge(origin, sid, bad)
    plain = cli("pull")
    assert "Traceback" not in plain.stderr + plain.stdout
    for sid in [*forged, later, split]:  # one line each
        assert [line.split("\t")[1] for line in plain.stdout.splitlines() if sid[:8] in line] == [
            "refused"
        ]
    report = summary(cli, home, "pull")
    got = {s["id"]: s for s in report["sessions"]}
    assert got[good]["result"] == "unchanged"  # the first of the two pulls created it
    for sid in [*forged, later, split]:
        assert got[sid]["result"] == "refused", got[sid]
        assert got[sid]["detail"].startswith("the remote's objects fail ")
        assert "\n" not in got[sid]["detail"]
    here = refs(home / "store.git")
    assert SESSIONS + good in here
    for sid in (later, split):
        assert here[SESSIONS + sid] == before[SESSIONS + sid]  # not moved, not forked
    assert len([r for r in here if r.startswith(SESSIONS)]) == len(before) + 1  # good
    assert not [r for r in here if any(sid in r for sid in forged)]  # nor tracked
    fsck(home)
    # a fresh home gets the honest ones and refuses the others the same way
    fresh = tmp_path / "home-c"
    cli("--home", str(fresh), "remote", "add", "origin", str(origin))
    got = results(summary(cli, fresh, "pull"))
    assert got == {good: "created", **{sid: "refused" for sid in [*forged, later, split]}}
    fsck(fresh)


def test_a_pull_refuses_tree_entries_git_allows_but_the_session_layout_does_not(
    cli: Cli, home, tmp_path
):
    """git's fsck lets a symlink, an executable file or a name with a space pass; the
    session layout holds none of them (store/treecheck.py), so the session is refused
    before any ref names it, and the honest one beside it comes."""
    writer = tmp_path / "home-a"
    good = make(writer, tag="good")
    odd = [make(writer, tag=f"odd {n}") for n in range(3)]
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    blob = plumb(origin, "hash-object", "-w", "--stdin", input=b"x\n")
    entries = [
        [(b"120000", b"link", blob)],
        [(b"100755", b"run", blob)],
        [(b"100644", b"a name", blob)],
    ]
    for sid, bad in zip(odd, entries, strict=True):
        _forge(origin, sid, bad)
    assert plumb(origin, "fsck", "--strict") == ""  # git itself finds nothing wrong
    cli("remote", "add", "origin", str(origin))
    report = summary(cli, home, "pull")
    got = {s["id"]: s for s in report["sessions"]}
    assert got[good]["result"] == "created"
    for sid in odd:
        assert got[sid]["result"] == "refused", got[sid]
        assert got[sid]["detail"].startswith("the remote's objects fail the checks")
    here = refs(home / "store.git")
    assert not [r for r in here if any(sid in r for sid in odd)]  # no branch, no tracking
    assert SESSIONS + good in here
    fsck(home)


def test_gc_removes_the_quarantine_a_killed_fetch_left(cli: Cli, home):
    make(home, tag="kept")
    left = home / "store.git" / "gitsessions" / "incoming-killed"
    (left / "objects" / "pack").mkdir(parents=True)
    (left / "objects" / "pack" / "pack-0.pack").write_bytes(b"half a pack")
    cli("gc")
    assert not left.exists()
