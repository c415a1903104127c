"""Stores written by each format stay readable: the committed fixtures of format 1 and
format 2 (`tests/fixtures/make_store.py` wrote them, driving the CLI), the upgrade of a
format-1 session at its next commit (history untouched), and the refusal of format 3."""

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from gitsessions.store.sessions import SessionStore
from tests.conftest import REPO, exec_args, fsck, git, loosen, run_gitsessions

FIXTURES = REPO / "tests" / "fixtures"


def unpack(version: int, home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    with tarfile.open(FIXTURES / f"store-format{version}.tar.gz") as tar:
        tar.extractall(home, filter="data")
    return home / "store.git"


def sessions(cli) -> dict[str, dict]:
    return {row["title"]: row for row in cli.json("list", "--include-archived")}


@pytest.mark.parametrize("version", [1, 2])
def test_a_stored_format_reads_whole(version, cli, home):
    unpack(version, home)
    rows = sessions(cli)
    assert set(rows) >= {"Golden", "Golden fork"} and len(rows) == 3
    golden, fork = rows["Golden"], rows["Golden fork"]
    assert fork["parent_id"] == golden["id"]
    assert [r["archived"] for r in rows.values()].count(True) == 1
    assert golden["compactions"] == 1
    shown = cli.json("show", golden["id"])
    assert any("alpha line 399" in (m.get("content") or "") for m in shown)
    context = cli.json("show", golden["id"], "--context")
    assert "The user read a.txt (alpha)." in context[1]["content"]  # the note
    assert context[-1] == {"role": "assistant", "content": "done"}
    info = cli.json("info", golden["id"])
    assert info["active_at"] <= info["updated_at"]  # format 1: active_at = updated_at
    assert cli.json("pins", golden["id"]) == ["alpha is the answer"] or cli(
        "pins", golden["id"]
    ).stdout.count("alpha is the answer")
    exported = json.loads(cli("export", fork["id"]).stdout)
    assert exported["format"] == "gitsessions.session/2"  # it holds no files
    records = exported["transcript"]
    assert records[-1]["message"]["content"] == "in the fork"
    assert ("time" in records[-1]) == (version == 2)
    fsck(home)


def test_a_format_1_session_is_upgraded_at_its_next_commit_and_history_stays(
    home, server, workspace, cli
):
    repo = unpack(1, home)
    golden = sessions(cli)["Golden"]
    branch = f"refs/heads/sessions/{golden['id']}"
    old_head = git(repo, "rev-parse", branch).stdout.strip()
    old_blobs = set(git(repo, "ls-tree", "-r", old_head, "transcript").stdout.split())
    before = cli.json("show", golden["id"])
    requests = cli.json("info", golden["id"])["usage"]["requests"]
    fork = sessions(cli)["Golden fork"]
    fork_point = json.loads(cli("export", fork["id"]).stdout)["fork_point"]

    server.reply(content="upgraded", usage=(50, 2))
    done = run_gitsessions(
        *exec_args(server, workspace), "--resume", golden["id"], "--json", "after the upgrade"
    )
    assert done.returncode == 0, done.stderr
    assert git(repo, "config", "gitsessions.formatVersion").stdout.strip() == "2"
    header = json.loads(git(repo, "show", f"{branch}:session.json").stdout)
    assert header["format"] == "gitsessions.header/2"
    assert header["active_at"] >= header["created_at"]
    for name in ("plan", "pins", "compactions"):
        doc = json.loads(git(repo, "show", f"{branch}:{name}.json").stdout)
        assert doc["format"] == f"gitsessions.{name}/2"
    assert header["usage"]["requests"] == requests + 1  # usage.json moved into the header
    assert git(repo, "cat-file", "-e", f"{branch}:usage.json", check=False).returncode
    context = json.loads(git(repo, "show", f"{branch}:context.json").stdout)["context"]
    assert any("from" in item for item in context)  # by reference now
    # history is never rewritten: the old head is the new commits' ancestor, its
    # transcript blobs are still the transcript's, and the fork point still resolves
    git(repo, "merge-base", "--is-ancestor", old_head, branch)
    new_blobs = set(git(repo, "ls-tree", "-r", branch, "transcript").stdout.split())
    assert {b for b in old_blobs if len(b) == 40} <= new_blobs
    assert git(repo, "cat-file", "-t", fork_point).stdout.strip() == "commit"
    after = cli.json("show", golden["id"])
    assert after[: len(before)] == before
    assert after[-1] == {"role": "assistant", "content": "upgraded"}
    request = server.requests[-1]["messages"]
    assert request[-1] == {"role": "user", "content": "after the upgrade"}
    openai_keys = {"role", "content", "tool_calls", "tool_call_id", "name"}
    assert all(set(m) <= openai_keys for m in request)  # no record field reaches the model
    assert "The user read a.txt (alpha)." in request[1]["content"]
    fsck(home)


def _plant(repo: Path, branch: str, name: str, text: str) -> str:
    """A commit on `branch` whose `name` holds `text` (stock git plumbing)."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip

    def plumb(*args: str, stdin: str = "") -> str:
        return subprocess.run(
            ["git", "--git-dir", str(repo), *args],
            input=stdin, capture_output=True, text=True, check=True, env=env,
        ).stdout.strip()  # fmt: skip

    blob = plumb("hash-object", "-w", "--stdin", stdin=text)
    entries = [
        f"100644 blob {blob}\t{name}" if e.endswith(f"\t{name}") else e
        for e in plumb("ls-tree", branch).splitlines()
    ]
    tree = plumb("mktree", stdin="\n".join(entries) + "\n")
    sid = branch.rsplit("/", 1)[1]
    commit = plumb("commit-tree", tree, "-p", branch, "-m", f"x\n\nSession: {sid}\nEvent: turn\n")
    plumb("update-ref", branch, commit)
    return commit


def test_a_planted_format_3_is_refused_in_one_line_and_never_rewritten(cli, home):
    repo = unpack(2, home)
    rows = sessions(cli)
    golden, fork = rows["Golden"]["id"], rows["Golden fork"]["id"]
    branch = f"refs/heads/sessions/{golden}"
    plan = json.dumps({"format": "gitsessions.plan/3", "plan": {"new": "shape"}})
    planted = _plant(repo, branch, "plan.json", plan)
    result = cli("export", golden, code=1)
    assert result.stderr.strip().endswith(
        "was written by a newer gitsessions (format 3); upgrade to read it"
    )
    assert len(result.stderr.strip().splitlines()) == 1
    header = json.loads(git(repo, "show", f"{branch}:session.json").stdout)
    header["format"] = "gitsessions.header/3"
    planted = _plant(repo, branch, "session.json", json.dumps(header))
    for args in (["rename", golden, "new"], ["pin", golden, "x"], ["fork", golden]):
        line = cli(*args, code=1).stderr.strip()
        assert line == (
            f"error: session {golden[:8]} was written by a newer gitsessions (format 3); "
            "upgrade to read it"
        )
    assert git(repo, "rev-parse", branch).stdout.strip() == planted
    assert sessions(cli)["Golden fork"]["id"] == fork  # the others still list


def test_store_reads_format_1_context_with_its_transcript_indices(home):
    unpack(1, home)
    store = SessionStore(home)
    golden = next(
        store.head(sid) for sid in store.ids() if store.head(sid).header["title"] == "Golden"
    )
    assert golden.version == 1
    pairs = store.context_lines(golden)
    transcript = store.transcript(golden)
    for message, ref in pairs:
        assert ref is None or transcript[ref] == message
    assert [ref is None for _m, ref in pairs].count(True) == 1  # only the note is inline


def test_records_say_when_and_in_which_turn_and_never_reach_the_model(home, server, workspace, cli):
    for prompt in ("first", "second"):
        server.reply(content=f"re {prompt}", usage=(30, 4))
        args = [*exec_args(server, workspace), "--json", prompt]
        if prompt == "second":
            args[1:1] = ["--continue"]
        done = run_gitsessions(*args)
        assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    records = json.loads(cli("export", sid).stdout)["transcript"]
    second = [r for r in records if r.get("turn") == 2]
    assert [r["message"]["role"] for r in second] == ["user", "assistant"]
    assert [r["step"] for r in second] == [0, 1]
    reply = second[-1]
    assert reply["model"] == "fake-model" and reply["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 4,
    }
    assert all(r["time"].endswith("Z") and len(r["time"]) == 24 for r in records)
    assert records[0]["time"] <= second[0]["time"] <= reply["time"]
    sent = server.requests[-1]["messages"]
    assert sent[-2:] == [{"role": "assistant", "content": "re first"}, {"role": "user",
                         "content": "second"}] or sent[-1]["content"] == "second"  # fmt: skip
    assert all("time" not in m and "turn" not in m and "usage" not in m for m in sent)


def test_resuming_reads_only_the_chunks_the_context_refers_to(home, server, workspace):
    from gitsessions.store.sessions import Change
    from gitsessions.values.clock import now_iso
    from gitsessions.values.ids import new_id
    from gitsessions.values.records import new_header

    store = SessionStore(home, background_maintenance=False)
    system = {"role": "system", "content": "agent"}
    lines = [system]
    for n in range(300):
        lines += [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]
    context = [system, *lines[-10:]]
    head = store.create(new_header(new_id(), now_iso()), Change(context=context, append=lines))
    middle = dict(store.segments(head))[256]  # lines 256-511: no context message is there
    loosen(home / "store.git")  # a commit writes a pack: its objects made loose files
    path = home / "store.git" / "objects" / middle[:2].decode() / middle[2:].decode()
    saved = path.read_bytes()
    path.unlink()
    try:
        server.reply(content="resumed", usage=(10, 1))
        done = run_gitsessions(*exec_args(server, workspace), "--resume", head.id, "go on")
    finally:
        path.write_bytes(saved)
    assert done.returncode == 0, done.stderr
    sent = [m.get("content") for m in server.requests[0]["messages"]]
    assert sent[-3:] == ["q299", "a299", "go on"]


def test_the_upgrade_steps_are_one_per_format_in_order():
    from gitsessions.store import upgrades
    from gitsessions.store.formats import FORMAT

    assert [step.source for step in upgrades.STEPS] == list(range(1, FORMAT))
    assert [step.file.__name__ for step in upgrades.STEPS] == [
        f"v{n}_to_v{n + 1}_file" for n in range(1, FORMAT)
    ]


def _plumb(repo: Path, *args: str, stdin: bytes = b"") -> str:
    """Stock git plumbing against the store (no gitsessions code)."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run(["git", "--git-dir", str(repo), *args], input=stdin,
                          capture_output=True, check=True, env=env)  # fmt: skip
    return done.stdout.decode().strip()


