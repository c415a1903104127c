"""A session deleted in one home is deleted in every home that pulls (issue 21: tombstones
win everywhere), and nothing is lost: a pull sets it aside (`refs/gitsessions/trash/<id>`)
for `undelete`, forks first what the remote never had, leaves one a running agent holds,
and `--here` touches only this project's; `gc` drops what was set aside 30 days ago."""

import json
import subprocess
import time
from pathlib import Path

from gitsessions.store import trash
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import SessionStore
from tests.conftest import Cli, fsck
from tests.fake_openai import FakeOpenAI
from tests.test_hostile_remote import bare, deleted_file, tombstone
from tests.test_lifecycle_hooks import write_hook
from tests.test_project_identity import (
    exec_turn,
    git,
    gs,
    project_with_history,
    sessions_remote,
)
from tests.test_sync import contents, make, refs, results, say, summary

SESSIONS = "refs/heads/sessions/"
TRASH = "refs/gitsessions/trash/"


def shared_with(cli: Cli, home: Path, other: Path, origin: Path, *tags: str) -> list[str]:
    """Sessions made in `home`, pushed to `origin` and pulled into `other`."""
    ids = [make(home, tag=tag) for tag in tags]
    cli("remote", "add", "origin", str(origin))
    cli("push", "--all")
    cli("--home", str(other), "remote", "add", "origin", str(origin))
    assert set(results(summary(cli, other, "pull")).values()) == {"created"}
    return ids


def test_a_delete_elsewhere_deletes_here_and_what_was_added_here_lives_on_as_a_fork(
    cli: Cli, home, tmp_path
):
    other = tmp_path / "home-b"
    origin = bare(tmp_path / "origin.git")
    plain, grown = shared_with(cli, home, other, origin, "plain", "grown")
    say(other, grown, "written on b after the pull")
    cli("delete", plain, "--yes")
    cli("delete", grown, "--yes")
    assert results(summary(cli, home, "push", "--prune")) == {plain: "pruned", grown: "pruned"}

    pulled = {o["id"]: o for o in summary(cli, other, "pull")["sessions"]}
    assert pulled[plain]["result"] == "deleted" and "fork" not in pulled[plain]
    assert pulled[grown]["result"] == "deleted"
    fork = pulled[grown]["fork"]
    assert "written on b after the pull" in contents(other, fork)
    assert set(refs(other / "store.git", SESSIONS)) == {SESSIONS + fork}
    assert set(refs(other / "store.git", TRASH)) == {TRASH + plain}  # the fork holds the other
    assert deleted_file(other) >= {plain, grown}

    # the fork goes with the next push; the first home gets it, the ids stay deleted
    assert results(summary(cli, other, "push", "--all")) == {fork: "new"}
    assert results(summary(cli, home, "pull")) == {fork: "created"}
    assert "written on b after the pull" in contents(home, fork)
    for where in (home, other):
        assert json.loads(cli("--home", str(where), "doctor", "--json").stdout)["healthy"]
        fsck(where)


def test_a_pull_calls_the_fork_and_delete_hooks_for_what_it_forked_and_deleted(
    cli: Cli, home, tmp_path
):
    other = tmp_path / "home-b"
    origin = bare(tmp_path / "origin.git")
    plain, grown, both = shared_with(cli, home, other, origin, "plain", "grown", "both")
    say(other, grown, "written on b after the pull")
    say(home, both, "written on a")
    say(other, both, "written on b")
    cli("delete", plain, "--yes")
    cli("delete", grown, "--yes")
    cli("push", "--prune", "--all")
    log = other / "hooks.jsonl"
    for event in ("post-fork", "post-delete"):
        write_hook(other, event, f'cat >> "{log}"\necho >> "{log}"\n')
    heads = refs(other / "store.git", SESSIONS)

    pulled = {o["id"]: o for o in summary(cli, other, "pull")["sessions"]}
    assert (pulled[both]["result"], pulled[grown]["result"]) == ("forked", "deleted")
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by = {(c["event"], c["session"]): c for c in calls}
    forks = {pulled[grown]["fork"]: grown, pulled[both]["fork"]: both}
    assert sorted(by) == sorted(
        [("post-delete", plain), ("post-delete", grown)] + [("post-fork", f) for f in forks]
    )
    for sid in (plain, grown):
        deleted = by[("post-delete", sid)]
        assert (deleted["commit"], deleted["remote"]) == (heads[SESSIONS + sid], "origin")
        assert deleted["fork"] == pulled[sid].get("fork")
    after = refs(other / "store.git", SESSIONS)
    for fork, parent in forks.items():
        made = by[("post-fork", fork)]
        assert (made["parent_id"], made["remote"]) == (parent, "origin")
        assert made["commit"] == after[SESSIONS + fork]


def test_a_session_an_agent_holds_is_left_and_not_pushed_until_a_pull_deletes_it(
    cli: Cli, home, tmp_path
):
    other = tmp_path / "home-b"
    origin = bare(tmp_path / "origin.git")
    (sid,) = shared_with(cli, home, other, origin, "held")
    cli("--home", str(other), "delete", sid, "--yes")
    cli("--home", str(other), "push", "--prune")

    with Lease(home, sid):  # a running agent
        pulled = {o["id"]: o for o in summary(cli, home, "pull")["sessions"]}
        assert pulled[sid]["result"] == "busy"
        assert "deleted on origin; in use by a running agent" in pulled[sid]["detail"]
        assert SESSIONS + sid in refs(home / "store.git", SESSIONS)
        pushed = summary(cli, home, "push", sid, code=1)
        assert results(pushed) == {sid: "deleted there"}
        assert SESSIONS + sid not in refs(origin)  # not re-created there
    after = {o["id"]: o for o in summary(cli, home, "pull")["sessions"]}
    assert after[sid]["result"] == "deleted"
    assert "fork" not in after[sid]  # the remote had it all, as the busy pull still knew
    assert set(refs(home / "store.git", TRASH)) == {TRASH + sid}


