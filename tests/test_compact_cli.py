"""`gitsessions compact`, pins, and the compaction commit, against a real fake server."""

import json

import pytest

from gitsessions.store.sessions import Change
from gitsessions.values.messages import pairing_errors
from tests.conftest import fsck, git

SUMMARIZER = "You write the continuation summary"


def big_session(store, make_session, turns: int = 4, size: int = 3000):
    """A session whose old tool outputs and turns are worth compacting."""
    head = make_session(turns=0, title="big")
    context = store.read(head, "context")
    for n in range(turns):
        words = " ".join(f"line{n}_{i}" for i in range(size // 10))
        msgs = [
            {"role": "user", "content": f"task {n}: read module_{n}.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"m{n}.py"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": words},
            {"role": "assistant", "content": f"module {n} read"},
        ]
        context += msgs
        head = store.commit(
            head, Change(context=list(context), append=msgs), event="turn", subject=f"turn {n + 1}"
        )
    return head


def compact(cli, server, sid, *args, code=0):
    return cli(
        "compact",
        sid,
        "--base-url",
        server.base_url,
        "--model",
        "fake",
        "--max-context-tokens",
        "3000",
        *args,
        code=code,
    )


def test_compact_runs_both_stages_and_commits(cli, server, store, make_session, home):
    from gitsessions.values.tokens import default_counter

    # the counts this home keeps are those this process's counter makes now: a counter
    # that counted the same messages in an earlier test (in another home) keeps none here
    default_counter.cache_clear()
    head = big_session(store, make_session)
    transcript_before = store.transcript(head)
    server.reply(content="Goal: read every module. Done: modules 0-2.", usage=(900, 40))
    result = json.loads(compact(cli, server, head.id, "--json", "--focus", "module names").stdout)
    assert set(result) >= {"session", "before_tokens", "after_tokens", "stages", "commit"}
    assert result["after_tokens"] < result["before_tokens"]
    assert "summarize" in result["stages"]
    request = server.requests[0]
    assert request["temperature"] == 0 and request["max_tokens"] == 1024
    assert request["messages"][0]["content"].startswith(SUMMARIZER)
    assert "module names" in request["messages"][0]["content"]
    new = store.head(head.id)
    assert new.commit.decode() == result["commit"]
    context = store.read(new, "context")
    assert context[0] == transcript_before[0]  # the system prompt stays
    note = context[1]
    assert note["role"] == "user" and "<session_context_data>" in note["content"]
    assert "Goal: read every module." in note["content"]
    assert context[2]["content"] == "task 3: read module_3.py"  # the latest user turn stays
    assert not pairing_errors(context)
    assert store.transcript(new) == transcript_before  # the record is untouched
    records = store.read(new, "compactions")
    assert len(records) == 1 and records[0]["trigger"] == "manual"
    assert records[0]["summarizer"]["usage"] == {"prompt_tokens": 900, "completion_tokens": 40}
    assert store.read(new, "usage")["prompt_tokens"] == 900
    trailers = git(home / "store.git", "log", "-1", "--format=%B", new.branch).stdout
    assert f"Tokens-Before: {result['before_tokens']}" in trailers
    assert f"Tokens-After: {result['after_tokens']}" in trailers
    assert "Event: compact" in trailers and "Trigger: manual" in trailers
    subject = git(home / "store.git", "log", "-1", "--format=%s", new.branch).stdout.strip()
    assert subject == f"compact: {result['before_tokens']} -> {result['after_tokens']} tokens"
    assert len(cli("show", head.id, "--json").stdout) > len(
        cli("show", head.id, "--context", "--json").stdout
    )
    assert cli.json("info", head.id)["compactions"] == 1
    # the counts compaction made are kept (issue 24): the next turn reads them back
    from gitsessions.store.tokencounts import TokenCounts
    from gitsessions.values.tokens import TokenCounter

    later = TokenCounter()
    kept = TokenCounts(home, later).recall(later.keys(context[2:]))
    assert kept == len(context) - 2  # every message compaction kept as it was
    assert later.count_context(context[2:]) == TokenCounter().count_context(context[2:])
    assert later.cache_misses == 0  # all of them read back, exact
    fsck(home)


@pytest.mark.parametrize("failure", ["500", "timeout", "empty", "malformed"])
def test_failed_summary_changes_nothing(cli, server, store, make_session, monkeypatch, failure):
    head = big_session(store, make_session)
    if failure == "500":
        for _ in range(4):  # the first try and its 3 retries
            server.fail(status=500, retry_after="0")
    elif failure == "timeout":
        monkeypatch.setenv("GITSESSIONS_TIMEOUT", "1")
        monkeypatch.setenv("GITSESSIONS_SUMMARY_TIMEOUT", "1")
        server.delay(5)
    elif failure == "empty":
        server.reply(content="   ")
    else:
        server.malformed()
    result = compact(cli, server, head.id, code=1)
    lines = result.stderr.strip().splitlines()
    retried = ["retrying in 0 s" in line for line in lines[:-1]]
    assert retried == ([True] * 3 if failure == "500" else [])
    assert lines[-1].startswith("error: ")
    if failure == "timeout":
        assert "the summary did not finish within 1 s" in lines[-1]
        assert "GITSESSIONS_SUMMARY_TIMEOUT" in lines[-1]
    assert store.head(head.id).commit == head.commit  # not even stage 1 was kept


def test_a_summary_slower_than_a_turns_timeout_finishes(
    cli, server, store, make_session, monkeypatch
):
    """A slow local summary has its own deadline (summary_timeout, 600 s by default),
    longer than a turn's: a summary taking longer than the turn's timeout is kept."""
    head = big_session(store, make_session)
    monkeypatch.setenv("GITSESSIONS_TIMEOUT", "1")
    server.delay(3)
    server.reply(content="Goal: read every module, slowly.")
    result = json.loads(compact(cli, server, head.id, "--json").stdout)
    assert result["outcome"] == "compacted" and "summarize" in result["stages"]
    context = store.read(store.head(head.id), "context")
    assert "Goal: read every module, slowly." in context[1]["content"]


def test_a_rate_limited_summary_is_sent_again(cli, server, store, make_session):
    head = big_session(store, make_session)
    server.fail(status=429, retry_after="0")
    result = compact(cli, server, head.id)
    assert "rate limited (HTTP 429): retrying in 0 s (1 of 3)" in result.stderr
    assert "compacted" in result.stderr
    assert store.head(head.id).commit != head.commit


def test_dry_run_calls_no_model_and_writes_nothing(cli, server, store, make_session):
    head = big_session(store, make_session)
    result = json.loads(compact(cli, server, head.id, "--dry-run", "--json").stdout)
    assert result["commit"] is None and result["dry_run"] is True
    assert result["after_tokens"] < result["before_tokens"]
    assert server.requests == []
    assert store.head(head.id).commit == head.commit


def test_clear_only_needs_no_model(cli, server, store, make_session):
    head = big_session(store, make_session, turns=6)
    result = json.loads(compact(cli, server, head.id, "--clear-only", "--json").stdout)
    assert result["stages"] == ["clear"] and server.requests == []
    context = store.read(store.head(head.id), "context")
    stubs = [m for m in context if m["role"] == "tool" and "read_session" in m["content"]]
    assert stubs and all("[cleared tool output:" in m["content"] for m in stubs)
    assert not pairing_errors(context)


def test_nothing_to_compact(cli, server, make_session, store):
    head = make_session(turns=0)
    result = compact(cli, server, head.id)
    assert "nothing to compact" in result.stderr
    assert store.head(head.id).commit == head.commit and server.requests == []


def test_pins_survive_compaction_verbatim(cli, server, store, make_session):
    head = big_session(store, make_session)
    pin = "Never touch the [legacy] API; keep Python 3.11 compatible."
    cli("pin", head.id, pin)
    cli("pin", head.id, "second pin")
    assert cli.json("pins", head.id) == [pin, "second pin"]
    cli("unpin", head.id, "2")
    assert cli.json("pins", head.id) == [pin]
    assert "no pin 5" in cli("unpin", head.id, "5", code=1).stderr
    server.reply(content="a summary that forgot the pin")
    compact(cli, server, head.id)
    context = store.read(store.head(head.id), "context")
    assert pin in context[1]["content"]


def test_compact_refuses_a_session_in_use(cli, server, store, make_session, home):
    from gitsessions.store.lease import Lease

    head = big_session(store, make_session)
    with Lease(home, head.id):
        result = compact(cli, server, head.id, code=1)
    assert "in use" in result.stderr


def test_the_summary_request_is_budgeted_without_the_agents_tool_schemas(
    cli, server, store, make_session
):
    """The summary request carries its own system prompt and the data, not the agent's
    tools (about 1,500 tokens): at a small budget the summarizer gets every older message
    whole, where counting the tools would cut its input for nothing."""
    head = make_session(turns=0, title="small budget")
    context = store.read(head, "context")
    replies = [f"reply {n}: " + " ".join(f"note{n}_{i}" for i in range(120)) for n in range(3)]
    for n, reply in enumerate(replies):
        msgs = [{"role": "user", "content": f"task {n}"}, {"role": "assistant", "content": reply}]
        context += msgs
        head = store.commit(
            head, Change(context=list(context), append=msgs), event="turn", subject=f"t{n}"
        )
    msgs = [{"role": "user", "content": "the latest task"}]
    head = store.commit(
        head, Change(context=[*context, *msgs], append=msgs), event="turn", subject="last"
    )
    server.reply(content="a summary")
    result = json.loads(compact(cli, server, head.id, "--json").stdout)
    assert result["outcome"] == "compacted", result
    assert not any(note.startswith("summarizer input") for note in result["notes"]), result
    data = json.loads(server.requests[0]["messages"][1]["content"])
    assert [m["content"] for m in data["messages"] if m["role"] == "assistant"] == replies
    assert "tools" not in server.requests[0]
