"""What `gitsessions mcp` offers: each tool's name, title, description, input schema,
output schema and annotations, and the check of a call's arguments against its input
schema.

Invariants:
- The input schema a client is shown is the one its arguments are checked against:
  a wrong type, a number out of range, a missing or unknown argument is refused with
  one line naming the argument and its valid range, before anything runs.
- Every tool has an output schema whose root is an object, and says what it does to
  the store: read tools `readOnlyHint`; the write tools (only with --allow-writes) are
  not read-only, and say whether they replace anything (`destructiveHint`); none reaches
  past the store (`openWorldHint: false`).
"""

from dataclasses import dataclass
from typing import Any

PAGE = 50  # messages a read_session page holds at most
TEXT = 4000  # characters of a message's text a page shows
LIMIT = 200  # sessions or hits an answer holds at most
ID_LENGTH = 200  # characters of a session id or revision (ids are 32)


class BadArguments(ValueError):
    """A call's arguments do not fit the tool's input schema (the message: one line)."""


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    output: dict[str, Any]
    writes: bool = False  # offered only with --allow-writes
    destructive: bool = False  # replaces something (a title), rather than only adding

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }

    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": not self.writes,
            "destructiveHint": self.destructive,
            "idempotentHint": not self.writes or self.destructive,
            "openWorldHint": False,
        }


def _integer(description: str, low: int, high: int | None, default: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": low, "default": default}
    if high is not None:
        schema["maximum"] = high
    return {**schema, "description": description}


def _string(description: str, length: int = ID_LENGTH) -> dict[str, Any]:
    return {"type": "string", "maxLength": length, "description": description}


SESSION = _string("A session id, or a unique prefix of at least 4 characters.")
NULLABLE = ["string", "null"]
ANY_OBJECT: dict[str, Any] = {"type": "object"}
SESSION_ROW = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "label": {"type": "string"},
        "messages": {"type": "integer"},
        "active_at": {"type": NULLABLE},
        "parent_id": {"type": NULLABLE},
        "archived": {"type": "boolean"},
        "workspace": {"type": NULLABLE},
        "made_by": {},
    },
    "required": ["id", "label", "messages"],
}
HIT = {
    "type": "object",
    "properties": {
        "session": {"type": "string"},
        "sessions": {"type": "array", "items": {"type": "string"}},
        "title": {"type": "string"},
        "index": {"type": ["integer", "null"]},
        "role": {"type": "string"},
        "snippet": {"type": "string"},
        "marks": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    },
    "required": ["session", "index", "role", "snippet"],
}
MESSAGE = {
    "type": "object",
    "properties": {
        "index": {"type": "integer"},
        "role": {"type": NULLABLE},
        "text": {"type": "string"},
        "tool_calls": {"type": "array"},
    },
    "required": ["index", "role", "text"],
}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


