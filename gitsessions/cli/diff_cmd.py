"""`gitsessions diff A B [--json] [--code]` and its rendering (shared with `\\diff`).

Every stored string (titles, summaries, first lines, subjects, pins, plan steps, the
project's file names) is shown through `vtext`/`one_line`, so it reaches the terminal
visible-safe. Colour comes from rich: on a terminal only, plain when piped.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from gitsessions.cli.plain import one_line
from gitsessions.cli.render import ROLE_STYLES, print_json
from gitsessions.cli.state import State, out
from gitsessions.services.code import code_diff
from gitsessions.services.sessions import session_diff
from gitsessions.services.sessions.revisions import resolve
from gitsessions.values.ids import short
from gitsessions.values.plural import plural
from gitsessions.values.revision import parse_revision

REVISION_HELP = "A session (id or unique prefix) or a revision: ID@turn:N, ID@<commit>, ID~N."
SHOWN_MESSAGES = 20  # first and last shown per side; --json has all
SIDE_STYLES = {"a": "bold red", "b": "bold green"}


def cmd_diff(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(metavar="A", help=REVISION_HELP)],
    b: Annotated[str, typer.Argument(metavar="B", help=REVISION_HELP)],
    code: Annotated[
        bool,
        typer.Option(
            "--code",
            help="Add the project's diffstat between the two code snapshots, and the git "
            "command that prints the whole patch.",
        ),
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Compare two session states: what each changed since their common ancestor (the
    fork point, or the merge base; unrelated sessions are compared from empty)."""
    state: State = ctx.obj
    data = compare(state, a, b, code=code)
    if json_:
        print_json(out, data)
    else:
        render(out, data)


def compare(state: State, a: str, b: str, *, code: bool) -> dict[str, Any]:
    """The diff as data, with the code diffstat when asked for."""
    store = state.store
    sides = resolve(store, a), resolve(store, b)
    data = session_diff.diff(store, *sides)
    if code:
        data["code"] = code_diff.code_diff(store, *sides, state.env, Path.cwd())
    return data


def shown_revision(text: str, session_id: str) -> str:
    """A revision as `diff` names both sides, however it was typed (a whole id, a
    prefix): the session's short id, then `@turn:N`, `@<commit>` or `~N`."""
    revision = parse_revision(text)
    where = f"@turn:{revision.turn}" if revision.turn is not None else ""
    where += f"@{revision.commit[:10]}" if revision.commit is not None else ""
    return short(session_id) + where + (f"~{revision.back}" if revision.back else "")


def render(console: Console, data: Mapping[str, Any]) -> None:
    """The diff for people: both states, the ancestor, then each side's changes."""
    for side in ("a", "b"):
        info = data[side]
        line = Text(f"{side.upper()}  ", style=SIDE_STYLES[side])
        line.append(one_line(shown_revision(info["revision"], info["session"])), style="bold")
        line.append(f"  {one_line(info['title'])}")
        line.append(f"  (commit {info['commit'][:10]})", style="dim")
        console.print(line)
    console.print(_ancestor_line(data["ancestor"]))
    for side in ("a", "b"):
        console.print()
        _side(console, side, data[side]["changes"])
    if "code" in data:
        console.print()
        _code(console, data["code"])


def _ancestor_line(ancestor: Mapping[str, Any]) -> Text:
    if ancestor["kind"] == "none":
        return Text(f"no common ancestor: {ancestor['note']}", style="yellow")
    kind = "fork point" if ancestor["kind"] == "fork_point" else "merge base"
    line = Text(f"common ancestor: {kind} {ancestor['commit'][:10]}", style="bold")
    line.append(
        f" of {short(ancestor['session'])} {one_line(ancestor['title'])} "
        f"({plural(ancestor['messages'], 'message')}): {ancestor['note']}",
    )
    return line


def _side(console: Console, side: str, changes: Mapping[str, Any]) -> None:
    head = Text(f"{side.upper()} since the ancestor: ", style=SIDE_STYLES[side])
    if session_diff.is_empty(changes):
        head.append("no changes", style="dim")
        console.print(head)
        return
    turns = changes["turns"]
    head.append(_plural(changes["commits"], "commit"))
    events = ", ".join(
        one_line(e) + (f" x{n}" if n > 1 else "") for e, n in changes["events"].items()
    )
    head.append(f" ({events})", style="dim")
    if turns:
        span = str(turns[0]) if len(turns) == 1 else f"{turns[0]}-{turns[-1]}"
        head.append(f", {'turn' if len(turns) == 1 else 'turns'} {span}")
    console.print(head)
    if session_diff.changed_nothing(changes):
        console.print(Text("  nothing else changed", style="dim"))
        return
    for field in ("title", "summary", "archived"):
        change = changes[field]
        if change is not None:
            row = _label(field)
            row.append(_value(change["from"]), style="red")
            row.append(" -> ")
            row.append(_value(change["to"]), style="green")
            console.print(row)
    _messages(console, changes["messages"])
    _context(console, changes["context"])
    _plan(console, changes["plan"])
    _pins(console, changes["pins"])
    _usage(console, changes["usage"])


