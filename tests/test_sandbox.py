"""What run_shell may see and reach: the secret-stripping environment policy, the [shell]
settings, and the Landlock `workspace-write` sandbox with a real bash on this kernel
(writes inside the workspace and the temp dir allowed, elsewhere refused; TCP refused
unless the network is allowed), through the registry and through `gitsessions exec`."""

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitsessions.services.settings.config import resolve_shell_settings
from gitsessions.services.settings.config_file import ConfigError
from gitsessions.services.tools import ToolRegistry, approve_all, create_registry
from gitsessions.services.tools import sandbox as sandbox_module
from gitsessions.services.tools.sandbox import (
    Sandbox,
    SandboxUnavailable,
    landlock_abi,
    workspace_write,
)
from gitsessions.services.tools.shell import LAUNCHER
from gitsessions.services.tools.shell_env import shell_environment
from tests.conftest import run_gitsessions
from tests.tool_helpers import ENV, call

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(
    ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}; the sandbox tests need 4 (TCP rules)"
)


# -- the environment policy ------------------------------------------------------------


def test_secret_looking_variables_are_dropped_whatever_their_case() -> None:
    env = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "AWS_SECRET_ACCESS_KEY": "s1",
        "GH_TOKEN": "s2",
        "db_password": "s3",
        "GOOGLE_APPLICATION_CREDENTIALS": "s4",
        "Stripe_Api_Key": "s5",
        "OPENAI_API_KEY": "s6",
        "GITSESSIONS_HOME": "/store",
    }
    assert shell_environment(env) == {"PATH": "/bin", "LANG": "C.UTF-8"}


def test_env_keep_passes_names_and_globs_but_never_our_own() -> None:
    env = {"GH_TOKEN": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_SESSION_TOKEN": "c", "MY_KEY": "d"}
    env |= {"OPENAI_API_KEY": "model", "GITSESSIONS_TOKEN": "own"}
    kept = shell_environment(env, ["GH_TOKEN", "AWS_*", "OPENAI_API_KEY", "GITSESSIONS_*"])
    assert kept == {"GH_TOKEN": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_SESSION_TOKEN": "c"}
    assert shell_environment({"gh_token": "x"}, ["GH_TOKEN"]) == {}  # names match exactly


def test_the_shell_sees_only_the_filtered_environment(workspace: Path) -> None:
    env = shell_environment({**ENV, "DEPLOY_TOKEN": "hidden", "CI_TOKEN": "shown"}, ["CI_*"])
    registry = create_registry(workspace, env, approve=approve_all)
    outcome = call(registry, "run_shell", command='echo "[${DEPLOY_TOKEN-unset}] [$CI_TOKEN]"')
    assert outcome.content.splitlines()[1] == "[unset] [shown]"


# -- [shell] settings ------------------------------------------------------------------


def test_shell_settings_defaults_config_and_flags() -> None:
    default = resolve_shell_settings({}, {})
    assert (default.sandbox, default.sandbox_network, default.env_keep) == ("none", False, ())
    config = {"shell": {"sandbox": "workspace-write", "env_keep": ["GH_*"]}}
    from_config = resolve_shell_settings({"sandbox": None}, config, config_source="cfg")
    assert from_config.sandbox == "workspace-write" and from_config.env_keep == ("GH_*",)
    assert from_config.sources["sandbox"] == "cfg [shell]"
    flagged = resolve_shell_settings({"sandbox": "none", "sandbox_network": True}, config)
    assert flagged.sandbox == "none" and flagged.sandbox_network is True
    assert flagged.sources["sandbox"] == "flag --sandbox"


@pytest.mark.parametrize(
    ("flags", "table", "says"),
    [
        ({"sandbox": "read-only"}, {}, "must be one of: none, workspace-write"),
        ({}, {"sandbox_netwrok": True}, "unknown key 'sandbox_netwrok'"),
        ({}, {"sandbox_network": "yes"}, "must be true or false"),
        ({}, {"env_keep": "GH_TOKEN"}, "must be a list of variable names or globs"),
    ],
)
def test_bad_shell_settings_are_one_line_errors(
    flags: dict[str, object], table: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        resolve_shell_settings(flags, {"shell": table})


def test_a_kernel_without_landlock_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # the one part that cannot run for real here: this kernel has Landlock
    monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 0)
    with pytest.raises(SandboxUnavailable, match="needs Linux Landlock, which this kernel"):
        sandbox_module.workspace_write("/")
    monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 3)
    with pytest.raises(SandboxUnavailable, match=r"ABI 3\) cannot block network"):
        sandbox_module.workspace_write("/")
    assert sandbox_module.workspace_write("/", network=True).network is True


# -- the sandbox, for real -------------------------------------------------------------


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("ws", "tmp", "outside")}
    for path in made.values():
        path.mkdir()
    return made


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (the backlog does)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def sandboxed(places: dict[str, Path], network: bool = False) -> ToolRegistry:
    box = workspace_write(places["ws"], network=network, temp_dir=str(places["tmp"]))
    return create_registry(places["ws"], ENV, approve=approve_all, sandbox=box)


