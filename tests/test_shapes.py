"""values/shapes.py (issue 43, item 4): the one check of a JSON value against a JSON
Schema, which says what does not fit and where; each caller words its own line."""

import pytest

from gitsessions.values.shapes import Misfit, check

ARGS = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 50},
        "at": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "deep": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        "name": {"type": "string", "minLength": 1, "pattern": "^[a-z]"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["count"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "kind", "path", "got"),
    [
        ({"count": 0}, "minimum", ("count",), 0),
        ({"count": 51}, "maximum", ("count",), 51),
        ({"count": True}, "type", ("count",), True),  # a boolean is no number
        ({"count": "3"}, "type", ("count",), "3"),
        ({"count": 2.5}, "type", ("count",), 2.5),
        ({"count": 1, "deep": {"n": float("inf")}}, "type", ("deep", "n"), float("inf")),
        ({"count": 1, "at": "longer"}, "maxLength", ("at",), "longer"),
        ({"count": 1, "at": 5}, "type", ("at",), 5),
        ({"count": 1, "tags": ["a", "c"]}, "enum", ("tags", 1), "c"),
        ({"count": 1, "deep": {}}, "missing", ("deep",), "n"),
        ({"count": 1, "deep": {"n": "1"}}, "type", ("deep", "n"), "1"),
        ({"count": 1, "name": ""}, "minLength", ("name",), ""),
        ({"count": 1, "name": "Ab"}, "pattern", ("name",), "Ab"),
        ({"count": 1, "env": {"A": "a", "B": 2}}, "type", ("env", "B"), 2),
        ({}, "missing", (), "count"),
        ({"count": 1, "zz": 1, "page": 2}, "unknown", (), ["page", "zz"]),
        ([], "type", (), []),
    ],
)
def test_the_first_misfit_says_what_and_where(value, kind, path, got):
    with pytest.raises(Misfit) as raised:
        check(value, ARGS)
    assert (raised.value.kind, raised.value.path, raised.value.value) == (kind, path, got)


def test_an_any_of_of_two_constrained_branches_is_not_merged():
    """Merged, a string branch's enum would refuse the integer branch's values."""
    either = {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "integer", "minimum": 5}]}
    assert check(7, either) == 7 and check("b", either) == "b"
    nullable = {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}
    assert check(None, nullable) is None
    with pytest.raises(Misfit):  # no type named: null is one more value the enum refuses
        check(None, {"enum": ["a"]})
    with pytest.raises(Misfit):
        check("b", nullable)


def test_a_fitting_value_comes_back_an_integral_float_as_an_integer():
    assert check({"count": 3.0, "at": None}, ARGS) == {"count": 3, "at": None}
    assert check({"count": 3}, ARGS, fill=True) == {
        "count": 3, "at": None, "tags": None, "deep": None, "name": None, "env": None
    }  # fmt: skip
    merged = Misfit("x", (), {}, None)
    assert isinstance(merged, ValueError)
