"""The chat's approvals: what a write_file, edit_file or run_shell call would do, and the
question (yes, no, always).

Invariants:
- Everything shown is visible-safe: a command whole on lines of its own; a write says
  "creates" or "replaces"; a replacement or edit shows the diff with the file's own line
  numbers (`services/tools/preview.py`); what does not fit is counted and `v` shows it.
- "Always" for run_shell is `agent/shell_scope.py`'s scope, said in words before it is
  chosen, never offered for a line that does more than one command; for other tools it is
  the tool for the session, kept by this home (`agent/granted.py`).
"""

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from gitsessions.agent.granted import Granted
from gitsessions.agent.shell_scope import NoScope, always_offer, offer_words
from gitsessions.cli.chat_input import discard_ahead, discarded_note, echoed
from gitsessions.cli.hanging import hanging
from gitsessions.cli.plain import one_line
from gitsessions.services.tools import FileChange
from gitsessions.values.plural import plural
from gitsessions.values.visible import visible

# Arguments shown as a block of their own lines, even when short.
BLOCK_ARGUMENTS = ("command", "content", "old", "new")
FIRST_LINES = 20  # of a file write_file asks to write; `v` shows the rest
DIFF_LINES = 40  # of a diff; `v` shows the rest
CONTEXT = 3  # unchanged lines around each change
DIFF_STYLES = {"---": "bold", "+++": "bold", "@": "cyan", "-": "red", "+": "green"}

Preview = Callable[[str, Mapping[str, Any]], FileChange | None]


def describe_approval(
    name: str, arguments: Mapping[str, Any], whole: bool = False, change: FileChange | None = None
) -> Text:
    """The question for one call, everything escaped: `run_shell` its command on lines of
    its own; `write_file` what it creates (size, first lines; `whole`: every line) or the
    diff of what it replaces; `edit_file` the diff of the edit, numbered as the file is
    (`change`: the file now, when read), else of `old` and `new`; any other tool every
    argument."""
    text = Text()
    text.append(f"allow {one_line(name)}?", style="bold yellow")
    rest = dict(arguments)
    if name == "run_shell" and isinstance(rest.get("command"), str):
        for n, line in enumerate(visible(rest.pop("command")).split("\n")):
            text.append("\n  $ " if n == 0 else "\n    ", style="bold")
            text.append(line)
    elif name == "write_file" and isinstance(rest.get("content"), str):
        content = rest.pop("content")
        if change is not None and change.exists:
            rest.pop("path", None)
            _replacement(text, change, content, whole)
        elif change is not None:
            rest.pop("path", None)
            text.append("\n  creates ", style="bold")
            text.append(one_line(change.path), style="bold")
            text.append(f": {_size(content)}")
            _lines(text, content, whole)
        else:
            if "path" in rest:
                _argument(text, "path", rest.pop("path"))
            text.append("\n  content: ", style="bold")
            text.append(_size(content))
            _lines(text, content, whole)
    elif (
        name == "edit_file"
        and isinstance(rest.get("old"), str)
        and isinstance(rest.get("new"), str)
    ):
        path = rest.pop("path", "")
        old, new = rest.pop("old"), rest.pop("new")
        if change is not None and change.before is not None and change.after is not None:
            text.append("\n  edits ", style="bold")
            text.append(one_line(change.path), style="bold")
            _numbered_diff(text, change.before, change.after, whole)
        else:
            if change is not None and change.note:
                text.append(f"\n  {one_line(change.note)}", style="yellow")
            _diff(text, one_line(path), old, new)
    for key, value in rest.items():
        if value is not None:  # an optional argument left out (`timeout`: the default)
            _argument(text, key, value)
    return text


def _replacement(text: Text, change: FileChange, content: str, whole: bool) -> None:
    """write_file over a file that exists: say so, then the diff (or why there is none)."""
    text.append("\n  replaces ", style="bold yellow")
    text.append(one_line(change.path), style="bold yellow")
    if change.before is None:
        text.append(f" ({one_line(change.note)}, {plural(change.size, 'byte')})")
        text.append(f" with {_size(content)}")
        _lines(text, content, whole)
        return
    text.append(f": {_size(change.before)} now, {_size(content)} after")
    if change.before == content:
        text.append("\n    (the same content: nothing changes)", style="dim")
        return
    _numbered_diff(text, change.before, content, whole)


def _size(content: str) -> str:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    size = len(content.encode("utf-8", "surrogatepass"))
    return f"{plural(len(lines), 'line')}, {plural(size, 'byte')}"


def _lines(text: Text, content: str, whole: bool) -> None:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    shown = lines if whole else lines[:FIRST_LINES]
    for line in shown:
        text.append("\n    | ", style="dim")
        text.append(visible(line))
    if len(lines) > len(shown):
        more = len(lines) - len(shown)
        text.append(f"\n    ... {plural(more, 'more line')} (v shows them all)", style="dim")


