"""The model client: one chat completion request against an OpenAI-compatible server,
sent through the openai SDK's public API (chat completions, streamed or not, and the
model list).

Invariants: this is the only module that imports `openai`. What it returns is plain data
(an assistant message dict in the standard chat shape, usage, finish reason), the same
whether the reply was streamed or not. Every failure the server or the network can cause
surfaces as one `ModelError` subclass whose message names what to check (`_map_error`,
the one mapper); a KeyboardInterrupt is never swallowed, and a streamed response is
always closed.

- The request runs in a worker thread; the calling thread waits on it in short slices
  (services/model/inflight.py), so the first Ctrl-C always lands there and cancels, and the
  timeout is a deadline for the whole request (connect, send, every read of the
  answer): a server trickling bytes, or holding its headers, is cut when it is spent.
  A Ctrl-C raises `RequestInterrupted` (a KeyboardInterrupt) with what arrived in its
  `partial`.
- An answer is read under the caps of services/model/reply_limits.py (its bytes, an event
  stream's lines): past one, the request fails with `BadResponse` in bounded memory.
- A stream that ends (or fails) before its finish reason is not a reply: it raises
  (`IncompleteReply` when it just stopped) with what did arrive in `error.partial`, so
  the caller can keep the text and must not run the tool calls, whose arguments may be
  cut.
- Every request alternates user and assistant messages (tool results aside): runs of
  user messages are merged on the way out (`values.messages.alternating`), since strict
  chat templates (Gemma, Mistral, Llama on vLLM or llama.cpp) refuse anything else.
- A chat request redirected to another origin (scheme, host, port) is not followed:
  `RedirectRefused` names both origins, and nothing was sent to the other one
  (services/model/origins.py, through an httpx event hook). The model list follows a redirect
  as httpx does, the key kept to its origin.
- Proxies are the SDK's (httpx reads http_proxy, https_proxy, all_proxy and no_proxy;
  SOCKS through `socksio`); OPENAI_ORG_ID and OPENAI_PROJECT_ID are read by the SDK.
- A request's messages go as they are (as the SDK's `extra_body`), never walked by the
  SDK's type transform: a request costs no more per message than its JSON.
- Tool call ids are unique within a reply (a repeated id gets a `-2`, `-3`... suffix),
  since every result names the call it answers.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urljoin

if TYPE_CHECKING:
    import openai

    from gitsessions.services.model.reply_limits import ReplyLimits

from gitsessions.services.model import inflight
from gitsessions.services.model.origins import CrossOriginRedirect, origin, refuse_cross_origin
from gitsessions.services.settings.config import ModelSettings
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import alternating

Message = dict[str, Any]
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


class RequestInterrupted(KeyboardInterrupt):
    """Ctrl-C during a request: a KeyboardInterrupt carrying, in `partial`, what a stream
    delivered before it (None when nothing arrived)."""

    def __init__(self, partial: Completion | None = None) -> None:
        super().__init__()
        self.partial = partial


class ModelError(GitsessionsError):
    """The model request failed. `partial` holds what a stream delivered before it failed
    (None when nothing arrived, and for requests that were not streamed); `status` the
    HTTP status and `retry_after` the seconds the server asked to wait, when it said."""

    partial: Completion | None = None
    status: int | None = None
    retry_after: float | None = None


class EndpointUnreachable(ModelError):
    """No connection to the model server (refused, DNS, unreachable, dropped).
    `dropped`: the server closed the connection before it answered at all (a kept
    connection it had timed out as the request went out, most often): sent once more."""

    dropped: bool = False


class AuthenticationFailed(ModelError):
    """The server rejected the API key (401/403)."""


class ModelNotFound(ModelError):
    """The server does not know the model, or the URL path is wrong (404)."""


class RateLimited(ModelError):
    """The server asked us to slow down (429)."""


class ServerError(ModelError):
    """The server failed (5xx) or reported an error inside a stream."""


class RequestRejected(ModelError):
    """The server refused the request itself (other 4xx, e.g. context too long)."""


class RedirectRefused(ModelError):
    """The server redirected the request to another origin; it was not followed."""


class ModelTimeout(ModelError):
    """The server did not finish its answer within the timeout."""


class IncompleteReply(ModelError):
    """The stream ended before the model finished its reply (no finish reason)."""


class BadResponse(ModelError):
    """The server answered with something that is not a chat completion."""


class Usage(NamedTuple):
    """Tokens the server says the request used."""

    prompt_tokens: int
    completion_tokens: int


class Completion(NamedTuple):
    """One assistant reply as plain data."""

    message: Message
    usage: Usage | None
    finish_reason: str | None
    model: str


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
        self._limits: ReplyLimits | None = None
        self._making = threading.Lock()  # held while it is made
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
            raise self._unreachable(
                "the API key holds a control character, which cannot go in an "
                "Authorization header; check OPENAI_API_KEY or api_key in config.toml"
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
                self._openai_client = sdk.OpenAI(
                    base_url=self.settings.base_url,
                    api_key=self.settings.api_key,
                    timeout=self.settings.timeout,
                    max_retries=0,  # retried here, where the wait can be shown
                    http_client=http_client,
                )
                self._limits = limits
            return self._openai_client, self._limits

    def close(self) -> None:
        with self._making:  # after a client being made, never before it
            if self._openai_client is not None:
                self._openai_client.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self,
        messages: list[Mapping[str, Any]],
        *,
        model: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stream: bool = False,
        on_text: Callable[[str], None] | None = None,
        retry: bool = True,
    ) -> Completion:
        """Request one reply. With `stream`, `on_text` gets each content delta as it comes.
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
        messages: list[Mapping[str, Any]],
        *,
        model: str | None,
        tools: list[dict[str, Any]] | None,
        temperature: float | None,
        max_tokens: int | None,
        stream: bool,
        on_text: Callable[[str], None] | None,
    ) -> Completion:
        model = model or self.settings.model
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
        assembly = _Assembly(model)

        def work(put: Callable[[Any], None]) -> dict[str, Any] | None:
            client, limits = self._client()
            limits.running(running)
            try:
                if not stream:
                    return _as_dict(client.chat.completions.create(**request))
                chunks = client.chat.completions.create(**request)
                try:
                    for chunk in chunks:
                        put(_as_dict(chunk))
                finally:
                    chunks.close()
                return None
            finally:
                limits.running(None)

        running = inflight.Limits(self.settings.timeout)
        try:
            answer = self._run(work, running, lambda data: assembly.feed(data, on_text))
            if answer is not None:
                assembly.reply = _parse_completion(answer, assembly.model)
        except ModelError as error:
            assembly.attach(error)
            raise
        except KeyboardInterrupt:  # before the next clause, which may import openai
            raise RequestInterrupted(assembly.partial()) from None
        except _openai().OpenAIError as error:
            if assembly.saw_choice and type(error) is _openai().APIConnectionError:
                raise assembly.attach(self._broken(str(error.__cause__ or error))) from error
            raise assembly.attach(self._map_error(error, assembly.requested)) from error
        if assembly.reply is not None:
            return assembly.reply
        return assembly.finish(self.settings.base_url)

    def _run(
        self,
        work: Callable[[Callable[[Any], None]], Any],
        limits: inflight.Limits,
        on_item: Callable[[Any], None],
    ) -> Any:
        """`work` through services/model/inflight.py; what only this client raises there
        (the deadline, a refused redirect, a cap, JSON the SDK let through) mapped."""
        try:
            return inflight.run(work, limits=limits, on_item=on_item)
        except (inflight.DeadlinePassed, inflight.Abandoned):
            raise self._timeout() from None
        except CrossOriginRedirect as error:  # from the hook: the SDK lets it through
            raise self._redirect_refused(error.source, error.target) from None
        except inflight.ReplyTooLarge as error:
            raise BadResponse(
                f"the model server at {self.settings.base_url} sent {error}; refusing to "
                "read more (check --base-url, and any proxy on the way)"
            ) from None
        except json.JSONDecodeError as error:  # the openai client lets these through
            raise self._malformed(error) from error

    def _redirect_refused(self, source: object, target: object) -> RedirectRefused:
        return RedirectRefused(
            f"the model server at {source} redirected the request to {target}; refusing "
            "to send the conversation to another origin; check --base-url or "
            "GITSESSIONS_BASE_URL"
        )

    def _broken(self, reason: str) -> IncompleteReply:
        return IncompleteReply(
            f"the connection to the model server at {self.settings.base_url} "
            f"broke before the reply was finished: {reason}"
        )

    def _malformed(self, error: ValueError) -> BadResponse:
        return BadResponse(
            f"the model server at {self.settings.base_url} sent a malformed response: {error}"
        )

    def list_models(self) -> list[str]:
        """Model ids the server offers (GET /models)."""

        def work(put: Callable[[Any], None]) -> list[Any]:
            client, limits = self._client()
            limits.running(running)
            try:
                return [getattr(model, "id", None) for model in client.models.list()]
            finally:
                limits.running(None)

        running = inflight.Limits(self.settings.timeout)
        try:
            ids = self._run(work, running, lambda _: None)
        except KeyboardInterrupt:  # before the next clause, which may import openai
            raise
        except _openai().OpenAIError as error:
            raise self._map_error(error, "") from error
        except BadResponse:
            raise BadResponse(f"malformed model list from {self.settings.base_url}") from None
        if not all(isinstance(i, str) for i in ids):
            raise BadResponse(f"malformed model list from {self.settings.base_url}")
        return sorted(ids)

    def _timeout(self) -> ModelTimeout:
        source = self.settings.sources.get("timeout", "settings")
        return ModelTimeout(
            f"the model did not finish within {self.settings.timeout:g} s (timeout from "
            f"{source}); check that the server at {self.settings.base_url} is running, or "
            "raise GITSESSIONS_TIMEOUT or timeout in config.toml"
        )

    def _unreachable(self, reason: str) -> EndpointUnreachable:
        url = self.settings.base_url
        where = f"(base URL from {self.settings.sources.get('base_url', 'settings')})"
        hint = " check --base-url or GITSESSIONS_BASE_URL"
        if self.settings.sources.get("base_url") == "default":
            hint = (
                f" the default is Ollama: start it with `ollama serve` and `ollama pull "
                f"{self.settings.model}`, or point elsewhere with --base-url"
            )
        key = self.settings.api_key
        if len(key) >= 8:  # a library's message may quote the header (never short keys)
            reason = reason.replace(key, "<the API key>")
        return EndpointUnreachable(
            f"cannot reach the model server at {url}: {reason} {where};{hint}"
        )

    def _map_error(self, error: openai.OpenAIError, model: str) -> ModelError:
        url = self.settings.base_url
        if isinstance(error, _openai().APITimeoutError):
            return self._timeout()
        if isinstance(error, _openai().APIConnectionError):
            unreachable = self._unreachable(str(error.__cause__ or error))
            # httpx's RemoteProtocolError: the server closed the connection unanswered
            unreachable.dropped = type(error.__cause__).__name__ == "RemoteProtocolError"
            return unreachable
        if isinstance(error, _openai().APIResponseValidationError):
            return BadResponse(f"the model server at {url} sent a malformed response")
        if isinstance(error, _openai().APIStatusError):
            after = _retry_after(error.response.headers)
            mapped = _status_error(error.status_code, _message_of(error.body), model, url, after)
            mapped.status, mapped.retry_after = error.status_code, after
            return mapped
        if isinstance(error, _openai().APIError):  # an error event inside a stream
            return ServerError(f"the model server at {url} reported an error: {error.message}")
        return BadResponse(f"model request to {url} failed: {error}")


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


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a 429 or 503 asks for: `retry-after-ms`, or `Retry-After` in seconds or
    as an HTTP date; None when absent or unreadable."""
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        import email.utils  # an HTTP date: rare, and the email package is slow to import

        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (ValueError, TypeError, OverflowError):
        return None


def _status_error(
    status: int, detail: str, model: str, url: str, retry_after: float | None = None
) -> ModelError:
    said = f" (server said: {detail})" if detail else ""
    if retry_after is not None:
        said += f" (retry after {retry_after:.0f} s)"
    if status in (401, 403):
        return AuthenticationFailed(
            f"the model server at {url} rejected the API key (HTTP {status}){said};"
            " check OPENAI_API_KEY or api_key in config.toml"
        )
    if status == 404:
        return ModelNotFound(
            f"model {model!r} not found at {url} (HTTP 404){said};"
            " check --model or GITSESSIONS_MODEL (Ollama: `ollama pull`) and the base URL path"
        )
    if status == 429:
        return RateLimited(
            f"the model server at {url} is rate limiting requests (HTTP 429){said};"
            " wait and retry, or check your plan's limits"
        )
    if status >= 500:
        return ServerError(f"the model server at {url} failed with HTTP {status}{said}")
    return RequestRejected(f"the model server at {url} rejected the request (HTTP {status}){said}")


def _message_of(body: Any) -> str:
    """The server's message in an error answer's body, on one line (at most 200 chars)."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
        if isinstance(message, str):
            return " ".join(message.split())[:200]
    return ""


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    sdk = sys.modules.get("openai")  # only the SDK's client returns its models
    if sdk is not None and isinstance(obj, sdk.BaseModel):
        return obj.to_dict()
    if isinstance(obj, str | bytes):  # the SDK hands over a body that is not JSON as it came
        text = obj.decode("utf-8", "replace") if isinstance(obj, bytes) else obj
        head = text.lstrip()[:200].lower()
        if head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head:
            raise BadResponse(
                "the model server answered with HTML, not JSON (is --base-url right? "
                "it should end in /v1)"
            )
        shown = " ".join(text.split())[:80]
        raise BadResponse(f"the model server answered with text, not JSON: {shown!r}")
    raise BadResponse(f"the model server sent a {type(obj).__name__}, not a chat completion")


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt, completion)


