"""The store's delta encoder round-trips through dulwich's (git's) delta decoder."""

import json
import random

import pytest
from dulwich.pack import apply_delta

from gitsessions.store.delta import create_delta


def applied(base: bytes, target: bytes) -> bytes:
    return b"".join(apply_delta(base, create_delta(base, target)))


def jsonl(rng: random.Random, n: int) -> bytes:
    return b"".join(
        json.dumps({"role": "user", "content": f"m{rng.random()}" * 20}).encode() + b"\n"
        for _ in range(n)
    )


@pytest.mark.parametrize("seed", range(20))
def test_round_trip_on_random_edits(seed):
    rng = random.Random(seed)
    base = jsonl(rng, rng.randint(0, 60))
    lines = base.splitlines(keepends=True)
    rng.shuffle(lines)
    target = b"".join(lines[: rng.randint(0, len(lines))]) + jsonl(rng, rng.randint(0, 10))
    target += bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))  # binary junk
    assert applied(base, target) == target


def test_appending_costs_what_was_appended():
    base = jsonl(random.Random(1), 200)
    extra = jsonl(random.Random(2), 2)
    delta = create_delta(base, base + extra)
    assert applied(base, base + extra) == base + extra
    assert len(delta) < len(extra) + 40
    assert len(create_delta(base + extra, base)) < 20  # the older version is one copy


def test_large_copies_and_empty_inputs():
    big = (b"x" * 100 + b"\n") * 200_000  # over 16 MiB: copies must be split
    assert applied(big, big) == big
    assert applied(b"", b"abc\n") == b"abc\n"
    assert applied(b"abc\n", b"") == b""


def test_a_tree_that_gained_an_entry_costs_that_entry():
    from dulwich.objects import Blob, Tree

    base = Tree()
    for n in range(16):
        base.add(f"{n:010d}.jsonl".encode(), 0o100644, Blob.from_string(b"%d" % n).id)
    target = base.copy()
    target.add(b"0000000099.jsonl", 0o100644, Blob.from_string(b"new").id)
    old, new = base.as_raw_string(), target.as_raw_string()
    delta = create_delta(old, new, tree=True)
    assert b"".join(apply_delta(old, delta)) == new
    assert len(delta) < 70  # one copy and the new entry (44 bytes), not the whole tree
    assert len(create_delta(old, new)) > 3 * len(delta)  # lines mean nothing in a tree


@pytest.mark.parametrize("seed", range(20))
def test_byte_deltas_round_trip_and_copy_shared_phrases(seed):
    from gitsessions.store.delta import create_byte_delta

    rng = random.Random(seed)
    base = jsonl(rng, rng.randint(0, 30)) + bytes(rng.getrandbits(8) for _ in range(50))
    target = bytearray(jsonl(rng, rng.randint(0, 5)))
    for _ in range(rng.randint(0, 8)):  # phrases of the base, anywhere in the target
        at = rng.randint(0, max(len(base) - 1, 0))
        target[rng.randint(0, len(target)) : 0] = base[at : at + rng.randint(1, 300)]
    target = bytes(target)
    delta = create_byte_delta(base, target)
    assert b"".join(apply_delta(base, delta)) == target
    if len(base) > 200:
        assert len(create_byte_delta(base, base)) < 20
