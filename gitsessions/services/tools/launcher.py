"""The process run_shell starts: it runs the command and leaves no process behind. Run by
path with the standard library only (`python -E -P -S launcher.py --status-fd N --parent
PID [--ruleset-fd N] [--read-only PATH... --fallback-ruleset-fd N] -- bash -c CMD`).

Invariants:
- When it exits every process the command started is dead, however detached: it is a
  child subreaper and SIGKILLs its children round after round; SIGTERM (run_shell's
  timeout or cancel, or PR_SET_PDEATHSIG) does the same at once.
- With `--ruleset-fd` the Landlock ruleset (sandbox.py) is enforced on itself before the
  command starts; one that cannot be enforced means nothing runs.
- With `--read-only PATH` (the project's git directory) PATH, and every other name the
  mount table gives it, is bind-mounted read-only in a private mount namespace (a user
  namespace too unless root); Landlock then forbids mounting, so it cannot be undone.
  When that fails (no user namespaces, an AppArmor or seccomp policy, a symbolic link to
  protect) the fallback ruleset is enforced (`fallback REASON` said first): PATH stays
  unwritable either way; only the command's top-level creations are lost.
- Last, one status line: `exit N killed K` or `error MESSAGE`.
"""

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SYS_LANDLOCK_RESTRICT_SELF = 446  # the same number on every Linux architecture
SYS_MOUNT_SETATTR = 442  # likewise (Linux 5.12; Landlock needs 5.13)
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
EXIT_NOT_STARTED = 126
EXIT_NOT_FOUND = 127


class Stop(Exception):
    """SIGTERM or SIGHUP arrived: stop the command and everything it started."""


