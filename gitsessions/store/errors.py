"""Errors raised by the session store."""

from gitsessions.values.errors import GitsessionsError


class StoreError(GitsessionsError):
    """The store cannot do what was asked."""


class SessionNotFound(StoreError):
    """No session matches the given id or prefix."""


class AmbiguousSessionId(StoreError):
    """A prefix matches more than one session."""


class SessionExists(StoreError):
    """A session with this id already exists."""


class ConcurrentUpdate(StoreError):
    """Another writer moved the session's branch first; nothing was overwritten."""


class StoreBusy(StoreError):
    """A lock in the store stayed taken for longer than we wait."""


class StoreCorrupt(StoreError):
    """The store holds something that is not a valid session."""


class ObjectMissing(StoreError):
    """An object a ref or tree names is gone: purged by a concurrent delete."""


class NotACommit(StoreCorrupt):
    """A ref or a parent names an object that is not a commit (a blob, a tree)."""
