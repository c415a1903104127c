"""The store as a pull sees it when nothing forks: objects read by `objectread` (no
dulwich), refs moved by `tracking.update_refs_if_equal` (`refpack`), under the same locks as
`repo.GitStore` (`storelock`). A pull that must write a commit (a fork) opens the full
store for it."""

import contextlib
from collections.abc import Iterator

from gitsessions.store import storelock
from gitsessions.store.errors import ObjectMissing
from gitsessions.store.objectread import ObjectReader


class LightGit(ObjectReader):
    """`store.git` read without dulwich, with the store's locks."""

    @contextlib.contextmanager
    def locked(self, exclusive: bool = False) -> Iterator[None]:
        with storelock.store_locked(self.path, exclusive):
            yield

    @contextlib.contextmanager
    def ref_locked(self, name: bytes, wait: bool = True) -> Iterator[bool]:
        with storelock.ref_locked(self.path, name, wait) as held:
            yield held

    def has(self, sha: bytes) -> bool:
        try:
            self.raw(sha)
        except ObjectMissing:
            return False
        return True

    def rescan(self) -> None:
        """See the packs another process (stock git's fetch) added."""
        self._rescan()
