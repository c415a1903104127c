"""`gitsessions chat` driven through a real pseudo-terminal (pexpect)."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, tzinfo
from pathlib import Path

import pexpect
import pytest

from gitsessions.values import clock
from tests.conftest import REPO, exec_args, run_gitsessions, run_gitsessions_process
from tests.test_find_sessions import failed_start

# the line editor is reading: it turns the terminal's bracketed paste on as it starts
# (its first prompt is written before it is loaded; keys typed then wait for it)
PROMPT = re.compile(r"\x1b\[\?2004h")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    return ANSI.sub("", text)


def spawn(server_url: str, workspace: Path, *args: str, columns: int = 120) -> pexpect.spawn:
    env = dict(os.environ, TERM="xterm", COLUMNS=str(columns), LINES="50")
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "gitsessions",
            "chat",
            "--base-url",
            server_url,
            "--model",
            "fake-model",
            "--workspace",
            str(workspace),
            *args,
        ],
        env=env,
        encoding="utf-8",
        timeout=30,
        cwd=str(REPO),
        dimensions=(50, columns),
    )
    as_a_terminal(child)
    child.expect(PROMPT)
    return child


def as_a_terminal(child: pexpect.spawn) -> pexpect.spawn:
    """Keys sent as a terminal sends them: Enter is CR (a "\n" is Ctrl-J: a new line), and
    each key at once (pexpect sleeps 50 ms before every send unless told not to); the
    pty let go of at once when the child is collected (ptyprocess sleeps 0.1 s first)."""
    child.linesep = "\r"
    child.delaybeforesend = None
    child.ptyproc.delayafterclose = 0
    return child


def say(child: pexpect.spawn, line: str) -> str:
    """Send a line, wait for the next prompt, return what was printed in between."""
    child.sendline(line)
    child.expect(PROMPT)
    return plain(child.before)


def leave(child: pexpect.spawn) -> None:
    child.sendeof()
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0


def sessions() -> list[dict]:
    return json.loads(run_gitsessions("list", "--json").stdout)


def made(server, workspace: Path, prompt: str, *args: str) -> str:
    """A turn run by `exec` in this process (where a session only has to exist); its id."""
    done = run_gitsessions(*exec_args(server, workspace), *args, prompt, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_tool_turn_with_approvals(server, ws):
    def shell(command: str) -> None:
        server.reply(
            content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
        )

    server.reply(
        content=None,
        tool_calls=[{"name": "write_file", "arguments": {"path": "yes.txt", "content": "y\n"}}],
    )
    server.reply(
        content=None,
        tool_calls=[{"name": "write_file", "arguments": {"path": "no.txt", "content": "n\n"}}],
    )
    shell("touch one.txt")
    shell("touch two.txt")  # same prefix: runs without asking
    shell("touch three.txt; seq 1 12")  # a second command: asks whatever the prefix
    server.reply(content="All **done**.")
    child = spawn(server.base_url, ws)
    child.sendline("make some files")
    child.expect_exact("[y/N/a] ")
    assert "creates yes.txt: 1 line, 2 bytes" in plain(child.before)
    child.sendline("y")
    child.expect_exact("[y/N/a] ")
    child.sendline("")  # the default is no
    child.expect_exact("[y/N/a] ")
    asked = plain(child.before)
    assert "$ touch one.txt" in asked
    assert "a: always allow `touch ...` commands in this session" in asked
    child.sendline("a")
    child.expect_exact("[y/N] ")  # a second command: no "always" offered
    asked = plain(child.before)
    assert "$ touch three.txt; seq 1 12" in asked and "$ touch two.txt" not in asked
    assert 'no "always" here: it chains commands (`;`)' in asked
    child.sendline("y")
    child.expect(PROMPT)
    out = plain(child.before)
    assert "All done." in out  # markdown rendered once complete
    assert "| 12" in out and "| 8" in out and "| 7" not in out  # the output's tail
    leave(child)
    assert (ws / "yes.txt").exists() and not (ws / "no.txt").exists()
    assert all((ws / f"{n}.txt").exists() for n in ("one", "two", "three"))
    denied = [m for m in server.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "denied by the user" in denied["content"]
    assert server.requests[0]["stream"] is True


def test_an_approval_shows_a_replaced_file_as_a_diff_and_always_as_the_subcommand(server, ws):
    (ws / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    new = (ws / "app.py").read_text().replace("line 20\n", "twenty\n")

    def call(name: str, **arguments: str) -> None:
        server.reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])

    call("write_file", path="app.py", content=new)
    call("run_shell", command="git log --oneline | head")
    call("run_shell", command="git log -3")  # the same scope: runs unasked
    call("run_shell", command="git log; touch chained.txt")
    server.reply(content="done")
    child = spawn(server.base_url, ws)
    child.sendline("change it")
    child.expect_exact("[y/N/a] ")
    asked = plain(child.before)
    assert "replaces app.py: 30 lines, 231 bytes now, 30 lines, 230 bytes after" in asked
    assert "20 - line 20" in asked and "20 + twenty" in asked and "17   line 17" in asked
    assert "line 1\r" not in asked  # only the change and its context
    child.sendline("y")
    child.expect_exact("[y/N/a] ")
    asked = plain(child.before)
    assert "a: always allow `git log ...` commands in this session" in asked
    child.sendline("a")
    child.expect_exact("[y/N] ")
    asked = plain(child.before)
    assert "$ git log; touch chained.txt" in asked and "$ git log -3" not in asked
    child.sendline("n")
    child.expect(PROMPT)
    leave(child)
    assert (ws / "app.py").read_text() == new and not (ws / "chained.txt").exists()


def test_a_running_command_shows_a_spinner_with_its_name_time_and_last_output_line(server, ws):
    command = "echo first; echo started-42; until [ -e go ]; do sleep 0.1; done; echo over"
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
    )
    server.reply(content="done")
    child = spawn(server.base_url, ws)
    child.sendline("wait for it")
    child.expect_exact("[y/N] ")
    child.sendline("y")
    # while the command waits for `go`: the spinner names it, counts, shows its last line
    child.expect(r"run_shell: echo first; echo started-42; until[^\r\n]* · \d+ s")
    child.expect(rf"\|(?: |{ANSI.pattern})*started-42")
    assert not (ws / "go").exists()
    (ws / "go").touch()
    child.expect(PROMPT)
    out = plain(child.before)
    assert "| over" in out and "done" in out
    leave(child)


def test_ctrl_c_during_a_running_command_takes_its_spinner_away(server, ws):
    command = "echo started-42; until [ -e go ]; do sleep 0.1; done"
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
    )
    child = spawn(server.base_url, ws, "--auto-approve")
    child.sendline("wait for it")
    child.expect(rf"\|(?: |{ANSI.pattern})*started-42")
    child.sendintr()
    child.expect_exact("cancelled")
    child.expect(PROMPT)
    shown = say(child, "\\help")  # a spinner left running would redraw over it
    assert "\\exit" in shown and "started-42" not in shown and "until [" not in shown
    leave(child)


def test_a_running_command_adds_nothing_into_a_pipe(server, ws):
    command = "echo started-42"
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
    )
    server.reply(content="done")
    result = run_gitsessions_process(
        "chat", "--base-url", server.base_url, "--model", "fake-model", "--workspace", str(ws),
        "--auto-approve", input="go\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "| started-42" in result.stderr  # the output's tail, once it finished
    assert " s\n" not in result.stderr and "\x1b" not in result.stderr  # no spinner line


def test_a_prompt_that_starts_with_a_path_is_sent_and_a_double_slash_is_a_literal_one(server, ws):
    server.reply(content="Read it.")
    child = spawn(server.base_url, ws)
    shown = say(child, " /srv/app/x.py fails, why?")  # a leading space, as a paste may have
    assert "unknown command" not in shown and "Read it." in shown
    say(child, "//title is a word here")
    leave(child)
    last = [r["messages"][-1].get("content") for r in server.requests]  # the title's too
    assert " /srv/app/x.py fails, why?" in last and "/title is a word here" in last


def test_slash_commands(server, ws, home):
    child = spawn(server.base_url, ws)
    assert "\\compact" in say(child, "\\help")
    assert "unknown command \\nope" in say(child, "\\nope")
    assert server.requests == []  # not one of those reached the model
    # before the first prompt the session is a draft: a title waits for it, a fork cannot
    titled = say(child, "/title My [first] session").strip()
    assert titled.endswith("title: My [first] session (saved with your first prompt)")
    assert "nothing to fork yet" in say(child, "\\fork")
    assert "nothing to pin yet" in say(child, "\\pin too early")
    assert "new (saved with your first prompt)" in say(child, "\\info")
    assert sessions() == []
    say(child, "hello there")  # one turn, so there is something to fork and search
    assert "single line" not in say(child, "\\title ok title")
    info = say(child, "\\info")
    assert "ok title" in info and "/ 24,000 tokens" in info
    # \info and `info` say the same of the session, in the same words
    sid = sessions()[0]["id"]
    piped = dict(line.split("\t") for line in run_gitsessions("info", sid).stdout.splitlines())
    shown = {line.split()[0]: " ".join(line.split()[1:]) for line in info.splitlines() if line}
    for name in ("id", "messages", "compactions", "usage"):
        assert shown[name] == piped[name], (name, shown, piped)
    assert (
        piped["messages"].endswith("in the working context") and "transcript" in piped["messages"]
    )
    assert "pinned as 1" in say(child, "\\pin keep the API stable")
    assert "no plan yet" in say(child, "\\plan")
    found = say(child, "\\search hello there")
    assert "message 1" in found
    forked = say(child, "\\fork the other way")
    assert "forked: " in forked
    child.sendline("\\sessions")  # a picker: Esc leaves it, the chat stays here
    child.expect_exact("Esc cancels")
    listed = plain(child.before)
    assert "ok title  (this session)" in listed and "the other way  fork of" in listed
    child.send("\x1b")
    child.expect(PROMPT)
    assert "nothing picked; still in this session" in plain(child.before)
    assert "compact" in say(child, "\\compact")
    child.sendline("\\exit")
    child.expect(pexpect.EOF)
    rows = sessions()
    assert len(rows) == 2 and {r["title"] for r in rows} == {"ok title", "the other way"}
    assert sum(1 for r in rows if r["parent_id"]) == 1
    requests_with_slash = [
        r for r in server.requests if any("\\" in (m.get("content") or "") for m in r["messages"])
    ]
    assert requests_with_slash == []  # slash commands never reach the model
    original = next(r for r in rows if not r["parent_id"])
    pins = json.loads(run_gitsessions("pins", original["id"], "--json").stdout)
    assert pins == ["keep the API stable"]
    # \title and \pin go through the same write path as `rename` and `pin`: audited
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    ops = [(a["operation"], a["outcome"]) for a in audit if a["session"] == original["id"]]
    assert ops.count(("rename", "ok")) == 1 and ("pin", "ok") in ops


def test_ctrl_c_cancels_request_and_keeps_session(server, ws):
    child = spawn(server.base_url, ws)
    server.delay(20)  # the cancelled request's handler sleeps, then serves the default
    child.sendline("slow question")
    child.expect_exact("thinking")
    server.reply(content="second answer")
    child.sendintr()
    child.expect_exact("cancelled; the session is saved")
    child.expect(PROMPT)
    assert "second answer" in say(child, "next question")
    leave(child)
    transcript = json.loads(run_gitsessions("show", sessions()[0]["id"], "--json").stdout)
    assert [m["content"] for m in transcript if m["role"] == "user"] == [
        "slow question",
        "next question",
    ]
    # the next prompt is sent alone; the cancelled one is closed by a note (strict server);
    # the list summary is asked after it (the cancelled first turn had none asked)
    sent = [r for r in server.requests if r.get("tools")][-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "slow question" and sent[3]["content"] == "next question"
    assert "interrupted" in sent[2]["content"] and "no reply had arrived" in sent[2]["content"]
    assert server.rejected == []


def test_endpoint_down_keeps_prompt_then_resend(server, ws, tmp_path):
    child = spawn("http://127.0.0.1:9/v1", ws)
    assert "cannot reach" in plain(child.before)  # said at start, before any prompt is typed
    out = say(child, "important prompt")
    assert "error:" in out and "\\retry sends it again" in out
    leave(child)
    sid = sessions()[0]["id"]
    server.reply(content="answered at last")
    child = spawn(server.base_url, ws, "--resume", sid[:8])
    assert "no reply yet" in plain(child.before) and "\\retry" in plain(child.before)
    assert "\\retry" in say(child, "")  # an empty Enter sends nothing, it says how to
    assert server.requests == []
    assert "answered at last" in say(child, "\\retry")
    leave(child)
    sent = server.requests[0]["messages"]
    assert sent[-1] == {"role": "user", "content": "important prompt"}


def test_second_chat_on_same_session_is_refused(server, ws):
    first = spawn(server.base_url, ws)
    say(first, "hi")
    sid = sessions()[0]["id"]
    second = run_gitsessions_process(
        "chat", "--resume", sid, "--base-url", server.base_url, "--workspace", str(ws), input=""
    )
    assert second.returncode == 1 and "in use" in second.stderr
    leave(first)


def test_a_resumed_chat_holds_its_session_from_its_prompt(server, ws):
    """The lease is taken before a resumed chat's prompt (the agent is built after it):
    a second chat on the session is refused while the first waits at its prompt."""
    sid = made(server, ws, "hi")
    held = server.hold_models()
    try:
        first = spawn(server.base_url, ws, "--resume", sid[:8])
        args = ["chat", "--resume", sid, "--base-url", server.base_url, "--workspace", str(ws)]
        second = run_gitsessions_process(*args, input="")
        assert second.returncode == 1 and "in use" in second.stderr
        assert "Traceback" not in second.stderr and "(resumed)" not in second.stderr
    finally:
        held.set()
    leave(first)
    assert run_gitsessions_process(*args, input="").returncode == 0  # let go when it left


def test_resume_after_kill(server, ws):
    server.reply(content="first answer")
    server.reply(content="A title")  # the list summary, asked in the background after it
    child = spawn(server.base_url, ws)
    say(child, "remember the number 42")
    server.delay(30)
    child.sendline("this one is in flight")
    child.expect_exact("thinking")
    os.kill(child.pid, signal.SIGKILL)
    child.expect(pexpect.EOF)
    sid = sessions()[0]["id"]
    server.reply(content="resumed fine")
    child = spawn(server.base_url, ws, "--continue")
    assert sid[:8] in plain(child.before) and "no reply yet" in plain(child.before)
    assert "resumed fine" in say(child, "\\retry")
    leave(child)
    transcript = json.loads(run_gitsessions("show", sid, "--json").stdout)
    assert [m["content"] for m in transcript if m["role"] == "user"] == [
        "remember the number 42",
        "this one is in flight",
    ]
    assert transcript[-1]["content"] == "resumed fine"


def test_a_reply_cut_mid_stream_is_kept_marked_and_the_prompt_can_be_resent(server, ws):
    write = {"name": "write_file", "arguments": {"path": "cut.txt", "content": "never"}}
    server.reply(content="Writing the file now.", tool_calls=[write], cut="arguments")
    child = spawn(server.base_url, ws, "--auto-approve")
    out = say(child, "write cut.txt")
    assert "Writing the file" in out  # streamed before the cut
    assert "ended its stream before the reply was finished" in out
    assert "\\retry sends it again" in out
    assert not (ws / "cut.txt").exists()
    server.reply(content="Done properly this time.")
    say(child, "")
    assert len(server.requests) == 1  # an empty Enter never resends
    assert "Done properly this time." in say(child, "\\retry")
    leave(child)
    assert not (ws / "cut.txt").exists()
    transcript = json.loads(run_gitsessions("show", sessions()[0]["id"], "--json").stdout)
    cut = [m for m in transcript if m.get("incomplete")]
    assert len(cut) == 1 and cut[0]["content"] == "Writing the file now."
    assert cut[0]["unsent_tool_calls"][0]["function"]["name"] == "write_file"
    assert transcript[-1] == {"role": "assistant", "content": "Done properly this time."}


def screen_of(raw: str, rows: int = 50, columns: int = 120) -> list[str]:
    """What a terminal shows after `raw`: the lines of a VT100 screen fed the output."""
    import pyte

    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    stream.feed(raw.replace("\n", "\r\n").replace("\r\r\n", "\r\n"))
    return [line.rstrip() for line in screen.display]


def test_a_long_reply_wraps_instead_of_being_cut_at_the_terminal_width(server, ws):
    words = [f"word{n:03d}" for n in range(300)]
    server.reply(content=" ".join(words))
    child = spawn(server.base_url, ws)
    child.sendline("tell me a long story")
    child.expect(PROMPT)
    shown = screen_of(child.before)
    leave(child)
    on_screen = " ".join(shown).split()
    missing = [w for w in words if w not in on_screen]
    assert missing == [], f"{len(missing)} words not on screen, first {missing[:5]}"


def test_ctrl_c_mid_stream_keeps_the_partial_reply_marked_interrupted(server, ws):
    server.reply(content="First part of the answer. " + "and more " * 150, trickle=0.005)
    child = spawn(server.base_url, ws)
    child.sendline("a long answer please")
    child.expect_exact("First part of the answer.")
    child.sendintr()
    child.expect_exact("cancelled; the session is saved")
    child.expect(PROMPT)
    server.reply(content="short one")
    assert "short one" in say(child, "shorter then")
    leave(child)
    transcript = json.loads(run_gitsessions("show", sessions()[0]["id"], "--json").stdout)
    cut = [m for m in transcript if m.get("incomplete")]
    assert len(cut) == 1 and cut[0]["interrupted"] is True
    assert cut[0]["content"].startswith("First part of the answer.")
    roles = [m["role"] for m in transcript[1:]]
    assert roles == ["user", "assistant", "assistant", "user", "assistant"]
    # the new prompt is sent alone, after a note saying the last request was interrupted
    # (the list summary is asked after it: the cancelled first turn had none asked)
    sent = [r for r in server.requests if r.get("tools")][-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "a long answer please" and sent[3]["content"] == "shorter then"
    assert "interrupted by the user (Ctrl-C)" in sent[2]["content"]
    assert "First part of the answer." in sent[2]["content"]


def test_a_prompt_after_a_cancelled_one_is_sent_alone_and_undone_alone(server, ws):
    """Defect 1 of issue 20: Ctrl-C during a long streamed reply, then a new prompt: the
    server gets the new prompt alone, the old one closed by an interruption note with
    the partial reply (cut); one \\undo takes the new turn away; \\retry alone resends."""
    held = threading.Event()  # the server stops after the first piece (4,000 characters)
    server.reply(content="BIG " * 3_000, hold=held)
    child = spawn(server.base_url, ws)
    try:
        child.sendline("BIG 300000")
        child.expect_exact("BIG BIG")
        child.sendintr()
        child.expect_exact("cancelled; the session is saved")
        child.expect(PROMPT)
    finally:
        held.set()
    server.reply(content="4")
    say(child, "what is 2+2")
    # the list summary may be asked after it (the cancelled first turn had none asked)
    sent = [r for r in server.requests if r.get("tools")][-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [sent[1]["content"], sent[3]["content"]] == ["BIG 300000", "what is 2+2"]
    note = sent[2]["content"]
    assert note.startswith("[gitsessions: the request for the message above was interrupted")
    assert "BIG BIG" in note and len(note) < 3_000  # the partial reply, cut
    assert "undone: turn 2" in say(child, "\\undo")
    server.reply(content="6")
    say(child, "what is 3+3")
    sent = [r for r in server.requests if r.get("tools")][-1]["messages"]
    assert [m["content"] for m in sent[1:2] + sent[3:]] == ["BIG 300000", "what is 3+3"]
    assert sent[2]["content"] == note  # the note stays with the prompt it closes
    leave(child)
    assert server.rejected == []


def test_a_prompt_after_continuing_an_unanswered_session_is_sent_alone(server, ws):
    failed_start(ws, "first try")  # as a chat left with the server down: saved, unanswered
    server.reply(content="fresh answer")
    child = spawn(server.base_url, ws, "--continue")
    assert "no reply yet" in plain(child.before)
    assert "fresh answer" in say(child, "something else")
    leave(child)
    sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [sent[1]["content"], sent[3]["content"]] == ["first try", "something else"]
    assert "no reply had arrived" in sent[2]["content"]
    assert server.rejected == []


@pytest.mark.parametrize("run", range(10))
def test_the_first_ctrl_c_cancels_a_held_streamed_reply(server, ws, run):
    """The server holds its streamed reply, in even runs after the first piece, in odd
    ones before any (the Ctrl-C then comes while the first request is being made): one
    Ctrl-C cancels, every time (the request runs in a worker thread; the main thread
    only waits). Thirty tries: ten chats, the first of each chat's three turns its
    process's first request."""
    first = run % 2 == 0
    text = "Held answer begins here, then the server waits"
    child = spawn(server.base_url, ws)
    for turn in range(3):
        held = threading.Event()
        server.reply(content=text, hold=held, hold_at=2 if first else 0)
        try:
            child.sendline(f"hold on {turn}")
            child.expect_exact("Held" if first else "thinking")
            child.sendintr()  # once: a second press would hide a first one lost
            child.expect_exact("cancelled; the session is saved")
            child.expect(PROMPT)
        finally:
            held.set()
    leave(child)
    prompts = [r["messages"][-1]["content"] for r in server.requests if r.get("tools")]
    assert prompts == ["hold on 0", "hold on 1", "hold on 2"]


