"""The ledger is read from the transcript: files, commands, last error, plan, pins."""

import json
from typing import Any

import pytest

from gitsessions.services.compaction.ledger import (
    LEDGER_HEADING,
    MAX_COMMANDS,
    build_ledger,
    exit_status,
    is_failure,
)


def turn(call_id: str, name: str, result: str | None, **arguments: Any) -> list[dict[str, Any]]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    if result is not None:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return messages


PYTEST_FAILURE = (
    "exit code: 1\n"
    "============================= test session starts ==============================\n"
    "collected 12 items\n\n"
    "tests/test_http.py ....F.......                                         [100%]\n\n"
    "=================================== FAILURES ===================================\n"
    "_________________________________ test_retry __________________________________\n"
    "E       AssertionError: assert 3 == 4\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_http.py::test_retry - AssertionError: assert 3 == 4\n"
    "========================= 1 failed, 11 passed in 0.42s =========================\n"
)


def transcript() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Add retries."},
        *turn("a", "read_file", "def get(): ...", path="src/http.py"),
        *turn("b", "edit_file", "edited src/http.py", path="src/http.py", old="x", new="y"),
        *turn("c", "write_file", "wrote src/backoff.py", path="src/backoff.py", content="..."),
        *turn("d", "edit_file", "error: old text not found in src/nope.py", path="src/nope.py"),
        *turn("e", "run_shell", PYTEST_FAILURE, command="pytest -q"),
        *turn("f", "edit_file", "edited src/http.py", path="src/http.py", old="y", new="z"),
        *turn("g", "run_shell", "exit code: 0\nok", command="ruff check\nruff format"),
        *turn("h", "run_shell", "exit code: timeout after 30s\n", command="sleep 99"),
        *turn("i", "run_shell", "no exit line here", command="echo hi"),
        *turn("j", "run_shell", None, command="make"),
    ]


def test_exit_status_follows_the_run_shell_convention() -> None:
    assert exit_status("exit code: 0\nok") == "0"
    assert exit_status("exit code: 2\n") == "2"
    assert exit_status("Exit code: -9") == "-9"
    assert exit_status("exit code: timeout after 30s\n") == "timeout after 30s"
    assert exit_status("output\nexit code: 1") is None  # only the first line counts
    assert exit_status("") is None


def test_failure_convention() -> None:
    assert is_failure("run_shell", "exit code: 1\n")
    assert is_failure("run_shell", "exit code: timeout after 5s\n")
    assert not is_failure("run_shell", "exit code: 0\nerror: in output is fine")
    assert is_failure("edit_file", "error: old text not found")
    assert not is_failure("read_file", "x = 'error: not at the start'")


def test_modified_files_are_listed_once_with_their_actions() -> None:
    ledger = build_ledger(transcript())
    assert ledger.files == (("src/http.py", "edited x2"), ("src/backoff.py", "written"))
    files = ledger.render().split("### Shell commands", 1)[0]
    assert "src/nope.py" not in files  # the failed edit changed nothing (a failure, listed)


def test_commands_with_exit_codes() -> None:
    ledger = build_ledger(transcript())
    assert ledger.commands == (
        ("pytest -q", "1"),
        ("ruff check\nruff format", "0"),
        ("sleep 99", "timeout after 30s"),
        ("echo hi", None),
        ("make", None),
    )
    text = ledger.render()
    assert "- [exit 1] pytest -q" in text
    assert '- [exit 0] "ruff check\\nruff format"' in text
    assert "- [exit timeout after 30s] sleep 99" in text
    assert "- [exit ?] echo hi" in text


def test_only_the_latest_commands_are_shown() -> None:
    messages: list[dict[str, Any]] = []
    for n in range(MAX_COMMANDS + 5):
        messages += turn(f"x{n}", "run_shell", "exit code: 0\n", command=f"step {n}")
    text = build_ledger(messages).render()
    assert "(5 earlier commands omitted" in text
    assert "step 4\n" not in text and f"step {MAX_COMMANDS + 4}" in text


