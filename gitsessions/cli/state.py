"""What every command shares: the resolved home, the store (opened on first use), consoles.

The consoles `out`, `err` and `replies` are made on first use (`from ... import out`
makes it): rich costs a third of a reading command's start, and output into a pipe
never needs it. `plain_out` is `out`'s file, known without making `out` (cli/plain.py).
Into a pipe, `out` and `err` are `PlainConsole`s: they print text (a str, `vtext`)
as the rich console would there, and make that console for anything else.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.cli.home import resolve_home
from gitsessions.cli.plain import PlainConsole, StreamOf, plain_console_fits, vtext
from gitsessions.services.settings.config_file import (
    config_path,
    load_config,
    redact_setting,
    unknown_keys,
)

if TYPE_CHECKING:  # the store (dulwich) is imported when a command first uses it
    from gitsessions.cli.terminal import VisibleConsole
    from gitsessions.services.hooks.hooks import Hooks
    from gitsessions.store.catalog import Catalog
    from gitsessions.store.reader import SessionReader
    from gitsessions.store.redaction import Finding
    from gitsessions.store.refs import StoreRefs
    from gitsessions.store.sessions import SessionStore

    out: VisibleConsole
    err: VisibleConsole
    replies: VisibleConsole

plain_out = StreamOf("stdout")  # where `out` writes, without making it


def _make(name: str) -> "VisibleConsole":
    if name in ("out", "err"):
        stream = "stdout" if name == "out" else "stderr"
        if plain_console_fits(stream, os.environ):  # a pipe: rich only if a table needs it
            # duck-typed: what it cannot print plainly it hands to the real console
            return PlainConsole(stream, lambda: _visible_console(name))  # type: ignore[return-value]
    return _visible_console(name)


def _visible_console(name: str) -> "VisibleConsole":
    # rich: over 50 ms that output into a pipe does not need
    from gitsessions.cli.terminal import VisibleConsole

    # Markup, emoji codes and highlighting are off: titles, summaries, model text and
    # errors quoting them are data, and a `[` or a `:x:` in them must print as itself.
    # All show every string visible-safe.
    if name == "out":
        return VisibleConsole(soft_wrap=True, markup=False, emoji=False, highlight=False)
    if name == "err":
        # On a terminal, warnings and notes wrap at word boundaries (the terminal would
        # cut them mid-word); into a pipe or a file each stays one line.
        console = VisibleConsole(stderr=True, markup=False, emoji=False, highlight=False)
        console.soft_wrap = not console.is_terminal
        return console
    # The chat's replies wrap at word boundaries: they stream through a rich Live
    # display, which crops every line wider than the terminal (soft_wrap would lose
    # the rest).
    return VisibleConsole(markup=False, emoji=False, highlight=False)


def __getattr__(name: str) -> Any:
    """`out`, `err`, `replies`: each made once, on first use."""
    if name not in ("out", "err", "replies"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    console = globals()[name] = _make(name)
    return console


class State:
    """What a command shares: its home and environment, and what it opens on first use.
    (Not a dataclass: `list`, `info` and `--help` import no `dataclasses`, and importing
    it and building this class would cost them over 2 ms.)"""

    def __init__(self, home: Path, env: Mapping[str, str]) -> None:
        self.home = home
        self.env = env
        self._store: SessionStore | None = None
        self._reader: SessionReader | None = None
        self._config: dict[str, Any] | None = None
        self._checked = False  # whether the store's settings (redaction) were read

    def __repr__(self) -> str:
        return f"State(home={self.home!r}, env={self.env!r})"

    @classmethod
    def from_env(cls, flag: Path | None, env: Mapping[str, str]) -> "State":
        return cls(resolve_home(flag, env), dict(env))

    def config(self) -> dict[str, Any]:
        """config.toml, read once a command; its unknown keys reported once on stderr."""
        if self._config is None:
            path = config_path(self.home)
            self._config = load_config(path)
            for line in unknown_keys(self._config):
                _err().print(f"warning: {path}: {line}", style="yellow", highlight=False)
        return self._config

    @property
    def refs(self) -> "StoreRefs | SessionStore":
        """What reads the session refs: their files alone (no dulwich) when the store
        is there and of this build's format, else the store itself (which creates,
        upgrades or refuses it). Reading needs no settings: config.toml is not read, so a
        malformed one does not stop `list`."""
        if self._store is not None:
            return self._store
        # the refs reader: 10 ms the git hook does not need
        from gitsessions.store.refs import StoreRefs

        refs = StoreRefs.open(self.home)
        if refs is None:
            return self._opened()
        return refs

    @property
    def reader(self) -> "SessionReader | SessionStore":
        """What reads sessions (`show`, `log`): a read-only `SessionReader` (dulwich's
        object store, nothing that writes or maintains) when the store is there and of
        this build's format, else the store itself (which creates, upgrades or refuses
        it). Like `refs`, it reads no settings."""
        if self._store is not None:
            return self._store
        if self._reader is None:
            # dulwich: only when a session is read
            from gitsessions.store.reader import SessionReader

            reader = SessionReader.open(self.home)
            if reader is None:
                return self._opened()
            self._reader = reader
        return self._reader

    def catalog(self) -> "Catalog":
        """The header cache, on the refs alone until a row must be read again."""
        # the header cache (sqlite): 11-15 ms, only where rows are read
        from gitsessions.store.catalog import Catalog

        return Catalog(self.refs, self._opened)

    @property
    def store(self) -> "SessionStore":
        """The store, with this home's redaction setting (a malformed config.toml is an
        error here: what writes needs its settings)."""
        store = self._opened()
        if not self._checked:
            store.redact = redact_setting(self.config(), str(config_path(self.home)))
            self._checked = True
        return store

    def _opened(self) -> "SessionStore":
        """The store as reading needs it: no settings read (redaction stays on, the
        default, until `store` reads the setting)."""
        if self._store is None:
            # the writing store (dulwich): only when a command writes
            from gitsessions.store.sessions import SessionStore

            home = self.home

            def on_redacted(session: str, findings: "list[Finding]") -> None:
                # the lifecycle hooks and the audit log: over 2 ms, only when one runs
                from gitsessions.services.hooks.audit import audit

                audit(home, "redact", session, "ok", findings=[f.as_dict() for f in findings])

            self._store = SessionStore(home, on_redacted=on_redacted)  # a bad home says so
        return self._store

    @property
    def hooks(self) -> "Hooks":
        """The lifecycle hooks of this home; each problem is one yellow line on stderr."""
        # the lifecycle hooks and the audit log: over 2 ms, only when one runs
        from gitsessions.services.hooks.hooks import Hooks, hook_timeout

        path = config_path(self.home)
        return Hooks(
            self.home,
            self.env,
            hook_timeout(self.config(), str(path)),
            lambda line: _err().print(vtext(line, style="yellow"), highlight=False),
        )

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._store is not None:
            self._store.close()
            self._store = None


def _err() -> "VisibleConsole":
    console: VisibleConsole = globals().get("err") or __getattr__("err")
    return console
