"""What piles up in the store between maintenance runs (loose objects, loose refs,
packs), counted by directory listings alone: whether background maintenance is due,
asked without loading `maintenance` (or dulwich) by a command that only fetched."""

import os
from pathlib import Path

from gitsessions.store.refs import SESSION_REF_PREFIX

AUTOPACK_LOOSE = 1024  # loose objects (estimated) before an automatic pack
AUTOPACK_PACKS = 32  # packs before they are consolidated
AUTOPACK_REFS = 256  # loose session branches before they go into packed-refs


def estimate_loose(store: Path) -> int:
    """Loose objects, estimated from fan-out directory `17` as git does."""
    try:
        return len(os.listdir(store / "objects" / "17")) * 256
    except FileNotFoundError:
        return 0


def loose_refs(store: Path) -> int:
    try:
        return len(os.listdir(store / os.fsdecode(SESSION_REF_PREFIX)))
    except FileNotFoundError:
        return 0


def pack_count(store: Path) -> int:
    try:
        return sum(1 for n in os.listdir(store / "objects" / "pack") if n.endswith(".idx"))
    except FileNotFoundError:
        return 0


def needs_maintenance(store: Path) -> bool:
    """Cheap (three directory listings): has anything piled up past its threshold?"""
    return (
        estimate_loose(store) > AUTOPACK_LOOSE
        or loose_refs(store) > AUTOPACK_REFS
        or pack_count(store) > AUTOPACK_PACKS
    )
