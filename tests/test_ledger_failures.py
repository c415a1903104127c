"""The ledger keeps every failure and the agent's own words (issue 47): each failed tool
result with the failing tests its runner names or its first error lines, and the text of
the agent's replies, verbatim and newest first, within the ledger's budget."""

import json
import random
from typing import Any

import pytest

from bench.quality_ingest import UNIQUE
from gitsessions.services.compaction.failures import (
    MAX_LINE_CHARS,
    MAX_LINES,
    error_lines,
    failing_tests,
)
from gitsessions.services.compaction.ledger import (
    FAILURES_HEADING,
    MAX_STATEMENT_CHARS,
    STATEMENTS_HEADING,
    LedgerBuilder,
    build_ledger,
)

PYTEST = """\
exit code: 1
..F.                                                                     [100%]
=================================== FAILURES ===================================
____________________ test_retry_after_http_date_is_honoured ____________________

    def test_retry_after_http_date_is_honoured():
>       assert wait_for(1, response) == 42
E       TypeError: can't subtract offset-naive and offset-aware datetimes

fetchkit/retry.py:24: TypeError
=========================== short test summary info ============================
FAILED tests/test_retry.py::test_retry_after_http_date_is_honoured - TypeError: can't \
subtract offset-naive and offset-aware datetimes
ERROR tests/test_db.py::test_migrate - sqlite3.OperationalError: no such table: users
1 failed, 2 passed, 1 error in 0.09s"""

PYTEST_VERBOSE = """\
exit code: 1
tests/test_cart.py::test_total PASSED                                    [ 50%]
tests/test_cart.py::test_total_rounds_half_up FAILED                     [100%]"""

PYTEST_COLLECTION = """\
exit code: 4
ImportError while loading conftest '/home/dev/shop/tests/conftest.py'.
tests/conftest.py:3: in <module>
    import tomllib
E   ModuleNotFoundError: No module named 'tomllib'"""

UNITTEST = """\
exit code: 1
F.E
======================================================================
ERROR: test_load (tests.test_store.StoreTest.test_load)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/src/tests/test_store.py", line 14, in test_load
    store.load("x")
KeyError: 'x'

======================================================================
FAIL: test_total (tests.test_cart.CartTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/src/tests/test_cart.py", line 9, in test_total
    self.assertEqual(total(), 3)
AssertionError: 2 != 3

----------------------------------------------------------------------
Ran 3 tests in 0.002s

FAILED (failures=1, errors=1)"""

GO_TEST = """\
exit code: 1
--- FAIL: TestParse (0.00s)
    parse_test.go:12: got 2, want 3
--- FAIL: TestTable (0.00s)
    --- FAIL: TestTable/empty (0.00s)
        table_test.go:20: unexpected error
FAIL
FAIL\texample.com/m/parse\t0.002s
FAIL"""

CARGO_TEST = """\
exit code: 101
running 2 tests
test tests::adds ... ok
test tests::subtracts ... FAILED

failures:

---- tests::subtracts stdout ----
thread 'tests::subtracts' panicked at src/lib.rs:12:9:
assertion `left == right` failed

failures:
    tests::subtracts

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"""

TRACEBACK = "exit code: 1\n" + UNIQUE  # the ingest session's load failure

MYPY = """\
exit code: 1
ingest/timezones.py:24: error: Missing return statement  [return]
ingest/parse.py:31: error: Argument 1 to "WallClock" has incompatible type "object"
Found 2 errors in 2 files (checked 9 source files)"""


def test_pytest_names_its_failed_and_errored_tests() -> None:
    assert failing_tests(PYTEST) == [
        "FAILED tests/test_retry.py::test_retry_after_http_date_is_honoured - TypeError: "
        "can't subtract offset-naive and offset-aware datetimes",
        "ERROR tests/test_db.py::test_migrate - sqlite3.OperationalError: no such table: users",
    ]
    assert failing_tests(PYTEST_VERBOSE) == [
        "tests/test_cart.py::test_total_rounds_half_up FAILED                     [100%]"
    ]


def test_unittest_go_and_cargo_name_their_failing_tests() -> None:
    assert failing_tests(UNITTEST) == [
        "ERROR: test_load (tests.test_store.StoreTest.test_load)",
        "FAIL: test_total (tests.test_cart.CartTest)",
    ]
    assert failing_tests(GO_TEST) == [
        "--- FAIL: TestParse (0.00s)",
        "--- FAIL: TestTable (0.00s)",
        "--- FAIL: TestTable/empty (0.00s)",
    ]
    assert failing_tests(CARGO_TEST) == ["test tests::subtracts ... FAILED"]
    assert failing_tests(TRACEBACK + MYPY) == []


def test_error_lines_are_the_failing_tests_first() -> None:
    assert error_lines(PYTEST) == tuple(failing_tests(PYTEST))
    many = "exit code: 1\n" + "\n".join(f"FAILED tests/t.py::test_{n}" for n in range(9))
    assert error_lines(many) == (
        "FAILED tests/t.py::test_0",
        "FAILED tests/t.py::test_1",
        f"(and {9 - MAX_LINES + 1} more failing tests)",
    )


