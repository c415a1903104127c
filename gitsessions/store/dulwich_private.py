"""The few private dulwich calls the store needs, in one place.

dulwich has no public way to drop a pack from a store, list loose objects, make a
store rescan its pack directory, list the packs it has open without listing the
directory again, or reach a pack's mapped bytes (what `packrecords.check_chain` reads
a record's header from before dulwich inflates it).
`tests/test_dulwich_private.py` fails loudly when an upgrade renames or removes any of
them.
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dulwich.object_store import DiskObjectStore
from dulwich.pack import Pack

if TYPE_CHECKING:
    import mmap


def remove_pack(store: DiskObjectStore, pack: Pack) -> None:
    """Delete a pack's files and forget it."""
    store._remove_pack(pack)


def loose_objects(store: DiskObjectStore) -> Iterator[bytes]:
    """Hex ids of every loose object."""
    return store._iter_loose_objects()


def rescan_packs(store: DiskObjectStore) -> None:
    """Forget cached packs and read the pack directory again."""
    store._clear_cached_packs()
    store._update_pack_cache()


def cached_packs(store: DiskObjectStore) -> list[Pack]:
    """The packs the store has listed (and may have opened), without listing again."""
    return list(store._iter_cached_packs())


def pack_contents(pack: Pack) -> "mmap.mmap | bytes":
    """The pack's data as dulwich has it mapped (opened now if it was not yet)."""
    return pack.data._buffer()
