"""The model request's failures (one `ModelError` subclass each) and `map_error`, the one
mapper from what the SDK, httpx or the server raised.

Invariants:
- Every failure the server or network can cause is one `ModelError` whose message is one
  line naming what to check; a Ctrl-C is `RequestInterrupted` (a KeyboardInterrupt),
  never a `ModelError`; an answer saying the context overflowed is `ContextOverflow`,
  never retried, whatever its status.
- An error carries what a stream delivered (`partial`), and an HTTP `status` and
  `retry_after`.
- The API key never appears: a message quoting it shows `<the API key>`.
- The SDK is handed in (`sdk`): only model.py imports `openai`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gitsessions.services.settings.config import ModelSettings
from gitsessions.values.errors import GitsessionsError

if TYPE_CHECKING:
    from gitsessions.services.model.completion import Completion


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


class ContextOverflow(RequestRejected):
    """The server said the request does not fit its context (whatever its status: some
    answer 500). Not retried: the same request overflows again."""


class RedirectRefused(ModelError):
    """The server redirected the request to another origin; it was not followed."""


class ModelTimeout(ModelError):
    """The server did not finish its answer within the timeout."""


class IncompleteReply(ModelError):
    """The stream ended before the model finished its reply (no finish reason)."""


class BadResponse(ModelError):
    """The server answered with something that is not a chat completion."""


def timeout_error(settings: ModelSettings, summary: bool = False) -> ModelTimeout:
    """The deadline passed: a turn's `timeout`, or with `summary` a compaction's
    summary's (`ModelSettings.summary_seconds`)."""
    if summary and settings.summary_timeout >= settings.timeout:
        source = settings.sources.get("summary_timeout", "settings")
        return ModelTimeout(
            f"the summary did not finish within {settings.summary_seconds:g} s "
            f"(summary_timeout from {source}); check that the server at "
            f"{settings.base_url} is running, or raise GITSESSIONS_SUMMARY_TIMEOUT or "
            "summary_timeout in config.toml"
        )
    source = settings.sources.get("timeout", "settings")
    return ModelTimeout(
        f"the model did not finish within {settings.timeout:g} s (timeout from "
        f"{source}); check that the server at {settings.base_url} is running, or "
        "raise GITSESSIONS_TIMEOUT or timeout in config.toml"
    )


def unreachable(settings: ModelSettings, reason: str) -> EndpointUnreachable:
    url = settings.base_url
    where = f"(base URL from {settings.sources.get('base_url', 'settings')})"
    hint = " check --base-url or GITSESSIONS_BASE_URL"
    if settings.sources.get("base_url") == "default":
        hint = (
            f" the default is Ollama: start it with `ollama serve` and `ollama pull "
            f"{settings.model}`, or point elsewhere with --base-url"
        )
    key = settings.api_key
    if len(key) >= 8:  # a library's message may quote the header (never short keys)
        reason = reason.replace(key, "<the API key>")
    return EndpointUnreachable(f"cannot reach the model server at {url}: {reason} {where};{hint}")


def redirect_refused(source: object, target: object) -> RedirectRefused:
    return RedirectRefused(
        f"the model server at {source} redirected the request to {target}; refusing "
        "to send the conversation to another origin; check --base-url or "
        "GITSESSIONS_BASE_URL"
    )


def broken(settings: ModelSettings, reason: str) -> IncompleteReply:
    return IncompleteReply(
        f"the connection to the model server at {settings.base_url} "
        f"broke before the reply was finished: {reason}"
    )


def malformed(settings: ModelSettings, error: ValueError) -> BadResponse:
    return BadResponse(
        f"the model server at {settings.base_url} sent a malformed response: {error}"
    )


def map_error(
    sdk: ModuleType, error: Exception, settings: ModelSettings, model: str, summary: bool = False
) -> ModelError:
    """`error`, one of the SDK's (`sdk.OpenAIError`), as the `ModelError` it means (a
    timeout names the summary's deadline with `summary`)."""
    url = settings.base_url
    if isinstance(error, sdk.APITimeoutError):
        return timeout_error(settings, summary)
    if isinstance(error, sdk.APIConnectionError):
        mapped = unreachable(settings, str(error.__cause__ or error))
        # httpx's RemoteProtocolError: the server closed the connection unanswered
        mapped.dropped = type(error.__cause__).__name__ == "RemoteProtocolError"
        return mapped
    if isinstance(error, sdk.APIResponseValidationError):
        return BadResponse(f"the model server at {url} sent a malformed response")
    if isinstance(error, sdk.APIStatusError):
        after = _retry_after(error.response.headers)
        detail = _message_of(error.body)
        if overflowed(detail, error.body):
            said: ModelError = context_overflow(settings, f"HTTP {error.status_code}", detail)
        else:
            said = _status_error(error.status_code, detail, model, url, after)
        said.status, said.retry_after = error.status_code, after
        return said
    if isinstance(error, sdk.APIError):  # an error event inside a stream
        if overflowed(error.message, error.body):
            return context_overflow(settings, "in its stream", " ".join(error.message.split()))
        return ServerError(f"the model server at {url} reported an error: {error.message}")
    return BadResponse(f"model request to {url} failed: {error}")


# what servers say when a request does not fit their context: llama.cpp ("the request
# exceeds the available context size", type `exceed_context_size_error`), OpenAI (code
# `context_length_exceeded`), vLLM and others ("maximum context length is N tokens")
OVERFLOW_WORDS = (
    "exceeds the available context size",
    "exceed_context_size",
    "context_length_exceeded",
    "model_context_window_exceeded",
    "maximum context length",
    "context length exceeded",
    "maximum prompt length",
    "prompt is too long",
    "input is too long",
)


def overflowed(message: str, body: Any) -> bool:
    """Whether an error answer says the request overflowed the server's context."""
    said = message.lower() if isinstance(message, str) else ""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        for key in ("code", "type"):
            value = inner.get(key) if isinstance(inner, Mapping) else None
            if isinstance(value, str):
                said += " " + value.lower()[:200]
    return any(words in said for words in OVERFLOW_WORDS)


def context_overflow(settings: ModelSettings, how: str, detail: str) -> ContextOverflow:
    said = f" (server said: {detail[:200]})" if detail else ""
    source = settings.sources.get("max_context_tokens", "settings")
    return ContextOverflow(
        f"the model server at {settings.base_url} says the context overflowed ({how}){said}; "
        f"it holds less than --max-context-tokens {settings.max_context_tokens:,} (from "
        f"{source}): lower --max-context-tokens (or max_context_tokens in config.toml) to "
        "what the server holds, or give the server a larger context"
    )


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
