"""A JSONL source read a line at a time: memory holds one line, never the file.

Invariants:
- Only whole lines are read: a last line without its newline (a writer still writing
  it) is left for the next import and not counted as read (`Tally.bytes` stops before it).
- A line that is not a JSON object (or longer than `MAX_LINE`) is damage: reported with
  its 1-based line number, skipped, and the rest of the file still read.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# a line longer than this is damage (read in pieces, skipped): the store holds no object
# over 64 MiB either, so no message of such a line could be stored
MAX_LINE = 64 * 1024 * 1024
KEPT_DAMAGE = 20  # damaged lines named in a report; the rest counted


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

    def damage(self, number: int, reason: str) -> None:
        self.damaged_count += 1
        if len(self.damaged) < KEPT_DAMAGE:
            self.damaged.append((number, reason))


def read_objects(
    path: Path, tally: Tally | None = None, *, offset: int = 0, line: int = 0
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each whole line of `path` that is a JSON object; with
    `tally`, its damage, line count, bytes and SHA-256 are recorded into it. With
    `offset` (the start of a line) and `line` (the lines before it), from there on: line
    numbers and the tally's `lines` count from the file's start, its bytes and SHA-256
    are of what was read."""
    digest = hashlib.sha256()
    number = line
    with open(path, "rb") as file:
        file.seek(offset)
        while True:
            raw = file.readline(MAX_LINE)
            if not raw:
                break
            if not raw.endswith(b"\n"):
                if len(raw) < MAX_LINE:  # the end of the file: a line still being written
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
            if not raw.strip():
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


def _decode(raw: bytes) -> dict[str, Any] | str:
    """The line's object, or why it is not one."""
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


def prefix_sha256(path: Path, size: int) -> str | None:
    """SHA-256 of the first `size` bytes of `path`; None when it is shorter."""
    digest = hashlib.sha256()
    left = size
    with open(path, "rb") as file:
        while left:
            piece = file.read(min(left, 1 << 20))
            if not piece:
                return None
            digest.update(piece)
            left -= len(piece)
    return digest.hexdigest()


def resume_point(
    header: Mapping[str, Any] | None, source: str, key: str, path: Path
) -> tuple[Mapping[str, Any], dict[str, Any]] | None:
    """Where a re-import of `path` reads on: the `imported` record the last import of
    source session `key` (from `source`) left in `header`, and its `resume` point, when
    `path` still starts with the bytes that import read (as many at least, the same
    SHA-256); else None, and the file is read whole."""
    done = header.get("imported") if header else None
    resume = done.get("resume") if isinstance(done, Mapping) else None
    if not isinstance(resume, dict) or done.get("from") != source or done.get("id") != key:
        return None
    read = int(done.get("bytes", 0))
    if path.stat().st_size < read or resume["offset"] > read:
        return None
    if prefix_sha256(path, read) != done.get("sha256"):
        return None
    return done, resume


def offset_of_line(path: Path, number: int, *, offset: int = 0, line: int = 0) -> int:
    """The byte offset where line `number` (1-based) starts, counting from `offset`, the
    start of line `line + 1`."""
    with open(path, "rb") as file:
        file.seek(offset)
        while line < number - 1:
            raw = file.readline(MAX_LINE)
            if not raw:
                break
            offset += len(raw)
            if raw.endswith(b"\n"):
                line += 1
    return offset
