"""Revisions: each form parsed (pure), found in a real store, and every bad one refused in
one line with exit code 2."""

import pytest

from gitsessions.services.sessions import manage
from gitsessions.services.sessions.revisions import resolve
from gitsessions.store.sessions import Change, touch
from gitsessions.values.revision import BadRevision, Revision, parse_revision
from tests.diff_helpers import commit, new_session, turn

ID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ID, Revision(ID, ID)),
        ("0123", Revision("0123", "0123")),
        (" ABCD ", Revision(" ABCD ", "abcd")),
        ("0123@turn:3", Revision("0123@turn:3", "0123", turn=3)),
        ("0123@deadbeef", Revision("0123@deadbeef", "0123", commit="deadbeef")),
        ("0123@" + "a" * 40, Revision("0123@" + "a" * 40, "0123", commit="a" * 40)),
        ("0123~2", Revision("0123~2", "0123", back=2)),
        ("0123~", Revision("0123~", "0123", back=1)),
        ("0123~1~2", Revision("0123~1~2", "0123", back=3)),
        ("0123@turn:4~1", Revision("0123@turn:4~1", "0123", turn=4, back=1)),
        ("0123@cafe~2", Revision("0123@cafe~2", "0123", commit="cafe", back=2)),
    ],
)
def test_every_form_parses(text, expected):
    assert parse_revision(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty revision"),
        ("abc", "invalid session id"),
        ("xyz12345", "invalid session id"),
        ("@turn:1", "names no session"),
        ("0123@", "after @ comes turn:N"),
        ("0123@turn:", "after @ comes turn:N"),
        ("0123@turn:0", "numbered from 1"),
        ("0123@turn:x", "after @ comes turn:N"),
        ("0123@abc", "after @ comes turn:N"),
        ("0123@" + "a" * 41, "after @ comes turn:N"),
        ("0123~x", "~ takes a number"),
        ("0123~2x", "~ takes a number"),
        ("0123@turn:1@turn:2", "after @ comes turn:N"),
    ],
)
def test_bad_revisions_are_one_line_usage_errors(text, says):
    with pytest.raises(BadRevision) as caught:
        parse_revision(text)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_each_form_finds_its_commit(store):
    head = new_session(store, "three turns", turns=3)
    head = commit(store, head, _renamed(head, "renamed"), "rename")
    history = [cid for cid, _c in store.history(head)]  # rename, turn 3, 2, 1, create
    assert resolve(store, head.id[:6]).head.commit == history[0]
    assert resolve(store, f"{head.id[:6]}@turn:3").head.commit == history[1]
    assert resolve(store, f"{head.id[:6]}@turn:1").head.commit == history[3]
    assert resolve(store, f"{head.id[:6]}~2").head.commit == history[2]
    assert resolve(store, f"{head.id[:6]}@turn:2~1").head.commit == history[3]
    assert resolve(store, f"{head.id}@{history[2].decode()[:8]}").head.commit == history[2]
    earlier = resolve(store, f"{head.id}@turn:1").head
    assert earlier.counts["messages"] == 3 and earlier.header["title"] == "three turns"


def test_a_forks_revision_before_the_fork_is_the_parents_state(store):
    parent = new_session(store, "parent", turns=2)
    fork = manage.fork(store, parent.id, "the fork")
    fork = turn(store, fork, 3)
    state = resolve(store, f"{fork.id}@turn:1")
    assert state.session == fork.id and state.head.id == parent.id
    assert resolve(store, f"{fork.id}~2").head.commit == parent.commit
    with pytest.raises(BadRevision, match="no commit"):  # the fork's commit is not the parent's
        resolve(store, f"{parent.id}@{fork.commit.decode()}")


def test_revisions_that_name_nothing_are_refused(store):
    head = new_session(store, "two turns", turns=2)
    with pytest.raises(BadRevision, match=r"has no turn 5 \(its last turn is 2\)"):
        resolve(store, f"{head.id}@turn:5")
    with pytest.raises(BadRevision, match="no commit 0000"):
        resolve(store, f"{head.id}@0000")
    with pytest.raises(BadRevision, match="past the first commit"):
        resolve(store, f"{head.id}~3")
    bare = new_session(store, "no turns")
    with pytest.raises(BadRevision, match="it has no turns"):
        resolve(store, f"{bare.id}@turn:1")


def test_bad_revisions_on_the_command_line_exit_2(cli, store):
    head = new_session(store, "one turn", turns=1)
    for bad in (f"{head.id}@nope", f"{head.id}@turn:7", "zz", f"{head.id}~9"):
        result = cli("diff", bad, head.id, code=2)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and not result.stdout
    result = cli("diff", head.id, "ffff0000", code=1)  # a session that is not there: exit 1
    assert "no session matches" in result.stderr


def _renamed(head, title):
    return Change(header=touch(head.header, title=title))