def _label(name: str) -> Text:
    return Text(f"  {name:<10} ", style="bold")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return repr(one_line(value))


def _messages(console: Console, messages: Mapping[str, Any]) -> None:
    appended = messages["appended"]
    if not appended:
        return
    row = _label("messages")
    row.append(f"+{len(appended)}", style="green")
    row.append(f" ({messages['from']} -> {messages['to']} in the transcript)")
    console.print(row)
    shown = appended
    if len(appended) > 2 * SHOWN_MESSAGES:
        shown = [*appended[:SHOWN_MESSAGES], None, *appended[-SHOWN_MESSAGES:]]
    for m in shown:
        if m is None:
            hidden = len(appended) - 2 * SHOWN_MESSAGES
            console.print(Text(f"    ... {hidden} more (--json lists all)", style="dim"))
            continue
        line = Text(f"    [{m['index']}] ")
        line.append(f"{one_line(m['role']):<9}", style=ROLE_STYLES.get(m["role"], ""))
        when = (m["time"] or "")[:19].replace("T", " ")
        line.append(f" {one_line(when)}" if when else "", style="dim")
        line.append(f"  turn {m['turn']}" if m["turn"] is not None else "", style="dim")
        line.append(f"  {one_line(m['first_line'])}")
        if m.get("incomplete"):
            line.append("  (incomplete)", style="dim")
        console.print(line)


def _context(console: Console, context: Mapping[str, Any]) -> None:
    lines: list[Text] = []
    for c in context["compactions"]:
        line = Text(f"    compaction ({one_line(c['trigger'])}")
        stages = "+".join(one_line(s) for s in c["stages"])
        line.append(f", {stages}) " if stages else ") ")
        line.append(f"{c['before_tokens']} -> {c['after_tokens']} tokens", style="cyan")
        if c["cleared"]:
            line.append(f", {_plural(c['cleared'], 'output')} cleared")
        lines.append(line)
    for e in context["events"]:
        event, subject = one_line(e["event"]), one_line(e["subject"])
        if subject == event or subject.startswith(f"{event}:"):  # `undo: turn 10` says it
            line = Text("    ")
            line.append(event, style="yellow")
            line.append(subject[len(event) :])
        else:
            line = Text(f"    {event}: ", style="yellow")
            line.append(subject)
        line.append(f"  ({e['commit'][:10]})", style="dim")
        lines.append(line)
    count = context["messages"]
    if count is None and not lines:
        return
    row = _label("context")
    if count is not None:
        row.append(f"{count['from']} -> {plural(count['to'], 'message')}")
    console.print(row)
    for line in lines:
        console.print(line)


def _plan(console: Console, plan: Mapping[str, Any]) -> None:
    items = [
        *(
            Text(f"+ {one_line(i['step'])} [{one_line(i['status'])}]", "green")
            for i in plan["added"]
        ),
        *(Text(f"x {one_line(s)}", "cyan") for s in plan["done"]),
        *(Text(f"- {one_line(s)}", "red") for s in plan["removed"]),
    ]
    _list(console, "plan", items)


def _pins(console: Console, pins: Mapping[str, Any]) -> None:
    items = [
        *(Text(f"+ {one_line(p)}", "green") for p in pins["added"]),
        *(Text(f"- {one_line(p)}", "red") for p in pins["removed"]),
    ]
    _list(console, "pins", items)


def _list(console: Console, name: str, items: list[Text]) -> None:
    for n, item in enumerate(items):
        row = _label(name) if n == 0 else Text(" " * 13)
        console.print(row.append_text(item))


def _usage(console: Console, usage: Mapping[str, Any]) -> None:
    if not any(usage.values()):
        return
    row = _label("usage")
    row.append(
        f"{usage['prompt_tokens']:+} prompt, {usage['completion_tokens']:+} completion tokens, "
        f"{usage['requests']:+} {'request' if abs(usage['requests']) == 1 else 'requests'}, "
        f"{'-' if usage['cost_usd'] < 0 else '+'}"
        f"${abs(usage['cost_usd']):.4f}"
    )
    console.print(row)


def _code(console: Console, code: Mapping[str, Any]) -> None:
    """The code's diffstat (a stat only, said so), then the git command for the patch."""
    head = Text("code (diffstat)  ", style="bold")
    head.append(f"{(code['a'] or '-')[:10]} -> {(code['b'] or '-')[:10]}", style="dim")
    if code["repo"]:
        head.append(f"  in {one_line(code['repo'])}", style="dim")
    console.print(head)
    if code["note"]:
        console.print(Text(f"  {one_line(code['note'])}", style="yellow"))
    for line in code["stat"]:
        console.print(Text(f"  {one_line(line)}"))
    if code.get("full_diff"):
        patch = Text(f"  the whole patch: {one_line(code['full_diff'])}", style="dim")
        console.print(patch, soft_wrap=True)  # one line, to copy whole


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def register(app: typer.Typer) -> None:
    app.command("diff")(cmd_diff)
