"""The shell sandbox policy (`--sandbox workspace-write`) and whether this kernel can keep it.

Invariants:
- A `Sandbox` is built only after `landlock_abi()` showed the kernel enforces it (ABI 4
  when the network must be blocked), else `SandboxUnavailable`: never silently absent.
- The ruleset (landlockpy; enforced by launcher.py): reads everywhere; writes under the
  workspace, the temp dir and a few devices; no TCP bind or connect unless `network`.
- The project's git directory stays read-only unless `allow_git` (a writable `.git/config`
  or hook would run a command outside the sandbox): `ruleset_fd(whole=True)` grants roots
  whole for the launcher's read-only bind mount; the fallback `ruleset_fd()` (no
  namespace) gives each entry of a root holding a protected path a rule of its own,
  except that path, listed afresh per command (no links, no new top-level entries).
  A root inside a protected path gets no rule at all.
"""

import os
import tempfile
from typing import NamedTuple

from gitsessions.values.errors import GitsessionsError

NETWORK_ABI = 4  # LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP, Linux 6.7
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
FILE_WRITES = ("WRITE_FILE", "TRUNCATE")
DIR_WRITES = (
    "REMOVE_DIR", "REMOVE_FILE", "MAKE_CHAR", "MAKE_DIR", "MAKE_REG", "MAKE_SOCK",
    "MAKE_FIFO", "MAKE_BLOCK", "MAKE_SYM", "REFER",
)  # fmt: skip
# Reads and execution are not handled by the ruleset, so they stay allowed everywhere.


class SandboxUnavailable(GitsessionsError):
    """The sandbox asked for cannot be enforced by this kernel."""

    exit_code = 2


class Sandbox(NamedTuple):
    """Where a sandboxed shell may write, whether it may use TCP, and what under
    `writable` stays read-only (the project's git directory)."""

    writable: tuple[str, ...]
    network: bool = False
    read_only: tuple[str, ...] = ()

    def ruleset_fd(self, *, whole: bool = False) -> int:
        """A new Landlock ruleset fd (the caller closes it) allowing writes only under
        `writable` and, unless `network`, no TCP bind or connect; none in `read_only`
        unless `whole` (then the writable roots are granted whole, and a mount must keep
        `read_only` read-only). Raises OSError when a path is gone or the kernel refuses
        a rule."""
        import landlockpy  # here, not at the top: only a sandboxed shell pays its import
        from landlockpy import AccessFS, AccessNet

        file_writes = AccessFS.NONE
        for name in FILE_WRITES:
            file_writes |= AccessFS[name]
        writes = file_writes
        for name in DIR_WRITES:
            writes |= AccessFS[name]
        blocked = AccessNet.NONE if self.network else AccessNet.BIND_TCP | AccessNet.CONNECT_TCP
        if blocked and landlock_abi() < NETWORK_ABI:  # best effort would drop it silently
            raise OSError(f"this kernel's Landlock cannot block TCP (needs ABI {NETWORK_ABI})")
        with landlockpy.Ruleset(handled_fs=writes, handled_net=blocked) as ruleset:
            for path in self.writable:
                for granted, is_dir in _around(path, self.read_only, whole=whole):
                    ruleset.allow_path(granted, writes if is_dir else file_writes)
            return os.dup(ruleset.fileno())


def _around(
    root: str, read_only: tuple[str, ...], *, whole: bool = False
) -> list[tuple[str, bool]]:
    """`(path, is a directory)` rules that grant `root` but none of `read_only`: nothing
    when it is one or lies in one; `root` itself when it holds none of them (or
    `whole`); else each entry of it but the protected ones and symbolic links,
    descending into the directories that lead to one."""
    inside = [p for p in read_only if _under(p, root)]
    if any(_under(root, p) for p in read_only):
        return []
    if not inside or whole:
        return [(root, os.path.isdir(root))]
    rules: list[tuple[str, bool]] = []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.path in inside or entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and any(_under(p, entry.path) for p in inside):
                    pending.append(entry.path)
                elif is_dir or entry.is_file(follow_symlinks=False):
                    rules.append((entry.path, is_dir))
    return rules


def _under(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or beneath it (both resolved)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def git_paths(workspace: str | os.PathLike[str]) -> tuple[str, ...]:
    """What git finds from `workspace` and the sandbox keeps read-only, resolved: the
    `.git` entry of the workspace or its nearest parent that has one, the git directory
    it is or names (`gitdir:` of a worktree's `.git` file) and that one's common
    directory (`commondir`: a linked worktree's repository). () when there is none."""
    start = os.path.realpath(workspace)
    for directory in (start, *_parents(start)):
        entry = os.path.join(directory, ".git")
        if os.path.isdir(entry):
            git_dir = entry
        elif os.path.isfile(entry):
            try:
                with open(entry, encoding="utf-8", errors="surrogateescape") as file:
                    line = file.readline(4096).strip()
            except OSError:
                continue
            if not line.startswith("gitdir:"):
                continue
            git_dir = os.path.join(directory, line[len("gitdir:") :].strip())
        else:
            continue
        found = [entry, os.path.realpath(entry), os.path.realpath(git_dir)]
        try:
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as file:
                common = file.readline(4096).strip()
            if common:
                found.append(os.path.realpath(os.path.join(git_dir, common)))
        except (OSError, UnicodeDecodeError):
            pass
        return tuple(dict.fromkeys(found))
    return ()


def _parents(path: str) -> list[str]:
    parents = []
    while (parent := os.path.dirname(path)) != path:
        parents.append(parent)
        path = parent
    return parents


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    try:
        import landlockpy  # here: only a sandboxed shell pays its import

        return landlockpy.abi_version()
    except (ImportError, OSError):  # LandlockError is an OSError
        return 0


def workspace_write(
    workspace: str | os.PathLike[str],
    *,
    network: bool = False,
    temp_dir: str | None = None,
    allow_git: bool = False,
) -> Sandbox:
    """The `workspace-write` policy for `workspace`, checked against this kernel; the
    project's git directory read-only unless `allow_git`.

    `temp_dir` defaults to `tempfile.gettempdir()` (the agent's TMPDIR, which the shell
    inherits). Raises SandboxUnavailable when the kernel cannot enforce it.
    """
    abi = landlock_abi()
    if abi < 1:
        raise SandboxUnavailable(
            "--sandbox workspace-write needs Linux Landlock, which this kernel lacks or has "
            "disabled (Linux >= 5.13 with landlock in the lsm= boot list); "
            "run with --sandbox none to go without it"
        )
    if not network and abi < NETWORK_ABI:
        raise SandboxUnavailable(
            f"this kernel's Landlock (ABI {abi}) cannot block network access, which needs "
            f"ABI {NETWORK_ABI} (Linux >= 6.7); add --sandbox-network to allow the network"
        )

    roots = [os.path.realpath(workspace), os.path.realpath(temp_dir or tempfile.gettempdir())]
    roots += [device for device in DEVICES if os.path.exists(device)]
    read_only = () if allow_git else git_paths(workspace)
    return Sandbox(writable=tuple(dict.fromkeys(roots)), network=network, read_only=read_only)
