"""Ref names: git's rules (`git check-ref-format`, at most 255 bytes) and the names of the
store's layout, checked before any name from outside is written or read.

Invariants:
- A name a remote lists is taken only when it is the layout's (`of_layout`): session
  branches, the tombstones, the project index, `refs/heads/main`.
- Anything else is dropped (`sort_listing`): quietly when git allows it outside the
  layout's folders, as `bad` (said in one line) when it breaks git's rules or sits in a
  layout folder without being a layout name.
- No name breaking git's rules is written to `packed-refs` or read as a file (`BadRefName`).
"""

import re
from collections.abc import Collection

from gitsessions.store.errors import StoreError

MAX_NAME = 255  # bytes: one path component's limit; the layout's longest is ~110
SESSIONS = b"refs/heads/sessions/"
TOMBSTONES = b"refs/gitsessions/tombstones"
PROJECTS = b"refs/gitsessions/projects/"
MAIN = b"refs/heads/main"
_ID = rb"[0-9a-f]{32}"
_KEY = rb"(?:[0-9a-f]{40}|[0-9a-f]{64}|url-[0-9a-f]{40})"
_LAYOUT = re.compile(
    rb"refs/heads/sessions/" + _ID
    + rb"|refs/gitsessions/tombstones"
    + rb"|refs/gitsessions/projects/" + _KEY + rb"/" + _ID
    + rb"|refs/heads/main"
)  # fmt: skip
_FOLDERS = (SESSIONS, PROJECTS, TOMBSTONES)  # a name here must be one of the layout's
# what git refuses in a name: a control character, space or ~^:?*[\, `..`, `@{`, an
# empty component, a component starting with `.` or ending with `.lock`, a name
# starting with `/` or ending with `/` or `.`; `@` alone
_CHARACTER = re.compile(rb"[\x00-\x20\x7f~^:?*\[\\]")
_BROKEN = re.compile(
    rb"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\A[./]|\.lock(?=/|\Z)|[/.]\Z|\A@\Z"
)
# what `_BROKEN` finds, in names joined by (and wrapped in) newlines (`all_keep_rules`):
# restated as byte searches, about twice as fast as the same rules as one regular
# expression; tests/test_hostile_refnames.py fails when the two judge a short name apart
_BAD_BYTES = bytes([*range(0x00, 0x0A), *range(0x0B, 0x21), 0x7F]) + b"~^:?*[\\"
_BAD_PARTS = (b"..", b"@{", b"//", b"/.", b".lock/", b".lock\n", b"\n.", b"\n/", b"/\n",
              b".\n", b"\n@\n", b"\n\n")  # fmt: skip
SHOWN = 120  # characters of a bad name shown in a line


class BadRefName(StoreError):
    """A ref name breaks git's rules; nothing was written or read by it."""


def breaks_rules(name: bytes) -> str | None:
    """Why `name` breaks git's rules for a ref name (as `git check-ref-format
    --allow-onelevel` judges it), or is longer than `MAX_NAME`; None when it keeps
    them. One regular expression search for a name that keeps them (`packed-refs` of
    thousands of refs is read through it)."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME:
        return f"is longer than {MAX_NAME} bytes"
    if _BROKEN.search(name) is not None:
        return _why(name)
    if not name.isascii():
        try:
            name.decode("utf-8")
        except UnicodeDecodeError:
            return "is not UTF-8"
    return None


def all_keep_rules(names: Collection[bytes]) -> bool:
    """Whether every one of `names` keeps git's rules (`breaks_rules` finds nothing), by
    a few byte searches over them all (a `packed-refs` of 100,000 names is written
    through it); on False, `breaks_rules` of each says which and why."""
    if not names:
        return True
    joined = b"\n" + b"\n".join(names) + b"\n"
    if joined.count(b"\n") != len(names) + 1 or max(map(len, names)) > MAX_NAME:
        return False  # a newline inside a name, or one too long
    if len(joined.translate(None, _BAD_BYTES)) != len(joined):
        return False
    if any(part in joined for part in _BAD_PARTS):
        return False
    if not joined.isascii():
        try:
            joined.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _why(name: bytes) -> str:
    """What a name `_BROKEN` finds wrong breaks, in words."""
    if found := _CHARACTER.search(name):
        return f"holds {found[0].decode('latin-1')!a}"
    if b".." in name:
        return "holds '..'"
    if b"@{" in name or name == b"@":
        return "holds '@{'"
    if name.startswith(b"/") or name.endswith(b"/") or b"//" in name:
        return "has an empty component"
    if name.endswith(b"."):
        return "ends with '.'"
    if any(part.startswith(b".") for part in name.split(b"/")):
        return "has a component starting with '.'"
    return "has a component ending with '.lock'"


def check(name: bytes) -> None:
    """`BadRefName` (one line) unless `name` keeps git's rules."""
    why = breaks_rules(name)
    if why is not None:
        raise BadRefName(f"ref name {shown(name)} {why}")


def of_layout(name: bytes) -> bool:
    """Whether `name` is one of the names a sessions remote holds."""
    return _LAYOUT.fullmatch(name) is not None


_BRANCH = len(SESSIONS) + 32
_HEX = b"0123456789abcdef"


def is_session_branch(name: bytes) -> bool:
    """`refs/heads/sessions/<id>`, checked by slices and one `translate` (no regex: a
    listing holds 50,000)."""
    return len(name) == _BRANCH and name.startswith(SESSIONS) and is_id(name[len(SESSIONS) :])


def is_id(tail: bytes) -> bool:
    """A session id (`values.ids.is_session_id`) as bytes, by its length and one `translate`."""
    return len(tail) == 32 and not tail.translate(None, _HEX)


def sort_listing(refs: dict[bytes, bytes]) -> tuple[dict[bytes, bytes], list[bytes]]:
    """A remote's listing split: (the refs of the layout, the bad names, sorted). The
    others (its `HEAD`, branches of its own) are dropped without a word."""
    kept: dict[bytes, bytes] = {}
    bad: list[bytes] = []
    for name, sha in refs.items():
        if of_layout(name):
            kept[name] = sha
        elif breaks_rules(name) is not None or name.startswith(_FOLDERS):
            bad.append(name)
    return kept, sorted(bad)


def shown(name: bytes) -> str:
    """A name for a line: quoted, every control or non-ASCII character escaped, cut to
    `SHOWN` characters."""
    text = ascii(name.decode("utf-8", "backslashreplace"))
    return text if len(text) <= SHOWN else text[: SHOWN - 4] + "...'"