def _format_1_session(repo: Path, sid: str, messages: list[dict], context: list[dict]) -> None:
    """A session as format 1 stored it, written with stock git: a header without
    `active_at` or usage, `usage.json`, bare JSON files, the context as messages, and the
    transcript as flat segments of 256 bare messages (`000017.jsonl`)."""
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "requests": 2, "cost_usd": 0.5,
             "by_model": {"m": {"prompt_tokens": 7, "completion_tokens": 3, "requests": 2,
                                "cost_usd": 0.5}}}  # fmt: skip
    header = {"format": "gitsessions.header/1", "id": sid, "title": "old", "summary": "",
              "parent_id": None, "fork_point": None, "archived": False,
              "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z",
              "workspace": {"path": "/w", "repo_root": None, "branch": None, "head": None},
              "model": "m", "counts": {"messages": len(messages),
              "context_messages": len(context), "compactions": 1}}  # fmt: skip
    files = {
        "session.json": header,
        "usage.json": usage,
        "context.json": context,
        "plan.json": [{"step": "read", "status": "done"}],
        "pins.json": ["keep this"],
        "compactions.json": [{"trigger": "manual", "summary": "s"}],
    }

    def blob(data: bytes) -> str:
        return _plumb(repo, "hash-object", "-w", "--stdin", stdin=data)

    def lines(part: list[dict]) -> bytes:
        return b"".join(json.dumps(m).encode() + b"\n" for m in part)

    segments = [
        f"100644 blob {blob(lines(messages[at : at + 256]))}\t{at // 256:06d}.jsonl"
        for at in range(0, len(messages), 256)
    ]
    transcript = _plumb(repo, "mktree", stdin="\n".join(segments).encode() + b"\n")
    entries = [f"100644 blob {blob(json.dumps(v).encode())}\t{k}" for k, v in files.items()]
    entries.append(f"040000 tree {transcript}\ttranscript")
    tree = _plumb(repo, "mktree", stdin="\n".join(entries).encode() + b"\n")
    message = f"turn 9\n\nSession: {sid}\nEvent: turn\n".encode()
    commit = _plumb(repo, "commit-tree", tree, stdin=message)
    _plumb(repo, "update-ref", f"refs/heads/sessions/{sid}", commit)


