"""What the model server says its context holds, asked once as an agent starts (the budget
is then the smaller of `--max-context-tokens` and that): llama.cpp `GET /props`
(`n_ctx`), Ollama `POST /api/show` (`context_length`, or a smaller `num_ctx`), vLLM
`GET /v1/models` (`max_model_len`; chat hands over the list its probe read), each asked
at once in a thread; a server answering none (OpenAI, a proxy) leaves the budget as set.

Invariants:
- Nothing goes anywhere but the base URL's origin: paths built from it, no redirect
  followed (the standard library's client), no proxy; the key sent as chat sends it.
- Bounded: `ASK_SECONDS` in all (a trickling server left in a daemon thread),
  `MAX_ANSWER_BYTES` read, only a positive whole number up to `MAX_TOKENS` believed;
  `ask` returns None rather than raise.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from gitsessions.services.settings.config import ModelSettings

ASK_SECONDS = 2.0
MAX_ANSWER_BYTES = 1024 * 1024
MAX_TOKENS = 100_000_000


class ServerContext(NamedTuple):
    """The context a server says it holds, in tokens, and who said it how."""

    tokens: int
    said_by: str  # "llama.cpp (GET /props)"


def ask(
    settings: ModelSettings, listed: Sequence[Mapping[str, Any]] | None = None
) -> ServerContext | None:
    """The smallest context the server says it holds (None when it says nothing within
    `ASK_SECONDS`). `listed`: the model list already read (GET /models), whose
    `max_model_len` is used instead of asking again."""
    root = _root(settings.base_url)
    if root is None:
        return None
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
        answer = _fetch(settings, method, url, body, deadline)
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


def _fetch(
    settings: ModelSettings, method: str, url: str, body: Any, deadline: float
) -> Any | None:
    """The JSON of a 200 answer, None for anything else (never raises). The standard
    library's HTTP client, which follows no redirect: light beside the SDK's, whose
    import and clients cost exec a few hundred milliseconds while it starts (for
    https, the system's trust store; no proxy is used)."""
    import http.client

    connection: http.client.HTTPConnection | None = None
    try:
        parts = urlsplit(url)
        left = max(0.1, deadline - time.monotonic())
        if parts.scheme == "https":
            import ssl

            context = ssl.create_default_context()
            connection = http.client.HTTPSConnection(parts.netloc, timeout=left, context=context)
        else:
            connection = http.client.HTTPConnection(parts.netloc, timeout=left)
        headers = {"accept-encoding": "identity", "accept": "application/json"}
        if settings.api_key:
            headers["authorization"] = f"Bearer {settings.api_key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        connection.request(method, parts.path or "/", body=data, headers=headers)
        response = connection.getresponse()
        if response.status != 200:
            return None
        answer = bytearray()
        while piece := response.read1(65536):
            answer += piece
            if len(answer) > MAX_ANSWER_BYTES or time.monotonic() > deadline:
                return None
        return json.loads(bytes(answer))
    except Exception:  # whatever the server or the network did: no answer
        return None
    finally:
        if connection is not None:
            connection.close()


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