def connect(port: int) -> str:
    return f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo net=open || echo net=refused"


@needs_landlock
def test_writes_inside_allowed_outside_refused(places: dict[str, Path]) -> None:
    outside = places["outside"]
    command = (
        "echo in > inside.txt && mkdir -p sub/dir && mv inside.txt sub/dir/ && echo ws=ok\n"
        f"echo t > {places['tmp']}/t.txt && echo tmp=ok\n"
        "echo x > /dev/null && echo devnull=ok\n"
        f"echo out > {outside}/x.txt || echo outside=refused\n"
        f"mkdir {outside}/d || echo mkdir=refused\n"
        f"ln -s /etc/passwd {outside}/link || echo symlink=refused\n"
        f"cat {outside}/../ws/sub/dir/inside.txt\n"
    )
    outcome = call(sandboxed(places), "run_shell", command=command)
    lines = outcome.content.splitlines()
    assert lines[0] == "exit code: 0"
    for expected in ("ws=ok", "tmp=ok", "devnull=ok", "outside=refused", "mkdir=refused"):
        assert expected in lines
    assert "symlink=refused" in lines and "in" in lines  # reads work anywhere
    assert "Permission denied" in outcome.content
    assert (places["ws"] / "sub" / "dir" / "inside.txt").read_text() == "in\n"
    assert (places["tmp"] / "t.txt").exists()
    assert list(outside.iterdir()) == []


@needs_landlock
def test_children_and_detached_processes_stay_confined(places: dict[str, Path]) -> None:
    target = places["outside"] / "late.txt"
    command = f"setsid -w bash -c 'echo late > {target}; echo $? > status'; cat status"
    outcome = call(sandboxed(places), "run_shell", command=command)
    assert outcome.content.splitlines()[-1] == "1"  # the redirection failed
    assert not target.exists()


@needs_landlock
def test_network_refused_unless_allowed(places: dict[str, Path], listener: int) -> None:
    unsandboxed = create_registry(places["ws"], ENV, approve=approve_all)
    assert "net=open" in call(unsandboxed, "run_shell", command=connect(listener)).content
    blocked = call(sandboxed(places), "run_shell", command=connect(listener))
    assert blocked.content.splitlines()[1:] == ["net=refused"]
    allowed = call(sandboxed(places, network=True), "run_shell", command=connect(listener))
    assert allowed.content.splitlines()[1:] == ["net=open"]


@needs_landlock
def test_a_sandbox_that_cannot_be_applied_runs_nothing(places: dict[str, Path]) -> None:
    box = Sandbox(writable=(str(places["ws"] / "missing"),))
    registry = create_registry(places["ws"], ENV, approve=approve_all, sandbox=box)
    outcome = call(registry, "run_shell", command="touch ran")
    assert not outcome.ok
    assert outcome.content.startswith("error: the command was not run: the sandbox failed: ")
    assert not (places["ws"] / "ran").exists()


def test_a_ruleset_the_kernel_refuses_runs_nothing(tmp_path: Path) -> None:
    status_read, status_write = os.pipe()
    not_a_ruleset, other_end = os.pipe()
    launcher = [sys.executable, "-E", "-P", "-S", str(LAUNCHER), "--status-fd", str(status_write)]
    options = ["--parent", str(os.getpid()), "--ruleset-fd", str(not_a_ruleset)]
    done = subprocess.run(
        [*launcher, *options, "--", "bash", "-c", "touch ran"],
        cwd=tmp_path,
        pass_fds=(status_write, not_a_ruleset),
    )
    for fd in (status_write, not_a_ruleset, other_end):
        os.close(fd)
    with os.fdopen(status_read, "rb") as status:
        assert status.read().decode().startswith("error landlock_restrict_self: ")
    assert done.returncode == 126
    assert not (tmp_path / "ran").exists()


