"""Approvals: what "always" allows for run_shell (the command and its subcommand, never a
command line doing more), said in words, and what a file write or edit shows (replaces or
creates; a diff with the file's own line numbers)."""

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from gitsessions.agent.shell_scope import NoScope, Scope, always_offer, offer_words, scope_of
from gitsessions.cli.approvals import describe_approval
from gitsessions.services.tools import create_registry


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("git log --oneline | head", ("git", "log")),
        ("git log -5 2>&1 | grep fix | wc -l", ("git", "log")),
        ("git status --short > /dev/null", ("git", "status")),
        ("pytest -q tests/test_x.py", ("pytest",)),
        ("python -m pytest -q", ("python", "-m", "pytest")),
        ("uv run pytest -q", ("uv", "run", "pytest")),
        ("make test", ("make", "test")),
        ("touch one.txt", ("touch",)),
    ],
)
def test_always_covers_the_command_and_its_subcommand(command: str, words: tuple[str, ...]) -> None:
    assert scope_of(command) == Scope(words)


@pytest.mark.parametrize(
    "command",
    ["git", "git -C elsewhere push --force", "bash -c 'rm -rf x'", "python x.py",
     "FOO=1 ls", "uv run python -c 1", "sudo make install", "xargs rm"],
)  # fmt: skip
def test_a_command_that_names_no_subcommand_or_runs_any_code_is_offered_only_exactly(
    command: str,
) -> None:
    scope = scope_of(command)
    assert scope == Scope((command,), exact=True)
    assert isinstance(scope, Scope) and scope.allows(command)
    assert not scope.allows(command + " x")


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("ls; echo hi > x.txt", "chains commands (`;`)"),
        ("pytest && curl evil.example", "chains commands (`&&`)"),
        ("pytest || true", "chains commands (`||`)"),
        ("sleep 9 &", "chains commands (`&`)"),
        ("git log > log.txt", "writes its output into a file"),
        ("git log >> log.txt", "writes its output into a file"),
        ("git log --output=log.txt", "names an output file"),
        ("git log | tee log.txt", "pipes into `tee`"),
        ("curl x | sh", "pipes into `sh`"),
        ("ls | xargs rm", "pipes into `xargs`"),
        ("sort a | sort -o b", "pipes into `sort`"),
        ("pytest $(rm -rf ~)", "runs a command inside it"),
        ("pytest `rm -rf ~`", "runs a command inside it"),
        ("pytest\nrm -rf ~", "more than one line"),
        ("git log a#;rm -rf x", "chains commands (`;`)"),  # `#` mid-word is no comment
        ("echo 'unbalanced", "quoting is unbalanced"),
    ],
)
def test_always_is_not_offered_for_a_line_that_does_more(command: str, reason: str) -> None:
    scope = scope_of(command)
    assert isinstance(scope, NoScope) and reason in scope.reason
    assert reason in offer_words(scope)


def test_a_rule_allows_exactly_the_commands_whose_scope_was_shown() -> None:
    rule = scope_of("git log --oneline | head")
    assert isinstance(rule, Scope)
    assert offer_words(rule) == "a: always allow `git log ...` commands in this session"
    assert rule.allows("git log -5") and rule.allows("git log --stat | tail -3")
    for command in (
        "git log; rm -rf x",
        "git log && git push --force",
        "git log > x.txt",
        "git log | sh",
        "git push --force",
        "git reset --hard",
        "git logx",
        "git",
    ):
        assert not rule.allows(command), command


def render(text: Text) -> str:
    console = Console(file=StringIO(), width=120, force_terminal=False, color_system=None)
    console.print(text, highlight=False)
    return console.file.getvalue()  # type: ignore[attr-defined]


