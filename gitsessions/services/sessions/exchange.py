"""Export and import: a whole session as one JSON document (`gitsessions.session/3`:
records as the store keeps them, each carrying the files it is first to name,
`exchange_files`); format 2 and 1 documents still import.

Invariants:
- Import validates the whole document before writing anything (`InvalidExport` names
  the first problem); both stream a record at a time, a long import committed in parts.
- Export, import, export gives the same JSON (the import keeps the document's times,
  the commit is dated at the import), files included.
- With redaction on, an export holds no secret value, even of a session stored before
  redaction existed; an import is redacted as it is written.
"""

import json
import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from gitsessions.services.sessions import exchange_files, writer
from gitsessions.services.sessions.exchange_files import InvalidExport
from gitsessions.services.sessions.export_shape import (
    EXPORT_FORMAT,
    IMPORTED_FORMATS,
    PLAIN_FORMAT,
    RECORD_FORMATS,
    checked_document,
    checked_record,
)
from gitsessions.store import context_refs
from gitsessions.store.errors import SessionExists
from gitsessions.store.files import MAX_COMMIT
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values import jsonstream
from gitsessions.values.canonical import dumps, dumps_line
from gitsessions.values.clock import parse_iso
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import check_title, new_id
from gitsessions.values.messages import (
    TRANSCRIPT_ONLY,
    InvalidMessages,
    pairing_errors,
    validate_message,
    validate_messages,
)
from gitsessions.values.records import empty_workspace
from gitsessions.values.secrets import redact_value

T = TypeVar("T")
PART = 2048  # transcript records per commit of a long import (and MAX_COMMIT bytes of files)
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
    "imported": None,  # where an imported session came from (services/imports/), when it did
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


def export_bytes(store: SessionStore, head: Head, redacted: Counter[str]) -> Iterator[bytes]:
    """The export document's bytes (the whole document's `dumps`, redacted) in pieces, a
    transcript record at a time: memory holds one record, not the session. What is
    redacted is counted into `redacted` as the pieces are made."""
    marker = f"\x00transcript {uuid.uuid4().hex}\x00"
    doc = _document(store, head, marker)
    if store.redact:
        doc, found = redact_value(doc)
        redacted.update(found)
    before, after = dumps(doc).split(dumps_line(marker), 1)
    yield before + b"["
    first = True
    sent: set[str] = set()  # the files carried so far
    for _index, record in store.iter_records(head):
        if store.redact:
            record, found = redact_value(record)
            redacted.update(found)
        record = exchange_files.attach(store, head, record, sent)
        nested = dumps({"t": [record]})  # the record as indented inside the document
        yield (b"\n" if first else b",\n") + nested[len(b'{\n  "t": [\n') : -len(b"\n  ]\n}\n")]
        first = False
    yield (b"]" if first else b"\n  ]") + after


def _document(store: SessionStore, head: Head, transcript: Any) -> dict[str, Any]:
    h = head.header
    return {
        "format": EXPORT_FORMAT if store.holds_files(head) else PLAIN_FORMAT,
        "id": head.id,
        **{key: h.get(key, OPTIONAL_DEFAULTS[key]) for key in HEADER_FIELDS},
        **({"imported": h["imported"]} if isinstance(h.get("imported"), dict) else {}),
        "messages": store.read(head, "context"),
        "transcript": transcript,
        "plan": store.read(head, "plan"),
        "usage": store.read(head, "usage"),
        "compactions": store.read(head, "compactions"),
        "pins": store.read(head, "pins"),
    }


@dataclass(frozen=True)
class Export:
    """An export file checked whole but held without its transcript: `doc` has every
    other member (its "transcript" is empty); `open_text` reads the file again."""

    doc: dict[str, Any]
    open_text: Callable[[], IO[str]]
    records: int


def load_export(open_text: Callable[[], IO[str]]) -> Export:
    """Read and check an export file a transcript record at a time: memory holds one
    record, not the session. Nothing is written; `InvalidExport` names the problem."""
    doc: dict[str, Any] = {}
    count: int | None = None
    streamed = False
    with _json_errors(), open_text() as file:
        for key, value in jsonstream.members(file, streamed="transcript", decoder=_decoder()):
            if key == "transcript" and isinstance(value, Iterator):
                streamed = True
                if doc.get("format") in IMPORTED_FORMATS:
                    count = count_records(doc["format"], value)
                value = []
            doc[key] = value
    doc = validate_export(doc)
    if streamed and count is None:  # "format" came after "transcript": check it now
        count = _with_transcript(open_text, lambda elements: count_records(doc["format"], elements))
    try:
        dumps(doc)
    except InvalidInput as error:
        raise InvalidExport(str(error)) from None
    return Export(doc, open_text, count or 0)


def _with_transcript(open_text: Callable[[], IO[str]], use: Callable[[Iterator[Any]], T]) -> T:
    """`use(the transcript's elements)`, read from the file as they are consumed."""
    with _json_errors(), open_text() as file:
        for key, value in jsonstream.members(file, streamed="transcript", decoder=_decoder()):
            if key == "transcript" and isinstance(value, Iterator):
                return use(value)
    raise InvalidExport("the file changed while it was read")


def _decoder() -> json.JSONDecoder:
    return json.JSONDecoder(
        parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float
    )


