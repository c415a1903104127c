"""A session's files (`store/files.py`): blobs of their own under `files/`, added by a
`Change`, kept by every later commit and by a fork, named by the SHA-256 of their bytes
(the same bytes stored once), refused when the name is not of the layout or not the
bytes' hash; stock git reads them, fsck, the fetch check and `doctor` accept them, and a
pull brings them with the commits."""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from gitsessions.store import stockgit, treecheck
from gitsessions.store.files import MAX_BYTES, BadFile, name_of
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import fsck, git

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def shown(home: Path, what: str) -> bytes:
    """`git show <what>` (stock git) as bytes."""
    args = ["git", "--git-dir", str(home / "store.git"), "show", what]
    return subprocess.run(args, capture_output=True, check=True).stdout


def with_image(store: SessionStore, data: bytes = PNG):  # type: ignore[no-untyped-def]
    name = name_of(data, "image/png")
    message = {"role": "user", "content": f"[image: image/png, 2 KB, {name}]"}
    head = store.create(
        new_header(new_id(), now_iso(), title="pictures"),
        Change(context=[message], append=[message], append_meta=[{"source": {"files": [name]}}],
               files={name: data}),
    )  # fmt: skip
    return head, name


def test_a_file_is_a_blob_that_later_commits_and_forks_keep(store, home, cli):
    head, name = with_image(store)
    assert name == f"files/{hashlib.sha256(PNG).hexdigest()}.png"
    assert shown(home, f"{head.commit.decode()}:{name}") == PNG
    files_tree = git(home / "store.git", "rev-parse", f"{head.commit.decode()}:files").stdout
    reply = {"role": "assistant", "content": "a login form"}
    later = store.commit(
        head,
        Change(context=[*store.read(head, "context"), reply], append=[reply], files={name: PNG}),
        event="turn",
        subject="turn 1",
    )  # the same bytes again: nothing new under files/
    kept = git(home / "store.git", "rev-parse", f"{later.commit.decode()}:files").stdout
    assert kept == files_tree
    assert store.read_file(later, name) == PNG
    fork = store.fork(later, new_id(), title=None, created_at=now_iso())
    assert store.read_file(fork, name) == PNG
    assert store.read_file(fork, name.replace(".png", ".gif")) is None
    other = b"GIF89a" + bytes(100)
    gif = name_of(other, "image/gif")
    grown = store.commit(later, Change(files={gif: other}), event="turn", subject="turn 2")
    listed = git(home / "store.git", "ls-tree", "--name-only", grown.branch, "files/").stdout
    assert sorted(listed.split()) == sorted([name, gif])
    fsck(home)
    report = json.loads(cli("doctor", "--json").stdout)
    assert report["findings"] == []


def test_the_fetch_check_accepts_a_files_tree(store, home):
    head, _name = with_image(store)
    for path in ("", "files"):  # the session's tree, and its files/
        tree = git(home / "store.git", "rev-parse", f"{head.commit.decode()}:{path}").stdout
        [raw] = stockgit.contents(home / "store.git", [tree.strip().encode()], None)
        assert raw is not None and (path == "" or raw.count(b"100644 ") == 1)
        treecheck.check_entries(tree.strip(), raw)  # passes: names and modes of the layout
    with pytest.raises(treecheck.Refused, match="not a session file"):
        treecheck.check_entries("0" * 40, raw.replace(b".png", b"~png"))


@pytest.mark.parametrize(
    "name, data, why",
    [
        (f"files/{hashlib.sha256(PNG).hexdigest()}.tiff", PNG, "not the name"),
        (f"files/{hashlib.sha256(b'other').hexdigest()}.png", PNG, "another SHA-256"),
        ("transcript/0000000000.jsonl", PNG, "not the name"),
        ("files/../session.json", PNG, "not the name"),
        (name_of(bytes(MAX_BYTES + 1), "image/png"), bytes(MAX_BYTES + 1), "over the 5 MiB"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_written(store, name, data, why):
    head, _ = with_image(store)
    with pytest.raises(BadFile, match=why):
        store.commit(head, Change(files={name: data}), event="turn", subject="turn 1")
    assert store.head(head.id).commit == head.commit


def test_a_pull_brings_the_files(cli, home, tmp_path):
    store = SessionStore(home, background_maintenance=False)
    try:
        head, name = with_image(store)
    finally:
        store.close()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    cli("remote", "add", "origin", str(bare))
    cli("push", "--all")
    other = tmp_path / "home-b"
    cli("--home", str(other), "remote", "add", "origin", str(bare))
    cli("--home", str(other), "pull")
    assert shown(other, f"refs/heads/sessions/{head.id}:{name}") == PNG
    fsck(other)
