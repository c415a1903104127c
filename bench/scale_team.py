"""Scale bench, team case (issue 46): one project's remote that a team filled.

One real-shaped session is made through the store's API (a few turns, in a real project:
a repository whose root commit names it) and pushed by the real `push --all` to a bare
repository. `git fast-import` then writes N more sessions into that remote in the
store's layout (docs/format.md): each a root commit of its own whose tree is the
template's (its transcript, context and other files reused by id) with a new
`session.json` (its id, title and times), on `refs/heads/sessions/<id>` and the project
index `refs/gitsessions/projects/<root>/<id>`; the refs packed as a remote's are.

Measured in a fresh home whose remote is that repository, each command a new
`python -m gitsessions` process (seconds, peak RSS from `wait4`): the first `pull`, the
first `list` after it, `list` again, `list --here`, `list --json`, `search` (its index
built) and again, `info`, `gc`; then 100 sessions more on the remote and a second `pull`,
against a `pull` of 100 sessions into an empty home (the issue's goal: within 2x), and
`search` after it (its index brought up by the 100 new sessions alone).
"""

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.projects import real_project
from bench.store import Messages, make_header, turn_change
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.canonical import dumps
from gitsessions.values.records import empty_usage

IDENT = b"gitsessions <gitsessions@localhost>"
START = 1_780_000_000  # the first generated session's time (2026-05-28), one a minute
NEW = 100  # sessions added to the remote before the second pull
TURNS = 6  # turns of the template session
WORD = "template"  # in every session's title: what `search` looks for


def git(git_dir: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=data,
                          capture_output=True, check=True)  # fmt: skip
    return done.stdout.decode().strip()


def template(work: Path, clone: Path, root: str) -> Path:
    """A session of TURNS four-message turns made through the store's API; its home."""
    gen = Messages(46)
    store = SessionStore(work / "maker", redact=False, background_maintenance=False)
    try:
        header = make_header(gen, f"{WORD} session")
        project = {"roots": [root], "remotes": []}
        header["workspace"] = {"path": str(clone), "repo_root": str(clone), "branch": "main",
                               "head": root, "project": project}  # fmt: skip
        system = {"role": "system", "content": "You are a coding agent."}
        head = store.create(header, Change(context=[system], append=[system]))
        context: list[dict[str, Any]] = [system]
        usage = empty_usage()
        for n in range(TURNS):
            change, context, usage = turn_change(head, context, gen.turn(4), usage)
            head = store.commit(head, change, event="turn", subject=f"turn {n + 1}")
        return work / "maker"
    finally:
        store.close()


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def add_sessions(remote: Path, head: str, root: str, first: int, count: int) -> None:
    """`count` sessions numbered from `first`, by one `git fast-import` into `remote`: the
    template's tree at `head` with a header of their own; refs packed afterwards."""
    header = json.loads(git(remote, "cat-file", "blob", f"{head}:session.json"))
    entries = [line.split("\t", 1) for line in git(remote, "ls-tree", head).splitlines()]
    kept = [(meta.split(), name) for meta, name in entries if name != "session.json"]
    stream: list[bytes] = []
    for n in range(first, first + count):
        sid = uuid.UUID(int=uuid.uuid5(uuid.NAMESPACE_OID, f"team {n}").int).hex
        when = START + 60 * n
        at = _stamp(when)
        own = {**header, "id": sid, "title": f"{WORD} {n}", "summary": f"session {n} of the team",
               "created_at": at, "updated_at": at, "active_at": at}  # fmt: skip
        body = dumps(own)
        message = f"import: {own['title']}\n\nSession: {sid}\nEvent: import\n".encode()
        out = [b"commit refs/heads/sessions/%s\n" % sid.encode(),
               b"author %s %d +0000\ncommitter %s %d +0000\n" % (IDENT, when, IDENT, when),
               b"data %d\n%s\n" % (len(message), message)]  # fmt: skip
        for (mode, _kind, oid), name in kept:
            out.append(b"M %s %s %s\n" % (mode.encode(), oid.encode(), name.encode()))
        out.append(b"M 100644 inline session.json\ndata %d\n%s\n" % (len(body), body))
        out.append(b"\nreset refs/gitsessions/projects/%s/%s\nfrom refs/heads/sessions/%s\n\n"
                   % (root.encode(), sid.encode(), sid.encode()))  # fmt: skip
        stream.append(b"".join(out))
    git(remote, "fast-import", "--quiet", data=b"".join(stream))
    git(remote, "pack-refs", "--all")