TOOLS: tuple[Spec, ...] = (
    Spec(
        "list_sessions",
        "List sessions",
        "The sessions of this project (every session with --all-sessions), the most "
        "recently active first: id, title or label, messages, parent, workspace, who made it.",
        {
            "include_archived": {
                "type": "boolean",
                "default": False,
                "description": "Also list archived sessions.",
            },
            "limit": _integer(f"Sessions to return, 1 to {LIMIT}.", 1, LIMIT, 50),
        },
        (),
        _object({"sessions": {"type": "array", "items": SESSION_ROW}}, "sessions"),
    ),
    Spec(
        "search_sessions",
        "Search sessions",
        "Full-text search of titles, summaries and transcripts: every word must occur in "
        "one message. Each hit: session, title, message index (for read_session), snippet.",
        {
            "query": _string("Words to find (each a prefix).", 1000),
            "limit": _integer(f"Hits to return, 1 to {LIMIT}.", 1, LIMIT, 20),
        },
        ("query",),
        _object({"hits": {"type": "array", "items": HIT}}, "hits"),
    ),
    Spec(
        "read_session",
        "Read a session",
        "A page of a session's full transcript (compacted turns included), from message "
        f"`start`: each message's index, role and text (cut at {TEXT:,} characters), and "
        "where the next page starts (null at the end).",
        {
            "session": SESSION,
            "start": _integer("Index of the first message, 0 or more.", 0, None, 0),
            "count": _integer(f"Messages in the page, 1 to {PAGE}.", 1, PAGE, PAGE),
        },
        ("session",),
        _object(
            {
                "session": {"type": "string"},
                "total": {"type": "integer"},
                "messages": {"type": "array", "items": MESSAGE},
                "next": {"type": ["integer", "null"]},
            },
            "session",
            "total",
            "messages",
            "next",
        ),
    ),
    Spec(
        "session_info",
        "Session header",
        "One session's header: title, summary, counts, usage, model, workspace, parent, "
        "project instruction files, dates.",
        {"session": SESSION},
        ("session",),
        _object({"id": {"type": "string"}, "head": {"type": "string"}}, "id", "head"),
    ),
    Spec(
        "diff_sessions",
        "Compare two sessions",
        "What each of two session states did since their common ancestor (ids, or "
        "revisions such as ID@turn:3 or ID~2): messages appended, compactions, renames...",
        {"a": _string("A session id or revision."), "b": _string("A session id or revision.")},
        ("a", "b"),
        ANY_OBJECT,
    ),
    Spec(
        "blame",
        "Which session turn wrote a line",
        "Why is this line here: the session and turn of this project that last wrote line "
        "`line` of `file` (a path in the project, as it is in the working tree), that "
        "turn's title and prompt, and the command that shows the turn; session null for "
        "a line a person wrote.",
        {
            "file": _string("A file of the project, relative to its root or absolute.", 4096),
            "line": _integer("The line number (1-based).", 1, None, 1),
        },
        ("file", "line"),
        _object(
            {
                "path": {"type": "string"},
                "line": {"type": "integer"},
                "text": {"type": "string"},
                "session": {"type": NULLABLE},
                "turn": {"type": ["integer", "null"]},
                "commit": {"type": NULLABLE},
                "title": {"type": "string"},
                "prompt": {"type": "string"},
                "show": {"type": NULLABLE},
            },
            "path",
            "line",
            "text",
            "session",
            "turn",
        ),
    ),
    Spec(
        "pin",
        "Pin a note",
        "Pin a note to a session: it survives every compaction verbatim.",
        {"session": SESSION, "text": _string("The note.", 10_000)},
        ("session", "text"),
        _object({"session": {"type": "string"}, "pins": {"type": "integer"}}, "session", "pins"),
        writes=True,
    ),
    Spec(
        "rename",
        "Rename a session",
        "Give a session a new title (the one it had stays in its history).",
        {"session": SESSION, "title": _string("The new title.", 1000)},
        ("session", "title"),
        _object({"session": {"type": "string"}, "title": {"type": "string"}}, "session", "title"),
        writes=True,
        destructive=True,
    ),
    Spec(
        "fork",
        "Fork a session",
        "A new session starting at the session's head (or `at`: turn:N or a commit); "
        "nothing copied. Returns the fork's id.",
        {
            "session": SESSION,
            "at": {**_string("turn:N or a commit (default: the head)."), "type": NULLABLE},
            "title": {**_string("The fork's title.", 1000), "type": NULLABLE},
        },
        ("session",),
        _object({"id": {"type": "string"}, "parent_id": {"type": NULLABLE}}, "id", "parent_id"),
        writes=True,
    ),
)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(tool: str, name: str, schema: dict[str, Any], value: Any) -> Any:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if value is None and "null" in kinds:
        return None
    if "integer" in kinds:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        low, high = schema["minimum"], schema.get("maximum")
        wanted = f"from {low} to {high}" if high is not None else f"of {low} or more"
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise BadArguments(f"{tool}: {name} must be an integer {wanted} (got {_shown(value)})")
        if high is not None and value > high:
            raise BadArguments(f"{tool}: {name} must be an integer {wanted} (got {_shown(value)})")
        return value
    if "boolean" in kinds:
        if not isinstance(value, bool):
            raise BadArguments(f"{tool}: {name} must be true or false (got {_shown(value)})")
        return value
    if not isinstance(value, str):
        raise BadArguments(f"{tool}: {name} must be a string (got {_shown(value)})")
    if len(value) > schema["maxLength"]:
        raise BadArguments(
            f"{tool}: {name} must be at most {schema['maxLength']:,} characters "
            f"(got {len(value):,})"
        )
    return value


def check_arguments(spec: Spec, arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with the defaults filled in, each checked against `spec`'s input
    schema; `BadArguments` (one line) for the first that does not fit."""
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        takes = ", ".join(spec.properties) or "nothing"
        raise BadArguments(f"{spec.name}: no argument {_shown(unknown[0])} (it takes {takes})")
    checked: dict[str, Any] = {}
    for name, schema in spec.properties.items():
        if name not in arguments:
            if name in spec.required:
                raise BadArguments(f"{spec.name}: {name} is required")
            checked[name] = schema.get("default")
            continue
        checked[name] = _check(spec.name, name, schema, arguments[name])
    return checked
