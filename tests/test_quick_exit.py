"""What leaving costs: a command's process ends without the interpreter's teardown
(`cli/lazy.leave`), its output whole, its exit code kept; closing a model client (a chat
left at its first prompt) waits for no client still being made."""

import json
import os
import subprocess
import sys
import threading

from gitsessions.services.model.model import ModelClient
from gitsessions.services.settings.config import resolve_model_settings
from tests.conftest import REPO


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script (`cli/entry.py`), stdout and stderr pipes."""
    return subprocess.run(
        [sys.executable, "-m", "gitsessions", *args], capture_output=True, text=True,
        cwd=REPO, timeout=120,
    )  # fmt: skip


def test_a_command_ends_without_the_teardown_its_output_whole(make_session):
    made = sorted(make_session(turns=1, title=f"session {n}").id for n in range(3))
    done = probe("list", "--json")  # into a pipe: held in stdout's buffer until the end
    assert done.returncode == 0, done.stderr
    assert sorted(row["id"] for row in json.loads(done.stdout)) == made


def test_an_error_and_a_usage_error_keep_their_exit_codes(make_session):
    make_session(turns=1)
    missing = probe("info", "0123abcd")
    assert missing.returncode == 1 and "error:" in missing.stderr, missing.stderr
    usage = probe("list", "--no-such-option")
    assert usage.returncode == 2 and "error:" in usage.stderr, usage.stderr


def test_output_no_reader_takes_ends_quietly_as_before(make_session):
    """stdout's reader gone: the command stops writing, quietly, and exits 0."""
    make_session(turns=1)
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as gone:
        done = subprocess.run(
            [sys.executable, "-m", "gitsessions", "list", "--json"], stdout=gone,
            stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_closing_a_model_client_waits_for_none_being_made():
    """The SDK's client is made in a thread while the caller works (its import about 0.6 s
    of CPU); `close` meanwhile returns at once, and the client is closed once made."""
    settings = resolve_model_settings(
        {"base_url": "http://127.0.0.1:9/v1"}, {"OPENAI_API_KEY": "sk-test"}, {}
    )
    client = ModelClient(settings)
    closed = threading.Event()
    with client._making:  # as while its maker imports the SDK
        threading.Thread(target=lambda: (client.close(), closed.set()), daemon=True).start()
        assert closed.wait(60)  # not behind the maker
    made, _limits = client._client()  # made now, or before `close`: closed either way
    assert made.is_closed()