Runner = Callable[[Sequence[str], dict[str, str], float, Path | None], dict[str, Any]]


def _row(case: str, took: dict[str, Any]) -> dict[str, Any]:
    row = {"case": case, "seconds": took["seconds"], "peak_rss_mb": took["peak_rss_mb"],
           "code": took["code"], "stderr": took["stderr"] if took["code"] else ""}  # fmt: skip
    # as it goes (stderr): a run stopped midway still shows what it measured
    print(f"  team: {case}: {row['seconds']} s, {row['peak_rss_mb']} MB", file=sys.stderr)
    return row


def team_cases(
    root_dir: Path, sessions: int, timeout: float, run: Runner, env_of: Callable[[Path], dict]
) -> list[dict[str, Any]]:
    """The table: each command in a new process against a home whose remote holds
    `sessions` sessions of one project (and the template's)."""
    work = root_dir / "team"
    work.mkdir(parents=True)
    clone, root = real_project(work)
    maker = template(work, clone, root)
    rows: list[dict[str, Any]] = []

    def remote_of(name: str, count: int) -> tuple[Path, str]:
        remote = work / name
        git(remote, "init", "-q", "--bare")
        alias = name.split(".")[0]
        run(["remote", "add", alias, str(remote)], env_of(maker), timeout, clone)
        took = run(["push", "--all", alias], env_of(maker), timeout, clone)
        if took["code"]:
            raise RuntimeError(f"push of the template failed: {took['stderr']}")
        head = git(remote, "for-each-ref", "--format=%(objectname)", "refs/heads/sessions/")
        began = time.perf_counter()
        add_sessions(remote, head.split()[0], root, 0, count)
        rows.append({"case": f"make {name} ({count} by fast-import)", "code": 0,
                     "seconds": round(time.perf_counter() - began, 2)})  # fmt: skip
        return remote, head.split()[0]

    # the baseline: 100 sessions pulled into an empty home
    small, _ = remote_of("small.git", NEW)
    env = env_of(work / "home-small")
    run(["remote", "add", "origin", str(small)], env, timeout, clone)
    rows.append(_row(f"pull {NEW} into an empty home (baseline)",
                     run(["pull"], env, timeout, clone)))  # fmt: skip

    remote, head = remote_of("team.git", sessions)
    env = env_of(work / "home")
    run(["remote", "add", "origin", str(remote)], env, timeout, clone)
    some = uuid.UUID(int=uuid.uuid5(uuid.NAMESPACE_OID, f"team {sessions // 2}").int).hex
    cases: list[tuple[str, list[str]]] = [
        ("first pull", ["pull"]),
        ("first list after it", ["list"]),
        ("list again", ["list"]),
        ("list --limit 100 (the table's default)", ["list", "--limit", "100"]),
        ("list --here", ["list", "--here"]),
        ("list --json", ["list", "--json"]),
        (f"search {WORD}", ["search", WORD, "--json"]),
        (f"search {WORD} again", ["search", WORD, "--json"]),
        ("info", ["info", some]),
        ("gc", ["gc"]),
    ]
    for case, args in cases:
        took = run(args, env, timeout, clone)
        row = _row(case, took)
        if case == "list --json" and not took["code"]:
            row["rows"] = len(json.loads(took["stdout"] or "[]"))
        rows.append(row)
    add_sessions(remote, head, root, sessions, NEW)
    rows.append(_row(f"second pull ({NEW} new)", run(["pull"], env, timeout, clone)))
    again = run(["search", WORD, "--json"], env, timeout, clone)
    rows.append(_row(f"search {WORD} after it ({NEW} new)", again))
    return rows
