"""The one write path (`services.sessions.writer`): no commit for a change that changes nothing,
a retry on a fresh head when another writer won, one audit line per operation, and no
other module that commits on its own."""

import ast
import json
from pathlib import Path

from gitsessions.services.sessions import manage, writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.sessions import Change, touch
from tests.conftest import REPO, git


def _commits(home: Path, sid: str) -> int:
    out = git(home / "store.git", "rev-list", "--count", f"refs/heads/sessions/{sid}").stdout
    return int(out)


def _audit(home: Path) -> list[tuple[str, str]]:
    lines = (home / "audit.jsonl").read_text().splitlines()
    return [(a["operation"], a["outcome"]) for a in map(json.loads, lines)]


def test_archive_twice_and_the_same_title_make_no_commit(cli, home, make_session):
    head = make_session(turns=1, title="same")
    before = _commits(home, head.id)
    assert "archived" in cli("archive", head.id).stderr
    again = cli("archive", head.id)  # exit 0
    assert "already archived" in again.stderr
    assert "already titled" in cli("rename", head.id, "same").stderr
    assert "not archived" not in cli("unarchive", head.id).stderr
    assert "not archived" in cli("unarchive", head.id).stderr
    assert _commits(home, head.id) == before + 2  # one archive, one unarchive
    assert ("archive", "unchanged") in _audit(home) and ("rename", "unchanged") in _audit(home)


def test_a_lost_race_is_retried_on_the_fresh_head(store, home, make_session):
    head = make_session(turns=0)
    calls = []

    def edit(current):
        calls.append(current.commit)
        if len(calls) == 1:  # another writer commits between our read and our commit
            store.commit(
                current,
                Change(append=[{"role": "user", "content": "from the other writer"}]),
                event="turn",
                subject="turn",
            )
        return Edit(Change(header=touch(current.header, title="mine")), "rename", "rename: mine")

    written = writer.update(store, head.id, edit, operation="rename")
    assert written.committed and len(calls) == 2 and calls[0] != calls[1]
    final = store.head(head.id)
    assert final.header["title"] == "mine"
    assert store.transcript(final)[-1]["content"] == "from the other writer"
    assert _audit(home)[-1] == ("rename", "ok")


def test_pin_unpin_are_audited_once_each(store, home, make_session):
    head = make_session(turns=0)
    _written, pins = manage.pin(store, head.id, "keep it")
    assert pins == ["keep it"]
    assert manage.unpin(store, head.id, 1) == "keep it"
    assert _audit(home)[-2:] == [("pin", "ok"), ("unpin", "ok")]


def test_nothing_else_commits_on_its_own():
    """Only the store and the writer call the store's commit and create."""
    allowed = {"services/sessions/writer.py"}
    package = REPO / "gitsessions"
    offenders = []
    for path in package.rglob("*.py"):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("store/") or relative in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("commit", "create")
                and isinstance(node.func.value, ast.Name | ast.Attribute)
                and (
                    getattr(node.func.value, "id", "") == "store"
                    or getattr(node.func.value, "attr", "") == "store"
                )
            ):
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, offenders
