"""Stored formats are checked on read: data written by a newer gitsessions is refused in
one line and never rewritten; caches of another schema are rebuilt."""

import json
import sqlite3
import subprocess

from tests.conftest import git


def _plant_header_format(home, sid: str, fmt: str) -> str:
    """A new commit on the session whose session.json names `fmt` (stock git plumbing)."""
    store = home / "store.git"
    ref = f"refs/heads/sessions/{sid}"
    header = json.loads(git(store, "cat-file", "-p", f"{ref}:session.json").stdout)
    header["format"] = fmt
    blob = subprocess.run(
        ["git", "--git-dir", str(store), "hash-object", "-w", "--stdin"],
        input=json.dumps(header), capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    entries = git(store, "ls-tree", ref).stdout.splitlines()
    entries = [
        f"100644 blob {blob}\tsession.json" if e.endswith("\tsession.json") else e for e in entries
    ]
    tree = subprocess.run(
        ["git", "--git-dir", str(store), "mktree"],
        input="\n".join(entries) + "\n", capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    message = f"future\n\nSession: {sid}\nEvent: turn\n"
    commit = subprocess.run(
        ["git", "--git-dir", str(store), "commit-tree", tree, "-p", ref, "-m", message],
        capture_output=True, text=True, check=True,
        env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
             "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"},
    ).stdout.strip()  # fmt: skip
    git(store, "update-ref", ref, commit)
    return commit


def test_a_session_of_a_newer_format_is_refused_and_never_rewritten(cli, home, make_session):
    future = make_session(turns=1, title="from the future")
    other = make_session(turns=1, title="today")
    planted = _plant_header_format(home, future.id, "gitsessions.header/3")
    for args in (["show", future.id], ["rename", future.id, "x"], ["pin", future.id, "n"]):
        result = cli(*args, code=1)
        assert result.stderr.strip() == (
            f"error: session {future.id[:8]} was written by a newer gitsessions (format 3); "
            "upgrade to read it"
        )
    assert (
        git(home / "store.git", "rev-parse", f"refs/heads/sessions/{future.id}").stdout.strip()
        == planted
    )
    rows = {row["id"]: row for row in cli.json("list")}  # the others are still listed
    assert rows[other.id]["title"] == "today"
    assert "format 3" in rows[future.id].get("broken", "")


def test_a_header_without_a_known_format_is_damage(cli, home, make_session):
    head = make_session(turns=1)
    _plant_header_format(home, head.id, "something else")
    assert "gitsessions doctor" in cli("info", head.id, code=1).stderr


def test_a_store_of_a_newer_format_is_refused(cli, home, make_session):
    make_session(turns=1)
    assert git(home / "store.git", "config", "gitsessions.formatVersion").stdout.strip() == "2"
    git(home / "store.git", "config", "gitsessions.formatVersion", "3")
    result = cli("list", code=1)
    assert "this store was written by a newer gitsessions (format 3)" in result.stderr
    git(home / "store.git", "config", "gitsessions.formatVersion", "2")


def test_a_store_without_a_format_gets_ours(cli, home, make_session):
    make_session(turns=1)
    git(home / "store.git", "config", "--unset", "gitsessions.formatVersion")
    cli("list")
    assert git(home / "store.git", "config", "gitsessions.formatVersion").stdout.strip() == "2"


def test_a_cache_of_another_schema_is_rebuilt(cli, home, make_session):
    head = make_session(turns=1, title="kept")
    cli("list")
    with sqlite3.connect(home / "index.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] != 0
        db.execute("INSERT INTO headers (id, head, header, listed) VALUES ('x', 'y', '{}', '{}')")
        db.execute("PRAGMA user_version = 7")
    rows = cli.json("list")
    assert [r["id"] for r in rows] == [head.id]
    with sqlite3.connect(home / "index.sqlite") as db:
        assert db.execute("SELECT count(*) FROM headers WHERE id = 'x'").fetchone()[0] == 0
