"""Session management from the command line, checked against stock git."""

import json
from pathlib import Path

import pytest

from gitsessions.store.sessions import Change, touch
from tests.conftest import fsck, git


def test_list_newest_first_and_archived_hidden(cli, make_session, home, store):
    old = make_session(turns=1, title="old one")
    store.commit(
        old,
        Change(header=touch(old.header, updated_at="2026-01-01T00:00:00Z")),
        event="turn",
        subject="backdate",
    )
    new = make_session(turns=2, title="new one")
    cli("rename", new.id[:6], "newest title")
    rows = cli.json("list")
    assert [r["id"] for r in rows] == [new.id, old.id]
    first = rows[0]
    for key in (
        "id",
        "title",
        "summary",
        "parent_id",
        "archived",
        "messages",
        "compactions",
        "created_at",
        "updated_at",
        "workspace",
    ):
        assert key in first
    assert first["messages"] == 5 and first["title"] == "newest title"
    cli("archive", old.id[:5])
    assert [r["id"] for r in cli.json("list")] == [new.id]
    assert {
        r["id"]
        for r in cli("list", "--include-archived", "--json").stdout
        and cli.json("list", "--include-archived")
    } == {new.id, old.id}
    table = cli("list").stdout
    assert new.id[:8] in table and "newest title" in table and old.id[:8] not in table
    cli("unarchive", old.id)
    assert len(cli.json("list")) == 2
    fsck(home)


def test_list_cache_is_rebuilt_when_stale_or_broken(cli, make_session, home, store):
    head = make_session(turns=1, title="first title")
    assert cli.json("list")[0]["title"] == "first title"
    cli("rename", head.id, "second title")  # the ref moved: the cached row is stale
    assert cli.json("list")[0]["title"] == "second title"
    (home / "index.sqlite").write_bytes(b"this is not a database")
    assert cli.json("list")[0]["title"] == "second title"


def test_info_json(cli, make_session):
    head = make_session(turns=2, title="info me")
    info = cli.json("info", head.id[:4])
    assert info["id"] == head.id
    assert info["messages"] == 5 and info["context_messages"] == 5 and info["compactions"] == 0
    assert info["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "requests": 0,
        "cost_usd": 0.0,
    }
    assert info["branch"] == f"refs/heads/sessions/{head.id}"
    assert info["head"] == head.commit.decode()
    for key in ("title", "summary", "parent_id", "archived", "workspace"):
        assert key in info
    assert "5 in the transcript" in cli("info", head.id).stdout


