"""`gitsessions compact`, `pin`, `unpin` and `pins`: manual compaction and pinned notes."""

from contextlib import nullcontext
from typing import Annotated, Any

import typer

from gitsessions.agent.assembly import RETRIES
from gitsessions.cli import options
from gitsessions.cli.agent_setup import cost_function
from gitsessions.cli.args import IdArg, OptionalIdArg, session_or_latest
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.progress import ProgressEvents
from gitsessions.cli.render import print_json
from gitsessions.cli.running import Awaited
from gitsessions.cli.state import State, err, out
from gitsessions.cli.terminal import spinning
from gitsessions.services.compaction.compaction_policy import Policy
from gitsessions.services.compaction.compactor import Recorded, compact_session, make_summarizer
from gitsessions.services.compaction.undoing import Undone, undo_last
from gitsessions.services.model.model import ModelClient
from gitsessions.services.sessions import manage
from gitsessions.services.settings.config import ModelSettings, with_session_settings
from gitsessions.services.tools import BUILTIN_TOOLS, SESSION_TOOLS
from gitsessions.store import here
from gitsessions.store.lease import Lease
from gitsessions.store.tokencounts import TokenCounts
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import short
from gitsessions.values.tokens import TokenCounter, default_counter


def cmd_compact(
    ctx: typer.Context,
    session: IdArg,
    focus: Annotated[
        str | None, typer.Option(help="What the summary should keep above all.")
    ] = None,
    clear_only: Annotated[
        bool, typer.Option("--clear-only", help="Only clear old tool outputs; no summary.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Report what each stage would do; call no model, write nothing."
        ),
    ] = False,
    model: options.Model = None,
    base_url: options.BaseUrl = None,
    summary_model: options.SummaryModel = None,
    max_context_tokens: options.MaxContext = None,
    target: Annotated[
        float | None,
        typer.Option(
            help="End at or under this fraction of --max-context-tokens [config "
            "compact_target; default 0.5].",
        ),
    ] = None,
    undo: Annotated[
        bool,
        typer.Option(
            "--undo",
            help="Take back the last compaction: the working context as it was before it, "
            "plus what came since, as a new commit (auto-compaction waits for new growth).",
        ),
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON result on stdout.")] = False,
) -> None:
    """Compact a session's working context now (both stages; all or nothing), or take
    the last compaction back with --undo.

    A refused request (429, 5xx) is sent again up to 3 times, as in chat and exec. The
    transcript is never changed: `show` still prints every message, and the agent
    reads cleared outputs back with read_session.
    """
    state: State = ctx.obj
    store = state.store
    session_id = store.resolve(session)
    if undo:
        if focus is not None or clear_only or dry_run or target is not None:
            raise BadUsage(
                "--undo takes the last compaction back: not with --focus, "
                "--clear-only, --dry-run or --target"
            )
        _undo(state, session_id, json_=json_)
        return
    settings = options.model_settings(
        state,
        model=model,
        base_url=base_url,
        summary_model=summary_model,
        max_context_tokens=max_context_tokens,
        compact_target=target,
    )
    recorded_settings = store.head(session_id).header.get("settings")
    settings, note = with_session_settings(
        settings, recorded_settings, short(session_id), here.endpoints(store.home)
    )
    if note is not None:
        err.print(vtext(note, style="yellow"), highlight=False)
    counter = default_counter()
    recorded = _compact(
        state, session_id, settings, counter, clear_only=clear_only, dry_run=dry_run, focus=focus
    )
    if not dry_run:  # the counts made are facts of the messages: the next turn reads them
        TokenCounts(store.home, counter).keep()
    _report(session_id, recorded, dry_run=dry_run, json_=json_)
    if not json_ and counter.method.startswith("estimate"):
        err.print(f"note: token counts are estimates ({counter.method})", style="dim")


def _compact(
    state: State,
    session_id: str,
    settings: ModelSettings,
    counter: TokenCounter,
    *,
    clear_only: bool,
    dry_run: bool,
    focus: str | None,
) -> Recorded:
    """Compact the session under its lease, a spinner on a terminal while the model
    works (none for a dry run, which asks no model)."""
    store = state.store
    tools = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]
    progress = ProgressEvents(err)
    waiting = (
        spinning(err, Awaited(f"compacting {short(session_id)}"))  # and for how long so far
        if err.is_terminal and not dry_run
        else nullcontext()
    )
    with (
        Lease(store.home, session_id),
        ModelClient(settings, retries=RETRIES, wait=progress.retrying) as client,
        waiting,
    ):
        return compact_session(
            store,
            store.head(session_id),
            policy=Policy(
                max_context_tokens=settings.max_context_tokens,
                ledger_share=settings.ledger_share,
                user_words_share=settings.user_words_share,
                target=settings.compact_target,
            ),
            summarize=make_summarizer(client, settings.summary_model),
            count=lambda messages: counter.estimate(messages, tools),
            count_request=lambda messages: counter.estimate(messages),  # carries no tools
            cost=cost_function(settings),
            trigger="manual",
            clear_only=clear_only,
            dry_run=dry_run,
            focus=focus,
            hooks=state.hooks,
        )


