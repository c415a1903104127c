"""What every command shares: the resolved home, the store (opened on first use), consoles."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.cli.home import resolve_home
from gitsessions.cli.terminal import VisibleConsole, vtext
from gitsessions.services.config import (
    ConfigError,
    config_path,
    load_config,
    redact_setting,
    unknown_keys,
)

if TYPE_CHECKING:  # the store (dulwich) is imported when a command first uses it
    from gitsessions.services.hooks import Hooks
    from gitsessions.store.redaction import Finding
    from gitsessions.store.sessions import SessionStore

# Markup and highlighting are off: titles, summaries and model text are data, and a `[`
# in them must print as itself. Both show every string visible-safe (cli/terminal.py).
out = VisibleConsole(soft_wrap=True, markup=False, highlight=False)
err = VisibleConsole(stderr=True, soft_wrap=True, markup=False, highlight=False)
# The chat's replies wrap at word boundaries: they stream through a rich Live display,
# which crops every line wider than the terminal (soft_wrap would lose the rest).
replies = VisibleConsole(markup=False, highlight=False)


@dataclass
class State:
    home: Path
    env: Mapping[str, str]
    _store: "SessionStore | None" = field(default=None, repr=False)
    _config: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, flag: Path | None, env: Mapping[str, str]) -> "State":
        return cls(resolve_home(flag, env), dict(env))

    def config(self) -> dict[str, Any]:
        """config.toml, read once a command; its unknown keys reported once on stderr."""
        if self._config is None:
            path = config_path(self.home)
            self._config = load_config(path)
            for line in unknown_keys(self._config):
                err.print(f"warning: {path}: {line}", style="yellow", highlight=False)
        return self._config

    @property
    def store(self) -> "SessionStore":
        if self._store is None:
            from gitsessions.services.audit import audit
            from gitsessions.store.sessions import SessionStore

            path = config_path(self.home)
            home = self.home

            def on_redacted(session: str, findings: "list[Finding]") -> None:
                audit(home, "redact", session, "ok", findings=[f.as_dict() for f in findings])

            store = SessionStore(home, on_redacted=on_redacted)  # a bad home says so first
            try:
                store.redact = redact_setting(self.config(), str(path))
            except ConfigError:
                store.close()
                raise
            self._store = store
        return self._store

    @property
    def hooks(self) -> "Hooks":
        """The lifecycle hooks of this home; each problem is one yellow line on stderr."""
        from gitsessions.services.hooks import Hooks, hook_timeout

        path = config_path(self.home)
        return Hooks(
            self.home,
            self.env,
            hook_timeout(self.config(), str(path)),
            lambda line: err.print(vtext(line, style="yellow"), highlight=False),
        )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
