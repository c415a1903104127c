"""Startup stays cheap (issue 10, Speed): a command imports only what it needs, and
options convert without typer's pydantic adapters. The timings themselves are measured
by bench/startup.py, never asserted here."""

import ast
import subprocess
import sys

import pytest

from gitsessions.cli.fastparams import PlainParam, convert_fast
from gitsessions.cli.lazy import COMMANDS, load
from tests.conftest import REPO, run_gitsessions

HEAVY = ("openai", "tiktoken", "pydantic", "httpx2", "gitsessions.agent.loop", "rich.markdown")
PROBE = """
import sys
sys.argv = ["gitsessions", *sys.argv[1:]]
from gitsessions.cli.app import main
try:
    main()
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
print("HEAVY", heavy, file=sys.stderr)
"""


def imported(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY"))
    return ast.literal_eval(line.removeprefix("HEAVY "))


@pytest.mark.parametrize("args", [("--help",), ("list",), ("list", "--json"), ("search", "x")])
def test_reading_commands_import_no_model_client_tokenizer_or_agent(args, make_session):
    make_session(turns=1)
    assert imported(*args) == []


def test_info_show_and_log_import_nothing_heavy(make_session):
    sid = make_session(turns=1).id[:8]
    for command in ("info", "show", "log"):
        assert imported(command, sid) == [], command


def test_every_option_converts_without_pydantic():
    """Each command's options take the fast path (or are flags typer leaves alone)."""
    for name in COMMANDS:
        command = load(name)
        convert_fast(command.params)
        for param in command.params:
            kind = param.type_descriptor.annotation
            assert isinstance(param._runtime_param, PlainParam) or kind is bool, (name, param.name)


def test_fast_options_still_check_their_values(workspace):
    done = run_gitsessions("exec", "hi", "--max-steps", "0", "--workspace", str(workspace))
    assert done.returncode == 2
    assert "Invalid value for '--max-steps': Input should be greater than or equal to 1" in (
        done.stderr
    )
    done = run_gitsessions("search", "x", "--limit", "many")
    assert done.returncode == 2 and "Invalid value for '--limit'" in done.stderr
