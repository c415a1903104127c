"""The project's git directory under `--sandbox workspace-write`, with a real bash on this
kernel: read-only through a mount namespace the launcher makes (so the workspace's top
level takes new entries, a virtualenv, a symbolic link written through), for the `.git`
of a repository and for a linked worktree's git directories; writable with
`allow_git`; and, where the kernel gives the launcher no namespace, the per-entry
Landlock fallback with its note, said once a session.

The fallback is forced for real, not mocked: the helper runs in a user namespace whose
`user.max_user_namespaces` is 0 (a limit the namespace's owner may set for what is
nested in it) and without CAP_SYS_ADMIN in its bounding set, so the launcher's
`unshare(CLONE_NEWNS)` fails with EPERM and `unshare(CLONE_NEWUSER | CLONE_NEWNS)` with
ENOSPC, as on a kernel or policy that refuses user namespaces. Where this kernel has no
user namespaces at all, the fallback happens by itself and that test runs without it."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.services.tools import approve_all, create_registry
from gitsessions.services.tools.sandbox import landlock_abi, workspace_write
from gitsessions.services.tools.shell import FALLBACK_PREFIX
from tests.conftest import REPO
from tests.test_sandbox import a_repository, connect, git_in, git_state
from tests.test_tools_shell import is_gone
from tests.tool_helpers import ENV, call


def _works(*argv: str) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


ABI = landlock_abi()
USERNS = _works(  # what the launcher does, without the unshare program
    sys.executable, "-c",
    "import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare(0x10000000 | 0x20000) != 0)",
)  # fmt: skip
TOOLS = bool(shutil.which("unshare") and shutil.which("setpriv"))  # util-linux
needs_landlock = pytest.mark.skipif(
    ABI < 4, reason=f"this kernel's Landlock ABI is {ABI}; the sandbox tests need 4 (TCP rules)"
)
needs_userns = pytest.mark.skipif(
    not USERNS, reason="no user namespaces here: the launcher falls back to per-entry rules"
)

ATTACKS = (
    'git config core.fsmonitor "touch $OUT/fsmonitor; false" 2>/dev/null || echo config=refused\n'
    "echo 'touch x' > .git/hooks/pre-commit || echo hook=refused\n"
    "echo '[core]' >> .git/config || echo append=refused\n"
    "mv .git .git-old 2>/dev/null || echo move=refused\n"
    "rm -rf .git 2>/dev/null; test -d .git/objects && echo remove=refused\n"
)
UNDO = (  # what would take the read-only mount away, or reach .git past it
    "umount .git 2>/dev/null || echo umount=refused\n"
    "mount -o remount,bind,rw .git 2>/dev/null || echo remount=refused\n"
    "unshare -Urm sh -c 'umount .git && echo x >> .git/config' 2>/dev/null"
    " || echo nested=refused\n"
    "outer=$(awk '{print $4}' /proc/$PPID/stat)\n"  # run_shell's process, outside the namespace
    'echo x >> "/proc/$outer/root$PWD/.git/config" 2>/dev/null || echo proc-root=refused\n'
)


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("ws", "tmp", "outside")}
    for path in made.values():
        path.mkdir()
    a_repository(made["ws"])
    return made


@needs_landlock
@needs_userns
@pytest.mark.parametrize("temp", ["beside", "around"])  # the temp dir beside or above .git
def test_the_top_level_takes_new_entries_while_git_stays_read_only(
    places: dict[str, Path], temp: str
) -> None:
    ws = places["ws"]
    before = git_state(ws)
    temp_dir = places["tmp"] if temp == "beside" else ws.parent
    box = workspace_write(ws, temp_dir=str(temp_dir))
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    command = (
        f"export OUT={places['outside']}\n{ATTACKS}{UNDO}"
        "touch new.txt && mkdir build && mv new.txt build/ && echo top=ok\n"
        "ln -s src link && echo w > link/through.txt && echo link=ok\n"
        f"{sys.executable} -m venv --without-pip .venv && echo venv=ok\n"
        "mkdir .pytest_cache && rm -r .pytest_cache && echo cache=ok\n"
        "id -u\n"
    )
    outcome = call(registry, "run_shell", command=command)
    lines = outcome.content.splitlines()
    expected = ["config=refused", "hook=refused", "append=refused", "move=refused"]
    expected += ["remove=refused", "umount=refused", "remount=refused", "nested=refused"]
    expected += ["proc-root=refused", "top=ok", "link=ok", "venv=ok", "cache=ok"]
    for word in expected:
        assert word in lines, outcome.content
    assert lines[-1] == str(os.geteuid())  # the same numeric uid inside
    assert "sandbox:" not in outcome.content  # no fallback, no note
    assert git_state(ws) == before
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    made = ws / "build" / "new.txt"
    assert made.exists() and made.stat().st_uid == os.geteuid()
    assert (ws / "src" / "through.txt").read_text() == "w\n"
    assert (ws / ".venv" / "pyvenv.cfg").exists()
    assert not (places["outside"] / "fsmonitor").exists()
    assert f" {ws / '.git'} " not in Path("/proc/self/mountinfo").read_text()  # none leaked


@needs_landlock
@needs_userns
def test_a_linked_worktrees_git_dirs_are_read_only_too(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    a_repository(main)
    linked = tmp_path / "linked"
    git_in(main, "worktree", "add", "-q", "-b", "side", str(linked))
    before = git_state(main), (linked / ".git").read_bytes()
    # the temp dir above both: granted whole, so only the mounts keep main/.git read-only
    box = workspace_write(linked, temp_dir=str(tmp_path))
    registry = create_registry(linked, ENV, approve=approve_all, sandbox=box)
    gitdir = main / ".git" / "worktrees" / "linked"
    command = (
        "git config core.fsmonitor x 2>/dev/null || echo config=refused\n"
        f"echo x > {gitdir}/HEAD || echo gitdir=refused\n"
        f"echo x > {main}/.git/hooks/pre-commit || echo hook=refused\n"
        "echo 'gitdir: /elsewhere' > .git || echo file=refused\n"
        "rm -f .git 2>/dev/null; test -f .git && echo unlink=refused\n"
        f"touch new.txt {main}/beside.txt && echo top=ok\n"
    )
    outcome = call(registry, "run_shell", command=command)
    lines = outcome.content.splitlines()
    for word in ("config=refused", "gitdir=refused", "hook=refused", "file=refused",
                 "unlink=refused", "top=ok"):  # fmt: skip
        assert word in lines, outcome.content
    assert (git_state(main), (linked / ".git").read_bytes()) == before
    assert (gitdir / "HEAD").read_text() == "ref: refs/heads/side\n"
    assert (linked / "new.txt").exists() and (main / "beside.txt").exists()


@needs_landlock
def test_allow_git_lets_the_shell_change_and_remove_git(places: dict[str, Path]) -> None:
    ws = places["ws"]
    box = workspace_write(ws, temp_dir=str(places["tmp"]), allow_git=True)
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    command = (
        "git config core.fsmonitor x && echo config=ok\n"
        "echo 'touch x' > .git/hooks/pre-commit && echo hook=ok\n"
        "touch top.txt && rm -rf .git && echo remove=ok\n"
    )
    lines = call(registry, "run_shell", command=command).content.splitlines()
    assert lines[1:] == ["config=ok", "hook=ok", "remove=ok"]
    assert not (ws / ".git").exists() and (ws / "top.txt").exists()


HELPER = """
import json, sys
from gitsessions.services.tools import approve_all, create_registry
from gitsessions.services.tools.sandbox import workspace_write
from tests.tool_helpers import ENV, call
ws, tmp = sys.argv[1], sys.argv[2]
box = workspace_write(ws, temp_dir=tmp)
registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
def run(command):  # "TIMEOUT=N command" runs with a timeout of N seconds
    if command.startswith("TIMEOUT="):
        seconds, command = command[len("TIMEOUT="):].split(" ", 1)
        return call(registry, "run_shell", command=command, timeout=int(seconds)).content
    return call(registry, "run_shell", command=command).content
