"""The chat's input line on a real pseudo-terminal (issue 31): keys are written exactly as a
terminal sends them (Enter is `\\r`, a paste is bracketed), and what a person would see is
read off a terminal emulator (pyte) fed everything the chat wrote."""

import io
import json
import os
import random
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

import pexpect
import pyte
import pytest
from rich.console import Console

from gitsessions.cli.chat_input import LEAVE_HINT
from gitsessions.cli.chat_line import COMMANDS
from gitsessions.cli.slash import Slash
from tests.conftest import REPO
from tests.test_chat import PROMPT, as_a_terminal, leave, plain, say, sessions, spawn

TRACEBACK = ["Traceback (most recent call last):"] + [
    f'  File "app.py", line {n}, in step_{n}\n    step_{n + 1}()' for n in range(1, 10)
] + ["ValueError: the twentieth line"]  # fmt: skip
PASTE = "\n".join(TRACEBACK)
assert len(PASTE.split("\n")) == 20


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def recorded(child: pexpect.spawn) -> io.StringIO:
    log = io.StringIO()
    child.logfile_read = log
    return log


def screen(log: io.StringIO, columns: int = 120, lines: int = 50) -> list[str]:
    """The terminal's lines as a person sees them, once everything written is drawn."""
    shown = pyte.Screen(columns, lines)
    pyte.Stream(shown).feed(log.getvalue())
    return [line.rstrip() for line in shown.display]


def prompts(server) -> list[str]:
    """The prompts the model was sent (not the background title requests)."""
    return [r["messages"][-1]["content"] for r in server.requests if r.get("tools")]


def wait_for(condition, what: str) -> None:
    for _ in range(600):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def test_a_pasted_block_is_one_prompt_shown_whole_before_enter(server, ws):
    child = spawn(server.base_url, ws)
    log = recorded(child)
    child.send("\x1b[200~" + PASTE.replace("\n", "\r") + "\x1b[201~")
    child.expect_exact("ValueError: the twentieth line")
    time.sleep(0.3)  # nothing is sent before Enter
    assert prompts(server) == []
    drawn = screen(log)
    assert "> Traceback (most recent call last):" in drawn
    assert '.   File "app.py", line 9, in step_9' in drawn  # each line, continued
    say(child, "")  # Enter
    leave(child)
    assert prompts(server) == [PASTE]  # one prompt, its lines kept


def test_alt_enter_ctrl_j_and_a_trailing_backslash_start_a_new_line(server, ws):
    child = spawn(server.base_url, ws)
    child.send("one\x1b\r")  # Alt-Enter (Esc, then Enter)
    child.send("two\n")  # Ctrl-J
    child.send("three\\\r")  # a backslash, then Enter
    say(child, "four")
    leave(child)
    assert prompts(server) == ["one\ntwo\nthree\nfour"]


def test_the_history_keeps_a_prompt_of_several_lines_as_one_entry_across_chats(server, ws, home):
    key = "ghp_" + "".join(random.choices(string.ascii_letters + string.digits, k=36))
    child = spawn(server.base_url, ws)
    child.send(f"\x1b[200~first line\rsecond line with {key}\x1b[201~")
    say(child, "")
    leave(child)
    entries = [json.loads(x) for x in (home / "chat_history").read_text().splitlines()]
    sid = sessions()[0]["id"]
    assert [e["session"] for e in entries] == [sid]
    assert entries[0]["line"].startswith("first line\nsecond line with ")
    assert key not in entries[0]["line"] and "[REDACTED:github-token]" in entries[0]["line"]
    child = spawn(server.base_url, ws)  # another chat: the Up arrow brings it back whole
    child.send("\x1b[A")
    say(child, "")
    leave(child)
    assert prompts(server)[-1] == entries[0]["line"]


