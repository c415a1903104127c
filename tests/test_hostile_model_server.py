"""A model server (or a proxy) that never stops talking: `gitsessions exec` ends each
case in one `error:` line, within its timeout, in bounded memory.

Each case is a raw-socket server on 127.0.0.1 (tests/hostile_servers.py) writing an
answer that never ends: an endless event stream, one endless line, `data:` lines with no
blank line between them, a 2 GB Content-Length, a chunk size of `fffff...`. `exec` runs
as the child of a fresh Python process that reports its children's peak RSS
(`ru_maxrss`), so no earlier child of the test process counts (a child started by the
test process itself would report the test process's own peak: Linux keeps the peak of
the memory a process had before its exec). The same streams are also read through
`ModelClient.complete(stream=True)`, measured the same way: exec asks without
streaming, chat streams. The caps themselves are services/model/reply_limits.py's.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile_servers import endless_answer

PEAK_RSS = 200 * 1024  # KiB
TIMEOUT = "8"

DELTA = {"index": 0, "delta": {"content": "y" * 60_000}, "finish_reason": None}
EVENT = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [DELTA]}  # fmt: skip
SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CHUNKED = JSON + b"Transfer-Encoding: chunked\r\n\r\n"
CASES = {
    "an endless event stream": (SSE, f"data: {json.dumps(EVENT)}\n\n".encode()),
    "one endless line": (SSE + b"data: ", b"y" * 65536),
    "data lines without a blank line": (SSE, b"data: " + b"y" * 1000 + b"\n"),
    "a 2 GB Content-Length": (JSON + b"Content-Length: 2000000000\r\n\r\n", b" " * 65536),
    "a chunk size of fffff...": (CHUNKED + b"f" * 16 + b"\r\n", b"f" * 65536),
    "an endless chunk size line": (CHUNKED, b"f" * 65536),
}

MEASURED = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": done.returncode, "stderr": done.stderr, "peak": peak}))
"""

STREAMED = """
import sys
sys.path.insert(0, sys.argv[1])
from gitsessions.services.settings.config import resolve_model_settings
from gitsessions.services.model.errors import ModelError
from gitsessions.services.model.model import ModelClient
settings = resolve_model_settings({"base_url": sys.argv[2], "timeout": 8}, {}, {})
try:
    with ModelClient(settings) as client:
        client.complete([{"role": "user", "content": "hi"}], stream=True)
except ModelError as error:
    print("error:", error, file=sys.stderr)
"""


def measured(*cmd: str, cwd: Path) -> dict:
    """Run `cmd` as the child of a fresh Python process: its exit code, stderr and
    peak RSS in KiB."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *cmd],
        capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.timeout(200)
@pytest.mark.parametrize("case", list(CASES))
def test_exec_ends_an_endless_answer_in_one_error_line_in_bounded_memory(
    case: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITSESSIONS_TIMEOUT", TIMEOUT)
    head, piece = CASES[case]
    ws = tmp_path / "p"
    ws.mkdir()
    with endless_answer(head, piece) as base:
        run = measured(
            sys.executable, "-m", "gitsessions", "exec", "hi", "--base-url", f"{base}/v1",
            "--workspace", str(ws), cwd=REPO,
        )  # fmt: skip
    assert run["code"] == 1, run["stderr"]
    assert "Traceback" not in run["stderr"]
    [line] = errors(run["stderr"])
    assert base in line, line
    assert run["peak"] < PEAK_RSS, f"{run['peak'] // 1024} MB"


@pytest.mark.timeout(200)
@pytest.mark.parametrize("case", list(CASES)[:3])
def test_a_streamed_request_ends_an_endless_stream_in_bounded_memory(case: str) -> None:
    head, piece = CASES[case]
    with endless_answer(head, piece) as base:
        run = measured(sys.executable, "-c", STREAMED, str(REPO), f"{base}/v1", cwd=REPO)
    assert run["code"] == 0, run["stderr"]
    [line] = errors(run["stderr"])
    assert "Traceback" not in run["stderr"]
    assert "over 1 MiB" in line or "over 32 MiB" in line, line
    assert run["peak"] < PEAK_RSS, f"{run['peak'] // 1024} MB"