def test_undelete_lists_brings_back_and_refuses_what_is_not_set_aside(cli: Cli, home, tmp_path):
    other = tmp_path / "home-b"
    origin = bare(tmp_path / "origin.git")
    (sid,) = shared_with(cli, home, other, origin, "wanted back")
    before = contents(other, sid)
    cli("delete", sid, "--yes")
    cli("push", "--prune")
    cli("--home", str(other), "pull")

    listed = cli("--home", str(other), "undelete")
    assert sid[:8] in listed.stdout and "session wanted back" in listed.stdout
    assert "deleted on origin" in listed.stdout
    missing = cli("--home", str(other), "undelete", "0000", code=1)
    assert missing.stderr.strip() == (
        "error: nothing set aside matches '0000' (`gitsessions undelete` lists it)"
    )
    short = cli("--home", str(other), "undelete", sid[:2], code=2)  # an id's 4+ hex, as help says
    assert "expected 4 to 32 hex characters" in short.stderr
    back = json.loads(cli("--home", str(other), "undelete", sid[:6], "--json").stdout)
    assert back["from"] == sid and contents(other, back["id"]) == before
    assert cli("--home", str(other), "undelete").stderr.strip() == "nothing is set aside"
    # it travels as a new session; its old id stays deleted everywhere
    assert results(summary(cli, other, "push", "--all")) == {back["id"]: "new"}
    assert results(summary(cli, home, "pull")) == {back["id"]: "created"}
    fsck(other)


def test_gc_drops_what_was_set_aside_more_than_30_days_ago(cli: Cli, home, tmp_path):
    old, recent = make(home, tag="old"), make(home, tag="recent")
    origin = bare(tmp_path / "origin.git")
    cli("remote", "add", "origin", str(origin))
    cli("push", "--all")
    tombstone(origin, [old, recent])
    assert results(summary(cli, home, "pull")) == {old: "deleted", recent: "deleted"}
    store = SessionStore(home, background_maintenance=False)
    try:
        entry = next(e for e in trash.entries(store.git) if e.id == old)
        kept = next(e for e in trash.entries(store.git) if e.id == recent)
        month_ago = int(time.time()) - (trash.KEEP_DAYS + 1) * 86400
        trash.set_aside(store.git, old, entry.head, entry.why, month_ago)
    finally:
        store.close()

    done = cli("gc")
    assert "dropped 1 session a pull set aside more than 30 days ago" in done.stderr
    assert set(refs(home / "store.git", TRASH)) == {TRASH + recent}

    def present(sha: bytes) -> bool:
        probe = ["git", "--git-dir", str(home / "store.git"), "cat-file", "-e", sha.decode()]
        return subprocess.run(probe, capture_output=True).returncode == 0

    assert not present(entry.head) and present(kept.head)  # purged, and kept
    assert "dropped" not in cli("gc").stderr
    fsck(home)


def test_pull_here_deletes_only_this_projects_sessions(tmp_path):
    proj, other = project_with_history(tmp_path, "proj"), project_with_history(tmp_path, "other")
    clone, other_clone = tmp_path / "proj", tmp_path / "other"
    git("clone", "-q", str(proj), str(clone))
    git("clone", "-q", str(other), str(other_clone))
    home = tmp_path / "home"
    sessions = sessions_remote(tmp_path, home)
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, home, clone, "this project")
        theirs = exec_turn(server, home, other_clone, "the other project")
    assert gs(home, tmp_path, "push", "--all").returncode == 0
    tombstone(sessions, [mine, theirs])

    pulled = gs(home, clone, "pull", "--here", "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert {o["id"]: o["result"] for o in json.loads(pulled.stdout)["sessions"]} == {
        mine: "deleted"
    }
    assert set(refs(home / "store.git", SESSIONS)) == {SESSIONS + theirs}
    whole = gs(home, tmp_path, "pull", "--json")
    assert {o["id"]: o["result"] for o in json.loads(whole.stdout)["sessions"]} == {
        mine: "deleted here",
        theirs: "deleted",
    }


def test_a_delete_hook_that_cannot_start_is_said_once_for_every_session_a_pull_deletes(
    cli: Cli, home, tmp_path
):
    """Issue 31, item 4: the cause every hook run of a pull shares (a hook file that is
    not executable) is one line with the count, not one line per session."""
    other = tmp_path / "home-b"
    origin = bare(tmp_path / "origin.git")
    ids = shared_with(cli, home, other, origin, "one", "two", "three")
    for sid in ids:
        cli("delete", sid, "--yes")
    cli("push", "--prune")
    hook = write_hook(other, "post-delete", "exit 0\n", mode=0o644)
    pulled = cli("--home", str(other), "pull")
    lines = [line for line in pulled.stderr.splitlines() if line.startswith("hook ")]
    assert lines == [
        f"hook post-delete could not start: {hook} is not executable; nothing was lost"
        " (see `gitsessions hooks list`) (the same for 3 sessions)"
    ], pulled.stderr
    assert refs(other / "store.git", SESSIONS) == {}