def test_undo_drops_the_last_turn_from_the_context_and_keeps_the_record(server, ws):
    child = spawn(server.base_url, ws)
    server.reply(content="answer one")
    server.reply(content="A title")  # the list summary, asked in the background after it
    say(child, "first question")
    server.reply(content="answer two")
    say(child, "second question")
    assert "undone: turn 2" in say(child, "\\undo")
    server.reply(content="answer three")
    say(child, "third question")
    sent = server.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first question", "answer one", "third question"]
    assert "undone: turn 3" in say(child, "\\undo")
    assert "undone: turn 1" in say(child, "\\undo")
    assert "nothing to undo" in say(child, "\\undo")
    leave(child)
    sid = sessions()[0]["id"]
    transcript = json.loads(run_gitsessions("show", sid, "--json").stdout)
    assert [m["content"] for m in transcript if m["role"] == "user"] == [
        "first question",
        "second question",
        "third question",
    ]
    context = json.loads(run_gitsessions("show", sid, "--context", "--json").stdout)
    assert [m["role"] for m in context] == ["system"]
    log = json.loads(run_gitsessions("log", sid, "--json").stdout)
    undos = [e["subject"] for e in log if e["event"] == "undo"]
    assert undos == ["undo: turn 1", "undo: turn 3", "undo: turn 2"]


