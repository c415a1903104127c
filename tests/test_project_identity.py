"""Sessions follow the project to any clone (issue 21, item 1): a session made in a clone
at one path, pushed from one home and pulled into another, is a session of the same
project in a clone at another path there: `list --here`, `--continue` and the picker's
rows find it by the repository's identity (root commits, then remotes' URLs), never by a
path guessed alike. Real repositories, real homes, a real bare remote."""

import json
import os
import subprocess
import sys
from pathlib import Path

from gitsessions.services.code.project_id import normalize_url, same_project
from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI

GIT_ID = {"GIT_AUTHOR_NAME": "D", "GIT_AUTHOR_EMAIL": "d@example.com",
          "GIT_COMMITTER_NAME": "D", "GIT_COMMITTER_EMAIL": "d@example.com"}  # fmt: skip


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=dict(os.environ, **GIT_ID)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def gs(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gitsessions(*args, cwd=cwd, env=dict(os.environ, GITSESSIONS_HOME=str(home)))


def exec_turn(server: FakeOpenAI, home: Path, cwd: Path, prompt: str, *flags: str) -> str:
    server.reply(content=f"answer to {prompt}")
    server.reply(content=f"summary of {prompt}")
    done = gs(home, cwd, "exec", prompt, "--base-url", server.base_url, "--model", "m",
              "--json", *flags)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def project_with_history(tmp_path: Path, name: str) -> Path:
    """A bare repository with one commit: what the clones are made from."""
    work = tmp_path / f"{name}-seed"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "README").write_text(name)
    (work / "sub").mkdir()
    (work / "sub" / "f.py").write_text("x = 1\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    bare = tmp_path / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    return bare


def sessions_remote(tmp_path: Path, *homes: Path) -> Path:
    """A bare `sessions.git` under `tmp_path`, added as the remote `origin` of each home."""
    sessions = tmp_path / "sessions.git"
    git("init", "-q", "--bare", str(sessions))
    for home in homes:
        assert gs(home, tmp_path, "remote", "add", "origin", str(sessions)).returncode == 0
    return sessions


def here_ids(home: Path, cwd: Path) -> set[str]:
    done = gs(home, cwd, "list", "--here", "--json")
    assert done.returncode == 0, done.stderr
    return {row["id"] for row in json.loads(done.stdout)}


def test_a_pulled_session_is_of_this_project_in_a_clone_at_another_path(tmp_path):
    origin = project_with_history(tmp_path, "proj")
    other = project_with_history(tmp_path, "other")
    clone_a = tmp_path / "machineA" / "projA"
    clone_b = tmp_path / "machineB" / "src" / "projB"
    git("clone", "-q", str(origin), str(clone_a))
    git("clone", "-q", str(origin), str(clone_b))
    elsewhere = tmp_path / "machineA" / "other"
    git("clone", "-q", str(other), str(elsewhere))
    home_a, home_b = tmp_path / "homeA", tmp_path / "homeB"
    sessions = tmp_path / "sessions.git"
    git("init", "-q", "--bare", str(sessions))

    with FakeOpenAI(strict=True) as server:
        at_root = exec_turn(server, home_a, clone_a, "made on A")
        in_sub = exec_turn(server, home_a, clone_a / "sub", "in sub on A")
        unrelated = exec_turn(server, home_a, elsewhere, "another project")
        for home in (home_a, home_b):
            assert gs(home, tmp_path, "remote", "add", "origin", str(sessions)).returncode == 0
        assert gs(home_a, tmp_path, "push", "--all").returncode == 0
        pulled = gs(home_b, tmp_path, "pull")
        assert pulled.returncode == 0, pulled.stderr

        # the identity is recorded, and is the same in both clones
        shown = json.loads(gs(home_b, tmp_path, "info", at_root, "--json").stdout)
        roots = git("rev-list", "--max-parents=0", "HEAD", cwd=clone_b).split()
        assert shown["workspace"]["project"]["roots"] == roots
        assert shown["workspace"]["project"]["remotes"] == [str(origin)[:-4]]

        assert here_ids(home_b, clone_b) == {at_root, in_sub}
        assert here_ids(home_b, clone_b / "sub") == {at_root, in_sub}
        assert here_ids(home_b, tmp_path) == set()  # not a repository: no project
        assert unrelated not in here_ids(home_b, clone_b)

        # --continue picks among the sessions this home made or the user resumed: a
        # pulled one only once resumed by id (issue 42)
        done = gs(home_b, clone_b, "exec", "go on", "--continue", "--base-url",
                  server.base_url, "--model", "m")  # fmt: skip
        assert done.returncode == 1 and "no session to continue" in done.stderr
        server.reply(content="went on")
        done = gs(home_b, clone_b, "exec", "go on", "--resume", at_root, "--base-url",
                  server.base_url, "--model", "m")  # fmt: skip
        assert done.returncode == 0, done.stderr
        exec_turn(server, home_b, clone_b / "sub", "go on", "--resume", in_sub)

        # --continue: the session recorded in the same folder of the other clone
        assert (f"note: this session was recorded in another clone of this project in "
                f"{clone_a}; the tools now work in {clone_b}") in done.stderr  # fmt: skip
        assert exec_turn(server, home_b, clone_b, "go on", "--continue") == at_root
        assert exec_turn(server, home_b, clone_b / "sub", "go on", "--continue") == in_sub
        sent = [json.dumps(r["messages"]) for r in server.requests]
        assert any("in sub on A" in r and "go on" in r for r in sent)  # pulled, then sent


def test_a_fresh_repository_without_commits_is_matched_by_path_only(tmp_path):
    home = tmp_path / "home"
    one, two = tmp_path / "one", tmp_path / "two"
    for path in (one, two):
        git("init", "-q", str(path))
    with FakeOpenAI(strict=True) as server:
        first = exec_turn(server, home, one, "in one")
        exec_turn(server, home, two, "in two")
    assert here_ids(home, one) == {first}  # two empty repositories are not one project


def test_urls_normalise_to_one_spelling_and_roots_decide():
    spellings = ["git@github.com:o/r.git", "https://github.com/o/r", "ssh://git@GitHub.com:22/o/r.git",
                 "https://user@github.com/o/r/"]  # fmt: skip
    assert {normalize_url(u) for u in spellings} == {"github.com/o/r"}
    assert normalize_url("/srv/git/r.git") == "/srv/git/r"
    a = {"roots": ["a" * 40], "remotes": ["github.com/o/r"]}
    fork = {"roots": ["a" * 40], "remotes": ["github.com/me/r"]}
    template = {"roots": ["b" * 40], "remotes": ["github.com/o/r"]}
    empty = {"roots": [], "remotes": ["github.com/o/r"]}
    assert same_project(a, fork)  # one history, another remote
    assert not same_project(a, template)  # the roots decide when both have them
    assert same_project(a, empty)  # no commit yet: the remote decides
    assert not same_project(a, None) and not same_project(None, None)


def test_an_exported_identity_travels_and_a_malformed_one_is_refused(tmp_path):
    origin = project_with_history(tmp_path, "proj")
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone))
    home, other = tmp_path / "home", tmp_path / "other-home"
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, home, clone, "exported")
    exported = gs(home, tmp_path, "export", sid)
    assert exported.returncode == 0, exported.stderr
    doc = exported.stdout
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions", "import", "-"], input=doc, capture_output=True,
        text=True, env=dict(os.environ, GITSESSIONS_HOME=str(other)), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert here_ids(other, clone) == {sid}
    parsed = json.loads(doc)
    holder = parsed.get("header", parsed)
    assert holder["workspace"]["project"]["remotes"] == [str(origin)[:-4]]
    for bad in ("x", {"roots": "a", "remotes": []}, {"roots": []}):
        holder["workspace"]["project"] = bad
        done = subprocess.run(
            [sys.executable, "-m", "gitsessions", "import", "-", "--new-id"],
            input=json.dumps(parsed), capture_output=True, text=True, timeout=120,
            env=dict(os.environ, GITSESSIONS_HOME=str(other)),
        )  # fmt: skip
        assert done.returncode == 1 and "workspace.project" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_code_follows_into_the_clone_you_pull_in_and_never_into_a_named_folder(tmp_path):
    origin = project_with_history(tmp_path, "proj")
    clone_a, clone_b = tmp_path / "A" / "proj", tmp_path / "B" / "elsewhere" / "proj"
    for clone in (clone_a, clone_b):
        git("clone", "-q", str(origin), str(clone))
    home_a, home_b = tmp_path / "homeA", tmp_path / "homeB"
    sessions = tmp_path / "sessions.git"
    git("init", "-q", "--bare", str(sessions))
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, home_a, clone_a, "with code")
    ref = f"refs/gitsessions/snapshots/{sid}"
    snapshot = git("rev-parse", ref, cwd=clone_a).strip()
    for home in (home_a, home_b):
        assert gs(home, tmp_path, "remote", "add", "origin", str(sessions)).returncode == 0
    pushed = gs(home_a, clone_a, "push", "--all", "--code", "--json")
    assert pushed.returncode == 0, pushed.stderr
    pulled = gs(home_b, clone_b, "pull", "--code", "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert json.loads(pulled.stdout)["code"] == [
        {"id": sid, "result": "fetched", "detail": "from origin"}
    ]
    assert git("rev-parse", ref, cwd=clone_b).strip() == snapshot  # here, not in clone A
    diffed = gs(home_b, clone_b, "diff", sid, f"{sid}~1", "--code", "--json")
    assert diffed.returncode == 0, diffed.stderr
    assert json.loads(diffed.stdout)["code"]["repo"] == str(clone_b)

    # a header that names another repository, without that repository's identity, never
    # gets a ref written there, wherever the pull runs
    from gitsessions.services.code import code_sync

    victim = tmp_path / "victim"
    git("clone", "-q", str(project_with_history(tmp_path, "victim")), str(victim))
    git("remote", "set-url", "origin", str(origin), cwd=victim)  # it even has the snapshot
    forged = [
        {"path": str(victim), "repo_root": str(victim)},
        {"path": str(victim), "repo_root": str(victim),
         "project": {"roots": ["f" * 40], "remotes": []}},
    ]  # fmt: skip
    for workspace in forged:
        session = code_sync.CodeSession(sid, sid, workspace)
        done = code_sync.fetch_code([session], "origin", dict(os.environ))
        assert [o.result for o in done] == ["no repository"]
    listed = git("for-each-ref", "refs/gitsessions/", cwd=victim)
    assert listed == ""


