"""The docs and the CLI agree. Every command has a line in the README and a section of
docs/commands.md that names each of its flags; every `gitsessions ...` line in a code
block of README.md or docs/*.md parses as the CLI parses it (command, subcommand, flags,
arguments), and every `gitsessions ...` in running text names a command and flags that
exist; every slash command is in docs/chat.md; every link between the pages leads to a
file and heading that exist; every section of the reference pages has an example; the
README stays short; .ci/run runs the README's test command.
tests/test_readme_day.py runs the README's worked example for real."""

import re
import shlex
from pathlib import Path
from typing import Any

from typer.main import get_command

from gitsessions.cli import lazy
from gitsessions.cli.app import app
from tests.conftest import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
COMMANDS_MD = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL_FENCES = {"", "sh", "console", "bash"}


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# typer 0.29 carries its own copy of click, 0.28 uses click: the tests go by what the
# objects do (a group has `commands`), not by click's classes.
Command = Any


def group() -> Command:
    return get_command(app)


def is_usage_error(error: Exception) -> bool:
    return any(kind.__name__ == "UsageError" for kind in type(error).__mro__)


def commands() -> dict[str, Command]:
    """Every command by name (the group imports each command's module when asked)."""
    root = group()
    return {name: root.get_command(None, name) for name in root.list_commands(None)}  # type: ignore[misc]


def shown_command_lines(page: str) -> list[list[str]]:
    """The argv (after `gitsessions`) of every gitsessions command in the page's shell
    code blocks: each line split as a shell would (quotes, `#` comments), and each
    command of a `&&`, `||`, `;` or `|` chain taken on its own."""
    found = []
    for lang, body in FENCE.findall(page):
        if lang not in SHELL_FENCES:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            if not re.search(r"(^|[\s;&|$])gitsessions\s", line):
                continue
            line = line.removeprefix("$ ")
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            words, command = list(lexer), []
            for word in [*words, ";"]:
                if word in {";", "&&", "||", "|", "&"}:
                    command = command[command.index("--") + 1 :] if "--" in command else command
                    if "gitsessions" in command:  # `uv run gitsessions ...`, `mcp add X -- ...`
                        found.append(command[command.index("gitsessions") + 1 :])
                    command = []
                else:
                    command.append(word)
    return found


def parse(argv: list[str]) -> None:
    """Parse `gitsessions ARGV` as the CLI does, down to the command that would run,
    without running it: an unknown command or flag, a missing or extra argument or a bad
    value raises click's UsageError."""
    command = group()
    ctx = command.make_context("gitsessions", lazy.bare_resume(argv))  # as main() does
    while hasattr(command, "commands"):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            return
        name, sub, tail = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None, argv
        command = sub
        ctx = command.make_context(name, tail, parent=ctx)


def test_every_command_shown_in_a_code_block_parses():
    checked = 0
    for path in PAGES:
        for argv in shown_command_lines(text(path)):
            try:
                parse(argv)
            except Exception as error:
                if not is_usage_error(error):
                    raise
                raise AssertionError(
                    f"{path.name}: `gitsessions {shlex.join(argv)}`: {error}"
                ) from None
            checked += 1
    assert checked >= 100, checked


def test_a_wrong_command_line_in_a_code_block_fails_the_check():
    page = "```sh\ngitsessions fork 3f2a --wroktree\ngit log | gitsessions exec -\n```\n"
    lines = shown_command_lines(page)
    assert lines == [["fork", "3f2a", "--wroktree"], ["exec", "-"]]
    for bad in (lines[0], ["diff", "3f2a"], ["worktree", "lst"], ["list", "--limit", "x"]):
        try:
            parse(bad)
        except Exception as error:
            assert is_usage_error(error), error
            continue
        raise AssertionError(f"{bad} parsed")
    parse(lines[1])


def test_commands_in_running_text_exist():
    """`gitsessions NAME [SUB] ... --flag` in running text (where placeholders such as
    `[ID]` may stand in for arguments): the command, subcommand and flags exist."""
    table, root = commands(), group()
    checked = 0
    for path in PAGES:
        spans = re.findall(r"`([^`]*gitsessions [^`]+)`", text(path))
        usages = [
            part.split("gitsessions", 1)[1]
            for span in spans
            for part in re.split(r"&&|\|\||;|\|", span)
            if re.match(r"\s*(uv run )?gitsessions\s", part)
        ]
        for usage in usages:
            words = usage.split()
            if not re.fullmatch(r"-{0,2}[a-z][a-z-]*", words[0]):  # `gitsessions <me@host>`
                continue
            command = root
            if not words[0].startswith("-"):
                assert words[0] in table, f"{path.name} shows unknown command {usage!r}"
                command = table[words[0]]
                if hasattr(command, "commands") and len(words) > 1:
                    assert words[1] in command.commands, f"{path.name} shows {usage!r}"
                    command = command.commands[words[1]]
            flags = {opt for param in command.params for opt in param.opts + param.secondary_opts}
            flags.add("--help")
            for flag in re.findall(r"(?<![\w-])(--[a-z-]+)", usage):
                assert flag in flags, f"{path.name} shows {usage!r}: no {flag}"
                checked += 1
    assert checked >= 5, checked