print(json.dumps([run(c) for c in sys.argv[3:]]))
"""
NO_NAMESPACES = (  # see the module docstring
    "unshare", "--user", "--map-root-user", "sh", "-c",
    'echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set -sys_admin "$@"',
    "sh",
)  # fmt: skip


def in_helper(prefix: tuple[str, ...], ws: Path, tmp: Path, *commands: str) -> list[str]:
    """run_shell's results for `commands`, one registry (a session), in a process that
    `prefix` starts."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", HELPER, str(ws), str(tmp), *commands],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def without_namespaces(ws: Path, tmp: Path, *commands: str) -> list[str]:
    """The same in a process whose launcher gets no namespace."""
    if USERNS and not TOOLS:
        pytest.skip("unshare and setpriv (util-linux) are needed to take namespaces away")
    return in_helper(NO_NAMESPACES if USERNS else (), ws, tmp, *commands)


@needs_landlock
def test_without_namespaces_per_entry_rules_keep_git_and_say_so_once(
    places: dict[str, Path],
) -> None:
    ws = places["ws"]
    before = git_state(ws)
    first, second = without_namespaces(
        ws, places["tmp"],
        f"export OUT={places['outside']}\n{ATTACKS}"
        "touch top.txt 2>/dev/null || echo top=refused\n"
        "echo v2 > src/app.py && mkdir src/new && echo src=ok",
        "echo more >> README && echo readme=ok",
    )  # fmt: skip
    lines = first.splitlines()
    for word in ("config=refused", "hook=refused", "append=refused", "move=refused",
                 "remove=refused", "top=refused", "src=ok"):  # fmt: skip
        assert word in lines, first
    note = lines[-1]
    assert note.startswith(FALLBACK_PREFIX) and "workspace's top level" in note, first
    assert "--sandbox-allow-git" in note
    if USERNS:  # forced as the module docstring says
        assert "unshare: No space left on device" in note
    assert second.splitlines() == ["exit code: 0", "readme=ok"]  # said once a session
    assert git_state(ws) == before
    assert not (ws / "top.txt").exists() and (ws / "src" / "new").is_dir()


