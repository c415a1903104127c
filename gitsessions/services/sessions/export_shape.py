"""The shape of an export document (`gitsessions.session/1-3`) and of a transcript
record, as JSON Schemas checked by values/shapes.py (the project's one check of a JSON
shape), and the one line `import` says for the first part that does not fit.

What a schema cannot say is checked by exchange.py: a title's text, the dates, the
messages and their pairing, a record's files.

Invariant: each line is the one `import` gave before these schemas (tests/
test_export_shape.py and test_exchange.py pin them): a key's `description` is what its
value must be, and `said` words a misfit from it; nothing here echoes more than 80
characters of what was sent (a long id or field name is cut).
"""

from typing import Any

from gitsessions.services.sessions.exchange_files import InvalidExport
from gitsessions.values.records import LOCAL_ONLY_FIELDS, USAGE_TOTAL_KEYS, empty_workspace
from gitsessions.values.shapes import Misfit, check, described

EXPORT_FORMAT = "gitsessions.session/3"  # a session that holds files
PLAIN_FORMAT = "gitsessions.session/2"  # one that holds none: what older builds import too
RECORD_FORMATS = (PLAIN_FORMAT, EXPORT_FORMAT)  # whose transcript holds records
IMPORTED_FORMATS = ("gitsessions.session/1", *RECORD_FORMATS)
WORKSPACE_KEYS = (*empty_workspace(), "user", "host")
TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?Z$"


def _typed(kinds: str | list[str], said: str, **keywords: Any) -> dict[str, Any]:
    """A key's schema: its JSON types and `said`, what its value must be."""
    return described({"type": kinds, **keywords}, said)


# a field whose type alone is said with what it was: "'title' must be a string, got int"
TYPED = {
    "title": _typed("string", "a string"),
    "summary": _typed("string", "a string"),
    "imported": _typed(["object", "null"], "an object or null"),
    "archived": _typed("boolean", "true or false"),
    "model": _typed(["string", "null"], "a string or null"),
    "plan": _typed("array", "a list"),
    "compactions": _typed(
        "array",
        "a list",
        items=_typed(
            "object",
            "an object",
            properties={"before_tokens": {"type": "integer"}, "after_tokens": {"type": "integer"}},
            required=["before_tokens", "after_tokens"],
        ),
    ),
    "pins": _typed("array", "a list", items={"type": "string"}),
}
PROJECT = {
    "type": ["object", "null"],
    "properties": {
        key: {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 4096}}
        for key in ("roots", "remotes")
    },
    "required": ["roots", "remotes"],
    "additionalProperties": False,
}
# checked first: a document of a format this build does not know is said so, whatever
# else it holds
FORMAT = {
    "type": "object",
    "properties": {"format": {"enum": list(IMPORTED_FORMATS)}},
    "required": ["format"],
}
DOCUMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "format": {},
        "id": _typed("string", "32 lowercase hex characters", pattern="^[0-9a-f]{32}$"),
        "messages": {},  # values/messages.py checks them
        "transcript": _typed("array", "a list of records"),
        **TYPED,
        "parent_id": _typed(["string", "null"], "a session id or null", pattern="^[0-9a-f]{32}$"),
        "fork_point": _typed(
            ["string", "null"], "a 40-hex commit id or null", pattern="^[0-9a-f]{40}$"
        ),
        **{key: {} for key in ("created_at", "updated_at", "active_at")},  # exchange.py parses
        "workspace": _typed(
            ["object", "null"],
            "an object or null",
            properties={
                **{key: _typed(["string", "null"], "a string or null") for key in WORKSPACE_KEYS},
                "project": PROJECT,
            },
            additionalProperties=False,
        ),
        "usage": _typed(
            ["object", "null"],
            "an object",
            properties={
                key: _typed("number", "a non-negative number", minimum=0)
                for key in USAGE_TOTAL_KEYS
            },
        ),
        **{key: {} for key in LOCAL_ONLY_FIELDS},  # a local mark: accepted, then dropped
    },
    "required": ["format", "id", "messages", "transcript"],
    "additionalProperties": False,
}


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(map(str, path))


