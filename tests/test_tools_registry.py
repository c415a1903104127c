"""The dispatcher: approval, model mistakes as error results (never exceptions), extra
handlers registered by the agent layer, output truncation, digests and the schemas."""

import ast
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import gitsessions.services.tools as tools_package
from gitsessions.services.tools import (
    MUTATING_TOOLS,
    SESSION_TOOLS,
    ToolError,
    ToolOutcome,
    ToolRegistry,
    create_registry,
)
from gitsessions.values.canonical import dumps_line
from tests.tool_helpers import ENV


def raw_call(registry: ToolRegistry, name: str, arguments: Any) -> ToolOutcome:
    return registry.dispatch(
        {"id": "call_9", "type": "function", "function": {"name": name, "arguments": arguments}}
    )


def call(registry: ToolRegistry, name: str, **arguments: Any) -> ToolOutcome:
    return raw_call(registry, name, json.dumps(arguments))


# approval


def test_denied_write_does_not_run(workspace: Path) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def deny(name: str, arguments: Mapping[str, Any]) -> bool:
        asked.append((name, dict(arguments)))
        return False

    registry = create_registry(workspace, ENV, approve=deny)
    outcome = call(registry, "write_file", path="a.txt", content="x")
    assert not (workspace / "a.txt").exists()
    assert asked == [("write_file", {"path": "a.txt", "content": "x"})]
    assert not outcome.ok
    assert outcome.denied
    assert outcome.content.startswith("error: denied by the user: this write_file call")


def test_denied_shell_and_edit_do_not_run(workspace: Path) -> None:
    (workspace / "a.txt").write_text("old\n")
    registry = create_registry(workspace, ENV)  # default approver denies
    shell = call(registry, "run_shell", command="touch marker")
    edit = call(registry, "edit_file", path="a.txt", old="old", new="new")
    assert shell.denied and edit.denied
    assert shell.content.startswith("error: not run: it needs approval, and no one is here")
    assert "by the user" not in shell.content
    assert shell.exit_code is None
    assert not (workspace / "marker").exists()
    assert (workspace / "a.txt").read_text() == "old\n"


def test_approved_call_runs(workspace: Path) -> None:
    registry = create_registry(workspace, ENV, approve=lambda name, arguments: True)
    outcome = call(registry, "write_file", path="a.txt", content="x")
    assert outcome.ok and not outcome.denied
    assert (workspace / "a.txt").read_text() == "x"


def test_read_only_tools_are_not_asked_about(workspace: Path) -> None:
    def explode(name: str, arguments: Mapping[str, Any]) -> bool:
        raise AssertionError(f"asked about {name}")

    (workspace / "a.txt").write_text("x\n")
    registry = create_registry(workspace, ENV, approve=explode)
    assert call(registry, "read_file", path="a.txt").ok
    assert call(registry, "list_files").ok
    assert call(registry, "search_files", pattern="x").ok


def test_mutating_tools_are_marked(tools: ToolRegistry) -> None:
    marked = {name for name in tools.names if tools.needs_approval(name)}
    assert marked == MUTATING_TOOLS == {"write_file", "edit_file", "run_shell"}


def test_invalid_calls_are_not_sent_for_approval(workspace: Path) -> None:
    asked: list[str] = []
    registry = create_registry(workspace, ENV, approve=lambda name, a: bool(asked.append(name)))
    outcome = call(registry, "write_file", path="a.txt")
    assert not outcome.ok and not outcome.denied
    assert asked == []


# model mistakes become error results


def test_malformed_json_is_an_error_result(tools: ToolRegistry) -> None:
    outcome = raw_call(tools, "read_file", '{"path": "a.txt"')
    assert not outcome.ok
    assert outcome.content.startswith("error: arguments are not valid JSON")
    assert outcome.tool == "read_file"
    assert outcome.call_id == "call_9"


def test_integer_too_long_for_python_is_an_error_result(tools: ToolRegistry) -> None:
    outcome = raw_call(tools, "read_file", '{"path": "a.txt", "limit": ' + "9" * 5000 + "}")
    assert not outcome.ok
    assert outcome.content.startswith("error: arguments are not usable JSON")
    assert "4300 digits" in outcome.content


def test_arguments_that_are_not_an_object(tools: ToolRegistry) -> None:
    outcome = raw_call(tools, "read_file", '["a.txt"]')
    assert not outcome.ok
    assert "must be a JSON object, got array" in outcome.content


