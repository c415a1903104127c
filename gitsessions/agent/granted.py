"""What "always" answers allow in a session, for every approver that asks (chat, ACP) or
does not (`exec`): the tools allowed without asking and the run_shell scopes
(`shell_scope.Scope`), kept by this home for the session (`services/sessions/granted.py`:
beside the session, never pushed or pulled) and read back when it is resumed."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitsessions.agent.shell_scope import Scope
from gitsessions.services.sessions import granted as kept


class Granted:
    """A session's "always" scopes. Unbound (no session yet) it keeps them in memory;
    `bind` reads what this home granted the session and makes each new grant stored."""

    def __init__(self) -> None:
        self.tools: set[str] = set()
        self.rules: list[Scope] = []
        self._where: tuple[Path, str] | None = None

    def bind(self, home: Path, session_id: str) -> None:
        """Go on with what this home granted `session_id` (and store new grants there)."""
        self._where = (home, session_id)
        grants = kept.load(home, session_id)
        self.tools |= set(grants.tools)
        for words, exact in grants.commands:
            rule = Scope(words, exact)
            if rule not in self.rules:
                self.rules.append(rule)

    def allows(self, name: str, arguments: Any) -> bool:
        """Whether a call runs unasked: its tool is granted, or (run_shell) a rule
        allows its command."""
        if name in self.tools:
            return True
        command = arguments.get("command") if isinstance(arguments, Mapping) else None
        if name != "run_shell" or not isinstance(command, str):
            return False
        return any(rule.allows(command) for rule in self.rules)

    def grant(self, offer: Scope | str) -> None:
        """Allow `offer` (a run_shell scope, or a tool) for the rest of the session, and
        store it (OSError when it cannot be: it still holds until the process ends)."""
        if isinstance(offer, Scope):
            if offer not in self.rules:
                self.rules.append(offer)
        else:
            self.tools.add(offer)
        if self._where is not None:
            commands = tuple((rule.words, rule.exact) for rule in self.rules)
            kept.save(*self._where, kept.Grants(tuple(sorted(self.tools)), commands))
