"""Secret redaction: API keys, private key blocks, bearer tokens and URL passwords in text
become `[REDACTED:<rule>]`. The rules are this module's own table (docs/secrets.md says
why); the providers' formats are the rows of `values/provider_secrets.py`.

Invariants:
- Pure, and a finding never carries the value it replaced, so findings can be logged.
- Idempotent: no rule matches a `[REDACTED:<rule>]` marker.
- A private key block is replaced whole (to its END line, or its body's end when cut).
- Each rule runs only when one of its literal hints occurs: text without any is
  returned as it is.
"""

import bisect
import re
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from gitsessions.values.provider_secrets import JWT, PROVIDERS, Provider

MARKER = "[REDACTED:{}]"


class Rule(NamedTuple):
    """One kind of secret. `group` is the part of a match that is the secret (0: all of
    it); `check` may reject a match that is shaped right but not a secret."""

    name: str
    pattern: "re.Pattern[str] | _Lazy"
    hints: tuple[str, ...]
    group: int = 0
    check: Callable[[str], bool] | None = None
    lower_hints: bool = False  # hints are matched against the lowercased text


def _mixed(token: str) -> bool:
    """Random keys hold upper and lower case letters and digits; kebab-case names don't."""
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def _has_digit_and_letter(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _cased(token: str) -> bool:
    """Upper and lower case letters: a random key of letters only; not a snake_case name."""
    return any(c.isupper() for c in token) and any(c.islower() for c in token)


def _real_password(password: str) -> bool:
    """Not a placeholder such as `$PASS`, `${DB_PASSWORD}`, `<password>`, `***` or `...`."""
    return not (password[0] in "$<{%*." or set(password) <= set("*x.X"))


class _Lazy:
    """A rule's pattern, compiled at its first use: a rule runs only when one of its
    hints occurs, which most texts never hold, and compiling them all costs a few
    milliseconds of every command that commits."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(*self._source)
        return getattr(self._compiled, name)


_lazy = _Lazy

_CHECKS: dict[str, Callable[[str], bool]] = {
    "mixed": _mixed,
    "cased": _cased,
    "digit-letter": _has_digit_and_letter,
}


def _provider(row: Provider) -> Rule:
    """A row of `provider_secrets` as a rule."""
    check = _CHECKS[row.check] if row.check else None
    return Rule(row.name, _lazy(row.pattern), row.hints, row.group, check, row.lower_hints)


_B = r"(?<![A-Za-z0-9_\-])"  # not glued to a longer identifier
_E = r"(?![A-Za-z0-9_\-])"
_NUMBERED = r"(?:[ \t]*\d+\t)?"  # the line number read_file puts before each line

_PROVIDER_RULES = tuple(_provider(row) for row in PROVIDERS)
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        _lazy(
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"  # the whole block
            r"|(?:(?:\r?\n|\\r?\\n)" + _NUMBERED + r"(?:[A-Za-z0-9+/=]+|[A-Za-z\-]+: [^\r\n\\]*)?"
            r"(?=[\r\n\\\"]|\Z))*)",  # no END line: its base64 and header lines
            re.DOTALL,
        ),
        ("PRIVATE KEY",),
    ),
    Rule(  # the rest of a block whose BEGIN line is not in this text (a later page)
        "private-key",
        _lazy(
            r"(?:(?<=\n)|^)(?:"
            + _NUMBERED
            + r"[A-Za-z0-9+/=]{16,}\r?\n)+"
            + _NUMBERED
            + r"-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
        ),
        ("PRIVATE KEY",),
    ),
    Rule(
        "anthropic-api-key",
        _lazy(_B + r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_\-]{32,}" + _E),
        ("sk-ant-",),
    ),
    Rule(
        "openai-api-key",
        _lazy(_B + r"sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,}" + _E),
        ("sk-",),
        check=_mixed,
    ),
    Rule(
        "github-token",
        _lazy(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})" + _E),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(
        "gitlab-token",
        _lazy(
            _B
            + r"(?:gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent|oas|ffct)-[A-Za-z0-9_\-]{20,}"
            + r"(?:\.[0-9a-z]{9})?|GR1348941[A-Za-z0-9_\-]{20,})"  # routable; runner registration
            + _E
        ),
        (
            *("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-"),
            *("glagent-", "gloas-", "glffct-", "GR1348941"),
        ),
    ),
    Rule(
        "slack-webhook",
        _lazy(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}"),
        ("hooks.slack.com",),
    ),
    Rule(
        "slack-token",
        _lazy(_B + r"(?:xox[abposer]|xapp)-[0-9]+-[A-Za-z0-9\-]{10,}" + _E),
        ("xox", "xapp-"),
    ),
    Rule(
        "aws-access-key-id",
        _lazy(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])"),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    Rule(
        "aws-secret-access-key",
        _lazy(
            # `secret access key: X` in any spelling; an identifier (`--secret-access-key`,
            # `aws_secret_access_key`, `AWS_SECRET_KEY`, `AWS_SECRET`) also before a space
            r"(?:(?i:secret)[_\- ]?(?i:access)[_\- ]?(?i:key)[\"']?\s*[:=]"
            r"|(?:(?i:aws)[_\-]?(?i:secret)(?:[_\-](?i:access))?(?:[_\-](?i:key))?"
            r"|(?i:secret)[_\-](?i:access)[_\-](?i:key))[\"']?(?:\s*[:=]|[ \t]))"
            r"\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        group=1,
        check=_has_digit_and_letter,
        lower_hints=True,
    ),
    Rule(
        "google-api-key",
        _lazy(_B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
        ("AIza",),
    ),
    *_PROVIDER_RULES,
    Rule(
        "bearer-token",
        _lazy(r"(?i:bearer)\s+([A-Za-z0-9\-._~+/]{16,}=*)(?![A-Za-z0-9\-._~+/=])"),
        ("bearer",),
        group=1,
        check=_has_digit_and_letter,
        lower_hints=True,
    ),
    Rule(
        "url-password",
        _lazy(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@\"'<>\[\]]+:([^\s:/@\"'<>\[\]]+)@[^\s/@]"),
        ("://",),
        group=1,
        check=_real_password,
    ),
    _provider(JWT),
)
RULE_NAMES = tuple(dict.fromkeys(rule.name for rule in RULES))
# one C-level search over a string decides whether any rule needs to look at it
_ANY_HINT = re.compile(
    "|".join(
        f"(?i:{re.escape(h)})" if rule.lower_hints else re.escape(h)
        for rule in RULES
        for h in rule.hints
    )
)


_LOWER_HINTS = tuple(sorted({h.lower() for rule in RULES for h in rule.hints}))


def rules_id() -> int:
    """A number (2 or more) that changes when the rules do (a name, hint or pattern): a
    cache of text redacted under other rules, e.g. before a provider rule was added, is
    rebuilt (services/sessions/search.py)."""
    parts = [
        f"{rule.name}\0{rule.hints}\0{rule.group}\0{rule.lower_hints}\0"
        + (repr(rule.pattern._source) if isinstance(rule.pattern, _Lazy) else rule.pattern.pattern)
        for rule in RULES
    ]
    return 2 + zlib.crc32("\n".join(parts).encode())


def may_hold_secret(text: str) -> bool:
    """False when no rule can match `text`: none of their literal hints occurs, in any
    case (a superset of what `redact` checks; plain substring searches, several times
    faster than its one big pattern on long text)."""
    lowered = text.lower()
    return any(hint in lowered for hint in _LOWER_HINTS)


# What a byte search for the hints must look for, in any ASCII case, to find every text
# `may_hold_secret` (of it decoded as UTF-8) is True for: the hints themselves, and the
# only two characters whose lowercase holds an ASCII letter (KELVIN SIGN -> k, and
# LATIN CAPITAL I WITH DOT -> i + a combining dot); every other character lowercases to
# no ASCII at all, and in UTF-8 an ASCII byte is only ever that ASCII character.
HINT_BYTES = (*(h.encode() for h in _LOWER_HINTS), "\u212a".encode(), "\u0130".encode())


def hinted(raws: list[bytes]) -> set[int]:
    """The indexes of the UTF-8 texts in `raws` for which `may_hold_secret` (of the
    text decoded) is True: one lowercasing and one search per hint over all the ASCII
    ones together; any other text is decoded and checked on its own."""
    found: set[int] = set()
    ascii_ones = [i for i, raw in enumerate(raws) if raw.isascii()]
    for i in set(range(len(raws))) - set(ascii_ones):
        if may_hold_secret(raws[i].decode("utf-8", "replace")):
            found.add(i)
    joined = b"\0".join(raws[i] for i in ascii_ones).lower()
    starts: list[int] = []
    at = 0
    for i in ascii_ones:
        starts.append(at)
        at += len(raws[i]) + 1
    for hint in _LOWER_HINTS:
        needle = hint.encode("utf-8")
        where = joined.find(needle)
        while where != -1:
            n = bisect.bisect_right(starts, where) - 1
            found.add(ascii_ones[n])
            where = joined.find(needle, starts[n + 1] if n + 1 < len(starts) else len(joined))
    return found


def redact(text: str, rules: tuple[Rule, ...] = RULES) -> tuple[str, dict[str, int]]:
    """`text` with every secret replaced by `[REDACTED:<rule>]`, and `{rule: count}`."""
    if not _ANY_HINT.search(text):
        return text, {}
    found: Counter[str] = Counter()
    lowered: str | None = None
    for rule in rules:
        within = text
        if rule.lower_hints:
            if lowered is None:
                lowered = text.lower()
            within = lowered
        for hint in rule.hints:  # a loop, not any(): this runs for every rule and string
            if hint in within:
                break
        else:
            continue
        text, count = _apply(rule, text)
        if count:
            found[rule.name] += count
            lowered = None
    return text, dict(found)


def _apply(rule: Rule, text: str) -> tuple[str, int]:
    count = 0
    marker = MARKER.format(rule.name)

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        secret = match.group(rule.group)
        if rule.check is not None and not rule.check(secret):
            return match.group(0)
        count += 1
        if rule.group == 0:
            return marker
        start, end = match.span(rule.group)
        base = match.start(0)
        whole = match.group(0)
        return whole[: start - base] + marker + whole[end - base :]

    return rule.pattern.sub(replace, text), count


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """Any JSON-like value (a message, a header, a list of pins) with every string in it
    redacted; dict keys are left alone. Unchanged parts are returned as they were."""
    found: Counter[str] = Counter()
    new = _walk(value, found)
    return new, dict(found)


def _walk(value: Any, found: Counter[str]) -> Any:
    if isinstance(value, str):
        if not _ANY_HINT.search(value):
            return value
        text, counts = redact(value)
        found.update(counts)
        return text if counts else value
    if isinstance(value, Mapping):
        items = {key: _walk(item, found) for key, item in value.items()}
        return items if any(items[k] is not value[k] for k in items) else value
    if isinstance(value, list | tuple):
        walked = [_walk(item, found) for item in value]
        return walked if any(a is not b for a, b in zip(walked, value, strict=True)) else value
    return value