def test_unknown_tool_lists_the_available_ones(tools: ToolRegistry) -> None:
    outcome = call(tools, "foo")
    assert not outcome.ok
    assert outcome.content.startswith("error: unknown tool 'foo'; available: read_file,")
    assert "run_shell" in outcome.content


def test_missing_required_parameter(tools: ToolRegistry) -> None:
    outcome = call(tools, "read_file")
    assert not outcome.ok
    assert "missing required parameter 'path'" in outcome.content
    assert "expected read_file(path: string, offset: integer|null" in outcome.content


def test_extra_parameter(tools: ToolRegistry) -> None:
    outcome = call(tools, "list_files", path=".", recursive=True)
    assert not outcome.ok
    assert "unexpected parameter 'recursive'" in outcome.content


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"path": "a.txt", "limit": "10"}, "'limit' must be integer or null, got string"),
        ({"path": "a.txt", "offset": True}, "'offset' must be integer or null, got boolean"),
        ({"path": "a.txt", "offset": 1.5}, "'offset' must be integer or null, got number"),
        ({"path": 7}, "'path' must be string, got integer"),
        ({"path": "a.txt", "limit": 0}, "'limit' must be at least 1"),
    ],
)
def test_wrong_types_are_error_results(
    workspace: Path, tools: ToolRegistry, arguments: dict[str, Any], expected: str
) -> None:
    (workspace / "a.txt").write_text("x\n")
    outcome = call(tools, "read_file", **arguments)
    assert not outcome.ok
    assert expected in outcome.content


def test_an_integral_number_is_an_integer_as_json_schema_has_it(
    workspace: Path, tools: ToolRegistry
) -> None:
    """Issue 43, item 4: one check of JSON shapes (values/shapes.py) for the tools and
    the MCP server; JSON Schema's integer is any number without a fraction, so a model
    sending `2.0` reads from line 2 (it was refused as a number)."""
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    outcome = call(tools, "read_file", path="a.txt", offset=2.0, limit=1.0)
    assert outcome.ok, outcome.content
    assert "two" in outcome.content and "one" not in outcome.content
    assert "three" not in outcome.content