def test_retry_sends_the_last_prompt_again_without_the_answer_it_replaces(server, ws):
    child = spawn(server.base_url, ws)
    server.reply(content="a poor answer")
    server.reply(content="A title")  # the list summary, asked in the background after it
    say(child, "explain git")
    server.reply(content="a better answer")
    assert "a better answer" in say(child, "\\retry")
    sent = server.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["explain git"]
    say(child, "")  # an empty Enter sends nothing
    assert len([r for r in server.requests if r.get("tools")]) == 2  # the title aside
    leave(child)
    transcript = json.loads(run_gitsessions("show", sessions()[0]["id"], "--json").stdout)
    assert [m["content"] for m in transcript[1:]] == [
        "explain git",
        "a poor answer",
        "explain git",
        "a better answer",
    ]


def test_a_rate_limited_request_is_retried_with_a_countdown(server, ws):
    server.fail(429, retry_after="2")
    server.reply(content="served after the wait")
    child = spawn(server.base_url, ws)
    out = say(child, "hello")
    assert "rate limited (HTTP 429): retrying in 2 s (1 of 3)" in out
    assert "served after the wait" in out and "error" not in out
    leave(child)


def test_compaction_and_titles_show_a_spinner_with_the_reason_and_one_result_line(server, ws):
    from tests.test_auto_compaction import responder

    (ws / "big.txt").write_text(" ".join(f"w{i:04d}" for i in range(700)))
    server.responder = responder
    child = spawn(server.base_url, ws, "--max-context-tokens", "4000")
    first = say(child, "read big.txt")
    assert "writing the session title" not in first  # asked in the background
    second = say(child, "read it again")
    assert re.search(r"context at \d\d% of 4,000 tokens: compacting", second)
    results = re.findall(r"compacted [\d,]+ -> [\d,]+ tokens \(auto\)", second)
    assert len(results) == 1, second
    assert "summarize" not in second and "stage" not in second  # no internal wording
    manual = say(child, "\\compact")
    assert "compacting the context" in manual
    leave(child)
    assert server.rejected == []


