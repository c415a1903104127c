"""Stock git, the one transport of sync (ls-remote, fetch, push, and the walks around
them); push and pull need git 2.29 or newer (`MIN_VERSION`), else one line.

Invariants:
- Every command names the store by `--git-dir`, with git's location variables scrubbed
  and settings that stop it doing anything of its own (no auto gc, hooks, `FETCH_HEAD`,
  commit-graph); received objects are fsynced; a fetch keeps its pack as it came
  (`fetch.unpackLimit=1`: loose, fsynced objects took twice as long).
- Every fetched object passes `fetch.fsckObjects` first (`ObjectsRefused`).
- Nothing here moves a session branch: a fetch writes no ref (commits asked for by id,
  the caller names them); a push never forces, a delete carries a lease (not every ref:
  git's check is quadratic, 0.7 s for a thousand).
- A git's version is known per binary (path, size, mtime); a failure is `GitFailed`
  with git's lines, the URL masked by the caller.
"""

import bisect
import contextlib
import io
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from pathlib import Path

from gitsessions.values.plural import plural

MIN_VERSION = (2, 29)  # fetch --stdin, --no-write-fetch-head, --no-auto-maintenance
BLOBS_ONLY = (2, 32)  # rev-list --filter=object:type=blob
LOCAL_ENV = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    }
)
FSYNC_SETTING = (2, 36)  # core.fsync; older gits know core.fsyncObjectFiles (newer warn)
SETTINGS = (
    "gc.auto=0",
    "maintenance.auto=false",
    "core.fsync=objects,derived-metadata",
    "core.fsyncMethod=batch",  # git >= 2.37: loose objects of a small fetch, one flush
    "fetch.writeCommitGraph=false",
    "fetch.showForcedUpdates=false",
    "advice.fetchShowForcedUpdates=false",  # or each slow fetch says it skipped the check
    "core.hooksPath=/dev/null",
    "protocol.version=2",
    "fetch.unpackLimit=1",  # a fetch keeps the pack that came (see above)
)
REF_LINES = re.compile(rb"(?m)^([0-9a-f]{40})\t(\S+)$")  # `ls-remote`'s, all at once
Relay = Callable[[bytes], None]


class GitFailed(Exception):
    """Stock git exited non-zero; `str()` is its message, one line; `out` its stdout."""

    def __init__(self, text: str, out: bytes = b"") -> None:
        super().__init__(text)
        self.out = out


class ObjectsRefused(GitFailed):
    """What a fetch brought failed git's object checks; nothing of it joined the store.
    `str()` names the first bad object and git's reason."""


FSCK_LINE = re.compile(r"object ([0-9a-f]{40}): (\w+): ([^;]*)")


def _refused(error: GitFailed) -> GitFailed:
    """`error` as an `ObjectsRefused` when git's object checks failed (else itself)."""
    text = str(error)
    if "fsck error" not in text:
        return error
    found = FSCK_LINE.search(text)
    why = f"object {found[1][:12]}: {found[2]}: {found[3].strip()}" if found else text
    return ObjectsRefused(f"the remote's objects fail git's checks ({why})", error.out)


def binary() -> str | None:
    """The git on PATH as `realpath size mtime` (what its version is known by), None
    when there is none."""
    found = shutil.which("git")
    if found is None:
        return None
    try:
        stat = os.stat(found)
    except OSError:
        return None
    return f"{os.path.realpath(found)} {stat.st_size} {stat.st_mtime_ns}"


_VERSIONS: dict[str, tuple[int, int]] = {}  # binary() -> its version, once known


def version() -> tuple[int, int]:
    """The version of the git on PATH, (0, 0) when there is none or it cannot say
    (asked once a process for each binary, unless `remember_version` found it noted)."""
    key = binary()
    if key is None:
        return (0, 0)
    if key not in _VERSIONS:
        _VERSIONS[key] = _parse(version_text())
    return _VERSIONS[key]


def version_text() -> str:
    """What `git --version` says its version is (`2.39.5`), "" when it cannot say."""
    try:
        done = subprocess.run(
            ["git", "--version"], capture_output=True, check=False, stdin=subprocess.DEVNULL
        )
    except OSError:
        return ""
    found = re.search(rb"\d+(?:\.\d+)+", done.stdout) if done.returncode == 0 else None
    return found[0].decode() if found else ""


