"""A compaction in the chat and by `compact`, through a real pseudo-terminal: the spinner
says it is compacting and for how long so far (a slow local summary takes minutes), and
a compaction cancelled with Ctrl-C writes nothing (checked with stock git)."""

import os
import sys
import threading
from pathlib import Path

import pexpect

from gitsessions.store.sessions import Change
from tests.conftest import REPO, git
from tests.test_chat import PROMPT, as_a_terminal, leave, plain, say, spawn

SUMMARIZER = "You write the continuation summary"
TITLE = "Write a one-line title"
LONG = "The answer, at length. " * 120  # summarizing it saves tokens


class SlowSummarizer:
    """Answers turns at once and a summary only once `release` is set (or 60 s passed)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()  # a summary request arrived
        self.summaries = 0

    def __call__(self, request: dict) -> dict:
        system = request["messages"][0]["content"]
        if system.startswith(SUMMARIZER):
            self.summaries += 1
            self.asked.set()
            self.release.wait(60)
            return {"content": "Summary: the user asked twice."}
        if system.startswith(TITLE):
            return {"content": "A title"}
        return {"content": LONG}


def compactions_in_store(home: Path) -> list[str]:
    """The subjects of compaction commits in the store, read by stock git."""
    log = git(home / "store.git", "log", "--all", "--format=%s%x00%B%x01").stdout
    entries = [entry.strip() for entry in log.split("\x01") if entry.strip()]
    return [e.split("\x00")[0] for e in entries if "Event: compact" in e.split("\x00")[1]]


def test_a_slow_compaction_shows_its_time_and_ctrl_c_cancels_it_writing_nothing(
    server, workspace, home
):
    slow = SlowSummarizer()
    server.responder = slow
    child = spawn(server.base_url, workspace)
    say(child, "first question")
    say(child, "second question")
    child.sendline("\\compact")
    child.expect(r"compacting the context · [1-9]\d* s")  # the time counts up
    assert slow.asked.wait(30) and slow.summaries == 1
    child.send("\x03")  # Ctrl-C while the summary is awaited
    child.expect(PROMPT)
    assert "cancelled; the session is saved" in plain(child.before)
    slow.release.set()
    assert compactions_in_store(home) == []
    # the same compaction, not cancelled, is written: the check above can fail
    done = say(child, "\\compact")
    assert "compacted" in done
    leave(child)
    assert len(compactions_in_store(home)) == 1


def test_the_compact_command_shows_how_long_its_summary_has_taken(
    server, home, store, make_session
):
    head = make_session(turns=0, title="slow")
    context = store.read(head, "context")
    for n in range(3):
        msgs = [{"role": "user", "content": f"task {n}"}, {"role": "assistant", "content": LONG}]
        context += msgs
        head = store.commit(
            head, Change(context=list(context), append=msgs), event="turn", subject=f"t{n}"
        )
    slow = SlowSummarizer()
    server.responder = slow
    env = dict(os.environ, TERM="xterm", COLUMNS="100", LINES="40")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "compact", head.id, "--base-url", server.base_url, "--model", "m"],
        env=env, encoding="utf-8", timeout=30, cwd=str(REPO), dimensions=(40, 100),
    )  # fmt: skip
    as_a_terminal(child)
    try:
        child.expect(rf"compacting {head.id[:8]} · [1-9]\d* s")
        assert slow.asked.wait(30)
    finally:
        slow.release.set()
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0
    assert len(compactions_in_store(home)) == 1
