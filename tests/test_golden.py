"""Golden: what a known session encodes to in the store. A change here is a format change:
bump the format (`gitsessions.header/2`) and read the old one instead of editing the
expectation. docs/format.md shows the same bytes (`tests/test_format_doc.py`)."""

import io
import json
import re

from gitsessions.services.sessions.exchange import import_export, load_export
from tests.conftest import REPO, git

FORMAT_DOC = (REPO / "docs" / "format.md").read_text(encoding="utf-8")


def block(tag: str) -> str:
    """The fenced block of docs/format.md tagged `tag` (```json session.json)."""
    match = re.search(rf"```\w+ {re.escape(tag)}\n(.*?)```", FORMAT_DOC, re.DOTALL)
    assert match, f"docs/format.md has no block tagged {tag}"
    return match.group(1)


DOC = json.loads(block("export"))
SID = DOC["id"]
IMPORTED_AT = "2026-12-01T09:00:00Z"  # the commit is dated at the import, not updated_at


def import_doc(store) -> None:
    """The export above imported as `gitsessions import` reads a file."""
    text = json.dumps(DOC)
    import_export(store, load_export(lambda: io.StringIO(text)), fresh_id=False, now=IMPORTED_AT)


FILES = ("session.json", "context.json", "context-inline.json", "transcript/0000000000.jsonl")


def test_a_known_session_encodes_to_the_bytes_docs_format_shows(store, home):
    import_doc(store)
    branch = f"refs/heads/sessions/{SID}"
    repo = home / "store.git"
    for name in FILES:
        assert git(repo, "show", f"{branch}:{name}").stdout == block(name), name
    assert json.loads(git(repo, "show", f"{branch}:pins.json").stdout) == {
        "format": "gitsessions.pins/2",
        "pins": [],
    }
    message = git(repo, "log", "-1", "--format=%B", branch).stdout
    assert message == block("commit") + "\n"
    # identical content, identical commit: the author, dates and encoding are fixed
    stamp = git(repo, "log", "-1", "--format=%an <%ae> %at %ct", branch).stdout.strip()
    assert stamp == "gitsessions <gitsessions@localhost> 1796115600 1796115600"
    assert git(repo, "rev-parse", branch).stdout.strip() == block("commit id").strip()


def test_the_golden_session_reads_back_as_it_was_written(store):
    import_doc(store)
    head = store.head(SID)
    assert store.read(head, "context") == DOC["messages"]
    assert store.records(head) == DOC["transcript"]
    assert head.header["active_at"] == DOC["active_at"]
