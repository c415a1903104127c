"""Where the tests find the real clients and the real model server that
`.ci/install-test-tools` installs (pinned, into .cache/test-tools/, gitignored), and the
skip that names that command when they are not there."""

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

INSTALL = "bash .ci/install-test-tools"
TOOLS = REPO / ".cache" / "test-tools"
NODE_MODULES = TOOLS / "npm" / "node_modules"
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
ACP_SCHEMA = NODE_MODULES / "@agentclientprotocol" / "sdk" / "schema" / "v1" / "schema.json"
NODE_LLAMA_CPP = NODE_MODULES / "node-llama-cpp" / "dist" / "index.js"
MODEL = TOOLS / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA_SERVER = REPO / "tests" / "llama_server.mjs"


def need(*paths: Path) -> None:
    """Skip unless node and every one of `paths` are installed."""
    if shutil.which("node") is None:
        pytest.skip(f"needs Node.js 20 or newer (apt-get install nodejs npm), then `{INSTALL}`")
    for path in paths:
        if not path.exists():
            pytest.skip(f"{path.relative_to(REPO)} is not installed: run `{INSTALL}`")


def node() -> str:
    found = shutil.which("node")
    assert found is not None
    return found


def acp_schema() -> dict[str, Any]:
    need(ACP_SCHEMA)
    return json.loads(ACP_SCHEMA.read_text())
