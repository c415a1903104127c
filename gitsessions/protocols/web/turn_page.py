"""A turn's page (its prompt, reply and tool calls, and the code it changed: the
snapshot diff) and a compaction's page (what it took out of the context, the summary
it left: services/compaction/history.py's `view`, as `show --compaction N`).

Invariants: a turn's messages are the transcript records between the message count at
the parent of its first commit and the count at its last commit (at most `MESSAGES` of
them shown); its code is `diff --code`'s (services/code/code_diff.py) between the
snapshot before the turn and the one it ended with, the patch read up to `PATCH` bytes.
A turn with no commits of its own (an import commits many at once), or more than `WALK`
commits back, is found in the transcript by bisection on its records' `turn` (a few
chunks read, not the whole of it), its code diff named as a command instead. A turn past
the last one the transcript's last records name is none, said without reading the history.
"""

from typing import TYPE_CHECKING, Any

from gitsessions.protocols.web.markup import e, link, number, table
from gitsessions.protocols.web.session_page import anchor
from gitsessions.protocols.web.source import Source
from gitsessions.protocols.web.transcript import messages_html
from gitsessions.services.code import code_diff
from gitsessions.services.compaction.history import view
from gitsessions.services.sessions.revisions import State, owner_of
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural
from gitsessions.values.records import label

if TYPE_CHECKING:
    from gitsessions.store.sessions import Head, SessionStore

MESSAGES = 500  # a turn's messages shown; the session's pages have the rest
PATCH = 512 * 1024  # bytes of the code diff shown
WALK = 2_000  # commits of the history read looking for a turn's; past them, its records
LOOK_BACK = 256  # records read from the end for the last turn (a turn past it: none)


class NoTurnCommits(InvalidInput):
    """The history holds no commit of the turn (an import writes its turns in one)."""


def _turn_from(store: "SessionStore", head: "Head", index: int, total: int) -> int | None:
    """The turn of the first record at or after `index` that names one (within a chunk)."""
    for _index, record in store.iter_records(head, index, min(total, index + 256)):
        if isinstance(record.get("turn"), int):
            return int(record["turn"])
    return None


def first_of(store: "SessionStore", head: "Head", turn: int) -> int:
    """The index of the first record of turn `turn` or later (records name their turns
    in order), found by bisection: a few chunks read, however long the transcript."""
    low, high = 0, head.counts.get("messages", 0)
    total = high
    while low < high:
        middle = (low + high) // 2
        found = _turn_from(store, head, middle, total)
        if found is None or found >= turn:
            high = middle
        else:
            low = middle + 1
    return low


def last_turn(store: "SessionStore", head: "Head") -> int | None:
    """The turn the last records name (turn numbers only go on: it is the last turn),
    from the last `LOOK_BACK` records; None when none of them names one."""
    total = head.counts.get("messages", 0)
    last = None
    for _index, record in store.iter_records(head, max(0, total - LOOK_BACK), total):
        if isinstance(record.get("turn"), int) and not isinstance(record["turn"], bool):
            last = int(record["turn"])
    return last


def span(store: "SessionStore", head: "Head", turn: int) -> tuple["Head", "Head | None"]:
    """(the state at the turn's last commit, the state before its first) of turn `turn`
    in `head`'s first-parent history; None before it: the history starts with it."""
    newest: tuple[bytes, Any] | None = None  # its id and its commit
    oldest: Any = None
    for walked, (commit_id, commit) in enumerate(store.history(head)):
        if walked == WALK and newest is None:
            raise NoTurnCommits(f"turn {turn} is over {plural(WALK, 'commit')} back")
        trailers = parse_trailers(commit.message)[1]
        number_ = trailers.get("Turn", "")
        if trailers.get("Event") != "turn" or not number_.isdigit():
            continue
        if int(number_) == turn:
            newest = newest or (commit_id, commit)
            oldest = commit
        elif int(number_) < turn and newest is not None:
            break
    if newest is None or oldest is None:
        raise NoTurnCommits(f"session {short(head.id)} has no commits of turn {turn}")
    owner = owner_of(newest[1]) or head.id
    after = store.head_at(owner, newest[0])
    if not oldest.parents:
        return after, None
    parent = oldest.parents[0]
    return after, store.head_at(owner_of(store.read_commit(parent)) or head.id, parent)


def diff_lines(text: str) -> str:
    """A patch with each line marked as added, removed or a hunk, every line escaped."""
    out = []
    for line in text.splitlines():
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        kind = "hunk" if line.startswith("@@") else kind
        out.append(f'<span class="{kind}">{e(line)}</span>' if kind else e(line))
    return "\n".join(out)


