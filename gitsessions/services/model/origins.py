"""Where a redirect may take a request to the model server: the rule the model client
holds for chat requests (an httpx event hook), and httpx's own for the key on the list.

Invariants:
- An origin is (scheme, host lowercased, port or the scheme's default); credentials are
  never part of it or of how it is shown; a bad port is -1, never equal to any other.
- The chat POST is never redirected to another origin (a 307/308 would send it the
  conversation): `CrossOriginRedirect` names both.
- The key follows a GET to another origin only on an upgrade to https of the same host on
  default ports (httpx's rule, tests/test_model_client.py, test_endpoint.py); from an
  `http://` base URL even that fails, its client trusting no certificate (`tls_for`).
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
SHOWN = 200  # characters of an origin a message shows at most (a Location is hostile)


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == DEFAULT_PORTS.get(self.scheme) else f":{self.port}"
        if self.port == -1:
            port = ":?"
        shown = f"{self.scheme}://{host}{port}"
        return shown if len(shown) <= SHOWN else shown[:SHOWN] + "..."


class CrossOriginRedirect(Exception):
    """The model server redirected the request to another origin."""

    def __init__(self, source: Origin, target: Origin) -> None:
        super().__init__(f"{source} redirected to {target}")
        self.source = source
        self.target = target


def origin(url: str) -> Origin:
    """The origin of `url`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = -1
    return Origin(scheme, (parts.hostname or "").lower(), port)


def refuse_cross_origin(method: str, source: str, target: str) -> None:
    """Raise `CrossOriginRedirect` when the redirect of a POST from `source` to `target`
    (absolute URLs) leaves its origin."""
    if method.upper() == "POST" and origin(source) != origin(target):
        raise CrossOriginRedirect(origin(source), origin(target))