@needs_landlock
def test_the_fallback_note_comes_with_a_command_that_timed_out(places: dict[str, Path]) -> None:
    first, second = without_namespaces(
        places["ws"], places["tmp"], "TIMEOUT=1 sleep 60", "touch top 2>/dev/null || echo no"
    )
    assert first.startswith("exit code: timeout after 1s\n(no output)\n[timed out")
    assert first.splitlines()[-1].startswith(FALLBACK_PREFIX), first
    assert second.splitlines() == ["exit code: 0", "no"]


@needs_landlock
@needs_userns
def test_a_symlinked_git_gets_the_per_entry_rules(places: dict[str, Path]) -> None:
    """A mount would land on the link's target, and the link itself could be replaced by
    a planted `.git`; so the launcher keeps the per-entry rules for it."""
    ws, outside = places["ws"], places["outside"]
    (ws / ".git").rename(outside / "real.git")
    (ws / ".git").symlink_to(outside / "real.git")
    box = workspace_write(ws, temp_dir=str(places["tmp"]))
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    command = (
        "rm .git 2>/dev/null || echo unlink=refused\ntouch top 2>/dev/null || echo top=refused"
    )
    lines = call(registry, "run_shell", command=command).content.splitlines()
    assert lines[1:3] == ["unlink=refused", "top=refused"]
    assert lines[3].startswith(f"{FALLBACK_PREFIX}{ws / '.git'} is a symbolic link)")
    assert (ws / ".git").is_symlink()


