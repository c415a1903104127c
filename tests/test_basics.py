"""The basics a user expects of a command-line tool (issue 10, item 16): --version, -h,
shell completion, help that reads as sentences, counts that agree with their nouns, a
banner when --auto-approve is on, and a first run that says how to start a model."""

import re
import subprocess
import sys
from pathlib import Path

import pexpect

from gitsessions.cli.lazy import COMMANDS
from tests.conftest import REPO, exec_args, run_gitsessions
from tests.test_chat import PROMPT, leave, plain

PYPROJECT_VERSION = re.search(
    r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.MULTILINE
)


def test_version_prints_the_package_version():
    done = run_gitsessions("--version")
    assert done.returncode == 0, done.stderr
    assert PYPROJECT_VERSION is not None
    assert done.stdout.strip() == f"gitsessions {PYPROJECT_VERSION.group(1)}"


def test_h_is_help_for_the_app_and_for_each_command():
    assert run_gitsessions("-h").stdout == run_gitsessions("--help").stdout
    done = run_gitsessions("list", "-h")
    assert done.returncode == 0 and "Usage: gitsessions list" in done.stdout


def test_completion_can_be_installed_and_shown():
    helped = run_gitsessions("--help").stdout
    assert "--install-completion" in helped and "--show-completion" in helped
    # typer finds the shell among the process's ancestors (shellingham), which under
    # pytest are python and uv, so the shell is given: typer's own switch makes
    # `--show-completion` take it as its value
    env = {**_env(), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = run_gitsessions("--show-completion", "bash", env=env)
    assert script.returncode == 0, script.stderr
    assert "_GITSESSIONS_COMPLETE" in script.stdout


def test_completion_lists_the_commands_without_importing_them():
    env = {**_env(), "_GITSESSIONS_COMPLETE": "complete_bash", "COMP_WORDS": "gitsessions l",
           "COMP_CWORD": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "gitsessions"], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert {"list", "log"} <= set(done.stdout.split()), done.stdout + done.stderr


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _summaries(help_text: str) -> dict[str, str]:
    section = help_text.split("Commands:", 1)[1]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"  (\S+)\s+(.*)", line)
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def test_every_help_summary_is_a_full_sentence():
    """The command list never cuts a summary ("..."), each ends with a period, and each
    command's own --help opens with a paragraph that ends in one too."""
    rows = _summaries(run_gitsessions("--help").stdout)
    assert set(COMMANDS) <= set(rows)
    for name, summary in rows.items():
        assert summary.endswith(".") and not summary.endswith("..."), (name, summary)
    for name in rows:
        done = run_gitsessions(name, "--help")
        assert done.returncode == 0, (name, done.stderr)
        body = done.stdout.split("\n\n", 2)[1]
        first = " ".join(body.split())
        assert first.endswith("."), (name, first)
        options = done.stdout.split("Options:", 1)[1]
        for help_line in re.split(r"\n  (?=-)", options):
            words = " ".join(help_line.split())
            if words.startswith("-") and "  " in help_line.strip():
                text = re.sub(r"(\s*\[[^\]]*\])+$", "", words)
                assert text.endswith("."), (name, words)


def test_the_lazy_table_names_every_command_its_modules_register():
    """cli/lazy.py knows each command by name and module: a command a module registers
    but the table misses would never be found."""
    from importlib import import_module

    import typer

    for module in {module for module, _summary in COMMANDS.values()}:
        app = typer.Typer()
        import_module(f"gitsessions.cli.{module}").register(app)
        for info in app.registered_commands:
            assert info.name in COMMANDS and COMMANDS[info.name][0] == module, info.name


def test_no_count_disagrees_with_its_noun():
    """No f-string writes `{n} steps`: counted nouns go through values/plural.py."""
    nouns = (
        "steps|turns|sessions|messages|pins|requests|packs|commits|findings|objects|hits|"
        "forks|times"
    )
    pattern = re.compile(r"\{[^{}]+\} (?:" + nouns + r")\b")
    found = []
    for path in sorted((REPO / "gitsessions").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_one_step_is_one_step(server, workspace):
    server.reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}])
    done = run_gitsessions(*exec_args(server, workspace), "look", "--max-steps", "1")
    assert done.returncode == 3, done.stderr
    assert "reached the limit of 1 step (--max-steps)" in done.stderr
    assert "1 steps" not in done.stderr


