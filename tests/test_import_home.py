"""Issue 31, item 4: `import --from` into a home that cannot be written says so once, in
the words of a write that failed (where, why, what to do), exits 1 and changes nothing;
never a "cannot read" line per source file."""

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.import_fixtures import ClaudeFile
from tests.test_chat import read_only

SESSIONS = [f"11111111-2222-4333-8444-55555555555{n}" for n in range(3)]


def sources(tmp_path: Path) -> list[Path]:
    paths = []
    for n, sid in enumerate(SESSIONS):
        f = ClaudeFile(tmp_path / "claude" / f"{sid}.jsonl", session=sid)
        f.prompt(f"hello {n}")
        f.reply(f"msg_{n}", [{"type": "text", "text": "hi"}], stop="end_turn")
        paths.append(f.write())
    return paths


def tree(home: Path) -> dict[str, str]:
    """Every file under the home with a digest of its bytes, every folder by name."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(home.rglob("*"))
    }


def refs(home: Path) -> str:
    return git(home / "store.git", "for-each-ref", "--format=%(objectname) %(refname)").stdout


def said_once(result: Any, where: str) -> str:
    """The one line that names the cause: an error naming `where`, how to fix it, and
    no line per file."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    line = errors[0]
    assert f"cannot write in {where}" in line and "then import again" in line, line
    assert "cannot read" not in result.stderr and "warning" not in result.stderr
    return line


def test_a_home_whose_lease_folder_is_a_file_is_said_once(cli, home, tmp_path):
    """A failure every file shares (here a file where the home's lease folder goes: no
    write there succeeds, even as root) is one error line, not a warning per file."""
    paths = sources(tmp_path)
    cli("import", "--from", "claude-code", str(paths[0]))
    shutil.rmtree(home / "leases")
    (home / "leases").write_text("not a folder\n")
    before, heads = tree(home), refs(home)
    result = cli("import", "--from", "claude-code", *map(str, paths), code=1)
    line = said_once(result, str(home / "leases"))
    assert "(not a folder)" in line and "nothing was imported" in line
    assert result.stdout == ""
    assert tree(home) == before and refs(home) == heads


def test_a_read_only_home_is_said_once(cli, home, tmp_path):
    paths = sources(tmp_path)
    cli("import", "--from", "claude-code", str(paths[0]))
    before, heads = tree(home), refs(home)
    with read_only(home):
        result = cli("import", "--from", "claude-code", *map(str, paths), code=1)
        assert result.stdout == ""
    said_once(result, str(home))
    assert tree(home) == before and refs(home) == heads


def test_a_store_that_fails_its_first_write_stops_the_import_once(cli, home, tmp_path):
    """The lease folder can be written but the store's objects cannot: the first write
    fails, the files left are not tried, and the failure is said once, after the rows
    of what was done."""
    paths = sources(tmp_path)
    cli("import", "--from", "claude-code", str(paths[0]))
    heads = refs(home)
    with read_only(home / "store.git" / "objects"):
        result = cli("import", "--from", "claude-code", *map(str, paths), code=1)
    line = said_once(result, str(home / "store.git" / "objects"))
    assert "the files left were not imported" in line
    assert [r.split("\t")[1] for r in result.stdout.splitlines()] == ["unchanged"]
    assert "0 sessions imported, 1 unchanged; stopped" in result.stderr
    assert refs(home) == heads
    again = cli("import", "--from", "claude-code", *map(str, paths))  # fixed: all of it
    assert [r.split("\t")[1] for r in again.stdout.splitlines()] == [
        "unchanged", "created", "created",
    ]  # fmt: skip


def test_a_hook_run_into_a_home_that_cannot_be_written_says_why_in_one_line(cli, home, tmp_path):
    """The agent's hook never fails the agent: exit 0, and the one line says the home
    could not be written (not an errno and a lock file's path)."""
    path = sources(tmp_path)[0]
    cli("import", "--from", "claude-code", str(path))
    shutil.rmtree(home / "leases")
    (home / "leases").write_text("not a folder\n")
    event = {"session_id": SESSIONS[0], "transcript_path": str(path), "hook_event_name": "Stop"}
    result = cli("import", "--from", "claude-code", "--hook", input=json.dumps(event))
    assert result.stderr.splitlines() == [
        f"gitsessions: import hook: cannot write in {home / 'leases'} (not a folder): this"
        " turn is not imported yet; free space or fix its permissions (or set"
        " GITSESSIONS_HOME), then the next hook run imports it"
    ]
