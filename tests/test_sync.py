"""Sync through real remotes: two homes push and pull through a bare repository path,
`git daemon` on 127.0.0.1 and smart HTTP (`git http-backend`) on 127.0.0.1, all started
here. Stock git checks every remote afterwards (`clone --mirror`, `fsck --strict`)."""

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitsessions.services.code.workspace import describe
from gitsessions.services.sync import pull
from gitsessions.store import history, maintenance, tracking, transport
from gitsessions.store.background import wait_for_maintenance
from gitsessions.store.lease import Lease
from gitsessions.store.repo import GitStore
from gitsessions.store.sessions import Change, SessionStore, ref_name
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import fsck, git
from tests.git_servers import free_port, git_daemon, git_http

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


@dataclass
class Remote:
    url: str
    bare: Path  # the repository on the server side, for stock git to inspect


@pytest.fixture(params=["path", "daemon", "http"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Remote]:
    root = tmp_path / "server"
    root.mkdir()
    bare = root / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    if request.param == "path":
        yield Remote(str(bare), bare)
    elif request.param == "daemon":
        with git_daemon(root) as base:
            yield Remote(f"{base}/sessions.git", bare)
    else:
        with git_http(root) as base:
            yield Remote(f"{base}/sessions.git", bare)


@pytest.fixture
def bare_remote(tmp_path: Path) -> Remote:
    bare = tmp_path / "server" / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return Remote(str(bare), bare)


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Path]:
    """A second machine's home; checked by stock git afterwards like the first."""
    path = tmp_path / "home-b"
    yield path
    if (path / "store.git" / "HEAD").exists():
        fsck(path)


def make(home: Path, turns: int = 2, tag: str = "", redact: bool = True) -> str:
    store = SessionStore(home, redact=redact, background_maintenance=False)
    try:
        sid = new_id()
        system = {"role": "system", "content": "You are a coding agent."}
        head = store.create(
            new_header(sid, now_iso(), title=f"session {tag}"),
            Change(context=[system], append=[system]),
        )
        for n in range(turns):
            head = _turn(store, head, f"{tag} question {n}", f"{tag} answer {n}")
        return sid
    finally:
        store.close()


def _turn(store: SessionStore, head, prompt: str, reply: str):  # type: ignore[no-untyped-def]
    msgs = [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}]
    context = store.read(head, "context") + msgs
    return store.commit(head, Change(context=context, append=msgs), event="turn", subject="turn")