def _parse(text: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def remember_version(store: Path) -> None:
    """Learn stock git's version from the store's note of it (`gitsessions/git-version`)
    when the note is of the git on PATH now (`binary()`), else ask git and note it: a
    sync then starts no `git --version` of its own. The note is a cache: unreadable or
    stale, it is written again."""
    key = binary()
    if key is None or key in _VERSIONS:
        return
    note = store / "gitsessions" / "git-version"
    with contextlib.suppress(OSError, ValueError):
        lines = note.read_text("utf-8").splitlines()
        if len(lines) == 2 and lines[0] == key:
            major, minor = lines[1].split(".")
            _VERSIONS[key] = (int(major), int(minor))
            return
    known = _VERSIONS[key] = _parse(version_text())
    with contextlib.suppress(OSError):
        note.parent.mkdir(mode=0o700, exist_ok=True)
        spare = note.with_name(f"git-version.{os.getpid()}")
        spare.write_text(f"{key}\n{known[0]}.{known[1]}\n", "utf-8")
        os.replace(spare, note)


def _env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    if env is None:
        return None
    return {k: v for k, v in env.items() if k not in LOCAL_ENV}


def _command(store: Path, args: Iterable[str], inherit: bool = False) -> list[str]:
    """The command line; with `inherit` (no environment given: the child inherits this
    process's), through `env -u` for each of `LOCAL_ENV`."""
    settings = [part for item in SETTINGS for part in ("-c", item)]
    if version() < FSYNC_SETTING:
        settings += ["-c", "core.fsyncObjectFiles=true"]
    scrub = ["env", *(part for name in sorted(LOCAL_ENV) for part in ("-u", name))]
    return [*(scrub if inherit else []), "git", "--git-dir", str(store), *settings, *args]


def message(stderr: bytes) -> str:
    """git's error lines as one line (hints and progress left out)."""
    lines = [
        line.strip() for line in stderr.decode("utf-8", "replace").replace("\r", "\n").splitlines()
    ]
    picked = [
        re.sub(r"^(fatal|error): ", "", line)
        for line in lines
        if line
        and not line.startswith(("hint:", "warning:", "remote: ", "Please make sure"))
        and line != "and the repository exists."  # the tail of git's "Please make sure"
    ]
    picked = [line for line in picked if not re.search(r"\d+% \(|done\.$", line)]
    return "; ".join(dict.fromkeys(picked)) or "git failed"


def run(
    store: Path,
    args: Iterable[str],
    env: Mapping[str, str] | None,
    stdin: bytes = b"",
    relay: Relay | None = None,
) -> bytes:
    """Run git on the store; its stdout. stderr goes to `relay` as it comes (progress).
    With `env` None, git inherits this process's environment but `LOCAL_ENV`."""
    process = subprocess.Popen(
        _command(store, args, inherit=env is None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(env),
    )
    errors, helpers = _attend(process, stdin, relay)
    assert process.stdout is not None
    out = process.stdout.read()
    process.wait()
    for helper in helpers:
        helper.join()
    if process.returncode != 0:
        raise GitFailed(message(bytes(errors)), out)
    return out


def _attend(
    process: "subprocess.Popen[bytes]", stdin: bytes, relay: Relay | None
) -> tuple[bytearray, list[threading.Thread]]:
    """Two started threads: one writes `stdin` to the process and closes it, the other
    gathers its stderr into the returned buffer (and relays it as it comes). Join them
    once the process has exited."""
    errors = bytearray()

    def drain() -> None:
        stderr = process.stderr
        assert isinstance(stderr, io.BufferedReader)  # a pipe, buffered (Popen's default)
        while chunk := stderr.read1(1 << 14):
            errors.extend(chunk)
            if relay is not None:
                relay(chunk)

    helpers = [
        threading.Thread(target=drain, daemon=True),
        threading.Thread(target=_feed, args=(process, stdin), daemon=True),
    ]
    for helper in helpers:
        helper.start()
    return errors, helpers


def _feed(process: "subprocess.Popen[bytes]", data: bytes) -> None:
    assert process.stdin is not None
    try:
        if data:
            process.stdin.write(data)
        process.stdin.close()
    except BrokenPipeError:  # git exited early; its stderr says why
        pass


def ls_remote(store: Path, url: str, env: Mapping[str, str] | None) -> dict[bytes, bytes]:
    """The refs the remote advertises (no objects move)."""
    out = run(store, ["ls-remote", "--", url], env)
    lines = out.replace(b"\r\n", b"\n").replace(b"\r", b"\n")  # as `splitlines` splits
    return {name: sha for sha, name in REF_LINES.findall(lines) if not name.endswith(b"^{}")}


def fetch(
    store: Path,
    url: str,
    wants: list[bytes],
    env: Mapping[str, str] | None,
    relay: Relay | None = None,
) -> None:
    """Fetch the commits `wants` (ids the remote advertised) and all they need into
    `store` (a quarantine: `incoming`); no ref is written (the caller names them). The
    commits offered as common ground are `store`'s refs alone: an alternate's refs are
    not listed (`core.alternateRefsCommand`), so git neither walks nor offers the
    refs of the store behind it."""
    args = ["-c", "fetch.fsckObjects=true", "-c", "core.alternateRefsCommand=true"]
    args += ["fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc"]
    args += ["--no-auto-maintenance", "--no-recurse-submodules", "--stdin"]
    args += ["--progress" if relay is not None else "--quiet", "--", url]
    try:
        run(store, args, env, stdin=b"".join(sha + b"\n" for sha in wants), relay=relay)
    except GitFailed as error:
        raise _refused(error) from None


def fetch_refspecs(
    store: Path,
    url: str,
    specs: list[str],
    env: Mapping[str, str] | None,
    relay: Relay | None = None,
) -> None:
    """Fetch by refspecs (`src:dst`, globs allowed): the remote sends only the refs under
    their prefixes (protocol v2), and git writes them at `dst`, as checked as `fetch`."""
    args = ["-c", "fetch.fsckObjects=true", "fetch", "--no-tags", "--no-write-fetch-head"]
    args += ["--no-auto-gc", "--no-auto-maintenance", "--no-recurse-submodules"]
    args += ["--progress" if relay is not None else "--quiet", "--", url, *specs]
    try:
        run(store, args, env, relay=relay)
    except GitFailed as error:
        raise _refused(error) from None


def push(
    store: Path,
    url: str,
    plan: Mapping[bytes, tuple[bytes | None, bytes]],
    env: Mapping[str, str] | None,
    relay: Relay | None = None,
    space: bytes = b"",
    staged: Set[bytes] = frozenset(),
) -> dict[bytes, str | None]:
    """Push `{ref: (old the remote held when looked at, new)}` (a new of forty zeros
    deletes, under a lease on that old value; every other update is a create or a
    fast-forward, which git refuses unless it still is one). The refs in `staged`
    (`refs/heads/<x>`, `refs/gitsessions/projects/<x>`) are sent from `<space><x>`,
    `<space>projects/<x>`, which the caller made hold their new values, by one glob
    refspec each. Returns `{ref: None when it moved, else why not}`."""
    args = ["push", "--porcelain", "--no-verify", "--no-follow-tags"]
    args.append("--progress" if relay is not None else "--no-progress")
    specs: list[str] = []
    for ref in sorted(plan):
        old, new = plan[ref]
        name = ref.decode()
        if new == b"0" * 40:  # a delete is checked against the value seen, not git's
            args.append(f"--force-with-lease={name}:{old.decode() if old else ''}")
        if ref in staged:
            continue
        specs.append(f":{name}" if new == b"0" * 40 else f"{new.decode()}:{name}")
    if any(ref.startswith(b"refs/heads/sessions/") for ref in staged):
        specs.append(f"{space.decode()}sessions/*:refs/heads/sessions/*")
    if any(ref.startswith(b"refs/gitsessions/projects/") for ref in staged):
        specs.append(f"{space.decode()}projects/*:refs/gitsessions/projects/*")
    try:
        out = run(store, [*args, "--", url, *specs], env, relay=relay)
    except GitFailed as failed:  # some refs refused: the others may have moved
        out = failed.out
        if not _porcelain(out):
            raise
    status = _porcelain(out)
    return {ref: status.get(ref, "not sent") for ref in plan}


def _porcelain(out: bytes) -> dict[bytes, str | None]:
    """`{remote ref: None, or why not}` from `git push --porcelain`."""
    status: dict[bytes, str | None] = {}
    for line in out.splitlines():
        parts = line.split(b"\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        ref = parts[1].split(b":", 1)[-1]
        if parts[0] in b" *-=+":
            status[ref] = None
            continue
        summary = parts[2].decode("utf-8", "replace")
        if "stale info" in summary or "fetch first" in summary:
            status[ref] = "changed on the remote meanwhile; run gitsessions pull"
        else:
            status[ref] = " ".join(summary.replace("[", "").replace("]", "").split())[:200]
    return status


def objects(
    store: Path, wants: Iterable[bytes], haves: Iterable[bytes], env: Mapping[str, str] | None
) -> list[tuple[bytes, int, bytes]]:
    """`(id, type number, path)` of every commit and blob (and, from a git older than
    2.32, tree) `wants` need that `haves` do not reach: git's own walk (`rev-list
    --objects`; typed by `cat-file --batch-check` when it cannot leave trees out)."""
    revs = b"".join(sha + b"\n" for sha in wants)
    revs += b"".join(b"^" + sha + b"\n" for sha in haves)
    walk = ["rev-list", "--objects", "--ignore-missing", "--stdin"]
    if version() >= BLOBS_ONLY:  # commits and blobs: a line without a path is a commit
        listed = run(store, [*walk, "--filter=object:type=blob"], env, revs)
        return [
            (line[:40], 3, b"/" + line[41:]) if len(line) > 40 else (line, 1, b"")
            for line in listed.splitlines()
        ]
    listed = run(store, walk, env, revs)
    check = "--batch-check=%(objectname) %(objecttype) %(rest)"
    typed = run(store, ["cat-file", check], env, listed)
    out: list[tuple[bytes, int, bytes]] = []
    for line in typed.splitlines():
        sha, kind, path = [*line.split(b" ", 2), b"", b""][:3]
        out.append((sha, TYPES.get(kind, 0), b"/" + path if path else b""))
    return out


TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}


def trees(store: Path, wants: Iterable[bytes], env: Mapping[str, str] | None) -> list[bytes]:
    """The ids of every tree `wants` reach that no ref of the store reaches (what a
    fetch just brought): git's own walk (`rev-list --objects ... --not --all`)."""
    revs = b"".join(sha + b"\n" for sha in wants)
    if not revs:
        return []
    walk = ["rev-list", "--objects", "--stdin", "--not", "--all"]
    if version() >= BLOBS_ONLY:  # commits and trees: a tree's line has a path (or " ")
        listed = run(store, [*walk, "--filter=object:type=tree"], env, revs)
        return [line[:40] for line in listed.splitlines() if len(line) > 40]
    listed = run(store, walk, env, revs)
    check = "--batch-check=%(objectname) %(objecttype)"
    typed = run(store, ["cat-file", check], env, listed)
    return [line[:40] for line in typed.splitlines() if line[41:] == b"tree"]


def contents(
    store: Path, names: list[bytes], env: Mapping[str, str] | None
) -> Iterator[bytes | None]:
    """The raw content of each object named (an id, or `<commit>:<path>`), in order;
    None for one that is missing (`cat-file --batch`)."""
    if not names:
        return
    out = run(store, ["cat-file", "--batch"], env, b"".join(name + b"\n" for name in names))
    at = 0
    view = memoryview(out)
    while at < len(out):
        end = out.index(b"\n", at)
        fields = out[at:end].split(b" ")
        if len(fields) != 3 or fields[-1] in (b"missing", b"ambiguous"):
            yield None
            at = end + 1
            continue
        size, start = int(fields[2]), end + 1
        yield bytes(view[start : start + size])
        at = start + size + 1


def hinted(
    store: Path, ids: list[bytes], needles: Iterable[bytes], env: Mapping[str, str] | None
) -> set[int] | None:
    """The indexes of the objects in `ids` whose content holds one of `needles` in any
    ASCII case: `cat-file --batch` piped into `grep -F -i -o -b` (C locale), so the
    contents never pass through Python. None when there is no grep."""
    grep = shutil.which("grep")
    if grep is None:
        return None
    if not ids:
        return set()
    listing = b"".join(sha + b"\n" for sha in ids)
    sizes = run(store, ["cat-file", "--batch-check=%(objectsize)"], env, listing).split()
    if len(sizes) != len(ids):
        raise GitFailed(f"cat-file listed {plural(len(sizes), 'object')} of {len(ids)}")
    starts: list[int] = []
    at = 0
    for size in sizes:  # each record: "<size>\n<content>\n"
        starts.append(at)
        at += len(size) + 1 + int(size) + 1
    cat = subprocess.Popen(
        _command(store, ["cat-file", "--batch=%(objectsize)"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(env),
    )
    patterns = [part for needle in needles for part in (b"-e", needle)]
    search = subprocess.Popen(
        [grep, "-a", "-b", "-o", "-i", "-F", *patterns],
        stdin=cat.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"LC_ALL": "C"},
    )
    assert cat.stdout is not None and search.stdout is not None
    cat.stdout.close()
    feeder = threading.Thread(target=_feed, args=(cat, listing), daemon=True)
    feeder.start()
    found = search.stdout.read()
    search.wait()
    cat.wait()
    feeder.join()
    if cat.returncode != 0 or search.returncode not in (0, 1):
        raise GitFailed("cannot search the objects a push sends")
    out: set[int] = set()
    for line in found.splitlines():
        offset = line.split(b":", 1)[0]
        if offset.isdigit():
            out.add(bisect.bisect_right(starts, int(offset)) - 1)
    return out
