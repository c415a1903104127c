"""The lines a tool call prints while the agent works (chat and exec): the call as a
person reads it, its result's first line and a shell run's tail, saying what was cut."""

import json
from io import StringIO
from pathlib import Path
from typing import Any

from gitsessions.cli.progress import ProgressEvents, describe_call
from gitsessions.cli.terminal import VisibleConsole
from gitsessions.services.tools import create_registry
from gitsessions.services.tools.registry import NotAsked
from tests.tool_helpers import ENV


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": "c1", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_a_call_reads_as_a_person_would_say_it() -> None:
    assert describe_call(call("list_files", path=None)) == "list_files: ."
    assert describe_call(call("list_files", path="src")) == "list_files: src"
    assert describe_call(call("search_files", pattern="def main", path=None)) == (
        "search_files: def main"
    )
    assert describe_call(call("search_files", pattern="x", path="src")) == "search_files: x in src"
    assert describe_call(call("read_file", path="a.py", offset=40, limit=None)) == (
        "read_file: a.py (offset 40)"
    )
    assert describe_call(call("write_file", path="a.py", content="a\nb\nc")) == (
        "write_file: a.py (3 lines)"
    )
    assert describe_call(call("edit_file", path="a.py", old="x", new="y")) == "edit_file: a.py"
    assert describe_call(call("update_plan", items=[{}, {}, {}])) == "update_plan: 3 items"
    assert describe_call(call("run_shell", command="pytest\t-q\n  tests", timeout=None)) == (
        "run_shell: pytest -q tests"
    )
    assert describe_call({"function": {"name": "read_file", "arguments": "{oops"}}) == (
        "read_file: {oops"
    )


def test_a_long_call_is_cut_at_a_word_with_an_ellipsis() -> None:
    shown = describe_call(call("run_shell", command="echo " + "word " * 40), width=60)
    assert len(shown) <= 60 and shown.endswith("word\u2026")


def printed(events: ProgressEvents) -> list[str]:
    return events.console.file.getvalue().splitlines()  # type: ignore[no-any-return]


def progress() -> ProgressEvents:
    return ProgressEvents(VisibleConsole(file=StringIO(), width=300, force_terminal=False))


def test_a_result_shows_tabs_as_spaces(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def add(a, b):\n\treturn a + b\n")
    registry = create_registry(tmp_path, ENV)
    events = progress()
    events.tool_finished(registry.dispatch(call("read_file", path="a.py")))
    assert printed(events) == ["   1  def add(a, b):"]


def test_a_long_result_line_is_cut_at_a_word_with_an_ellipsis(tmp_path: Path) -> None:
    registry = create_registry(tmp_path, ENV)
    events = progress()
    path = "a/" + " ".join(["word"] * 40)
    outcome = registry.dispatch(call("read_file", path=path))
    events.tool_finished(outcome)
    (line,) = printed(events)
    full = outcome.content.splitlines()[0]
    assert line.startswith("   error: 'a/word word") and line.endswith("\u2026")
    assert len(line) <= 3 + 120
    stem = line[3:-1]
    assert full.startswith(stem) and full[len(stem)] == " "  # cut between two words


def test_a_denial_shows_what_happened_not_the_advice_to_the_model(tmp_path: Path) -> None:
    registry = create_registry(tmp_path, ENV, approve=lambda name, arguments: False)
    events = progress()
    outcome = registry.dispatch(call("run_shell", command="touch x"))
    events.tool_finished(outcome)
    assert "Do not retry" in outcome.content
    assert printed(events) == [
        "   error: denied by the user: this run_shell call was not approved, so it was not run."
    ]


def test_a_refusal_no_one_was_asked_about_says_why(tmp_path: Path) -> None:
    registry = create_registry(tmp_path, ENV, approve=lambda n, a: NotAsked("exec needs X"))
    outcome = registry.dispatch(call("write_file", path="a", content="x"))
    assert outcome.denied and outcome.content.startswith("error: not run: exec needs X. ")
    assert "by the user" not in outcome.content and not (tmp_path / "a").exists()


def test_a_shell_tail_says_what_was_cut_from_what_the_model_saw(tmp_path: Path) -> None:
    registry = create_registry(tmp_path, ENV, output_limit=6000)
    events = progress()
    registry.approve = lambda name, arguments: True
    outcome = registry.dispatch(call("run_shell", command="seq 1 2500"))
    events.tool_finished(outcome)
    lines = printed(events)
    assert "characters cut;" in outcome.content
    cut = outcome.content.split("[... ", 1)[1].split(" characters", 1)[0]
    seen = len(outcome.content.splitlines()) - 1 - 1 - 5  # the exit line, the note, the tail
    assert lines[1] == (
        f"   | ... ({seen:,} lines above, and {cut} characters cut from the middle: "
        "the model did not see them)"
    )
    assert lines[2:] == [f"   | {n}" for n in range(2496, 2501)]
    events = progress()
    events.tool_finished(registry.dispatch(call("run_shell", command="seq 1 7")))
    assert printed(events)[1] == "   | ... (2 lines above)"
