"""Sessions that are easy to find and tell apart (issue 10, item 12), and listings that
pipe (item 13): real subprocesses against the fake model server."""

import itertools
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

import pytest

from tests.conftest import exec_args, run_gitsessions


def gs(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI run in `cwd`, its stdout not a terminal (in this process)."""
    return run_gitsessions(*args, cwd=cwd, input=input)


def lines(done: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert done.returncode == 0, done.stderr
    return [line.split("\t") for line in done.stdout.splitlines()]


def listed() -> list[dict]:
    return json.loads(run_gitsessions("list", "--json").stdout)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def turn(server, ws: Path, prompt: str, *args: str, summary: bool = False) -> str:
    """One `exec` turn; the list summary the agent asks for after it fails unless
    `summary` (so the session has no summary), returns the session id."""
    server.reply(content=f"answer to {prompt}")
    if summary:
        server.reply(content=f"summary of {prompt}")
    else:
        server.fail(400, "no summaries here")
    done = run_gitsessions(*exec_args(server, ws), prompt, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def failed_start(ws: Path, prompt: str) -> str:
    """A session whose first prompt no model answered, as a chat left after its first
    request failed leaves it (a failed `exec` leaves none: issue 31)."""
    from gitsessions.agent.prompts import system_prompt
    from gitsessions.agent.session import AgentSession
    from gitsessions.services.code.workspace import describe
    from gitsessions.store.sessions import SessionStore

    store = SessionStore(Path(os.environ["GITSESSIONS_HOME"]))
    try:
        session = AgentSession.draft(
            store, system_prompt(str(ws)), describe(ws, os.environ), "fake-model"
        )
        session.turn = 1
        session.add({"role": "user", "content": prompt})
        session.checkpoint(f"turn 1: {prompt}", trailers={"Step": 0})
        return session.id
    finally:
        store.close()


def test_a_failed_first_request_leaves_one_session_with_its_prompt_for_continue(server, ws):
    sid = failed_start(ws, "the very first prompt")
    rows = listed()
    assert [r["id"] for r in rows] == [sid]
    assert rows[0]["first_prompt"] == "the very first prompt" and rows[0]["title"] == ""
    # `list` names it by its prompt, having no title or summary, marked: no model answered
    assert lines(gs("list", cwd=ws))[0][-1] == '"the very first prompt" (no reply)'
    server.reply(content="answered now")
    server.fail(400, "no summaries")
    done = run_gitsessions(*exec_args(server, ws), "again please", "--continue", "--json")
    assert json.loads(done.stdout)["session"] == sid
    assert [r["id"] for r in listed()] == [sid]
    sent = server.requests[0]["messages"]  # the kept prompt closed by a note, the new one
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [sent[1]["content"], sent[3]["content"]] == ["the very first prompt", "again please"]
    assert lines(gs("list", cwd=ws))[0][-1] == '"the very first prompt"'  # answered now


def test_list_falls_back_to_the_summary_then_the_first_prompt(server, ws):
    titled = turn(server, ws, "first prompt a")
    summarized = turn(server, ws, "first prompt b", summary=True)
    bare = turn(server, ws, "first prompt c")
    assert run_gitsessions("rename", titled, "My title").returncode == 0
    labels = {row[0]: row[-1] for row in lines(gs("list", cwd=ws))}
    assert labels == {
        titled: "My title",
        summarized: "summary of first prompt b",
        bare: '"first prompt c"',
    }


def test_forks_are_titled_counted_once_and_shown_under_their_parent(server, ws, tmp_path):
    parent = turn(server, ws, "the parent prompt")
    run_gitsessions("rename", parent, "Parent work")
    fork = run_gitsessions("fork", parent).stdout.strip()
    named = run_gitsessions("fork", parent, "--title", "Named fork").stdout.strip()
    grandchild = run_gitsessions("fork", fork).stdout.strip()
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    other = turn(server, elsewhere, "another project")

    info = {
        sid: json.loads(run_gitsessions("info", sid, "--json").stdout) for sid in (parent, fork)
    }
    assert info[fork]["title"] == "Parent work (fork)"
    assert info[parent]["usage"]["requests"] >= 1
    assert info[fork]["usage"]["requests"] == 0  # the parent's usage is not counted again
    total = sum(r["usage"]["requests"] for r in map(json_info, (parent, fork, named, grandchild)))
    assert total == info[parent]["usage"]["requests"]
    titles = {row[0]: row[-1] for row in lines(gs("list", cwd=ws))}
    assert titles[named] == "Named fork" and titles[grandchild] == "Parent work (fork) (fork)"

    # into a pipe: one record a line, 7 tab-separated fields, full ids
    records = lines(gs("list", cwd=ws))
    assert {len(r) for r in records} == {7}
    parents = {r[0]: r[4] for r in records}
    assert parents[fork] == parents[named] == parent and parents[grandchild] == fork
    assert parents[parent] == parents[other] == "-"
    # --tree: every fork right after its parent
    order = [r[0] for r in lines(gs("list", "--tree", cwd=ws))]
    assert order.index(parent) < order.index(fork) < order.index(grandchild)
    assert order.index(parent) < order.index(named)
    # --here: this workspace's sessions and their forks only
    here = {r[0] for r in lines(gs("list", "--here", cwd=ws))}
    assert here == {parent, fork, named, grandchild}
    assert {r[0] for r in lines(gs("list", "--here", cwd=elsewhere))} == {other}
    assert {r["id"] for r in json.loads(gs("list", "--here", "--json", cwd=ws).stdout)} == here


def json_info(sid: str) -> dict:
    return json.loads(run_gitsessions("info", sid, "--json").stdout)


def test_delete_warns_about_forks_and_forks_show_parent_deleted(server, ws):
    parent = turn(server, ws, "to be deleted")
    forks = [run_gitsessions("fork", parent).stdout.strip() for _ in range(2)]
    refused = run_gitsessions("delete", parent)
    assert refused.returncode == 2
    assert f"warning: {parent[:8]} has 2 forks" in refused.stderr
    done = run_gitsessions("delete", parent, "--yes")
    assert done.returncode == 0 and "has 2 forks" in done.stderr
    lone = turn(server, ws, "no forks here")
    assert "warning" not in run_gitsessions("delete", lone).stderr
    info = json_info(forks[0])
    assert info["parent_id"] == parent and info["parent_deleted"] is True
    assert "(parent deleted)" in dict(lines(gs("info", forks[0], cwd=ws)))["parent"]
    rows = {r["id"]: r for r in listed()}
    assert rows[forks[1]]["parent_deleted"] is True
    # the fork still reads its parent's history
    assert "to be deleted" in run_gitsessions("show", forks[0]).stdout


def test_search_log_and_info_pipe_one_record_a_line(server, ws):
    sid = turn(server, ws, "zebra\tquagga\nokapi")
    hits = lines(gs("search", "quagga", cwd=ws))
    assert hits and {len(h) for h in hits} == {6}
    assert hits[0][0] == sid and hits[0][2] == "user" and hits[0][1] == "1"
    assert "quagga" in hits[0][4] and hits[0][5] == sid  # every session holding it
    log = lines(gs("log", sid, cwd=ws))
    assert {len(e) for e in log} == {6}
    assert log[-1][2] == "create" and all(len(e[0]) == 40 and e[3] == sid for e in log)
    steps = lines(gs("log", sid, "--steps", cwd=ws))
    assert len(steps) > len(log)
    info = dict(lines(gs("info", sid, cwd=ws)))
    assert info["id"] == sid and info["parent"] == "-" and info["archived"] == "no"
    assert info["messages"].startswith("3 in the transcript")
    # --json stays the full form
    assert json.loads(gs("info", sid, "--json", cwd=ws).stdout)["id"] == sid


def test_resume_without_an_id_reaches_the_command_as_an_empty_id():
    from gitsessions.cli.lazy import bare_resume

    assert bare_resume(["chat", "--resume"]) == ["chat", "--resume="]
    assert bare_resume(["chat", "--resume", "--quiet"]) == ["chat", "--resume=", "--quiet"]
    assert bare_resume(["chat", "--resume", "abcd"]) == ["chat", "--resume", "abcd"]
    assert bare_resume(["exec", "--", "--resume"]) == ["exec", "--", "--resume"]


def test_a_tree_shows_every_row_once_even_with_a_parent_cycle():
    from gitsessions.cli.listing import as_tree

    rows = [
        {"id": "a", "parent_id": None},
        {"id": "b", "parent_id": "a"},
        {"id": "c", "parent_id": "d"},  # a hand-edited cycle: c <-> d
        {"id": "d", "parent_id": "c"},
        {"id": "e", "parent_id": "gone"},
    ]
    tree = [(depth, r["id"]) for depth, r in as_tree(rows)]
    assert tree[:2] == [(0, "a"), (1, "b")] and (0, "e") in tree
    assert sorted(i for _d, i in tree) == ["a", "b", "c", "d", "e"]


def test_a_header_whose_parent_is_not_an_id_lists_as_a_session_of_its_own(store):
    """Found by mypy: a `parent_id` that is not a string (a list, an object: a header
    written elsewhere) was looked up in a set, and `list` failed on it (unhashable)."""
    from gitsessions.cli.listing import as_tree, session_rows
    from gitsessions.store.change import Change
    from gitsessions.values.clock import now_iso
    from gitsessions.values.ids import new_id
    from gitsessions.values.records import new_header

    system = {"role": "system", "content": "s"}
    for odd in (["a"], {"id": "a"}):
        header = {**new_header(new_id(), now_iso(), title="odd"), "parent_id": odd}
        store.create(header, Change(context=[system], append=[system]))
    rows = session_rows(store, include_archived=True)
    assert [(r["parent_id"], r["parent_deleted"]) for r in rows] == [(None, False)] * 2
    assert [depth for depth, _row in as_tree(rows)] == [0, 0]


def test_here_is_the_whole_project_from_any_of_its_folders(server, tmp_path):
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    at_root = turn(server, project, "at the root")
    in_src = turn(server, project / "src", "in src")
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    elsewhere = turn(server, other, "another repository")
    seen = {r[0] for r in lines(gs("list", "--here", cwd=project / "src" / "deep"))}
    assert seen == {at_root, in_src}
    assert {r[0] for r in lines(gs("list", "--here", cwd=other))} == {elsewhere}


class _AnHourAgo(datetime):
    """The clock `values.clock` reads, set an hour back."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> "_AnHourAgo":
        moment = datetime.now(tz) - timedelta(hours=1)
        return cls.fromtimestamp(moment.timestamp(), tz)


def test_reading_commands_default_to_this_projects_latest_session(
    server, ws, tmp_path, monkeypatch
):
    from gitsessions.values import clock

    # activity is recorded to the second: the older one's clock is set back an hour
    with monkeypatch.context() as earlier:
        earlier.setattr(clock, "datetime", _AnHourAgo)
        older = turn(server, ws, "older work")
    newer = turn(server, ws, "newer work")
    active = {row["id"]: row["active_at"] for row in listed()}
    assert active[older] < active[newer]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = turn(server, elsewhere, "elsewhere work")  # newest of all, but not here
    assert gs("pin", older, "older pin", cwd=ws).returncode == 0
    assert gs("pin", newer, "newer pin", cwd=ws).returncode == 0
    for latest in ([], ["@"], ["-"]):  # as `git log` defaults to HEAD
        assert dict(lines(gs("info", *latest, cwd=ws)))["id"] == newer
        assert "newer work" in gs("show", *latest, cwd=ws).stdout
        assert {r[3] for r in lines(gs("log", *latest, cwd=ws))} == {newer}
        assert gs("pins", *latest, cwd=ws).stdout == "1. newer pin\n"
    assert dict(lines(gs("info", cwd=elsewhere)))["id"] == other
    assert dict(lines(gs("info", older[:8], cwd=ws)))["id"] == older  # an id still wins
    empty = tmp_path / "empty"
    empty.mkdir()
    done = gs("info", cwd=empty)
    assert done.returncode == 1 and "no session of this project" in done.stderr
    assert "`@`, `-` or none" in gs("log", "--help", cwd=ws).stdout


def on_a_terminal(*args: str, columns: int, cwd: Path) -> list[str]:
    """What the CLI shows on a real pseudo-terminal `columns` wide, line by line."""
    import pexpect

    from tests.test_chat import plain

    env = dict(os.environ, TERM="xterm", COLUMNS=str(columns), LINES="40")
    child = pexpect.spawn(sys.executable, ["-m", "gitsessions", *args], env=env, cwd=str(cwd),
                          encoding="utf-8", timeout=60, dimensions=(40, columns))  # fmt: skip
    child.expect(pexpect.EOF)
    child.wait()
    return [line for line in plain(child.before).replace("\r\n", "\n").split("\n") if line]


@pytest.mark.parametrize("columns", [80, 120])
def test_list_on_a_terminal_is_one_line_a_session_title_first(server, tmp_path, columns):
    deep = tmp_path / "a-rather-long-folder-name" / "with-more-folders-inside" / "project"
    deep.mkdir(parents=True)
    long_prompt = "please refactor the tokenizer so that every word boundary " * 3
    sids = [turn(server, deep, long_prompt.strip()), turn(server, deep, "short one")]
    fork = gs("fork", sids[1], "--title", "a fork whose title is long enough " * 3, cwd=deep)
    sids.append(fork.stdout.strip())
    shown = on_a_terminal("list", columns=columns, cwd=deep)
    assert shown[0].split()[0] == "title" and len(shown) == 1 + len(sids)  # one line each
    assert all(len(line) <= columns for line in shown)
    rows = {sid: next(line for line in shown if f"  {sid[:8]}  " in line) for sid in sids}
    assert rows[sids[0]].startswith('"please refactor the')  # the label first
    assert "…" in rows[sids[0]].split(sids[0][:8])[0]  # cut with an ellipsis
    assert rows[sids[1]].startswith('"short one"')
    assert f"fork of {sids[1][:8]}" in rows[sids[2]] or columns < 100
    assert "project" in rows[sids[0]] or columns < 100  # the workspace's end, when it fits


def test_notes_on_a_terminal_wrap_at_word_boundaries(tmp_path):
    home = Path(os.environ["GITSESSIONS_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("zzzzqqqq = 1\n")
    piped = gs("gc", cwd=tmp_path).stderr.splitlines()  # it reads the settings (`list`: none)
    note = next(line for line in piped if "zzzzqqqq" in line)
    assert len(note) > 80  # long enough to wrap
    shown = on_a_terminal("gc", columns=80, cwd=tmp_path)
    assert all(len(line) <= 80 for line in shown)
    start = next(i for i, line in enumerate(shown) if line.startswith("warning: "))
    wrapped, seen = [], 0
    while seen < len(note.replace(" ", "")):
        wrapped.append(shown[start + len(wrapped)].strip())
        seen += len(wrapped[-1].replace(" ", ""))
    assert len(wrapped) > 1 and "".join(wrapped).replace(" ", "") == note.replace(" ", "")
    for line, following in itertools.pairwise(wrapped):
        # each break falls between two words, but inside a word wider than the screen
        assert f"{line} {following.split()[0]}" in note or len(line) == 80, (line, following)
