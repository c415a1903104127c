"""The README and the CLI agree: every command is documented, every documented command
and flag exists, and .ci/run runs the README's test command."""

import re

from typer.main import get_command

from gitsessions.cli.app import app
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def commands() -> dict:
    """Every command by name (the group imports each command's module when asked)."""
    group = get_command(app)
    return {name: group.get_command(None, name) for name in group.list_commands(None)}  # type: ignore[attr-defined]


def test_every_command_is_in_the_readme_table():
    documented = set(re.findall(r"^\| `([a-z]+)[ `]", README, re.MULTILINE))
    documented |= set(re.findall(r", `([a-z]+) ", README))
    missing = set(commands()) - documented
    assert not missing, f"commands missing from README: {missing}"


def test_documented_flags_exist(cli):
    table = commands()
    rows = [line.split("|")[1] for line in README.splitlines() if line.startswith("| `")]
    checked = 0
    for cell in rows:
        for usage in re.findall(r"`([^`]+)`", cell):
            name = usage.split()[0]
            assert name in table, f"README documents unknown command {name!r}"
            command = table[name]
            words = usage.split()
            if hasattr(command, "commands") and len(words) > 1:  # a group: `worktree list`
                assert words[1] in command.commands, f"README documents {usage!r}"
                command = command.commands[words[1]]
            flags = {opt for param in command.params for opt in param.opts}
            for flag in re.findall(r"(--[a-z-]+)", usage):
                assert flag in flags, f"README documents {name} {flag}, which does not exist"
                checked += 1
    assert checked >= 8
    for name in table:
        assert cli(name, "--help").stdout.startswith("Usage:")


def test_slash_commands_documented():
    from gitsessions.cli.slash import HELP

    for usage, _ in HELP:
        assert f"`{usage}`" in README.replace("\\\\", "\\"), usage


def test_ci_runs_the_readme_test_command():
    assert "uv run pytest" in README
    assert "uv run pytest" in (REPO / ".ci" / "run").read_text()


def test_no_merge_conflict_markers_in_docs():
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        text = path.read_text(encoding="utf-8")
        assert "\n<<<<<<< " not in text and "\n>>>>>>> " not in text, path.name
