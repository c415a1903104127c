"""The model client: one chat completion request against an OpenAI-compatible server.

Two ways to send it: the builtin client (`services/wire.py`, the standard library: the
default, since importing openai costs half a second) and the openai SDK (`client =
"openai"`). Everything below holds for both, word for word: tests/test_model_client.py
runs each of its tests against each.

Invariants: this is the only module that imports `openai`. What it returns is plain data
(an assistant message dict in the standard chat shape, usage, finish reason), the same
whether the reply was streamed or not. Every failure the server or the network can cause
surfaces as one `ModelError` subclass whose message names what to check; a
KeyboardInterrupt is never swallowed, and a streamed response is always closed.

- The timeout is a deadline for the whole request (connect, send, every read of the
  answer), not per read: a server trickling bytes is cut when it is spent.
- A stream that ends (or fails) before its finish reason is not a reply: it raises
  (`IncompleteReply` when it just stopped) with what did arrive in `error.partial`, so
  the caller can keep the text and must not run the tool calls, whose arguments may be
  cut. A Ctrl-C during a request raises `RequestInterrupted` (a KeyboardInterrupt) with
  what arrived in its `partial` too.
- Every request alternates user and assistant messages (tool results aside): runs of
  user messages are merged on the way out (`values.messages.alternating`), since strict
  chat templates (Gemma, Mistral, Llama on vLLM or llama.cpp) refuse anything else.
- A chat request redirected to another origin (scheme, host, port) is not followed,
  by either client: `RedirectRefused` names both origins, and nothing was sent to the
  other one (services/origins.py; the SDK's through an httpx event hook).
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
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urljoin

if TYPE_CHECKING:
    import openai

from gitsessions.services.config import ModelSettings
from gitsessions.services.origins import CrossOriginRedirect, refuse_cross_origin
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.messages import alternating

Message = dict[str, Any]
MAX_RETRY_AFTER = 60.0  # seconds: a server asking for longer is reported, not waited for
MAX_BACKOFF = 30


def _interrupted(error: BaseException) -> bool:
    """Whether a KeyboardInterrupt hides inside `error`: pydantic turns one raised while
    it builds a schema into a `SchemaError` that only names it."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt) or "KeyboardInterrupt" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_preloading: threading.Event | None = None  # set once a preload() thread is done
GATE_SECONDS = 2.0  # a preload waits at most this long for its `after` event


def _openai() -> ModuleType:
    """The openai package, imported on first use: it takes seconds to import, and most
    commands (list, show, log...) never talk to a model. While `preload` imports it in
    another thread, this waits for that thread on an event (Ctrl-C ends the wait at
    once) instead of on the import machinery's module locks."""
    preloading = _preloading
    if preloading is not None and threading.current_thread() is threading.main_thread():
        while not preloading.wait(0.05):
            pass
    import openai

    return openai