def test_a_status_line_after_each_turn_unless_quiet(server, ws, home):
    (home).mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[prices."fake-model"]\nprompt = 1000.0\ncompletion = 2000.0\n'
    )
    server.reply(content="one", usage=(100, 10))  # $0.10 + $0.02
    server.reply(content="A title")  # the list summary, asked in the background after it
    child = spawn(server.base_url, ws)
    out = say(child, "first")
    status = re.search(
        r"turn 1 · context ([\d,]+) / 24,000 tokens \((\d+)%\) · turn cost \$([\d.]+) · "
        r"session \$([\d.]+)",
        out,
    )
    assert status, out
    assert status.group(3) != "0.0000" and float(status.group(4)) >= float(status.group(3))
    server.reply(content="two", usage=(100, 10))
    shown = say(child, "second")
    second = re.search(r"session \$([\d.]+)", shown)
    assert second and float(second.group(1)) > float(status.group(4))
    assert "turn 2 · context" in shown  # the N of \rewind N, without `gitsessions log`
    assert "undone: turn 2" in say(child, "\\undo")
    assert "turn 3 · context" in say(child, "third")  # numbers go on after an undo
    leave(child)
    child = spawn(server.base_url, ws, "--quiet")
    assert "tokens (" not in say(child, "third")
    leave(child)


