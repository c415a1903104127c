"""Text made safe to show on a terminal: what could move the cursor or hide text is escaped.

Invariant: `visible(text)` is the one function every string from a model, a tool, a
file, the store or an import passes before the terminal. It escapes, as text a reader
sees (`\\x1b`, `\\r`, `\\u202e`), each character on its own (so no escape sequence
survives however it is chunked): C0 controls (`\\r` always; tab and newline kept
unless `keep_newlines=False`), DEL, C1 controls (U+009B is a one-byte CSI), bidirectional
controls, invisible characters that make two strings look alike (zero-width, BOM, tag
characters...; the zero-width joiner kept between two emoji) and lone surrogates.
Everything else passes unchanged; escaping is idempotent. `json_visible` does the same
for JSON text with `\\uXXXX` escapes, so the document decodes to the same data.
"""

import re

_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_INVISIBLE = (
    "\u180e\u200b\u200c\u2028\u2029\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f"
)
_SURROGATE = "\ud800-\udfff"
_EMOJI = "[\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]"
_ZWJ = "\u200d"
_ALWAYS = _CONTROL + _BIDI + _INVISIBLE + _SURROGATE + _ZWJ

# One character class each, so a scan of clean text is one fast pass. Each is compiled
# at its first use (almost a millisecond each, which every command would pay at import).
_SOURCES = {"unsafe": f"[{_ALWAYS}]", "one_line": f"[\t\n{_ALWAYS}]", "emoji": _EMOJI}
_COMPILED: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    pattern = _COMPILED.get(name)
    if pattern is None:
        pattern = _COMPILED[name] = re.compile(_SOURCES[name])
    return pattern


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _spelling(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _joins_emoji(text: str, at: int) -> bool:
    """A zero-width joiner between two emoji (a family, a profession) is kept."""
    return (
        0 < at < len(text) - 1
        and _pattern("emoji").match(text, at - 1) is not None
        and _pattern("emoji").match(text, at + 1) is not None
    )


# Spellings met so far (only characters of the classes above: a bounded table), filled
# as they are met rather than built at import, which every command pays for.
_KNOWN: dict[str, str] = {}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    known = _KNOWN.get(char)
    if known is not None:
        return known
    if char == _ZWJ:  # kept or escaped by its neighbours: never remembered
        return char if _joins_emoji(match.string, match.start()) else _spelling(char)
    spelled = _KNOWN[char] = _spelling(char)
    return spelled


def _escape_json(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, the only JSON spelling above U+FFFF
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every character that could steer or hide terminal output escaped.

    With `keep_newlines=False` tab and newline are escaped too (one-line contexts:
    table cells, error messages).
    """
    pattern = _pattern("unsafe" if keep_newlines else "one_line")
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def is_visible(text: str, *, keep_newlines: bool = True) -> bool:
    """Whether `visible(text, keep_newlines=...)` leaves `text` as it is: one scan, so
    the fields of a record can be checked at once, joined (each pattern is one
    character class: the join holds a character to escape only when a field does)."""
    return _pattern("unsafe" if keep_newlines else "one_line").search(text) is None


def json_visible(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with the same
    characters as `visible` written as `\\uXXXX` escapes: same data, terminal-safe.

    Valid because these characters can only occur inside JSON strings, where any
    character may be written as an escape.
    """
    pattern = _pattern("unsafe")
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape_json, text)
