"""`gitsessions exec` as a real subprocess against a real fake model server."""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, exec_args, fsck, git, run_gitsessions
from tests.hostile_servers import redirector


def exec_(server, workspace: Path, *args: str, input: str | None = None):
    return run_gitsessions(
        *exec_args(server, workspace),
        *args,
        input=input,
    )


def tool(name: str, **arguments):
    return {"name": name, "arguments": arguments}


def test_multi_step_tool_turn_changes_files_and_commits(server, tmp_path, home):
    ws = tmp_path / "project"
    ws.mkdir()
    server.reply(
        content=None, tool_calls=[tool("write_file", path="hello.py", content="print('hello')\n")]
    )
    server.reply(content=None, tool_calls=[tool("run_shell", command="python3 hello.py")])
    server.reply(content="Created hello.py and ran it.", usage=(300, 20))
    server.reply(content="Hello script")  # the list summary, asked after the reply is out
    done = exec_(server, ws, "write a hello script", "--auto-approve", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reply"] == "Created hello.py and ran it."
    assert (ws / "hello.py").read_text() == "print('hello')\n"
    assert result["usage"]["requests"] == 3 and result["compacted"] is False  # the turn's
    # the second request carried the write_file result, the third the shell output
    tool_results = [m for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert tool_results[-1]["content"].startswith("exit code: 0")
    assert "hello" in tool_results[-1]["content"]
    sid = result["session"]
    branch = f"refs/heads/sessions/{sid}"
    log = git(
        home / "store.git", "log", "--format=%s|%(trailers:key=Event,valueonly,separator=)", branch
    ).stdout.splitlines()
    assert log[:5] == [  # every step says what it did
        'turn 1: summary "Hello script"|turn',
        'turn 1.3: reply "Created hello.py and ran it."|turn',
        "turn 1.2: run_shell python3 hello.py|turn",
        "turn 1.1: write_file hello.py|turn",
        "turn 1: write a hello script|turn",
    ]
    assert log[-1].endswith("|create")
    assert git(home / "store.git", "rev-parse", f"{branch}~1").stdout.strip() == result["commit"]
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert info["summary"] == "Hello script" and info["messages"] == 7
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    tools = [a for a in audit if a["operation"] == "tool"]
    assert [t["tool"] for t in tools] == ["write_file", "run_shell"]
    assert all(t["outcome"] == "ok" and len(t["arguments_sha256"]) == 64 for t in tools)
    fsck(home)


def test_mutating_tools_denied_without_auto_approve(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    server.reply(content=None, tool_calls=[tool("write_file", path="x.txt", content="x")])
    server.reply(content="I could not write the file.")
    done = exec_(server, ws, "write x")
    assert done.returncode == 3, done.stderr  # the work was stopped by the denial
    assert not (ws / "x.txt").exists()
    denied = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    note = "not run: exec needs --auto-approve to write files or run commands"
    assert denied["content"].startswith(f"error: {note}. This write_file call was not run")
    assert "no one was asked" in denied["content"] and "by the user" not in denied["content"]
    assert done.stdout.strip() == "I could not write the file."
    assert f"   error: {note}." in done.stderr and "by the user" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == note
    server.reply(content=None, tool_calls=[tool("run_shell", command="touch y.txt")])
    server.reply(content="Denied again.")
    result = exec_(server, ws, "touch y", "--json")
    assert result.returncode == 3 and json.loads(result.stdout)["stopped"] == note
    server.reply(content="Nothing to write.")  # no tool needed: nothing was stopped
    assert exec_(server, ws, "just talk").returncode == 0


def test_prompt_from_stdin_and_continue(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    first = exec_(server, ws, "-", "--json", input="first question\n")
    sid = json.loads(first.stdout)["session"]
    second = exec_(server, ws, "second question", "--continue", "--json")
    assert json.loads(second.stdout)["session"] == sid
    sent = server.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "first question\n",
        "second question",
    ]


def test_model_errors_are_one_line_and_keep_the_prompt(server, tmp_path, home):
    ws = tmp_path / "p"
    ws.mkdir()
    server.reply(content="first answer")
    server.reply(content="a summary")
    sid = json.loads(exec_(server, ws, "first", "--json").stdout)["session"]
    for _ in range(4):  # the first try and 3 retries
        server.fail(status=500, retry_after="0")
    done = exec_(server, ws, "keep me", "--resume", sid)  # a fresh one keeps none: issue 31
    assert done.returncode == 1
    assert done.stderr.count("server error (HTTP 500): retrying in 0 s") == 3
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in done.stderr
    shown = run_gitsessions("show", sid, "--json").stdout
    assert json.loads(shown)[-1] == {"role": "user", "content": "keep me"}


def test_unreachable_endpoint_says_what_to_check(tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    done = run_gitsessions(
        "exec", "hi", "--workspace", str(ws), "--base-url", "http://127.0.0.1:9/v1"
    )
    assert done.returncode == 1
    assert "cannot reach" in done.stderr and "--base-url" in done.stderr
    lines = done.stderr.strip().splitlines()
    lines = [line for line in lines if "no code snapshots" not in line]  # ws is no git repo
    assert len(lines) <= 3  # session id line, nothing was saved, the error
    assert "nothing was saved" in lines[-2]


def test_malformed_tool_calls_get_error_results_and_the_loop_goes_on(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    server.reply(content=None, tool_calls=[{"name": "read_file", "arguments": "{not json"}])
    server.reply(content=None, tool_calls=[tool("no_such_tool")])
    server.reply(content="recovered")
    done = exec_(server, ws, "go", "--json")
    assert json.loads(done.stdout)["reply"] == "recovered"
    results = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert results[0].startswith("error:") and "unknown tool" in results[1]


def test_repeated_tool_failures_end_the_turn(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    for _ in range(5):
        server.reply(content=None, tool_calls=[tool("no_such_tool")])
    done = exec_(server, ws, "go")
    assert done.returncode == 3
    assert "every tool call failed" in done.stderr
    assert len(server.requests) == 3


def test_max_steps(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "a.txt").write_text("a")
    for _ in range(3):
        server.reply(content=None, tool_calls=[tool("read_file", path="a.txt")])
    done = exec_(server, ws, "loop", "--max-steps", "2")
    assert done.returncode == 3 and "--max-steps" in done.stderr
    assert len(server.requests) == 2


def test_archived_session_is_refused(server, tmp_path, cli):
    ws = tmp_path / "p"
    ws.mkdir()
    sid = json.loads(exec_(server, ws, "hi", "--json").stdout)["session"]
    cli("archive", sid)
    done = exec_(server, ws, "again", "--resume", sid[:6])
    assert done.returncode == 1 and "unarchive" in done.stderr


def test_file_tools_stay_in_the_workspace(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    os.symlink(outside, ws / "link.txt")
    server.reply(
        content=None,
        tool_calls=[
            tool("read_file", path=str(outside)),
            tool("read_file", path="../outside.txt"),
            tool("read_file", path="link.txt"),
            tool("write_file", path="../evil.txt", content="x"),
        ],
    )
    server.reply(content="done")
    exec_(server, ws, "escape", "--auto-approve")
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 4 and all(r.startswith("error:") for r in results)
    assert not any("secret" in r for r in results)
    assert not (tmp_path / "evil.txt").exists()


def test_workspace_head_recorded(server, tmp_path, home):
    ws = tmp_path / "repo"
    ws.mkdir()
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
    )
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(ws), *args], check=True, env=env)
    ws_head = subprocess.run(
        ["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    sid = json.loads(exec_(server, ws, "hi", "--json").stdout)["session"]
    info = json.loads(run_gitsessions("info", sid, "--json").stdout)
    assert info["workspace"]["head"] == ws_head and info["workspace"]["branch"] == "main"
    trailer = git(
        home / "store.git",
        "log",
        "-1",
        "--format=%(trailers:key=Workspace-Head)",
        f"refs/heads/sessions/{sid}",
    ).stdout.strip()
    assert trailer == f"Workspace-Head: {ws_head}"


def test_repeated_tool_call_ids_are_stored_so_the_export_imports_again(server, tmp_path, home):
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha")
    (ws / "b.txt").write_text("beta")
    same = [
        {"id": "call_0", "name": "read_file", "arguments": {"path": "a.txt"}},
        {"id": "call_0", "name": "read_file", "arguments": {"path": "b.txt"}},
    ]
    server.reply(content=None, tool_calls=same)
    server.reply(content="read both")
    done = exec_(server, ws, "read a and b", "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    results = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_0", "call_0-2"]
    assert "alpha" in results[0]["content"] and "beta" in results[1]["content"]
    exported = tmp_path / "s.json"
    assert run_gitsessions("export", sid, "-o", str(exported)).returncode == 0
    imported = run_gitsessions("import", str(exported), "--new-id")
    assert imported.returncode == 0, imported.stderr
    assert len(json.loads(run_gitsessions("list", "--json").stdout)) == 2
    fsck(home)


def test_timeout_is_a_deadline_for_the_whole_request(server, tmp_path, home):
    ws = tmp_path / "p"
    ws.mkdir()
    server.reply(content="a very slow answer " * 20, trickle=0.3)  # minutes at this pace
    env = dict(os.environ, GITSESSIONS_TIMEOUT="1")
    done = run_gitsessions(
        "exec", "hi", "--base-url", server.base_url, "--workspace", str(ws), env=env, timeout=60
    )
    assert done.returncode == 1
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("error: the model did not finish within 1 s")
    assert "GITSESSIONS_TIMEOUT" in error and "Traceback" not in done.stderr
    # the reply never finished (on a loaded machine the deadline may pass before a byte)
    assert len(server.progress) <= 1 and all(sent < total for sent, total in server.progress)
    fsck(home)


def test_a_reply_whose_commit_fails_is_still_printed(server, tmp_path, home):
    """A real write failure mid-turn: once the model is asked (the prompt is committed),
    the exec process may no longer grow any file (RLIMIT_FSIZE 0, as on a full disk), so
    committing the reply fails with EFBIG."""
    ws = tmp_path / "p"
    ws.mkdir()
    child: list[subprocess.Popen[str]] = []

    def answer(request):
        if request.get("max_tokens") is None:  # the turn's request, not the title summary
            resource.prlimit(child[0].pid, resource.RLIMIT_FSIZE, (0, 0))
            return "the answer that must not be lost"
        return "a title"

    server.responder = answer
    for json_flag in ([], ["--json"]):
        args = ["exec", "question", "--base-url", server.base_url, "--workspace", str(ws)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitsessions", *args, *json_flag],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        child[:] = [proc]
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 1, stderr
        # dulwich's lock file, whose close failed too, reports it again when collected at
        # exit ("Exception ignored in: ..._GitFile.__del__"): the store's business, not the
        # turn's; everything before it must be clean.
        stderr = stderr.split("Exception ignored in: <function _GitFile.__del__")[0]
        assert "Traceback" not in stderr
        error = stderr.strip().splitlines()[-1]
        assert error.startswith("error: the reply could not be saved: File too large")
        if json_flag:
            result = json.loads(stdout)
            assert result["reply"] == "the answer that must not be lost"
            assert result["error"] == error.removeprefix("error: ")
        else:
            assert stdout.strip() == "the answer that must not be lost"
    fsck(home)
    # the store is intact: the prompt was saved, and a session continues normally
    sessions = json.loads(run_gitsessions("list", "--json").stdout)
    assert len(sessions) == 2
    sid = sessions[0]["id"]
    shown = json.loads(run_gitsessions("show", sid, "--json").stdout)
    assert shown[-1] == {"role": "user", "content": "question"}
    server.responder = None
    server.reply(content="now saved")
    again = exec_(server, ws, "once more", "--resume", sid, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["reply"] == "now saved"


def test_nan_or_lone_surrogate_in_tool_arguments_gets_an_error_result(server, tmp_path, home):
    """Arguments that have no canonical JSON (NaN, a lone surrogate escape) must not abort
    the turn: the call gets an error result, the next step runs, the session is stored."""
    ws = tmp_path / "p"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    server.reply(
        content=None,
        tool_calls=[
            {"name": "read_file", "arguments": '{"path": NaN}'},
            {"name": "read_file", "arguments": '{"path": "\\ud800"}'},
            {"name": "read_file", "arguments": '{"path": "a.txt", "limit": Infinity}'},
            {"name": "read_file", "arguments": '{"path": "\ud800"}'},  # the raw string itself
        ],
    )
    server.reply(content="recovered")
    done = exec_(server, ws, "go", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert result["reply"] == "recovered"
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 4
    assert all(r.startswith("error:") for r in results), results
    shown = json.loads(run_gitsessions("show", result["session"], "--json").stdout)
    assert [m["content"] for m in shown if m["role"] == "tool"] == results
    assert shown[-1] == {"role": "assistant", "content": "recovered"}
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    tools = [a for a in audit if a["operation"] == "tool"]
    assert [t["outcome"] for t in tools] == ["error"] * 4
    assert all(len(t["arguments_sha256"]) == 64 for t in tools)
    fsck(home)


def test_a_budget_the_agent_cannot_work_in_is_refused_before_a_session_exists(
    server, tmp_path, home
):
    ws = tmp_path / "p"
    ws.mkdir()
    done = exec_(server, ws, "hi", "--max-context-tokens", "1000")
    assert done.returncode == 2
    assert "--max-context-tokens 1000 is too small" in done.stderr and "use at least" in done.stderr
    assert server.requests == []
    listed = run_gitsessions("list", "--json")
    assert json.loads(listed.stdout) == []


def test_a_redirect_to_another_origin_sends_it_no_conversation(server, tmp_path, home):
    """The configured server answers 307 to another one: exec says so in one line, the
    other server gets no request at all, and the prompt is kept as any failed turn's (of
    a resumed session: a fresh one whose first request fails is not kept, issue 31)."""
    ws = tmp_path / "p"
    ws.mkdir()
    origin = server.base_url.removesuffix("/v1")
    server.reply(content="first answer")
    server.reply(content="a summary")
    sid = json.loads(exec_(server, ws, "first", "--json").stdout)["session"]
    server.requests.clear()
    server.authorizations.clear()
    server.context_asks.clear()
    server.model_lists = 0
    with redirector(307, origin) as here:
        done = run_gitsessions(
            "exec", "the secret plan", "--base-url", f"{here.base}/v1", "--workspace", str(ws),
            "--resume", sid,
        )  # fmt: skip
        # the context the server holds is asked first, of the configured origin only
        assert sorted((seen.method, seen.path) for seen in here.seen) == [
            ("GET", "/props"), ("GET", "/v1/models"), ("POST", "/api/show"),
            ("POST", "/v1/chat/completions"),
        ]  # fmt: skip
    assert server.requests == [] and server.authorizations == []
    assert server.context_asks == [] and server.model_lists == 0
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model server at {here.base} redirected the request to {origin}; "
        "refusing to send the conversation to another origin; check --base-url or "
        "GITSESSIONS_BASE_URL"
    )
    shown = run_gitsessions("show", sid, "--json").stdout
    assert json.loads(shown)[-1] == {"role": "user", "content": "the secret plan"}


def test_exec_on_a_terminal_shows_a_running_command_with_its_last_line(server, tmp_path):
    import pexpect

    ws = tmp_path / "p"
    ws.mkdir()
    command = "echo started-42; until [ -e go ]; do sleep 0.1; done"
    server.reply(content=None, tool_calls=[tool("run_shell", command=command)])
    server.reply(content="finished")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", *exec_args(server, ws), "--auto-approve", "go"],
        env=dict(os.environ, TERM="xterm", COLUMNS="120", LINES="40"),
        encoding="utf-8",
        timeout=30,
        cwd=str(REPO),
        dimensions=(40, 120),
    )
    child.expect(r"run_shell: echo started-42; until[^\r\n]* · \d+ s")
    child.expect(r"\|(?: |\x1b\[[0-9;?]*[A-Za-z])*started-42")
    (ws / "go").touch()
    child.expect("finished")
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0


def test_exec_into_a_pipe_adds_no_spinner(server, tmp_path):
    ws = tmp_path / "p"
    ws.mkdir()
    server.reply(content=None, tool_calls=[tool("run_shell", command="echo started-42")])
    server.reply(content="finished")
    done = exec_(server, ws, "go", "--auto-approve")
    assert done.returncode == 0, done.stderr
    assert "   | started-42" in done.stderr and " · " not in done.stderr
    assert "\x1b" not in done.stderr


def test_a_failed_start_leaves_no_session_and_says_so(server, tmp_path, home):
    """Issue 31 (before: issue 20's defect 7 marked each one "(no reply)"): a fresh
    `exec` whose first request fails made nothing worth a session; none is left, the
    user is told, and `--continue` goes on with the session a model answered."""
    ws = tmp_path / "p"
    ws.mkdir()
    real = json.loads(exec_(server, ws, "real work", "--json").stdout)["session"]
    down = ["exec", "--base-url", "http://127.0.0.1:9/v1", "--workspace", str(ws)]
    for prompt in ("hello?", "hi"):
        failed = run_gitsessions(*down, prompt)
        assert failed.returncode == 1
        lines = failed.stderr.strip().splitlines()
        assert lines[-2] == (
            "note: nothing was saved: the model server failed before it answered "
            "(the same command tries again)"
        ), failed.stderr
        assert lines[-1].startswith("error: ")
    as_json = run_gitsessions(*down, "again", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["session"] is None
    listed = json.loads(run_gitsessions("list", "--json").stdout)
    assert [r["id"] for r in listed] == [real]
    assert git(home / "store.git", "for-each-ref", "refs/heads/sessions/").stdout.count("\n") == 1
    more = exec_(server, ws, "more work", "--continue", "--json")
    assert json.loads(more.stdout)["session"] == real
    # a resumed session whose request fails keeps its prompt, as any failed turn's
    resumed = run_gitsessions(*down, "--resume", real, "still there?")
    assert resumed.returncode == 1 and "nothing was saved" not in resumed.stderr
    assert "still there?" in run_gitsessions("show", real, "--no-pager").stdout


def next_second() -> None:
    """Wait until the clock's second changes."""
    import time

    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.02)


def test_a_fresh_session_id_is_printed_only_once_it_exists(server, tmp_path, home):
    """Issue 41, item 6: a fresh `exec` whose first request fails printed `session ID`,
    then said nothing was saved, and that id never existed. The id is said once the
    model answered (the session is kept), never for a start that leaves nothing."""
    ws = tmp_path / "p"
    ws.mkdir()
    down = ["exec", "--base-url", "http://127.0.0.1:9/v1", "--workspace", str(ws), "hello?"]
    failed = run_gitsessions(*down)
    assert failed.returncode == 1 and "nothing was saved" in failed.stderr
    assert not any(line.startswith("session ") for line in failed.stderr.splitlines())
    done = exec_(server, ws, "real work")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("session ")]
    listed = json.loads(run_gitsessions("list", "--json").stdout)
    assert said == [f"session {listed[0]['id']}"]