def test_tab_completes_commands_and_session_ids(server, ws):
    server.reply(content="ok")
    child = spawn(server.base_url, ws)
    say(child, "a first prompt")
    sid = sessions()[0]["id"]
    child.send("\\he\t")
    child.expect_exact("\\help")  # completed
    assert "\\exit" in say(child, "")  # and run: its list
    child.send("\\diff \t")
    child.expect_exact(sid[:8])
    child.send("\x03")  # Ctrl-C: the line is dropped, nothing runs
    child.expect(PROMPT)
    leave(child)
    completed = set(COMMANDS)
    assert completed == set(Slash(None, Console(), Console()).commands)  # type: ignore[arg-type]


def test_the_terminal_is_left_as_it_was_found(server, ws, tmp_path):
    """Cooked mode, echo and the rest as `stty` said before, bracketed paste off."""
    before, after = tmp_path / "before", tmp_path / "after"
    script = (
        f"stty -g > {before}; {sys.executable} -m gitsessions chat --base-url "
        f"{server.base_url} --model fake-model --workspace {ws}; stty -g > {after}"
    )
    env = dict(os.environ, TERM="xterm", COLUMNS="120", LINES="50")
    child = pexpect.spawn("sh", ["-c", script], env=env, encoding="utf-8", timeout=30,
                          cwd=str(REPO), dimensions=(50, 120))  # fmt: skip
    as_a_terminal(child)
    child.expect(PROMPT)
    say(child, "hello")
    child.send("\x03")  # Ctrl-C at the prompt
    child.expect(PROMPT)
    leave(child)
    written = child.before
    assert before.read_text() == after.read_text()
    assert written.rfind("\x1b[?2004l") > written.rfind("\x1b[?2004h")


def test_ctrl_c_at_an_empty_prompt_says_how_to_leave(server, ws):
    child = spawn(server.base_url, ws)
    child.send("\x03")
    child.expect(PROMPT)
    assert LEAVE_HINT in plain(child.before)
    child.send("half a prompt\x03")  # a line typed: Ctrl-C drops it, no hint
    child.expect(PROMPT)
    assert LEAVE_HINT not in plain(child.before)
    say(child, "a prompt")
    child.send("\x03")  # and after a turn, as at the first prompt
    child.expect(PROMPT)
    assert LEAVE_HINT in plain(child.before)
    leave(child)


