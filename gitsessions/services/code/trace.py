"""Agent Trace records (agent-trace.dev, spec 0.1.0) from blame results (pure).

Invariants: a record holds only what the schema defines (`version`, UUID `id`, RFC 3339
`timestamp`, `vcs`, `tool`, `files[].conversations[]`). One conversation per session turn
that wrote lines of a file: `url` `gitsessions:<id>@turn:<n>`, `related` the session,
`contributor` `ai` with the model; its `ranges` the runs of lines it wrote (1-based,
inclusive), each with a `content_hash`. A person's lines are in no conversation.
"""

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from gitsessions.services.code.blame import Blame, Line

SPEC_VERSION = "0.1.0"
MODEL_ID_MAX = 250


def session_url(session: str, turn: int | None = None) -> str:
    """The `gitsessions:` URI of a session, or of one of its turns."""
    return f"gitsessions:{session}" + (f"@turn:{turn}" if turn is not None else "")


def content_hash(lines: Iterable[str]) -> str:
    """`sha256:` and the hex digest of the lines, each ended by a newline, as UTF-8."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return f"sha256:{digest.hexdigest()}"


def ranges(lines: list[Line], wanted: set[int] | None = None) -> list[dict[str, Any]]:
    """Runs of consecutive lines (of those numbered in `wanted`, if given)."""
    runs: list[list[Line]] = []
    for line in lines:
        if wanted is not None and line.number not in wanted:
            continue
        if runs and runs[-1][-1].number == line.number - 1:
            runs[-1].append(line)
        else:
            runs.append([line])
    return [
        {
            "start_line": run[0].number,
            "end_line": run[-1].number,
            "content_hash": content_hash(x.text for x in run),
        }
        for run in runs
    ]


def file_entry(
    found: Blame, models: Mapping[str, str | None], wanted: set[int] | None = None
) -> dict[str, Any]:
    """A `files[]` item: the file's path and a conversation per turn that wrote lines."""
    turns: dict[tuple[str, int | None], list[Line]] = {}
    for line in found.lines:
        if line.by is not None:
            turns.setdefault((line.by.session, line.by.turn), []).append(line)
    conversations = []
    for (session, turn), lines in turns.items():
        spans = ranges(lines, wanted)
        if not spans:
            continue
        contributor: dict[str, Any] = {"type": "ai"}
        if model := models.get(session):
            contributor["model_id"] = model[:MODEL_ID_MAX]
        conversations.append(
            {
                "url": session_url(session, turn),
                "contributor": contributor,
                "ranges": spans,
                "related": [{"type": "session", "url": session_url(session)}],
            }
        )
    return {"path": found.path, "conversations": conversations}


def record(
    files: list[dict[str, Any]], revision: str | None, tool_version: str, now: datetime
) -> dict[str, Any]:
    """One trace record of `files` at git `revision` (None: an unborn branch)."""
    made: dict[str, Any] = {
        "version": SPEC_VERSION,
        "id": str(uuid.uuid4()),
        "timestamp": now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
    }
    if revision:
        made["vcs"] = {"type": "git", "revision": revision}
    made["tool"] = {"name": "gitsessions", "version": tool_version}
    made["files"] = files
    return made
