"""The secret scan of the code a `push --code` would send (a snapshot holds untracked files
too: an `.env` no one committed), with the store's rules, as a session push is scanned.

Invariants:
- Scanned: every blob and commit message the snapshot ref reaches and neither the
  remote's tracking refs nor the snapshot refs it holds reach (everything the push can
  send, never less); what was sent before is not scanned again.
- Blobs over `MAX_BLOB` are not read; the rest stream from one `git cat-file --batch`,
  one at a time, each once across sessions: memory bounded by the largest.
- A finding names the path (or "a commit message") and the rule, never the value.
"""

import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from gitsessions.services.code.projectgit import command, run
from gitsessions.values.secrets import HINT_BYTES, may_hold_secret, redact

MAX_BLOB = 16 * 1024 * 1024
GIT_TIMEOUT = 600.0


class ScanFailed(Exception):
    """Git could not list or read what a push would send (the push is then refused)."""


class Scanner:
    """Scans snapshot refs of one project repository before they are pushed to `remote`;
    remembers what it read, so sessions sharing files cost one read of each."""

    def __init__(
        self, repo: Path, env: Mapping[str, str], remote: str, held: Sequence[str] = ()
    ) -> None:
        self.repo, self.env, self.remote = repo, env, remote
        self.held = list(held)  # commits the remote has (its snapshot refs), here too
        self._found: dict[str, list[str]] = {}  # object id -> rules found in it

    def findings(self, ref: str) -> list[str]:
        """`path: rule, rule` for each file (or commit message) holding a secret in what
        pushing `ref` would send, sorted; ScanFailed when git cannot say."""
        listed = self._listed(ref)
        unread = {sha for sha in listed if sha not in self._found}
        for sha, rules in self._read(sorted(unread)):
            self._found[sha] = rules
        by_path: dict[str, set[str]] = {}
        for sha, path in listed.items():
            for rule in self._found.get(sha, []):
                by_path.setdefault(path or "a commit message", set()).add(rule)
        return [f"{path}: {', '.join(sorted(rules))}" for path, rules in sorted(by_path.items())]

    def _listed(self, ref: str) -> dict[str, str]:
        """`{object id: its path ('' for a commit or a root tree)}` of what the push may
        send."""
        done = run(
            self.repo, self.env, "rev-list", "--objects", ref, "--not",
            f"--remotes={self.remote}", *self.held, "--", timeout=GIT_TIMEOUT,
        )  # fmt: skip
        if done.returncode != 0:
            raise ScanFailed(done.stderr.strip()[:200] or "git rev-list failed")
        listed: dict[str, str] = {}
        for line in done.stdout.splitlines():
            sha, _, path = line.partition(" ")
            if sha:
                listed.setdefault(sha, path)
        return listed

    def _read(self, ids: list[str]) -> Iterator[tuple[str, list[str]]]:
        """Each object's rules found, blobs and commits read through one `cat-file
        --batch` (a tree or a blob over `MAX_BLOB` is skipped: its size only)."""
        if not ids:
            return
        argv, full = command(self.repo, self.env, "cat-file", "--batch")
        with subprocess.Popen(
            argv, env=full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as git:  # fmt: skip
            assert git.stdin is not None and git.stdout is not None
            writer = threading.Thread(target=_write_ids, args=(git.stdin, ids), daemon=True)
            writer.start()
            try:
                for sha in ids:
                    header = git.stdout.readline().split()
                    if len(header) != 3 or header[0].decode() != sha:
                        raise ScanFailed(f"git cat-file could not read {sha[:12]}")
                    kind, size = header[1], int(header[2])
                    if kind in (b"blob", b"commit") and size <= MAX_BLOB:
                        raw = _exactly(git.stdout, size)
                        yield sha, _rules(raw, kind == b"commit")
                    else:
                        _skip(git.stdout, size)
                        yield sha, []
                    _exactly(git.stdout, 1)  # the newline after each object
            finally:
                git.kill()
                writer.join(timeout=5)


def _write_ids(stdin: IO[bytes], ids: list[str]) -> None:
    try:
        for sha in ids:
            stdin.write(sha.encode() + b"\n")
        stdin.close()
    except OSError:
        pass  # git was stopped: the reader says why


def _exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise ScanFailed("git cat-file stopped early")
    return data


def _skip(stream: IO[bytes], size: int) -> None:
    while size > 0:
        size -= len(_exactly(stream, min(size, 1 << 20)))


def _rules(raw: bytes, commit: bool) -> list[str]:
    if commit:
        raw = raw.split(b"\n\n", 1)[-1]
    lowered = raw.lower()
    if not any(hint in lowered for hint in HINT_BYTES):
        return []
    text = raw.decode("utf-8", "replace")
    if not may_hold_secret(text):
        return []
    return sorted(redact(text)[1])
