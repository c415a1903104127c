"""A JSONL source read a line at a time: memory holds one line, never the file.

Invariants:
- Every whole line is read; a last line without its newline is whole when it is a JSON
  object; a cut one is left for the next import (`Tally.bytes` stops before it) and is
  damage once the file is finished (`Tally.settle_tail`). Reading on after such a line
  takes the newline written since as that line's.
- A line that is not a JSON object, longer than `MAX_LINE`, or over `MAX_DECODED` once
  decoded (estimated from its bytes first, `decoded_size`), or nested past the decoder's
  recursion limit, is damage: reported with its line number, skipped, the rest read.
"""

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# a line longer than this is damage (read in pieces, skipped): the store holds no object
# over 64 MiB either, so no message of such a line could be stored
MAX_LINE = 64 * 1024 * 1024
KEPT_DAMAGE = 20  # damaged lines named in a report; the rest counted
# a line that would take more memory than this once decoded is damage too: 128 MiB, twice
# what a line's bytes may be (a JSON value takes more room decoded than written)
MAX_DECODED = 128 * 1024 * 1024
PER_VALUE = 72  # bytes a decoded value takes at least (an empty dict: 64, and its slot)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')  # a JSON string (possessive: no backtracking)


@dataclass
class Tally:
    """What a read of a source met: lines, damage, line types ignored."""

    lines: int = 0
    bytes: int = 0  # through the last whole line read
    sha256: str = ""
    damaged: list[tuple[int, str]] = field(default_factory=list)
    damaged_count: int = 0
    unknown: Counter[str] = field(default_factory=Counter)  # line types this build does not know
    ignored: Counter[str] = field(default_factory=Counter)  # known, and not part of the chat
    partial_tail: bool = False  # the last line, without its newline, is cut (held back)
    tail: tuple[int, str] | None = None  # that line's number, and why it is not whole
    joined: int = 0  # lines whose parent is not in the file, joined to the line before

    def damage(self, number: int, reason: str) -> None:
        self.damaged_count += 1
        if len(self.damaged) < KEPT_DAMAGE:
            self.damaged.append((number, reason))

    def settle_tail(self) -> None:
        """The file is finished: a cut last line will never be completed, so it is
        damage (once, however often this is called)."""
        if self.tail is not None:
            number, reason = self.tail
            self.damage(number, f"cut off (no newline, {reason}), and the file is finished")
            self.tail = None