def pushed(cli, home: Path, tmp_path: Path, form: str = "path") -> tuple[Path, str, str]:  # type: ignore[no-untyped-def]
    """A new bare repository `remote.git` that one session of `home` was pushed to
    (remote `origin`): the repository, its URL (a path, or `file://` by `form`), the id."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    url = str(bare) if form == "path" else f"file://{bare}"
    sid = make(home, tag="a")
    cli("remote", "add", "origin", url)
    cli("push", "--all")
    return bare, url, sid


def say(home: Path, sid: str, text: str) -> None:
    store = SessionStore(home, background_maintenance=False)
    try:
        _turn(store, store.head(sid), text, f"reply to {text}")
    finally:
        store.close()


def contents(home: Path, sid: str) -> list[str]:
    store = SessionStore(home)
    try:
        return [m["content"] for m in store.transcript(store.head(sid))]
    finally:
        store.close()


def header(home: Path, sid: str) -> dict:  # type: ignore[type-arg]
    store = SessionStore(home)
    try:
        return dict(store.head(sid).header)
    finally:
        store.close()


def refs(path: Path, prefix: str = "refs/") -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)", prefix).stdout
    return {name: sha for name, sha in (line.split() for line in out.splitlines())}


def summary(cli, home: Path, *args: str, code: int = 0) -> dict:  # type: ignore[no-untyped-def,type-arg]
    result = cli("--home", str(home), *args, "--json", code=code)
    return json.loads(result.stdout)


def results(report: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {s["id"]: s["result"] for s in report["sessions"]}


def check_remote(remote: Remote, tmp_path: Path) -> None:
    """Stock git mirrors the remote through its URL and finds nothing wrong."""
    mirror = tmp_path / f"mirror-{free_port()}.git"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", remote.url, str(mirror)], check=True, timeout=120
    )
    for repo in (mirror, remote.bare):
        result = git(repo, "fsck", "--strict", "--no-progress", check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    assert refs(mirror, "refs/heads/sessions/") == refs(remote.bare, "refs/heads/sessions/")


def test_two_homes_create_fast_forward_no_op_and_fork(cli, home, other, remote, tmp_path):
    one, two = make(home, tag="one"), make(home, tag="two")
    cli("remote", "add", "origin", remote.url)
    cli("archive", one)
    pushed = summary(cli, home, "push", "--all")
    assert results(pushed) == {one: "new", two: "new"}

    # a second machine starts from an empty home
    cli("--home", str(other), "remote", "add", "origin", remote.url)
    pulled = summary(cli, other, "pull")
    assert results(pulled) == {one: "created", two: "created"}
    assert contents(other, two) == contents(home, two)
    assert header(other, one)["archived"] is True  # the flag travels
    listed = json.loads(cli("--home", str(other), "list", "--include-archived", "--json").stdout)
    assert {row["id"] for row in listed} == {one, two}

    # no-op both ways
    assert set(results(summary(cli, other, "pull")).values()) == {"unchanged"}
    assert set(results(summary(cli, home, "push", "--all")).values()) == {"up to date"}

    # fast-forward (the caches were filled before it)
    assert json.loads(cli("--home", str(other), "search", "question", "--json").stdout)
    say(home, one, "more from one")
    assert results(summary(cli, home, "push", one)) == {one: "updated"}
    assert results(summary(cli, other, "pull"))[one] == "updated"
    assert contents(other, one) == contents(home, one)
    found = cli("--home", str(other), "search", "more from one", "--include-archived", "--json")
    hits = json.loads(found.stdout)
    assert one in {hit["session"] for hit in hits}  # the caches follow the moved branch

    # both sides change: nothing is lost
    base = refs(home / "store.git")[f"refs/heads/sessions/{two}"]
    say(home, two, "only on the laptop")
    say(other, two, "only on the server")
    cli("--home", str(home), "push", two)
    refused = summary(cli, other, "push", two, code=1)
    assert refused["sessions"] == [
        {"id": two, "result": "diverged", "detail": "run gitsessions pull"}
    ]
    forked = summary(cli, other, "pull")["sessions"]
    fork = next(s for s in forked if s["id"] == two)
    assert fork["result"] == "forked" and fork["detail"] == "diverged: this home's line"
    # the remote's line keeps the id (as in every home), ours goes on as the fork
    ours, theirs = contents(other, fork["fork"]), contents(other, two)
    assert theirs == contents(home, two) and "only on the laptop" in theirs
    assert "only on the server" in ours and "only on the laptop" not in ours
    forked_header = header(other, fork["fork"])
    assert forked_header["parent_id"] == two and forked_header["fork_point"] == base
    assert forked_header["title"].endswith("(diverged from origin)")
    # the next pull finds nothing to do; the fork goes, and the first home gets it
    assert results(summary(cli, other, "pull"))[two] == "unchanged"
    assert results(summary(cli, other, "push", "--all")) == {
        one: "up to date",
        two: "up to date",
        fork["fork"]: "new",
    }
    assert results(summary(cli, home, "pull"))[fork["fork"]] == "created"
    assert refs(home / "store.git", "refs/heads/sessions/") == refs(
        other / "store.git", "refs/heads/sessions/"
    )
    check_remote(remote, tmp_path)


def test_deletes_travel_only_on_purpose(cli, home, other, remote, tmp_path):
    keep, gone = make(home, tag="keep"), make(home, tag="gone")
    cli("remote", "add", "origin", remote.url)
    cli("push", "--all")
    cli("--home", str(other), "remote", "add", "origin", remote.url)
    cli("--home", str(other), "pull")

    cli("delete", gone, "--yes")
    result = cli("push", "--all")
    assert "1 session deleted here still has a copy" in result.stderr
    assert f"refs/heads/sessions/{gone}" in refs(remote.bare)  # without --prune it stays
    assert "refs/gitsessions/tombstones" in refs(remote.bare)

    # the deleted session is not re-created here, nor on a new machine
    assert results(summary(cli, home, "pull"))[gone] == "deleted here"
    assert f"refs/heads/sessions/{gone}" not in refs(home / "store.git")
    fresh = tmp_path / "home-c"
    cli("--home", str(fresh), "remote", "add", "origin", remote.url)
    assert results(summary(cli, fresh, "pull")) == {keep: "created", gone: "deleted here"}
    # a machine that still has it deletes it too (tombstones win), setting it aside
    pulled = {o["id"]: o for o in summary(cli, other, "pull")["sessions"]}
    assert pulled[gone]["result"] == "deleted" and "fork" not in pulled[gone]
    assert f"refs/heads/sessions/{gone}" not in refs(other / "store.git")
    assert f"refs/gitsessions/trash/{gone}" in refs(other / "store.git")
    assert results(summary(cli, other, "pull"))[gone] == "deleted here"  # and stays so

    pruned = summary(cli, home, "push", "--prune")
    assert results(pruned) == {gone: "pruned"} and pruned["remaining_deleted"] == 0
    assert f"refs/heads/sessions/{gone}" not in refs(remote.bare)
    assert f"refs/heads/sessions/{keep}" in refs(remote.bare)
    assert not [r for r in refs(remote.bare) if "trash" in r]  # this home's alone
    fsck(fresh)
    check_remote(remote, tmp_path)


def test_a_secret_is_refused_before_anything_leaves(cli, home, bare_remote):
    clean = make(home, tag="clean")
    leaky = make(home, tag="leaky", redact=False)
    store = SessionStore(home, redact=False, background_maintenance=False)
    _turn(store, store.head(leaky), f"deploy with {TOKEN}", "done")
    store.close()
    cli("remote", "add", "origin", bare_remote.url)
    result = cli("push", "--all", code=1)
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: refusing to push: ")
    assert f"session {leaky[:8]} message 5: github-token" in line
    assert TOKEN not in result.stderr + result.stdout
    assert refs(bare_remote.bare, "refs/heads/") == {}  # nothing was sent, not even clean
    pushed = summary(cli, home, "push", "--all", "--allow-secrets")
    assert results(pushed) == {clean: "new", leaky: "new"}


def test_a_remote_that_is_down_changes_nothing_here(cli, home, tmp_path):
    sid = make(home)
    port = free_port()  # nothing listens there
    urls = {
        "path": str(tmp_path / "no-such.git"),
        "daemon": f"git://127.0.0.1:{port}/x.git",
        "http": f"https://tok:s3cretpass@127.0.0.1:{port}/x.git",
    }
    for name, url in urls.items():
        cli("remote", "add", name, url)
    listed = cli("remote", "list").stdout
    assert "s3cretpass" not in listed and "tok" not in listed
    assert f"https://***@127.0.0.1:{port}/x.git" in listed
    assert (home / "store.git" / "config").stat().st_mode & 0o777 == 0o600  # it holds one
    before = refs(home / "store.git")
    for name in urls:
        for args in (["push", name, sid], ["pull", name]):
            result = cli(*args, code=1)
            errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
            assert len(errors) == 1 and errors[0].startswith("error: cannot "), result.stderr
            assert "s3cretpass" not in result.stderr and "tok:" not in result.stderr
    assert refs(home / "store.git") == before
    assert "s3cretpass" not in (home / "audit.jsonl").read_text()
    cli("remote", "remove", "http")
    assert "http" not in cli("remote", "list").stdout
    # stock git sees the remotes in the store's config
    assert git(home / "store.git", "remote").stdout.split() == ["daemon", "path"]


def test_a_pull_leaves_a_session_an_agent_holds(cli, home, other, bare_remote):
    sid = make(home)
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", sid)
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    cli("--home", str(other), "pull")
    say(home, sid, "newer")
    cli("push", sid)
    before = refs(other / "store.git")[f"refs/heads/sessions/{sid}"]
    with Lease(other, sid):  # a running agent
        held = summary(cli, other, "pull")["sessions"]
        why = "in use by a running agent; left for the next pull"
        assert held == [{"id": sid, "result": "busy", "detail": why}]
        assert refs(other / "store.git")[f"refs/heads/sessions/{sid}"] == before
    assert results(summary(cli, other, "pull")) == {sid: "updated"}
    assert contents(other, sid) == contents(home, sid)


def test_bad_remote_names_and_urls_are_usage_errors(cli, home):
    for args in (["remote", "add", "bad name", "/x"], ["remote", "add", "ok", "ext::sh -c x"]):
        result = cli(*args, code=2)
        assert result.stderr.startswith("error: ")
    cli("remote", "add", "origin", "user@example.org:sessions.git")
    assert cli("remote", "add", "origin", "/elsewhere", code=2).stderr.startswith("error: ")
    assert cli("push", code=2).stderr.startswith("error: say which sessions")
    assert cli("remote", "remove", "nope", code=2).stderr.startswith("error: no remote")
    assert cli("push", "orgin", "--all", code=2).stderr.startswith("error: no remote named")


def test_urls_are_classified_and_their_credentials_masked():
    from gitsessions.store.remoteconfig import kind, mask

    assert kind("/srv/sessions.git") == "path" and kind("../s.git") == "path"
    assert kind("file:///srv/s.git") == "file" and kind("git://h/s.git") == "git"
    assert kind("ssh://me@h:2222/s.git") == "ssh" and kind("me@host:s.git") == "ssh"
    assert kind("https://h/s.git") == "https"
    assert mask("https://ghp_token123@github.com/me/s.git") == "https://***@github.com/me/s.git"
    assert mask("https://me:pw12345@h:8443/s.git") == "https://***@h:8443/s.git"
    assert mask("ssh://me:pw12345@h/s.git") == "ssh://me:***@h/s.git"
    assert mask("me@host:s.git") == "me@host:s.git"  # no secret in scp-style
    assert mask("/srv/s.git") == "/srv/s.git"


def test_delete_drops_the_remote_tracking_refs_and_doctor_stays_clean(
    cli, home, other, bare_remote
):
    sid, kept = make(home, tag="a"), make(home, tag="b")
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", "--all")
    assert f"refs/remotes/origin/sessions/{sid}" in refs(home / "store.git")
    cli("delete", sid, "--yes")
    assert not [r for r in refs(home / "store.git") if sid in r]  # purge reached it all
    assert f"refs/remotes/origin/sessions/{kept}" in refs(home / "store.git")
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    cli("--home", str(other), "pull")
    say(home, kept, "here")
    say(other, kept, "there")
    cli("push", kept)
    cli("--home", str(other), "pull")
    for where in (home, other):
        assert json.loads(cli("--home", str(where), "doctor", "--json").stdout)["healthy"]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project repository with one commit, its `origin` a bare repository."""
    proj, origin = tmp_path / "project", tmp_path / "project-origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    (proj / "app.py").write_text("print('v1')\n")
    _pgit(proj, "add", "app.py")
    _pgit(proj, "commit", "-q", "-m", "v1")
    _pgit(proj, "remote", "add", "origin", str(origin))
    return proj, origin