# -- end to end: gitsessions exec --sandbox ----------------------------------------------


def exec_shell(server, places: dict[str, Path], command: str, *flags: str, env=None):
    server.reply(
        content=None,
        tool_calls=[{"name": "run_shell", "arguments": {"command": command}}],
    )
    server.reply(content="done")
    server.reply(content="a title")
    # the sandbox's temporary folder is `tempfile.gettempdir()`: what TMPDIR said when a
    # process first asked (kept for its life), so set here as a process would find it
    kept, tempfile.tempdir = tempfile.tempdir, str(places["tmp"])
    try:
        done = run_gitsessions(
            "exec", "--base-url", server.base_url, "--model", "fake-model",
            "--workspace", str(places["ws"]), "--auto-approve", *flags, "go",
            env={**os.environ, "TMPDIR": str(places["tmp"]), **(env or {})},
        )  # fmt: skip
    finally:
        tempfile.tempdir = kept
    assert done.returncode == 0, done.stderr
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    return done, result["content"]


@needs_landlock
def test_exec_with_the_sandbox_from_config_and_flags(server, places, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[shell]\nsandbox = "workspace-write"\nenv_keep = ["GH_*"]\n', encoding="utf-8"
    )
    port = server.port
    command = (
        f"echo in > inside.txt; echo out > {places['outside']}/x.txt || echo outside=refused\n"
        f'echo "[${{MY_API_TOKEN-unset}}] [${{GH_TOKEN-unset}}]"\n{connect(port)}'
    )
    secrets = {"MY_API_TOKEN": "hidden", "GH_TOKEN": "kept"}
    done, content = exec_shell(server, places, command, env=secrets)
    assert "sandbox: run_shell writes only in" in done.stderr and "network blocked" in done.stderr
    assert content.splitlines()[0] == "exit code: 0"
    assert "outside=refused" in content and "net=refused" in content
    assert "[unset] [kept]" in content
    assert (places["ws"] / "inside.txt").exists()
    assert not (places["outside"] / "x.txt").exists()

    server.requests.clear()
    _, content = exec_shell(server, places, connect(port), "--sandbox-network")
    assert "net=open" in content

    server.requests.clear()
    _, content = exec_shell(
        server, places, f"echo out > {places['outside']}/x.txt", "--sandbox", "none"
    )
    assert (places["outside"] / "x.txt").read_text() == "out\n"


def test_exec_with_an_unknown_sandbox_mode_is_a_usage_error(tmp_path: Path) -> None:
    done = run_gitsessions("exec", "--workspace", str(tmp_path), "--sandbox", "strict", "hi")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: sandbox 'strict' from flag --sandbox must be one of: none, workspace-write"
    ]


# -- the project's .git: read-only unless allowed ------------------------------------------


