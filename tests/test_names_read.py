"""How the names a pull reads in bulk are read (issue 46): a `packed-refs` file as its
lines say, a bad line named; a remote's listing sorted into the layout's names, a name
holding a newline included. (Bulk regex searches over all the names, tried in their
place, measured at most 10% faster than these loops at 100,000 names, some slower: not
kept.)"""

import os
from pathlib import Path

import pytest

from gitsessions.store import refnames, refpack
from gitsessions.store.errors import StoreCorrupt

A, B, C = b"a" * 40, b"b" * 40, b"c" * 40
ID = b"0123456789abcdef" * 2


def _written(tmp_path: Path, body: bytes, name: str = "packed-refs") -> Path:
    path = tmp_path / name
    path.write_bytes(body)
    os.utime(path, ns=(1, len(body)))  # a new version for the parse's cache each time
    return path


def test_a_packed_refs_file_reads_as_its_lines_say(tmp_path: Path) -> None:
    body = (
        refpack.HEADER
        + b"%s refs/heads/sessions/%s\n^%s\n" % (A, ID, B)
        + b"\n%s refs/gitsessions/tombstones\n" % C
        + b"%s refs/heads/sessions/%s\n" % (B, ID)  # a later line wins, as git reads it
        + b"%s refs/odd name" % A  # no newline at the end; a space in the name
    )
    refs = refpack.read_packed(_written(tmp_path, body))
    assert refs == {
        b"refs/heads/sessions/" + ID: B,
        b"refs/gitsessions/tombstones": C,
        b"refs/odd name": A,
    }


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        (b"%s refs/heads/x\rjunk\n" % A, 4),  # a carriage return splits a line
        (b"%s refs/heads/x\n" % A[:39], 3),  # a short id
        (b"%s  refs/heads/x\n" % A, 3),  # two spaces: the name does not start with refs/
        (b"%s heads/x\n" % A, 3),
        (b"junk\n", 3),
        (b"%s\n" % A, 3),
    ],
)
def test_a_packed_refs_file_with_a_bad_line_is_refused_as_before(
    tmp_path: Path, bad: bytes, line: int
) -> None:
    body = refpack.HEADER + b"%s refs/heads/main\n" % B + bad
    with pytest.raises(StoreCorrupt, match=rf"line {line} is not a ref line"):
        refpack.read_packed(_written(tmp_path, body))
    assert refpack.scan_packed(tmp_path / "packed-refs")[0][b"refs/heads/main"] == B


def test_a_listing_is_sorted_into_the_layout_the_same_with_a_newline_in_a_name() -> None:
    listing = {
        b"HEAD": A,
        b"refs/heads/sessions/" + ID: A,
        b"refs/gitsessions/tombstones": B,
        b"refs/gitsessions/projects/" + A + b"/" + ID: A,
        b"refs/heads/sessions/nope": C,  # in a folder of the layout, not one of its names
        b"refs/heads/feature": C,  # a branch of the remote's own: dropped without a word
        b"refs/heads/a..b": C,  # breaks git's rules
    }
    kept, bad = refnames.sort_listing(listing)
    assert set(kept) == {
        b"refs/heads/sessions/" + ID,
        b"refs/gitsessions/tombstones",
        b"refs/gitsessions/projects/" + A + b"/" + ID,
    }
    assert bad == [b"refs/heads/a..b", b"refs/heads/sessions/nope"]
    newline = b"refs/heads/sessions/" + ID + b"\nrefs/heads/main"
    kept2, bad2 = refnames.sort_listing({**listing, newline: C})
    assert kept2 == kept and bad2 == sorted([*bad, newline])
