"""Golden: what a known session encodes to in the store. A change here is a format change:
bump `gitsessions.header/1` and write a migration instead of editing the expectation."""

import json

from gitsessions.services.exchange import import_session, parse_export
from tests.conftest import git

DOC = {
    "format": "gitsessions.session/1",
    "id": "0123456789abcdef0123456789abcdef",
    "title": "Golden",
    "summary": "pinned",
    "created_at": "2026-11-30T10:00:00Z",
    "updated_at": "2026-11-30T10:05:00Z",
    "workspace": {"path": "/w", "repo_root": None, "branch": None, "head": None},
    "model": "m",
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "é"}],
    "transcript": [{"role": "system", "content": "s"}, {"role": "user", "content": "é"}],
}

SESSION_JSON = """{
  "archived": false,
  "counts": {
    "compactions": 0,
    "context_messages": 2,
    "messages": 2
  },
  "created_at": "2026-11-30T10:00:00Z",
  "fork_point": null,
  "format": "gitsessions.header/1",
  "id": "0123456789abcdef0123456789abcdef",
  "model": "m",
  "parent_id": null,
  "summary": "pinned",
  "title": "Golden",
  "updated_at": "2026-11-30T10:05:00Z",
  "workspace": {
    "branch": null,
    "head": null,
    "path": "/w",
    "repo_root": null
  }
}
"""
COMMIT = "3730419149764ad4e709dfaa35472626939749db"
SEGMENT = '{"content":"s","role":"system"}\n{"content":"é","role":"user"}\n'


IMPORTED_AT = "2026-12-01T09:00:00Z"  # the commit is dated at the import, not updated_at


def test_a_known_session_encodes_to_known_bytes(store, home):
    import_session(store, parse_export(json.dumps(DOC).encode()), fresh_id=False, now=IMPORTED_AT)
    branch = f"refs/heads/sessions/{DOC['id']}"
    repo = home / "store.git"
    assert git(repo, "show", f"{branch}:session.json").stdout == SESSION_JSON
    assert git(repo, "show", f"{branch}:transcript/000000.jsonl").stdout == SEGMENT
    assert git(repo, "show", f"{branch}:pins.json").stdout == "[]\n"
    message = git(repo, "log", "-1", "--format=%B", branch).stdout
    assert message == f"import: Golden\n\nSession: {DOC['id']}\nEvent: import\n\n"
    # identical content, identical commit: the author, dates and encoding are fixed
    stamp = git(repo, "log", "-1", "--format=%an <%ae> %at %ct", branch).stdout.strip()
    assert stamp == "gitsessions <gitsessions@localhost> 1796115600 1796115600"
    assert git(repo, "rev-parse", branch).stdout.strip() == COMMIT