def code_html(source: Source, store: "SessionStore", after: "Head", before: "Head | None") -> str:
    """The turn's code: the snapshot diff's stat and patch, or why there is none."""
    if before is None:
        return '<p class="dim">no state before this turn: no code diff</p>'
    result = code_diff.code_diff(
        store, State("", before.id, before), State("", after.id, after), source.env, source.here
    )
    if not result["stat"]:
        return f'<p class="dim">{e(result["note"] or "no code diff")}</p>'
    text, cut = code_diff.patch(result, source.env, PATCH)
    more = f'<p class="dim">cut at {PATCH:,} bytes: {e(result["full_diff"])} prints it all</p>'
    stat = "\n".join(result["stat"])
    return (
        f"<pre>{e(stat)}</pre>"
        + (f'<pre class="diff">{diff_lines(text)}</pre>' if text else "")
        + (more if cut else f'<p class="dim">{e(result["full_diff"])}</p>')
    )


def render_turn(source: Source, text: str, turn: int) -> tuple[str, str]:
    store = source.store()
    head = store.head(store.resolve(text))
    last = last_turn(store, head)
    if last is not None and turn > last:  # said without walking the history for it
        raise InvalidInput(f"session {short(head.id)} has no turn {turn}")
    try:
        after, before = span(store, head, turn)
        start = before.counts.get("messages", 0) if before is not None else 0
        end = after.counts.get("messages", 0)
        code = code_html(source, store, after, before)
    except NoTurnCommits as error:  # an imported session: its records name their turns
        start, end = first_of(store, head, turn), first_of(store, head, turn + 1)
        if start >= end:
            raise InvalidInput(f"session {short(head.id)} has no turn {turn}") from error
        command = f"gitsessions diff {head.id}@turn:{turn - 1} {head.id}@turn:{turn} --code"
        after = head
        code = f'<p class="dim">{e(error)}: its code diff is `{e(command)}`</p>'

    shown = min(end, start + MESSAGES)
    where = f"gitsessions show {head.id}@turn:{turn}"
    title = f"turn {turn} of {label(head.header)}"
    back = link(f"/s/{head.id}", f"{short(head.id)} {label(head.header)}")
    nav = [link(f"/s/{head.id}/turn/{turn - 1}", "previous turn")] if turn > 1 else []
    nav.append(link(f"/s/{head.id}/turn/{turn + 1}", "next turn"))
    more = ""
    if end > shown:
        rest = f'<a href="{anchor(head.id, shown)}">in the transcript</a>'
        more = f'<p class="dim">{end - shown:,} more messages: {rest}</p>'
    body = [
        f"<h1>Turn {turn:,}</h1><p>of {back} · {' · '.join(nav)}</p>",
        f'<p class="dim">messages {start:,} to {end - 1:,} · commit '
        f"{e(after.commit.decode()[:10])}</p>",
        messages_html(store.iter_records(after, start, shown), where),
        more,
        "<h2>Code</h2>",
        code,
    ]
    return title, "".join(body)


def _items(session: str, items: list[dict[str, Any]], cleared: bool) -> str:
    rows = []
    for m in items:
        index = m["index"]
        where = (
            f'<a href="{anchor(session, index)}">[{index:,}]</a>' if index is not None else "[-]"
        )
        tokens = number(m["tokens"])
        if cleared:
            tokens += f" → {number(m['tokens_after'])}"
        turn = number(m["turn"]) if m["turn"] is not None else ""
        rows.append([where, e(m["role"]), turn, tokens, e(m["first_line"])])
    return table(["message", "role", "turn", "tokens", "first line"], rows)


def render_compaction(source: Source, text: str, number_: int) -> tuple[str, str]:
    store = source.store()
    head = store.head(store.resolve(text))
    data = view(store, head, number_)
    back = link(f"/s/{head.id}", f"{short(head.id)} {label(head.header)}")
    stages = "+".join(data["stages"]) or "-"
    recorded = data["recorded"]
    body = [
        f"<h1>Compaction {number_:,}</h1>",
        f"<p>of {back} · {e(data['trigger'])}, {e(stages)} · {e(data['time'])} · commit "
        f"{e(data['commit'][:10])}{' · <b>undone</b>' if data['undone'] else ''}</p>",
    ]
    if recorded["before_tokens"] is not None:
        body.append(
            f"<p>recorded: {number(recorded['before_tokens'])} → "
            f"{number(recorded['after_tokens'])} tokens (with the tool schemas)</p>"
        )
    for side, what in (("before", "A before it"), ("after", "B after it")):
        state = data[side]
        body.append(
            f"<p><b>{e(what)}</b>: {e(plural(state['messages'], 'message'))}, "
            f"{number(state['tokens'])} tokens</p>"
        )
    taken = data["summarized"]
    body.append(f"<h2>Summarised: {e(plural(len(taken), 'message'))}</h2>")
    body.append(_items(head.id, taken, False))
    if data["cleared"]:
        body.append(f"<h2>Cleared in place: {e(plural(len(data['cleared']), 'message'))}</h2>")
        body.append(_items(head.id, data["cleared"], True))
    summary = data["summary"]
    body.append("<h2>The summary</h2>")
    if summary is None:
        body.append('<p class="dim">no summary (the outputs were cleared only)</p>')
    else:
        body.append(f'<p class="dim">{number(summary["tokens"])} tokens</p>')
        body.append(f"<pre>{e(summary['text'])}</pre>")
    return f"compaction {number_} of {label(head.header)}", "".join(body)
