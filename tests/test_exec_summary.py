"""A fresh `exec`'s list summary is asked after exec exits, by a process of its own
(`agent/summary_later.py`), as exec_summary's default "background" does; "off" never
asks. Real exec processes against the scripted server, whose title answer the test
holds until exec has exited."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gitsessions.agent.summary_later import record
from gitsessions.agent.titling import SUMMARY_PROMPT, summary_wanted
from gitsessions.services.model.completion import Completion, Usage
from gitsessions.store.lease import Lease, SessionInUse
from gitsessions.store.sessions import Change, SessionStore, touch
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import exec_args, git, run_gitsessions


@pytest.fixture(autouse=True)
def default_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITSESSIONS_EXEC_SUMMARY")  # the default, not the tests' "wait"


def is_title(request: dict[str, Any]) -> bool:
    return request["messages"][0]["content"] == SUMMARY_PROMPT


def wait_for_title_request(server) -> None:
    """Until the server has received a title request (a minute at most)."""
    for _ in range(600):
        if any(is_title(r) for r in server.requests):
            return
        time.sleep(0.1)


def held_titles(server, gate: threading.Event, reply: str = "done") -> None:
    """Answer a title request only once `gate` is set; any other with `reply`."""

    def respond(request: dict[str, Any]) -> str:
        if is_title(request):
            gate.wait(60)
            return "A title"
        return reply

    server.responder = respond


def summary_audits(home: Path) -> list[dict[str, Any]]:
    lines = (home / "audit.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["operation"] == "summary"]


def wait_for_summary_audit(home: Path, count: int = 1) -> dict[str, Any]:
    """The workers' `count`-th audit line, once they wrote as many (they are processes
    we do not wait on)."""
    for _ in range(900):
        if (home / "audit.jsonl").exists() and len(found := summary_audits(home)) >= count:
            return found[count - 1]
        time.sleep(0.1)
    raise AssertionError(f"the summary workers wrote no {count} audit lines in 90 s")


def subjects(home: Path, sid: str) -> list[str]:
    branch = f"refs/heads/sessions/{sid}"
    return git(home / "store.git", "log", "--format=%s", branch).stdout.splitlines()


def test_exec_exits_before_the_summary_is_answered_then_it_is_recorded(server, tmp_path, home):
    gate = threading.Event()
    held_titles(server, gate)
    done = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    # exec is over while the title request is still held by the server
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    sid = result["session"]
    assert result["reply"] == "done" and result["usage"]["requests"] == 1
    assert not gate.is_set()
    wait_for_title_request(server)  # it reaches the server after exec exited
    assert any(is_title(r) for r in server.requests)
    assert subjects(home, sid)[0] == 'turn 1.1: reply "done"'
    gate.set()
    assert wait_for_summary_audit(home)["outcome"] == "ok"
    assert subjects(home, sid)[:2] == ['turn 1: summary "A title"', 'turn 1.1: reply "done"']
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert info["summary"] == "A title"
    assert info["usage"]["requests"] == 2  # the summary's request is counted too
    ref = f"refs/heads/sessions/{sid}"
    trailers = git(home / "store.git", "log", "-1", "--format=%(trailers)", ref).stdout
    assert "Turn: 1" in trailers and "Step: 1" in trailers  # those of the reply it follows


def test_a_turn_run_while_the_summary_is_asked_is_not_refused_nor_lost(server, tmp_path, home):
    gate = threading.Event()
    held_titles(server, gate)
    first = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    sid = json.loads(first.stdout)["session"]
    wait_for_title_request(server)
    # the worker waits on its request; a second exec goes on with the session meanwhile,
    # and, finding it without a summary, asks for one too (it cannot tell whether the
    # first will land)
    second = run_gitsessions(*exec_args(server, tmp_path), "again", "--resume", sid)
    assert second.returncode == 0, second.stderr
    gate.set()
    assert wait_for_summary_audit(home, 2)["outcome"] == "ok"
    assert summary_audits(home)[0]["outcome"] == "ok"
    shown = subjects(home, sid)
    # whichever lands last: turn 2's summary again, or turn 1's not kept over turn 2's
    assert shown[0] in ('turn 2: summary "A title"', 'turn 2: summary "(none kept)"')
    assert shown[1:4] == ['turn 2: summary "A title"', 'turn 2.1: reply "done"', "turn 2: again"]
    assert 'turn 1.1: reply "done"' in shown
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert info["summary"] == "A title" and info["usage"]["requests"] == 4


def test_a_session_left_without_a_summary_gets_one_after_its_next_turn(server, tmp_path, home):
    """The first turn's summary failed (as one a chat's lease kept out for a minute):
    the next turn, not the tenth, asks again."""
    server.reply(content="done")
    server.fail(400, "no titles now")  # the first turn's summary
    server.responder = lambda request: "A title" if is_title(request) else "done"
    first = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    sid = json.loads(first.stdout)["session"]
    assert wait_for_summary_audit(home)["outcome"] == "error"
    second = run_gitsessions(*exec_args(server, tmp_path), "again", "--resume", sid)
    assert second.returncode == 0, second.stderr
    assert wait_for_summary_audit(home, 2)["outcome"] == "ok"
    assert subjects(home, sid)[0] == 'turn 2: summary "A title"'
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert info["summary"] == "A title"


def test_when_the_list_summary_is_asked() -> None:
    every = 10
    assert summary_wanted(1, every, {"summary": "kept"}, asked=True)
    assert summary_wanted(20, every, {"summary": "kept"}, asked=True)
    assert not summary_wanted(2, every, {"summary": "kept"}, asked=False)
    assert not summary_wanted(2, every, {"title": "mine"}, asked=False)
    # none yet: asked once by a process that has not asked itself (an earlier one's
    # attempt may have given up); after its own attempt, not again before the tenth
    assert summary_wanted(2, every, {"summary": ""}, asked=False)
    assert not summary_wanted(3, every, {"summary": ""}, asked=True)


def test_exec_summary_off_asks_nothing(server, tmp_path, home, monkeypatch):
    monkeypatch.setenv("GITSESSIONS_EXEC_SUMMARY", "off")
    server.reply(content="done")
    done = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    time.sleep(1)  # a worker, were one started, would have asked by now
    assert len(server.requests) == 1
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert not info.get("summary")


def test_an_unknown_exec_summary_is_one_line(server, tmp_path, monkeypatch):
    monkeypatch.setenv("GITSESSIONS_EXEC_SUMMARY", "later")
    done = run_gitsessions(*exec_args(server, tmp_path), "say done")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: exec_summary 'later' from env GITSESSIONS_EXEC_SUMMARY must be one of"
        " background, wait, off"
    ]
    assert server.requests == []


def test_a_summary_without_text_keeps_none_but_counts_its_tokens(server, tmp_path, home):
    def respond(request: dict[str, Any]) -> Any:
        if is_title(request):
            return {"content": None, "finish_reason": "length"}  # no text: nothing to keep
        return "done"

    server.responder = respond
    done = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    result = json.loads(done.stdout)
    assert wait_for_summary_audit(home)["outcome"] == "ok"
    sid = result["session"]
    assert subjects(home, sid)[:2] == ['turn 1: summary "(none kept)"', 'turn 1.1: reply "done"']
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert not info.get("summary") and info["usage"]["requests"] == 2  # the tokens were spent


def test_a_summary_the_server_refuses_changes_nothing_and_is_audited(server, tmp_path, home):
    server.reply(content="done")
    server.fail(400, "no titles here")  # the summary's request, asked after exec exited
    done = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    result = json.loads(done.stdout)
    assert wait_for_summary_audit(home)["outcome"] == "error"
    ref = f"refs/heads/sessions/{result['session']}"
    assert git(home / "store.git", "rev-parse", ref).stdout.strip() == result["commit"]


HOLD = """
import sys, time
from pathlib import Path
from gitsessions.store.lease import Lease
lease = Lease(Path(sys.argv[1]), sys.argv[2], holder=sys.argv[3])
print("held", flush=True)
time.sleep(0.5)
"""


@pytest.mark.parametrize("holder", ["summary", ""])
def test_a_summary_s_lease_is_waited_for_another_is_refused(home, holder):
    home.mkdir(parents=True, exist_ok=True)
    sid = new_id()
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home), sid, holder], stdout=subprocess.PIPE, text=True
    )
    assert other.stdout is not None and other.stdout.readline() == "held\n"
    try:
        if holder:
            Lease(home, sid).release()  # waited for the brief write, then taken
        else:
            with pytest.raises(SessionInUse, match=r"in use by another gitsessions process"):
                Lease(home, sid)
    finally:
        other.wait(10)


def turns_with_summaries(store: SessionStore, summaries: dict[int, str], turns: int) -> str:
    """A session of `turns` turns (each one commit with its `Turn` trailer), its summary
    set by the commit of each turn `summaries` names."""
    sid = new_id()
    head = store.create(new_header(sid, now_iso()), Change(context=[], append=[]))
    for turn in range(1, turns + 1):
        header = touch(head.header, **({"summary": summaries[turn]} if turn in summaries else {}))
        head = store.commit(
            head,
            Change(header=header),
            event="turn",
            subject=f"turn {turn}.1: reply",
            trailers={"Turn": turn, "Step": 1},
        )
    return sid


def record_for(store: SessionStore, sid: str, turn: int, summary: str) -> None:
    completion = Completion({"role": "assistant", "content": summary}, Usage(9, 3), "stop", "m")
    with Lease(store.home, sid, holder="summary"):
        record(store, sid, turn, completion, "m", {})


def test_a_late_summary_replaces_an_older_one_not_a_later_one(store):
    # turn 11's summary lands after turn 12 was committed: the summary there is turn 1's
    older = turns_with_summaries(store, {1: "Turn one"}, turns=12)
    record_for(store, older, 11, "Turn eleven")
    assert store.head(older).header["summary"] == "Turn eleven"
    # the one there was written for turn 12: kept (turn 11's tokens are counted)
    later = turns_with_summaries(store, {1: "Turn one", 12: "Turn twelve"}, turns=12)
    record_for(store, later, 11, "Turn eleven")
    head = store.head(later)
    assert head.header["summary"] == "Turn twelve"
    assert store.read_commit(head.commit).message.startswith(b'turn 12: summary "(none kept)"')


def test_a_summary_for_a_session_deleted_meanwhile_leaves_no_lease_file(server, tmp_path, home):
    gate = threading.Event()
    held_titles(server, gate)
    done = run_gitsessions(*exec_args(server, tmp_path), "say done", "--json")
    sid = json.loads(done.stdout)["session"]
    wait_for_title_request(server)
    assert run_gitsessions("delete", sid, "--yes").returncode == 0
    assert not (home / "leases" / f"{sid}.lock").exists()  # the delete removed it
    gate.set()
    line = wait_for_summary_audit(home)
    assert (line["outcome"], line.get("reason")) == ("skipped", "deleted")
    assert not (home / "leases" / f"{sid}.lock").exists()
    doctor = run_gitsessions("doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout
