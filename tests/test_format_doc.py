"""docs/format.md's worked example is what the code writes: `tests/test_golden.py`
imports the doc's export block and compares what the store writes with the doc's blocks,
byte for byte. Here: every block it names exists, and every trailer and event the code
writes is documented."""

import re

from tests.conftest import REPO
from tests.test_golden import FILES, block

DOC = (REPO / "docs" / "format.md").read_text(encoding="utf-8")


def test_the_worked_example_has_every_block_the_golden_test_checks():
    for name in (*FILES, "export", "commit", "commit id"):
        assert block(name).strip(), name
    assert re.fullmatch(r"[0-9a-f]{40}\n", block("commit id"))


def test_every_trailer_and_event_the_code_writes_is_documented():
    web = REPO / "gitsessions" / "protocols" / "web"  # HTTP headers there, not trailers
    files = [p for p in (REPO / "gitsessions").rglob("*.py") if web not in p.parents]
    source = "\n".join(p.read_text() for p in files)
    trailers = set(re.findall(r'"([A-Z][a-z]+(?:-[A-Z][a-z]+)+)":', source)) | {"Turn", "Step"}
    for name in trailers:
        assert f"`{name}`" in DOC, f"trailer {name} is not in docs/format.md"
    for event in ("create", "turn", "compact", "fork", "rename", "archive", "pin", "import"):
        assert f"`{event}`" in DOC
