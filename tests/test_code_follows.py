"""Code follows the sessions it belongs to (issue 40, items 1 and 5): two homes, two clones
of one project whose `origin` is a bare repository (the code remote), a bare
`sessions.git` for the sessions, as the README's day does it. The agent's snapshots are
made on machine A by real exec turns; stock `git for-each-ref` says what arrived on B."""

import json
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.test_loud_failures import project_without_remote
from tests.test_project_identity import exec_turn, git, gs, project_with_history

SNAPSHOTS = "refs/gitsessions/snapshots/"


class Day:
    """Machine A and machine B: a home and a clone each; the project's bare origin; the
    bare sessions remote, added to each home (with `--code` when `code`)."""

    def __init__(self, tmp_path: Path, code: bool = False) -> None:
        self.origin = project_with_history(tmp_path, "shop")
        self.clone_a, self.clone_b = tmp_path / "A" / "shop", tmp_path / "B" / "src" / "shop"
        for clone in (self.clone_a, self.clone_b):
            git("clone", "-q", str(self.origin), str(clone))
        self.home_a, self.home_b = tmp_path / "homeA", tmp_path / "homeB"
        self.sessions = tmp_path / "sessions.git"
        git("init", "-q", "--bare", str(self.sessions))
        for home in (self.home_a, self.home_b):
            flags = ["--code"] if code else []
            added = gs(home, tmp_path, "remote", "add", "origin", str(self.sessions), *flags)
            assert added.returncode == 0, added.stderr

    def a(self, *args: str, code: int = 0) -> str:
        done = gs(self.home_a, self.clone_a, *args)
        assert done.returncode == code, done.stderr
        return done.stderr

    def b(self, *args: str, code: int = 0) -> str:
        done = gs(self.home_b, self.clone_b, *args)
        assert done.returncode == code, done.stderr
        return done.stderr


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def snapshots(repo: Path) -> dict[str, str]:
    """`{session id: commit}` of the snapshot refs, as stock git lists them."""
    listed = git("for-each-ref", "--format=%(refname) %(objectname)", SNAPSHOTS, cwd=repo)
    pairs = (line.split(" ") for line in listed.splitlines())
    return {name.removeprefix(SNAPSHOTS): sha for name, sha in pairs}


def test_pull_code_after_a_plain_pull_fetches_every_snapshot_the_clone_lacks(tmp_path):
    day = Day(tmp_path)
    with FakeOpenAI(strict=True) as server:
        made = [exec_turn(server, day.home_a, day.clone_a, f"work {n}") for n in range(2)]
    day.a("push", "--all", "--code")
    on_a = snapshots(day.clone_a)
    assert set(made) <= set(on_a)
    day.b("pull")  # the README's day: a plain pull first
    assert snapshots(day.clone_b) == {}
    stderr = day.b("pull", "--code")
    assert snapshots(day.clone_b) == {sid: on_a[sid] for sid in made}, stderr
    again = gs(day.home_b, day.clone_b, "pull", "--code", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["code"] == []  # nothing lacking: nothing said


def test_sync_code_fetches_and_pushes_the_code_both_ways(tmp_path):
    day = Day(tmp_path)
    with FakeOpenAI(strict=True) as server:
        theirs = exec_turn(server, day.home_a, day.clone_a, "on A")
        day.a("push", "--all", "--code")
        mine = exec_turn(server, day.home_b, day.clone_b, "on B")
    synced = day.b("sync", "--code")
    assert snapshots(day.clone_b)[theirs] == snapshots(day.clone_a)[theirs]
    assert snapshots(day.origin)[mine] == snapshots(day.clone_b)[mine]
    assert synced.strip().splitlines()[-1] == (
        f"synced {day.sessions}: pulled 1 created; pushed 1 new; code: 1 fetched, 1 pushed"
    )
    day.a("sync", "--code")  # and A gets B's
    assert snapshots(day.clone_a)[mine] == snapshots(day.clone_b)[mine]


def test_a_remote_marked_for_code_carries_it_without_the_flag_and_no_code_leaves_it(tmp_path):
    day = Day(tmp_path, code=True)
    listed = gs(day.home_a, tmp_path, "remote", "list", "--json")
    assert json.loads(listed.stdout)[0]["code"] is True
    with FakeOpenAI(strict=True) as server:
        first = exec_turn(server, day.home_a, day.clone_a, "first")
        day.a("push", "--all")  # no flag: the remote's setting
        assert set(snapshots(day.origin)) == {first}
        second = exec_turn(server, day.home_a, day.clone_a, "second")
        day.a("push", "--all", "--no-code")
        assert set(snapshots(day.origin)) == {first}  # --no-code left it
        day.a("sync")
        assert set(snapshots(day.origin)) == {first, second}
    day.b("pull", "--no-code")
    assert snapshots(day.clone_b) == {}
    day.b("pull")
    assert set(snapshots(day.clone_b)) == {first, second}

    # a remote told later, and told again that code stays
    day.b("remote", "set", "origin", "--no-code")
    with FakeOpenAI(strict=True) as server:
        third = exec_turn(server, day.home_a, day.clone_a, "third")
    day.a("push", "--all")
    day.b("pull")
    assert third not in snapshots(day.clone_b)
    day.b("remote", "set", "origin", "--code")
    day.b("pull")
    assert third in snapshots(day.clone_b)


def test_push_all_code_notes_another_projects_missing_remote_in_one_line(tmp_path):
    day = Day(tmp_path)
    elsewhere = [project_without_remote(mkdir(tmp_path / f"other{n}")) for n in range(2)]
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, day.home_a, day.clone_a, "this project")
        for n, other in enumerate(elsewhere):
            exec_turn(server, day.home_a, other, f"another project {n}")
    stderr = day.a("push", "--all", "--code")  # exit 0
    assert set(snapshots(day.origin)) == {mine}  # this project's code went
    notes = [line for line in stderr.splitlines() if line.startswith(("note", "error"))]
    assert len(notes) == 1, stderr
    assert notes[0].startswith("note: the code of 2 sessions stays here: no remote origin in")
    assert all(str(other) in notes[0] for other in elsewhere)
    assert "error" not in stderr


