"""The ledger: what a session did, read from its transcript, never from a model; a pure
function of (transcript, plan, pins), appended to every continuation note, so a
summarizer that forgets a modified file cannot lose it: files written or edited, shell
commands with exit codes, the last failed result, open plan items, pins verbatim.

Invariant (the tools must keep to it): `write_file`/`edit_file` take `path`, `run_shell`
`command`; a `run_shell` result starts `exit code: N` (or `exit code: timeout after Ns`;
without it the status is `?`); any failure starts `error:`. A failed write changed
nothing and is not listed. Within a token budget every section but the file list stays
whole; the file list alternates the most recent and most often changed files and counts
the rest.
"""

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitsessions.values.messages import text_of

WRITE_TOOLS = {"write_file": "written", "edit_file": "edited"}
SHELL_TOOL = "run_shell"
LEDGER_HEADING = "## Ledger recorded from the transcript (exact, not summarized)"
MAX_COMMANDS = 25
MAX_COMMAND_CHARS = 300
MAX_ERROR_LINES = 30
MAX_ERROR_CHARS = 2000

MORE_FILES = "- and {count:,} more files; read_session lists them (query: write_file, edit_file)"

_EXIT_LINE = re.compile(r"\s*exit code:\s*(.*?)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class ToolEvent:
    """One tool call from the transcript and the result recorded for it (if any)."""

    call_index: int
    result_index: int | None
    name: str
    arguments: Mapping[str, Any]
    result: str | None
    call_id: str = ""


@dataclass(frozen=True)
class LastError:
    """The last failed tool result: where it is, what ran, and an excerpt of it."""

    index: int
    name: str
    detail: str
    excerpt: str


@dataclass(frozen=True)
class Ledger:
    """The deterministic part of a continuation note. `files` are (path, actions) in the
    order first changed; `changes` gives for each of them (times changed, transcript
    index of the last change)."""

    files: tuple[tuple[str, str], ...]
    commands: tuple[tuple[str, str | None], ...]
    last_error: LastError | None
    open_plan: tuple[tuple[str, str], ...]
    pins: tuple[str, ...]
    changes: tuple[tuple[int, int], ...] = ()
    earlier_commands: int = 0  # commands before `commands` (kept no more)

    def render(self, max_tokens: int | None = None, tokens: Callable[[str], int] = len) -> str:
        """The ledger as plain text, headed by `LEDGER_HEADING`; with `max_tokens` (as
        `tokens` counts them) the file list is cut to what fits, see the module doc."""
        rest = self._rest()
        lines = [LEDGER_HEADING, "### Files written or edited by tools"]
        entries = [f"- {path} ({actions})" for path, actions in self.files]
        if max_tokens is None or tokens("\n".join([*lines, *entries, *rest])) <= max_tokens:
            return "\n".join([*lines, *(entries or ["- none"]), *rest])
        room = max_tokens - tokens("\n".join([*lines, MORE_FILES.format(count=0), *rest]))
        kept: set[int] = set()
        for position in self._ranked():
            cost = tokens(entries[position]) + 1  # the entry and its newline
            if cost > room and kept:
                break
            kept.add(position)  # the newest file is always named
            room -= cost
        lines += [entries[i] for i in sorted(kept)]
        lines.append(MORE_FILES.format(count=len(entries) - len(kept)))
        return "\n".join([*lines, *rest])

    def _ranked(self) -> list[int]:
        """Positions in `files`, the most recently and the most often changed taken in
        turn, each once."""
        changes = self.changes or tuple((1, n) for n in range(len(self.files)))
        recent = sorted(range(len(changes)), key=lambda i: -changes[i][1])
        often = sorted(range(len(changes)), key=lambda i: (-changes[i][0], -changes[i][1]))
        order = dict.fromkeys(p for pair in zip(recent, often, strict=True) for p in pair)
        return list(order)

    def _rest(self) -> list[str]:
        """Every section after the file list."""
        lines = ["### Shell commands (exit codes)"]
        shown = self.commands[-MAX_COMMANDS:]
        if len(self.commands) > len(shown) or self.earlier_commands:
            omitted = len(self.commands) - len(shown) + self.earlier_commands
            lines.append(f"- ({omitted} earlier commands omitted; read_session shows them)")
        for command, code in shown:
            lines.append(f"- [exit {'?' if code is None else code}] {_one_line(command)}")
        if not self.commands:
            lines.append("- none")
        lines.append("### Last error")
        if self.last_error is None:
            lines.append("- none")
        else:
            error = self.last_error
            lines.append(f"transcript message {error.index}, {error.name} {error.detail}:")
            lines.append(error.excerpt)
        lines.append("### Open plan items")
        lines += [f"- [{status}] {text}" for text, status in self.open_plan] or ["- none"]
        lines.append("### Pinned notes (verbatim)")
        lines += [f"- {pin}" for pin in self.pins] or ["- none"]
        return lines


def exit_status(result: str) -> str | None:
    """What follows `exit code:` on a `run_shell` result's first line ("0", "1",
    "timeout after 30s"), or None when the first line is not an exit line."""
    match = _EXIT_LINE.fullmatch(result.split("\n", 1)[0])
    return match.group(1) if match and match.group(1) else None


def is_failure(name: str, result: str) -> bool:
    """Whether a tool result reports a failure under the convention above."""
    if result.lstrip().lower().startswith("error:"):
        return True
    if name == SHELL_TOOL:
        status = exit_status(result)
        return status is not None and status != "0"
    return False


def build_ledger(
    transcript: Sequence[Mapping[str, Any]],
    plan: Sequence[Mapping[str, Any]] = (),
    pins: Sequence[str] = (),
) -> Ledger:
    """Read the ledger from the transcript; plan items are {"text" or "step", "status"}."""
    builder = LedgerBuilder()
    builder.feed(transcript, 0)
    return builder.ledger(plan, pins)


@dataclass
class LedgerBuilder:
    """The ledger read incrementally: `feed` the transcript's messages from `through` on;
    `state()` is JSON that compaction keeps in its record, so the next compaction reads
    only the messages since (`from_state`). Feeding a transcript in any number of pieces
    gives the ledger `build_ledger` reads from it whole. Tool calls are taken in call
    order once their assistant message's results are in (the `group`)."""

    through: int = 0
    files: dict[str, dict[str, int]] = field(default_factory=dict)  # path: {action: times}
    last: dict[str, int] = field(default_factory=dict)  # path: index of its last change
    commands: list[tuple[str, str | None]] = field(default_factory=list)  # the last ones
    earlier_commands: int = 0
    last_error: LastError | None = None
    group: list[ToolEvent] = field(default_factory=list)  # the open assistant message's

    def feed(self, messages: Sequence[Mapping[str, Any]], start: int) -> None:
        """Messages `start...` of the transcript; `start` must be `through`."""
        if start != self.through:
            raise ValueError(f"ledger: fed from {start}, but read through {self.through}")
        for offset, message in enumerate(messages):
            index = start + offset
            role = message.get("role")
            if role == "tool":
                call_id = str(message.get("tool_call_id"))
                for slot, event in enumerate(self.group):
                    if event.result_index is None and event.name and event.call_id == call_id:
                        self.group[slot] = ToolEvent(
                            event.call_index, index, event.name, event.arguments,
                            text_of(message), event.call_id,
                        )  # fmt: skip
                        break
                continue
            self._close()
            if role == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    self.group.append(
                        ToolEvent(index, None, str(function.get("name", "")),
                                  _arguments(function), None, str(call.get("id")))
                    )  # fmt: skip
        self.through = start + len(messages)

    def _close(self) -> None:
        for event in self.group:
            failed = event.result is not None and is_failure(event.name, event.result)
            path = event.arguments.get("path")
            if event.name in WRITE_TOOLS and isinstance(path, str) and path and not failed:
                actions = self.files.setdefault(path, {})
                actions[WRITE_TOOLS[event.name]] = actions.get(WRITE_TOOLS[event.name], 0) + 1
                self.last[path] = event.call_index
            command = event.arguments.get("command")
            if event.name == SHELL_TOOL and isinstance(command, str):
                code = None if event.result is None else exit_status(event.result)
                self.commands.append((command, code))
                if len(self.commands) > MAX_COMMANDS:
                    self.earlier_commands += len(self.commands) - MAX_COMMANDS
                    del self.commands[:-MAX_COMMANDS]
            if failed and event.result is not None and event.result_index is not None:
                self.last_error = _last_error(event, event.result_index, event.result)
        self.group = []

    def ledger(self, plan: Sequence[Mapping[str, Any]] = (), pins: Sequence[str] = ()) -> Ledger:
        """The ledger of what was fed (an open assistant message counted as it stands)."""
        done = LedgerBuilder.from_state(self.state())
        done._close()
        open_plan = tuple(
            (str(item.get("text") or item.get("step") or ""), str(item.get("status") or "pending"))
            for item in plan
            if item.get("status") != "completed"
        )
        return Ledger(
            files=tuple((path, _actions(acts)) for path, acts in done.files.items()),
            commands=tuple(done.commands),
            last_error=done.last_error,
            open_plan=open_plan,
            pins=tuple(pins),
            changes=tuple((sum(acts.values()), done.last[p]) for p, acts in done.files.items()),
            earlier_commands=done.earlier_commands,
        )

    def state(self) -> dict[str, Any]:
        """What the next compaction needs to go on from `through`, as JSON."""
        error = self.last_error
        return {
            "through": self.through,
            "files": [[path, acts, self.last[path]] for path, acts in self.files.items()],
            "commands": [list(c) for c in self.commands],
            "earlier_commands": self.earlier_commands,
            "last_error": None
            if error is None
            else [error.index, error.name, error.detail, error.excerpt],
            "group": [_event_state(e) for e in self.group],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "LedgerBuilder":
        """A builder that goes on from a `state()`; ValueError when it is not one."""
        try:
            error = state["last_error"]
            return cls(
                through=int(state["through"]),
                files={
                    str(p): {str(a): int(n) for a, n in acts.items()}
                    for p, acts, _last in state["files"]
                },
                last={str(p): int(last) for p, _acts, last in state["files"]},
                commands=[(str(c), None if k is None else str(k)) for c, k in state["commands"]],
                earlier_commands=int(state["earlier_commands"]),
                last_error=None if error is None else LastError(*error),
                group=[ToolEvent(*e) for e in state["group"]],
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"not a ledger state: {error}") from None


def _event_state(e: ToolEvent) -> list[Any]:
    return [e.call_index, e.result_index, e.name, dict(e.arguments), _kept(e.result), e.call_id]


def _kept(result: str | None) -> str | None:
    """What the ledger can still need of a result whose message is not closed yet (its
    first line, and excerpts of at most MAX_ERROR_CHARS from either end)."""
    if result is None or len(result) <= 2 * MAX_ERROR_CHARS + 1:
        return result
    return result[:MAX_ERROR_CHARS] + "\n" + result[-MAX_ERROR_CHARS:]


def _arguments(function: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = function.get("arguments")
    if isinstance(raw, Mapping):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _actions(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{a} x{n}" if n > 1 else a for a, n in counts.items())


def _one_line(command: str) -> str:
    text = command if "\n" not in command else json.dumps(command, ensure_ascii=False)
    return text if len(text) <= MAX_COMMAND_CHARS else text[: MAX_COMMAND_CHARS - 3] + "..."


def _last_error(event: ToolEvent, index: int, result: str) -> LastError:
    lines = result.rstrip("\n").split("\n")
    if event.name == SHELL_TOOL:
        command = _one_line(str(event.arguments.get("command", "")))
        detail = f"{command} (exit code: {exit_status(result)})"
        excerpt = "\n".join(lines[-MAX_ERROR_LINES:])[-MAX_ERROR_CHARS:]
    else:
        path = event.arguments.get("path")
        detail = f"on {path}" if isinstance(path, str) else "failed"
        excerpt = "\n".join(lines[:MAX_ERROR_LINES])[:MAX_ERROR_CHARS]
    return LastError(index=index, name=event.name, detail=detail, excerpt=excerpt)
