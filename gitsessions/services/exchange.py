"""Export and import: a whole session as one JSON document (`gitsessions.session/2`).

Format 2 holds the transcript as records (`{"message", "time", "turn", "step", ...}`, as
the store keeps them); a format-1 document (bare messages) still imports.

Invariants:
- Import validates the whole document before writing anything: a malformed document
  writes nothing and raises `InvalidExport` naming the first problem.
- Export then import then export gives the same JSON (the import commit keeps the
  document's own timestamps).
- With the store's redaction on, an export holds no secret value, even of a session
  stored before redaction existed; an import is redacted by the store as it is written.
"""

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from gitsessions.services import writer
from gitsessions.store.errors import SessionExists
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.canonical import dumps
from gitsessions.values.clock import parse_iso
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import check_title, is_session_id, new_id
from gitsessions.values.messages import TRANSCRIPT_ONLY, InvalidMessages, validate_messages
from gitsessions.values.records import LOCAL_ONLY_FIELDS, USAGE_TOTAL_KEYS, empty_workspace
from gitsessions.values.secrets import redact_value

EXPORT_FORMAT = "gitsessions.session/2"
IMPORTED_FORMATS = ("gitsessions.session/1", EXPORT_FORMAT)
RECORD_FIELDS = {"message", "time", "turn", "step", "model", "usage"}
REQUIRED = ("format", "id", "messages", "transcript")
OPTIONAL_DEFAULTS: dict[str, Any] = {
    "title": "",
    "summary": "",
    "parent_id": None,
    "fork_point": None,
    "archived": False,
    "created_at": None,
    "updated_at": None,
    "active_at": None,
    "workspace": None,
    "model": None,
    "plan": [],
    "usage": None,
    "compactions": [],
    "pins": [],
}
HEADER_FIELDS = (
    "title",
    "summary",
    "parent_id",
    "fork_point",
    "archived",
    "created_at",
    "updated_at",
    "active_at",
    "workspace",
    "model",
)  # the header as the document holds it
WORKSPACE_KEYS = tuple(empty_workspace())
_SHA = re.compile(r"[0-9a-f]{40}")
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?Z")


class InvalidExport(InvalidInput):
    """An export document that cannot be imported."""


def export_session(store: SessionStore, head: Head) -> dict[str, Any]:
    """The whole session at `head` as an export document (redacted when the store
    redacts)."""
    return export_redacted(store, head)[0]


def export_redacted(store: SessionStore, head: Head) -> tuple[dict[str, Any], dict[str, int]]:
    """The export document and `{rule: count}` of what was redacted in it just now."""
    doc = _document(store, head)
    return redact_value(doc) if store.redact else (doc, {})


def _document(store: SessionStore, head: Head) -> dict[str, Any]:
    h = head.header
    return {
        "format": EXPORT_FORMAT,
        "id": head.id,
        **{key: h.get(key, OPTIONAL_DEFAULTS[key]) for key in HEADER_FIELDS},
        "messages": store.read(head, "context"),
        "transcript": store.records(head),
        "plan": store.read(head, "plan"),
        "usage": store.read(head, "usage"),
        "compactions": store.read(head, "compactions"),
        "pins": store.read(head, "pins"),
    }