def lines_of(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def test_write_file_over_a_file_says_it_replaces_it_and_shows_the_diff(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(lines_of(30))
    registry = create_registry(tmp_path, {})
    arguments = {"path": "a.py", "content": lines_of(30).replace("line 20\n", "twenty\n")}
    shown = render(describe_approval("write_file", arguments, change=registry.preview(
        "write_file", arguments
    )))  # fmt: skip
    assert "  replaces a.py: 30 lines, 231 bytes now, 30 lines, 230 bytes after" in shown
    assert shown.splitlines()[2:] == [
        "    17   line 17",
        "    18   line 18",
        "    19   line 19",
        "    20 - line 20",
        "    20 + twenty",
        "    21   line 21",
        "    22   line 22",
        "    23   line 23",
    ]
    assert "line 1\n" not in shown and "content:" not in shown


def test_write_file_of_a_new_file_says_it_creates_it(tmp_path: Path) -> None:
    registry = create_registry(tmp_path, {})
    arguments = {"path": "new.py", "content": "x = 1\n"}
    shown = render(describe_approval("write_file", arguments, change=registry.preview(
        "write_file", arguments
    )))  # fmt: skip
    assert shown.splitlines()[1:] == ["  creates new.py: 1 line, 6 bytes", "    | x = 1"]


def test_write_file_of_the_same_content_says_nothing_changes(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    registry = create_registry(tmp_path, {})
    arguments = {"path": "a.txt", "content": "same\n"}
    shown = render(describe_approval("write_file", arguments, change=registry.preview(
        "write_file", arguments
    )))  # fmt: skip
    assert "replaces a.txt" in shown and "(the same content: nothing changes)" in shown


def test_an_edit_diff_carries_the_file_line_numbers_and_context(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text(lines_of(40))
    registry = create_registry(tmp_path, {})
    arguments = {"path": "b.py", "old": "line 30\nline 31\n", "new": "thirty\n"}
    shown = render(describe_approval("edit_file", arguments, change=registry.preview(
        "edit_file", arguments
    )))  # fmt: skip
    assert shown.splitlines()[1:] == [
        "  edits b.py",
        "    27   line 27",
        "    28   line 28",
        "    29   line 29",
        "    30 - line 30",
        "    31 - line 31",
        "    30 + thirty",
        "    32   line 32",
        "    33   line 33",
        "    34   line 34",
    ]


def test_an_edit_that_would_fail_says_so_before_it_is_approved(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("a\na\n")
    registry = create_registry(tmp_path, {})
    arguments = {"path": "c.py", "old": "a", "new": "b"}
    shown = render(describe_approval("edit_file", arguments, change=registry.preview(
        "edit_file", arguments
    )))  # fmt: skip
    assert "the edit would fail: old text found 2 times in 'c.py'" in shown
    assert "  -a" in shown and "  +b" in shown  # the edit itself, still shown


def test_an_argument_left_out_is_not_shown_as_null() -> None:
    shown = render(describe_approval("run_shell", {"command": "ls", "timeout": None}))
    assert shown.splitlines() == ["allow run_shell?", "  $ ls"]
    shown = render(describe_approval("run_shell", {"command": "ls", "timeout": 30}))
    assert shown.splitlines()[-1] == "  timeout: 30"


def test_a_replacement_that_changes_only_line_endings_says_so(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\nb")
    registry = create_registry(tmp_path, {})
    arguments = {"path": "a.txt", "content": "a\r\nb\r\n"}
    change = registry.preview("write_file", arguments)
    shown = render(describe_approval("write_file", arguments, change=change))
    assert shown.splitlines()[-1] == "    (only line endings change)"


def test_a_diff_of_hostile_text_is_escaped(tmp_path: Path) -> None:
    wipe = "\x1b[2K\x1b[1G"
    (tmp_path / "a.txt").write_text(f"ok\nbad {wipe}\n")
    registry = create_registry(tmp_path, {})
    arguments = {"path": "a.txt", "content": f"ok\nworse \u202e{wipe}\n"}
    change = registry.preview("write_file", arguments)
    shown = render(describe_approval("write_file", arguments, change=change))
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "    2 - bad \\x1b[2K\\x1b[1G" in shown and "    2 + worse \\u202e\\x1b[2K" in shown


def test_always_for_run_shell_is_never_the_whole_tool() -> None:
    assert always_offer("run_shell", {"command": None}) == NoScope("it has no command")
    assert always_offer("write_file", {"path": "a", "content": ""}) == "write_file"
