"""The MCP server's tool schemas are the SDK's (issue 43, item 3): derived by its
high-level server from the typed functions of protocols/mcp_server/work.py, not written
by hand; the input schema a client is shown is the one its arguments are checked
against, bound for bound, in one line. In process: the server built over a real store,
spoken to by the SDK's own client."""

import asyncio
import inspect
import os
import subprocess
from pathlib import Path
from typing import Any

from mcp import Client

from gitsessions.protocols.mcp_server import work
from gitsessions.protocols.mcp_server.server import build


def offered(store: Any, workspace: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the typed functions, the tools as `tools/list` shows them), writes included."""
    env = dict(os.environ)
    server = build(store, env, workspace, lambda archived, where: [], False, True)

    async def listed() -> list[Any]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    typed = work.tools(store, env, workspace, lambda archived, where: [], False, True)
    return typed, {tool.name: tool for tool in asyncio.run(listed())}


def calls(store: Any, workspace: Path, made: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    server = build(store, dict(os.environ), workspace, lambda archived, where: [], False, True)

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in made]

    return asyncio.run(run())


def test_each_schema_is_derived_from_its_typed_function(store, tmp_path):
    workspace = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    typed, listed = offered(store, workspace)
    assert sorted(typed) == sorted(listed) and len(listed) == 11
    for name, tool in listed.items():
        parameters = inspect.signature(typed[name]).parameters
        schema = tool.input_schema
        assert list(schema["properties"]) == list(parameters), name
        needed = [p for p, value in parameters.items() if value.default is inspect.Parameter.empty]
        assert schema.get("required", []) == needed, name
        for p, value in parameters.items():
            if value.default is not inspect.Parameter.empty:
                assert schema["properties"][p]["default"] == value.default, (name, p)
        assert schema["additionalProperties"] is False, name
        answer = inspect.signature(typed[name]).return_annotation
        keys = getattr(answer, "__required_keys__", None)
        if keys is not None:  # a TypedDict: its required keys are the schema's
            assert set(tool.output_schema["required"]) == set(keys), name
        assert tool.output_schema["type"] == "object", name


def test_every_bound_the_schema_shows_is_the_one_a_call_meets(store, tmp_path):
    """Each integer's minimum and maximum and each string's maxLength, as listed: one
    past it is refused in one line naming the tool, the argument and the bound."""
    workspace = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    _typed, listed = offered(store, workspace)
    made, said = [], []
    for name, tool in listed.items():
        base = {p: "x" for p in tool.input_schema.get("required", [])}
        base |= {p: 1 for p in ("line",) if p in base}
        for p, part in tool.input_schema["properties"].items():
            flat = part.get("anyOf", [part])[0]
            if "maximum" in flat:
                made.append((name, {**base, p: flat["maximum"] + 1}))
                said.append(f"{name}: {p} must be an integer from {flat['minimum']} to "
                            f"{flat['maximum']} (got {flat['maximum'] + 1})")  # fmt: skip
            if "minimum" in flat:
                made.append((name, {**base, p: flat["minimum"] - 1}))
                said.append(f"{name}: {p} must be an integer ")
            if "maxLength" in flat:
                made.append((name, {**base, p: "y" * (flat["maxLength"] + 1)}))
                said.append(f"{name}: {p} must be at most {flat['maxLength']:,} characters "
                            f"(got {flat['maxLength'] + 1:,})")  # fmt: skip
    assert len(made) > 20
    for (_name, arguments), result, line in zip(made, calls(store, workspace, made), said,
                                               strict=True):  # fmt: skip
        text = result.content[0].text
        assert result.is_error and text.startswith(line) and "\n" not in text, (arguments, text)
