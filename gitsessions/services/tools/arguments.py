"""Parsing and checking a tool call's arguments against the tool's JSON schema.

The model's arguments arrive as a JSON string. They are accepted only if they decode to
an object that matches the schema (values/shapes.py, the project's one check of a JSON
shape): no unknown keys, every required key present, every value of a declared type (a
bool is not an integer; 2.0 is the integer 2), within enum and minimum/maximum.
A property whose type allows null may be omitted and is then passed as None, so a
handler always receives every declared key. Failures raise `InvalidArguments` with a
message that tells the model what to send instead.
"""

import json
from collections.abc import Mapping
from typing import Any

from gitsessions.services.tools.errors import ToolError
from gitsessions.values.shapes import Misfit, Path, check, kind_of, types_of


class InvalidArguments(ToolError):
    """A tool call's arguments are not valid JSON or do not match the tool's schema."""


def signature(name: str, parameters: Mapping[str, Any]) -> str:
    """`name(param: type, ...)` for error messages, e.g. `read_file(path: string, ...)`."""
    properties = parameters.get("properties", {})
    shown = ", ".join(f"{key}: {'|'.join(types_of(value))}" for key, value in properties.items())
    return f"{name}({shown})"


def parse_arguments(raw: Any) -> dict[str, Any]:
    """The JSON object in `raw`; an empty string means no arguments."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        raise InvalidArguments(f"arguments must be a JSON string, got {type(raw).__name__}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise InvalidArguments(
            f"arguments are not valid JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); send one JSON object"
        ) from None
    except ValueError as error:  # e.g. an integer of 4,300+ digits
        raise InvalidArguments(
            f"arguments are not usable JSON ({str(error).split(';')[0]}); send one JSON object"
        ) from None
    if not isinstance(value, dict):
        raise InvalidArguments(f"arguments must be a JSON object, got {kind_of(value)}")
    return value


def _where(path: Path) -> str:
    """`items[0].status` for the path ("items", 0, "status")."""
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else part
    return where


def _said(misfit: Misfit) -> str:
    """The line a misfit gets, telling the model what to send instead."""
    where, schema, value = _where(misfit.path), misfit.schema, misfit.value
    prefix = f"{where}." if where else ""
    if misfit.kind == "unknown":
        return "unexpected parameter " + ", ".join(repr(f"{prefix}{key}") for key in value)
    if misfit.kind == "missing":
        return f"missing required parameter {f'{prefix}{value}'!r}"
    if misfit.kind == "enum":
        choices = ", ".join(repr(choice) for choice in schema["enum"])
        return f"{where!r} must be one of {choices}, got {value!r}"
    if misfit.kind == "minimum":
        return f"{where!r} must be at least {schema['minimum']}, got {value}"
    if misfit.kind == "exclusiveMinimum":
        return f"{where!r} must be more than {schema['exclusiveMinimum']}, got {value}"
    if misfit.kind == "maximum":
        return f"{where!r} must be at most {schema['maximum']}, got {value}"
    if misfit.kind == "maxLength":
        return f"{where!r} must be at most {schema['maxLength']} characters, got {len(value)}"
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{where!r} must be {' or '.join(types_of(schema))}, got {kind_of(value)} {shown}"


def check_arguments(
    name: str, arguments: Mapping[str, Any], parameters: Mapping[str, Any]
) -> dict[str, Any]:
    """`arguments` checked against `parameters`, omitted optional keys filled with None."""
    try:
        checked: dict[str, Any] = check(dict(arguments), parameters, fill=True)
    except Misfit as misfit:
        raise InvalidArguments(
            f"invalid arguments for {name}: {_said(misfit)}; expected {signature(name, parameters)}"
        ) from None
    return checked
