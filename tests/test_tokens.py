"""Token counting: real tiktoken counts, message and tool overheads, caching, calibration,
and the character-estimate fallback."""

import pytest

from gitsessions.values import tokens
from gitsessions.values.tokens import ESTIMATE_METHOD, TokenCounter, default_counter


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    result = TokenCounter()
    assert result.method == "tiktoken:cl100k_base", "the offline encoding should load"
    return result


def test_text_counts_are_real_tiktoken(counter: TokenCounter) -> None:
    assert counter.exact
    assert counter.count_text("hello world") == 2
    assert counter.count_text("") == 0
    # special-token text is counted as ordinary text, not rejected
    assert counter.count_text("<|endoftext|>") > 1


def test_message_counts_role_content_and_overhead(counter: TokenCounter) -> None:
    message = {"role": "user", "content": "hello world"}
    assert counter.count_message(message) == tokens.MESSAGE_OVERHEAD + 1 + 2
    parts = {"role": "user", "content": [{"type": "text", "text": "hello world"}]}
    assert counter.count_message(parts) == counter.count_message(message)
    named = {**message, "name": "alice"}
    assert counter.count_message(named) > counter.count_message(message)


def test_tool_calls_and_results_are_counted(counter: TokenCounter) -> None:
    bare = {"role": "assistant", "content": None}
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/main.py"}'},
    }
    with_call = {**bare, "tool_calls": [call]}
    expected = (
        tokens.TOOL_CALL_OVERHEAD
        + counter.count_text("read_file")
        + counter.count_text('{"path": "src/main.py"}')
    )
    assert counter.count_message(with_call) - counter.count_message(bare) == expected
    result = {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"}
    assert counter.count_message(result) > counter.count_message(
        {"role": "tool", "content": "print('hi')"}
    )


def test_tool_schemas_are_counted_and_cached(counter: TokenCounter) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file from the workspace.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    assert counter.count_tools(None) == 0
    assert counter.count_tools([]) == 0
    one = counter.count_tools(tools)
    assert one > 20
    assert counter.count_tools(tools * 2) > one
    misses = counter.cache_misses
    assert counter.count_tools(tools) == one
    assert counter.cache_misses == misses


def test_context_adds_reply_priming_and_tools(counter: TokenCounter) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    tools = [{"type": "function", "function": {"name": "noop", "parameters": {}}}]
    plain = sum(counter.count_message(m) for m in messages) + tokens.REPLY_PRIMING
    assert counter.count_context(messages) == plain
    assert counter.count_context(messages, tools) == plain + counter.count_tools(tools)


def test_recounting_a_long_context_hits_the_cache() -> None:
    counter = TokenCounter()
    messages = [{"role": "user", "content": f"message number {n}"} for n in range(10_000)]
    first = counter.count_context(messages)
    assert counter.cache_misses == 10_000
    assert counter.count_context(messages) == first
    assert counter.cache_misses == 10_000
    assert counter.cache_hits == 10_000
    counter.count_context([*messages, {"role": "assistant", "content": "new"}])
    assert counter.cache_misses == 10_001


def test_equal_messages_share_a_cache_entry_regardless_of_key_order() -> None:
    counter = TokenCounter()
    counter.count_message({"role": "user", "content": "x"})
    counter.count_message({"content": "x", "role": "user"})
    assert (counter.cache_misses, counter.cache_hits) == (1, 1)


def test_cache_is_bounded() -> None:
    counter = TokenCounter(cache_size=10)
    for n in range(50):
        counter.count_message({"role": "user", "content": str(n)})
    counter.count_message({"role": "user", "content": "0"})
    assert counter.cache_misses == 51
    counter.count_message({"role": "user", "content": "49"})
    assert counter.cache_hits == 1


def test_calibration_scales_estimates_within_bounds(counter: TokenCounter) -> None:
    calibrated = TokenCounter()
    messages = [{"role": "user", "content": "hello world " * 50}]
    raw = calibrated.count_context(messages)
    assert calibrated.estimate(messages) == raw
    calibrated.calibrate(raw, int(raw * 1.5))
    assert calibrated.ratio == pytest.approx(1.5, rel=0.01)
    assert calibrated.estimate(messages) >= raw * 1.49
    calibrated.calibrate(raw, raw * 10)
    assert calibrated.ratio == tokens.CALIBRATION_MAX
    calibrated.calibrate(raw, 1)
    assert calibrated.ratio == tokens.CALIBRATION_MIN
    calibrated.calibrate(0, 100)  # ignored
    assert calibrated.ratio == tokens.CALIBRATION_MIN


@pytest.mark.parametrize("name", ["no_such_encoding_offline", "cl100k_base", "o200k_base"])
def test_fallback_estimate_never_downloads(name: str) -> None:
    counter = TokenCounter(name)
    assert counter.method == ESTIMATE_METHOD
    assert not counter.exact
    assert counter.count_text("hello world") == 3  # ceil(11 / 4)
    assert counter.count_text("abcd") == 1
    message = {"role": "user", "content": "abcdefgh"}
    assert counter.count_message(message) == tokens.MESSAGE_OVERHEAD + 1 + 2


def test_default_counter_is_shared() -> None:
    assert default_counter() is default_counter()


def test_values_without_canonical_json_are_counted_not_raised(counter: TokenCounter) -> None:
    """NaN, Infinity and lone surrogates have no canonical JSON: such a message or schema
    is still counted (just not cached), never an exception."""
    nan_part = {"role": "user", "content": [{"type": "input_audio", "value": float("nan")}]}
    surrogate = {"role": "user", "content": [{"type": "x", "text": None, "data": "\ud800"}]}
    tools = [{"type": "function", "function": {"name": "f", "default": float("inf")}}]
    for message in (nan_part, surrogate):
        assert counter.count_message(message) > tokens.MESSAGE_OVERHEAD
        assert counter.count_message(message) == counter.count_message(message)
    assert counter.count_tools(tools) > tokens.TOOLS_OVERHEAD
    assert counter.count_context([nan_part, surrogate], tools) > 0


def test_a_giant_text_is_counted_from_a_bounded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting a message of any size reads a bounded part of it: the tokenizer sees at
    most EXACT_CHARS characters and the cache key is not built from the whole message."""
    counter = TokenCounter()
    encoding = counter._encoding
    assert encoding is not None
    seen: list[int] = []

    class Spy:
        def encode_ordinary(self, text: str) -> list[int]:
            seen.append(len(text))
            return encoding.encode_ordinary(text)

    hashed: list[int] = []
    real_dumps = tokens.dumps_line
    monkeypatch.setattr(tokens, "dumps_line", lambda v: hashed.append(1) or real_dumps(v))
    counter._encoding = Spy()
    line = "value_{} = compute(alpha, {}) # a line of code\n"
    text = "".join(line.format(n, n * 7) for n in range(60_000))  # ~2.9 MB
    exact = sum(
        len(encoding.encode_ordinary(text[i : i + 50_000])) for i in range(0, len(text), 50_000)
    )
    estimate = counter.count_text(text)
    assert sum(seen) <= tokens.EXACT_CHARS
    assert abs(estimate - exact) <= exact * 0.05
    seen.clear()
    message = {"role": "assistant", "content": text}
    assert counter.count_message(message) >= estimate
    assert sum(seen) <= tokens.EXACT_CHARS + 100 and not hashed
    assert counter.count_text("hello world") == 2  # short texts stay exact


CONTEXT = [{"role": "system", "content": "You are a coding agent."}] + [
    {"role": "user" if n % 2 else "assistant", "content": f"message {n}: héllo wörld"}
    for n in range(200)
]
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


def test_kept_counts_come_back_exact_without_loading_the_tokenizer(tmp_path) -> None:
    """Issue 24: counts one process made are read back by the next (`tokens.sqlite`):
    with every message known, the bound needs no tokenizer and is the exact count; a
    new message is the only text encoded, and the total is what a fresh count gives."""
    from gitsessions.store.tokencounts import TokenCounts

    first = TokenCounter()
    exact = first.count_context(CONTEXT, TOOLS)
    assert TokenCounts(tmp_path, first).keep() == len(CONTEXT) + 1
    assert TokenCounts(tmp_path, first).keep() == 0  # handed over once

    later = TokenCounter()
    assert later.bound(CONTEXT, TOOLS) > exact  # nothing known: bytes
    assert TokenCounts(tmp_path, later).recall(later.keys(CONTEXT, TOOLS)) == len(CONTEXT) + 1
    assert later.keys(CONTEXT, TOOLS) == []
    assert later.bound(CONTEXT, TOOLS) == exact
    assert not later.loaded  # recalling and bounding loaded no tokenizer
    asking = TokenCounter()  # the agent's way: the bound asks for what it does not hold
    asked: list[int] = []

    def lookup(keys: list[bytes]) -> dict[bytes, int]:
        asked.append(len(keys))
        return TokenCounts(tmp_path, asking).lookup(keys)

    assert asking.bound(CONTEXT, TOOLS, recall=lookup) == exact
    assert asking.bound(CONTEXT, TOOLS, recall=lookup) == exact
    assert asked == [len(CONTEXT) + 1] and not asking.loaded  # asked once
    grown = [*CONTEXT, {"role": "user", "content": "a new prompt, never counted"}]
    assert later.bound(grown, TOOLS) >= TokenCounter().count_context(grown, TOOLS)
    assert later.count_context(grown, TOOLS) == TokenCounter().count_context(grown, TOOLS)
    assert later.cache_misses == 1  # only the new message was encoded
    assert list(later.fresh().values()) == [later.count_message(grown[-1])]  # kept next


def test_kept_counts_are_filed_by_encoding_and_estimates_are_not_kept(tmp_path) -> None:
    from gitsessions.store.tokencounts import TokenCounts

    exact = TokenCounter()
    exact.count_context(CONTEXT)
    assert TokenCounts(tmp_path, exact).keep() == len(CONTEXT)
    other = TokenCounter("other_offline")  # no such encoding: the character estimate
    assert TokenCounts(tmp_path, other).recall(other.keys(CONTEXT)) == 0
    other.count_context([{"role": "user", "content": "estimated"}])
    assert other.method == ESTIMATE_METHOD
    assert TokenCounts(tmp_path, other).keep() == 0  # an estimate is never kept


def test_a_damaged_count_cache_is_rebuilt_and_never_fails_a_count(tmp_path) -> None:
    from gitsessions.store.tokencounts import FILE, TokenCounts

    (tmp_path / FILE).write_bytes(b"not a database" * 100)
    counter = TokenCounter()
    assert TokenCounts(tmp_path, counter).recall(counter.keys(CONTEXT)) == 0
    counter.count_context(CONTEXT)
    assert TokenCounts(tmp_path, counter).keep() == len(CONTEXT)
    again = TokenCounter()
    assert TokenCounts(tmp_path, again).recall(again.keys(CONTEXT)) == len(CONTEXT)
