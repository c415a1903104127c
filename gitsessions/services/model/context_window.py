"""What the model server says its context holds, asked once as an agent starts (the budget
is then the smaller of `--max-context-tokens` and that): llama.cpp `GET /props`
(`n_ctx`), Ollama `POST /api/show` (`context_length`, or a smaller `num_ctx`), vLLM
`GET /v1/models` (`max_model_len`; chat hands over the list its probe read), each asked
at once in a thread; a server answering none (OpenAI, a proxy) leaves the budget as set.

Each is asked through the model client (`ModelClient.server_json`: the openai SDK's
HTTP client, its transport, TLS, proxies and reply limits): the one the agent sends its
turns with (exec, acp: asked in a thread while start-up goes on; exec waits for the
answer at its first request, which needs the SDK too), the one chat's probe listed the
models with (in the probe's thread, after its prompt shows).

Invariants:
- Nothing goes anywhere but the base URL's origin: paths built from it, no redirect
  followed, through the model client's (the SDK's) HTTP client; the key sent as chat sends it.
- Bounded: `ASK_SECONDS` in all once the client is made (a trickling server left in a
  daemon thread), `MAX_ANSWER_BYTES` read (asked uncompressed), only a positive whole
  number up to `MAX_TOKENS` believed; `ask` returns None rather than raise.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from gitsessions.services.settings.config import ModelSettings

if TYPE_CHECKING:
    from gitsessions.services.model.model import ModelClient

ASK_SECONDS = 2.0
MAX_ANSWER_BYTES = 1024 * 1024
MAX_TOKENS = 100_000_000


class ServerContext(NamedTuple):
    """The context a server says it holds, in tokens, and who said it how."""

    tokens: int
    said_by: str  # "llama.cpp (GET /props)"


def ask(
    settings: ModelSettings,
    client: ModelClient,
    listed: Sequence[Mapping[str, Any]] | None = None,
) -> ServerContext | None:
    """The smallest context the server says it holds (None when it says nothing within
    `ASK_SECONDS` of the model client being made), asked through `client`, the model
    client for this server the caller made (chat's probe, exec's agent). `listed`: the
    model list already read (GET /models), whose `max_model_len` is used instead of
    asking again."""
    root = _root(settings.base_url)
    if root is None:
        return None
    try:
        client.made()  # or waited for: its SDK is imported in a thread of its own
    except Exception:  # a key no header can hold: nothing is asked
        return None
    return _ask(client, settings, root, listed)


def _ask(
    client: ModelClient,
    settings: ModelSettings,
    root: str,
    listed: Sequence[Mapping[str, Any]] | None,
) -> ServerContext | None:
    base = settings.base_url.rstrip("/")
    asks: list[tuple[str, str, str, dict[str, Any] | None, Callable[[Any], int | None]]] = [
        ("llama.cpp (GET /props)", "GET", f"{root}/props", None, _from_props),
        (
            "Ollama (POST /api/show)",
            "POST",
            f"{root}/api/show",
            {"model": settings.model},
            _from_show(settings.model),
        ),
    ]
    found: list[ServerContext] = []
    if listed is not None:
        tokens = _from_models(settings.model)({"data": list(listed)})
        if tokens is not None:
            found.append(ServerContext(tokens, "vLLM (GET /v1/models)"))
    else:
        vllm = _from_models(settings.model)
        asks.append(("vLLM (GET /v1/models)", "GET", f"{base}/models", None, vllm))
    deadline = time.monotonic() + ASK_SECONDS
    lock = threading.Lock()

    def one(
        said_by: str, method: str, url: str, body: Any, parse: Callable[[Any], int | None]
    ) -> None:
        answer = _fetch(client, method, url, body, deadline)
        tokens = _believed(parse, answer) if answer is not None else None
        if tokens is not None:
            with lock:
                found.append(ServerContext(tokens, said_by))

    threads = [
        threading.Thread(target=one, args=item, daemon=True, name="ask-context") for item in asks
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return min(found, default=None)


def _root(base_url: str) -> str | None:
    """The server's root: the base URL without a last `/v1` (llama.cpp's and Ollama's
    own routes are there); None for a URL that is not http(s)."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _fetch(client: ModelClient, method: str, url: str, body: Any, deadline: float) -> Any:
    """The JSON of a 200 answer, None for anything else (never raises): asked through
    the model client (the SDK's HTTP client), within what is left until `deadline`."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    answer = client.server_json(method, url, body, left, MAX_ANSWER_BYTES)
    try:
        return None if answer is None else json.loads(answer)
    except (ValueError, RecursionError):  # not JSON, or nested past what json reads
        return None


def _believed(parse: Callable[[Any], int | None], answer: Any) -> int | None:
    try:
        tokens = parse(answer)
    except (AttributeError, TypeError, ValueError, KeyError):
        return None
    return tokens


def _count(value: Any) -> int | None:
    """A token count a server may say: a positive whole number, not absurdly large."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= MAX_TOKENS else None


def _from_props(answer: Any) -> int | None:
    if not isinstance(answer, Mapping):
        return None
    defaults = answer.get("default_generation_settings")
    if isinstance(defaults, Mapping) and _count(defaults.get("n_ctx")) is not None:
        return _count(defaults.get("n_ctx"))
    return _count(answer.get("n_ctx"))


def _from_show(model: str) -> Callable[[Any], int | None]:
    def parse(answer: Any) -> int | None:
        if not isinstance(answer, Mapping):
            return None
        info = answer.get("model_info")
        length = None
        if isinstance(info, Mapping):
            arch = info.get("general.architecture")
            if isinstance(arch, str):
                length = _count(info.get(f"{arch}.context_length"))
        num_ctx = None
        parameters = answer.get("parameters")
        if isinstance(parameters, str):
            for line in parameters.splitlines()[:200]:
                words = line.split()
                if len(words) == 2 and words[0] == "num_ctx" and words[1].isdigit():
                    num_ctx = _count(int(words[1][:12]))
        said = [n for n in (length, num_ctx) if n is not None]
        return min(said) if said else None

    return parse


def _from_models(model: str) -> Callable[[Any], int | None]:
    def parse(answer: Any) -> int | None:
        data = answer.get("data") if isinstance(answer, Mapping) else None
        if not isinstance(data, list):
            return None
        entries = [e for e in data[:1000] if isinstance(e, Mapping)]
        mine = [e for e in entries if e.get("id") == model]
        if not mine and len(entries) == 1:
            mine = entries  # one model served under another name
        said = [n for e in mine if (n := _count(e.get("max_model_len"))) is not None]
        return min(said) if said else None

    return parse
