"""The scoring of bench/compaction_quality.py cannot silently break (issue 47): each
planted session's hand-written control summary, through the real `compact` command and
the fake server, scores every fact from the summary alone; a summary that forgets
everything scores nothing from it (and still leaves issue 47's 16 facts in 0.6 of the
context); the echo guard zeroes a summary over 40% of its input; every fact is really
planted in its session; a replayed model log scores as the live run did."""

import json

import pytest

from bench.compaction_quality import FORGETFUL, SESSIONS, fake_server, replay_server, run_once
from bench.quality_scoring import ECHO_SHARE, Parts, holds, score, split_context
from gitsessions.services.compaction.continuation import make_note
from gitsessions.values.messages import text_of
from gitsessions.values.tokens import TokenCounter

PLANTED = {name: build() for name, build in SESSIONS.items()}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_session_is_long_and_plants_22_facts_its_control_states(name):
    planted = PLANTED[name]
    assert 58 <= len(planted.messages) <= 66
    assert len({fact.name for fact in planted.facts}) == len(planted.facts) == 22
    said = "\n".join(
        text_of(m) + "".join(c["function"]["arguments"] for c in m.get("tool_calls") or [])
        for m in planted.messages[:-2]  # not in the last turn, which compaction keeps
    )
    assert [f.name for f in planted.facts if not holds(f, said)] == []
    assert [f.name for f in planted.facts if not holds(f, planted.control)] == []
    assert [f.name for f in planted.facts if holds(f, FORGETFUL)] == []
    last = text_of(planted.messages[-2]) + text_of(planted.messages[-1])
    assert [f.name for f in planted.facts if holds(f, last)] == []


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_control_summary_through_compact_scores_every_fact_from_the_summary(name):
    planted = PLANTED[name]

    def answer(request):
        data = request["messages"][-1]["content"]
        assert json.dumps(planted.messages[1]["content"])[1:60] in data
        return planted.control

    with fake_server(answer) as server:
        row = run_once(planted, server, 8000, TokenCounter())
    assert "error" not in row, row
    assert row["by_part"]["summary"] == row["kept"] == 22, row["missing"]
    assert not row["echo"] and row["summary_share"] < ECHO_SHARE
    assert row["by_part"]["ledger"] >= 5  # files, the failing test, the last failure...
    assert row["after_tokens"] < row["before_tokens"]


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_forgetful_summary_scores_nothing_from_the_summary(name):
    planted = PLANTED[name]
    with fake_server(lambda _request: FORGETFUL) as server:
        row = run_once(planted, server, 8000, TokenCounter())
    assert row["by_part"]["summary"] == 0 and row["summary"] == FORGETFUL
    # what is kept is what the other parts keep (the ledger, the user's words, the last
    # turn), each fact once
    assert row["kept"] == len(set().union(*row["kept_by_part"].values()))
    assert row["kept"] >= 16  # issue 47's goal for a summariser that forgets everything
    assert row["ratio"] <= 0.6  # ... in at most 0.6 of the context (tool schemas counted)
    assert "earlier failure" in " ".join(row["kept_by_part"]["ledger"])  # not only the last


def test_the_echo_guard_zeroes_a_summary_over_40_percent_of_its_input():
    planted = PLANTED["retry"]
    parts = Parts(kept="", ledger="", user="", summary=planted.control)
    under = score(planted.facts, parts, summary_tokens=400, input_tokens=1000)
    assert len(under.kept) == 22 and not under.echo
    over = score(planted.facts, parts, summary_tokens=401, input_tokens=1000)
    assert over.echo and over.kept == () and over.counts()["summary"] == 0


def test_the_users_words_are_counted_apart_when_the_note_carries_them():
    planted = PLANTED["ingest"]
    said = [m["content"] for m in planted.messages if m["role"] == "user"]
    ledger = "## Ledger recorded from the transcript (exact, not summarized)\n- none"
    words = "## The user's words (verbatim, newest first)\n" + "\n".join(reversed(said))
    note = make_note(FORGETFUL, f"{words}\n\n{ledger}")
    context = [planted.messages[0], note, *planted.messages[-2:]]
    parts = split_context(context, FORGETFUL)
    assert parts.summary.strip() == FORGETFUL and "Ledger" in parts.ledger
    found = score(planted.facts, parts, summary_tokens=30, input_tokens=5000)
    assert "PostgreSQL 12" in found.by_part["user"] and found.by_part["summary"] == ()
    assert found.by_part["ledger"] == ()
    assert split_context(context[:1] + context[2:], FORGETFUL).user.strip() == ""


def test_a_replayed_log_scores_the_same_and_a_changed_input_is_not_answered(tmp_path):
    planted = PLANTED["retry"]
    with fake_server(lambda _request: planted.control) as server:
        live = run_once(planted, server, 8000, TokenCounter())
        asked = server.requests()[-1]
    log = tmp_path / "model.jsonl"
    log.write_text(json.dumps({"request": asked, "reply": {"content": planted.control}}) + "\n")
    with replay_server(log) as server:
        replayed = run_once(planted, server, 8000, TokenCounter())
        assert server.missed_count() == 0
    assert {k: replayed[k] for k in ("kept", "by_part", "after_tokens")} == {
        k: live[k] for k in ("kept", "by_part", "after_tokens")
    }
    asked["messages"][-1]["content"] += " "  # the summarizer's input changed
    log.write_text(json.dumps({"request": asked, "reply": {"content": planted.control}}) + "\n")
    with replay_server(log) as server:
        refused = run_once(planted, server, 8000, TokenCounter())
        assert server.missed_count() == 1
    assert refused.get("error") and refused["kept"] == 0
