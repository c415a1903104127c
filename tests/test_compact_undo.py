"""`compact --undo`, `show --compaction N` and the hold on auto-compaction after an undo
(issue 44), against the real fake server and a real store."""

import json

from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.compaction.hold import auto_threshold
from gitsessions.store.sessions import Change
from gitsessions.values.messages import pairing_errors
from tests.conftest import fsck, git
from tests.test_compact_cli import big_session, compact

SUMMARY = "Goal: read every module. Done: modules 0-2."


def summary_requests(server):
    return [r for r in server.requests if r.get("max_tokens") == 1024]


def test_undo_then_compact_again_is_the_first_compaction(cli, server, store, make_session, home):
    head = big_session(store, make_session)
    before = store.read(head, "context")
    server.reply(content=SUMMARY, usage=(900, 40))
    compact(cli, server, head.id)
    first = store.head(head.id)
    compacted = store.read(first, "context")
    undone = json.loads(cli("compact", head.id, "--undo", "--json").stdout)
    assert undone["undone"] == 1 and undone["after_tokens"] > undone["before_tokens"]
    back = store.head(head.id)
    assert store.read(back, "context") == before  # as it was, nothing lost
    assert store.read(back, "compactions") == store.read(first, "compactions")  # kept
    # the transcript records the undo, and the compaction stays in history
    transcript = store.transcript(back)
    assert transcript[:-1] == store.transcript(first)
    assert transcript[-1]["role"] == "system"
    assert transcript[-1]["content"].startswith("[compaction undone] compaction 1")
    log = git(home / "store.git", "log", "--format=%s%n%b", back.branch).stdout
    assert "Event: compact-undo" in log and "Compaction: 1" in log
    assert "Event: compact\n" in log
    server.reply(content=SUMMARY, usage=(900, 40))
    compact(cli, server, head.id)
    again = store.head(head.id)
    requests = summary_requests(server)
    assert len(requests) == 2 and requests[0]["messages"] == requests[1]["messages"]
    assert store.read(again, "context") == compacted
    assert not pairing_errors(compacted)
    fsck(home)


def test_undo_keeps_what_came_since_and_refuses_when_none(cli, server, store, make_session):
    head = big_session(store, make_session)
    before = store.read(head, "context")
    error = cli("compact", head.id, "--undo", code=1).stderr
    assert "no compaction to undo" in error and "it has none" in error
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    head = store.head(head.id)
    new = [{"role": "user", "content": "one more"}, {"role": "assistant", "content": "sure"}]
    head = store.commit(
        head,
        Change(context=[*store.read(head, "context"), *new], append=new),
        event="turn",
        subject="turn 5",
    )
    cli("compact", head.id, "--undo")
    assert store.read(store.head(head.id), "context") == [*before, *new]
    error = cli("compact", head.id, "--undo", code=1).stderr
    assert "all are undone" in error


def test_undo_refused_when_the_context_changed_otherwise(cli, server, store, make_session):
    head = big_session(store, make_session)
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    head = store.head(head.id)
    cut = store.read(head, "context")[:-1]
    head = store.commit(head, Change(context=cut), event="undo", subject="undo: turn 4")
    error = cli("compact", head.id, "--undo", code=1).stderr
    assert "changed since compaction 1" in error
    assert store.head(head.id).commit == head.commit  # nothing written


def test_hold_raises_the_threshold_until_new_growth():
    policy = Policy(max_context_tokens=10000)  # threshold 8000
    counts = {"counts": {"compactions": 1}}
    assert auto_threshold(policy, counts) == 8000
    hold = {"compaction": 1, "compactions": 1, "tokens": 8500, "after_tokens": 3000}
    # the compacted context had 5000 tokens of room: the undone one waits as long
    assert auto_threshold(policy, {**counts, "compaction_undone": hold}) == 10000
    hold = {**hold, "tokens": 4000, "after_tokens": 7000}
    assert auto_threshold(policy, {**counts, "compaction_undone": hold}) == 8000  # never below
    hold = {**hold, "tokens": 8100, "after_tokens": 7500}
    assert auto_threshold(policy, {**counts, "compaction_undone": hold}) == 8600
    # a compaction since ends the hold
    later = {"counts": {"compactions": 2}, "compaction_undone": hold}
    assert auto_threshold(policy, later) == 8000


