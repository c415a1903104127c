"""Shared fixtures. Every test gets its own GITSESSIONS_HOME, HOME and XDG dirs under
tmp_path, and no GIT_* variables, so nothing reaches the user's state or the network."""

import gc
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gitsessions.cli.app import app
from gitsessions.services.tools import ToolRegistry
from gitsessions.store.background import wait_for_maintenance
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parent.parent

# Every commit fsyncs its pack, index and refs, as it must: on a disk, the fsyncs were
# half the time of a store-heavy test. So the tests' directories go on a tmpfs where one
# has room (fsync is still called, and costs nothing there); elsewhere, or with
# --basetemp or PYTEST_DEBUG_TEMPROOT given, where pytest puts them.
RAM_DISK = Path("/dev/shm")
RAM_DISK_ROOM = 2 << 30  # bytes free: a whole run writes a few hundred MB


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    try:
        room = os.statvfs(RAM_DISK)
    except OSError:
        return
    if room.f_bavail * room.f_frsize >= RAM_DISK_ROOM and os.access(RAM_DISK, os.W_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(RAM_DISK)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = isolate(tmp_path, monkeypatch)
    yield home
    if (home / "store.git" / "HEAD").exists():  # whatever the test did, the store is valid
        wait_for_maintenance(home / "store.git")
        fsck(home)


def isolate(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment every test runs in, its home and user folders under `root`: also
    for a module's shared setup (`made_once`), which runs before any test's."""
    home = root / "gshome"
    for name in list(os.environ):
        if name.startswith("GIT_") or name.startswith("GITSESSIONS_") or name.startswith("OPENAI_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GITSESSIONS_HOME", str(home))
    monkeypatch.setenv("HOME", str(root / "userhome"))
    monkeypatch.setenv("XDG_DATA_HOME", str(root / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # A fresh exec asks for the list summary after it prints its reply: by default in a
    # process of its own after exec exits, here by exec itself, so the scripted server's
    # replies keep their order (tests/test_exec_summary.py runs the default).
    monkeypatch.setenv("GITSESSIONS_EXEC_SUMMARY", "wait")
    # Many tests start gitsessions processes: with bytecode caching off (as on some CI
    # machines) each one compiled openai, rich and dulwich from source again (~2 s).
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    return home


def made_once(root: Path, make: Callable[[Path], Any]) -> Any:
    """`make(home)` run once in an environment of its own under `root` (as a test's, so
    nothing reaches the user's state), its store then quiet and valid: for a module's
    shared setup, which each test copies (`copy_home`) instead of making it again."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        home = isolate(root, monkeypatch)
        made = make(home)
        if (home / "store.git" / "HEAD").exists():
            wait_for_maintenance(home / "store.git")
            fsck(home)
    return made


def copy_home(template: Path, home: Path) -> None:
    """A test's home as a copy of a module's shared one (`made_once`)."""
    shutil.copytree(template, home, symlinks=True, dirs_exist_ok=True)


def put_back(saved: Path, where: Path) -> None:
    """`where` as it was when `saved` was copied from it: for shared setup that holds its
    own absolute paths (clones, worktrees, homes naming them), which a copy elsewhere
    would break; each test gets it back at the same place (tests run one at a time)."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(saved, where, symlinks=True)


@pytest.fixture
def home(isolated_env: Path) -> Path:
    return isolated_env


@pytest.fixture
def store(home: Path) -> Iterator[SessionStore]:
    s = SessionStore(home)
    yield s
    s.close()


class Cli:
    """Run the real typer app in-process; stdout and stderr kept apart."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None, code: int = 0) -> Any:
        result = self.runner.invoke(app, list(args), input=input, catch_exceptions=False)
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)


@pytest.fixture
def cli() -> Cli:
    return Cli()


def git(store_path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Stock git against the store."""
    return subprocess.run(
        ["git", "--git-dir", str(store_path), *args], capture_output=True, text=True, check=check
    )


def fsck(home: Path) -> None:
    # a background repack removes loose objects as it packs them: fsck after it, not during
    wait_for_maintenance(home / "store.git")
    result = git(home / "store.git", "fsck", "--strict", "--no-progress", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in result.stderr.lower(), result.stderr


def loosen(store_git: Path) -> None:
    """Make every packed object loose (stock `git unpack-objects`) and remove the packs:
    where the tests that damage one loose object start from (a commit writes a pack)."""
    wait_for_maintenance(store_git)
    for index in sorted((store_git / "objects" / "pack").glob("*.idx")):
        pack = index.with_suffix(".pack")
        data = pack.read_bytes()
        pack.unlink()
        index.unlink()
        subprocess.run(
            ["git", "--git-dir", str(store_git), "unpack-objects", "-q"], input=data, check=True
        )


def add_session(
    store: SessionStore, turns: int = 2, title: str = "a session", tag: str = ""
) -> Head:
    """A session with `turns` simple user/assistant turns, committed one by one."""
    sid = new_id()
    system = {"role": "system", "content": "You are a helpful coding agent."}
    head = store.create(
        new_header(sid, now_iso(), title=title), Change(context=[system], append=[system])
    )
    return add_turns(store, head, [system], 0, turns, tag)


def add_turns(
    store: SessionStore, head: Head, context: list[dict[str, Any]], start: int, end: int,
    tag: str = "",
) -> Head:  # fmt: skip
    """Turns `start` to `end` (not included) committed on `head`, whose context is
    `context`. The context each commit gives is kept here and read back once at the end
    (reading it back each turn made a long session's setup quadratic)."""
    for n in range(start, end):
        msgs = [
            {"role": "user", "content": f"question {n} {tag}"},
            {"role": "assistant", "content": f"answer {n} {tag}"},
        ]
        context = context + msgs
        head = store.commit(
            head,
            Change(context=context, append=msgs),
            event="turn",
            subject=f"turn {n + 1}: question {n}",
        )
    assert store.read(head, "context") == context  # as given: nothing redacted
    return head


@pytest.fixture
def make_session(store: SessionStore) -> Callable[..., Head]:
    """`add_session` in the test's store."""

    def make(turns: int = 2, title: str = "a session", tag: str = "") -> Head:
        return add_session(store, turns, title, tag)

    return make


# What the CLI's consoles read once, when first made (cli/state.py): the first command
# run in this process fixes them for the rest.
TERMINAL_VARIABLES = ("COLUMNS", "LINES", "TERM", "NO_COLOR", "FORCE_COLOR")


def run_gitsessions(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess[str]:
    """The console script's entry point (`cli.app.main`, what `python -m gitsessions`
    runs) in this process, as the process would run it: its own argv, environment
    (`env` replaces it all, as a child's would), working directory, stdin, stdout and
    stderr for the call; its exit code caught. A bug's exception is raised here (a
    process would print its traceback). `timeout` is pytest-timeout's here. Where the
    process itself is the subject (signals, start-up, a pipe's framing, a limit on the
    process), `run_gitsessions_process` starts one."""
    from gitsessions.cli.app import main
    from gitsessions.values.tokens import default_counter

    assert threading.current_thread() is threading.main_thread(), "one CLI at a time"
    helping = "--help" in args or "-h" in args
    assert helping or _command(args) != "chat", "chat reads the terminal: run it as a process"
    shaping = [k for k in TERMINAL_VARIABLES if env and env.get(k) != os.environ.get(k)]
    assert not shaping, f"consoles are made once a process: {shaping} need run_gitsessions_process"
    default_counter.cache_clear()  # the process-wide counter: calibrated by each turn
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_hook = sys.unraisablehook
    code: object = 0
    try:
        if env:  # as the process's: an empty one is the test's
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.argv = ["gitsessions", *args]
        with CliRunner().isolation(input=input) as (stdout, stderr, _):
            try:
                main()
            except SystemExit as stop:
                code = stop.code
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            out, err = stdout.getvalue(), stderr.getvalue()
    finally:
        sys.argv = saved_argv
        sys.unraisablehook = saved_hook
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        gc.unfreeze()  # `cli.lazy.started` freezes what a process keeps for its life
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    argv = ["gitsessions", *args]
    return subprocess.CompletedProcess(argv, returncode, out.decode(), err.decode())


def _command(args: tuple[str, ...]) -> str | None:
    """The command word of a command line (after `--home DIR`, if given first)."""
    words = iter(args)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def run_gitsessions_process(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess[str]:
    """The console script in a real subprocess: for the tests whose subject is the
    process (its start-up, signals, exit, a pipe's framing, its limits)."""
    return subprocess.run(
        [sys.executable, "-m", "gitsessions", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        input=input,
        timeout=timeout,
        cwd=cwd,
    )


def exec_args(server: FakeOpenAI, workspace: Path) -> list[str]:
    """`exec` against the fake model server, working in `workspace`."""
    return ["exec", "--base-url", server.base_url, "--model", "fake-model", "--workspace",
            str(workspace)]  # fmt: skip


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1, scripted by the test; strict:
    any request whose roles do not alternate gets HTTP 400 (see tests/fake_openai.py)."""
    with FakeOpenAI(strict=True) as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project directory for tool tests."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def tools(workspace: Path) -> ToolRegistry:
    """The workspace tools over `workspace`, every call approved."""
    from gitsessions.services.tools import approve_all, create_registry
    from tests.tool_helpers import ENV

    return create_registry(workspace, ENV, approve=approve_all)
