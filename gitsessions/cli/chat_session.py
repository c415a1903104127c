"""The chat once its agent is built: the read-eval loop, its status line, and leaving.

`cli/chat.py` shows the prompt without this module (it imports the agent, rich and the
store); a chat, new or resumed, builds it in a background thread while the user types
(`open_chat`).
"""

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from gitsessions.agent.loop import Agent
from gitsessions.agent.turns import PromptNotSaved, TurnResult
from gitsessions.cli.agent_setup import build_agent, warm_up
from gitsessions.cli.approvals import ChatApprover
from gitsessions.cli.chat_input import LEAVE_HINT, PROMPT_SHOWN, read_prompt, unechoed
from gitsessions.cli.chat_line import EmptyCancel, History, as_prompt
from gitsessions.cli.chat_options import ChatOptions
from gitsessions.cli.chat_ui import ChatEvents
from gitsessions.cli.opening import Printer, main_thread_signals
from gitsessions.cli.plain import one_line, piped, vtext
from gitsessions.cli.resuming import RETRY, RETRY_HINT, Resuming
from gitsessions.cli.slash import Exit, Slash, SwitchSession
from gitsessions.cli.state import err, out, replies
from gitsessions.services.model.errors import ModelError
from gitsessions.services.settings.config import ModelSettings
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import short

KEPT = "your prompt is kept in the input history: the Up arrow brings it back"


@dataclass
class ChatRun:
    """A built chat: its agent (session leased), the display, and what closes them."""

    agent: Agent
    events: ChatEvents
    settings: ModelSettings  # a resumed session's own
    workspace: Path
    resumed: bool
    stack: ExitStack


def open_chat(
    options: "ChatOptions", notes: Printer, resuming: "Resuming | None" = None
) -> ChatRun:
    """Build the agent (of the session `resuming` found, leased and introduced before
    the prompt, if any); what it has to say (sandbox, snapshots, workspace) goes to
    `notes`. Then the model client, the tokenizer and the markdown renderer are
    imported in threads of their own, once the prompt shows."""
    events = ChatEvents(replies, err)
    approver = ChatApprover(err, auto=options.auto_approve)
    stack = ExitStack()
    with stack:
        built = stack.enter_context(
            build_agent(
                options.state,
                options.settings,
                options.shell,
                resume=options.resume,
                continue_=options.continue_,
                workspace_flag=options.workspace_flag,
                approve=approver,
                events=events,
                max_steps=options.max_steps,
                stream=True,
                all_sessions=options.all_sessions,
                snapshots=options.snapshots,
                notes=notes,
                resuming=resuming,
                ask_server=False,  # asked with the endpoint probe (cli/chat.py)
            )
        )
        approver.preview = built.agent.registry.preview  # reads the files as the tools will
        session = built.agent.session
        approver.granted.bind(session.store.home, session.id)  # what "always" gave it here
        with main_thread_signals():  # they import while the user types at the prompt
            warm_up(chat=True, after=PROMPT_SHOWN)
        run = ChatRun(
            built.agent, events, built.settings, built.workspace, built.resumed, stack.pop_all()
        )
    return run


def converse(run: ChatRun, history: History, quiet: bool, first: str | None = None) -> str | None:
    """The chat until the user leaves; `first` is a prompt already typed. Returns the
    session `\\sessions` picked to go on in, if any."""
    try:
        repl(
            run.agent, run.events, status=not quiet, workspace=run.workspace, first=first,
            history=history,
        )  # fmt: skip
    except SwitchSession as picked:
        return picked.session_id
    finally:
        finish(run, history)
    return None


def finish(run: ChatRun, history: History) -> None:
    """Save what is pending, say where the session is (or that none was made), let go
    of the session."""
    try:
        session = run.agent.session
        # what was typed first: a session that cannot save its last step keeps it
        failed = None if session.is_draft else history.save(session.id)
        run.agent.save()
        if failed is not None:
            err.print(
                Text(f"note: what you typed is not kept for the next chat: {failed}"),
                style="yellow",
                highlight=False,
            )
        if session.is_draft:  # no prompt was sent: nothing to keep
            err.print(Text("no session was saved (no prompt was sent)", style="dim"))
        else:
            err.print(
                Text(
                    f"session {session.id} saved · gitsessions chat --resume {short(session.id)}",
                    style="dim",
                ),
                highlight=False,
            )
    finally:
        run.stack.close()