def test_show_compaction_lists_what_left_and_the_summary(cli, server, store, make_session):
    head = big_session(store, make_session)
    before = store.context_lines(head)
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    after = store.head(head.id)
    data = cli.json("show", head.id, "--compaction", "1")
    assert data["compaction"] == 1 and data["commit"] == after.commit.decode()
    assert data["before"]["commit"] == head.commit.decode()
    assert data["before"]["messages"] == len(before)
    assert data["after"]["messages"] == len(store.read(after, "context"))
    assert data["before"]["tokens"] > data["after"]["tokens"]
    kept = {ref for _m, ref in store.context_lines(after) if ref is not None}
    gone = [ref for _m, ref in before[1:] if ref not in kept]
    shown = [m["index"] for m in data["summarized"]] + [m["index"] for m in data["cleared"]]
    assert sorted(shown) == sorted(gone)
    assert data["summarized"][0] == {
        "index": 1,
        "role": "user",
        "turn": None,
        "tokens": data["summarized"][0]["tokens"],
        "first_line": "task 0: read module_0.py",
    }
    assert all(m["tokens"] > 0 for m in data["summarized"])
    assert SUMMARY in data["summary"]["text"] and data["summary"]["tokens"] > 0
    assert data["undone"] is False
    text = cli("show", head.id, "--compaction", "1").stdout
    assert "A  before it" in text and "B  after it" in text
    assert "- [1] user" in text and "+ " in text and "Goal: read every module." in text
    error = cli("show", head.id, "--compaction", "2", code=1).stderr
    assert "no compaction 2" in error
    cli("compact", head.id, "--undo")
    assert cli.json("show", head.id, "--compaction", "1")["undone"] is True


def test_log_numbers_compactions_and_undos(cli, server, store, make_session):
    head = big_session(store, make_session)
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    cli("compact", head.id, "--undo")
    entries = cli.json("log", head.id)
    assert entries[0]["event"] == "compact-undo" and entries[0]["compaction"] == 1
    assert entries[1]["event"] == "compact" and entries[1]["compaction"] == 1
    lines = cli("log", head.id).stdout.splitlines()  # piped: tab-separated, detail last
    assert lines[0].split("\t")[-1].startswith("compaction 1 undone: ")
    assert lines[1].split("\t")[-1].startswith("compaction 1: ")


def test_show_compaction_of_cleared_outputs(cli, server, store, make_session):
    head = big_session(store, make_session, turns=6)
    compact(cli, server, head.id, "--clear-only")
    data = cli.json("show", head.id, "--compaction", "1")
    records = store.read(store.head(head.id), "compactions")
    assert [m["index"] for m in data["cleared"]] == records[0]["cleared"]
    assert data["summarized"] == [] and data["summary"] is None
    assert all(m["role"] == "tool" for m in data["cleared"])
    assert all(0 < m["tokens_after"] < m["tokens"] for m in data["cleared"])
    text = cli("show", head.id, "--compaction", "1").stdout
    assert "cleared in place" in text and "no summary" in text


def test_diff_shows_the_undo_as_a_context_event(cli, server, store, make_session):
    head = big_session(store, make_session)
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    compacted = store.head(head.id)
    cli("compact", head.id, "--undo")
    data = cli.json("diff", f"{head.id}@{compacted.commit.decode()}", head.id)
    events = data["b"]["changes"]["context"]["events"]
    assert [e["event"] for e in events] == ["compact-undo"]
    assert events[0]["trailers"]["Compaction"] == "1"
    assert "compact-undo" in cli("diff", f"{head.id}@{compacted.commit.decode()}", head.id).stdout


def test_undo_and_compaction_view_refuse_flags_they_do_not_take(cli, store, make_session):
    head = make_session()
    error = cli("compact", head.id, "--undo", "--dry-run", code=2).stderr
    assert "--undo takes the last compaction back: not with" in error
    error = cli("show", head.id, "--compaction", "1", "--context", code=2).stderr
    assert "--compaction N shows one compaction: not with" in error
    assert "no compaction 1" in cli("show", head.id, "--compaction", "1", code=1).stderr
    assert store.head(head.id).commit == head.commit


def test_every_compaction_is_shown_the_earlier_note_summarised_again(
    cli, server, store, make_session
):
    head = big_session(store, make_session)
    server.reply(content=SUMMARY)
    compact(cli, server, head.id)
    head = store.head(head.id)
    for n in range(2):
        new = [{"role": "user", "content": f"more {n}"}, {"role": "assistant", "content": "ok"}]
        head = store.commit(
            head,
            Change(context=[*store.read(head, "context"), *new], append=new),
            event="turn",
            subject=f"turn {5 + n}",
        )
    server.reply(content="Goal: more.")
    compact(cli, server, head.id)
    second = cli.json("show", head.id, "--compaction", "2")
    first = cli.json("show", head.id, "--compaction", "1")
    assert first["after"]["commit"] != second["after"]["commit"]
    assert second["before"]["commit"] == head.commit.decode()  # the turn before it
    old_note = second["summarized"][0]
    assert old_note["index"] is None and old_note["role"] == "user"  # the first note
    assert "Goal: more." in second["summary"]["text"]
    assert [e.get("compaction") for e in cli.json("log", head.id) if e["event"] == "compact"] == [
        2,
        1,
    ]