@needs_landlock
@needs_userns
def test_exit_codes_signals_cleanup_and_tcp_hold_in_the_namespace(
    places: dict[str, Path],
) -> None:
    ws = places["ws"]
    box = workspace_write(ws, temp_dir=str(places["tmp"]))
    registry = create_registry(ws, ENV, approve=approve_all, sandbox=box)
    assert call(registry, "run_shell", command="exit 7").exit_code == 7
    assert call(registry, "run_shell", command="kill -KILL $$").exit_code == -9
    detached = call(registry, "run_shell", command="setsid sleep 300 & echo $! > pid")
    assert "1 background process was still running" in detached.content
    pid = int((ws / "pid").read_text())
    assert is_gone(pid)
    slow = call(registry, "run_shell", command="sleep 300 & echo $! > pid2; wait", timeout=1)
    assert slow.content.startswith("exit code: timeout after 1s") and not slow.ok
    assert is_gone(int((ws / "pid2").read_text()))
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        blocked = call(registry, "run_shell", command=connect(port))
        assert blocked.content.splitlines()[1:] == ["net=refused"]
        open_box = workspace_write(ws, temp_dir=str(places["tmp"]), network=True)
        opened = create_registry(ws, ENV, approve=approve_all, sandbox=open_box)
        assert call(opened, "run_shell", command=connect(port)).content.splitlines()[1:] == [
            "net=open"
        ]


@needs_landlock
@needs_userns
def test_git_is_read_only_by_a_second_mount_of_its_filesystem_too(
    places: dict[str, Path],
) -> None:
    """The workspace mounted a second time (a bind mount, a volume shown twice): the
    rule granting the workspace reaches `.git` by that name too, so the launcher makes
    it read-only there as well."""
    if not TOOLS:
        pytest.skip("unshare (util-linux) is needed to mount the workspace a second time")
    ws, alias = places["ws"], places["outside"]
    before = git_state(ws)
    bind = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    twice = ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", bind, "sh")
    twice += (str(ws), str(alias))
    (result,) = in_helper(
        twice, ws, places["tmp"],
        f"test -f {alias}/.git/config && echo seen\n"
        f"echo x >> {alias}/.git/config || echo alias=refused\n"
        f"echo x > {alias}/.git/hooks/pre-commit || echo hook=refused\n"
        f"touch {alias}/top.txt && echo top=ok",
    )  # fmt: skip
    lines = result.splitlines()
    assert [line for line in lines if "=" in line or line == "seen"] == [
        "seen",
        "alias=refused",
        "hook=refused",
        "top=ok",
    ], result
    assert git_state(ws) == before


@needs_landlock
@needs_userns
def test_the_user_namespace_keeps_the_uid_and_gid(places: dict[str, Path]) -> None:
    """The user-namespace path, which a user always takes; run as root, the helper drops
    CAP_SYS_ADMIN from its bounding set so that the launcher takes it too."""
    ws = places["ws"]
    as_user = ("setpriv", "--bounding-set", "-sys_admin") if os.geteuid() == 0 else ()
    if as_user and not TOOLS:
        pytest.skip("setpriv is needed to run the launcher as root without CAP_SYS_ADMIN")
    (result,) = in_helper(
        as_user, ws, places["tmp"],
        "cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g\n"
        "echo x >> .git/config || echo git=refused\n"
        "mkdir build && touch build/made && echo top=ok",
    )  # fmt: skip
    uid, gid = os.geteuid(), os.getegid()
    lines = result.splitlines()
    assert [line.split() for line in lines[1:3]] == [
        [str(uid), str(uid), "1"],
        [str(gid), str(gid), "1"],
    ]
    assert lines[3:5] == [str(uid), str(gid)]
    assert "git=refused" in lines and "top=ok" in lines, result
    assert (ws / "build" / "made").stat().st_uid == uid