def preload(after: threading.Event | None = None, client: str = "builtin") -> None:
    """Import the model client's HTTP stack now, in a background thread (`chat` starts
    one while the user types the first prompt, `exec` while it reads the store), so the
    first request does not wait for it: openai and httpx for `client = "openai"`,
    `services/wire.py` (socket: a few milliseconds) otherwise. With `after`, the thread
    first waits for that event (at most `GATE_SECONDS`): `chat` sets it once its prompt
    shows, so the import never delays it."""
    global _preloading
    done = threading.Event()
    if client == "openai":
        _preloading = done

    def load() -> None:
        try:
            if after is not None:
                after.wait(GATE_SECONDS)
            if client == "openai":
                import openai  # noqa: F401

                from gitsessions.services import deadline  # noqa: F401 - httpx too
            else:
                from gitsessions.services import wire  # noqa: F401
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
    """No connection to the model server (refused, DNS, unreachable, dropped)."""


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
    """Sends chat completion requests to the server named by `settings`, through the
    builtin client (`services/wire.py`, the standard library) or, with `client =
    "openai"`, the openai SDK; both return the same data and raise the same errors.

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
        self._openai_client: Any = None  # made at the first request: importing openai is slow
        self._deadline_hooks: Any = None
        self._wire: Any = None  # the builtin client, made at the first request

    @property
    def _deadline(self) -> Any:
        self._client  # noqa: B018 - the deadline is made with the client
        return self._deadline_hooks

    @property
    def _client(self) -> Any:
        if self._openai_client is None:
            from gitsessions.services.deadline import Deadline  # imports httpx

            self._deadline_hooks = Deadline()
            settings = self.settings
            hooks = self._deadline_hooks.hooks
            hooks["response"].insert(0, _refuse_cross_origin_post)
            http_client = _openai().DefaultHttpxClient(timeout=settings.timeout, event_hooks=hooks)
            self._deadline_hooks.install(http_client)
            self._openai_client = _openai().OpenAI(
                base_url=settings.base_url,
                api_key=settings.api_key,
                timeout=settings.timeout,
                max_retries=0,  # retried here, where the wait can be shown
                http_client=http_client,
            )
        return self._openai_client

    @property
    def _builtin(self) -> Any:
        if self._wire is None:
            from gitsessions.services.wire import Wire

            settings = self.settings
            self._wire = Wire(
                settings.base_url, settings.api_key, settings.proxies, settings.headers
            )
        return self._wire

    def close(self) -> None:
        if self._openai_client is not None:
            self._openai_client.close()
        if self._wire is not None:
            self._wire.close()

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
    ) -> Completion:
        """Request one reply. With `stream`, `on_text` gets each content delta as it comes.
        A 429 or 5xx is retried (see the class)."""
        attempt = 0
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
            except (RateLimited, ServerError) as error:
                seconds = self._retry_in(error, attempt)
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
        request: dict[str, Any] = {"model": model, "messages": alternating(messages)}
        if tools:
            request["tools"] = tools
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if stream:
            request.update(stream=True, stream_options={"include_usage": True})
        assembly = _Assembly(model)
        try:
            if self.settings.client == "openai":
                self._sdk_request(request, stream, assembly, on_text)
            else:
                self._wire_request(request, stream, assembly, on_text)
        except ModelError as error:
            assembly.attach(error)
            raise
        except KeyboardInterrupt:
            raise RequestInterrupted(assembly.partial()) from None
        except Exception as error:
            if _interrupted(error):  # Ctrl-C landed inside pydantic's lazy schema building
                raise RequestInterrupted(assembly.partial()) from None
            raise
        if assembly.reply is not None:
            return assembly.reply
        return assembly.finish(self.settings.base_url)

    def _sdk_request(
        self,
        request: dict[str, Any],
        stream: bool,
        assembly: _Assembly,
        on_text: Callable[[str], None] | None,
    ) -> None:
        """The request through the openai SDK; its errors mapped to `ModelError`s."""
        try:
            with self._deadline.running(self.settings.timeout):
                if not stream:
                    response = self._client.chat.completions.create(**request)
                    assembly.reply = _parse_completion(_as_dict(response), assembly.model)
                    return
                chunks = self._client.chat.completions.create(**request)
                try:
                    for chunk in chunks:
                        assembly.feed(_as_dict(chunk), on_text)
                finally:
                    chunks.close()
        except _openai().OpenAIError as error:
            if assembly.saw_choice and type(error) is _openai().APIConnectionError:
                raise self._broken(str(error.__cause__ or error)) from error
            raise self._map_error(error, assembly.requested) from error
        except json.JSONDecodeError as error:  # the openai client lets these through
            raise self._malformed(error) from error
        except CrossOriginRedirect as error:  # from the hook: the SDK lets it through
            raise self._redirect_refused(error.source, error.target) from None

    def _wire_request(
        self,
        request: dict[str, Any],
        stream: bool,
        assembly: _Assembly,
        on_text: Callable[[str], None] | None,
    ) -> None:
        """The request through the builtin client; its errors mapped to `ModelError`s as
        `_map_error` maps the SDK's, word for word."""
        from gitsessions.services import wire

        path, seconds = "/chat/completions", self.settings.timeout
        try:
            if not stream:
                answer = self._builtin.post_json(path, request, seconds)
                assembly.reply = _parse_completion(_as_dict(answer), assembly.model)
                return
            with self._builtin.post_stream(path, request, seconds) as events:
                for event in events:
                    assembly.feed(_as_dict(event), on_text)
        except wire.WireConnectionError as error:
            if assembly.saw_choice:
                raise self._broken(str(error)) from error
            raise self._unreachable(str(error)) from error
        except wire.WireError as error:
            raise self._map_wire_error(error, assembly.requested) from error
        except ValueError as error:  # not JSON (or not UTF-8)
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
        if self.settings.client != "openai":
            return self._wire_models()
        try:
            with self._deadline.running(self.settings.timeout):
                return sorted(model.id for model in self._client.models.list())
        except _openai().OpenAIError as error:
            raise self._map_error(error, "") from error
        except json.JSONDecodeError as error:
            raise BadResponse(f"malformed model list from {self.settings.base_url}") from error

    def _wire_models(self) -> list[str]:
        from gitsessions.services import wire

        try:
            answer = self._builtin.get_json("/models", self.settings.timeout)
        except wire.WireConnectionError as error:
            raise self._unreachable(str(error)) from error
        except wire.WireError as error:
            raise self._map_wire_error(error, "") from error
        except ValueError as error:
            raise BadResponse(f"malformed model list from {self.settings.base_url}") from error
        data = answer.get("data") if isinstance(answer, Mapping) else None
        if not isinstance(data, list) or not all(
            isinstance(m, Mapping) and isinstance(m.get("id"), str) for m in data
        ):
            raise BadResponse(f"malformed model list from {self.settings.base_url}")
        return sorted(m["id"] for m in data)

    def _map_wire_error(self, error: Exception, model: str) -> ModelError:
        from gitsessions.services import wire

        url = self.settings.base_url
        if isinstance(error, wire.WireTimeout):
            return self._timeout()
        if isinstance(error, wire.WireStatusError):
            after = _retry_after(error.headers)
            mapped = _status_error(error.status, _message_of(error.body), model, url, after)
            mapped.status, mapped.retry_after = error.status, after
            return mapped
        if isinstance(error, wire.WireRedirectRefused):
            return self._redirect_refused(error.source, error.target)
        if isinstance(error, wire.WireStreamError):
            return ServerError(f"the model server at {url} reported an error: {error}")
        return BadResponse(f"model request to {url} failed: {error}")

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
        return EndpointUnreachable(
            f"cannot reach the model server at {url}: {reason} {where};{hint}"
        )

    def _map_error(self, error: openai.OpenAIError, model: str) -> ModelError:
        url = self.settings.base_url
        if isinstance(error, _openai().APITimeoutError):
            return self._timeout()
        if isinstance(error, _openai().APIConnectionError):
            return self._unreachable(str(error.__cause__ or error))
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


def _refuse_cross_origin_post(response: Any) -> None:
    """The SDK's httpx event hook on every answer, redirects included (before httpx
    follows one): a POST redirected to another origin raises `CrossOriginRedirect`,
    which httpx and the SDK let through (services/origins.py)."""
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
