"""The tool registry and dispatcher: one OpenAI tool call in, one `ToolOutcome` out.

Invariants:
- `dispatch` never raises for what the model did wrong (bad arguments, unknown tool,
  refused path, failed edit, OSError): an outcome `ok=False` whose content starts
  `error: `; only bugs propagate.
- A `needs_approval` tool runs only after `approve` returned True; else `error: denied by
  the user: ...` or, for `NotAsked(reason)`, `error: not run: ...`. Every failure starts
  `error:` (the ledger keys on it: a denied write is never listed as changed).
- Every content is bounded by the output limit.
"""

import copy
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from gitsessions.services.tools.arguments import (
    InvalidArguments,
    check_arguments,
    parse_arguments,
)
from gitsessions.services.tools.output import DEFAULT_OUTPUT_LIMIT, truncate
from gitsessions.services.tools.preview import FileChange
from gitsessions.services.tools.result import ToolResult
from gitsessions.services.tools.schemas import ToolDefinition
from gitsessions.values.canonical import dumps_line
from gitsessions.values.errors import GitsessionsError, InvalidInput

Handler = Callable[[dict[str, Any]], ToolResult | str]
Output = Callable[[str], None]  # the last line of a running tool's output, as it comes
StreamingHandler = Callable[[dict[str, Any], Output], ToolResult | str]
Preview = Callable[[str, Mapping[str, Any]], FileChange | None]
MIN_REGISTRY_OUTPUT_LIMIT = 1_000


def _ignore(line: str) -> None:
    """An `Output` nobody watches."""


class NotAsked(NamedTuple):
    """An approver's answer when no one was asked: the call does not run, for `reason`
    (what the model is told instead of "denied by the user")."""

    reason: str


Approver = Callable[[str, Mapping[str, Any]], bool | NotAsked]


def deny_all(name: str, arguments: Mapping[str, Any]) -> NotAsked:
    """The default approver: no mutating tool runs, and no one is asked."""
    return NotAsked("it needs approval, and no one is here to give it")


def approve_all(name: str, arguments: Mapping[str, Any]) -> bool:
    """The approver for --auto-approve: every tool runs."""
    return True