def repl(
    agent: Agent,
    events: ChatEvents,
    status: bool = True,
    workspace: Path | None = None,
    first: str | None = None,
    history: History | None = None,
) -> None:
    slash = Slash(agent, out, err, workspace)
    pending = first
    while True:
        spent = agent.session.usage.get("cost_usd", 0.0)
        if pending is not None:
            line, pending = pending, None
        else:
            agent.settle_title(wait=False)  # the title asked after the last reply, if done
            try:
                line = read_prompt(history)
            except EOFError:
                return
            except KeyboardInterrupt as error:
                if isinstance(error, EmptyCancel):
                    err.print(Text(LEAVE_HINT, style="dim"), highlight=False)
                continue
        restore = unechoed()  # until the next prompt, which shows what was typed
        try:
            if Slash.is_command(line.strip()):
                turn = slash.run(line.strip())
                if turn is None:
                    continue
                result = turn()
            elif not line.strip():  # never sends anything
                if agent.session.unanswered_prompt() is not None:
                    err.print(Text(RETRY_HINT, style="yellow"), highlight=False)
                continue
            else:
                try:
                    result = agent.run_turn(as_prompt(line))
                except PromptNotSaved as error:
                    events.reset()
                    err.print(vtext(f"error: {one_line(error)}", style="red"), highlight=False)
                    err.print(Text(KEPT, style="yellow"), highlight=False)
                    continue
            report(result)
            if status:
                width = None if piped(err) else err.width  # one line on a terminal
                err.print(Text(status_line(agent, spent, width), style="dim"), highlight=False)
        except Exit:
            return
        except KeyboardInterrupt:
            events.reset()
            agent.save()
            err.print(Text("cancelled; the session is saved", style="yellow"), highlight=False)
        except ModelError as error:
            events.reset()
            err.print(vtext(f"error: {one_line(error)}", style="red"), highlight=False)
            err.print(Text(f"your prompt is saved: {RETRY}", style="yellow"), highlight=False)
        except GitsessionsError as error:
            events.reset()
            err.print(vtext(f"error: {one_line(error)}", style="red"), highlight=False)
        finally:
            restore()


def status_line(agent: Agent, spent_before: float, width: int | None = None) -> str:
    """`turn 3 · context 5,210 / 24,000 tokens (21%) · turn cost $0.0012 · session
    $0.0345`: the turn's number is the N of `\\rewind N`. Within `width` (a terminal's)
    it stays one line: said shorter first (`turn 3 · 5,210/24,000 tokens (21%) · turn
    $0.0012 · session $0.0345`), then the turn's cost goes, then the session's, then
    the counts behind the percentage; what still does not fit is cut."""
    tokens = agent.estimate()
    budget = agent.config.policy.max_context_tokens
    session = agent.session.usage.get("cost_usd", 0.0)
    turn, share = f"turn {agent.session.turn}", f"({100 * tokens // budget}%)"
    context = f"context {tokens:,} / {budget:,} tokens {share}"
    spent = f"${session - spent_before:.4f}"
    costs = [f"turn cost {spent}", f"session ${session:.4f}"]
    short = f"{tokens:,}/{budget:,} tokens {share}"
    tries = [
        [turn, context, *costs],
        [turn, short, f"turn {spent}", costs[1]],
        [turn, context, costs[1]],
        [turn, context],
        [turn, f"context {share.strip('()')}"],
    ]
    for parts in tries:
        line = " · ".join(parts)
        if width is None or len(line) <= width:
            return line
    assert width is not None  # with no width the first line was returned
    return line[: max(width - 1, 0)] + "…"


def report(result: TurnResult) -> None:
    if result.stopped:
        err.print(vtext(result.stopped, style="yellow"), highlight=False)