def test_exec_says_when_auto_approve_is_on(server, workspace):
    done = run_gitsessions(*exec_args(server, workspace), "hi", "--auto-approve")
    assert done.returncode == 0, done.stderr
    assert "auto-approve is on" in done.stderr
    quiet = run_gitsessions(*exec_args(server, workspace), "hi")
    assert "auto-approve" not in quiet.stderr


def _chat(workspace: Path, *args: str) -> pexpect.spawn:
    import os

    env = dict(os.environ, TERM="xterm", COLUMNS="120", LINES="50")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "gitsessions", "chat", "--workspace", str(workspace), *args],
        env=env,
        encoding="utf-8",
        timeout=30,
        cwd=str(REPO),
        dimensions=(50, 120),
    )
    child.linesep = "\r"  # Enter, as a terminal sends it (a "\n" is Ctrl-J: a new line)
    return child


def test_chat_banner_when_auto_approve_is_on(server, workspace):
    child = _chat(workspace, "--base-url", server.base_url, "--model", "fake-model",
                  "--auto-approve")  # fmt: skip
    child.expect(PROMPT)
    assert "auto-approve is on" in plain(child.before)
    leave(child)


def test_chat_opens_with_no_endpoint_and_says_so(workspace, home):
    """The default endpoint (Ollama on localhost) is pointed at a closed port: chat still
    opens, says the server cannot be reached, and how to start Ollama or point elsewhere."""
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    child = _chat(workspace, "--base-url", f"http://127.0.0.1:{port}/v1")
    child.expect(PROMPT)
    said = " ".join(plain(child.before).split())
    assert "cannot reach the model server" in said
    assert "ollama" not in said.lower()  # not the default endpoint: no Ollama advice
    leave(child)

    from gitsessions.services.model import endpoint

    hint = endpoint.OLLAMA_HINT.format(url="U", model="gemma4", config="C")
    assert "`ollama serve`" in hint and "`ollama pull gemma4`" in hint and "--base-url" in hint


def test_first_run_on_the_default_endpoint_names_both_ollama_commands(workspace, home):
    """No --base-url: the default (Ollama at localhost:11434). Whether or not something
    listens there, a first run prints both commands and how to point elsewhere."""
    child = _chat(workspace, "--model", "gemma4")
    child.expect(PROMPT)
    said = " ".join(plain(child.before).split())
    assert "`ollama serve`" in said and "`ollama pull gemma4`" in said, said
    assert "--base-url" in said
    leave(child)


def test_exec_against_the_default_endpoint_says_how_to_start_ollama(workspace):
    import socket

    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", 11434)) == 0:
            import pytest

            pytest.skip("something listens on Ollama's port here")
    done = run_gitsessions("exec", "hi", "--workspace", str(workspace))
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: cannot reach the model server at http://localhost:11434/v1")
    assert "`ollama serve`" in line and "`ollama pull gemma4`" in line and "--base-url" in line


def test_help_names_arguments_as_people_write_them(cli):
    """No typer-isms in any usage line or argument list: `{ID}`, `<list[str]>`,
    `[[REMOTE] [ID ...]]...`; an optional argument is `[ID]`, one that takes many `X...`."""
    from gitsessions.cli.lazy import load

    paths = []
    for name in COMMANDS:
        command = load(name)
        subcommands = getattr(command, "commands", {})
        paths += [[name, sub] for sub in subcommands] if subcommands else [[name]]
    assert ["worktree", "remove"] in paths and ["snapshot", "restore"] in paths
    for path in paths:
        shown = cli(*path, "-h").stdout
        assert not re.search(r"\{|<list|\[\[|\]\.\.\.\]|Arguments:\n\s+\S+ <", shown), (path, shown)
    assert " info [OPTIONS] [ID]\n" in cli("info", "-h").stdout
    assert " rename [OPTIONS] ID TITLE\n" in cli("rename", "-h").stdout
    assert " push [OPTIONS] [REMOTE] [ID]...\n" in cli("push", "-h").stdout


def test_usage_errors_say_error_as_every_other_error():
    done = run_gitsessions("list", "--bogus")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "error: No such option: --bogus"
    assert "Try 'gitsessions list -h' for help." in done.stderr and "Error" not in done.stderr
    missing = run_gitsessions("search")
    assert missing.returncode == 2 and missing.stderr.splitlines()[-1].startswith("error: Missing")
    assert run_gitsessions().returncode == 2  # no command: the help, as before
    assert "Usage: gitsessions" in run_gitsessions().stdout + run_gitsessions().stderr
