"""One damaged session ref hides only itself (issue 7).

A real store, its sessions made by `exec` against the fake model server, then one ref
damaged by hand four ways: a loose file holding `nonsense`, a loose ref naming an object
that does not exist, a loose ref naming a blob, a `packed-refs` line whose id is garbage.
`list`, `list --json`, `search`, `exec --continue` and the picker show the other sessions
and name the damaged one once on stderr (exit 0, as `git for-each-ref` does); `show` of
the damaged session keeps its one-line error; `doctor` names it and nothing else. Each
test puts the ref back before it ends, so the closing `git fsck` sees a valid store.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pexpect
import pytest

from tests.conftest import REPO, copy_home, exec_args, git, made_once, run_gitsessions
from tests.fake_openai import FakeOpenAI

KINDS = ("nonsense", "missing", "blob", "packed")
MISSING = "0123456789abcdef0123456789abcdef01234567"  # an id no object of the store has


class Damaged(NamedTuple):
    victim: str  # the session whose ref is damaged
    good: list[str]  # the others
    workspace: Path
    home: Path


def _make(server: FakeOpenAI, workspace: Path, n: int) -> str:
    server.reply(content=f"answer {n} about zebras")
    server.reply(content=f"Zebra summary {n}")  # the list summary after the first turn
    done = run_gitsessions(*exec_args(server, workspace), f"question {n} zebra", "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session"])


def _damage(home: Path, victim: str, kind: str) -> tuple[Path, bytes]:
    """Damage the victim's ref; returns the file changed and what it held."""
    store = home / "store.git"
    if kind == "packed":
        git(store, "pack-refs", "--all")
        path = store / "packed-refs"
        saved = path.read_bytes()
        lines = [
            b"nonsense " + line.split(b" ", 1)[1] if line.endswith(victim.encode()) else line
            for line in saved.splitlines()
        ]
        assert lines != saved.splitlines()
        path.write_bytes(b"\n".join(lines) + b"\n")
        return path, saved
    path = store / "refs" / "heads" / "sessions" / victim
    saved = path.read_bytes()
    if kind == "nonsense":
        path.write_bytes(b"nonsense\n")
    elif kind == "missing":
        path.write_text(MISSING + "\n")
    else:
        blob = subprocess.run(
            ["git", "--git-dir", str(store), "hash-object", "-w", "--stdin"],
            input=b"not a commit\n",
            capture_output=True,
            check=True,
        )
        path.write_bytes(blob.stdout.strip() + b"\n")
    return path, saved


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    """Three sessions made once for the module (a home, the ids, their workspace)."""
    root = tmp_path_factory.mktemp("made")
    workspace = root / "project"
    workspace.mkdir()

    def make(_home: Path) -> list[str]:
        with FakeOpenAI(strict=True) as server:
            return [_make(server, workspace, n) for n in range(3)]

    ids = made_once(root, make)
    return root / "gshome", ids, workspace


@pytest.fixture
def sessions(made: tuple[Path, list[str], Path], home: Path) -> tuple[list[str], Path]:
    """The test's home a copy of the module's three sessions: their ids, their workspace."""
    template, ids, workspace = made
    copy_home(template, home)
    return list(ids), workspace


@pytest.fixture(params=KINDS)
def damaged(
    request: Any, sessions: tuple[list[str], Path], home: Path, undo: list[tuple[Path, bytes]]
) -> Damaged:
    ids, workspace = sessions
    victim = ids[1]
    undo.append(_damage(home, victim, request.param))
    return Damaged(victim, [i for i in ids if i != victim], workspace, home)


@pytest.fixture
def undo() -> Iterator[list[tuple[Path, bytes]]]:
    """Files to put back once the test ends, passed or failed (before the closing fsck)."""
    saved: list[tuple[Path, bytes]] = []
    yield saved
    for path, data in reversed(saved):
        path.write_bytes(data)


def _warned_once(stderr: str, victim: str) -> None:
    """The damaged session is named on exactly one line of stderr: its ref, `doctor`."""
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if victim[:8] in line]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"warning: session ref refs/heads/sessions/{victim} is damaged (")
    assert lines[0].endswith("; run `gitsessions doctor`")
    assert stderr.count(victim[:8]) == 1, stderr