def parse_export(data: bytes) -> dict[str, Any]:
    """Decode and validate an export file's bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidExport(f"not valid UTF-8 (byte {error.start})") from None
    try:
        doc = json.loads(
            text, parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float
        )
    except json.JSONDecodeError as error:
        raise InvalidExport(
            f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except ValueError as error:  # what json itself refuses beyond JSONDecodeError
        raise InvalidExport(f"malformed JSON: {first_line(str(error))}") from None
    except RecursionError:
        raise InvalidExport("nested too deeply to be a session") from None
    validate_export(doc)
    try:
        dumps(doc)  # lone surrogates (\ud800 escapes) cannot be stored
    except InvalidInput as error:
        raise InvalidExport(str(error)) from None
    return doc


def _no_constant(name: str) -> Any:
    raise InvalidExport(f"{name} is not a number a session can hold")


def _bounded_int(text: str) -> int:
    """Integers a session can hold: 64-bit. Checked on the digits, before Python's own
    conversion (which refuses 4,300+ digits with a ValueError of its own)."""
    digits = len(text.lstrip("-"))
    if digits > 19 or not -(2**63) <= int(text) < 2**63:
        raise InvalidExport(f"a {digits}-digit integer is too large to be part of a session")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidExport(f"{text[:20]} is not a number a session can hold")
    return value


def first_line(text: str) -> str:
    return (text.splitlines() or [""])[0][:200]


def _expect(doc: Mapping[str, Any], key: str, types: type | tuple[type, ...], what: str) -> None:
    value = doc.get(key)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
        raise InvalidExport(f"{key!r} must be {what}, got {type(value).__name__}")


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def validate_export(doc: Any) -> None:
    """Raise `InvalidExport` on the first thing wrong with an export document."""
    if not isinstance(doc, dict):
        raise InvalidExport("the document must be a JSON object")
    if doc.get("format") not in IMPORTED_FORMATS:
        raise InvalidExport(f"unknown format {doc.get('format')!r}; expected {EXPORT_FORMAT!r}")
    for key in REQUIRED:
        if key not in doc:
            raise InvalidExport(f"missing {key!r}")
    # a local mark (a worktree made on another machine) is accepted and dropped
    unknown = sorted(set(doc) - set(REQUIRED) - set(OPTIONAL_DEFAULTS) - set(LOCAL_ONLY_FIELDS))
    if unknown:
        raise InvalidExport(f"unknown field {unknown[0]!r}")
    if not is_session_id(doc["id"]):
        raise InvalidExport(f"'id' must be 32 lowercase hex characters, got {doc['id']!r}")
    if "title" in doc:
        _expect(doc, "title", str, "a string")
    if doc.get("title"):
        try:
            check_title(doc["title"])
        except InvalidInput as error:
            raise InvalidExport(f"'title': {error}") from None
    if "summary" in doc:
        _expect(doc, "summary", str, "a string")
    if doc.get("parent_id") is not None and not is_session_id(doc["parent_id"]):
        raise InvalidExport("'parent_id' must be a session id or null")
    if doc.get("fork_point") is not None and not (
        isinstance(doc["fork_point"], str) and _SHA.fullmatch(doc["fork_point"])
    ):
        raise InvalidExport("'fork_point' must be a 40-hex commit id or null")
    if "archived" in doc:
        _expect(doc, "archived", bool, "true or false")
    for key in ("created_at", "updated_at", "active_at"):
        if doc.get(key) is not None:
            try:
                parse_iso(doc[key])
            except (TypeError, ValueError):
                raise InvalidExport(f"{key!r} must look like 2026-11-30T10:00:00Z") from None
    if doc.get("model") is not None:
        _expect(doc, "model", str, "a string or null")
    _validate_workspace(doc.get("workspace"))
    if doc["format"] == EXPORT_FORMAT:
        _validate_records(doc["transcript"])
    for key, messages in (("messages", doc["messages"]), ("transcript", messages_of(doc))):
        try:
            validate_messages(messages, key)
        except InvalidMessages as error:
            raise InvalidExport(str(error)) from None
    for n, message in enumerate(doc["messages"]):
        kept = [field for field in TRANSCRIPT_ONLY if field in message]
        if kept:
            raise InvalidExport(f"messages[{n}]: {kept[0]!r} belongs in the transcript only")
    for key in ("plan", "compactions", "pins"):
        if key in doc:
            _expect(doc, key, list, "a list")
    if any(not isinstance(p, str) for p in doc.get("pins", [])):
        raise InvalidExport("'pins' must be a list of strings")
    for n, record in enumerate(doc.get("compactions", [])):
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("before_tokens"), int)
            or not isinstance(record.get("after_tokens"), int)
        ):
            raise InvalidExport(f"compactions[{n}] needs integer before_tokens and after_tokens")
    usage = doc.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise InvalidExport("'usage' must be an object")
        for key in USAGE_TOTAL_KEYS:
            value = usage.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidExport(f"'usage.{key}' must be a non-negative number")


def messages_of(doc: Mapping[str, Any]) -> list[Any]:
    """The transcript's messages of a validated document of either format."""
    if doc["format"] == EXPORT_FORMAT:
        return [record["message"] for record in doc["transcript"]]
    return list(doc["transcript"])


