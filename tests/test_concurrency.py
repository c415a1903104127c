"""Real processes racing on one session, and real processes killed mid-commit."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from gitsessions.store.sessions import SessionStore
from tests.conftest import REPO, fsck, run_gitsessions

WORKER = """
import sys
from pathlib import Path
from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.sessions import Change, SessionStore

home, sid, name, turns = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
store = SessionStore(home)
won = lost = 0
while won < turns:
    head = store.head(sid)
    msg = {"role": "user", "content": f"{name}-{won}" + " padding" * 50}
    try:
        store.commit(head, Change(append=[msg], context=[msg]), event="turn",
                     subject=f"turn: {name}-{won}")
        won += 1
    except ConcurrentUpdate:
        lost += 1
print(won, lost)
"""

LOOPER = """
import sys
from pathlib import Path
from gitsessions.store.sessions import Change, SessionStore

home, sid = Path(sys.argv[1]), sys.argv[2]
store = SessionStore(home)
n = 0
while True:
    head = store.head(sid)
    msgs = [{"role": "user", "content": f"crash-{n}-{i} " + "x" * 3000} for i in range(20)]
    store.commit(head, Change(append=msgs, context=msgs), event="turn", subject=f"turn {n}")
    n += 1
    print(n, flush=True)
"""


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_concurrent_writers_lose_nothing(home, make_session):
    head = make_session(turns=0)
    procs = [_spawn(WORKER, str(home), head.id, f"w{n}", "25") for n in range(3)]
    results = []
    for proc in procs:
        out, errors = proc.communicate(timeout=240)
        assert proc.returncode == 0, errors
        results.append(tuple(map(int, out.split())))
    store = SessionStore(home)
    transcript = store.transcript(store.head(head.id))
    written = [m["content"].split()[0] for m in transcript if m["role"] == "user"]
    expected = {f"w{n}-{i}" for n in range(3) for i in range(25)}
    assert set(written) == expected and len(written) == 75  # every win landed, once
    assert sum(won for won, _lost in results) == 75
    assert store.head(head.id).counts["messages"] == 1 + 75
    fsck(home)
    store.close()


def test_killed_writers_leave_a_valid_store(home, make_session):
    head = make_session(turns=1)
    rng = random.Random(7)
    for _round in range(8):
        proc = _spawn(LOOPER, str(home), head.id)
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one commit done: the loop is running
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        store = SessionStore(home)
        current = store.head(head.id)
        transcript = store.transcript(current)
        assert len(transcript) == current.counts["messages"]
        assert json.loads(json.dumps(store.read(current, "context")))  # readable JSON
        store.close()
        fsck(home)
    # the session still takes commits after all those crashes (stale locks cleared)
    store = SessionStore(home)
    from gitsessions.store.sessions import Change

    after = store.commit(
        store.head(head.id),
        Change(append=[{"role": "user", "content": "ok"}]),
        event="turn",
        subject="after crashes",
    )
    assert store.transcript(after)[-1]["content"] == "ok"
    store.close()


def test_stale_dulwich_ref_lock_does_not_block(home, make_session):
    head = make_session(turns=1)
    lock = Path(home / "store.git" / f"refs/heads/sessions/{head.id}.lock")
    lock.write_bytes(b"")  # as left by a writer killed between lock and rename
    store = SessionStore(home)
    from gitsessions.store.sessions import Change

    after = store.commit(
        store.head(head.id),
        Change(append=[{"role": "user", "content": "x"}]),
        event="turn",
        subject="after",
    )
    assert not lock.exists() and after.counts["messages"] == 4
    store.close()


def test_concurrent_pulls_and_an_exec_leave_every_session_whole(home, tmp_path, server):
    """Four `pull`s of the same remote at once, while `exec` works in a session of its
    own: every process ends in success or one line, every pulled session ends at the
    remote's head, the exec's turn is stored, and stock git finds nothing wrong."""
    from tests.conftest import exec_args, git
    from tests.test_sync import make, say

    other = tmp_path / "home-a"
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    pushed_ids = [make(other, turns=3, tag=f"s{n}") for n in range(12)]

    def gitsessions(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "gitsessions", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=REPO,
        )  # fmt: skip

    # the setup and the checks after in this process: the racing ones are the subject
    for args in (["remote", "add", "origin", str(bare)], ["push", "--all"]):
        assert run_gitsessions("--home", str(other), *args).returncode == 0
    assert run_gitsessions("remote", "add", "origin", str(bare)).returncode == 0
    workspace = tmp_path / "work"
    workspace.mkdir()
    server.reply(content="done while pulling")
    mine = gitsessions(*exec_args(server, workspace), "--json", "work on it")
    pulls = [gitsessions("pull", "origin") for _ in range(4)]
    outputs = [proc.communicate(timeout=240) for proc in [mine, *pulls]]
    for proc, (_out, errors) in zip([mine, *pulls], outputs, strict=True):
        assert "Traceback" not in errors, errors
        assert proc.returncode == 0 or len(errors.strip().splitlines()) == 1, errors
    assert mine.returncode == 0
    own = json.loads(outputs[0][0])["session"]
    for n, pulled in enumerate(pushed_ids):  # one more change there, then a quiet pull
        if n % 4 == 0:
            say(other, pulled, "later")
    assert run_gitsessions("--home", str(other), "push", "--all").returncode == 0
    done = run_gitsessions("pull", "origin")
    assert done.returncode == 0, done.stderr
    for pulled in pushed_ids:
        ref = f"refs/heads/sessions/{pulled}"
        assert (
            git(home / "store.git", "rev-parse", ref).stdout == git(bare, "rev-parse", ref).stdout
        )
    listed = json.loads(run_gitsessions("list", "--json").stdout)
    assert {s["id"] for s in listed} == {*pushed_ids, own}  # the pulled ones, the exec's own
    store = SessionStore(home)
    assert store.transcript(store.head(own))[-1]["content"] == "done while pulling"
    store.close()
    fsck(home)