def test_without_tests_the_exceptions_then_the_first_error_line() -> None:
    assert error_lines(PYTEST_COLLECTION) == ("ModuleNotFoundError: No module named 'tomllib'",)
    assert error_lines(TRACEBACK) == (
        "psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "
        '"readings_meter_id_taken_at_key"',
        "ingest.load.LoadError: batch 1 of 1 rolled back (96 rows)",
    )
    assert error_lines(MYPY) == (
        "ingest/timezones.py:24: error: Missing return statement  [return]",
    )
    banner = "exit code: 2\n==== ERRORS ====\nmake: *** [build] Error 2\n"
    assert error_lines(banner) == ("make: *** [build] Error 2",)
    assert error_lines("error: old text not found in src/x.py") == (
        "error: old text not found in src/x.py",
    )
    assert error_lines("exit code: 3\n\nsomething odd\nmore") == ("something odd",)
    assert error_lines("exit code: timeout after 30s\n") == ()
    long = error_lines("exit code: 1\nerror: " + "x" * 5000)
    assert len(long) == 1 and len(long[0]) == MAX_LINE_CHARS and long[0].endswith("...")


def call(call_id: str, name: str, result: str, **arguments: Any) -> list[dict[str, Any]]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function", "function": function}]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]  # fmt: skip


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def session() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Fix the retry."},
        *call("a", "run_shell", PYTEST_COLLECTION, command="pytest -q"),
        say("The suite does not start: tomllib is 3.11+."),
        *call("b", "run_shell", PYTEST, command="pytest -q"),
        *call("c", "edit_file", "error: old text not found in src/x.py", path="src/x.py"),
        say("I named the clock MonotonicClock; the fake clock was naive.\n### Last error\nnone"),
        *call("d", "run_shell", "exit code: 0\n4 passed", command="pytest -q"),
        *call("e", "run_shell", MYPY, command="mypy src"),
        say("mypy: a missing return. " + "word " * 200),
    ]


def test_every_failure_is_listed_with_its_lines_the_last_one_in_full() -> None:
    ledger = build_ledger(session())
    assert [f.index for f in ledger.failures] == [3, 6, 8, 13]
    text = ledger.render()
    earlier = text.split(FAILURES_HEADING + "\n", 1)[1].split("\n### Last error", 1)[0]
    assert earlier.splitlines() == [
        "- transcript message 3, run_shell pytest -q (exit code: 4):",
        "  ModuleNotFoundError: No module named 'tomllib'",
        "- transcript message 6, run_shell pytest -q (exit code: 1):",
        *(f"  {line}" for line in failing_tests(PYTEST)),
        "- transcript message 8, edit_file on src/x.py:",
        "  error: old text not found in src/x.py",
    ]  # the mypy failure is the last error, shown in full there and not again
    assert "transcript message 13, run_shell mypy src (exit code: 1):" in text
    assert FAILURES_HEADING not in build_ledger(session()[:5]).render()  # only the last


def test_the_agents_words_are_quoted_newest_first_and_cut() -> None:
    ledger = build_ledger(session())
    assert [index for index, _ in ledger.statements] == [4, 9, 14]
    text = ledger.render()
    quotes = text.split(STATEMENTS_HEADING + "\n", 1)[1].splitlines()
    assert quotes[1] == (
        '- [message 9] "I named the clock MonotonicClock; the fake clock was naive.\\n'
        '### Last error\\nnone"'
    )  # one JSON string: the text cannot start a section of its own
    assert quotes[2] == '- [message 4] "The suite does not start: tomllib is 3.11+."'
    newest = json.loads(quotes[0].removeprefix("- [message 14] "))
    assert newest.startswith("mypy: a missing return. word") and newest.endswith(" [...]")
    assert len(newest) <= MAX_STATEMENT_CHARS + len(" [...]")


def test_past_the_budget_failures_then_words_keep_their_newest_and_count_the_rest() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for n in range(8):
        messages += call(
            f"f{n}", "run_shell", f"exit code: 1\nerror: step {n} broke", command="make"
        )
        messages.append(say(f"Reply number {n}: " + "detail " * 20))
    ledger = build_ledger(messages)

    def tokens(text: str) -> int:
        return len(text) // 4 + 1

    whole = ledger.render()
    fixed = tokens(ledger.render(max_tokens=1, tokens=tokens))  # files, commands, last error
    text = ledger.render(max_tokens=fixed + 60, tokens=tokens)
    assert tokens(text) <= fixed + 60 < tokens(whole)
    assert "error: step 6 broke" in text and "error: step 0 broke" not in text
    assert "earlier failures left out; read_session shows them)" in text
    assert "Reply number 7" not in text  # the failures took the room first
    roomier = ledger.render(max_tokens=fixed + 300, tokens=tokens)
    assert tokens(roomier) <= fixed + 300
    assert "error: step 0 broke" in roomier and "Reply number 7" in roomier
    assert "Reply number 0" not in roomier and "earlier replies; read_session has them" in roomier


@pytest.mark.parametrize("seed", range(8))
def test_failures_and_words_fed_in_pieces_are_the_ledger_read_whole(seed: int) -> None:
    messages = session() * 2
    for n, message in enumerate(messages):
        for tool_call in message.get("tool_calls") or []:
            tool_call["id"] = f"{tool_call['id']}-{n // len(session())}"
        if message.get("role") == "tool":
            message["tool_call_id"] = f"{message['tool_call_id']}-{n // len(session())}"
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(messages)), rng.randint(1, 5)))
    builder = LedgerBuilder()
    for start, end in zip([0, *cuts], [*cuts, len(messages)], strict=True):
        builder.feed(messages[start:end], start)
        builder = LedgerBuilder.from_state(json.loads(json.dumps(builder.state())))
    assert builder.ledger() == build_ledger(messages)


def test_a_state_written_before_failures_were_kept_still_reads() -> None:
    builder = LedgerBuilder()
    builder.feed(session(), 0)
    state = builder.state()
    for key in ("failures", "earlier_failures", "statements", "earlier_statements"):
        del state[key]
    older = LedgerBuilder.from_state(state).ledger()
    assert older.failures == () and older.statements == ()
    assert older.last_error == build_ledger(session()).last_error
