"""What `gitsessions mcp` offers, without the SDK: each tool's name, title, description
and annotations (read by `mcp --help` too), the bounds of its arguments and answers,
and the one line a call's arguments get when they do not fit the tool's input schema.
The schemas themselves are the SDK's, derived from the typed functions of work.py.

Invariants:
- Every tool says what it does to the store: read tools `readOnlyHint`; the write
  tools (only with --allow-writes) are not read-only, and say whether they replace
  anything (`destructiveHint`); none reaches past the store (`openWorldHint: false`).
- A refusal is one line naming the tool, the argument and its valid range.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitsessions.values.shapes import Misfit, types_of

PAGE = 50  # messages a read_session page holds at most
TEXT = 4000  # characters of a message's text a page shows
LIMIT = 200  # sessions or hits an answer holds at most
ID_LENGTH = 200  # characters of a session id or revision (ids are 32)


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    description: str
    writes: bool = False  # offered only with --allow-writes
    destructive: bool = False  # replaces something (a title), rather than only adding

    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": not self.writes,
            "destructiveHint": self.destructive,
            "idempotentHint": not self.writes or self.destructive,
            "openWorldHint": False,
        }


TOOLS: tuple[Spec, ...] = (
    Spec(
        "list_sessions",
        "List sessions",
        "The sessions of this project (every session with --all-sessions), the most "
        "recently active first: id, title or label, messages, parent, workspace, who made it.",
    ),
    Spec(
        "search_sessions",
        "Search sessions",
        "Full-text search of titles, summaries and transcripts: every word must occur in "
        "one message. Each hit: session, title, message index (for read_session), snippet.",
    ),
    Spec(
        "read_session",
        "Read a session",
        "A page of a session's full transcript (compacted turns included), from message "
        f"`start`: each message's index, role and text (cut at {TEXT:,} characters), and "
        "where the next page starts (null at the end).",
    ),
    Spec(
        "session_info",
        "Session header",
        "One session's header: title, summary, counts, usage, model, workspace, parent, "
        "project instruction files, dates.",
    ),
    Spec(
        "diff_sessions",
        "Compare two sessions",
        "What each of two session states did since their common ancestor (ids, or "
        "revisions such as ID@turn:3 or ID~2): messages appended, compactions, renames...",
    ),
    Spec(
        "blame",
        "Which session turn wrote a line",
        "Why is this line here: the session and turn of this project that last wrote line "
        "`line` of `file` (a path in the project, as it is in the working tree), that "
        "turn's title and prompt, and the command that shows the turn; session null for "
        "a line a person wrote.",
    ),
    Spec(
        "show_compaction",
        "What a compaction took out",
        "What compaction `number` of a session took out of its working context: the "
        "messages it summarised and the tool outputs it cleared (transcript index, role, "
        f"turn, tokens, first line; at most {LIMIT} of each), the summary it left, and "
        "both states' sizes, as `gitsessions show ID --compaction N --json`.",
    ),
    Spec(
        "pin",
        "Pin a note",
        "Pin a note to a session: it survives every compaction verbatim.",
        writes=True,
    ),
    Spec(
        "rename",
        "Rename a session",
        "Give a session a new title (the one it had stays in its history).",
        writes=True,
        destructive=True,
    ),
    Spec(
        "fork",
        "Fork a session",
        "A new session starting at the session's head (or `at`: turn:N or a commit); "
        "nothing copied. Returns the fork's id.",
        writes=True,
    ),
    Spec(
        "merge_session",
        "Merge a fork back",
        "Join a fork back into its parent (or `into`), as `gitsessions merge`: its code "
        "changes since its fork point merged into that session's workspace by git's "
        "three-way merge (conflicts left as git leaves them, listed; refused over changes "
        "no snapshot holds unless `force`), and one merge commit that puts the fork's "
        "conclusion into the working context. `chat` or `code` false: the other side only.",
        writes=True,
        destructive=True,  # the workspace's files are rewritten (their state snapshotted first)
    ),
)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def refusal(tool: str, misfit: Misfit, schema: Mapping[str, Any]) -> str:
    """The line a call of `tool` gets when its arguments do not fit `schema`, its input
    schema (`misfit`: where the check stopped)."""
    if misfit.kind == "unknown":
        takes = ", ".join(schema.get("properties", {})) or "nothing"
        return f"{tool}: no argument {_shown(misfit.value[0])} (it takes {takes})"
    if misfit.kind == "missing":
        return f"{tool}: {misfit.value} is required"
    name, part, value = misfit.path[0], misfit.schema, misfit.value
    kinds = types_of(part)
    if "integer" in kinds:
        low, high = part.get("minimum"), part.get("maximum")
        wanted = f"from {low} to {high}" if high is not None else f"of {low} or more"
        return f"{tool}: {name} must be an integer {wanted} (got {_shown(value)})"
    if "boolean" in kinds:
        return f"{tool}: {name} must be true or false (got {_shown(value)})"
    if misfit.kind == "maxLength":
        return (
            f"{tool}: {name} must be at most {part['maxLength']:,} characters (got {len(value):,})"
        )
    return f"{tool}: {name} must be a string (got {_shown(value)})"
