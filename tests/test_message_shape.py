"""A chat message's shape checked by values/shapes.py (issue 43, item 4), as the rest
of an export document is: each line says where and what (in process: `validate_message`
and `validate_messages` are the subject; import and compaction call them)."""

import pytest

from gitsessions.values.messages import InvalidMessages, validate_message, validate_messages

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("hi", "m: expected an object, got str"),
        ({"content": "x"}, "m: role must be one of system, user, assistant, tool, got None"),
        ({"role": "wizard"}, "m: role must be one of system, user, assistant, tool, got 'wizard'"),
        ({"role": "user", "content": 5}, "m: content must be a string, a list or null"),
        ({"role": "tool", "content": "x"}, "m: a tool message needs a string tool_call_id"),
        ({"role": "assistant", "incomplete": "yes"}, "m: incomplete must be true or false"),
        ({"role": "assistant", "interrupted": 1}, "m: interrupted must be true or false"),
        ({"role": "user", "tool_calls": [CALL]}, "m: only assistant messages may carry tool_calls"),
        ({"role": "assistant", "tool_calls": {}}, "m: tool_calls must be a list"),
        ({"role": "assistant", "tool_calls": ["c1"]}, "m: tool_calls[0] needs a string id"),
        ({"role": "assistant", "unsent_tool_calls": [{"id": 1}]},
         "m: unsent_tool_calls[0] needs a string id"),
        ({"role": "assistant", "tool_calls": [CALL, {"id": "c2"}]},
         "m: tool_calls[1] needs function.name"),
        ({"role": "assistant", "tool_calls": [{"id": "c2", "function": {"arguments": "{}"}}]},
         "m: tool_calls[0] needs function.name"),
        ({"role": "assistant",
          "tool_calls": [{"id": "c2", "function": {"name": "f", "arguments": {}}}]},
         "m: tool_calls[0].function.arguments must be a string"),
    ],
)  # fmt: skip
def test_a_message_that_does_not_fit_is_one_line(message, said):
    with pytest.raises(InvalidMessages) as raised:
        validate_message(message, "m")
    assert str(raised.value) == said


def test_messages_that_fit_pass_and_their_pairing_is_checked():
    answered = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL], "incomplete": False},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    validate_messages(answered, "context")
    with pytest.raises(InvalidMessages, match=r"context: message 1: tool call 'c1' has no result"):
        validate_messages(answered[:2], "context")
    with pytest.raises(InvalidMessages, match=r"^context: expected a list of messages$"):
        validate_messages({}, "context")