def said(misfit: Misfit) -> str:
    """The line `import` says for `misfit`, the first part of a document that does not
    fit `DOCUMENT`."""
    path, value = misfit.path, misfit.value
    if (misfit.kind == "missing" and value == "format") or path == ("format",):
        found = None if misfit.kind == "missing" else value
        return f"unknown format {found!r}; expected {EXPORT_FORMAT!r}"
    if misfit.kind == "missing" and not path:
        return f"missing {value!r}"
    if misfit.kind == "unknown":
        return f"unknown field {_dotted((*path, value[0]))!r:.80}"
    if not path:
        return "the document must be a JSON object"
    key = path[0]
    if key == "id":
        return f"'id' must be 32 lowercase hex characters, got {value!r:.80}"
    if key == "compactions" and len(path) > 1:
        return f"compactions[{path[1]}] needs integer before_tokens and after_tokens"
    if key == "pins" and len(path) > 1:
        return "'pins' must be a list of strings"
    if key in TYPED and len(path) == 1:
        return f"{key!r} must be {misfit.schema['description']}, got {type(value).__name__}"
    if path[:2] == ("workspace", "project"):
        if len(path) == 2 or misfit.kind in ("missing", "unknown"):
            return "'workspace.project' must be null or an object of roots and remotes"
        if misfit.kind in ("type", "maxItems") and len(path) == 3:
            return f"'{_dotted(path)}' must be a list of at most 16"
        return f"'{_dotted(path[:3])}' must hold strings"
    return f"'{_dotted(path)}' must be {misfit.schema['description']}"


def checked_document(doc: Any) -> dict[str, Any]:
    """`doc` as it fits `DOCUMENT` (a whole number written 2.0 made an int), or the
    `InvalidExport` of its first misfit."""
    try:
        check(doc, FORMAT)
        fitting: dict[str, Any] = check(doc, DOCUMENT)
    except Misfit as misfit:
        raise InvalidExport(said(misfit)) from None
    return fitting


RECORD_FIELDS = ("message", "time", "turn", "step", "model", "usage", "source")


def _record(files: bool) -> dict[str, Any]:
    natural = _typed("integer", "a non-negative integer", minimum=0)
    properties: dict[str, Any] = {
        "message": {},  # values/messages.py checks it
        "time": _typed("string", "look like 2026-11-30T10:00:00.000Z", pattern=TIME),
        "turn": natural,
        "step": natural,
        "model": _typed("string", "a string"),
        "usage": _typed("object", "an object"),
        "source": _typed("object", "an object"),
    }
    if files:
        properties["files"] = {}  # exchange_files.py checks them
    shape = {"properties": properties, "required": ["message"], "additionalProperties": False}
    return _typed("object", "a record", **shape)


RECORDS = {format_: _record(format_ == EXPORT_FORMAT) for format_ in RECORD_FORMATS}


def checked_record(n: int, record: Any, format_: str) -> dict[str, Any]:
    """Element `n` of a transcript in `format_` (a record format) as it fits a record,
    or the `InvalidExport` naming it and its first misfit."""
    where = f"transcript[{n}]"
    try:
        fitting: dict[str, Any] = check(record, RECORDS[format_])
    except Misfit as misfit:
        if not misfit.path and misfit.kind in ("type", "missing"):
            raise InvalidExport(f"{where}: a record needs a 'message'") from None
        if misfit.kind == "unknown":
            raise InvalidExport(f"{where}: unknown field {misfit.value[0]!r:.80}") from None
        key, what = misfit.path[0], misfit.schema["description"]
        verb = "" if what.startswith("look like") else "be "
        raise InvalidExport(f"{where}: {key!r} must {verb}{what}") from None
    return fitting
