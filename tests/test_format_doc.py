"""docs/format.md's worked example is what the code writes: the golden session's files
and commit message, block by block."""

import re

from tests.conftest import REPO
from tests.test_golden import COMMIT, SEGMENT, SESSION_JSON

DOC = (REPO / "docs" / "format.md").read_text(encoding="utf-8")


def block(tag: str) -> str:
    match = re.search(rf"```\w+ {re.escape(tag)}\n(.*?)```", DOC, re.DOTALL)
    assert match, f"docs/format.md has no block tagged {tag}"
    return match.group(1)


def test_the_worked_example_is_the_golden_session():
    assert block("session.json") == SESSION_JSON
    assert block("transcript/000000.jsonl") == SEGMENT
    assert block("commit") == (
        "import: Golden\n\nSession: 0123456789abcdef0123456789abcdef\nEvent: import\n"
    )
    assert len(COMMIT) == 40


def test_every_trailer_and_event_the_code_writes_is_documented():
    source = "\n".join(p.read_text() for p in (REPO / "gitsessions").rglob("*.py"))
    trailers = set(re.findall(r'"([A-Z][a-z]+(?:-[A-Z][a-z]+)+)":', source)) | {"Turn", "Step"}
    for name in trailers:
        assert f"`{name}`" in DOC, f"trailer {name} is not in docs/format.md"
    for event in ("create", "turn", "compact", "fork", "rename", "archive", "pin", "import"):
        assert f"`{event}`" in DOC