def test_a_format_1_session_made_by_stock_git_reads_as_it_does_once_upgraded(home):
    from gitsessions.store.sessions import Change
    from gitsessions.values.ids import new_id

    store = SessionStore(home, background_maintenance=False)
    sid, repo = new_id(), home / "store.git"
    system = {"role": "system", "content": "agent"}
    messages = [system]  # 17 full segments and a partial one: a tree of two levels once filed
    for n in range(17 * 128 + 2):
        messages += [
            {"role": "user", "content": f"q{n}"},
            {"content": f"a{n}", "role": "assistant"},
        ]
    context = [system, {"role": "user", "content": "a note no line holds"}, *messages[-3:]]
    _format_1_session(repo, sid, messages, context)
    old_blobs = set(_plumb(repo, "ls-tree", "-r", f"sessions/{sid}", "transcript").split())

    def everything(head):
        reads = {what: store.read(head, what) for what in ("plan", "pins", "compactions", "usage")}
        return (reads, store.context_lines(head), store.records(head), store.segments(head),
                list(store.iter_records(head, 250, 260)))  # fmt: skip

    old = store.head(sid)
    assert old.version == 1
    assert old.header["active_at"] == old.header["updated_at"] == "2026-01-02T00:00:00Z"
    assert old.header["usage"]["requests"] == 2  # usage.json, read into the header
    before = everything(old)
    assert before[0]["plan"] == [{"step": "read", "status": "done"}]
    assert [ref for _m, ref in before[1]] == [0, None, len(messages) - 3, len(messages) - 2,
                                              len(messages) - 1]  # fmt: skip
    assert [r["message"] for r in before[2]] == messages  # bare lines read as records
    assert [first for first, _blob in before[3]] == list(range(0, len(messages), 256))

    new = store.commit(old, Change(), event="rename", subject="rename: old")
    assert new.version == 2 and store.head(sid).version == 2
    assert store.head(sid).header == {**old.header, "format": "gitsessions.header/2"}
    assert everything(store.head(sid)) == before
    names = set(_plumb(repo, "ls-tree", "--name-only", f"sessions/{sid}").split())
    assert names == {"session.json", "context.json", "context-inline.json", "plan.json",
                     "pins.json", "compactions.json", "transcript"}  # fmt: skip
    new_blobs = set(_plumb(repo, "ls-tree", "-r", f"sessions/{sid}", "transcript").split())
    assert {b for b in old_blobs if len(b) == 40} == {b for b in new_blobs if len(b) == 40}
    assert git(repo, "cat-file", "-t", old.commit.decode()).stdout.strip() == "commit"
    reply = {"role": "assistant", "content": "after the upgrade"}
    last = store.commit(store.head(sid), Change(append=[reply]), event="turn", subject="turn")
    assert store.transcript(last) == [*messages, reply]  # appended to the filed tree
    assert store.segments(last)[-1][0] == len(messages)
    fsck(home)
