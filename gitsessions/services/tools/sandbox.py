"""The shell sandbox policy (`--sandbox workspace-write`) and whether this kernel can keep it.

Invariant: a `Sandbox` is only built after `landlock_abi()` showed the kernel can enforce
it, so a sandbox the user asked for is never silently absent: without Landlock (or, when
the network must be blocked, without Landlock ABI 4) `workspace_write` raises
`SandboxUnavailable` with one line saying so. `ruleset_fd` builds the Landlock ruleset
here, with landlockpy; the shell launcher (launcher.py) enforces it on itself before the
command starts: reads are allowed everywhere; writes only under the workspace, the temp
dir and a few harmless devices; no TCP bind or connect unless `network` (UDP and Unix
sockets stay open).
"""

import os
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
    """Where a sandboxed shell may write, and whether it may use TCP."""

    writable: tuple[str, ...]
    network: bool = False

    def ruleset_fd(self) -> int:
        """A new Landlock ruleset fd (the caller closes it) allowing writes only under
        `writable` and, unless `network`, no TCP bind or connect. Raises OSError when a
        path is gone or the kernel refuses a rule."""
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
                ruleset.allow_path(path, writes if os.path.isdir(path) else file_writes)
            return os.dup(ruleset.fileno())


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    try:
        import landlockpy

        return landlockpy.abi_version()
    except (ImportError, OSError):  # LandlockError is an OSError
        return 0


def workspace_write(
    workspace: str | os.PathLike[str], *, network: bool = False, temp_dir: str | None = None
) -> Sandbox:
    """The `workspace-write` policy for `workspace`, checked against this kernel.

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
    import tempfile  # here: a shell without a sandbox (the default) never needs it

    roots = [os.path.realpath(workspace), os.path.realpath(temp_dir or tempfile.gettempdir())]
    roots += [device for device in DEVICES if os.path.exists(device)]
    return Sandbox(writable=tuple(dict.fromkeys(roots)), network=network)