def _validate_records(records: Any) -> None:
    if not isinstance(records, list):
        raise InvalidExport("'transcript' must be a list of records")
    for n, record in enumerate(records):
        where = f"transcript[{n}]"
        if not isinstance(record, dict) or "message" not in record:
            raise InvalidExport(f"{where}: a record needs a 'message'")
        unknown = sorted(set(record) - RECORD_FIELDS)
        if unknown:
            raise InvalidExport(f"{where}: unknown field {unknown[0]!r}")
        if "time" in record and not (
            isinstance(record["time"], str) and _TIME.fullmatch(record["time"])
        ):
            raise InvalidExport(f"{where}: 'time' must look like 2026-11-30T10:00:00.000Z")
        for key in ("turn", "step"):
            value = record.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidExport(f"{where}: {key!r} must be a non-negative integer")
        if not isinstance(record.get("model", ""), str):
            raise InvalidExport(f"{where}: 'model' must be a string")
        if not isinstance(record.get("usage", {}), dict):
            raise InvalidExport(f"{where}: 'usage' must be an object")


def _validate_workspace(workspace: Any) -> None:
    if workspace is None:
        return
    if not isinstance(workspace, dict):
        raise InvalidExport("'workspace' must be an object or null")
    for key, value in workspace.items():
        if key not in WORKSPACE_KEYS:
            raise InvalidExport(f"unknown field 'workspace.{key}'")
        if value is not None and not isinstance(value, str):
            raise InvalidExport(f"'workspace.{key}' must be a string or null")


def import_session(
    store: SessionStore, doc: Mapping[str, Any], *, fresh_id: bool, now: str
) -> Head:
    """Create a session from a validated document; `fresh_id` gives it a new id. The
    commit is dated `now` (the import); the imported times stay in the header."""
    full = {**OPTIONAL_DEFAULTS, **doc}
    session_id = new_id() if fresh_id else full["id"]
    if session_id in store.ids():
        raise SessionExists(
            f"session {session_id} already exists; import with --new-id to keep both"
        )
    header = {key: full[key] for key in HEADER_FIELDS}
    header.update(
        id=session_id,
        created_at=full["created_at"] or now,
        updated_at=full["updated_at"] or now,
        workspace=full["workspace"] or empty_workspace(),
    )
    header["active_at"] = full["active_at"] or header["updated_at"]
    records = (
        list(full["transcript"])
        if full["format"] == EXPORT_FORMAT
        else [{"message": m} for m in full["transcript"]]
    )
    change = Change(
        context=list(full["messages"]),
        append=[record["message"] for record in records],
        append_meta=[{k: v for k, v in r.items() if k != "message"} for r in records],
        as_recorded=True,
        compactions=list(full["compactions"]),
        plan=list(full["plan"]),
        pins=list(full["pins"]),
        usage=full["usage"],
    )
    trailers = {"Imported-From": doc["id"]} if fresh_id else {}
    return writer.create(
        store,
        header,
        change,
        operation="import",
        event="import",
        subject=f"import: {header['title'] or session_id[:8]}",
        trailers=trailers,
        source=doc["id"],
        when=int(parse_iso(now).timestamp()),  # the commit is dated at the import
    )