def _undo(state: State, session_id: str, *, json_: bool) -> None:
    """`compact --undo`: the last compaction taken back, under the session's lease."""
    store = state.store
    counter = default_counter()
    tools = [*BUILTIN_TOOLS, *SESSION_TOOLS.values()]
    with Lease(store.home, session_id):
        head = store.head(session_id)
        undone = undo_last(
            store,
            head,
            store.read(head, "context"),
            lambda messages: counter.estimate(messages, tools),
        )
    TokenCounts(store.home, counter).keep()
    if json_:
        print_json(out, undo_report(session_id, undone))
        return
    err.print(undone.said(session_id), markup=False, highlight=False)


def undo_report(session_id: str, undone: Undone) -> dict[str, Any]:
    """`compact --undo --json`'s result."""
    return {
        "session": session_id,
        "undone": undone.number,
        "before_tokens": undone.before_tokens,
        "after_tokens": undone.after_tokens,
        "kept_since": undone.since,
        "commit": undone.written.head.commit.decode(),
    }


def _report(session_id: str, recorded: Recorded, *, dry_run: bool, json_: bool) -> None:
    """What the compaction did: a JSON result on stdout, or its notes and one line on
    stderr."""
    result = recorded.result
    report: dict[str, Any] = {
        "session": session_id,
        "before_tokens": result.before_tokens,
        "after_tokens": result.after_tokens,
        "stages": list(result.stages),
        "commit": recorded.head.commit.decode() if recorded.committed else None,
    }
    if dry_run:
        report["dry_run"] = True
        if result.after_min is not None:
            report["after_tokens_min"] = result.after_min
    if result.outcome != "compacted":
        report["stages"] = []
    if json_:
        print_json(out, {**report, "outcome": result.outcome, "notes": list(result.notes)})
        return
    for note in result.notes:
        err.print(vtext(note, style="dim"), highlight=False)
    if result.outcome == "nothing_to_compact":
        err.print("nothing to compact")
    elif result.outcome == "not_needed":
        err.print(f"nothing changed ({result.before_tokens:,} tokens)")
    elif dry_run:
        low = result.after_min
        after = f"{result.after_tokens:,}" if low is None else f"{low:,} to {result.after_tokens:,}"
        err.print(
            f"dry run: {result.before_tokens:,} -> {after} tokens "
            f"({', '.join(result.stages)}); nothing written"
        )
    else:
        err.print(
            f"compacted {short(session_id)}: {result.before_tokens:,} -> "
            f"{result.after_tokens:,} tokens ({', '.join(result.stages)})"
        )


def cmd_pin(
    ctx: typer.Context,
    session: IdArg,
    text: Annotated[str, typer.Argument(help="The note to keep verbatim.")],
) -> None:
    """Pin a note: it survives every compaction verbatim."""
    store = ctx.obj.store
    _written, pins = manage.pin(store, store.resolve(session), text)
    err.print(f"pinned as {len(pins)}")


def cmd_unpin(
    ctx: typer.Context,
    session: IdArg,
    number: Annotated[int, typer.Argument(help="The pin's number (see `pins`).")],
) -> None:
    """Remove a pinned note by its number."""
    store = ctx.obj.store
    removed = manage.unpin(store, store.resolve(session), number)
    err.print(f"unpinned: {one_line(removed)}", markup=False)


def cmd_pins(
    ctx: typer.Context,
    session: OptionalIdArg = None,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a session's pinned notes (without ID: this project's latest session's)."""
    store = ctx.obj.store
    pins = store.read(store.head(store.resolve(session_or_latest(ctx.obj, session))), "pins")
    if json_:
        print_json(out, pins)
        return
    for number, text in enumerate(pins, start=1):
        out.print(vtext(f"{number}. {text}"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("compact")(cmd_compact)
    app.command("pin")(cmd_pin)
    app.command("unpin")(cmd_unpin)
    app.command("pins")(cmd_pins)
