"""A store that explains itself to stock git: `main` holds a README, step commits say
what they did, `log` shows turns, and an import is dated when it happened."""

import json
import subprocess
import time
from pathlib import Path

from gitsessions.services.doctor import doctor
from gitsessions.services.manage import delete, gc
from gitsessions.store.mainbranch import MAIN_REF
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import git
from tests.test_exchange import SID, document, write


def notices(repo: Path) -> str:
    result = git(repo, "fsck", "--strict", "--no-progress", check=False)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_a_new_store_has_main_with_a_readme(store, home):
    repo = home / "store.git"
    assert git(repo, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main"
    log = git(repo, "log", "--format=%s").stdout.splitlines()
    assert log == ["gitsessions store: see README.md"]
    readme = git(repo, "show", "main:README.md").stdout
    assert "refs/heads/sessions/<id>" in readme and "docs/format.md" in readme
    assert "do not\ncommit here" in readme
    assert "notice" not in notices(repo)


def test_a_clone_checks_out_the_readme(make_session, home, tmp_path):
    make_session(turns=1)
    clone = tmp_path / "clone"
    result = subprocess.run(
        ["git", "clone", "-q", str(home / "store.git"), str(clone)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "warning" not in result.stderr.lower(), result.stderr
    assert sorted(p.name for p in clone.iterdir()) == [".git", "README.md"]
    assert "gitsessions" in (clone / "README.md").read_text()


def test_an_old_store_gets_main_at_its_first_write(home):
    repo = home / "store.git"
    SessionStore(home).close()
    (repo / MAIN_REF.decode()).unlink()  # a store made before `main` existed
    assert "unborn" in notices(repo)
    old = SessionStore(home)
    try:
        assert old.git.ref(MAIN_REF) is None  # opening writes nothing
        header = new_header(new_id(), now_iso(), title="t")
        old.create(header, Change(context=[], append=[]))
    finally:
        old.close()
    assert git(repo, "rev-parse", "--verify", "-q", "main").returncode == 0
    assert "notice" not in notices(repo)


def test_main_survives_gc_and_delete_and_is_no_session(store, home, make_session):
    keep, gone = make_session(turns=1), make_session(turns=1)
    main = store.git.ref(MAIN_REF)
    delete(store, gone.id)
    gc(store)
    repo = home / "store.git"
    assert git(repo, "rev-parse", "main").stdout.strip() == main.decode()
    assert git(repo, "cat-file", "-e", "main:README.md").returncode == 0
    assert store.git.ref(MAIN_REF) == main  # packed now, still found
    report = doctor(store)
    assert report.healthy and report.findings == [], report.as_dict()
    assert report.sessions == 1 and store.ids() == {keep.id: keep.commit}
    assert git(repo, "log", "-1", "--format=%s", f"sessions/{keep.id}").stdout.strip()


def test_an_import_is_dated_at_the_import(cli, tmp_path, home):
    before = int(time.time())
    cli("import", str(write(tmp_path, document())))
    repo = home / "store.git"
    stamp = git(repo, "log", "-1", "--format=%at %ct", f"sessions/{SID}").stdout.split()
    assert int(stamp[0]) == int(stamp[1]) >= before  # not 2026-11-30T10:05:00Z
    header = json.loads(git(repo, "show", f"sessions/{SID}:session.json").stdout)
    assert header["created_at"] == "2026-11-30T10:00:00Z"
    assert header["updated_at"] == "2026-11-30T10:05:00Z"
