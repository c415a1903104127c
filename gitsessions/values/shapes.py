"""The one check of a JSON value's shape against a JSON Schema, raising `Misfit` (what does
not fit and where) for the caller to word in its own line: tool and MCP call arguments,
config.toml's tables and model settings, `[mcp_servers]`, export documents and their
records (services/sessions/export_shape.py), chat messages (values/messages.py).

Invariants: only the subset the project's schemas use is checked (`type`, `anyOf`,
`enum`, bounds, `minLength`, `maxLength`, `pattern`, `items`, `maxItems`, `properties`,
`required`, `additionalProperties`), each as JSON Schema has it: 2.0 is the integer 2, a
boolean is no number and NaN or an infinity is none either; every caller's lines rest on
that (their tests pin them). Stdlib only: the schemas are JSON Schema because the model
and MCP clients are shown them, and pydantic (which checks Python types) costs about
130 ms of CPU to import and build, which `chat` would pay before its prompt.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}

Path = tuple[str | int, ...]


@dataclass(eq=False)
class Misfit(ValueError):
    """The first part of a value that does not fit its schema: `kind` is `type`, `enum`,
    `minimum`, `exclusiveMinimum`, `maximum`, `minLength`, `maxLength`, `pattern`,
    `maxItems`, `unknown` (`value`: the keys not in `properties`, sorted) or `missing` (`value`: the
    required key); `schema` is the part it was checked against (an `anyOf` of types
    merged into one `type` list)."""

    kind: str
    path: Path
    schema: Mapping[str, Any]
    value: Any

    def __str__(self) -> str:
        return f"{'.'.join(map(str, self.path)) or 'the value'}: {self.kind}"


def described(schema: Mapping[str, Any], said: str) -> dict[str, Any]:
    """`schema` with `said` as its `description`: what its value must be, as the caller's
    one line says it when a value does not fit (settings, `[mcp_servers]`, exports)."""
    return {**schema, "description": said}


def types_of(schema: Mapping[str, Any]) -> list[str]:
    """The type names `schema` allows (`anyOf` branches' included); [] for any."""
    declared = flat(schema).get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def flat(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with an `anyOf` of typed branches, at most one of them with keywords
    besides its `type`, merged into one schema whose `type` lists them all (that one's
    keywords kept): `string or null` as one schema. Any other `anyOf` is left as it is
    (and not checked)."""
    branches = schema.get("anyOf")
    if (
        not isinstance(branches, list)
        or not all(isinstance(b, Mapping) and "type" in b for b in branches)
        or sum(len(b) > 1 for b in branches) > 1
    ):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "anyOf"}
    kinds: list[str] = []
    for branch in branches:
        kinds += types_of(branch)
        merged.update({k: v for k, v in branch.items() if k != "type"})
    merged["type"] = kinds
    return merged


def kind_of(value: Any) -> str:
    """The JSON type name of `value` (a Python type's name for what JSON has not)."""
    if isinstance(value, bool):
        return "boolean"
    for name, kinds in KINDS.items():
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def _fits(value: Any, name: str) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False  # NaN and the infinities are no JSON number
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    kinds = KINDS.get(name)
    return kinds is None or isinstance(value, kinds)


def check(value: Any, schema: Mapping[str, Any], path: Path = (), fill: bool = False) -> Any:
    """`value` as it fits `schema` (an integral float where an integer is asked is
    made an int), or `Misfit` for the first part that does not. With `fill`, an object's
    declared key that is omitted and optional (or nullable) is there as None."""
    schema = flat(schema)
    kinds = types_of(schema)
    if kinds and not any(_fits(value, name) for name in kinds):
        raise Misfit("type", path, schema, value)
    if value is None and kinds:  # null is a type it allows: the other keywords are moot
        return None
    if "integer" in kinds and isinstance(value, float):
        value = int(value)
    if "enum" in schema and value not in schema["enum"]:
        raise Misfit("enum", path, schema, value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise Misfit("minimum", path, schema, value)
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            raise Misfit("exclusiveMinimum", path, schema, value)
        if "maximum" in schema and value > schema["maximum"]:
            raise Misfit("maximum", path, schema, value)
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise Misfit("minLength", path, schema, value)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise Misfit("maxLength", path, schema, value)
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise Misfit("pattern", path, schema, value)
    if isinstance(value, list) and "maxItems" in schema and len(value) > schema["maxItems"]:
        raise Misfit("maxItems", path, schema, value)
    if isinstance(value, list) and "items" in schema:
        return [check(item, schema["items"], (*path, n), fill) for n, item in enumerate(value)]
    if isinstance(value, dict) and ("properties" in schema or "additionalProperties" in schema):
        return _check_object(value, schema, path, fill)
    return value


def _check_object(
    value: dict[str, Any], schema: Mapping[str, Any], path: Path, fill: bool
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    others = schema.get("additionalProperties", True)
    extra = sorted(key for key in value if key not in properties)
    if others is False and extra:
        raise Misfit("unknown", path, schema, extra)
    required = schema.get("required", [])
    checked: dict[str, Any] = {}
    for key, part in properties.items():
        if key in value:
            checked[key] = check(value[key], part, (*path, key), fill)
        elif key in required and "null" not in types_of(part):
            raise Misfit("missing", path, schema, key)
        elif fill:
            checked[key] = None
    for key in value:
        if key not in checked:
            fits = isinstance(others, Mapping)
            checked[key] = check(value[key], others, (*path, key), fill) if fits else value[key]
    return checked