def test_a_chat_opened_and_left_makes_no_session(server, ws, home):
    child = spawn(server.base_url, ws)
    assert "new session" in plain(child.before)
    say(child, "\\help")
    assert "nothing to compact yet" in say(child, "\\compact")
    child.sendeof()
    child.expect(pexpect.EOF)
    assert "no session was saved" in plain(child.before)
    assert sessions() == [] and server.requests == []
    assert list((home / "leases").glob("*")) == []  # no lease file of a session never made


def spawn_picker(server_url: str, workspace: Path, *args: str) -> pexpect.spawn:
    """`chat` that starts with a picker (no prompt to wait for yet)."""
    env = dict(os.environ, TERM="xterm", COLUMNS="120", LINES="50")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--base-url", server_url, "--model", "fake-model",
         "--workspace", str(workspace), *args],
        env=env, encoding="utf-8", timeout=30, cwd=str(REPO), dimensions=(50, 120),
    )  # fmt: skip
    return as_a_terminal(child)


class HourAgo(datetime):
    """The clock an hour back: values/clock.py reads the time through `datetime.now`."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> "HourAgo":
        return cls.fromtimestamp(time.time() - 3600, tz)


def test_resume_without_an_id_and_sessions_pick_from_this_workspace(
    server, ws, tmp_path, monkeypatch
):
    def summarized(prompt: str, where: Path) -> str:
        server.reply(content="ok")
        server.reply(content=f"about {prompt}")  # the list summary
        done = run_gitsessions(*exec_args(server, where), prompt, "--json")
        return json.loads(done.stdout)["session"]

    with monkeypatch.context() as earlier:  # activity is recorded to the second
        earlier.setattr(clock, "datetime", HourAgo)
        older = summarized("older work", ws)
    newer = summarized("newer work", ws)
    active = {row["id"]: row["active_at"] for row in sessions()}
    assert active[older] < active[newer]  # an hour apart
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    summarized("other project", elsewhere)
    child = spawn_picker(server.base_url, ws, "--resume")
    child.expect_exact("Esc cancels")
    shown = plain(child.before)
    assert "about newer work" in shown and "about older work" in shown
    assert "other project" not in shown  # another workspace's session is not offered
    assert shown.index(newer[:8]) < shown.index(older[:8])  # the most recent first
    child.send("2")  # a number picks at once when no longer number starts with it
    child.expect(PROMPT)
    assert f"session {older[:8]} (resumed)" in plain(child.before)
    # \sessions: arrow keys move, Enter picks, the chat goes on in the picked session
    child.sendline("\\sessions")
    child.expect_exact("Esc cancels")
    assert "(this session)" in plain(child.before)
    child.send("\x1b[B")
    child.send("\x1b[A")
    child.send("\r")
    child.expect(PROMPT)
    assert f"session {newer[:8]} (resumed)" in plain(child.before)
    server.reply(content="continued in the newer one")
    say(child, "go on")
    leave(child)
    transcript = json.loads(run_gitsessions("show", newer, "--json").stdout)
    assert transcript[-1]["content"] == "continued in the newer one"
    # Esc cancels: nothing is opened
    child = spawn_picker(server.base_url, ws, "--resume")
    child.expect_exact("Esc cancels")
    child.send("\x1b")
    child.expect(pexpect.EOF)
    assert "no session picked" in plain(child.before)


def test_resume_without_an_id_and_no_terminal_lists_and_says_so(server, ws):
    server.reply(content="ok")
    server.reply(content="a summary")
    sid = json.loads(run_gitsessions(*exec_args(server, ws), "hi", "--json").stdout)["session"]
    args = ["chat", "--resume", "--base-url", server.base_url, "--workspace", str(ws)]
    done = run_gitsessions_process(*args, input="")
    assert done.returncode == 2
    assert f" 1. {sid[:8]}" in done.stderr
    assert "error: stdin is not a terminal, so no session can be picked" in done.stderr
    assert run_gitsessions("exec", "--resume", "--", "x").returncode == 2


def test_the_picker_offers_a_failed_start_last_and_marked(server, ws, monkeypatch):
    """Defect 7 of issue 20: the picker's default (its first line) is a session a model
    answered, never a newer failed start."""
    with monkeypatch.context() as earlier:  # the failed start is the most recently active
        earlier.setattr(clock, "datetime", HourAgo)
        answered = json.loads(run_gitsessions(*exec_args(server, ws), "real", "--json").stdout)
    failed = failed_start(ws, "hello?")  # as a chat left after its first request failed
    args = ["chat", "--resume", "--base-url", server.base_url, "--workspace", str(ws)]
    listed = run_gitsessions_process(*args, input="").stderr
    assert f" 1. {answered['session'][:8]}" in listed
    assert f" 2. {failed[:8]}" in listed and '"hello?" (no reply)' in listed


def test_the_prompt_shows_before_the_server_is_asked_anything(server, ws):
    """Issue 10 (speed): a new chat's prompt waits for nothing slow. The server holds its
    model list (GET /models) until the test has seen the prompt: the prompt shows all
    the same. The first prompt sent then waits for the list; what the background work
    found (no git repository: no snapshots; the model missing from the list) prints
    before the reply, in that order."""
    held = server.hold_models()
    server.models = ["other-model"]
    try:
        child = spawn(server.base_url, ws)
        before = plain(child.before)
        assert server.model_lists == 0 and server.requests == []
        assert "no code snapshots" not in before and "does not list" not in before
        held.set()
        server.reply(content="hello back")
        out = " ".join(say(child, "hi").split())
    finally:
        held.set()
    snapshots = out.index("not in a git repository; no code snapshots")
    assert snapshots < out.index("does not list model 'fake-model'") < out.index("hello back")
    leave(child)
    assert server.model_lists == 1 and len(sessions()) == 1


def test_a_resumed_chat_shows_its_prompt_while_the_server_holds_its_model_list(server, ws):
    """A resumed chat's prompt waits for nothing slow either: its banner and its
    unanswered prompt are read from the session before it; the agent is built and the
    server asked while the user types, and what they found prints before the reply."""
    sid = failed_start(ws, "important prompt")  # as a chat left with the server down
    held = server.hold_models()
    server.models = ["other-model"]
    try:
        child = spawn(server.base_url, ws, "--resume", sid[:8])
        before = " ".join(plain(child.before).split())
        assert server.model_lists == 0 and server.requests == []
        assert f"session {sid[:8]} (resumed) · fake-model at {server.base_url}" in before
        assert "the last prompt has no reply yet: \\retry sends it again" in before
        assert "no code snapshots" not in before and "does not list" not in before
        held.set()
        server.reply(content="answered at last")
        out = " ".join(say(child, "\\retry").split())
    finally:
        held.set()
    snapshots = out.index("not in a git repository; no code snapshots")
    assert snapshots < out.index("does not list model 'fake-model'") < out.index("answered at last")
    leave(child)
    assert server.model_lists == 1 and len(sessions()) == 1
    sent = server.requests[0]["messages"]
    assert sent[-1] == {"role": "user", "content": "important prompt"}


def test_ctrl_c_while_the_first_prompt_waits_sends_nothing(server, ws):
    held = server.hold_models()
    try:
        child = spawn(server.base_url, ws)
        child.sendline("first try")
        child.expect_exact("asking the model server at")  # the line was taken; it waits
        child.sendintr()
        child.expect_exact("cancelled; nothing was sent")
        child.expect(PROMPT)
        held.set()
        server.reply(content="answered")
        assert "answered" in say(child, "second try")
    finally:
        held.set()
    leave(child)
    assert [m["content"] for m in server.requests[0]["messages"] if m["role"] == "user"] == [
        "second try"
    ]
    assert "first try" not in json.dumps(server.requests) and len(sessions()) == 1


def test_leaving_at_the_first_prompt_waits_for_no_server(server, ws):
    """Ctrl-D at the first prompt while the server still holds its model list: the chat
    leaves at once, cleanly, and stores nothing."""
    held = server.hold_models()
    try:
        child = spawn(server.base_url, ws)
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
        said = plain(child.before)
    finally:
        held.set()
    assert child.exitstatus == 0 and "Traceback" not in said
    assert "no session was saved" in said and sessions() == []


def test_what_chat_refuses_it_refuses_before_its_prompt(ws, home):
    """A budget too small for the agent, or a bad setting in config.toml, is refused
    before the prompt shows, without a session (the agent is built after it)."""
    chat = ("chat", "--base-url", "http://127.0.0.1:9/v1", "--workspace", str(ws))
    small = run_gitsessions_process(*chat, "--max-context-tokens", "1000", input="")
    assert small.returncode == 2 and "--max-context-tokens 1000 is too small" in small.stderr
    assert not (home / "store.git").exists()  # nothing was built
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[shell]\nsandbox = "everything"\n', encoding="utf-8")
    bad = run_gitsessions_process(*chat, input="")
    assert bad.returncode == 2 and "sandbox 'everything'" in bad.stderr
    for done in (small, bad):
        assert "> " not in done.stdout and "new session" not in done.stderr
    assert sessions() == []


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` and everything under it unwritable, even by root (immutable with chattr,
    else without write permission); skipped where neither makes it so."""
    chattr = subprocess.run(["chattr", "-R", "+i", str(path)], capture_output=True)
    if chattr.returncode != 0:
        subprocess.run(["chmod", "-R", "a-w", str(path)], check=True)
    try:
        probe = path / "probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("cannot make a folder read-only here")
        yield
    finally:
        if chattr.returncode == 0:
            subprocess.run(["chattr", "-R", "-i", str(path)], check=True)
        else:
            subprocess.run(["chmod", "-R", "u+w", str(path)], check=True)