def read_objects(
    path: Path,
    tally: Tally | None = None,
    *,
    offset: int = 0,
    line: int = 0,
    wanted: Callable[[int, bytes], bool] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each whole line of `path` that is a JSON object; with
    `tally`, its damage, line count, bytes and SHA-256 are recorded into it. With
    `offset` (the start of a line, or the end of a last line an earlier read took without
    its newline) and `line` (the lines before it), from there on: line
    numbers and the tally's `lines` count from the file's start, its bytes and SHA-256
    are of what was read. With `wanted` (a line's number and bytes -> whether to read
    it), only the lines it wants are decoded."""
    digest = hashlib.sha256()
    number = line
    with open(path, "rb") as file:
        size, more = _rest(file, offset, digest)
        if tally is not None:
            tally.bytes += size
            if more:
                tally.damage(number, "written on after it was read without its newline")
        while True:
            raw = file.readline(MAX_LINE)
            if not raw:
                break
            if not raw.endswith(b"\n"):
                if len(raw) < MAX_LINE:  # the end of the file, the line without its newline
                    if not raw.strip():
                        break  # nothing to read (and not counted: a read goes on from it)
                    value = _decode(raw)
                    if isinstance(value, str):  # cut: a writer still writing it
                        if tally is not None:
                            tally.partial_tail = True
                            tally.tail = (number + 1, value)
                        break
                    number += 1
                    digest.update(raw)
                    if tally is not None:
                        tally.bytes += len(raw)
                    if wanted is None or wanted(number, raw):
                        yield number, value
                    break
                number += 1
                size = len(raw)
                while raw and not raw.endswith(b"\n"):  # skip the rest of the long line
                    digest.update(raw)
                    raw = file.readline(MAX_LINE)
                    size += len(raw)
                digest.update(raw)
                if tally is not None:
                    tally.damage(number, f"longer than {MAX_LINE // 2**20} MiB ({size} bytes)")
                    tally.bytes += size
                continue
            number += 1
            digest.update(raw)
            if tally is not None:
                tally.bytes += len(raw)
            if not raw.strip() or (wanted is not None and not wanted(number, raw)):
                continue
            value = _decode(raw)
            if isinstance(value, str):
                if tally is not None:
                    tally.damage(number, value)
                continue
            yield number, value
    if tally is not None:
        tally.lines = number
        tally.sha256 = digest.hexdigest()


def decoded_size(raw: bytes, cap: int) -> tuple[int, int] | None:
    """An estimate of the memory `raw` (one JSON line) takes decoded, and how many
    values it holds, when that estimate is over `cap`; None when it is not. Counting
    is C-speed byte counting (`bytes.count`, one regular expression for the strings),
    nothing is copied; a line too short to reach `cap` is not looked at."""
    size = len(raw)
    if size * (4 + PER_VALUE) <= cap:  # even all values, at 4 bytes a character
        return None
    values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    width = 1  # bytes a character of its strings takes decoded
    if not raw.isascii():
        width = 4 if re.search(rb"[\xf0-\xf4]", raw) else 2  # outside the BMP, or not
    if width < 4 and b"\\u" in raw:  # an escape: `\\ud83d` (outside the BMP), or not
        width = 4 if re.search(rb"\\u[dD][89abAB]", raw) else 2
    if size * width + values * PER_VALUE <= cap:
        return None
    for match in _STRING.finditer(raw):  # structure characters inside strings: text
        start, end = match.span()
        if end - start > 2:
            values -= sum(raw.count(c, start, end) for c in (b"{", b"[", b","))
    estimate = size * width + values * PER_VALUE
    return (estimate, values) if estimate > cap else None


def _decode(raw: bytes) -> dict[str, Any] | str:
    """The line's object, or why it is not one."""
    big = decoded_size(raw, MAX_DECODED)
    if big is not None:
        return f"about {_size(big[0])} once decoded, over the {_size(MAX_DECODED)} limit"
    try:
        value = json.loads(raw)
    except UnicodeDecodeError as error:
        return f"not valid UTF-8 (byte {error.start})"
    except json.JSONDecodeError as error:
        return f"malformed JSON: {error.msg} at column {error.colno}"
    except (ValueError, RecursionError) as error:
        return f"malformed JSON: {str(error)[:100]}"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an object"
    return value


def _size(count: int) -> str:
    return f"{count // 2**20} MiB" if count >= 2**20 else f"{count // 1024} KiB"


def prefix_hash(path: Path, size: int) -> "hashlib._Hash | None":
    """A SHA-256 of the first `size` bytes of `path` (to go on with); None when it is
    shorter."""
    digest = hashlib.sha256()
    left = size
    with open(path, "rb") as file:
        while left:
            piece = file.read(min(left, 1 << 20))
            if not piece:
                return None
            digest.update(piece)
            left -= len(piece)
    return digest


def prefix_sha256(path: Path, size: int) -> str | None:
    """SHA-256 of the first `size` bytes of `path`; None when it is shorter."""
    digest = prefix_hash(path, size)
    return digest.hexdigest() if digest is not None else None


def extended_sha256(path: Path, digest: "hashlib._Hash", start: int, end: int) -> str:
    """SHA-256 of the first `end` bytes of `path`, `digest` that of the first `start`:
    only the bytes between are read."""
    digest = digest.copy()
    with open(path, "rb") as file:
        file.seek(start)
        left = end - start
        while left > 0:
            piece = file.read(min(left, 1 << 20))
            if not piece:
                break
            digest.update(piece)
            left -= len(piece)
    return digest.hexdigest()


def resume_point(
    header: Mapping[str, Any] | None, source: str, key: str, path: Path
) -> tuple[Mapping[str, Any], dict[str, Any], "hashlib._Hash"] | None:
    """Where a re-import of `path` reads on: the `imported` record the last import of
    source session `key` (from `source`) left in `header`, its `resume` point, and the
    SHA-256 of the bytes it read (to go on with), when `path` still starts with those
    bytes (as many at least, the same SHA-256); else None, and the file is read whole.
    The file is hashed once here; the rest of the import does not hash it again."""
    done = header.get("imported") if header else None
    if not isinstance(done, Mapping):
        return None
    resume = done.get("resume")
    if not isinstance(resume, dict) or done.get("from") != source or done.get("id") != key:
        return None
    read = int(done.get("bytes", 0))
    if path.stat().st_size < read or resume["offset"] > read:
        return None
    digest = prefix_hash(path, read)
    if digest is None or digest.hexdigest() != done.get("sha256"):
        return None
    return done, resume, digest


def offset_of_line(path: Path, number: int, *, offset: int = 0, line: int = 0) -> int:
    """The byte offset where line `number` (1-based) starts, counting from `offset`, the
    start of line `line + 1`."""
    with open(path, "rb") as file:
        offset += _rest(file, offset)[0]
        while line < number - 1:
            raw = file.readline(MAX_LINE)
            if not raw:
                break
            offset += len(raw)
            if raw.endswith(b"\n"):
                line += 1
    return offset


def _rest(file: IO[bytes], offset: int, digest: "hashlib._Hash | None" = None) -> tuple[int, bool]:
    """`file` positioned at `offset`, past what is left of the line before it when that
    line was read without its newline (by an earlier import): its newline, written since,
    belongs to it. The bytes passed (hashed into `digest`), and whether any of them is
    more than whitespace (the line went on after it was read)."""
    file.seek(max(offset - 1, 0))
    if offset == 0 or file.read(1) == b"\n":
        file.seek(offset)
        return 0, False
    size, more = 0, False
    while True:
        piece = file.readline(MAX_LINE)
        size += len(piece)
        more = more or bool(piece.strip())
        if digest is not None:
            digest.update(piece)
        if not piece or piece.endswith(b"\n"):
            return size, more