def test_a_sync_that_forks_names_the_id_that_now_holds_this_machines_work(tmp_path):
    day = Day(tmp_path)
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, day.home_a, day.clone_a, "start")
        day.a("push", "--all")
        day.b("pull")
        exec_turn(server, day.home_a, day.clone_a, "on A", "--resume", sid)
        exec_turn(server, day.home_b, day.clone_b, "on B", "--resume", sid)
    day.a("push", "--all")
    synced = day.b("sync").strip().splitlines()[-1]
    listed = json.loads(gs(day.home_b, tmp_path, "list", "--json").stdout)
    fork = next(row["id"] for row in listed if row["id"] != sid)
    assert synced == (
        f"synced {day.sessions}: pulled 1 forked; pushed 1 new; "
        f"this machine's work on {sid[:8]} goes on as {fork[:8]}"
    )
    assert [row["parent_id"] for row in listed if row["id"] == fork] == [sid]


def test_blame_names_the_agents_session_and_turn_on_both_machines(tmp_path):
    """The agent writes a line on A; A commits and pushes the project, and its sessions with
    their code (a remote marked for code); on B, after `git pull` and one `pull`, `blame`
    names the same session and turn as on A."""
    day = Day(tmp_path, code=True)
    write = {"name": "write_file", "arguments": {"path": "cart.py", "content": "total = 1\n"}}
    with FakeOpenAI(strict=True) as server:
        server.reply(content=None, tool_calls=[write])
        server.reply(content="wrote the cart")
        server.reply(content="the cart")
        done = gs(day.home_a, day.clone_a, "exec", "write the cart", "--base-url",
                  server.base_url, "--model", "m", "--json", "--auto-approve")  # fmt: skip
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    git("add", "cart.py", cwd=day.clone_a)
    git("commit", "-qm", "the cart", cwd=day.clone_a)
    git("push", "-q", "origin", "HEAD", cwd=day.clone_a)
    day.a("push", "--all")  # the remote carries code: no flag
    git("pull", "-q", "origin", "main", cwd=day.clone_b)
    day.b("pull")
    for home, clone in ((day.home_a, day.clone_a), (day.home_b, day.clone_b)):
        blamed = gs(home, clone, "blame", "cart.py:1", "--json")
        assert blamed.returncode == 0, blamed.stderr
        [row] = [json.loads(line) for line in blamed.stdout.splitlines()]
        assert (row["session"], row["turn"], row["text"]) == (sid, 1, "total = 1"), clone
