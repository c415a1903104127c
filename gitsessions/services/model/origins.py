"""Where a redirect may take a request to the model server: the rule the model client
(model.py, through an httpx event hook) holds for its chat requests, and the one httpx
itself holds for the key on the model list (which chat's probe, endpoint.py, reads).

Invariants:
- An origin is (scheme, host, port), the port its scheme's default when the URL names
  none, the host in lower case; a URL's user:password is never part of it, nor of how
  it is shown. A port that is no number (or out of range) is -1: never the same
  origin as any other URL's.
- The chat-completions POST is never redirected to another origin: a 307 or 308 would
  send it the whole conversation, a 301, 302 or 303 would let it write the answer as a
  GET. `CrossOriginRedirect` names both origins; refusing is the caller's job.
- The API key follows a GET (the model list) to another origin only on an upgrade from
  http to https of the same host on the default ports: httpx's own rule, which the
  model client leaves as it is (tests/test_model_client.py, tests/test_endpoint.py).
  From an `http://` base URL even that fails: its client trusts no certificate
  (model.tls_for; tests/test_model_http.py).
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