def test_empty_arguments_mean_no_arguments(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("")
    outcome = raw_call(tools, "list_files", "")
    assert outcome.ok
    assert outcome.content == "a.txt\n"


def test_os_errors_become_error_results(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "file").write_text("")
    outcome = call(tools, "write_file", path="file/inside.txt", content="x")
    assert not outcome.ok
    assert outcome.content.startswith("error: ")


# extra handlers (the agent layer's session tools)


def test_registered_session_tool_gets_all_declared_keys(tools: ToolRegistry) -> None:
    received: list[dict[str, Any]] = []

    def read_session(arguments: dict[str, Any]) -> str:
        received.append(arguments)
        return "transcript text"

    tools.register("read_session", SESSION_TOOLS["read_session"], read_session)
    outcome = call(tools, "read_session", query="needle")
    assert outcome.ok
    assert outcome.content == "transcript text"
    assert received == [{"session": None, "start": None, "end": None, "query": "needle"}]
    assert not tools.needs_approval("read_session")
    assert "read_session" in [d["function"]["name"] for d in tools.definitions()]


def test_update_plan_schema_checks_items(tools: ToolRegistry) -> None:
    plans: list[Any] = []
    tools.register("update_plan", SESSION_TOOLS["update_plan"], lambda a: str(plans.append(a)))
    bad = call(tools, "update_plan", items=[{"step": "x", "status": "doing"}])
    good = call(tools, "update_plan", items=[{"step": "x", "status": "in_progress"}])
    assert not bad.ok and "'items[0].status' must be one of" in bad.content
    assert good.ok
    assert plans == [{"items": [{"step": "x", "status": "in_progress"}]}]


def test_handler_errors_and_bugs(tools: ToolRegistry) -> None:
    def expected_failure(arguments: dict[str, Any]) -> str:
        raise ToolError("no such session 'abcd'")

    def bug(arguments: dict[str, Any]) -> str:
        raise KeyError("oops")

    tools.register("search_sessions", SESSION_TOOLS["search_sessions"], expected_failure)
    tools.register("update_plan", SESSION_TOOLS["update_plan"], bug)
    outcome = call(tools, "search_sessions", query="q")
    assert not outcome.ok
    assert outcome.content == "error: no such session 'abcd'"
    with pytest.raises(KeyError):
        call(tools, "update_plan", items=[])


def test_register_rejects_bad_schemas(tools: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="schema names"):
        tools.register("other", SESSION_TOOLS["read_session"], lambda a: "")
    with pytest.raises(ValueError, match="already registered"):
        tools.register("read_file", tools.definitions()[0], lambda a: "")


# output, digest, message


def test_long_handler_output_is_truncated_with_the_count() -> None:
    registry = ToolRegistry(output_limit=2000)
    registry.register("search_sessions", SESSION_TOOLS["search_sessions"], lambda a: "x" * 50_000)
    outcome = call(registry, "search_sessions", query="q")
    assert len(outcome.content) <= 2000
    head, note_and_tail = outcome.content.split("\n[... ", 1)
    number, tail = note_and_tail.split(" characters cut; use read_file with offset/limit", 1)
    tail = tail.split("...]\n", 1)[1]
    assert len(head) + len(tail) + int(number.replace(",", "")) == 50_000


def test_short_output_is_unchanged(tools: ToolRegistry) -> None:
    tools.register("search_sessions", SESSION_TOOLS["search_sessions"], lambda a: "y" * 100)
    assert call(tools, "search_sessions", query="q").content == "y" * 100


def test_arguments_digest_is_canonical(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("x\n")
    one = raw_call(tools, "read_file", '{"path": "a.txt", "limit": 5}')
    two = raw_call(tools, "read_file", '{"limit":5,\n "path":"a.txt"}')
    expected = hashlib.sha256(dumps_line({"path": "a.txt", "limit": 5})).hexdigest()
    assert one.arguments_digest == two.arguments_digest == expected
    broken = raw_call(tools, "read_file", "{nope")
    assert broken.arguments_digest == hashlib.sha256(b"{nope").hexdigest()


@pytest.mark.parametrize(
    "raw",
    [
        '{"path": NaN}',
        '{"path": "a.txt", "limit": -Infinity}',
        '{"path": "\\ud800"}',
        '{"p\ud800": 1}',
    ],
)
def test_arguments_without_canonical_json_get_an_error_and_the_raw_digest(
    workspace: Path, tools: ToolRegistry, raw: str
) -> None:
    (workspace / "a.txt").write_text("x\n")
    outcome = raw_call(tools, "read_file", raw)
    assert not outcome.ok and outcome.content.startswith("error: ")
    expected = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
    assert outcome.arguments_digest == expected


def test_outcome_message_answers_the_call(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("x\n")
    outcome = call(tools, "read_file", path="a.txt")
    assert outcome.message() == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": "     1\tx\n",
    }
    assert isinstance(outcome.duration, float)


def test_definitions_are_strict_function_tools(tools: ToolRegistry) -> None:
    definitions = tools.definitions() + list(SESSION_TOOLS.values())
    names = [d["function"]["name"] for d in definitions]
    assert names == [
        "read_file", "write_file", "edit_file", "list_files", "search_files", "run_shell",
        "update_plan", "read_session", "search_sessions",
    ]  # fmt: skip
    for definition in definitions:
        function = definition["function"]
        parameters = function["parameters"]
        assert definition["type"] == "function"
        assert function["strict"] is True
        assert len(function["description"]) > 40
        assert parameters["additionalProperties"] is False
        assert parameters["required"] == list(parameters["properties"])
        for prop in parameters["properties"].values():
            assert prop.get("description"), function["name"]


# nothing dead: what the package exports and what an outcome carries is used

ROOT = Path(__file__).resolve().parent.parent


def python_trees(*folders: str) -> list[tuple[str, ast.AST]]:
    return [
        (path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]


def test_every_package_export_is_imported_somewhere() -> None:
    """`gitsessions.services.tools.__all__` lists only names some module imports from it."""
    imported: set[str] = set()
    for _, tree in python_trees("gitsessions", "tests", "bench"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "gitsessions.services.tools":
                imported |= {alias.name for alias in node.names}
    assert sorted(set(tools_package.__all__) - imported) == []


def test_every_outcome_field_is_read_by_its_consumers() -> None:
    """A ToolOutcome field that no code outside the tools package (the loop, the audit,
    the CLI) reads is a promise nothing keeps: `message()` reads `call_id`."""
    read: set[str] = {"call_id", "content"}  # read by ToolOutcome.message()
    for relative, tree in python_trees("gitsessions"):
        if not relative.startswith("gitsessions/services/tools/"):
            read |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    fields = set(ToolOutcome._fields)
    assert sorted(fields - read) == []
