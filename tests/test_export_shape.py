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