def _pgit(repo: Path, *args: str) -> str:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    return subprocess.run(
        ["git", *ident, "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _snapshot(proj: Path, sid: str, text: str) -> str:
    """Stand-in for the worktree issue's snapshot: a commit named by the session's ref."""
    (proj / "app.py").write_text(text)
    _pgit(proj, "commit", "-q", "-am", text)
    _pgit(proj, "update-ref", f"refs/gitsessions/snapshots/{sid}", "HEAD")
    return _pgit(proj, "rev-parse", "HEAD")


def test_code_snapshots_travel_with_the_chat(cli, home, other, bare_remote, tmp_path):
    proj, origin = _project(tmp_path)
    store = SessionStore(home, background_maintenance=False)
    sid = new_id()
    workspace = describe(proj, os.environ)  # with the project's identity, as chat records it
    head = store.create(new_header(sid, now_iso(), title="code", workspace=workspace), Change())
    _turn(store, head, "write v2", "done")
    store.close()
    v2 = _snapshot(proj, sid, "print('v2')\n")
    cli("remote", "add", "origin", bare_remote.url)
    pushed = summary(cli, home, "push", sid, "--code")
    assert pushed["code"] == [{"id": sid, "result": "pushed", "detail": "to origin"}]
    assert refs(origin, "refs/gitsessions/")[f"refs/gitsessions/snapshots/{sid}"] == v2
    again = summary(cli, home, "push", sid, "--code")
    assert again["code"] == [{"id": sid, "result": "up to date"}]

    # the other machine gets the code of its sessions (the ref is gone here first)
    _pgit(proj, "update-ref", "-d", f"refs/gitsessions/snapshots/{sid}")
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    pulled = summary(cli, other, "pull", "--code")
    assert pulled["code"] == [{"id": sid, "result": "fetched", "detail": "from origin"}]
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{sid}") == v2

    # a diverged session: this home's line goes on as the fork, with this repository's
    # snapshots of it; the session takes the remote's line and the remote's snapshots
    say(home, sid, "laptop turn")
    say(other, sid, "server turn")
    v3 = _snapshot(proj, sid, "print('v3')\n")
    cli("--home", str(home), "push", sid, "--code")
    _pgit(proj, "update-ref", f"refs/gitsessions/snapshots/{sid}", v2)  # the server's code
    forked = summary(cli, other, "pull", "--code")
    fork = forked["sessions"][0]["fork"]
    assert forked["code"] == [
        {"id": fork, "result": "kept", "detail": f"this repository's of {sid[:8]}"},
        {"id": sid, "result": "fetched", "detail": "from origin"},
    ]
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{fork}") == v2
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{sid}") == v3
    sent = summary(cli, other, "push", fork, sid, "--code")
    assert {c["id"]: c["result"] for c in sent["code"]} == {fork: "pushed", sid: "up to date"}
    assert refs(origin, "refs/gitsessions/")[f"refs/gitsessions/snapshots/{fork}"] == v2
    _pgit(proj, "update-ref", f"refs/gitsessions/snapshots/{sid}", v2)  # moved back here
    # the project's remote never has a snapshot moved back (v3 -> v2 is refused)
    again = summary(cli, home, "push", sid, "--code", code=1)  # like git: exit 1
    assert again["sessions"] == [{"id": sid, "result": "up to date"}]
    assert [c["result"] for c in again["code"]] == ["refused"]
    assert refs(origin, "refs/gitsessions/")[f"refs/gitsessions/snapshots/{sid}"] == v3


@pytest.mark.parametrize("tools", ["this-git", "git-2.29", "no-grep"])
def test_a_secret_in_an_earlier_version_is_refused_too(cli, home, bare_remote, monkeypatch, tools):
    if tools == "git-2.29":  # no rev-list --filter: cat-file types what it lists
        monkeypatch.setattr("gitsessions.store.stockgit.version", lambda: (2, 29))
    if tools == "no-grep":  # every object read and searched in Python
        which = shutil.which
        monkeypatch.setattr(shutil, "which", lambda n, *a: None if n == "grep" else which(n, *a))
    sid = make(home, tag="t", redact=False)
    store = SessionStore(home, redact=False, background_maintenance=False)
    head = store.head(sid)
    for title in (f"deploy {TOKEN}", "deploy"):  # the secret is gone from the head only
        head = store.commit(
            head, Change(header={**head.header, "title": title}), event="rename", subject="r"
        )
    store.close()
    cli("remote", "add", "origin", bare_remote.url)
    line = cli("push", sid, code=1).stderr.strip().splitlines()[-1]
    assert "session.json: github-token" in line and "earlier version" in line
    assert refs(bare_remote.bare, "refs/heads/") == {}


def test_prune_never_deletes_a_branch_that_moved_on_the_remote(cli, home, bare_remote, monkeypatch):
    gone = make(home, tag="gone")
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", "--all")
    cli("delete", gone, "--yes")
    main = refs(bare_remote.bare)["refs/heads/main"]
    ref = f"refs/heads/sessions/{gone}"
    real = transport.send

    def someone_pushes_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        git(bare_remote.bare, "update-ref", ref, main)
        return real(*args, **kwargs)

    monkeypatch.setattr(transport, "send", someone_pushes_meanwhile)
    pruned = summary(cli, home, "push", "--prune", code=1)
    assert pruned["sessions"] == [
        {
            "id": gone,
            "result": "refused",
            "detail": "changed on the remote meanwhile; run gitsessions pull",
        }
    ]
    assert refs(bare_remote.bare)[ref] == main  # the newer value stays


def test_the_hint_search_finds_every_text_the_rules_would_read(home):
    """Stock git and grep search the objects a push sends where they are; they must find
    every text `may_hold_secret` is True for, whatever its case or alphabet."""
    from gitsessions.values.secrets import HINT_BYTES, hinted, may_hold_secret

    texts = [
        "nothing to see here",
        "an AWS key AKIA in capitals",
        "private \u212aey in a Kelvin sign",  # lowercases to "private key"
        "gl\u0130mt- with a dotted capital I",  # lowercases to "gli\u0307mt-": no hint
        "caf\u00e9 s\u00e9cret",  # non-ASCII, no hint
        "caf\u00e9 SeCrEt",  # non-ASCII, a hint
        "",
    ]
    store = SessionStore(home, background_maintenance=False)
    try:
        ids = [
            subprocess.run(
                ["git", "--git-dir", str(store.git.path), "hash-object", "-w", "--stdin"],
                input=text.encode(),
                capture_output=True,
                check=True,
            ).stdout.strip()
            for text in texts
        ]
        found = transport.hinted(store.git, ids, HINT_BYTES)
    finally:
        store.close()
    expected = {n for n, text in enumerate(texts) if may_hold_secret(text)}
    assert expected == {1, 2, 5}
    assert found is not None and expected <= found <= expected | {3}
    assert hinted([t.encode() for t in texts]) == expected


def test_stock_git_ignores_the_callers_repository_variables(
    cli, home, other, bare_remote, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    for name in ("GIT_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE"):
        monkeypatch.setenv(name, str(elsewhere / name))
    sid = make(home)
    cli("remote", "add", "origin", bare_remote.url)
    assert results(summary(cli, home, "push", sid)) == {sid: "new"}
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    assert results(summary(cli, other, "pull")) == {sid: "created"}
    assert not elsewhere.exists()
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_OBJECT_DIRECTORY")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert contents(other, sid) == contents(home, sid)


def test_a_push_leaves_no_refs_of_its_own_and_drops_a_dead_ones(cli, home, bare_remote):
    one, two = make(home, tag="one"), make(home, tag="two")
    store = home / "store.git"
    head = refs(store)[f"refs/heads/sessions/{two}"]
    stale = f"refs/gitsessions/sending/999999999/sessions/{two}"  # no such process
    git(store, "update-ref", stale, head)
    cli("remote", "add", "origin", bare_remote.url)
    assert results(summary(cli, home, "push", one)) == {one: "new"}
    assert refs(store, "refs/gitsessions/sending/") == {}
    # a delete drops one a crashed push left, so its purge reaches everything
    git(store, "update-ref", stale, head)
    cli("delete", two, "--yes")
    assert not [r for r in refs(store) if two in r]


def test_an_incremental_pull_brings_only_what_changed(cli, home, other, bare_remote):
    ids = [make(home, turns=6, tag=f"s{n}") for n in range(3)]
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", "--all")
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    cli("--home", str(other), "pull")
    say(home, ids[0], "one more turn")
    cli("push", ids[0])

    def objects() -> int:
        listed = git(other / "store.git", "count-objects", "-v").stdout.splitlines()
        fields = dict(line.split(": ") for line in listed)
        return int(fields["count"]) + int(fields["in-pack"])

    before = objects()
    assert results(summary(cli, other, "pull"))[ids[0]] == "updated"
    walked = git(home / "store.git", "rev-list", "--objects", f"refs/heads/sessions/{ids[0]}")
    added = objects() - before
    assert 0 < added <= 12 < len(walked.stdout.splitlines())


def swapped(
    home: Path, one: str, two: str, three: str
) -> tuple[set[bytes], dict[str, bytes], bytes, str]:
    """`update_refs_if_equal` of four branches: `one` from its head (what was seen) to
    its parent, `two` from that parent (moved meanwhile), `three` created (it exists), a
    new id created; the tracking ref of `two` in the same write. (moved, heads, the
    parent, the new id)."""
    store = SessionStore(home, background_maintenance=False)
    try:
        heads = {sid: store.head(sid).commit for sid in (one, two, three)}
        older = store.git.get(heads[one]).parents[0]
        fresh = new_id()
        with store.git.locked():
            moved = tracking.update_refs_if_equal(
                store.git,
                {
                    ref_name(one): (heads[one], older),  # holds what was seen: moves
                    ref_name(two): (older, heads[one]),  # moved meanwhile: stays
                    ref_name(three): (None, heads[one]),  # exists: no create
                    ref_name(fresh): (None, heads[two]),  # absent: created
                },
                tracking.Tracking("origin", {ref_name(two): heads[two]}),
            )
    finally:
        store.close()
    return moved, heads, older, fresh


def test_branches_move_by_compare_and_swap_in_one_packed_refs_write(home):
    """`update_refs_if_equal`: each branch moves only from the value it was seen at (a loose file,
    which shadows `packed-refs`, goes once the new value is packed); a create only where
    nothing is; the remote-tracking refs go in the same write."""
    one, two, three = make(home, tag="one"), make(home, tag="two"), make(home, tag="three")
    loose = home / "store.git" / "refs" / "heads" / "sessions" / one
    assert loose.exists()  # a commit writes its branch loose
    moved, heads, older, fresh = swapped(home, one, two, three)
    assert moved == {ref_name(one), ref_name(fresh)}
    assert not loose.exists()
    now = refs(home / "store.git")
    assert now[f"refs/heads/sessions/{one}"] == older.decode()
    assert now[f"refs/heads/sessions/{two}"] == heads[two].decode()
    assert now[f"refs/heads/sessions/{three}"] == heads[three].decode()
    assert now[f"refs/heads/sessions/{fresh}"] == heads[two].decode()
    assert now[f"refs/remotes/origin/sessions/{two}"] == heads[two].decode()
    fsck(home)


def test_relation_walks_only_as_far_as_it_must(home):
    sid = make(home, turns=3)
    store = SessionStore(home, background_maintenance=False)
    try:
        head = store.head(sid).commit
        first = store.git.get(head).parents[0]
        tree = store.git.get(head).tree.decode()
        who = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
        other = git(home / "store.git", *who, "commit-tree", tree, "-p", first.decode(), "-m", "x")
        side = other.stdout.strip().encode()
        assert history.relation(store.git, first, head) == "behind"
        assert history.relation(store.git, head, first) == "ahead"
        assert history.relation(store.git, head, side) == "diverged"
    finally:
        store.close()


def test_a_pull_into_a_pipe_prints_records_and_packs_what_piles_up(cli, home, other, bare_remote):
    """Into a pipe the table is one tab-separated record per session (no rich); a pull
    whose fetches piled up packs past the threshold starts background maintenance."""
    one, two = make(home, tag="one"), make(home, tag="two")
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", "--all")
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    pulled = cli("--home", str(other), "pull")
    assert sorted(pulled.stdout.splitlines()) == sorted(
        [f"{one[:8]}\tcreated\t", f"{two[:8]}\tcreated\t"]
    )
    assert "pulled " in pulled.stderr and "2 created" in pulled.stderr
    store_path = other / "store.git"
    for n in range(maintenance.AUTOPACK_PACKS):  # earlier pulls' packs, one each
        stock = ["git", "--git-dir", str(store_path)]
        blob = subprocess.run([*stock, "hash-object", "-w", "--stdin"], input=f"blob {n}",
                              text=True, capture_output=True, check=True)  # fmt: skip
        subprocess.run([*stock, "pack-objects", "-q", str(store_path / "objects/pack/pack")],
                       input=blob.stdout, text=True, capture_output=True, check=True)  # fmt: skip
    piled = len(list((store_path / "objects" / "pack").glob("*.idx")))
    assert maintenance.packs_to_merge(GitStore(store_path)) > maintenance.AUTOPACK_PACKS
    say(home, one, "one more")
    cli("push", one)
    assert results(summary(cli, other, "pull")) == {one: "updated", two: "unchanged"}
    wait_for_maintenance(store_path)
    assert len(list((store_path / "objects" / "pack").glob("*.idx"))) < (
        piled - maintenance.AUTOPACK_PACKS
    )
    assert maintenance.packs_to_merge(GitStore(store_path)) <= maintenance.AUTOPACK_PACKS
    assert contents(other, one) == contents(home, one)


def test_a_branch_that_moves_during_a_pull_is_left_and_nothing_is_lost(
    cli, home, other, bare_remote, monkeypatch
):
    """A turn committed here after the pull decided to fast-forward, before it moved the
    branch: the compare-and-swap refuses, the turn stays, and the next pull makes this
    home's line (with that turn) a fork and gives the session the remote's line."""
    sid = make(home)
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", sid)
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    cli("--home", str(other), "pull")
    say(home, sid, "from the laptop")
    cli("push", sid)
    real = pull._bring

    def bring_then_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        decided = real(*args, **kwargs)
        say(other, sid, "typed here meanwhile")  # a real commit by another writer
        return decided

    monkeypatch.setattr(pull, "_bring", bring_then_write)
    held = summary(cli, other, "pull")["sessions"]
    assert held == [{"id": sid, "result": "busy", "detail": "changed here meanwhile; pull again"}]
    assert "typed here meanwhile" in contents(other, sid)
    monkeypatch.setattr(pull, "_bring", real)
    forked = summary(cli, other, "pull")["sessions"]
    assert forked[0]["result"] == "forked"
    assert "typed here meanwhile" in contents(other, forked[0]["fork"])
    assert contents(other, sid) == contents(home, sid)
    assert "from the laptop" in contents(other, sid)


def test_a_diverged_pull_that_loses_its_race_moves_no_code_snapshot(
    cli, home, other, bare_remote, tmp_path, monkeypatch
):
    """A writer commits between the pull's fork and its move of the branch: the session
    keeps this home's line, so `--code` leaves its snapshot ref alone (no forced fetch of
    the remote's over it) and copies nothing; the next pull moves both."""
    from gitsessions.services.sessions import writer

    proj, _origin = _project(tmp_path)
    store = SessionStore(home, background_maintenance=False)
    sid = new_id()
    workspace = describe(proj, os.environ)
    head = store.create(new_header(sid, now_iso(), title="code", workspace=workspace), Change())
    _turn(store, head, "write v2", "done")
    store.close()
    base = _snapshot(proj, sid, "print('v2')\n")
    cli("remote", "add", "origin", bare_remote.url)
    cli("push", sid, "--code")
    cli("--home", str(other), "remote", "add", "origin", bare_remote.url)
    cli("--home", str(other), "pull")
    say(home, sid, "laptop turn")
    say(other, sid, "server turn")
    laptop = _snapshot(proj, sid, "print('laptop')\n")
    cli("push", sid, "--code")
    _pgit(proj, "checkout", "-q", base)  # the server's code: a sibling of the laptop's
    server = _snapshot(proj, sid, "print('server')\n")
    real = writer.fork

    def fork_then_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        made = real(*args, **kwargs)
        say(other, sid, "typed meanwhile")
        return made

    monkeypatch.setattr(writer, "fork", fork_then_write)
    raced = summary(cli, other, "pull", "--code")
    monkeypatch.setattr(writer, "fork", real)
    assert "changed here meanwhile" in raced["sessions"][0]["detail"]
    assert raced["code"] == []
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{sid}") == server
    again = summary(cli, other, "pull", "--code")
    fork = again["sessions"][0]["fork"]
    assert again["sessions"][0]["detail"] == "diverged: this home's line"
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{fork}") == server
    assert _pgit(proj, "rev-parse", f"refs/gitsessions/snapshots/{sid}") == laptop
