"""A short bench/crash.py: real `gitsessions` processes killed at chosen syscalls (strace
fault injection) or at random times, then checked with stock git and the next commands
(run in this process: the killed command is the process under test).

After every kill: each session that existed before still exists, at its old head or a
descendant of it; `git fsck --strict` is clean; `list` and a `rename` work without manual
cleanup. The ref-packing cases use a store with more than 256 loose session refs, so the
killed command packs refs (inside `gc`, `delete`, and the autopack after a plain commit).
"""

import importlib.util
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from gitsessions.store.maintenance import AUTOPACK_REFS
from tests.conftest import REPO, run_gitsessions
from tests.fake_openai import FakeOpenAI


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_crash", REPO / "bench" / "crash.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_crash"] = module
    spec.loader.exec_module(module)
    return module


crash = _bench()
needs_strace = pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
_process = crash.gitsessions


def _in_process(
    case: Path, args: list[str], prefix: list[str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """bench/crash.py's `gitsessions`: the command under strace (to be counted or killed)
    a process, as there; the next commands after the kill (`list`, `rename`) and the
    base's export in this process, as the CLI runs them (`run_gitsessions`)."""
    if prefix:
        return _process(case, args, prefix, timeout)
    return run_gitsessions(*args, env=crash.child_env(case), cwd=case)


@pytest.fixture(scope="module", autouse=True)
def next_commands_in_process() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(crash, "gitsessions", _in_process)
        yield


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.responder = lambda request: "ok"
        yield fake


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAI):
    """A prepared home with more loose session refs than the autopack threshold."""
    base = crash.prepare(
        tmp_path_factory.mktemp("many") / "base", AUTOPACK_REFS + 4, model_server.base_url
    )
    assert len(list((base.root / "home/store.git/refs/heads/sessions").iterdir())) > AUTOPACK_REFS
    return base


@pytest.fixture(scope="module")
def few(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAI):
    """A prepared home with five sessions: no ref packing."""
    return crash.prepare(tmp_path_factory.mktemp("few") / "base", 5, model_server.base_url)


def inject(base, tmp_path: Path, command: str, syscall: str, n: int) -> dict:
    point = crash.Point(command, syscall, n, "kill")
    return crash.run_point(base, tmp_path, point, 0)


def count(base, tmp_path: Path, command: str, syscall: str) -> int:
    """The invocations of `syscall` in a normal run of `command` (counted by strace)."""
    case = crash.copy_base(base, tmp_path / "count")
    counts, _seconds, code = crash.count_syscalls(case, crash.command_argv(command, case, base))
    shutil.rmtree(case, ignore_errors=True)
    assert code == 0
    return counts.get(syscall, 0)


def middle(base, tmp_path: Path, command: str, syscall: str) -> int:
    """The middle invocation of `syscall` in a normal run of `command`."""
    return max(1, count(base, tmp_path, command, syscall) // 2)


def assert_survived(result: dict) -> None:
    assert result["ok"], crash.describe(result)
    assert result["lost_count"] == 0


# -- the known loss: packing loose refs removes them before packed-refs is written ----------


@needs_strace
def test_gc_killed_while_packing_refs_loses_no_session(many, tmp_path):
    n = middle(many, tmp_path, "gc", "unlink")  # gc unlinks every loose ref as it packs them
    result = inject(many, tmp_path, "gc", "unlink", n)
    assert result["killed"]
    assert_survived(result)


@needs_strace
def test_delete_killed_while_packing_refs_loses_no_session(many, tmp_path):
    result = inject(many, tmp_path, "delete", "unlink", middle(many, tmp_path, "delete", "unlink"))
    assert result["killed"]
    assert_survived(result)


@needs_strace
def test_a_commit_past_the_ref_threshold_killed_loses_no_session(many, tmp_path):
    """A plain commit with more than 256 loose refs hands ref packing to a background
    process (it used to pack inline and lose every loose ref when killed there)."""
    for n in sorted({1, middle(many, tmp_path, "pin", "rename")}):  # a pin renames a few files
        result = inject(many, tmp_path / f"at-{n}", "pin", "rename", n)
        assert result["killed"]
        assert_survived(result)


# -- paths that hold today ----------------------------------------------------------------------


@needs_strace
def test_pin_killed_at_each_rename_loses_nothing(few, tmp_path):
    """The object writes (the pack, then its index) and the compare-and-swap of the
    ref: killed at each rename in turn."""
    renames = count(few, tmp_path, "pin", "rename")
    assert renames >= 3  # the pack, its index, the branch
    for n in range(1, renames + 1):
        result = inject(few, tmp_path / f"at-{n}", "pin", "rename", n)
        assert result["killed"], n
        assert_survived(result)


@needs_strace
def test_delete_killed_while_purging_loses_only_the_deleted_session(few, tmp_path):
    result = inject(few, tmp_path, "delete", "unlink", 3)
    assert result["killed"]
    assert_survived(result)  # the deleted session may be gone; no other


def test_random_kills_of_mixed_commands_lose_nothing(few, tmp_path):
    """Each command is timed whole first, then killed at a random point of that time (a
    fixed 0.5-2 s outlived both commands, so nothing was killed)."""
    rng = random.Random(7)
    for index, name in enumerate(["fork", "delete"]):
        whole = crash.run_kill(few, tmp_path, (name, 120.0), 2 * index)
        assert not whole["killed"] and whole["finished_s"] is not None
        assert_survived(whole)
        delay = rng.uniform(0.5, 0.95) * whole["finished_s"]
        result = crash.run_kill(few, tmp_path, (name, delay), 2 * index + 1)
        assert_survived(result)
