"""`show ID --compaction N`: what compaction N took out of the working context and the
summary it left, both states shown as `diff` shows two (A before, B after; its styles).

Every stored string is shown through `one_line`/`vtext`, visible-safe.
"""

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from gitsessions.cli.diff_cmd import SIDE_STYLES
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.render import ROLE_STYLES
from gitsessions.values.ids import short
from gitsessions.values.plural import plural


def render(console: Console, data: Mapping[str, Any]) -> None:
    """Both states, then what left the context (A only) and what came in (B only)."""
    number = data["compaction"]
    stages = "+".join(one_line(s) for s in data["stages"]) or "-"
    head = Text(f"compaction {number} of {short(data['session'])}", style="bold")
    head.append(f"  ({one_line(data['trigger'] or '?')}, {stages})  {one_line(data['time'])}")
    head.append(f"  commit {data['commit'][:10]}", style="dim")
    if data["undone"]:
        head.append("  undone", style="yellow")
    console.print(head)
    recorded = data["recorded"]
    if recorded["before_tokens"] is not None:
        console.print(
            Text(
                f"recorded: {recorded['before_tokens']:,} -> {recorded['after_tokens']:,} "
                "tokens (with the tool schemas; below, the messages alone)",
                style="dim",
            )
        )
    for side, key, what in (("a", "before", "before it"), ("b", "after", "after it")):
        state = data[key]
        line = Text(f"{side.upper()}  ", style=SIDE_STYLES[side])
        line.append(what, style="bold")
        line.append(f"  {plural(state['messages'], 'message')}, {state['tokens']:,} tokens")
        line.append(f"  (commit {state['commit'][:10]})", style="dim")
        console.print(line)
    console.print()
    taken = data["summarized"]
    row = Text("A only: ", style=SIDE_STYLES["a"])
    row.append(f"{plural(len(taken), 'message')} summarised")
    row.append(f" ({sum(m['tokens'] for m in taken):,} tokens)", style="dim")
    console.print(row)
    for m in taken:
        console.print(_message("- ", m, "red"))
    cleared = data["cleared"]
    if cleared:
        row = Text("A only: ", style=SIDE_STYLES["a"])
        row.append(f"{plural(len(cleared), 'message')} cleared in place (the transcript keeps")
        row.append(" them; read_session reads them back)")
        console.print(row)
        for m in cleared:
            line = _message("~ ", m, "yellow")
            line.append(f"  {m['tokens']:,} -> {m['tokens_after']:,} tokens", style="cyan")
            console.print(line)
    console.print()
    row = Text("B only: ", style=SIDE_STYLES["b"])
    summary = data["summary"]
    if summary is None:
        row.append("no summary (the outputs were cleared only)")
        console.print(row)
        return
    row.append(f"the summary ({summary['tokens']:,} tokens)")
    console.print(row)
    for line in summary["text"].splitlines():
        console.print(vtext(f"+ {line}", style="green"), highlight=False)


def _message(sign: str, m: Mapping[str, Any], style: str) -> Text:
    where = f"[{m['index']}]" if m["index"] is not None else "[-]"
    line = Text(f"  {sign}{where} ", style=style)
    line.append(f"{one_line(m['role']):<9}", style=ROLE_STYLES.get(m["role"], ""))
    if m["turn"] is not None:
        line.append(f" turn {m['turn']}", style="dim")
    line.append(f"  {m['tokens']:,} tokens", style="dim")
    line.append(f"  {one_line(m['first_line'])}")
    return line
