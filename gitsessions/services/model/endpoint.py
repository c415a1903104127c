"""A quick look at the model server before the first request (is it there, which models it
lists), asked by `chat` in a background thread while the user types, through the model
client (GET /models).

Invariants: `probe` and `refused_here` never raise for what the server does; the key is
sent as real requests send it, never shown, never carried to another origin (httpx's
rule); past `PROBE_SECONDS` nothing is learned. `refused_here` sends nothing: a TCP
connect to a server on this machine, so `chat` can say "cannot reach" before its prompt.
"""

import _socket
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from gitsessions.services.settings.config import DEFAULT_BASE_URL, ModelSettings

if TYPE_CHECKING:
    from gitsessions.services.model.context_window import ServerContext

PROBE_SECONDS = 5.0


class Probe(NamedTuple):
    unreachable: str | None = None  # why the server could not be reached, one line
    models: tuple[str, ...] | None = None  # what GET /models listed (None: no list)
    context: "ServerContext | None" = None  # the context the server says it holds


def probe(settings: ModelSettings) -> Probe:
    """GET {base_url}/models within a few seconds, then the context the server says it
    holds (services/model/context_window.py, given the list: not asked twice)."""
    # the model client: 24 ms a chat's prompt does not need
    from gitsessions.services.model import context_window
    from gitsessions.services.model.errors import EndpointUnreachable, ModelError
    from gitsessions.services.model.model import ModelClient

    quick = replace(settings, timeout=min(settings.timeout, PROBE_SECONDS))
    listed: list[dict[str, Any]] = []
    with ModelClient(quick) as client:  # the context asked through the same client
        try:
            listed = client.model_list()
        except EndpointUnreachable as error:
            return Probe(unreachable=str(error))
        except ModelError:  # some servers have no /models, or a slow one: the request tells
            return Probe(context=context_window.ask(settings, client, listed=[]))
        models = tuple(sorted(entry["id"] for entry in listed))
        return Probe(models=models, context=context_window.ask(settings, client, listed))


def _unreachable(settings: ModelSettings, reason: object) -> str:
    where = f"(base URL from {settings.sources.get('base_url', 'settings')})"
    return (
        f"cannot reach the model server at {settings.base_url}: {reason} "
        f"{where}; check --base-url or GITSESSIONS_BASE_URL"
    )


CONNECT_SECONDS = 0.5  # a port on this machine answers at once: refused or accepted


def _here(host: str) -> list[tuple[str, str]]:
    """The addresses of `host` when it is this machine: (family, address) pairs."""
    if host == "localhost":
        return [("AF_INET", "127.0.0.1"), ("AF_INET6", "::1")]
    if host == "::1":
        return [("AF_INET6", "::1")]
    if host.startswith("127.") and all(p.isdigit() for p in host.split(".")):
        return [("AF_INET", host)]
    return []


def on_this_machine(base_url: str) -> bool:
    """Whether `base_url` names a server on this machine (`localhost`, 127.x, ::1): a
    local model, which nobody bills."""
    try:
        return bool(_here(urlsplit(base_url).hostname or ""))
    except ValueError:  # a malformed URL: the first request says so
        return False


def refused_here(settings: ModelSettings) -> str | None:
    """Why the server cannot be reached, when it is one on this machine whose port
    refuses a connection (nothing listens: Ollama not started); None when a connection
    opens, when none is answered at once, or when the host is elsewhere (`probe`
    tells, later). `localhost` is tried as 127.0.0.1 and ::1, without a name lookup."""
    try:
        parts = urlsplit(settings.base_url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a malformed URL: the first request says so
        return None
    # `_socket`, the socket module's C half: the module itself and a name lookup (its
    # IDNA codec) cost more than the connect, and this runs before chat's prompt.

    refused: OSError | None = None
    for family, address in _here(host or ""):
        try:
            sock = _socket.socket(getattr(_socket, family), _socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this machine
            continue
        try:
            sock.settimeout(CONNECT_SECONDS)
            sock.connect((address, port))
        except ConnectionRefusedError as error:
            refused = refused or error
            continue
        except OSError:  # a timeout, an address not available: not known to be refused
            continue
        finally:
            sock.close()
        return None  # something listens
    return None if refused is None else _unreachable(settings, refused)


def is_default_endpoint(settings: ModelSettings) -> bool:
    """Whether the settings point at the built-in default, Ollama on this machine."""
    return settings.base_url == DEFAULT_BASE_URL


OLLAMA_HINT = (
    "gitsessions talks to Ollama at {url} by default: start it with `ollama serve`, then "
    "`ollama pull {model}`; or point elsewhere with --base-url and --model (or "
    "GITSESSIONS_BASE_URL and GITSESSIONS_MODEL, or base_url and model in {config})"
)
