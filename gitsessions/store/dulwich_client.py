"""dulwich's subprocess client with its pipe written in pieces: a private call, like
those of dulwich_private.py, kept apart so that only sync imports dulwich's client.
`tests/test_dulwich_private.py` fails loudly when an upgrade renames or removes it.
"""

from collections.abc import Callable
from typing import Any

from dulwich.client import SubprocessGitClient


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