def sections(page: str) -> dict[str, str]:
    """docs/commands.md's `###` sections by heading."""
    parts = re.split(r"^### (.+)$", page, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def section_of(name: str) -> str:
    """The section whose heading names the command (`### worktree list, remove, restore`
    holds `worktree remove`)."""
    group_name, _, sub = name.partition(" ")
    for heading, body in sections(COMMANDS_MD).items():
        words = re.split(r"[ ,]+", heading)
        if (words[0] == group_name and sub in words) if sub else name in words:
            return body
    raise AssertionError(f"docs/commands.md has no section for {name}")


def every_command() -> dict[str, Command]:
    """Each command by name, a group's subcommands as `group sub`."""
    found = {}
    for name, command in commands().items():
        if hasattr(command, "commands"):
            for sub, subcommand in command.commands.items():
                found[f"{name} {sub}"] = subcommand
        else:
            found[name] = command
    return found


def test_every_command_has_a_readme_line_and_a_section_naming_its_flags(cli):
    readme = text(README)
    table_rows = [line for line in readme.splitlines() if line.startswith("| [`")]
    in_readme = {name for row in table_rows for name in re.findall(r"\[`([a-z]+)`\]", row)}
    missing = set(commands()) - in_readme
    assert not missing, f"commands missing from the README's table: {missing}"
    checked = 0
    for name, command in every_command().items():
        body = section_of(name)
        for param in command.params:
            for flag in [] if getattr(param, "hidden", False) else param.opts:
                if flag.startswith("--") and flag not in {"--help", "--home"}:
                    assert f"`{flag}" in body or f" {flag}" in body, (
                        f"docs/commands.md: the section of {name} does not name {flag}"
                    )
                    checked += 1
        assert f"gitsessions {name}" in body, f"docs/commands.md: no example of {name}"
    assert checked >= 60, checked
    for name in commands():
        assert cli(name, "--help").stdout.startswith("Usage:")


def test_slash_commands_documented():
    from gitsessions.cli.slash import HELP

    chat = text(REPO / "docs" / "chat.md").replace("\\\\", "\\")
    for usage, _ in HELP:
        assert f"`{usage}`" in chat, usage


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def test_links_between_pages_resolve():
    checked = 0
    for path in [*PAGES, REPO / "bench" / "README.md", REPO / "hooks" / "README.md"]:
        for target in re.findall(r"\]\(([^)\s]+)\)", text(path)):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.name} links to {target}: no such file"
            if anchor:
                headings = re.findall(r"^#+ (.+)$", text(linked), re.MULTILINE)
                assert anchor in {slug(h) for h in headings}, f"{path.name}: {target}"
            checked += 1
    assert checked >= 40, checked


def test_readme_is_short():
    assert len(text(README).splitlines()) <= 200


def test_the_readme_says_how_long_the_tests_take():
    """Issue 41, item 10: `uv run pytest` gave no idea of its length."""
    readme = text(README)
    quickstart = readme.partition("## Quickstart")[2].partition("\n## ")[0]
    assert re.search(r"the tests \(about \d+ minutes", quickstart), quickstart
    commented = [line for line in readme.splitlines() if re.match(r"uv run pytest +#", line)]
    assert commented and all(re.search(r"about \d+ minutes", line) for line in commented)


def test_ci_runs_the_readme_test_command():
    assert "uv run pytest\n" in text(README)
    assert "uv run pytest" in (REPO / ".ci" / "run").read_text()


def test_no_merge_conflict_markers_in_docs():
    for path in PAGES:
        body = text(path)
        assert "\n<<<<<<< " not in body and "\n>>>>>>> " not in body, path.name


REFERENCE = ["commands", "chat", "configuration", "snapshots", "sync", "import", "protocols"]


def test_every_section_of_the_reference_has_an_example():
    """The reference pages read like llm's and uv's: short sections, each with an example
    (a code block); a heading whose section is only its subsections is fine."""
    for name in REFERENCE:
        parts = re.split(r"^(#{2,3} .+)$", text(REPO / "docs" / f"{name}.md"), flags=re.MULTILINE)
        for heading, body in zip(parts[1::2], parts[2::2], strict=True):
            assert "```" in body or not body.strip(), f"docs/{name}.md: {heading} has no example"
