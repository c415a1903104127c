"""The model client: chat completions (streamed or not) and the model list against an
OpenAI-compatible server, through the openai SDK's public API; the only `openai`
importer. Answers are read by reassembly.py into plain data (completion.py); failures
mapped by errors.py.

Invariants:
- Every failure is one `ModelError`; a KeyboardInterrupt is never swallowed; a stream is
  always closed. The request runs on inflight.py's worker, its timeout a deadline for
  the whole request; answers are read under reply_limits.py's caps.
- Every request alternates user and assistant (runs of user messages merged on the way
  out, the stored context unchanged): strict chat templates refuse anything else; an
  empty tool result goes as `(no output)`.
- A chat request is never redirected to another origin (`RedirectRefused`, origins.py);
  the model list follows httpx's rule. Proxies, TLS and OPENAI_ORG_ID are the SDK's.
- Messages go as `extra_body`, never walked by the SDK's type transform.
- A 429 or 5xx before anything streamed is retried (`Retry-After`, `MAX_RETRY_AFTER`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urljoin

if TYPE_CHECKING:
    from gitsessions.services.model.reply_limits import ReplyLimits

from gitsessions.services.model import inflight
from gitsessions.services.model.completion import Completion
from gitsessions.services.model.errors import (
    BadResponse,
    EndpointUnreachable,
    ModelError,
    RateLimited,
    RequestInterrupted,
    ServerError,
    broken,
    malformed,
    map_error,
    redirect_refused,
    timeout_error,
    unreachable,
)
from gitsessions.services.model.origins import CrossOriginRedirect, origin, refuse_cross_origin
from gitsessions.services.model.reassembly import Assembly, as_dict, parse_completion
from gitsessions.services.settings.config import ModelSettings
from gitsessions.values.messages import alternating

MAX_RETRY_AFTER = 60.0  # seconds: a server asking for longer is reported, not waited for
MAX_BACKOFF = 30

_preloading: threading.Event | None = None  # set once a preload() thread is done
GATE_SECONDS = 2.0  # a preload waits at most this long for its `after` event


def _openai() -> ModuleType:
    """The openai package, imported on first use: it takes a few hundred milliseconds
    to import, and most commands (list, show, log...) never talk to a model. While
    `preload` imports it in another thread, this waits for that thread on an event
    (Ctrl-C ends the wait at once) instead of on the import machinery's module locks."""
    preloading = _preloading
    if preloading is not None and threading.current_thread() is threading.main_thread():
        while not preloading.wait(0.05):
            pass
    import openai

    return openai


def preload(after: threading.Event | None = None) -> None:
    """Import the SDK and its HTTP library now, in a background thread (`chat` starts
    one while the user types the first prompt, `exec` as soon as it knows it will ask
    the model, so the import overlaps opening the store); the first request then waits
    less or not at all. With `after`, the thread first waits for that event (at most
    `GATE_SECONDS`): `chat` sets it once its prompt shows, so the import never delays
    it."""
    global _preloading
    done = threading.Event()
    _preloading = done

    def load() -> None:
        try:
            if after is not None:
                after.wait(GATE_SECONDS)
            import openai  # noqa: F401

            from gitsessions.services.model import reply_limits  # noqa: F401 - httpx too
        finally:
            done.set()

    threading.Thread(target=load, daemon=True, name="import-client").start()


class Retry(NamedTuple):
    """A failed request about to be sent again: why, after how long, which try next."""

    error: ModelError
    seconds: float
    attempt: int  # the retry about to happen, from 1
    retries: int  # how many retries in all


def sleep_then_retry(retry: Retry) -> None:
    time.sleep(retry.seconds)


