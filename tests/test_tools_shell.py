"""run_shell with a real bash: the `exit code:` first line, the caller's environment,
closed stdin, truncation of huge output, and killing every process the command started
(its process group and what left it with setsid, nohup or a double fork) on timeout and
when the command exits. No timing assertions: a process is checked gone through its pid
file and by scanning /proc for a marker in its argv."""

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from gitsessions.services.tools import ToolRegistry, approve_all, create_registry
from gitsessions.services.tools.shell import _Capture
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


def marked(marker: str) -> list[int]:
    """Live processes whose argv[0] is `marker` (a zombie's cmdline is empty)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.split(b"\0")[0] == marker.encode():
                found.append(int(entry.name))
    return found


def kill_marked(marker: str) -> None:
    """Leave nothing behind when a check failed."""
    for pid in marked(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def escapees(marker: str) -> str:
    """Three processes that leave the command's process group, each with `marker` as its
    argv[0] and its pid in a file; the command returns once all three run."""
    sleeper = f"exec -a {marker} sleep 300"
    return (
        f"setsid bash -c 'echo $$ > setsid.pid; {sleeper}' > /dev/null 2>&1 &\n"
        f"nohup bash -c 'echo $$ > nohup.pid; {sleeper}' > /dev/null 2>&1 &\n"
        f"(setsid bash -c 'echo $$ > fork.pid; {sleeper}' > /dev/null 2>&1 & ) \n"
        "for f in setsid.pid nohup.pid fork.pid; do\n"
        "  until [ -s $f ] && grep -q "
        f"{marker} /proc/$(cat $f)/cmdline 2>/dev/null; do sleep 0.01; done\n"
        "done\n"
        "echo started\n"
    )


def test_timeout_kills_everything_the_command_started(workspace: Path, tools: ToolRegistry) -> None:
    marker = f"gs-mark-{uuid.uuid4().hex}"
    command = escapees(marker) + "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; sleep 30"
    outcome = call(tools, "run_shell", command=command, timeout=2)
    assert not outcome.ok
    assert outcome.exit_code is None
    assert outcome.content.splitlines()[0] == "exit code: timeout after 2s"
    assert "started" in outcome.content
    assert "every process it started were killed" in outcome.content
    try:
        assert marked(marker) == []
    finally:
        kill_marked(marker)
    for name in ("bg.pid", "sh.pid", "setsid.pid", "nohup.pid", "fork.pid"):
        assert is_gone(int((workspace / name).read_text())), name


def test_background_process_holding_output_is_killed(workspace: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="sleep 30 & echo $! > bg.pid; echo done")
    assert outcome.exit_code == 0
    assert outcome.content.splitlines() == [
        "exit code: 0",
        "done",
        "[1 background process was still running when the command exited, and killed]",
    ]
    assert is_gone(int((workspace / "bg.pid").read_text()))


def test_setsid_and_nohup_descendants_are_killed_when_the_command_exits(
    workspace: Path, tools: ToolRegistry
) -> None:
    marker = f"gs-mark-{uuid.uuid4().hex}"
    outcome = call(tools, "run_shell", command=escapees(marker))
    assert outcome.exit_code == 0
    assert outcome.content.splitlines()[1] == "started"
    assert "background processes were still running" in outcome.content
    try:
        assert marked(marker) == []
    finally:
        kill_marked(marker)
    for name in ("setsid.pid", "nohup.pid", "fork.pid"):
        assert is_gone(int((workspace / name).read_text())), name


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_cancelling_the_call_kills_everything(workspace: Path, tools: ToolRegistry) -> None:
    marker = f"gs-mark-{uuid.uuid4().hex}"
    command = escapees(marker) + "echo $$ > sh.pid; touch ready; sleep 300"

    def interrupt() -> None:  # Ctrl-C, once everything runs
        wait_for(workspace / "ready")
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        call(tools, "run_shell", command=command)
    try:
        assert marked(marker) == []
    finally:
        kill_marked(marker)
    assert is_gone(int((workspace / "sh.pid").read_text()))


def test_killing_the_agent_kills_everything(workspace: Path) -> None:
    marker = f"gs-mark-{uuid.uuid4().hex}"
    agent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from gitsessions.services.tools.shell import run_shell\n"
            "run_shell(sys.argv[1], cwd=sys.argv[2], env={'PATH': sys.argv[3]}, "
            "output_limit=4000, timeout=600)\n",
            escapees(marker) + "touch ready; sleep 300",
            str(workspace),
            ENV["PATH"],
        ]
    )
    try:
        wait_for(workspace / "ready")
        assert len(marked(marker)) == 3
        agent.kill()  # no cleanup code runs in the agent: the kernel tells the launcher
        agent.wait()
        deadline = time.monotonic() + 30
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked(marker) == []
    finally:
        agent.kill()
        kill_marked(marker)


def test_a_command_killed_by_a_signal_reports_it(tools: ToolRegistry) -> None:
    outcome = call(tools, "run_shell", command="echo before; kill -9 $$")
    assert outcome.ok
    assert outcome.exit_code == -9
    assert outcome.content.splitlines() == ["exit code: -9", "before"]


def test_exit_codes_pass_through_the_launcher(tools: ToolRegistry) -> None:
    assert call(tools, "run_shell", command="exit 255").exit_code == 255
    missing = call(tools, "run_shell", command="no-such-command-here")
    assert missing.exit_code == 127
    assert "not found" in missing.content


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


def test_a_running_command_tells_its_last_output_line_as_it_comes(tools: ToolRegistry) -> None:
    seen: list[str] = []
    started: list[bool] = []
    command = "echo one; printf '10%%\\r50%%\\r'; printf '\\n  \\n'; echo done"
    outcome = tools.dispatch(
        {
            "id": "c1",
            "function": {"name": "run_shell", "arguments": json.dumps({"command": command})},
        },
        running=lambda: started.append(not seen),
        output=seen.append,
    )
    assert outcome.ok and started == [True]  # told it runs before any output
    assert seen and seen[-1] == "done" and set(seen) <= {"one", "10%", "50%", "done"}
    assert all(a != b for a, b in itertools.pairwise(seen))  # only changes


def test_the_last_line_told_is_the_newest_non_blank_one_whatever_the_chunks() -> None:
    seen: list[str] = []
    capture = _Capture(1000, seen.append)
    for chunk in (b"one\ntw", b"o\n", b"\n  \n", b"10%\r", b"50%\r", b"\xc3", b"\xa9t\xc3\xa9"):
        capture.add(chunk)
    assert seen == ["tw", "two", "10%", "50%", "\u00e9t\u00e9"]  # the newest line, as it grows
    assert capture.text() == "one\ntwo\n\n  \n10%\r50%\r\u00e9t\u00e9"


def test_a_tool_that_does_not_stream_is_told_running_only(tools: ToolRegistry) -> None:
    seen: list[str] = []
    started: list[bool] = []
    outcome = tools.dispatch(
        {"id": "c1", "function": {"name": "list_files", "arguments": "{}"}},
        running=lambda: started.append(True),
        output=seen.append,
    )
    assert outcome.ok and started == [True] and seen == []
