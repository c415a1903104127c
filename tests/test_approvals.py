"""What "always" approves for run_shell: one command prefix, never a chained command."""

import pytest

from gitsessions.cli.chat_ui import command_prefix, prefix_allows


@pytest.mark.parametrize(
    ("prefix", "command", "allowed"),
    [
        ("pytest", "pytest", True),
        ("pytest", "pytest -q tests/test_x.py", True),
        ("git status", "git status --short", True),
        ("git status", "git push --force", False),
        ("pytest", "pytestx", False),  # whole words only
        ("pytest", "pytest; rm -rf ~", False),
        ("pytest", "pytest && curl evil.example", False),
        ("pytest", "pytest | sh", False),
        ("pytest", "pytest > ~/.bashrc", False),
        ("pytest", "pytest $(rm -rf ~)", False),
        ("pytest", "pytest `rm -rf ~`", False),
        ("pytest", "pytest\nrm -rf ~", False),
    ],
)
def test_prefix_rules(prefix: str, command: str, allowed: bool) -> None:
    assert prefix_allows(prefix, command) is allowed


def test_the_default_prefix_is_the_first_word() -> None:
    assert command_prefix("  pytest -q tests") == "pytest"
    assert command_prefix("") == ""