def test_a_read_only_home_is_refused_before_the_prompt(server, ws, home):
    """Defect 8 of issue 20: the home's writability (where the lease goes) is checked
    before the prompt, new or resumed: nothing is typed in vain."""
    server.reply(content="stored")
    made(server, ws, "a first session")
    args = ["--base-url", server.base_url, "--workspace", str(ws)]
    with read_only(home):
        done = run_gitsessions_process("chat", *args, input="typed in vain\n")
        assert done.returncode == 1, done.stderr
        assert "error: cannot write in" in done.stderr and "leases" in done.stderr
        assert "gitsessions ·" not in done.stderr  # no banner: no prompt was shown
        # resumed: the header cache or the lease check says it, before the prompt too
        done = run_gitsessions_process("chat", *args, "--continue", input="typed in vain\n")
        assert done.returncode == 1 and "error:" in done.stderr, done.stderr
        assert "gitsessions ·" not in done.stderr
    assert [r["messages"][-1]["content"] for r in server.requests if r.get("tools")] == [
        "a first session"
    ]


def test_a_prompt_the_home_cannot_store_is_kept_in_the_input_history(server, ws, home):
    """The home turns read-only once the chat is open: the prompt is not sent, the chat
    says it is in the input history, and the Up arrow sends it once the home is back."""
    child = spawn(server.base_url, ws)
    say(child, "\\help")  # the chat is built: its lease is held
    with read_only(home):
        out = say(child, "my precious prompt")
    assert "error: the prompt could not be saved, so it was not sent" in out
    assert "your prompt is kept in the input history" in out
    assert server.requests == []
    server.reply(content="got it")
    child.send("\x1b[A\r")  # the Up arrow, then Enter
    child.expect(PROMPT)
    assert "got it" in plain(child.before)
    leave(child)
    sent = [r["messages"] for r in server.requests if r.get("tools")]
    assert [[m["role"] for m in s] for s in sent] == [["system", "user"]]
    assert sent[0][-1]["content"] == "my precious prompt"