def test_list_shows_the_others_and_names_the_damaged_ref(damaged: Damaged) -> None:
    listed = run_gitsessions("list")
    assert listed.returncode == 0, listed.stderr
    for sid in damaged.good:
        assert sid in listed.stdout
    _warned_once(listed.stderr, damaged.victim)
    as_json = run_gitsessions("list", "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = {row["id"]: row for row in json.loads(as_json.stdout)}
    assert set(damaged.good) <= set(rows)
    assert all("broken" not in rows[sid] for sid in damaged.good)
    if damaged.victim in rows:  # a ref naming a missing object or a blob: unreadable
        assert "broken" in rows[damaged.victim]
    _warned_once(as_json.stderr, damaged.victim)


def test_search_finds_the_others_and_names_the_damaged_ref(damaged: Damaged) -> None:
    found = run_gitsessions("search", "zebra", "--json")
    assert found.returncode == 0, found.stderr
    assert {hit["session"] for hit in json.loads(found.stdout)} == set(damaged.good)
    _warned_once(found.stderr, damaged.victim)


def test_the_damaged_session_keeps_its_one_line_error(damaged: Damaged) -> None:
    for named in (damaged.victim, damaged.victim[:8]):
        shown = run_gitsessions("show", named)
        assert shown.returncode == 1
        assert shown.stdout == "" and "Traceback" not in shown.stderr
        assert len(shown.stderr.strip().splitlines()) == 1
        assert shown.stderr.startswith("error: ") and "gitsessions doctor" in shown.stderr
    good = damaged.good[0]
    assert run_gitsessions("info", good[:6], "--json").returncode == 0  # a prefix still resolves
    store = damaged.home / "store.git"
    loose = store / "refs" / "heads" / "sessions" / good
    packed = (store / "packed-refs").read_bytes() if not loose.exists() else b""
    renamed = run_gitsessions("rename", good[:6], "still writable")
    assert "Traceback" not in renamed.stderr
    if not packed:
        assert renamed.returncode == 0, renamed.stderr
        assert json.loads(run_gitsessions("info", good, "--json").stdout)["title"] == (
            "still writable"
        )
    else:  # no ref moves while packed-refs holds a damaged line: nothing changes
        assert renamed.returncode == 1 and renamed.stderr.startswith("error: ")
        assert len(renamed.stderr.strip().splitlines()) == 1
        assert (store / "packed-refs").read_bytes() == packed and not loose.exists()


@pytest.mark.parametrize("damaged", ["nonsense", "blob", "packed"], indirect=True)
def test_doctor_names_the_damaged_ref_and_only_it(damaged: Damaged) -> None:
    """(A ref naming a missing object was already reported as a broken session.)"""
    done = run_gitsessions("doctor", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    about = [f for f in report["findings"] if damaged.victim in f["subject"] + f["detail"]]
    assert about, report
    for finding in report["findings"]:
        assert not any(sid in finding["subject"] + finding["detail"] for sid in damaged.good)


@pytest.mark.parametrize("kind", ["nonsense", "missing", "blob"])
def test_continue_takes_the_newest_good_session(server, sessions, home, undo, kind) -> None:
    ids, workspace = sessions
    rows = json.loads(run_gitsessions("list", "--json").stdout)
    newest = max(rows, key=lambda r: (r["active_at"], r["id"]))["id"]
    undo.append(_damage(home, newest, kind))  # the one `--continue` would have taken
    good = [r for r in rows if r["id"] != newest]
    expected = max(good, key=lambda r: (r["active_at"], r["id"]))["id"]
    server.reply(content="continued")
    done = run_gitsessions(*exec_args(server, workspace), "--continue", "go on", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["session"] == expected
    _warned_once(done.stderr, newest)
    shown = json.loads(run_gitsessions("show", expected, "--json").stdout)
    assert shown[-1]["content"] == "continued"
    assert len(ids) == 3 and expected in ids


def test_the_picker_offers_the_others_and_names_the_damaged_ref(
    server, sessions, home, undo
) -> None:
    ids, workspace = sessions
    victim = ids[2]
    undo.append(_damage(home, victim, "nonsense"))
    env = dict(os.environ, TERM="xterm", COLUMNS="200", LINES="50")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--base-url", server.base_url, "--model", "fake-model",
         "--workspace", str(workspace), "--resume"],
        env=env, encoding="utf-8", timeout=30, cwd=str(REPO), dimensions=(50, 200),
    )  # fmt: skip
    child.expect_exact("Esc cancels")
    shown = child.before
    child.send("\x1b")
    child.expect(pexpect.EOF)
    child.wait()
    for sid in ids[:2]:
        assert sid[:8] in shown
    assert "Traceback" not in shown
    assert shown.count(victim[:8]) == 1
    assert f"session ref refs/heads/sessions/{victim} is damaged" in shown


@pytest.mark.parametrize("damaged", ["blob"], indirect=True)
def test_gc_purges_nothing_while_a_ref_names_a_blob(damaged: Damaged) -> None:
    """A walk that met the blob as a session's head kept nothing of it: `gc` purged the
    blob and left the ref naming nothing."""
    store = damaged.home / "store.git"
    blob = (store / "refs" / "heads" / "sessions" / damaged.victim).read_text().strip()
    done = run_gitsessions("gc")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert damaged.victim[:8] in done.stderr and "nothing was packed or purged" in done.stderr
    assert git(store, "cat-file", "-t", blob).stdout.strip() == "blob"
    assert set(damaged.good) <= {
        r["id"] for r in json.loads(run_gitsessions("list", "--json").stdout)
    }


@pytest.mark.parametrize("damaged", ["blob"], indirect=True)
def test_background_packing_keeps_the_blob_a_damaged_ref_names(damaged: Damaged) -> None:
    """The background step (once `pack_loose` and `consolidate`, now `merge_packs`)
    removed every loose object its walk had met, packed or not: the blob a ref named,
    met where the walk broke off, was deleted unpacked."""
    from gitsessions.store import maintenance
    from gitsessions.store.sessions import SessionStore

    store_path = damaged.home / "store.git"
    blob = (store_path / "refs" / "heads" / "sessions" / damaged.victim).read_text().strip()
    store = SessionStore(damaged.home, background_maintenance=False)
    try:
        assert maintenance.merge_packs(store.git)[1] > 0  # loose objects packed
        assert git(store_path, "cat-file", "-t", blob).stdout.strip() == "blob"
        maintenance.merge_packs(store.git)
        assert git(store_path, "cat-file", "-t", blob).stdout.strip() == "blob"
    finally:
        store.close()


def test_a_packed_refs_line_naming_no_ref_hides_nothing(sessions, home, undo) -> None:
    """Any session may have been on a line that names no ref: every readable one is
    listed and the line named; a lookup it may have answered fails in one line."""
    ids, _workspace = sessions
    store = home / "store.git"
    git(store, "pack-refs", "--all")
    packed = store / "packed-refs"
    undo.append((packed, packed.read_bytes()))
    packed.write_bytes(packed.read_bytes() + b"garbage\n")
    listed = run_gitsessions("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {row["id"] for row in json.loads(listed.stdout)} == set(ids)
    assert listed.stderr.startswith("warning: store.git/packed-refs line ")
    assert len(listed.stderr.splitlines()) == 1 and "gitsessions doctor" in listed.stderr
    assert run_gitsessions("info", ids[0][:6]).returncode == 0
    absent = next(
        p for p in ("aaaa", "bbbb", "cccc", "dddd") if not any(i.startswith(p) for i in ids)
    )
    missing = run_gitsessions("show", absent)
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert "packed-refs line" in missing.stderr and "gitsessions doctor" in missing.stderr


@pytest.mark.parametrize("damaged", ["nonsense"], indirect=True)
def test_gc_and_delete_purge_nothing_while_a_ref_file_holds_nonsense(
    damaged: Damaged, undo: list[tuple[Path, bytes]]
) -> None:
    """What the file named is unknown: `gc` purged the session's commits (no ref it
    could read reached them), so `doctor --repair` could no longer bring it back."""
    victim = damaged.victim
    store = damaged.home / "store.git"
    head = undo[0][1].strip().decode()  # what the damaged file held
    history = git(store, "rev-list", head).stdout.split()
    assert len(history) >= 2
    done = run_gitsessions("gc")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert victim[:8] in done.stderr and "nothing was packed or purged" in done.stderr
    deleted = run_gitsessions("delete", damaged.good[0], "--yes")  # another session
    assert deleted.returncode == 0, deleted.stderr
    for sha in history:
        assert git(store, "cat-file", "-t", sha, check=False).stdout.strip() == "commit"
    repaired = run_gitsessions("doctor", "--repair", "--json")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert git(store, "rev-parse", f"refs/heads/sessions/{victim}").stdout.strip() == head
    assert json.loads(run_gitsessions("info", victim, "--json").stdout)["messages"] == 3