def _parse_completion(data: dict[str, Any], model: str) -> Completion:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise BadResponse("the model server's response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise BadResponse("the model server's response has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadResponse("the model server's message content is not text")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise BadResponse("the model server's tool_calls is not a list")
    return Completion(
        message=_assistant_message(content or "", _unique_ids([_tool_call(c) for c in calls])),
        usage=_usage(data.get("usage")),
        finish_reason=choices[0].get("finish_reason"),
        model=data.get("model") or model,
    )


def _tool_call(call: Any) -> Message:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise BadResponse("the model server sent a tool call without a function name")
    arguments = function.get("arguments")
    return {
        "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {
            "name": function["name"],
            "arguments": arguments if isinstance(arguments, str) and arguments else "{}",
        },
    }


def _unique_ids(calls: list[Message]) -> list[Message]:
    """`calls` with every id unique: a repeated id gets the first free `-2`, `-3`...
    suffix, so each result answers exactly one call."""
    seen: set[str] = set()
    for call in calls:
        base = call["id"]
        n = 1
        while call["id"] in seen:
            n += 1
            call["id"] = f"{base}-{n}"
        seen.add(call["id"])
    return calls


def _assistant_message(text: str, calls: list[Message]) -> Message:
    message: Message = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


class _Assembly:
    """A streamed reply as its chunks arrive; what arrived is kept if the stream fails."""

    def __init__(self, model: str) -> None:
        self.requested = model  # the model asked for (error messages name it)
        self.model = model
        self.reply: Completion | None = None  # a reply that was not streamed
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.saw_choice = False

    def feed(self, data: Mapping[str, Any], on_text: Callable[[str], None] | None) -> None:
        self.model = data.get("model") or self.model
        self.usage = _usage(data.get("usage")) or self.usage
        for choice in data.get("choices") or []:
            self.saw_choice = True
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                if on_text is not None:
                    on_text(piece)
            for part in delta.get("tool_calls") or []:
                _merge_call_delta(self.calls, part)

    def completion(self, partial: bool = False) -> Completion:
        """The reply; `partial` skips calls cut before their name arrived."""
        ordered = [self.calls[i] for i in sorted(self.calls)]
        calls = [_tool_call(c) for c in ordered if c["function"]["name"] or not partial]
        message = _assistant_message("".join(self.text), _unique_ids(calls))
        return Completion(message, self.usage, self.finish_reason, self.model)

    def partial(self) -> Completion | None:
        """What arrived so far, None when nothing did."""
        return self.completion(partial=True) if self.text or self.calls or self.usage else None

    def attach(self, error: ModelError) -> ModelError:
        """`error`, carrying what arrived before it (if anything did)."""
        if error.partial is None:
            error.partial = self.partial()
        return error

    def finish(self, url: str) -> Completion:
        if not self.saw_choice:
            raise BadResponse("the model server's stream carried no choices")
        if self.finish_reason is None:
            raise self.attach(
                IncompleteReply(
                    f"the model server at {url} ended its stream before the reply was "
                    "finished (no finish reason)"
                )
            )
        return self.completion()


def _merge_call_delta(calls: dict[int, dict[str, Any]], part: Mapping[str, Any]) -> None:
    """Fold one streamed tool-call fragment into `calls`, keyed by its index."""
    index = part.get("index")
    if not isinstance(index, int):  # servers that omit the index send whole calls
        index = len(calls) if part.get("id") or not calls else max(calls)
    call = calls.setdefault(index, {"id": None, "function": {"name": None, "arguments": ""}})
    call["id"] = part.get("id") or call["id"]
    function = part.get("function") or {}
    if function.get("name"):
        call["function"]["name"] = function["name"]
    if isinstance(function.get("arguments"), str):
        call["function"]["arguments"] += function["arguments"]