def _stop(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    raise Stop(signum)


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl({option}): {os.strerror(error)}")


def children(parent: int) -> dict[int, bool]:
    """The processes whose parent is `parent`, found through /proc/PID/stat, and whether
    each is a zombie (dead, waiting to be reaped)."""
    found: dict[int, bool] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == parent:
            found[int(entry.name)] = fields[0] == b"Z"
    return found


def reap_nohang() -> None:
    """Collect every child that has already exited."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all() -> int:
    """SIGKILL our children, round after round, until none is left; return how many were
    killed. Only children are signalled: their pids cannot be reused by an unrelated process
    until we reap them, and when one dies its own children become ours (we are their
    subreaper) for the next round. A child we may not signal (a setuid program) is left
    alone rather than waited for."""
    killed: set[int] = set()
    me = os.getpid()
    while found := children(me):
        progress = any(found.values())  # a zombie to reap
        for pid, dead in found.items():
            if dead:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.add(pid)
            progress = True
        if not progress:
            break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(-1, 0)  # a child is dead or was just killed: returns soon
        reap_nohang()
    return len(killed)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _unescape(field: bytes) -> str:
    r"""A mountinfo path: space, tab, newline and backslash come as \040 \011 \012 \134."""
    for code in (b"\\040", b"\\011", b"\\012", b"\\134"):
        field = field.replace(code, bytes([int(code[1:], 8)]))
    return os.fsdecode(field)


def _beneath(path: str, top: str) -> str | None:
    """`path` relative to `top` ("" for `top` itself), None when it is not beneath."""
    if path == top or top == "/":
        return path[len(top) :].lstrip("/")
    return path[len(top) + 1 :] if path.startswith(top + "/") else None


def aliases(paths: list[str]) -> list[str]:
    """`paths` and every other place this mount table shows them at: a filesystem (or a
    folder of it) mounted twice reaches a protected path by a second name, which a
    bind mount on the first does not cover, while the Landlock rule on a folder above
    it does. A name counts only when it leads to the very same file (device, inode)."""
    mounts = []  # (device, root in the filesystem, mount point) in mount order
    with open("/proc/self/mountinfo", "rb") as table:
        for line in table:
            fields = line.split()
            mounts.append((fields[2], _unescape(fields[3]), _unescape(fields[4])))
    found = dict.fromkeys(paths)
    for path in paths:
        here = None  # the last mount whose point is path or above it: the one it is on
        for mount in mounts:
            if _beneath(path, mount[2]) is not None and (
                here is None or len(mount[2]) >= len(here[2])
            ):
                here = mount
        if here is None:
            continue
        inner = os.path.join(here[1], _beneath(path, here[2]) or "")
        identity = os.stat(path, follow_symlinks=False)
        for device, root, point in mounts:
            rest = _beneath(inner.rstrip("/") or "/", root) if device == here[0] else None
            if rest is None:
                continue
            other = os.path.join(point, rest).rstrip("/") or "/"
            try:
                seen = os.stat(other, follow_symlinks=False)
            except OSError:
                continue  # covered by another mount, or gone
            if (seen.st_dev, seen.st_ino) == (identity.st_dev, identity.st_ino):
                found.setdefault(other)
    return list(found)


def read_only(paths: list[str]) -> None:
    """Make `paths` read-only for this process and all it will start, in a new mount
    namespace (and, unless root, a new user namespace mapping our uid and gid to
    themselves); OSError when the kernel refuses a step (the caller falls back)."""
    for path in paths:
        if os.path.islink(path):  # a mount would land on its target; the link could go
            raise OSError(f"{path} is a symbolic link")
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0 or libc.unshare(CLONE_NEWNS) != 0:  # root without CAP_SYS_ADMIN: as a user
        _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
        _write("/proc/self/setgroups", "deny")  # required before gid_map without CAP_SETGID
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _check(libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "mount")
    attr = (ctypes.c_uint64 * 4)(MOUNT_ATTR_RDONLY, 0, 0, 0)  # struct mount_attr
    for path in aliases(paths):
        raw = os.fsencode(path)
        flags = ctypes.c_ulong(MS_BIND | MS_REC)
        _check(libc.mount(raw, raw, None, flags, None), f"bind mount of {path}")
        result = libc.syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), raw,
            ctypes.c_uint(AT_RECURSIVE), attr, ctypes.c_size_t(ctypes.sizeof(attr)),
        )  # fmt: skip
        _check(result, f"mount_setattr of {path}")


def restrict(ruleset_fd: int) -> None:
    """Enforce on this process (and so on all it starts) the Landlock ruleset run_shell
    built (sandbox.py); no_new_privs first, as the kernel requires without CAP_SYS_ADMIN."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"landlock_restrict_self: {os.strerror(error)}")
    os.close(ruleset_fd)


def exit_code(status: int) -> int:
    """A wait status as run_shell reports it: the exit code, or minus the signal."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def start(argv: list[str]) -> int:
    """Fork and exec `argv` with default signal handling; return its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(number, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except OSError as error:
        os.write(2, f"{argv[0]}: {error.strerror}\n".encode())
        os._exit(EXIT_NOT_FOUND if isinstance(error, FileNotFoundError) else EXIT_NOT_STARTED)
    os._exit(EXIT_NOT_STARTED)  # not reached: execvp returns only by raising


class Options:
    """The parsed command line. (Not a dataclass: this process runs for every shell
    command, with -S, where `import dataclasses` costs 20 ms or more.)"""

    def __init__(self) -> None:
        self.status_fd = -1
        self.parent = -1
        self.ruleset_fd = -1
        self.fallback_ruleset_fd = -1
        self.read_only: list[str] = []
        self.argv: list[str] = []


def parse(arguments: list[str]) -> Options:
    """Options from the command line; ValueError for anything else."""
    options = Options()
    rest = iter(arguments)
    for word in rest:
        if word == "--":
            options.argv = list(rest)
        elif word == "--status-fd":
            options.status_fd = int(next(rest))
        elif word == "--parent":
            options.parent = int(next(rest))
        elif word == "--ruleset-fd":
            options.ruleset_fd = int(next(rest))
        elif word == "--fallback-ruleset-fd":
            options.fallback_ruleset_fd = int(next(rest))
        elif word == "--read-only":
            options.read_only.append(next(rest))
        else:
            raise ValueError(f"unknown launcher option {word!r}")
    if options.status_fd < 0 or options.parent < 0 or not options.argv:
        raise ValueError("usage: launcher.py --status-fd N --parent PID [...] -- COMMAND...")
    if options.read_only and (options.ruleset_fd < 0 or options.fallback_ruleset_fd < 0):
        raise ValueError("--read-only needs --ruleset-fd and --fallback-ruleset-fd")
    return options


def confine(options: Options) -> str | None:
    """Apply the sandbox the options ask for; the reason of a fallback, else None."""
    ruleset, fallback, reason = options.ruleset_fd, options.fallback_ruleset_fd, None
    if options.read_only:
        try:
            read_only(options.read_only)
        except OSError as error:
            reason = error.strerror or str(error)
            ruleset, fallback = fallback, ruleset
        os.close(fallback)
    if ruleset >= 0:
        restrict(ruleset)
    return reason


def main(arguments: list[str]) -> int:
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    options = parse(arguments)
    os.set_inheritable(options.status_fd, False)
    report = "exit none"
    code = EXIT_NOT_STARTED
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != options.parent:
            raise Stop(signal.SIGTERM)  # run_shell's process died before the prctl
        fallback = confine(options)
        if fallback is not None:
            os.write(options.status_fd, f"fallback {' '.join(fallback.split())}\n".encode())
        child = start(options.argv)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                exit = exit_code(status)
                report, code = f"exit {exit}", exit if exit >= 0 else 128 - exit
                break
    except Stop:
        code = 128 + signal.SIGTERM
    except OSError as error:  # reported; run_shell raises it
        reason = error.strerror or str(error) or type(error).__name__
        report = "error " + " ".join(reason.split())
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        killed = kill_all()
    if not report.startswith("error"):
        report += f" killed {killed}"
    with contextlib.suppress(BrokenPipeError):  # run_shell's process is gone: nobody to tell
        os.write(options.status_fd, report.encode() + b"\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