def git_in(path: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def a_repository(ws: Path) -> None:
    git_in(ws, "init", "-q", "-b", "main")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("v1\n")
    (ws / "README").write_text("readme\n")
    git_in(ws, "-c", "user.name=T", "-c", "user.email=t@example.com", "add", "-A")
    git_in(ws, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "one")


def git_state(ws: Path) -> dict[str, bytes | list[str]]:
    dot = ws / ".git"
    return {
        "config": (dot / "config").read_bytes(),
        "hooks": sorted(os.listdir(dot / "hooks")),
        "entries": sorted(os.listdir(dot)),
    }


@needs_landlock
@pytest.mark.parametrize("temp", ["beside", "around"])  # the temp dir beside or above .git
def test_the_projects_git_is_read_only_in_the_sandbox(places: dict[str, Path], temp: str) -> None:
    ws, outside = places["ws"], places["outside"]
    a_repository(ws)
    before = git_state(ws)
    temp_dir = places["tmp"] if temp == "beside" else ws.parent
    box = workspace_write(ws, temp_dir=str(temp_dir))
    assert str(ws / ".git") in box.read_only
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    command = (
        f'git config core.fsmonitor "touch {outside}/fsmonitor; false" || echo config=refused\n'
        "echo 'touch x' > .git/hooks/pre-commit || echo hook=refused\n"
        "echo '[core]' >> .git/config || echo append=refused\n"
        "mv .git .git-old 2>/dev/null || echo move=refused\n"
        "rm -rf .git 2>/dev/null; test -d .git/objects && echo remove=refused\n"
        "echo v2 > src/app.py && mkdir -p src/new && echo n > src/new/n.py && echo src=ok\n"
        "echo more >> README && echo readme=ok\n"
    )
    outcome = call(registry, "run_shell", command=command)
    lines = outcome.content.splitlines()
    for expected in ("config=refused", "hook=refused", "append=refused", "move=refused",
                     "remove=refused", "src=ok", "readme=ok"):  # fmt: skip
        assert expected in lines, outcome.content
    assert git_state(ws) == before
    assert (ws / "src" / "new" / "n.py").read_text() == "n\n"
    # made outside the sandbox (as the file tools do), a top-level file is writable at once
    # (top-level creation by the shell itself: tests/test_sandbox_git.py)
    (ws / "made.txt").write_text("")
    again = call(registry, "run_shell", command="echo x > made.txt && echo made=ok")
    assert "made=ok" in again.content.splitlines()


@needs_landlock
def test_sandbox_allow_git_lets_the_shell_write_git(places: dict[str, Path]) -> None:
    ws = places["ws"]
    a_repository(ws)
    box = workspace_write(ws, temp_dir=str(places["tmp"]), allow_git=True)
    assert box.read_only == ()
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    command = "git config gitsessions.test yes && touch top.txt && echo ok"
    assert "ok" in call(registry, "run_shell", command=command).content.splitlines()
    assert git_in(ws, "config", "gitsessions.test").strip() == "yes"


def test_a_linked_worktrees_git_dirs_are_protected(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    a_repository(main)
    linked = tmp_path / "linked"
    git_in(main, "worktree", "add", "-q", "-b", "side", str(linked))
    paths = sandbox_module.git_paths(linked / "src")
    assert str(linked / ".git") in paths  # the `.git` file itself
    assert str(main / ".git" / "worktrees" / "linked") in paths
    assert str(main / ".git") in paths
    assert sandbox_module.git_paths(tmp_path) == ()


@needs_landlock
def test_exec_a_planted_fsmonitor_never_runs(server, places, home: Path) -> None:
    """The issue's attack: the sandboxed shell sets core.fsmonitor; the next code snapshot
    (gitsessions' own, unsandboxed git) would run it. Refused by the sandbox; and even
    with --sandbox-allow-git, gitsessions' git runs no fsmonitor."""
    ws, outside = places["ws"], places["outside"]
    a_repository(ws)
    marker = outside / "fsmonitor-ran"
    plant = f'git config core.fsmonitor "touch {marker}; false"; echo v2 > src/app.py'
    done, content = exec_shell(server, places, plant, "--sandbox", "workspace-write")
    assert f"{ws / '.git'} read-only" in done.stderr
    assert "could not lock config file" in content or "Permission denied" in content
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert not marker.exists()
    server.requests.clear()
    exec_shell(server, places, plant, "--sandbox", "workspace-write", "--sandbox-allow-git")
    assert "fsmonitor" in (ws / ".git" / "config").read_text()
    assert not marker.exists()  # the snapshot after it ran no fsmonitor
    snapshot = git_in(ws, "for-each-ref", "--format=%(objectname)", "refs/gitsessions/")
    assert snapshot.strip() and git_in(ws, "show", f"{snapshot.split()[0]}:src/app.py") == "v2\n"


def test_the_file_tools_do_not_write_the_projects_git_in_the_sandbox(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a_repository(ws)
    before = git_state(ws)
    box = Sandbox(writable=(str(ws),), read_only=sandbox_module.git_paths(ws))
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    planted = "[core]\n\tfsmonitor = touch ran\n"
    for path in (".git/config", ".git/hooks/pre-commit", f"{ws}/.git/info/attributes"):
        outcome = call(registry, "write_file", path=path, content=planted)
        assert not outcome.ok and "the sandbox keeps read-only" in outcome.content, outcome
    edited = call(registry, "edit_file", path=".git/HEAD", old="main", new="evil")
    assert not edited.ok and "read-only" in edited.content
    assert git_state(ws) == before
    assert (ws / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert call(registry, "write_file", path="top.txt", content="ok\n").ok
    free = create_registry(ws, ENV, approve=approve_all, sandbox=Sandbox(writable=(str(ws),)))
    assert call(free, "write_file", path=".git/description", content="allowed\n").ok