def _numbered_diff(text: Text, before: str, after: str, whole: bool) -> None:
    """The changed lines with CONTEXT lines around them, each with its line number in
    the file (the old number for a kept or removed line, the new one for an added one);
    `...` between parts of the file far apart."""
    old, new = before.splitlines(), after.splitlines()
    if old == new:
        text.append("\n    (only line endings change)", style="dim")
        return
    width = len(str(max(len(old), len(new), 1)))
    rows: list[tuple[str, str, str]] = []  # (number, sign, line)
    groups = difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(CONTEXT)
    for n, group in enumerate(groups):
        if n > 0:
            rows.append(("", "...", ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [(str(i + 1), " ", old[i]) for i in range(i1, i2)]
                continue
            rows += [(str(i + 1), "-", old[i]) for i in range(i1, i2)]
            rows += [(str(j + 1), "+", new[j]) for j in range(j1, j2)]
    shown = rows if whole else rows[:DIFF_LINES]
    for number, sign, line in shown:
        if sign == "...":
            text.append(f"\n    {'':>{width}} ...", style="dim")
            continue
        style = {"-": "red", "+": "green"}.get(sign, "")
        text.append(f"\n    {number:>{width}} {sign} ", style=style or "dim")
        text.append(visible(line), style=style)
    if len(rows) > len(shown):
        more = len(rows) - len(shown)
        text.append(
            f"\n    ... {plural(more, 'more line')} of the diff (v shows them all)", style="dim"
        )


def _diff(text: Text, path: str, old: str, new: str) -> None:
    lines = difflib.unified_diff(
        visible(old).splitlines(), visible(new).splitlines(), path, path, lineterm=""
    )
    for line in lines:
        style = DIFF_STYLES.get(line[:3], DIFF_STYLES.get(line[:1], ""))
        text.append("\n")
        text.append(f"  {line}", style=style)


def _argument(text: Text, key: str, value: Any) -> None:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if key in BLOCK_ARGUMENTS or "\n" in shown:
        text.append(f"\n  {one_line(key)}:", style="bold")
        if not shown:
            text.append("\n    (empty)", style="dim")
        for line in visible(shown).split("\n") if shown else []:
            text.append("\n    | ", style="dim")
            text.append(line)
    else:
        text.append(f"\n  {one_line(key)}: ", style="bold")
        text.append(one_line(shown))


class ChatApprover:
    """Ask before write_file, edit_file and run_shell: yes, no (the default), or always
    (this tool; for run_shell, the command's scope). `preview` (the registry's, set once
    it is built) reads what a file call would change."""

    def __init__(
        self, console: Console, auto: bool = False, preview: Preview | None = None
    ) -> None:
        self.console = console
        self.auto = auto
        self.preview = preview
        self.granted = Granted()  # bound to the session once it is built

    def __call__(self, name: str, arguments: Any) -> bool:
        if self.auto or self.granted.allows(name, arguments):
            return True
        change = self.preview(name, arguments) if self.preview is not None else None
        shown = describe_approval(name, arguments, change=change)
        hidden = shown.plain != describe_approval(name, arguments, True, change).plain
        offer = always_offer(name, arguments)
        # whole: a line over the width wraps under its gutter (`+`/`-`, `$`), never to column 0
        self.console.print(hanging(shown, self.console.width), highlight=False, soft_wrap=True)
        choices = ["y: yes", "n: no (Enter)", offer_words(offer)]
        if hidden:
            choices.append("v: view all")
        self.console.print(Text(" · ".join(choices), style="dim"), highlight=False)
        keys = "y/N" + ("" if isinstance(offer, NoScope) else "/a") + ("/v" if hidden else "")
        prompt = f"[{keys}] "  # letters only: nothing of the model's reaches input()
        dropped = discard_ahead()  # keys typed before the question answer nothing
        if dropped:
            self.console.print(Text(discarded_note(dropped), style="dim"), highlight=False)
        while True:
            restore = echoed()
            try:
                answer = input(prompt).strip().lower()
            except EOFError:  # Ctrl-D: no, on a line of its own
                self.console.print()
                return False
            except KeyboardInterrupt:  # the turn is cancelled: that is said on the next line
                self.console.print()
                raise
            finally:
                restore()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no", ""):
                return False
            if answer in ("v", "view") and hidden:
                whole = describe_approval(name, arguments, True, change)
                self.console.print(
                    hanging(whole, self.console.width), highlight=False, soft_wrap=True
                )
            elif answer in ("a", "always") and not isinstance(offer, NoScope):
                try:
                    self.granted.grant(offer)
                except OSError as error:
                    said = f"note: not kept for a resumed session: {error.strerror or error}"
                    self.console.print(Text(one_line(said), style="yellow"), highlight=False)
                return True
            else:
                *first, last = keys.lower().split("/")
                self.console.print(
                    Text(f"answer {', '.join(first)} or {last}", style="dim"), highlight=False
                )
