"""`gitsessions chat`: the interactive session."""

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from gitsessions.agent.loop import Agent, TurnResult
from gitsessions.cli import options
from gitsessions.cli.agent_setup import AUTO_APPROVE_BANNER, build_agent, warm_up, workspace_dir
from gitsessions.cli.interrupts import interrupts_kept
from gitsessions.cli.picker import pick, recent
from gitsessions.cli.slash import Exit, Slash, SwitchSession
from gitsessions.cli.state import State, err, out, replies
from gitsessions.cli.terminal import one_line, vtext
from gitsessions.services import endpoint
from gitsessions.services.config import ModelSettings, config_path
from gitsessions.services.model import ModelError
from gitsessions.store.errors import SessionNotFound
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import short

if TYPE_CHECKING:
    from gitsessions.cli.chat_ui import ChatEvents

PROMPT = "> "
CONTINUATION = ". "
RETRY = "\\retry sends it again"
RETRY_HINT = f"the last prompt has no reply yet: {RETRY}"


# Set as the prompt is about to show: the warm-up threads (openai, the tokenizer,
# markdown) wait for it, so the prompt comes first and they work while the user types.
PROMPT_SHOWN = threading.Event()


def read_prompt() -> str:
    """One prompt; a line ending in a backslash continues on the next line."""
    PROMPT_SHOWN.set()
    lines = [input(PROMPT)]
    while lines[-1].endswith("\\") and not Slash.is_command(lines[0]):
        lines[-1] = lines[-1][:-1]
        lines.append(input(CONTINUATION))
    return "\n".join(lines)


def probe(settings: ModelSettings, first_run: bool) -> None:
    """Say at once, in one line, when the endpoint is down or lacks the model; on the
    first run, or when the default endpoint (Ollama) is down, say how to start it."""
    model = settings.model
    found = endpoint.probe(settings)
    if found.unreachable:
        err.print(
            vtext(
                f"warning: {one_line(found.unreachable)}. Prompts are still saved; \\retry "
                "sends the last one again once the server is up.",
                style="yellow",
            ),
            highlight=False,
        )
    if (first_run or found.unreachable) and endpoint.is_default_endpoint(settings):
        hint = endpoint.OLLAMA_HINT.format(
            url=settings.base_url, model=model, config=config_path(Path("$GITSESSIONS_HOME"))
        )
        err.print(vtext(hint, style="dim"), highlight=False)
    models = found.models
    if models and model not in models:
        shown = ", ".join(models[:8])
        err.print(
            vtext(
                f"warning: the server does not list model {model!r} (it has: {shown});"
                " set --model or GITSESSIONS_MODEL",
                style="yellow",
            ),
            highlight=False,
        )


