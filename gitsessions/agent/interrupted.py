"""The note that closes a request left unanswered, so a later prompt is sent alone.

A prompt whose request was cancelled (Ctrl-C), failed (the server was down, its stream
broke) or was cut short by a killed process stays at the end of the working context. A
new prompt sent after it is not glued to it: first this note, an *assistant* message,
answers the old prompt in the context, saying that its request was interrupted and what
partial reply had arrived (cut to `PARTIAL_CHARS`). User and assistant still take turns,
the old prompt is never sent as part of the new one, and only `\\retry` sends it again.

Invariant: a note is recognised by its text alone: it starts with `LEAD` (an ACP
client's replay leaves it out by it), so nothing but its content is sent to the model.
"""

from collections.abc import Mapping
from typing import Any

from gitsessions.values.messages import Message, text_of

LEAD = "[gitsessions: the request for the message above was interrupted"
PARTIAL_CHARS = 2_000


def interruption_note(partial: Mapping[str, Any] | None) -> Message:
    """The assistant message closing an unanswered prompt. `partial` is the transcript's
    record of the reply cut short (`"incomplete": true`), if any arrived."""
    by_user = bool(partial and partial.get("interrupted"))
    how = "by the user (Ctrl-C)" if by_user else "before the reply was finished"
    text = text_of(partial) if partial else ""
    if not text.strip():
        said = "no reply had arrived."
    elif len(text) > PARTIAL_CHARS:
        more = len(text) - PARTIAL_CHARS
        said = (
            f"the partial reply, as far as it got (its first {PARTIAL_CHARS:,} characters, "
            f"{more:,} more cut):\n{text[:PARTIAL_CHARS]}"
        )
    else:
        said = f"the partial reply, as far as it got:\n{text}"
    content = (
        f"{LEAD} {how}; it is not answered and will not be sent again unless the user "
        f"asks. The user's next message is a new request.]\n{said}"
    )
    return {"role": "assistant", "content": content}