def test_resuming_shows_the_title_and_the_last_exchange(server, ws):
    """Defect 11 of issue 20: `--continue` and `--resume` say where the session was."""
    server.reply(content="first reply")
    server.reply(content="Parser fixes")  # the title written after the first reply
    sid = made(server, ws, "fix the parser")
    long_reply = "\n".join(f"line {n} " + "x" * 150 for n in range(1, 8))
    server.reply(content=long_reply)
    made(server, ws, "and explain\nwhat you did", "--resume", sid)
    for how in (["--continue"], ["--resume", sid[:8]]):
        child = spawn(server.base_url, ws, *how)
        shown = plain(child.before)
        leave(child)
        assert "summary: Parser fixes" in shown and "title:" not in shown  # as `info` says
        assert "last exchange (turn 2):" in shown  # the N of \\rewind N
        assert "you: and explain" in shown and "what you did" in shown
        assert "model: line 1 xxx" in shown and "line 3 xxx" in shown
        assert "line 4" not in shown and "… 4 more lines" in shown
        assert "x" * 99 not in shown and "x" * 90 + "…" in shown  # each line cut
        assert "first reply" not in shown  # only the last exchange


def test_the_resume_banner_after_a_rewind_names_the_turn_it_shows(server, ws):
    """Issue 41, item 7: after a rewind to turn 1 the banner said `last exchange (turn
    3)` over turn 1's exchange, and `title:` over a summary `info` does not call a title."""
    server.reply(content="first reply")
    server.reply(content="Parser fixes")  # the list summary, asked after the first reply
    sid = made(server, ws, "first prompt")
    for n in (2, 3):
        server.reply(content=f"reply {n}")
        made(server, ws, f"prompt {n}", "--resume", sid)
    rewound = run_gitsessions("rewind", sid[:8], "--to", "turn:1", "--chat")
    assert rewound.returncode == 0, rewound.stderr
    info = dict(line.split("\t") for line in run_gitsessions("info", sid).stdout.splitlines())
    assert info["title"] == "" and info["summary"] == "Parser fixes"
    child = spawn(server.base_url, ws, "--resume", sid[:8])
    shown = plain(child.before)
    leave(child)
    assert "last exchange (turn 1):" in shown and "you: first prompt" in shown
    assert "summary: Parser fixes" in shown and "title:" not in shown


