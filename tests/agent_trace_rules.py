"""The Agent Trace record's rules (spec 0.1.0, `schemas/trace-record.json` of the public
cursor/agent-trace repository), written out as checks: required fields, types, enums,
patterns and formats, and no key the schema does not define (its objects are closed, as
the zod objects it is generated from are)."""

import re
import uuid
from datetime import datetime
from typing import Any

VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$")  # RFC 3986: a scheme, then no space
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _object(value: Any, where: str, required: set[str], allowed: set[str]) -> None:
    assert isinstance(value, dict), f"{where}: not an object"
    assert required <= value.keys(), f"{where}: missing {required - value.keys()}"
    assert value.keys() <= allowed, f"{where}: keys the schema lacks {value.keys() - allowed}"


def _string(value: Any, where: str) -> None:
    assert isinstance(value, str), f"{where}: not a string"


def _uri(value: Any, where: str) -> None:
    _string(value, where)
    assert URI.match(value), f"{where}: not a URI: {value!r}"


def _contributor(value: Any, where: str) -> None:
    _object(value, where, {"type"}, {"type", "model_id"})
    assert value["type"] in ("human", "ai", "mixed", "unknown"), where
    if "model_id" in value:
        _string(value["model_id"], where)
        assert len(value["model_id"]) <= 250, where


def _range(value: Any, where: str) -> None:
    _object(value, where, {"start_line", "end_line"},
            {"start_line", "end_line", "content_hash", "contributor"})  # fmt: skip
    for key in ("start_line", "end_line"):
        line = value[key]
        assert isinstance(line, int) and not isinstance(line, bool) and line >= 1, where
    if "content_hash" in value:
        _string(value["content_hash"], where)
    if "contributor" in value:
        _contributor(value["contributor"], where)


def _conversation(value: Any, where: str) -> None:
    _object(value, where, {"ranges"}, {"url", "contributor", "ranges", "related"})
    if "url" in value:
        _uri(value["url"], where)
    if "contributor" in value:
        _contributor(value["contributor"], where)
    assert isinstance(value["ranges"], list), where
    for i, item in enumerate(value["ranges"]):
        _range(item, f"{where}.ranges[{i}]")
    if "related" in value:
        assert isinstance(value["related"], list), where
        for i, item in enumerate(value["related"]):
            _object(item, f"{where}.related[{i}]", {"type", "url"}, {"type", "url"})
            _string(item["type"], where)
            _uri(item["url"], where)


def check_record(record: Any) -> None:
    """AssertionError naming the first rule `record` breaks."""
    _object(record, "record", {"version", "id", "timestamp", "files"},
            {"version", "id", "timestamp", "vcs", "tool", "files", "metadata"})  # fmt: skip
    assert isinstance(record["version"], str) and VERSION.match(record["version"])
    assert str(uuid.UUID(record["id"])) == record["id"].lower()
    assert RFC3339.match(record["timestamp"]), record["timestamp"]
    datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
    if "vcs" in record:
        _object(record["vcs"], "vcs", {"type", "revision"}, {"type", "revision"})
        assert record["vcs"]["type"] in ("git", "jj", "hg", "svn")
        _string(record["vcs"]["revision"], "vcs.revision")
    if "tool" in record:
        _object(record["tool"], "tool", set(), {"name", "version"})
        for key in record["tool"]:
            _string(record["tool"][key], f"tool.{key}")
    if "metadata" in record:
        assert isinstance(record["metadata"], dict)
    assert isinstance(record["files"], list)
    for i, file in enumerate(record["files"]):
        _object(file, f"files[{i}]", {"path", "conversations"}, {"path", "conversations"})
        _string(file["path"], f"files[{i}].path")
        assert isinstance(file["conversations"], list)
        for j, conversation in enumerate(file["conversations"]):
            _conversation(conversation, f"files[{i}].conversations[{j}]")
