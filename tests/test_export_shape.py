"""The export document's field types checked by values/shapes.py (issue 43, item 4):
the lines `import` gave before, each naming the field, what it must be and what it
was (in process: `validate_export` is the subject)."""

import copy

import pytest

from gitsessions.services.sessions.exchange import validate_export
from gitsessions.services.sessions.exchange_files import InvalidExport
from tests.test_exchange import document


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("title", 5, "'title' must be a string, got int"),
        ("title", None, "'title' must be a string, got NoneType"),
        ("summary", [], "'summary' must be a string, got list"),
        ("imported", [], "'imported' must be an object or null, got list"),
        ("archived", "yes", "'archived' must be true or false, got str"),
        ("archived", 1, "'archived' must be true or false, got int"),
        ("model", 1.5, "'model' must be a string or null, got float"),
        ("plan", {}, "'plan' must be a list, got dict"),
        ("compactions", "x", "'compactions' must be a list, got str"),
        ("pins", "x", "'pins' must be a list, got str"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line(field, value, said):
    doc = copy.deepcopy(document())
    doc[field] = value
    with pytest.raises(InvalidExport) as raised:
        validate_export(doc)
    assert str(raised.value) == said


def test_fields_of_the_right_type_pass():
    doc = copy.deepcopy(document())
    doc.update(imported=None, model=None, archived=False, plan=[], compactions=[], pins=["p"])
    validate_export(doc)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"format": None}, "unknown format None; expected 'gitsessions.session/3'"),
        ({"format": "gitsessions.session/9", "later": 1},
         "unknown format 'gitsessions.session/9'; expected 'gitsessions.session/3'"),
        ({"id": "../x"}, "'id' must be 32 lowercase hex characters, got '../x'"),
        ({"parent_id": "abc"}, "'parent_id' must be a session id or null"),
        ({"parent_id": 5}, "'parent_id' must be a session id or null"),
        ({"fork_point": "f" * 39}, "'fork_point' must be a 40-hex commit id or null"),
        ({"pins": ["a", 1]}, "'pins' must be a list of strings"),
        ({"compactions": [{"before_tokens": 5}]},
         "compactions[0] needs integer before_tokens and after_tokens"),
        ({"compactions": [{"before_tokens": 5, "after_tokens": "2"}]},
         "compactions[0] needs integer before_tokens and after_tokens"),
        ({"usage": []}, "'usage' must be an object"),
        ({"usage": {"requests": True}}, "'usage.requests' must be a non-negative number"),
        ({"usage": {"cost_usd": -0.5}}, "'usage.cost_usd' must be a non-negative number"),
        ({"workspace": "here"}, "'workspace' must be an object or null"),
        ({"workspace": {"path": 5}}, "'workspace.path' must be a string or null"),
        ({"workspace": {"shell": "bash"}}, "unknown field 'workspace.shell'"),
        ({"workspace": {"project": {"roots": []}}},
         "'workspace.project' must be null or an object of roots and remotes"),
        ({"workspace": {"project": {"roots": ["a"] * 17, "remotes": []}}},
         "'workspace.project.roots' must be a list of at most 16"),
        ({"workspace": {"project": {"roots": [], "remotes": [1]}}},
         "'workspace.project.remotes' must hold strings"),
        ({"transcript": {}}, "'transcript' must be a list of records"),
        ({"extra": 1}, "unknown field 'extra'"),
    ],
)  # fmt: skip
def test_the_rest_of_the_document_is_checked_by_the_same_shapes(change, said):
    """Issue 43, item 4: the ids, pins, compactions, usage and workspace are checked
    by export_shape.py's schemas too, with the lines `import` gave before."""
    doc = copy.deepcopy(document())
    doc.update(change)
    with pytest.raises(InvalidExport) as raised:
        validate_export(doc)
    assert str(raised.value) == said


def _records() -> dict:
    """The document in format 2: its transcript of records."""
    doc = copy.deepcopy(document())
    doc["format"] = "gitsessions.session/2"
    doc["transcript"] = [{"message": message} for message in doc["transcript"]]
    return doc


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"turn": -1}, "transcript[0]: 'turn' must be a non-negative integer"),
        ({"step": 1.5}, "transcript[0]: 'step' must be a non-negative integer"),
        ({"time": "yesterday"}, "transcript[0]: 'time' must look like 2026-11-30T10:00:00.000Z"),
        ({"model": 5}, "transcript[0]: 'model' must be a string"),
        ({"usage": 5}, "transcript[0]: 'usage' must be an object"),
        ({"files": {}}, "transcript[0]: unknown field 'files'"),  # format 2 holds none
    ],
)
def test_a_record_that_does_not_fit_is_one_line(change, said):
    doc = _records()
    doc["transcript"][0].update(change)
    with pytest.raises(InvalidExport) as raised:
        validate_export(doc)
    assert str(raised.value) == said


def test_a_whole_number_written_with_a_point_comes_back_an_integer():
    doc = _records()
    doc["compactions"] = [{"before_tokens": 10.0, "after_tokens": 4}]
    doc["transcript"][0]["turn"] = 1.0
    checked = validate_export(doc)
    assert checked["compactions"] == [{"before_tokens": 10, "after_tokens": 4}]
    assert isinstance(checked["compactions"][0]["before_tokens"], int)


def test_a_long_unknown_field_or_id_is_named_cut():
    """What a document sends is hostile: its line names at most 80 characters of it."""
    doc = copy.deepcopy(document())
    doc["x" * 10_000] = 1
    with pytest.raises(InvalidExport) as raised:
        validate_export(doc)
    assert str(raised.value).startswith("unknown field 'xxx") and len(str(raised.value)) < 100
    doc = copy.deepcopy(document())
    doc["id"] = "y" * 10_000
    with pytest.raises(InvalidExport) as raised:
        validate_export(doc)
    assert str(raised.value).startswith("'id' must be 32") and len(str(raised.value)) < 140
