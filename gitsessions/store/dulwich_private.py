"""The few private dulwich calls the store needs, in one place.

dulwich has no public way to drop a pack from a store, list loose objects, or make a
store rescan its pack directory; and its subprocess client writes a pack to the pipe
record by record, so `GatheringSubprocessClient` wraps the private `_connect`.
`tests/test_dulwich_private.py` fails loudly when an upgrade renames or removes any of
them.
"""

from collections.abc import Callable, Iterator
from typing import Any

from dulwich.client import SubprocessGitClient
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


class _Gathered:
    """Writes gathered into pieces of `limit` bytes; every read, readiness check and
    close sends what is gathered first, so the conversation never waits on it."""

    def __init__(
        self, write: Callable[[bytes], Any], read: Callable[[int], bytes], limit: int = 1 << 16
    ) -> None:
        self._write, self._read, self.limit = write, read, limit
        self.pending = bytearray()

    def write(self, data: bytes) -> None:
        self.pending += data
        if len(self.pending) >= self.limit:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self._write(bytes(self.pending))
            self.pending.clear()

    def read(self, size: int = -1) -> bytes:
        self.flush()
        return self._read(size)


class GatheringSubprocessClient(SubprocessGitClient):
    """`git upload-pack` / `receive-pack` on this machine, its pipe written in 64 KiB
    pieces (dulwich writes each pack record on its own: 200,000 writes for a push of
    1,000 sessions)."""

    def _connect(self, cmd: bytes, path: Any, protocol_version: int | None = None) -> Any:
        proto, can_read, stderr = super()._connect(cmd, path, protocol_version)
        gathered = _Gathered(proto.write, proto.read)
        close = proto._close
        proto.write, proto.read = gathered.write, gathered.read

        def ready() -> bool:
            gathered.flush()
            return bool(can_read())

        def closing() -> None:
            gathered.flush()
            if close is not None:
                close()

        proto._close = closing
        return proto, ready, stderr
