"""Startup stays cheap (issue 10, Speed): a command imports only what it needs, and
options convert without typer's pydantic adapters. The timings themselves are measured
by bench/startup.py, never asserted here."""

import ast
import subprocess
import sys

import pytest

from gitsessions.cli.fastparams import PlainParam, WordsParam, convert_fast
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
            fast = (PlainParam, WordsParam)
            assert isinstance(param._runtime_param, fast) or kind is bool, (name, param.name)


def test_push_and_pull_import_nothing_heavy(make_session):
    """Their variadic words convert without pydantic, and the sync client is stock git."""
    sid = make_session(turns=1).id[:8]
    assert imported("push", sid) == []  # no remote yet: a usage error, after parsing
    assert imported("pull") == []


def test_fast_options_still_check_their_values(workspace):
    done = run_gitsessions("exec", "hi", "--max-steps", "0", "--workspace", str(workspace))
    assert done.returncode == 2
    assert "Invalid value for '--max-steps': Input should be greater than or equal to 1" in (
        done.stderr
    )
    done = run_gitsessions("search", "x", "--limit", "many")
    assert done.returncode == 2 and "Invalid value for '--limit'" in done.stderr


def test_exec_of_a_small_turn_never_loads_the_tokenizer(server, workspace):
    """Far under the budget by a bound that needs no tokenizer, exec does not load it (a
    few hundred milliseconds); the reply is the same."""
    from tests.conftest import exec_args

    assert "tiktoken" not in imported(*exec_args(server, workspace), "hi")
    assert len(server.requests) >= 1


def test_the_bound_is_never_under_the_estimate():
    from gitsessions.services.tools import BUILTIN_TOOLS
    from gitsessions.values.tokens import TokenCounter

    counter = TokenCounter()
    contexts = [
        [{"role": "system", "content": "s"}, {"role": "user", "content": "héllo wörld 🙂" * 50}],
        [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
         {"role": "tool", "tool_call_id": "c", "content": "\x1b[31m" + "x = 1\n" * 400}],
        [{"role": "user", "content": [{"type": "text", "text": "日本語のテキスト" * 30}]}],
    ]  # fmt: skip
    for messages in contexts:
        for tools in (None, BUILTIN_TOOLS):
            assert counter.bound(messages, tools) >= counter.estimate(messages, tools)
    counter.calibrate(100, 190)
    assert counter.bound(contexts[0]) >= counter.estimate(contexts[0])
