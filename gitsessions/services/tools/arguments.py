"""Parsing and checking a tool call's arguments against the tool's JSON schema.

The model's arguments arrive as a JSON string. They are accepted only if they decode to
an object that matches the schema: no unknown keys, every required key present, every
value of a declared type (a bool is not an integer), within enum and minimum/maximum.
A property whose type allows null may be omitted and is then passed as None, so a
handler always receives every declared key. Failures raise `InvalidArguments` with a
message that tells the model what to send instead.
"""

import json
from collections.abc import Mapping
from typing import Any

from gitsessions.services.tools.errors import ToolError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class InvalidArguments(ToolError):
    """A tool call's arguments are not valid JSON or do not match the tool's schema."""


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def signature(name: str, parameters: Mapping[str, Any]) -> str:
    """`name(param: type, ...)` for error messages, e.g. `read_file(path: string, ...)`."""
    properties = parameters.get("properties", {})
    shown = ", ".join(f"{key}: {'|'.join(_types(value))}" for key, value in properties.items())
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
        raise InvalidArguments(f"arguments must be a JSON object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    for name, kinds in _TYPES.items():
        if isinstance(value, kinds) and not (
            name in ("integer", "number") and isinstance(value, bool)
        ):
            return name
    return type(value).__name__


def _is(value: Any, type_name: str) -> bool:
    kinds = _TYPES.get(type_name)
    if kinds is None:
        return True
    if type_name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, kinds)


def _check(value: Any, schema: Mapping[str, Any], where: str) -> Any:
    types = _types(schema)
    if types and not any(_is(value, name) for name in types):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise InvalidArguments(
            f"{where!r} must be {' or '.join(types)}, got {_kind(value)} {shown}"
        )
    if value is None:
        return None
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(choice) for choice in schema["enum"])
        raise InvalidArguments(f"{where!r} must be one of {choices}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise InvalidArguments(f"{where!r} must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise InvalidArguments(f"{where!r} must be at most {schema['maximum']}, got {value}")
    if isinstance(value, list) and "items" in schema:
        return [_check(item, schema["items"], f"{where}[{n}]") for n, item in enumerate(value)]
    if isinstance(value, dict) and "properties" in schema:
        return _check_object(value, schema, where)
    return value


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    prefix = f"{where}." if where else ""
    if schema.get("additionalProperties") is False:
        extra = sorted(key for key in value if key not in properties)
        if extra:
            names = ", ".join(repr(f"{prefix}{key}") for key in extra)
            raise InvalidArguments(f"unexpected parameter {names}")
    checked: dict[str, Any] = {}
    for key, property_schema in properties.items():
        if key in value:
            checked[key] = _check(value[key], property_schema, f"{prefix}{key}")
        elif "null" in _types(property_schema) or key not in schema.get("required", []):
            checked[key] = None
        else:
            raise InvalidArguments(f"missing required parameter {f'{prefix}{key}'!r}")
    for key in value:
        checked.setdefault(key, value[key])
    return checked


def check_arguments(
    name: str, arguments: Mapping[str, Any], parameters: Mapping[str, Any]
) -> dict[str, Any]:
    """`arguments` checked against `parameters`, omitted optional keys filled with None."""
    try:
        return _check_object(dict(arguments), parameters, "")
    except InvalidArguments as error:
        raise InvalidArguments(
            f"invalid arguments for {name}: {error}; expected {signature(name, parameters)}"
        ) from None