class ModelClient:
    """Sends chat completion requests to the server named by `settings` through the
    openai SDK.

    A request the server refused with 429 or 5xx before anything streamed is sent again
    up to `retries` times; `wait(Retry)` waits before each (by default it just sleeps;
    the chat counts down). The wait is the server's `Retry-After` when it gives one, at
    most `MAX_RETRY_AFTER` seconds (a longer one is reported, not waited for), else 1 s,
    2 s, 4 s... (at most `MAX_BACKOFF`)."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        retries: int = 0,
        wait: Callable[[Retry], None] = sleep_then_retry,
    ) -> None:
        self.settings = settings
        self.retries = retries
        self.wait = wait
        self._openai_client: Any = None  # made in a thread of its own, see below
        self._http_client: Any = None  # the SDK's HTTP client it was made with
        self._limits: ReplyLimits | None = None
        self._making = threading.Lock()  # held while it is made
        self._closing = threading.Lock()  # held while the client is set or `close` reads it
        self._closed = False
        # The SDK's client (its import, TLS context, connection pool) is made while the
        # caller does other work (exec: the store), so its first request waits less; a
        # failure there comes again, and is raised, at the request.
        threading.Thread(target=self._prepare, daemon=True, name="make-client").start()

    def _prepare(self) -> None:
        with suppress(Exception):
            self._client()

    def _client(self) -> tuple[Any, ReplyLimits]:
        """The SDK's client and its reply limits, made on first use (in a worker). A key
        that cannot go in a header as it is (a control character: a line it would
        inject) is refused first, without showing it."""
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in self.settings.api_key):
            raise unreachable(
                self.settings,
                "the API key holds a control character, which cannot go in an "
                "Authorization header; check OPENAI_API_KEY or api_key in config.toml",
            )
        with self._making:
            if self._openai_client is None or self._limits is None:
                from gitsessions.services.model.reply_limits import ReplyLimits

                sdk = _openai()
                limits = ReplyLimits()
                hooks = limits.hooks
                hooks["response"].insert(0, _refuse_cross_origin_post)
                http_client = sdk.DefaultHttpxClient(
                    timeout=self.settings.timeout,
                    event_hooks=hooks,
                    **tls_for(self.settings.base_url),
                )
                self._http_client = http_client
                made = sdk.OpenAI(
                    base_url=self.settings.base_url,
                    api_key=self.settings.api_key,
                    timeout=self.settings.timeout,
                    max_retries=0,  # retried here, where the wait can be shown
                    http_client=http_client,
                )
                with self._closing:
                    self._openai_client, self._limits = made, limits
                    closed = self._closed
                if closed:  # closed while it was made: never to be used
                    made.close()
            return self._openai_client, self._limits

    def close(self) -> None:
        """Close the SDK's client; one still being made (the SDK still importing: a chat
        left at its first prompt) is closed as soon as it is made, not waited for."""
        with self._closing:
            self._closed = True
            made = self._openai_client
        if made is not None:
            made.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stream: bool = False,
        on_text: Callable[[str], None] | None = None,
        retry: bool = True,
        summary: bool = False,
    ) -> Completion:
        """Request one reply. With `stream`, `on_text` gets each content delta as it comes.
        With `summary` (a compaction's summary) the deadline is the settings'
        `summary_seconds`, not a turn's `timeout`.
        A 429 or 5xx is retried (see the class) unless `retry` is False (a request made
        in the background, which must not wait on the screen); a request the server
        dropped before answering at all (`EndpointUnreachable.dropped`) is sent once
        more, at once."""
        attempt = 0
        resent = False
        while True:
            try:
                return self._complete(
                    messages,
                    model=model,
                    tools=tools,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    stream=stream,
                    on_text=on_text,
                    summary=summary,
                )
            except EndpointUnreachable as error:
                if not error.dropped or error.partial is not None or resent:
                    raise
                resent = True  # at once, on a new connection: nothing of it was answered
            except (RateLimited, ServerError) as error:
                seconds = self._retry_in(error, attempt) if retry else None
                if seconds is None:
                    raise
                attempt += 1
                self.wait(Retry(error, seconds, attempt, self.retries))

    def _retry_in(self, error: ModelError, attempt: int) -> float | None:
        """Seconds to wait before sending again, None when it is not worth it."""
        if attempt >= self.retries or error.partial is not None or error.status is None:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= MAX_RETRY_AFTER else None
        return float(min(2**attempt, MAX_BACKOFF))

    def _complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str | None,
        tools: list[dict[str, Any]] | None,
        temperature: float | None,
        max_tokens: int | None,
        stream: bool,
        on_text: Callable[[str], None] | None,
        summary: bool = False,
    ) -> Completion:
        model = model or self.settings.model
        seconds = self.settings.summary_seconds if summary else self.settings.timeout
        # The messages go as `extra_body` (the SDK's public "more JSON properties"),
        # sent as they are: `create` would walk every message through its type
        # transform (a no-op for plain chat messages, about 0.1-0.3 ms each), a cost that
        # grew with the session (issue 24). The rest of the request goes through it.
        request: dict[str, Any] = {
            "model": model,
            "messages": [],
            "extra_body": {"messages": alternating(messages)},
        }
        if tools:
            request["tools"] = tools
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if stream:
            request.update(stream=True, stream_options={"include_usage": True})
        if summary:  # each read, as the SDK's client times it, within the longer deadline
            request["timeout"] = seconds
        assembly = Assembly(model)

        def work(put: Callable[[Any], None]) -> dict[str, Any] | None:
            client, limits = self._client()
            limits.running(running)
            try:
                if not stream:
                    return as_dict(client.chat.completions.create(**request))
                chunks = client.chat.completions.create(**request)
                try:
                    for chunk in chunks:
                        put(as_dict(chunk))
                finally:
                    chunks.close()
                return None
            finally:
                limits.running(None)

        running = inflight.Limits(seconds)
        try:
            answer = self._run(
                work, running, lambda data: assembly.feed(data, on_text), summary=summary
            )
            if answer is not None:
                assembly.reply = parse_completion(answer, assembly.model)
        except ModelError as error:
            assembly.attach(error)
            raise
        except KeyboardInterrupt:  # before the next clause, which may import openai
            raise RequestInterrupted(assembly.partial()) from None
        except _openai().OpenAIError as error:
            if assembly.saw_choice and type(error) is _openai().APIConnectionError:
                reason = str(error.__cause__ or error)
                raise assembly.attach(broken(self.settings, reason)) from error
            mapped = map_error(_openai(), error, self.settings, assembly.requested, summary)
            raise assembly.attach(mapped) from error
        if assembly.reply is not None:
            return assembly.reply
        return assembly.finish(self.settings.base_url)

    def _run(
        self,
        work: Callable[[Callable[[Any], None]], Any],
        limits: inflight.Limits,
        on_item: Callable[[Any], None],
        summary: bool = False,
    ) -> Any:
        """`work` through services/model/inflight.py; what only this client raises there
        (the deadline, a refused redirect, a cap, JSON the SDK let through) mapped."""
        try:
            return inflight.run(work, limits=limits, on_item=on_item)
        except (inflight.DeadlinePassed, inflight.Abandoned):
            raise timeout_error(self.settings, summary) from None
        except CrossOriginRedirect as error:  # from the hook: the SDK lets it through
            raise redirect_refused(error.source, error.target) from None
        except inflight.ReplyTooLarge as error:
            raise BadResponse(
                f"the model server at {self.settings.base_url} sent {error}; refusing to "
                "read more (check --base-url, and any proxy on the way)"
            ) from None
        except json.JSONDecodeError as error:  # the openai client lets these through
            raise malformed(self.settings, error) from error

    def list_models(self) -> list[str]:
        """Model ids the server offers (GET /models)."""
        return sorted(entry["id"] for entry in self.model_list())

    def model_list(self) -> list[dict[str, Any]]:
        """The entries of the server's model list (GET /models), as it sent them (each
        with a string `id`; vLLM's say their `max_model_len` too)."""

        def work(put: Callable[[Any], None]) -> list[Any]:
            client, limits = self._client()
            limits.running(running)
            try:
                return [as_dict(model) for model in client.models.list()]
            finally:
                limits.running(None)

        running = inflight.Limits(self.settings.timeout)
        try:
            entries: list[dict[str, Any]] = self._run(work, running, lambda _: None)
        except KeyboardInterrupt:  # before the next clause, which may import openai
            raise
        except _openai().OpenAIError as error:
            raise map_error(_openai(), error, self.settings, "") from error
        except BadResponse:
            raise BadResponse(f"malformed model list from {self.settings.base_url}") from None
        if not all(isinstance(entry.get("id"), str) for entry in entries):
            raise BadResponse(f"malformed model list from {self.settings.base_url}")
        return entries

    def made(self) -> None:
        """Make the SDK's client now (or wait for the thread making it): raises what
        making it raises (`EndpointUnreachable` for a key no header can hold)."""
        self._client()

    def server_json(
        self, method: str, url: str, body: Any, seconds: float, max_bytes: int
    ) -> bytes | None:
        """The body of a 200 answer to `method url` with `body` (JSON, or None), a route
        of the server beside the API (llama.cpp's `/props`): sent through the SDK's
        HTTP client (its transport, TLS, proxies, reply limits) with the SDK's
        authorization header (the API key as every request sends it), asked
        uncompressed. None, never an exception, for anything else: another status, a
        redirect (not followed), an answer over `max_bytes`, none whole within
        `seconds`, a network failure."""

        def work(put: Callable[[Any], None]) -> bytes | None:
            client, limits = self._client()
            limits.running(running)
            headers = {
                **client.auth_headers,
                "accept": "application/json",
                "accept-encoding": "identity",
            }
            try:
                with self._http_client.stream(
                    method, url, headers=headers, json=body, timeout=seconds,
                    follow_redirects=False,
                ) as response:  # fmt: skip
                    if response.status_code != 200:
                        return None
                    answer = bytearray()
                    for piece in response.iter_raw():
                        answer += piece
                        if len(answer) > max_bytes:
                            return None
                    return bytes(answer)
            finally:
                limits.running(None)

        running = inflight.Limits(seconds)
        try:
            answer: bytes | None = inflight.run(work, limits=running, on_item=lambda _: None)
        except Exception:  # whatever the server or the network did: no answer
            return None
        return answer


def tls_for(base_url: str) -> dict[str, Any]:
    """The HTTP client's TLS settings for a server at `base_url`. For `https://` none:
    the SDK's default, which verifies against the system's trust store. For `http://`
    (a model on this machine or the LAN: Ollama, llama.cpp, vLLM) TLS is never spoken
    to that server, and a POST redirected to another origin is refused anyway; loading
    the trust store would cost 40-80 ms of CPU for nothing. Its context verifies
    certificates and host names but trusts no authority, so a GET that a redirect
    takes to https fails closed ("certificate verify failed"), never unverified."""
    if origin(base_url).scheme != "http":
        return {}
    import ssl

    return {"verify": ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)}


def _refuse_cross_origin_post(response: Any) -> None:
    """The SDK's httpx event hook on every answer, redirects included (before httpx
    follows one): a POST redirected to another origin raises `CrossOriginRedirect`,
    which httpx and the SDK let through (services/model/origins.py)."""
    location = response.headers.get("location")
    if location and response.has_redirect_location:
        request = response.request
        here = str(request.url)
        refuse_cross_origin(request.method, here, urljoin(here, location.strip()))