def test_show_prints_model_text_without_markup(cli, store, make_session):
    from gitsessions.store.sessions import Change

    head = make_session(turns=0)
    msgs = [
        {"role": "user", "content": "use [bold]x[/bold] please"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('[red]hi[/red]')"},
        {"role": "assistant", "content": "done [link]"},
    ]
    head = store.commit(head, Change(append=msgs, context=msgs[:1]), event="turn", subject="t")
    shown = cli("show", head.id).stdout
    assert "use [bold]x[/bold] please" in shown
    assert "print('[red]hi[/red]')" in shown
    assert "read_file" in shown and "call_1" in shown and "done [link]" in shown
    assert json.loads(cli("show", head.id, "--json").stdout) == store.transcript(head)
    context = json.loads(cli("show", head.id, "--context", "--json").stdout)
    assert context == msgs[:1]


def test_log_lists_events_and_compaction_tokens(cli, store, make_session, home):
    from gitsessions.store.sessions import Change

    head = make_session(turns=1)
    head = store.commit(
        head,
        Change(context=[]),
        event="compact",
        subject="compact: 2100 -> 300 tokens",
        trailers={"Tokens-Before": 2100, "Tokens-After": 300, "Trigger": "manual"},
    )
    entries = cli.json("log", head.id)
    assert [e["event"] for e in entries] == ["compact", "turn", "create"]
    assert entries[0]["tokens_before"] == 2100 and entries[0]["tokens_after"] == 300
    assert entries[0]["commit"] == head.commit.decode()
    assert "2100 -> 300" in cli("log", head.id).stdout
    stock = git(
        home / "store.git", "log", "-1", "--format=%(trailers:key=Tokens-After)", head.branch
    ).stdout
    assert stock.strip() == "Tokens-After: 300"


@pytest.mark.parametrize(
    "title,message",
    [
        ("", "must not be empty"),
        ("two\nlines", "single line"),
        ("bell\x07", "control characters"),
        ("x" * 201, "longer than"),
    ],
)
def test_rename_rejects_bad_titles(cli, make_session, title, message):
    head = make_session(turns=0, title="kept")
    result = cli("rename", head.id, title, code=1)
    assert message in result.stderr and "Traceback" not in result.stderr
    assert cli.json("info", head.id)["title"] == "kept"


def test_rename_keeps_summary_separate(cli, store, make_session, home):
    from gitsessions.store.sessions import Change, touch

    head = make_session(turns=0, title="t")
    store.commit(
        head,
        Change(header=touch(head.header, summary="model summary")),
        event="summary",
        subject="summary",
    )
    cli("rename", head.id, "user title")
    info = cli.json("info", head.id)
    assert info["title"] == "user title" and info["summary"] == "model summary"
    subject = git(home / "store.git", "log", "-1", "--format=%s", head.branch).stdout
    assert subject.strip() == "rename: user title"


def test_fork_from_cli(cli, make_session, home, store):
    parent = make_session(turns=2, title="parent")
    out = cli.json("fork", parent.id[:6], "--title", "child")
    assert set(out) == {"id", "parent_id", "fork_point", "branch"}
    assert out["parent_id"] == parent.id and out["fork_point"] == parent.commit.decode()
    assert out["branch"] == f"refs/heads/sessions/{out['id']}"
    child = cli.json("info", out["id"])
    assert child["title"] == "child" and child["messages"] == 5
    assert cli.json("info", parent.id)["head"] == parent.commit.decode()  # parent untouched
    plain = cli("fork", parent.id).stdout.strip()
    assert len(plain) == 32 and plain != out["id"]
    header = json.loads(git(home / "store.git", "show", f"{out['branch']}:session.json").stdout)
    assert header["parent_id"] == parent.id
    fsck(home)


def test_delete_needs_yes_and_forks_survive(cli, make_session, home):
    parent = make_session(turns=2, tag="secret-5ab1")
    child = cli.json("fork", parent.id)["id"]
    result = cli("delete", parent.id, code=2)
    assert "--yes" in result.stderr
    assert cli.json("info", parent.id)["id"] == parent.id
    cli("delete", parent.id, "--yes")
    assert cli("info", parent.id, code=1).stderr.startswith("error: no session")
    shown = cli("show", child).stdout
    assert "secret-5ab1" in shown
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    assert {"operation": "delete", "session": parent.id, "outcome": "ok"}.items() <= audit[
        -1
    ].items()
    fsck(home)


def test_gc_from_cli(cli, make_session, home):
    make_session(turns=5)
    result = cli("gc")
    assert "packed" in result.stderr
    assert not list((home / "store.git" / "objects").glob("??/*"))
    fsck(home)


@pytest.mark.parametrize("bad", ["abc", "../../etc/passwd", "zzzz", "0123456789abcdef" * 3])
def test_bad_ids_are_one_line_errors(cli, bad):
    result = cli("info", bad, code=2)  # bad usage, as the README says
    assert result.stderr.startswith("error: invalid session id")
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_and_ambiguous_prefix(cli, store):
    from gitsessions.store.sessions import Change
    from gitsessions.values.records import new_header

    for sid in ("abcd" + "0" * 28, "abcd" + "1" * 28):
        store.create(new_header(sid, "2026-11-30T10:00:00Z"), Change())
    assert "matches 2 sessions" in cli("info", "abcd", code=1).stderr
    assert "no session matches" in cli("info", "ffff", code=1).stderr
    assert cli.json("info", "abcd1")["id"] == "abcd" + "1" * 28


def test_home_option_overrides_env(cli, tmp_path: Path, home):
    other = tmp_path / "elsewhere"
    assert cli("--home", str(other), "list").stderr.strip() == "no sessions yet"
    assert (other / "store.git" / "HEAD").exists()
    assert not (home / "store.git").exists()


def test_hostile_inputs_are_one_line_errors(cli, make_session, tmp_path):
    head = make_session(turns=0, title="kept")
    result = cli("rename", head.id, "bad \udcff byte", code=1)
    assert "not valid UTF-8" in result.stderr
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    result = cli("--home", str(a_file), "list", code=1)
    assert result.stderr.startswith("error: cannot use") and "Traceback" not in result.stderr
    assert cli.json("info", head.id)["title"] == "kept"


def test_bad_usage_exits_2(cli, make_session, tmp_path):
    head = make_session(turns=0)
    assert "not both" in cli("exec", "x", "--resume", head.id, "--continue", code=2).stderr
    assert "prompt is empty" in cli("exec", "  ", code=2).stderr
    assert "without --yes" in cli("delete", head.id, code=2).stderr
    assert cli("info", head.id).stdout  # nothing was deleted
