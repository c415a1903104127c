"""The environment policy of run_shell: which of the agent's variables the shell sees.

Invariant: a variable whose name contains KEY, SECRET, TOKEN, PASSWORD or CREDENTIAL
(any case) never reaches the shell unless a `keep` pattern names it; the model's key
(`OPENAI_API_KEY`) and gitsessions' own `GITSESSIONS_*` settings (which point at the
store) never reach it at all, whatever `keep` says, except `GITSESSIONS_SESSION`, which
the agent sets to its own session's id (so a `git commit` run by the agent gets a
`Gitsessions-Session` trailer from the installed git hooks; an inherited value never
passes). Everything else passes unchanged. This module only filters the mapping it is
given; it never reads the process environment.
"""

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL")
ALWAYS_DROPPED = ("OPENAI_API_KEY",)
OWN_PREFIX = "GITSESSIONS_"
SESSION_VARIABLE = "GITSESSIONS_SESSION"


def looks_secret(name: str) -> bool:
    """Whether `name` holds one of the secret words, ignoring case."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def shell_environment(
    env: Mapping[str, str], keep: Iterable[str] = (), session: str | None = None
) -> dict[str, str]:
    """`env` without secret-looking variables (unless a `keep` glob matches the exact,
    case-sensitive name), the model's key and gitsessions' own settings; with
    `GITSESSIONS_SESSION` set to `session` when given."""
    patterns = tuple(keep)
    kept = {
        name: value
        for name, value in env.items()
        if name not in ALWAYS_DROPPED
        and not name.startswith(OWN_PREFIX)
        and (not looks_secret(name) or any(fnmatchcase(name, p) for p in patterns))
    }
    if session is not None:
        kept[SESSION_VARIABLE] = session
    return kept
