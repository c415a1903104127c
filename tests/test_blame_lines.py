"""`blame FILE:LINE` and `blame FILE -L A,B` (issue 40): the CLI's rows of those lines,
the same lines and turns the chat's `\\blame` names (one parser, values/line_range.py),
and a bad range is one error line, exit 2."""

import json
import os
from pathlib import Path

import pytest

from gitsessions.services.code.line_origin import line_origin
from gitsessions.store.sessions import SessionStore
from tests.conftest import exec_args
from tests.project_helpers import pgit
from tests.test_chat import leave, say, spawn

SIX = "first = 1\nsecond = 2\nthird = 3\nmine = 4\nfifth = 5\nsixth = 6\n"


@pytest.fixture
def project(cli, server, tmp_path: Path, home: Path) -> tuple[Path, str]:
    """app.py: a person's first line, the agent's next three, a person's fourth, then
    the agent's; its session id."""
    root = tmp_path / "project"
    root.mkdir()
    pgit(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("first = 1\n")
    pgit(root, "add", "-A")
    pgit(root, "commit", "-q", "-m", "initial")
    server.reply(content=None, tool_calls=[{"name": "write_file", "arguments": {
        "path": "app.py", "content": SIX.replace("mine = 4\n", "")}}])  # fmt: skip
    server.reply(content="done")
    server.reply(content="A title")
    done = cli(*exec_args(server, root), "write app.py", "--auto-approve", "--json")
    (root / "app.py").write_text(SIX)
    return root, json.loads(done.stdout)["session"]


def rows(cli, *args: str) -> list[tuple[int, str, str | None, int | None]]:
    done = cli("blame", *args, "--json")
    found = [json.loads(line) for line in done.stdout.splitlines()]
    return [(r["line"], r["text"], r["session"], r["turn"]) for r in found]


def chat_view(home: Path, root: Path, number: int) -> tuple[int, str, str | None, int | None]:
    """What the chat's `\\blame app.py:N` names (its service, line_origin)."""
    store = SessionStore(home)
    try:
        found = line_origin(store, dict(os.environ), root / "app.py", number)
    finally:
        store.close()
    return found.line, found.text, found.session, found.turn


def test_blame_file_colon_line_and_ranges_print_those_lines(cli, project, home):
    root, sid = project
    app = str(root / "app.py")
    assert rows(cli, f"{app}:2") == [chat_view(home, root, 2)] == [(2, "second = 2", sid, 1)]
    want = [chat_view(home, root, n) for n in (2, 3, 4)]
    assert want[2] == (4, "mine = 4", None, None)
    assert rows(cli, app, "-L", "2,4") == want
    assert rows(cli, app, "-L", "2,+3") == want
    assert rows(cli, app, "-L", "4,-3") == want
    assert rows(cli, app, "-L", "5") == [chat_view(home, root, n) for n in (5, 6)]
    assert rows(cli, app, "-L", ",1") == [(1, "first = 1", None, None)]
    assert rows(cli, app, "-L", "5,99")[-1][0] == 6  # an end past the file stops at it, as git
    # the plain rows too: one per line asked for
    plain = cli("blame", f"{app}:4", "--no-pager").stdout.splitlines()
    assert len(plain) == 1 and plain[0].endswith("4\tmine = 4")
    # a file whose whole name ends in :DIGITS is that file
    (root / "odd:2").write_text("a\nb\nc\n")
    assert [r[1] for r in rows(cli, str(root / "odd:2"))] == ["a", "b", "c"]


def test_a_bad_range_is_one_error_line_exit_2(cli, project):
    root, _sid = project
    app = str(root / "app.py")
    for args, says in (
        ((app, "-L", "x"), "-L 'x': not a line range"),
        ((app, "-L", "0,2"), "lines are numbered from 1"),
        ((app, "-L", "9,10"), "app.py has 6 lines: no line 9"),
        ((f"{app}:9",), "app.py has 6 lines: no line 9"),
        ((f"{app}:2", "-L", "1,2"), "give FILE:LINE or -L, not both"),
    ):
        done = cli("blame", *args, code=2)
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_the_chat_blames_a_range_as_the_cli_does(server, project, home):
    root, sid = project
    child = spawn(server.base_url, root)
    shown = say(child, "\\blame app.py -L 3,4")
    assert "app.py:3: third = 3" in shown and f"by {sid[:8]} turn 1" in shown
    assert "app.py:4: mine = 4" in shown and "a person's" in shown
    assert "app.py:2:" not in shown and "app.py:5:" not in shown
    shown = say(child, "\\blame app.py -L nope")
    assert "not a line range" in shown
    leave(child)
