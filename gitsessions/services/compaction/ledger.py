"""The ledger: what a session did, read from its transcript, never from a model, and
appended to every continuation note, so a summarizer that forgets a modified file, an
earlier failure or what the agent decided cannot lose it.

Invariants: a pure function of (transcript, plan, pins); every line copied from the
transcript, never reworded: files written or edited, shell commands with exit codes, the
earlier failures (each with its failing tests or error lines: failures.py), the last
failure, open plan items, pins, and the agent's own replies (each cut to
MAX_STATEMENT_CHARS). The tools must keep to: `write_file`/`edit_file` take `path`,
`run_shell` `command`; a `run_shell` result starts `exit code: N` (or `exit code: timeout
after Ns`; without it the status is `?`); any failure starts `error:`. A failed write
changed nothing and is not listed. Within a token budget every section but the file list,
the earlier failures and the replies stays whole; the file list alternates the most recent
and most often changed files and counts the rest; what is left goes to the earlier
failures, then the replies, newest first.
"""

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitsessions.services.compaction.failures import error_lines
from gitsessions.values.messages import text_of

WRITE_TOOLS = {"write_file": "written", "edit_file": "edited"}
SHELL_TOOL = "run_shell"
LEDGER_HEADING = "## Ledger recorded from the transcript (exact, not summarized)"
MAX_COMMANDS = 25
MAX_COMMAND_CHARS = 300
MAX_ERROR_LINES = 30
MAX_ERROR_CHARS = 2000
MAX_FAILURES = 10  # the earlier failures kept (the newest)
MAX_STATEMENTS = 30  # the agent's replies kept (the newest)
MAX_STATEMENT_CHARS = 400  # a reply is cut to its first 400 characters