def test_the_title_is_asked_in_the_background_and_never_holds_the_prompt(server, ws):
    """Defect 4 of issue 20: the title request after the first reply runs while the
    prompt is back; a Ctrl-C at the prompt meanwhile is no cancelled request; the next
    prompt goes once the title is in (in order: one model request at a time)."""
    arrived, held = threading.Event(), threading.Event()

    def respond(request: dict) -> str:
        if request.get("tools"):
            return "second answer"
        arrived.set()  # the title request: held until the test lets it go
        held.wait(60)
        return "Background title"

    server.reply(content="first answer")
    server.responder = respond
    child = spawn(server.base_url, ws)
    try:
        assert "first answer" in say(child, "hello")  # the prompt is back, title held
        assert arrived.wait(30)
        child.sendintr()
        child.expect(PROMPT)
        assert "cancelled" not in plain(child.before)
    finally:
        held.set()
    assert "second answer" in say(child, "next")
    leave(child)
    assert sessions()[0]["summary"] == "Background title"
    kinds = ["turn" if r.get("tools") else "title" for r in server.requests]
    assert kinds == ["turn", "title", "turn"]
    log = json.loads(run_gitsessions("log", sessions()[0]["id"], "--steps", "--json").stdout)
    assert 'turn 1: summary "Background title"' in [e["subject"] for e in log]


def test_a_prompt_of_several_lines_comes_back_from_the_history_whole(server, ws):
    """Defect 10 of issue 20: the Up arrow brought back only the last line."""
    child = spawn(server.base_url, ws)
    child.sendline("first line\\")
    child.sendline("middle line\\")
    say(child, "last line")
    child.send("\x1b[A\r")  # the Up arrow, then Enter
    child.expect(PROMPT)
    leave(child)
    prompts = [r["messages"][-1]["content"] for r in server.requests if r.get("tools")]
    assert prompts == ["first line\nmiddle line\nlast line"] * 2


def test_the_unlisted_model_note_is_said_once_per_model_and_no_price_never_locally(
    server, ws, home
):
    """Defect 10 of issue 20: not at every chat start and session switch. Remembered in
    the home (notes_said.json): a model not seen yet is said once more. Issue 41, item
    10: a model served on this machine (the fake server is on 127.0.0.1) has no price
    to know, so "no price known" is never said for it (tests/test_small_defects.py:
    said once for a remote one)."""
    server.models = ["other-model"]
    child = spawn(server.base_url, ws)
    first = say(child, "hello")
    leave(child)
    assert "does not list model 'fake-model'" in first and "no price known" not in first
    for more in ([], ["--continue"]):
        child = spawn(server.base_url, ws, *more)
        again = plain(child.before) + say(child, "again")
        leave(child)
        assert "does not list model" not in again and "no price known" not in again
    child = spawn(server.base_url, ws, "--model", "third-model")
    third = say(child, "hi")
    leave(child)
    assert "does not list model 'third-model'" in third and "no price known" not in third
    assert json.loads((home / "notes_said.json").read_text())["format"] == 1


def test_ctrl_c_while_a_prompt_waits_for_the_title_skips_the_title_only(server, ws):
    """The next prompt waits for a title still being written (a spinner says so); a
    Ctrl-C skips the title, quietly, and the prompt is sent."""
    arrived, held = threading.Event(), threading.Event()

    def respond(request: dict) -> str:
        if request.get("tools"):
            return "second answer"
        arrived.set()
        held.wait(60)
        return "Too late a title"

    server.reply(content="first answer")
    server.responder = respond
    child = spawn(server.base_url, ws)
    try:
        say(child, "hello")
        assert arrived.wait(30)
        child.sendline("next")
        child.expect_exact("writing the session title (Ctrl-C skips it)")
        child.sendintr()
        child.expect(PROMPT)
        out = plain(child.before)
    finally:
        held.set()
    assert "second answer" in out and "cancelled" not in out
    leave(child)
    assert sessions()[0]["summary"] == ""  # skipped: the late answer is not taken up
    user = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert user == ["hello", "next"]


def test_a_full_home_is_refused_before_the_prompt(server, ws, home):
    """Defect 8 of issue 20, a full disk: the home is a small tmpfs filled up (in a user
    and mount namespace of its own; skipped where the kernel does not allow one)."""
    home.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no user and mount namespaces here")
    script = (
        'mount -t tmpfs -o size=64k gitsessions-test "$GITSESSIONS_HOME" && '
        'dd if=/dev/zero of="$GITSESSIONS_HOME/filler" bs=1k count=128 2>/dev/null; '
        'exec "$0" -m gitsessions chat "$@"'
    )
    args = ["--base-url", server.base_url, "--workspace", str(ws)]
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, sys.executable, *args],
        input="typed in vain\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "error: cannot write in" in done.stderr and "No space left on device" in done.stderr
    assert "gitsessions ·" not in done.stderr and server.requests == []


def test_leaving_when_the_history_cannot_be_kept_says_so(server, ws, home):
    child = spawn(server.base_url, ws)
    say(child, "hello")
    say(child, "\\info")  # the title is in: nothing is left to commit
    with read_only(home):
        child.sendeof()
        child.expect(pexpect.EOF)
        child.wait()
    assert "what you typed is not kept for the next chat" in plain(child.before)
    assert child.exitstatus == 0


def test_the_picker_says_how_many_more_sessions_it_left_out(server, ws, store):
    from gitsessions.cli.picker import SHOWN
    from gitsessions.services.sessions.manage import fork

    server.reply(content="ok")
    server.reply(content="a summary")
    sid = json.loads(run_gitsessions(*exec_args(server, ws), "hi", "--json").stdout)["session"]
    args = ["chat", "--resume", "--base-url", server.base_url, "--workspace", str(ws)]
    assert "older session" not in run_gitsessions_process(*args, input="").stderr  # all shown
    for n in range(SHOWN + 1):
        fork(store, sid, title=f"fork {n}")
    done = run_gitsessions_process(*args, input="")
    assert f"{SHOWN:>2}. " in done.stderr and f"{SHOWN + 1:>2}. " not in done.stderr
    assert "... and 2 older sessions: `gitsessions list --here` lists them all" in done.stderr
    child = spawn_picker(server.base_url, ws, "--resume")
    child.expect_exact("Esc cancels")
    assert "and 2 older sessions" in plain(child.before)
    child.send("\x1b")
    child.expect(pexpect.EOF)
