"""The few private dulwich calls the store needs, in one place.

dulwich has no public way to drop a pack from a store, list loose objects, or make a
store rescan its pack directory.
`tests/test_dulwich_private.py` fails loudly when an upgrade renames or removes any of
them.
"""

from collections.abc import Iterator

from dulwich.object_store import DiskObjectStore
from dulwich.pack import Pack


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