@contextmanager
def _json_errors() -> Iterator[None]:
    """What JSON decoding raises, as one-line `InvalidExport`s."""
    try:
        yield
    except json.JSONDecodeError as error:
        raise InvalidExport(
            f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except UnicodeDecodeError as error:
        raise InvalidExport(f"not valid UTF-8 (byte {error.start})") from None
    except jsonstream.NotAnObject:
        raise InvalidExport("the document must be a JSON object") from None
    except ValueError as error:  # what json itself refuses beyond JSONDecodeError
        raise InvalidExport(f"malformed JSON: {first_line(str(error))}") from None
    except RecursionError:
        raise InvalidExport("nested too deeply to be a session") from None


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


def validate_export(document: Any) -> dict[str, Any]:
    """`document` as it fits an export document (export_shape.py: a whole number
    written 2.0 made an int), or `InvalidExport` on the first thing wrong with it."""
    doc = checked_document(document)
    if doc.get("title"):
        try:
            check_title(doc["title"])
        except InvalidInput as error:
            raise InvalidExport(f"'title': {error}") from None
    for key in ("created_at", "updated_at", "active_at"):
        if doc.get(key) is not None:
            try:
                parse_iso(doc[key])
            except (TypeError, ValueError):
                raise InvalidExport(f"{key!r} must look like 2026-11-30T10:00:00Z") from None
    count_records(doc["format"], doc["transcript"])
    try:
        validate_messages(doc["messages"], "messages")
    except InvalidMessages as error:
        raise InvalidExport(str(error)) from None
    for n, message in enumerate(doc["messages"]):
        kept = [field for field in TRANSCRIPT_ONLY if field in message]
        if kept:
            raise InvalidExport(f"messages[{n}]: {kept[0]!r} belongs in the transcript only")
    return doc


def records_of(format_: str, elements: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The transcript's elements as records (a format-1 element is a bare message)."""
    if format_ in RECORD_FORMATS:
        return (checked_record(n, record, format_) for n, record in enumerate(elements))
    return ({"message": message} for message in elements)


def count_records(format_: str, elements: Iterable[Any]) -> int:
    """Check the transcript's elements as they come (one in memory at a time); how many
    there are. `InvalidExport` names the first problem."""
    count = 0

    def checked() -> Iterator[Any]:
        nonlocal count
        for n, element in enumerate(elements):
            record = element if format_ in RECORD_FORMATS else {"message": element}
            if format_ in RECORD_FORMATS:
                record = checked_record(n, record, format_)
                if "files" in record:
                    exchange_files.decoded(f"transcript[{n}]", record["files"])
            try:
                validate_message(record["message"], f"transcript[{n}]")
                dumps_line(record)  # lone surrogates (\ud800 escapes) cannot be stored
            except InvalidInput as error:
                raise InvalidExport(str(error)) from None
            count += 1
            yield record["message"]

    errors = pairing_errors(checked())
    if errors:
        raise InvalidExport(f"transcript: {errors[0]}")
    return count


def import_export(store: SessionStore, export: Export, *, fresh_id: bool, now: str) -> Head:
    """Create a session from a checked export file, its transcript read as it is
    written (a part of `PART` records in memory at a time)."""
    doc = export.doc
    return _with_transcript(
        export.open_text,
        lambda elements: _import(store, doc, records_of(doc["format"], elements), fresh_id, now),
    )


def _import(
    store: SessionStore,
    doc: Mapping[str, Any],
    records: Iterator[dict[str, Any]],
    fresh_id: bool,
    now: str,
) -> Head:
    """Create the session; the commit is dated `now` (the import), the imported times
    stay in the header. A transcript longer than `PART` records is written in parts, each
    a commit, the branch created with the last (see `SessionStore.create`)."""
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
    if full["imported"] is not None:
        header["imported"] = full["imported"]
    change = Change(
        context=list(full["messages"]),
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
        parts=_parts(records, change),
        source=doc["id"],
        when=int(parse_iso(now).timestamp()),  # the commit is dated at the import
    )


def _parts(records: Iterator[dict[str, Any]], last: Change) -> Iterator[Change]:
    """The transcript in parts of `PART` records (or of `MAX_COMMIT` bytes of files) but
    the last, which goes into `last`. Each part's context holds the messages of the final
    context met so far (once each), so the final context refers to transcript lines in
    any part."""
    assert last.context is not None
    wanted = {context_refs.key(message) for message in last.context}
    met: dict[bytes, dict[str, Any]] = {}
    batch: list[dict[str, Any]] = []
    held = 0  # bytes of the batch's files
    for record in records:
        if len(batch) == PART or held >= MAX_COMMIT:
            yield _change(batch, Change(context=list(met.values()), as_recorded=True))
            batch, held = [], 0
        batch.append(record)
        held += exchange_files.held(record)
        if wanted:
            key = context_refs.key(record["message"])
            if key in wanted:
                met.pop(key, None)
                met[key] = record["message"]
    _change(batch, last)


def _change(batch: list[dict[str, Any]], change: Change) -> Change:
    change.append = [record["message"] for record in batch]
    change.append_meta = [
        {k: v for k, v in r.items() if k not in ("message", "files")} for r in batch
    ]
    for n, record in enumerate(batch):
        if "files" in record:  # checked when the document was read
            change.files.update(exchange_files.decoded(f"transcript[{n}]", record["files"]))
    return change