MORE_FILES = "- and {count:,} more files; read_session lists them (query: write_file, edit_file)"
FAILURES_HEADING = "### Earlier failures (oldest first; later commands may have fixed them)"
MORE_FAILURES = "- ({count:,} earlier failures left out; read_session shows them)"
STATEMENTS_HEADING = (
    "### The agent's own words (its replies, verbatim, newest first, each cut to "
    f"{MAX_STATEMENT_CHARS} characters; one JSON string each)"
)
MORE_STATEMENTS = "- (and {count:,} earlier replies; read_session has them)"

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
class Failure:
    """A failed tool result: where it is, what ran, and the lines saying how it failed."""

    index: int
    name: str
    detail: str
    lines: tuple[str, ...]

    def render(self) -> str:
        head = f"- transcript message {self.index}, {self.name} {self.detail}"
        return "\n".join([head + (":" if self.lines else ""), *(f"  {x}" for x in self.lines)])


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
    failures: tuple[Failure, ...] = ()  # the last MAX_FAILURES failed results, oldest first
    earlier_failures: int = 0  # failures before `failures`
    statements: tuple[tuple[int, str], ...] = ()  # (index, the agent's text), oldest first
    earlier_statements: int = 0  # replies before `statements`

    def render(self, max_tokens: int | None = None, tokens: Callable[[str], int] = len) -> str:
        """The ledger as plain text, headed by `LEDGER_HEADING`; with `max_tokens` (as
        `tokens` counts them) the file list is cut to what fits, and the earlier failures
        and the agent's words get what is left, see the module doc."""
        files = self._files(max_tokens, tokens)
        last = self.last_error.index if self.last_error else None
        failures = [f.render() for f in self.failures if f.index != last]
        statements = [
            f"- [message {index}] {json.dumps(text, ensure_ascii=False)}"
            for index, text in reversed(self.statements)
        ]
        earlier = (self.earlier_failures, self.earlier_statements)
        if max_tokens is None:
            return "\n".join([*files, *self._rest(failures, statements, earlier)])
        room = max_tokens - tokens("\n".join([*files, *self._rest([], [], (0, 0))]))
        shown: list[list[str]] = []
        for heading, entries, more, counted in (
            (FAILURES_HEADING, failures[::-1], MORE_FAILURES, self.earlier_failures),
            (STATEMENTS_HEADING, statements, MORE_STATEMENTS, self.earlier_statements),
        ):
            total = len(entries) + counted
            room -= tokens(heading) + tokens(more.format(count=total)) + 2 if entries else 0
            kept: list[str] = []
            for entry in entries:  # the newest first
                cost = tokens(entry) + 1
                if cost > room:
                    break
                kept.append(entry)
                room -= cost
            shown.append(kept)
        failures_shown = shown[0][::-1]  # shown oldest first
        left = (
            self.earlier_failures + len(failures) - len(failures_shown),
            self.earlier_statements + len(statements) - len(shown[1]),
        )
        return "\n".join([*files, *self._rest(failures_shown, shown[1], left)])

    def _files(self, max_tokens: int | None, tokens: Callable[[str], int]) -> list[str]:
        """The heading and the file list, cut to what fits beside the fixed sections."""
        rest = self._rest([], [], (0, 0))
        lines = [LEDGER_HEADING, "### Files written or edited by tools"]
        entries = [f"- {path} ({actions})" for path, actions in self.files]
        if max_tokens is None or tokens("\n".join([*lines, *entries, *rest])) <= max_tokens:
            return [*lines, *(entries or ["- none"])]
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
        return lines

    def _ranked(self) -> list[int]:
        """Positions in `files`, the most recently and the most often changed taken in
        turn, each once."""
        changes = self.changes or tuple((1, n) for n in range(len(self.files)))
        recent = sorted(range(len(changes)), key=lambda i: -changes[i][1])
        often = sorted(range(len(changes)), key=lambda i: (-changes[i][0], -changes[i][1]))
        order = dict.fromkeys(p for pair in zip(recent, often, strict=True) for p in pair)
        return list(order)

    def _rest(self, failures: list[str], statements: list[str], left: tuple[int, int]) -> list[str]:
        """Every section after the file list, with these failures and statements; `left`
        counts the failures and statements left out. A section with none is left out."""
        lines = ["### Shell commands (exit codes)"]
        shown = self.commands[-MAX_COMMANDS:]
        if len(self.commands) > len(shown) or self.earlier_commands:
            omitted = len(self.commands) - len(shown) + self.earlier_commands
            lines.append(f"- ({omitted} earlier commands omitted; read_session shows them)")
        for command, code in shown:
            lines.append(f"- [exit {'?' if code is None else code}] {_one_line(command)}")
        if not self.commands:
            lines.append("- none")
        if failures or left[0]:
            lines.append(FAILURES_HEADING)
            lines += [MORE_FAILURES.format(count=left[0])] if left[0] else []
            lines += failures
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
        if statements:
            lines += [STATEMENTS_HEADING, *statements]
            lines += [MORE_STATEMENTS.format(count=left[1])] if left[1] else []
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
    failures: list[Failure] = field(default_factory=list)  # the last ones
    earlier_failures: int = 0
    statements: list[tuple[int, str]] = field(default_factory=list)  # the last ones
    earlier_statements: int = 0

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
                said = text_of(message).strip()
                if said:
                    self.statements.append((index, _statement(said)))
                    self.earlier_statements += _trim(self.statements, MAX_STATEMENTS)
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
                self.earlier_commands += _trim(self.commands, MAX_COMMANDS)
            if failed and event.result is not None and event.result_index is not None:
                self.last_error = _last_error(event, event.result_index, event.result)
                failure = Failure(
                    event.result_index, event.name, self.last_error.detail,
                    error_lines(event.result),
                )  # fmt: skip
                self.failures.append(failure)
                self.earlier_failures += _trim(self.failures, MAX_FAILURES)
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
            failures=tuple(done.failures),
            earlier_failures=done.earlier_failures,
            statements=tuple(done.statements),
            earlier_statements=done.earlier_statements,
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
            "failures": [[f.index, f.name, f.detail, list(f.lines)] for f in self.failures],
            "earlier_failures": self.earlier_failures,
            "statements": [list(s) for s in self.statements],
            "earlier_statements": self.earlier_statements,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "LedgerBuilder":
        """A builder that goes on from a `state()`; ValueError when it is not one. A state
        written before failures and statements were kept has none (the next ledger lists
        those since)."""
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
                failures=[
                    Failure(int(i), str(n), str(d), tuple(str(x) for x in lines))
                    for i, n, d, lines in state.get("failures", [])
                ],
                earlier_failures=int(state.get("earlier_failures", 0)),
                statements=[(int(i), str(t)) for i, t in state.get("statements", [])],
                earlier_statements=int(state.get("earlier_statements", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"not a ledger state: {error}") from None


def _trim(items: list[Any], keep: int) -> int:
    """Drop all but the last `keep` of `items`; how many were dropped."""
    dropped = max(0, len(items) - keep)
    del items[:dropped]
    return dropped


def _statement(text: str) -> str:
    """The agent's reply as the ledger keeps it: whole, or its first MAX_STATEMENT_CHARS
    characters (at a word's end where one is near) and " [...]"."""
    if len(text) <= MAX_STATEMENT_CHARS:
        return text
    head = text[:MAX_STATEMENT_CHARS]
    space = head.rfind(" ")
    return (head[:space] if space > MAX_STATEMENT_CHARS * 3 // 4 else head).rstrip() + " [...]"


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