class ToolOutcome(NamedTuple):
    """The result of one dispatched tool call, for the tool message and the audit log.

    `content` goes into the tool message verbatim. `ok` is False for every error, for a
    denied call and for a shell timeout (a non-zero exit code is still ok: the tool did
    its job). `duration` is the handler's run time in seconds (0.0 when it did not run).
    `arguments_digest` is the sha256 hex of the canonical JSON of the arguments as sent
    (of the raw string when it is not valid JSON, or holds NaN, Infinity or a lone
    surrogate, which have no canonical JSON). `exit_code` is run_shell's.
    """

    call_id: str
    tool: str
    content: str
    ok: bool
    duration: float
    arguments_digest: str
    exit_code: int | None = None
    denied: bool = False

    def message(self) -> dict[str, Any]:
        """The OpenAI `tool` message answering the call."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


class ToolSpec(NamedTuple):
    """A registered tool: its definition for the model, its handler, its approval need,
    and what it would change (read before it is approved)."""

    name: str
    definition: ToolDefinition
    handler: Handler | StreamingHandler
    needs_approval: bool
    preview: Preview | None = None
    streams: bool = False  # the handler takes an `Output` too
    checks: bool = True  # arguments checked against the schema here (an MCP server checks its own)


def arguments_digest(raw: Any, parsed: Mapping[str, Any] | None) -> str:
    """sha256 hex of the canonical JSON of `parsed`, or of `raw` when unparsed or when
    `parsed` has no canonical JSON (it holds NaN, Infinity or a lone surrogate)."""
    data: bytes | None = None
    if parsed is not None:
        try:
            data = dumps_line(parsed)
        except InvalidInput:  # NaN, Infinity or a lone surrogate: no canonical JSON
            data = None
    if data is None:
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else repr(raw).encode()
    return hashlib.sha256(data).hexdigest()


def describe_os_error(error: OSError) -> str:
    """A one-line description of an OSError, naming the file when known."""
    if error.strerror and error.filename:
        return f"{error.strerror}: {error.filename}"
    return error.strerror or str(error) or type(error).__name__


def refusal(name: str, answer: NotAsked | bool) -> str:
    """What the model reads for a call that did not run: denied by the user, or not run
    for the reason an approver that asked no one gave."""
    if isinstance(answer, NotAsked):
        return (
            f"error: not run: {answer.reason}. This {name} call was not run and no one was "
            "asked; do not retry it. Say what you would have run, or take another approach."
        )
    return (
        f"error: denied by the user: this {name} call was not approved, so it was not run. "
        "Do not retry it unchanged; ask the user or take another approach."
    )


class ToolRegistry:
    """Tools by name, and the dispatcher that runs a model's tool call."""

    def __init__(
        self, *, approve: Approver = deny_all, output_limit: int = DEFAULT_OUTPUT_LIMIT
    ) -> None:
        if output_limit < MIN_REGISTRY_OUTPUT_LIMIT:
            raise ValueError(f"output_limit must be at least {MIN_REGISTRY_OUTPUT_LIMIT}")
        self.approve = approve
        self.output_limit = output_limit
        self._tools: dict[str, ToolSpec] = {}
        # tool name -> (the agent whose tool it was, this agent's tool for its job)
        self._foreign: dict[str, tuple[str, str | None]] = {}

    def refuse_foreign(
        self, names: Iterable[str], source: str, instead: Mapping[str, str] | None = None
    ) -> None:
        """Tools of the agent an imported session came from (`source`) that this agent
        lacks: a call to one is refused in words that say so, naming this agent's tool
        for the same job (`instead`) when there is one; no tool is registered."""
        for name in names:
            if name not in self._tools:
                self._foreign[name] = (source, (instead or {}).get(name))

    def register(
        self,
        name: str,
        schema: ToolDefinition,
        handler: Handler | StreamingHandler,
        *,
        needs_approval: bool = False,
        preview: Preview | None = None,
        streams: bool = False,
        checks: bool = True,
    ) -> None:
        """Add a tool; `schema` is its OpenAI function-tool definition, named `name`;
        `preview(name, arguments)` says what a call would change to a file; a handler
        that `streams` is called with an `Output` too, to tell its last line as it runs."""
        function = schema.get("function")
        if schema.get("type") != "function" or not isinstance(function, Mapping):
            raise ValueError(f"tool {name!r}: schema must be an OpenAI function tool")
        if function.get("name") != name:
            raise ValueError(f"tool {name!r}: schema names {function.get('name')!r}")
        if not isinstance(function.get("parameters"), Mapping):
            raise ValueError(f"tool {name!r}: schema has no parameters object")
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered")
        definition = copy.deepcopy(schema)
        self._tools[name] = ToolSpec(
            name, definition, handler, needs_approval, preview, streams, checks
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Registered tool names, in registration order."""
        return tuple(self._tools)

    def definitions(self) -> list[ToolDefinition]:
        """The `tools=` list for the chat completions request (copies)."""
        return [copy.deepcopy(spec.definition) for spec in self._tools.values()]

    def needs_approval(self, name: str) -> bool:
        """Whether `name` is registered as needing approval (unknown names: False)."""
        spec = self._tools.get(name)
        return spec is not None and spec.needs_approval

    def preview(self, name: str, arguments: Mapping[str, Any]) -> FileChange | None:
        """What a call of `name` with these (checked) arguments would change to its file
        now, for an approval to show; None when the tool has no preview or it cannot tell."""
        spec = self._tools.get(name)
        if spec is None or spec.preview is None:
            return None
        try:
            return spec.preview(name, arguments)
        except (OSError, ValueError):  # a path the OS cannot take: the tool will say so
            return None

    def _not_registered(self, name: str) -> str:
        """Why a call of `name`, a tool not registered, was not run: an imported session's
        source's tool (naming this agent's tool for its job) or an unknown one."""
        available = ", ".join(self._tools) or "none"
        if name not in self._foreign:
            return f"unknown tool {name!r}; available: {available}"
        source, instead = self._foreign[name]
        use = (
            f"Use {instead} (with its own arguments), or one of: {available}"
            if instead
            else f"Use one of: {available}"
        )
        return (
            f"{name!r} is a tool of {source}, where this session was imported"
            f" from; this agent does not have it. {use}"
        )

    def dispatch(
        self,
        call: Mapping[str, Any],
        *,
        running: Callable[[], None] | None = None,
        output: Output | None = None,
    ) -> ToolOutcome:
        """Run one OpenAI tool call dict; every model mistake becomes an error outcome.
        `running()` is called once the handler is about to run (after any approval),
        `output(line)` with a streaming tool's last output line as it changes (from
        another thread)."""
        call_id, name, raw = _call_parts(call)
        parsed: dict[str, Any] | None = None

        def failed(message: str, **extra: Any) -> ToolOutcome:
            return ToolOutcome(
                call_id=call_id,
                tool=name,
                content=truncate(f"error: {message}", self.output_limit),
                ok=False,
                duration=extra.pop("duration", 0.0),
                arguments_digest=arguments_digest(raw, parsed),
                **extra,
            )

        spec = self._tools.get(name)
        if spec is None:
            return failed(self._not_registered(name))
        try:
            parsed = parse_arguments(raw)
            schema = spec.definition["function"]["parameters"]
            arguments = check_arguments(name, parsed, schema) if spec.checks else parsed
        except InvalidArguments as error:
            return failed(str(error))
        answer = self.approve(name, arguments) if spec.needs_approval else True
        if isinstance(answer, NotAsked) or not answer:
            return ToolOutcome(
                call_id=call_id,
                tool=name,
                content=refusal(name, answer),
                ok=False,
                duration=0.0,
                arguments_digest=arguments_digest(raw, parsed),
                denied=True,
            )
        if running is not None:
            running()
        started = time.monotonic()
        try:
            # `streams` says which of the two handler types `handler` is
            if spec.streams:
                result = spec.handler(arguments, output or _ignore)  # type: ignore[call-arg]
            else:
                result = spec.handler(arguments)  # type: ignore[call-arg]
        except GitsessionsError as error:
            return failed(str(error), duration=time.monotonic() - started)
        except OSError as error:
            return failed(describe_os_error(error), duration=time.monotonic() - started)
        except (ValueError, OverflowError, RecursionError) as error:
            # arguments the model made up that the OS or a library cannot take: a NUL in a
            # command, a lone surrogate in a path, a regex repeat count past sys.maxsize
            return failed(f"invalid argument: {error}", duration=time.monotonic() - started)
        duration = time.monotonic() - started
        if isinstance(result, str):
            result = ToolResult(result)
        return ToolOutcome(
            call_id=call_id,
            tool=name,
            content=truncate(result.content, self.output_limit),
            ok=result.ok,
            duration=duration,
            arguments_digest=arguments_digest(raw, parsed),
            exit_code=result.exit_code,
        )


def _call_parts(call: Mapping[str, Any]) -> tuple[str, str, Any]:
    """A tool call dict's id, tool name ("" for a missing or non-string one) and raw
    arguments (as sent, unchecked)."""
    call_id = call.get("id")
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = function.get("name")
    return (
        call_id if isinstance(call_id, str) else "",
        name if isinstance(name, str) else "",
        function.get("arguments", ""),
    )
