"""What a failed tool result says in a line or three, for the ledger's list of failures:
the failing tests a test runner names, else the first line that reads as an error.

Invariant: a pure function of the result's text, bounded by MAX_LINES lines of at most
MAX_LINE_CHARS characters each, whatever the output's size; a line is copied from the
output (cut, never reworded), so the ledger never states what the output did not say.

Failing tests are recognised in the summary lines of the common runners:
- pytest: `FAILED tests/x.py::test_y - AssertionError: ...`, `ERROR tests/x.py::test_y`
  (and `-v`'s `tests/x.py::test_y FAILED`);
- unittest: `FAIL: test_y (tests.test_x.TestX.test_y)`, `ERROR: test_y (...)`;
- go test: `--- FAIL: TestY (0.00s)` (subtests too);
- cargo test: `test tests::y ... FAILED`.
Without any, the exceptions a Python traceback ends with (its unindented last line, e.g.
`psycopg2.errors.UniqueViolation: duplicate key ...`; each of a chain) and the first line of
each block of pytest's `E   ` lines; without any, the first error line: a compiler-style
diagnostic (`path:line[:col]: ...`) or a line naming an error, an exception, a failure or a
panic (not a banner such as `=== FAILURES ===` or a traceback's first line); without one,
the first line of output.
"""

import re

MAX_LINES = 3
MAX_LINE_CHARS = 240

_TESTS = re.compile(
    r"^(?:FAILED|ERROR) \S+::\S+"  # pytest's short summary
    r"|^\S+::\S+ (?:FAILED|ERROR)\b"  # pytest -v
    r"|^(?:FAIL|ERROR): \w+ \(\S+\)"  # unittest
    r"|^\s*--- FAIL: \S+"  # go test
    r"|^test \S+ \.\.\. FAILED$",  # cargo test
)
_DIAGNOSTIC = re.compile(r"^\S+:\d+(?::\d+)?:\s")
_ERROR_WORD = re.compile(
    r"\w*(?:error|exception)\b|\b(?:fatal|failed|failure|panic(?:ked)?|traceback)\b",
    re.IGNORECASE,
)
_BANNER = re.compile(r"^[=_\-*#~ ]{3,}")  # pytest's ==== FAILURES ====, ____ test_y ____
_EXIT = re.compile(r"\s*exit code:", re.IGNORECASE)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?::\s.*)?$")  # an unindented `pkg.Name: message`
_PYTEST_E = re.compile(r"^E\s+\S")


def failing_tests(output: str) -> list[str]:
    """The lines of `output` in which a test runner names a failing test, in order,
    each once and stripped."""
    found = (line.strip() for line in output.splitlines() if _TESTS.match(line))
    return list(dict.fromkeys(found))


def error_lines(result: str) -> tuple[str, ...]:
    """At most MAX_LINES lines saying how `result` failed: its failing tests (the last
    one counting those left out), else its first error line, else its first line of
    output; each cut to MAX_LINE_CHARS."""
    tests = failing_tests(result)
    if tests:
        shown = tests[:MAX_LINES] if len(tests) <= MAX_LINES else tests[: MAX_LINES - 1]
        more = len(tests) - len(shown)
        lines = [*shown, f"(and {more} more failing tests)"] if more else shown
        return tuple(_cut(line) for line in lines)
    raw = result.splitlines()
    exceptions = _exceptions(raw)
    if exceptions:
        return tuple(_cut(line) for line in exceptions[:MAX_LINES])
    output = [line.strip() for line in raw if line.strip() and not _EXIT.match(line)]
    for line in output:
        if line.startswith(_TRACEBACK) or _BANNER.match(line):
            continue
        if _DIAGNOSTIC.match(line) or _ERROR_WORD.search(line):
            return (_cut(line),)
    return (_cut(output[0]),) if output else ()


def _exceptions(lines: list[str]) -> list[str]:
    """The last line of each Python traceback in `lines` and the first of each block of
    pytest's `E` lines, in order, each once."""
    found: list[str] = []
    in_traceback = previous_e = False
    for line in lines:
        if line.startswith(_TRACEBACK):
            in_traceback = True
        elif in_traceback and line and not line[0].isspace():
            in_traceback = False
            if _EXCEPTION.match(line):
                found.append(line.strip())
        is_e = bool(_PYTEST_E.match(line))
        if is_e and not previous_e:
            found.append(line[1:].strip())
        previous_e = is_e
    return list(dict.fromkeys(found))


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."