WRITE_X = [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x\n"}}]


def test_keys_typed_before_an_approval_are_discarded_and_said_so(server, ws):
    """Issue 41, item 2: a `y` typed while the model thought was no answer, but it stayed
    in the next prompt's line, glued to what came next, and Ctrl-D no longer left. It is
    dropped when the question shows (as sudo flushes before its password prompt)."""
    held = threading.Event()
    server.reply(content=None, tool_calls=WRITE_X, hold=held, hold_at=0)
    server.reply(content="not written, then")
    child = spawn(server.base_url, ws)
    child.send("write x\r")
    wait_for(lambda: len(prompts(server)) == 1, "the request")
    child.send("y")  # typed while the model is still thinking
    time.sleep(0.3)  # the key reaches the terminal before the question
    held.set()
    child.expect_exact("[y/N/a] ")
    assert "(discarded 1 key typed before the question)" in plain(child.before)
    child.send("n\r")  # the answer, typed after the question
    child.expect(PROMPT)
    # the session's title is asked in the background meanwhile: it must not take the reply
    server.responder = lambda request: "a clean line" if request.get("tools") else "A title"
    assert "a clean line" in say(child, "next prompt")
    leave(child)  # Ctrl-D on the empty line leaves
    assert not (ws / "x.txt").exists()
    denied = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "denied by the user" in denied["content"]
    assert prompts(server)[-1] == "next prompt"


def test_keys_typed_with_a_prompt_neither_answer_its_question_nor_stay(server, ws):
    """Typed in one go with the prompt's Enter: the line editor reads them with it."""
    server.reply(content=None, tool_calls=WRITE_X)
    server.reply(content="not written, then")
    child = spawn(server.base_url, ws)
    child.send("write x\ry\rnext idea")
    child.expect_exact("[y/N/a] ")
    assert "(discarded 11 keys typed before the question)" in plain(child.before)
    child.send("\r")  # no
    child.expect(PROMPT)
    say(child, "")  # the line is empty: Enter sends nothing
    leave(child)
    assert not (ws / "x.txt").exists()
    assert prompts(server)[0] == "write x" and len(prompts(server)) == 2  # and the denial


def test_ctrl_c_at_an_approval_ends_its_line_before_saying_cancelled(server, ws):
    """Issue 41, item 10: `[y/N/a] ^Ccancelled; the session is saved` was one line."""
    server.reply(content=None, tool_calls=WRITE_X)
    child = spawn(server.base_url, ws)
    log = recorded(child)
    child.send("write x\r")
    child.expect_exact("[y/N/a] ")
    child.sendintr()
    child.expect_exact("cancelled; the session is saved")
    child.expect(PROMPT)
    drawn = screen(log)
    leave(child)
    asked = [line for line in drawn if line.startswith("[y/N/a]")]
    assert len(asked) == 1 and "cancelled" not in asked[0], drawn
    assert "cancelled; the session is saved" in drawn
    assert not (ws / "x.txt").exists()


def test_ctrl_d_typed_while_a_turn_runs_leaves_at_its_end(server, ws):
    held = threading.Event()
    server.reply(content="zebra answer", hold=held)
    child = spawn(server.base_url, ws)
    child.send("a question\r")
    child.expect_exact("zeb")  # streaming
    child.sendeof()
    time.sleep(0.3)
    held.set()
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0


def test_ctrl_c_of_a_running_tool_leaves_no_spinner_frame(server, ws):
    """Issue 31, item 6: the ^C a terminal echoes at the end of the spinner's last line
    wrapped it, and the spinner's last frame stayed above."""
    command = "echo started-42; until [ -e go ]; do sleep 0.1; done"
    server.reply(
        content=None, tool_calls=[{"name": "run_shell", "arguments": {"command": command}}]
    )
    child = spawn(server.base_url, ws, "--auto-approve")
    log = recorded(child)
    child.send("wait for it\r")
    child.expect("started-42")
    time.sleep(0.5)  # a few frames drawn
    child.sendintr()
    child.expect_exact("cancelled")
    child.expect(PROMPT)
    drawn = screen(log)
    leave(child)
    frames = [line for line in drawn if "until [" in line and not line.startswith("->")]
    assert frames == [], drawn


def test_retry_after_undo_sends_the_undone_prompt(server, ws):
    server.reply(content="answer one")
    server.reply(content="A title")  # the list summary, asked in the background
    child = spawn(server.base_url, ws)
    say(child, "first question")
    server.reply(content="answer two")
    say(child, "second question")
    assert "undone: turn 2" in say(child, "\\undo")
    server.reply(content="answer two again")
    said = say(child, "\\retry")
    sent = server.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first question", "answer one", "second question"]
    assert "the undone prompt again: second question" in said
    server.reply(content="answer two, third time")
    say(child, "\\retry")  # no undo just before: the last prompt, as always
    sent = server.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first question", "answer one", "second question"]
    leave(child)


def test_a_piped_chat_still_reads_plain_lines(server, ws, home):
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "chat", "--base-url", server.base_url,
         "--model", "fake-model", "--workspace", str(ws)],
        input="one\\\ntwo\n", capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert prompts(server) == ["one\ntwo"]
    assert not (home / "chat_history").exists()  # no line editor: no history, as before


def test_the_screen_has_no_stray_escape_codes_after_leaving(server, ws):
    child = spawn(server.base_url, ws)
    log = recorded(child)
    say(child, "hello")
    leave(child)
    drawn = "\n".join(screen(log))
    assert "[?2004" not in drawn and "^[" not in drawn and "\x1b" not in drawn
    assert Path(ws).exists()