def objects_of(home: Path) -> set[str]:
    listed = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)",
                 cwd=home / "store.git")  # fmt: skip
    return set(listed.split())


def test_push_and_pull_here_move_one_project_and_sync_says_what_moved(tmp_path):
    proj, other = project_with_history(tmp_path, "proj"), project_with_history(tmp_path, "other")
    clone_a, clone_b = tmp_path / "A" / "proj", tmp_path / "B" / "proj"
    other_a = tmp_path / "A" / "other"
    for source, clone in ((proj, clone_a), (proj, clone_b), (other, other_a)):
        git("clone", "-q", str(source), str(clone))
    home_a, home_b = tmp_path / "homeA", tmp_path / "homeB"
    sessions = sessions_remote(tmp_path, home_a, home_b)
    with FakeOpenAI(strict=True) as server:
        mine = exec_turn(server, home_a, clone_a, "this project")
        fork = json.loads(gs(home_a, tmp_path, "fork", mine, "--json").stdout)["id"]
        theirs = exec_turn(server, home_a, other_a, "the other project")
    # push --here from the project: its sessions and their forks, nothing else
    pushed = gs(home_a, clone_a, "push", "--here", "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert {o["id"] for o in json.loads(pushed.stdout)["sessions"]} == {mine, fork}
    assert gs(home_a, other_a, "push", "--here").returncode == 0
    index = git("for-each-ref", "--format=%(refname)", "refs/gitsessions/projects/",
                cwd=sessions).split()  # fmt: skip
    root = git("rev-list", "--max-parents=0", "HEAD", cwd=clone_a).strip()
    assert f"refs/gitsessions/projects/{root}/{mine}" in index
    assert f"refs/gitsessions/projects/{root}/{fork}" in index  # under its parent's keys

    # pull --here in the other machine's clone brings this project's sessions only
    pulled = gs(home_b, clone_b, "pull", "--here", "--json")
    assert pulled.returncode == 0, pulled.stderr
    got = {o["id"]: o["result"] for o in json.loads(pulled.stdout)["sessions"]}
    assert got == {mine: "created", fork: "created"}
    theirs_head = git("rev-parse", f"refs/heads/sessions/{theirs}", cwd=home_a / "store.git")
    assert theirs_head.strip() not in objects_of(home_b)  # not even its objects came
    assert here_ids(home_b, clone_b) == {mine, fork}

    # sync: pull, then push, one line; a second sync moves nothing
    with FakeOpenAI(strict=True) as server:
        exec_turn(server, home_b, clone_b, "more on B", "--resume", mine)
    synced = gs(home_b, clone_b, "sync", "--here")
    assert synced.returncode == 0, synced.stderr
    assert synced.stderr.strip().splitlines()[-1] == (
        f"synced {sessions}: pulled nothing; pushed 1 updated"
    )
    again = gs(home_a, clone_a, "sync")
    assert again.returncode == 0, again.stderr
    assert "pulled 1 updated" in again.stderr
    assert gs(home_b, tmp_path, "pull", "--here").returncode == 2  # not in a repository


def test_push_prune_removes_a_deleted_sessions_index_refs(tmp_path):
    proj = project_with_history(tmp_path, "proj")
    clone = tmp_path / "proj"
    git("clone", "-q", str(proj), str(clone))
    home = tmp_path / "home"
    sessions = sessions_remote(tmp_path, home)
    with FakeOpenAI(strict=True) as server:
        sid = exec_turn(server, home, clone, "short lived")
    assert gs(home, clone, "push", "--here").returncode == 0
    index = lambda: git("for-each-ref", "refs/gitsessions/projects/", cwd=sessions)  # noqa: E731
    assert sid in index()
    assert gs(home, tmp_path, "delete", sid, "--yes").returncode == 0
    done = gs(home, tmp_path, "push", "--prune", "--json")
    assert done.returncode == 0, done.stderr
    assert index() == ""
    assert git("for-each-ref", "refs/heads/sessions/", cwd=sessions) == ""


def test_a_worktree_fork_from_another_machine_is_made_here_by_restore(tmp_path):
    proj = project_with_history(tmp_path, "proj")
    clone_a, clone_b = tmp_path / "A" / "proj", tmp_path / "B" / "proj"
    for clone in (clone_a, clone_b):
        git("clone", "-q", str(proj), str(clone))
    home_a, home_b = tmp_path / "homeA", tmp_path / "homeB"
    sessions_remote(tmp_path, home_a, home_b)
    (clone_a / "work.txt").write_text("uncommitted on A\n")
    with FakeOpenAI(strict=True) as server:
        parent = exec_turn(server, home_a, clone_a, "start")
    forked = gs(home_a, clone_a, "fork", parent, "--worktree", "--json")
    assert forked.returncode == 0, forked.stderr
    fork, there = json.loads(forked.stdout)["id"], json.loads(forked.stdout)["worktree"]["path"]
    assert gs(home_a, clone_a, "push", "--all", "--code").returncode == 0
    pulled = gs(home_b, clone_b, "pull", "--code")
    assert pulled.returncode == 0, pulled.stderr

    refused = gs(home_b, tmp_path, "worktree", "restore", fork)  # not in a clone of it
    assert refused.returncode == 1 and "in a clone of its project" in refused.stderr
    made = gs(home_b, clone_b, "worktree", "restore", fork)
    assert made.returncode == 0, made.stderr
    path = home_b / "worktrees" / f"proj-{fork[:8]}"
    assert f"made worktree {path}" in made.stderr
    assert (path / "work.txt").read_text() == "uncommitted on A\n"  # the fork point's code
    listed = json.loads(gs(home_b, tmp_path, "worktree", "list", "--json").stdout)
    assert [(r["session"], r["path"], r["state"]) for r in listed] == [(fork, str(path), "clean")]
    assert (Path(there) / "work.txt").read_text() == "uncommitted on A\n"  # A's, untouched
    assert git("worktree", "list", cwd=clone_a).count("\n") == 2  # A's clone: as it was
    with FakeOpenAI(strict=True) as server:  # the fork resumes in its new worktree
        server.reply(content="here")
        done = gs(home_b, tmp_path, "exec", "where?", "--resume", fork, "--base-url",
                  server.base_url, "--model", "m", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert str(path) in json.dumps(server.requests[-1]["messages"][0])