def cmd_chat(
    ctx: typer.Context,
    resume: options.Resume = None,
    continue_: options.Continue = False,
    model: options.Model = None,
    base_url: options.BaseUrl = None,
    summary_model: options.SummaryModel = None,
    max_context_tokens: options.MaxContext = None,
    workspace: options.Workspace = None,
    auto_approve: options.AutoApprove = False,
    all_sessions: options.AllSessions = False,
    sandbox: options.Sandbox = None,
    sandbox_network: options.SandboxNetwork = None,
    no_snapshots: options.NoSnapshots = False,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, help="At most this many model requests a turn.")
    ] = 50,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", help="No status line (context used, turn and session cost)."),
    ] = False,
) -> None:
    """Chat with the agent in this workspace; every turn is a commit.

    Type \\help for commands. Ctrl-C cancels the current request (what streamed is
    kept in the transcript), \\retry sends the last prompt again, \\undo drops the last
    turn from the working context, Ctrl-D leaves.
    """
    from gitsessions.cli.chat_ui import ChatApprover, ChatEvents, History  # rich.markdown: slow

    state: State = ctx.obj
    settings = options.model_settings(
        state,
        model=model,
        base_url=base_url,
        summary_model=summary_model,
        max_context_tokens=max_context_tokens,
    )
    shell = options.shell_settings(state, sandbox=sandbox, sandbox_network=sandbox_network)
    if resume == "" and not continue_:  # `--resume` without an id: pick one
        resume = pick_session(state, workspace_dir(workspace))
        if resume is None:
            err.print("no session picked")
            return
    switch: str | None = None
    first_run = not (state.home / "store.git").exists()
    events = ChatEvents(replies, err)
    approver = ChatApprover(err, auto=auto_approve)
    with build_agent(
        state,
        settings,
        shell,
        resume=resume,
        continue_=continue_,
        workspace_flag=workspace,
        approve=approver,
        events=events,
        max_steps=max_steps,
        stream=True,
        all_sessions=all_sessions,
        snapshots=options.snapshot_settings(state, no_snapshots),
    ) as built:
        agent, settings = built.agent, built.settings  # a resumed session's own settings
        history = History(state.home, redact=state.store.redact)
        session = agent.session
        named = f"session {short(session.id)} (resumed)" if built.resumed else "new session"
        err.print(
            vtext(
                f"gitsessions · {named} · {settings.model} at "
                f"{settings.base_url} · {built.workspace}",
                style="bold",
            ),
            highlight=False,
        )
        err.print(
            Text("\\help for commands · Ctrl-C cancels a request · Ctrl-D leaves", style="dim"),
            highlight=False,
        )
        if auto_approve:
            err.print(Text(AUTO_APPROVE_BANNER, style="bold yellow"), highlight=False)
        probe(settings, first_run)
        if session.unanswered_prompt() is not None:
            err.print(Text(RETRY_HINT, style="yellow"), highlight=False)
        warm_up(chat=True, after=PROMPT_SHOWN, client=settings.client)
        try:
            with interrupts_kept():
                repl(agent, events, status=not quiet, workspace=built.workspace)
        except SwitchSession as picked:
            switch = picked.session_id
        finally:
            agent.save()
            if session.is_draft:  # no prompt was sent: nothing to keep
                err.print(Text("no session was saved (no prompt was sent)", style="dim"))
            else:
                history.save(session.id)
                err.print(
                    Text(
                        f"session {session.id} saved · "
                        f"gitsessions chat --resume {short(session.id)}",
                        style="dim",
                    ),
                    highlight=False,
                )
    if switch is not None:  # `\sessions` picked another one: the same chat, resumed there
        cmd_chat(
            ctx,
            resume=switch,
            model=model,
            base_url=base_url,
            summary_model=summary_model,
            max_context_tokens=max_context_tokens,
            workspace=workspace,
            auto_approve=auto_approve,
            all_sessions=all_sessions,
            sandbox=sandbox,
            sandbox_network=sandbox_network,
            no_snapshots=no_snapshots,
            max_steps=max_steps,
            quiet=quiet,
        )


def pick_session(state: State, workspace: Path) -> str | None:
    """`chat --resume` without an id: the session picked among this workspace's."""
    choices = recent(state.store, workspace)
    if not choices:
        raise SessionNotFound(
            f"no session to resume in {workspace}; start one with `gitsessions chat`"
        )
    return pick(
        err,
        choices,
        f"resume a session of {one_line(workspace)}, the most recent first",
        "name one with `gitsessions chat --resume ID`",
    )


def repl(
    agent: Agent, events: "ChatEvents", status: bool = True, workspace: Path | None = None
) -> None:
    slash = Slash(agent, out, err, workspace)
    while True:
        spent = agent.session.usage.get("cost_usd", 0.0)
        try:
            line = read_prompt()
        except EOFError:
            err.print()
            return
        except KeyboardInterrupt:
            err.print()
            continue
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
                result = agent.run_turn(line)
            report(result)
            if status:
                err.print(Text(status_line(agent, spent), style="dim"), highlight=False)
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


def status_line(agent: Agent, spent_before: float) -> str:
    """`context 5,210 / 24,000 tokens (21%) · turn $0.0012 · session $0.0345`"""
    tokens = agent.estimate()
    budget = agent.config.policy.max_context_tokens
    session = agent.session.usage.get("cost_usd", 0.0)
    return (
        f"context {tokens:,} / {budget:,} tokens ({100 * tokens // budget}%) · "
        f"turn ${session - spent_before:.4f} · session ${session:.4f}"
    )


def report(result: TurnResult) -> None:
    if result.stopped:
        err.print(vtext(result.stopped, style="yellow"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("chat")(cmd_chat)
