"""What the tool tests share: a minimal child environment and a one-line way to dispatch
a call (the `workspace` and `tools` fixtures are in conftest.py)."""

import json
from typing import Any

from gitsessions.services.tools import ToolOutcome, ToolRegistry

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


def call(registry: ToolRegistry, name: str, **arguments: Any) -> ToolOutcome:
    return registry.dispatch(
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
    )
