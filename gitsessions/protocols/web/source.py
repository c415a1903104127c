"""What the CLI hands the web view: how to reach the store and the services, and the
rows `list` shows. The view itself reads no environment and opens nothing on its own.

Invariant: the store is opened on the first page asked for (so `view` starts as fast as
`list`), and every page is built under one lock: dulwich's object store and the caches
are used by one request at a time, however many the threaded server takes.
"""

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # dulwich: imported when the first page is built
    from gitsessions.store.sessions import SessionStore

Rows = Callable[[bool], list[dict[str, Any]]]


@dataclass
class Source:
    """`store()`: the session store (opened once, on first use); `rows(include_archived)`:
    `list`'s rows, this project's first, each with `label` (as `list` names it, with its
    marks), `origin` (`fork of ...`) and `here` (of this project); `env` and `here` for
    the project's git (`diff --code`)."""

    store: "Callable[[], SessionStore]"
    rows: Rows
    env: Mapping[str, str]
    here: Path | None
    lock: threading.Lock = field(default_factory=threading.Lock)
