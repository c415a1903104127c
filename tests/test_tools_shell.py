"""run_shell with a real bash: the `exit code:` first line, the caller's environment,
closed stdin, truncation of huge output, and killing the whole process group on timeout
or when background processes outlive the command. No timing assertions: a process is
checked gone through its pid file."""

import os
import re
import time
from pathlib import Path

import pytest

from gitsessions.services.tools import ToolRegistry, approve_all, create_registry
from tests.tool_helpers import ENV, call


def is_gone(pid: int) -> bool:
    """Whether `pid` no longer runs. A killed orphan is re-parented to PID 1; where PID 1
    does not reap (some sandboxes), it stays a zombie, which is dead but still answers
    os.kill(pid, 0), so the zombie state counts as gone too."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def eventually_gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while not is_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_first_line_is_the_exit_code(tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="echo hello")
    assert outcome.ok
    assert outcome.exit_code == 0
    assert outcome.content == "exit code: 0\nhello\n"


def test_nonzero_exit_merges_stderr(tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="echo out; echo oops >&2; exit 7")
    assert outcome.ok  # the tool worked; the command failed
    assert outcome.exit_code == 7
    assert outcome.content.splitlines() == ["exit code: 7", "out", "oops"]


def test_no_output_says_so(tools: ToolRegistry) -> None:
    assert call(tools, "run_shell", command="true").content == "exit code: 0\n(no output)\n"


def test_runs_in_the_workspace(workspace: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="pwd; touch made-here")
    assert outcome.content.splitlines()[1] == os.path.realpath(workspace)
    assert (workspace / "made-here").exists()


def test_environment_is_exactly_the_callers(workspace: Path) -> None:
    registry = create_registry(workspace, {**ENV, "GS_MARK": "from-caller"}, approve=approve_all)
    outcome = call(registry, "run_shell", command='echo "$GS_MARK [${HOME-unset}]"')
    assert outcome.content.splitlines()[1] == "from-caller [unset]"


def test_stdin_is_closed(tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="cat; read line; echo read=$?", timeout=30)
    assert outcome.exit_code == 0
    assert outcome.content.splitlines()[1:] == ["read=1"]


def test_timeout_kills_the_process_group(workspace: Path, tools: ToolRegistry) -> None:
    command = "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 30"
    outcome = call(tools, "run_shell", command=command, timeout=1)
    assert not outcome.ok
    assert outcome.exit_code is None
    assert outcome.content.splitlines()[0] == "exit code: timeout after 1s"
    assert "started" in outcome.content
    assert "process group was killed" in outcome.content
    for name in ("bg.pid", "sh.pid"):
        pid = int((workspace / name).read_text())
        assert eventually_gone(pid), name


def test_background_process_holding_output_is_killed(workspace: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="sleep 30 & echo $! > bg.pid; echo done")
    assert outcome.exit_code == 0
    assert outcome.content.splitlines()[:2] == ["exit code: 0", "done"]
    assert "background processes" in outcome.content
    assert eventually_gone(int((workspace / "bg.pid").read_text()))


def test_detached_background_process_survives(workspace: Path, tools: ToolRegistry) -> None:
    command = "sleep 30 > /dev/null 2>&1 & echo $! > bg.pid; echo done"
    outcome = call(tools, "run_shell", command=command)
    pid = int((workspace / "bg.pid").read_text())
    try:
        assert outcome.content == "exit code: 0\ndone\n"
        assert not is_gone(pid)
    finally:
        os.kill(pid, 9)


def _cut_count(content: str) -> int:
    match = re.search(r"\[\.\.\. ([\d,]+) characters cut; use read_file", content)
    assert match, content[-300:]
    return int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("size", [100_000, 3_000_000])
def test_long_output_is_truncated_with_the_count(tools: ToolRegistry, size: int) -> None:
    outcome = call(tools, "run_shell", command=f"head -c {size} /dev/zero | tr '\\0' a")
    assert outcome.content.startswith("exit code: 0\n")
    assert len(outcome.content) <= 16_000
    kept = re.sub(r"\[\.\.\. .*? \.\.\.\]", "", outcome.content).count("a")
    assert kept > 10_000
    assert kept + _cut_count(outcome.content) == size


def test_timeout_must_be_in_range(tools: ToolRegistry) -> None:
    too_long = call(tools, "run_shell", command="true", timeout=601)
    zero = call(tools, "run_shell", command="true", timeout=0)
    assert not too_long.ok and "at most 600" in too_long.content
    assert not zero.ok and "at least 1" in zero.content