def test_last_error_is_the_latest_failed_result() -> None:
    ledger = build_ledger(transcript())
    error = ledger.last_error
    assert error is not None
    assert error.name == "run_shell" and error.index == 17  # the timeout, after pytest
    before_timeout = build_ledger(transcript()[:16])
    assert before_timeout.last_error is not None
    assert before_timeout.last_error.index == 11
    text = before_timeout.render()
    assert "FAILED tests/test_http.py::test_retry - AssertionError" in text
    assert "pytest -q (exit code: 1)" in text
    only_edit = build_ledger(transcript()[:11])
    assert only_edit.last_error is not None
    assert "error: old text not found in src/nope.py" in only_edit.render()


def test_open_plan_items_and_pins_verbatim() -> None:
    plan = [
        {"step": "write the backoff", "status": "completed"},
        {"step": "fix test_retry", "status": "in_progress"},
        {"text": "update the changelog", "status": "pending"},
    ]
    pins = ["Never push to main.", "Line one\n  indented line two <b>ok</b>"]
    ledger = build_ledger(transcript(), plan, pins)
    assert ledger.open_plan == (
        ("fix test_retry", "in_progress"),
        ("update the changelog", "pending"),
    )
    text = ledger.render()
    assert "write the backoff" not in text
    assert "- [in_progress] fix test_retry" in text
    for pin in pins:
        assert pin in text


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]", ""])
def test_unparsable_arguments_are_ignored(arguments: str) -> None:
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "z",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "z", "content": "wrote"},
    ]
    ledger = build_ledger(messages)
    assert ledger.files == ()
    assert ledger.render().startswith(LEDGER_HEADING)


def test_files_past_the_ledgers_budget_are_counted() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for n in range(600):
        path = "src/hot.py" if n % 7 == 0 and n < 300 else f"src/m{n}.py"
        messages += turn(f"c{n}", "edit_file", f"edited {path}", path=path, old="a", new="b")
    messages += turn("last", "write_file", "wrote src/latest.py", path="src/latest.py")
    ledger = build_ledger(messages, pins=["keep me"])

    def tokens(text: str) -> int:
        return len(text) // 4 + 1

    whole = ledger.render()
    assert "src/m5.py" in whole and "more files" not in whole
    text = ledger.render(max_tokens=400, tokens=tokens)
    assert tokens(text) <= 400
    assert "src/latest.py" in text and "src/hot.py (edited x43)" in text and "keep me" in text
    kept = text.count("\n- src/")
    assert 20 < kept < len(ledger.files) == 559
    assert f"- and {559 - kept} more files; read_session lists them" in text
    # the budget can hold less than the fixed sections: still the newest file, and a count
    assert "src/latest.py" in ledger.render(max_tokens=10, tokens=tokens)


@pytest.mark.parametrize("seed", range(12))
def test_a_ledger_fed_in_pieces_through_its_state_is_the_ledger_read_whole(seed) -> None:
    import json
    import random

    from gitsessions.services.compaction.ledger import LedgerBuilder

    rng = random.Random(seed)
    messages = transcript() * 3
    for n, message in enumerate(messages):  # distinct call ids, as a real transcript has
        for call in message.get("tool_calls") or []:
            call["id"] = f"{call['id']}-{n // len(transcript())}"
        if message.get("role") == "tool":
            message["tool_call_id"] = f"{message['tool_call_id']}-{n // len(transcript())}"
    cuts = sorted(rng.sample(range(1, len(messages)), rng.randint(1, 6)))
    builder = LedgerBuilder()
    for start, end in zip([0, *cuts], [*cuts, len(messages)], strict=True):
        builder.feed(messages[start:end], start)
        builder = LedgerBuilder.from_state(json.loads(json.dumps(builder.state())))
    whole = build_ledger(messages, [{"step": "x", "status": "pending"}], ["pin"])
    assert builder.ledger([{"step": "x", "status": "pending"}], ["pin"]) == whole
    assert whole.render() == builder.ledger([{"step": "x", "status": "pending"}], ["pin"]).render()
