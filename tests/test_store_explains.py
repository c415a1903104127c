"""A store that explains itself to stock git: `main` holds a README, step commits say
what they did, `log` shows turns, and an import is dated when it happened."""

import json
import os
import subprocess
import time
from pathlib import Path

from gitsessions.agent.subjects import describe_call, step_subject, turn_subject
from gitsessions.services.sessions import sessionlog
from gitsessions.services.sessions.doctor import doctor
from gitsessions.services.sessions.manage import delete, gc
from gitsessions.store.mainbranch import MAIN_REF
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import git, run_gitsessions_process
from tests.test_exchange import SID, document, write
from tests.test_exec import exec_, tool


def notices(repo: Path) -> str:
    result = git(repo, "fsck", "--strict", "--no-progress", check=False)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_a_new_store_has_main_with_a_readme(store, home):
    repo = home / "store.git"
    assert git(repo, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main"
    log = git(repo, "log", "--format=%s").stdout.splitlines()
    assert log == ["gitsessions store: see README.md"]
    readme = git(repo, "show", "main:README.md").stdout
    assert "refs/heads/sessions/<id>" in readme and "docs/format.md" in readme
    assert "do not\ncommit here" in readme
    assert "notice" not in notices(repo)


def test_a_clone_checks_out_the_readme(make_session, home, tmp_path):
    make_session(turns=1)
    clone = tmp_path / "clone"
    result = subprocess.run(
        ["git", "clone", "-q", str(home / "store.git"), str(clone)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "warning" not in result.stderr.lower(), result.stderr
    assert sorted(p.name for p in clone.iterdir()) == [".git", "README.md"]
    assert "gitsessions" in (clone / "README.md").read_text()


def test_an_old_store_gets_main_at_its_first_write(home):
    repo = home / "store.git"
    SessionStore(home).close()
    (repo / MAIN_REF.decode()).unlink()  # a store made before `main` existed
    assert "unborn" in notices(repo)
    old = SessionStore(home)
    try:
        assert old.git.ref(MAIN_REF) is None  # opening writes nothing
        header = new_header(new_id(), now_iso(), title="t")
        old.create(header, Change(context=[], append=[]))
    finally:
        old.close()
    assert git(repo, "rev-parse", "--verify", "-q", "main").returncode == 0
    assert "notice" not in notices(repo)


def test_main_survives_gc_and_delete_and_is_no_session(store, home, make_session):
    keep, gone = make_session(turns=1), make_session(turns=1)
    main = store.git.ref(MAIN_REF)
    delete(store, gone.id)
    gc(store)
    repo = home / "store.git"
    assert git(repo, "rev-parse", "main").stdout.strip() == main.decode()
    assert git(repo, "cat-file", "-e", "main:README.md").returncode == 0
    assert store.git.ref(MAIN_REF) == main  # packed now, still found
    report = doctor(store)
    assert report.healthy and report.findings == [], report.as_dict()
    assert report.sessions == 1 and store.ids() == {keep.id: keep.commit}
    assert git(repo, "log", "-1", "--format=%s", f"sessions/{keep.id}").stdout.strip()


def test_an_import_is_dated_at_the_import(cli, tmp_path, home):
    before = int(time.time())
    cli("import", str(write(tmp_path, document())))
    repo = home / "store.git"
    stamp = git(repo, "log", "-1", "--format=%at %ct", f"sessions/{SID}").stdout.split()
    assert int(stamp[0]) == int(stamp[1]) >= before  # not 2026-11-30T10:05:00Z
    header = json.loads(git(repo, "show", f"sessions/{SID}:session.json").stdout)
    assert header["created_at"] == "2026-11-30T10:00:00Z"
    assert header["updated_at"] == "2026-11-30T10:05:00Z"


# -- step subjects -----------------------------------------------------------------------


def call(name: str, **arguments: object) -> dict:
    return {
        "id": f"c_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def test_step_subjects_say_what_the_step_did():
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("read_file", path="app.py"), call("run_shell", command="pytest -q")],
    }
    assert step_subject(13, 2, message) == "turn 13.2: read_file app.py; run_shell pytest -q"
    reply = {"role": "assistant", "content": "Fixed.\nThe parser now handles empty input."}
    assert step_subject(13, 3, reply) == 'turn 13.3: reply "Fixed."'
    assert step_subject(2, 1, {"role": "assistant", "content": ""}) == "turn 2.1: reply (empty)"
    assert turn_subject(13, "\n  fix the parser\nplease") == "turn 13: fix the parser"
    plan = call("update_plan", items=[{"step": "a", "status": "pending"}] * 3)
    assert describe_call(plan) == "update_plan 3 items"
    assert describe_call(call("search_files", pattern="def main", path=None)) == (
        "search_files def main"
    )
    assert describe_call({"function": {"name": "read_file", "arguments": "{not json"}}) == (
        "read_file"
    )


def test_step_subjects_are_one_short_line_without_secrets():
    key = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
    long_command = f"curl -H 'Authorization: token {key}' https://example.com/api\necho done"
    message = {"role": "assistant", "tool_calls": [call("run_shell", command=long_command)]}
    subject = step_subject(7, 1, message)
    assert subject.startswith("turn 7.1: run_shell curl -H 'Authorization: token [RED")
    assert key[:8] not in subject and "\n" not in subject and len(subject) <= 72
    many = {
        "role": "assistant",
        "tool_calls": [call("read_file", path=f"src/m{n}.py") for n in range(9)],
    }
    subject = step_subject(130, 12, many)
    assert len(subject) <= 72 and subject.endswith(" more"), subject
    shown = subject.count("read_file")
    assert subject.endswith(f"; +{9 - shown} more") and shown >= 2
    reply = {"role": "assistant", "content": "word " * 40}
    assert len(step_subject(1, 1, reply)) <= 72
    cut = {"role": "assistant", "content": "", "unsent_tool_calls": [call("list_files", path=".")]}
    assert step_subject(3, 2, cut, cut=True) == "turn 3.2: cut off: list_files ."


# -- gitsessions log: turns by default, --steps for commits --------------------------------


def test_log_shows_one_line_per_turn_and_every_commit_with_steps(server, tmp_path, home, cli):
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "app.py").write_text("print('hi')\n")
    server.reply(content=None, tool_calls=[tool("read_file", path="app.py")])
    server.reply(
        content=None,
        tool_calls=[tool("read_file", path="app.py"), tool("run_shell", command="python3 app.py")],
    )
    server.reply(content="It prints hi.")
    server.reply(content="App check")  # the list summary after the first turn
    first = exec_(server, ws, "what does app.py print?", "--auto-approve", "--json")
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["session"]
    server.reply(content="Nothing else.")
    second = exec_(server, ws, "anything else?", "--resume", sid, "--json")
    assert second.returncode == 0, second.stderr
    cli("rename", sid, "checked")

    subjects = git(home / "store.git", "log", "--format=%s", f"sessions/{sid}").stdout
    assert subjects.splitlines() == [
        "rename: checked",
        'turn 2.1: reply "Nothing else."',
        "turn 2: anything else?",
        'turn 1: summary "App check"',  # asked after the reply, committed on its own
        'turn 1.3: reply "It prints hi."',
        "turn 1.2: read_file app.py; run_shell python3 app.py",
        "turn 1.1: read_file app.py",
        "turn 1: what does app.py print?",
        "create: new session",
    ]
    steps = cli.json("log", sid, "--steps")
    assert [e["subject"] for e in steps] == subjects.splitlines()
    turns = cli.json("log", sid)
    assert [(e["event"], e["subject"]) for e in turns] == [
        ("rename", "rename: checked"),
        ("turn", "turn 2: anything else?"),
        ("turn", "turn 1: what does app.py print?"),
        ("create", "create: new session"),
    ]
    one = turns[2]
    assert one["turn"] == 1 and one["steps"] == 3
    assert one["tools"] == {"read_file": 2, "run_shell": 1}
    assert [c["subject"] for c in one["commits"]] == subjects.splitlines()[3:8]
    assert one["commit"] == steps[3]["commit"] and one["time"] == steps[7]["time"]
    assert turns[1]["steps"] == 1 and turns[1]["tools"] == {}

    wide = dict(os.environ, COLUMNS="200")
    text = run_gitsessions_process("log", sid, env=wide).stdout
    assert "3 steps: read_file x2, run_shell" in text and "1 step" in text
    assert "turn 1.2" not in text and len(text.strip().splitlines()) == 4
    # piped: one tab-separated record per line, no header
    rows = [line.split("\t") for line in text.splitlines()]
    assert all(len(row) == 6 for row in rows)  # commit time event session subject detail
    assert [row[2] for row in rows] == ["rename", "turn", "turn", "create"]
    assert rows[2][4:] == ["turn 1: what does app.py print?", "3 steps: read_file x2, run_shell"]
    text = run_gitsessions_process("log", sid, "--steps", env=wide).stdout
    assert "turn 1.2: read_file app.py; run_shell python3 app.py" in text
    assert len(text.strip().splitlines()) == 9


def test_a_compaction_inside_a_turn_is_its_own_record(store):
    head = store.create(new_header(new_id(), now_iso(), title="t"), Change(context=[]))
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    steps = [
        ("turn 1: look", 0, [{"role": "user", "content": "look"}]),
        (
            "turn 1.1: read_file a.py",
            1,
            [
                {"role": "assistant", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c", "content": "x"},
            ],
        ),
        ("compact: 900 -> 100 tokens", None, []),
        ('turn 1.2: reply "seen"', 2, [{"role": "assistant", "content": "seen"}]),
    ]
    for subject, step, append in steps:
        if step is None:
            trailers = {"Tokens-Before": 900, "Tokens-After": 100}
            head = store.commit(
                head, Change(context=[]), event="compact", subject=subject, trailers=trailers
            )
        else:
            head = store.commit(
                head,
                Change(append=append),
                event="turn",
                subject=subject,
                trailers={"Turn": 1, "Step": step},
            )
    records = sessionlog.turns(store, head, sessionlog.commits(store, head))
    assert [(r["event"], r["subject"]) for r in records] == [
        ("compact", "compact: 900 -> 100 tokens"),
        ("turn", "turn 1: look"),
        ("create", "create: t"),
    ]
    turn = records[1]
    assert turn["steps"] == 2 and turn["tools"] == {"read_file": 1}
    assert [c["subject"] for c in turn["commits"]] == [
        'turn 1.2: reply "seen"',
        "turn 1.1: read_file a.py",
        "turn 1: look",
    ]
    assert turn["commit"] == head.commit.decode() and records[0]["tokens_after"] == 100
