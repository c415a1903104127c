"""`gitsessions chat`: the interactive session, and what runs before its first prompt
(issue 10: the prompt within 1.3x of `python -c "import typer, rich"`).

Invariants:
- Before a new chat's prompt neither rich, the store nor the agent is imported: settings
  (a bad config.toml, sandbox or budget refused before anything is made), a plain banner,
  a connect to a local server. Once it shows, threads build the agent and probe the
  endpoint; the first line sent waits for both (Ctrl-C cancels the wait, nothing sent),
  then their notes print.
- A resumed chat shows its prompt the same way, its banner read read-only without the
  agent (cli/resuming.py), its lease taken before the prompt.
- No session is stored until a prompt is sent.
"""

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gitsessions.agent.prompts import system_prompt
from gitsessions.cli import options
from gitsessions.cli.chat_input import LEAVE_HINT, PROMPT_SHOWN, read_prompt, unechoed
from gitsessions.cli.chat_line import EmptyCancel, History, is_command
from gitsessions.cli.chat_options import ChatOptions
from gitsessions.cli.interrupts import interrupts_kept
from gitsessions.cli.once import first_time
from gitsessions.cli.opening import Notes, Opening
from gitsessions.cli.plain import Sink, StreamOf, one_line, piped, vtext
from gitsessions.cli.state import State
from gitsessions.services.model import endpoint
from gitsessions.services.settings.config import ModelSettings
from gitsessions.services.settings.config_file import config_path, redact_setting
from gitsessions.store.errors import SessionNotFound
from gitsessions.store.lease import check_writable
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import short

if TYPE_CHECKING:
    from gitsessions.cli.chat_session import ChatRun
    from gitsessions.cli.resuming import Resuming

Line = tuple[str, str]  # a line of text and its style

# A budget this large (plus the workspace path's length: the system prompt names it)
# holds the system prompt, every tool schema, a continuation note and a turn, so it is
# accepted before the prompt without counting (tests/test_chat.py checks the bound).
SURE_BUDGET = 16_000
CANCELLED = "cancelled; nothing was sent"


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
    sandbox_allow_git: options.SandboxAllowGit = None,
    no_snapshots: options.NoSnapshots = False,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, help="At most this many model requests a turn.")
    ] = 50,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", help="No status line (turn number, context used, turn and session cost)."
        ),
    ] = False,
) -> None:
    """Chat with the agent in this workspace; every turn is a commit.

    Type \\help for commands (Tab completes them). Enter sends; Alt-Enter or Ctrl-J
    starts a new line, and a pasted block is one prompt. Ctrl-C cancels the current
    request (what streamed is kept in the transcript), \\retry sends the last prompt
    again, \\undo drops the last turn from the working context, Ctrl-D leaves.
    """
    state: State = ctx.obj
    settings, shell, snapshots = options.agent_settings(
        state,
        model=model,
        base_url=base_url,
        summary_model=summary_model,
        max_context_tokens=max_context_tokens,
        sandbox=sandbox,
        sandbox_network=sandbox_network,
        sandbox_allow_git=sandbox_allow_git,
        no_snapshots=no_snapshots,
    )
    if resume == "" and not continue_:  # `--resume` without an id: pick one
        resume = pick_session(state, options.workspace_dir(workspace))
        if resume is None:
            # `err` is made (a console) on first use
            from gitsessions.cli.state import err

            err.print("no session picked")
            return
    chat = ChatOptions(
        state, settings, shell, snapshots, resume, continue_, workspace,
        auto_approve, all_sessions, max_steps, quiet,
    )  # fmt: skip
    opened = _chat(chat)
    if opened is not None:  # `\sessions` picked another one: the same chat, resumed there
        cmd_chat(
            ctx,
            resume=opened,
            model=model,
            base_url=base_url,
            summary_model=summary_model,
            max_context_tokens=max_context_tokens,
            workspace=workspace,
            auto_approve=auto_approve,
            all_sessions=all_sessions,
            sandbox=sandbox,
            sandbox_network=sandbox_network,
            sandbox_allow_git=sandbox_allow_git,
            no_snapshots=no_snapshots,
            max_steps=max_steps,
            quiet=quiet,
        )


def _chat(chat: ChatOptions) -> str | None:
    """Run the chat, a new session or a resumed one, with this home's prompt history;
    the session `\\sessions` picked to go on in, if one was."""
    state = chat.state
    redact = redact_setting(state.config(), str(config_path(state.home)))
    history = History(state.home, redact=redact)
    history.sessions = lambda: session_ids(state)
    first_run = not (state.home / "store.git").exists()
    if chat.resume or chat.continue_:
        return resumed(chat, history, first_run)
    return new(chat, history, first_run)


def new(chat: ChatOptions, history: History, first_run: bool) -> str | None:
    """A new chat: the prompt first, the agent built while the user types."""
    settings = chat.settings
    workspace = options.workspace_dir(chat.workspace_flag)
    check_budget_early(settings.max_context_tokens, workspace)
    if chat.shell.sandbox == "workspace-write":  # a kernel that cannot: refused at once
        # the sandbox and the tools: over 2 ms before the prompt
        from gitsessions.services.tools.sandbox import workspace_write

        workspace_write(workspace, network=chat.shell.sandbox_network)
    check_writable(chat.state.home)  # a read-only or full home: before anything is typed
    refused = endpoint.refused_here(settings)
    lines = banner("new session", settings, workspace, chat.auto_approve)
    lines += endpoint_lines(settings, refused, None, hint=first_run or refused is not None)
    plain = stderr_sink(chat.state)
    write_plain(lines, plain)
    building: Opening[ChatRun] = Opening(lambda notes: _open(chat, notes), PROMPT_SHOWN, "open")
    return opened(chat, history, settings, building, refused, first_run, plain)


def resumed(chat: ChatOptions, history: History, first_run: bool) -> str | None:
    """A resumed chat, the same way: the session found and read before its prompt,
    without the agent (cli/resuming.py: its own settings, its workspace,
    an unanswered prompt), leased; the agent built while the user types."""
    # what a resumed chat reads: 19 ms a new chat's prompt does not need
    from gitsessions.cli.resuming import (
        RETRY_HINT,
        Resuming,
        WorktreeNotHere,
        lease_of,
        read_resumed,
    )

    here = options.workspace_dir(chat.workspace_flag)
    plain = stderr_sink(chat.state)
    asked = (chat.state, chat.settings, chat.resume, chat.continue_, here, chat.workspace_flag)
    try:
        found = read_resumed(*asked)
    except WorktreeNotHere as elsewhere:  # a pulled worktree fork: its worktree made here?
        from gitsessions.cli.worktree_offer import offer

        offer(chat.state, elsewhere, here, plain)
        found = read_resumed(*asked[:-1], None)  # in the worktree, whatever --workspace said
    settings, workspace = found.settings, found.workspace
    write_plain(found.notes, plain)  # where its tools work, before anything is refused
    check_budget_early(settings.max_context_tokens, workspace)
    if chat.shell.sandbox == "workspace-write":  # a kernel that cannot: refused at once
        # the sandbox and the tools: over 2 ms before the prompt
        from gitsessions.services.tools.sandbox import workspace_write

        workspace_write(workspace, network=chat.shell.sandbox_network)
    resuming = Resuming(found.head.id, settings, workspace, lease_of(chat.state, found.head.id))
    try:
        check_writable(chat.state.home)  # the lease may open a file that exists: not proof
        refused = endpoint.refused_here(settings)
        named = f"session {short(found.head.id)} (resumed)"
        lines = banner(named, settings, workspace, chat.auto_approve)
        lines += endpoint_lines(settings, refused, None, hint=first_run or refused is not None)
        lines += found.recap
        if found.unanswered:
            lines.append((RETRY_HINT, "yellow"))
        write_plain(lines, plain)
    except BaseException:
        resuming.lease.release()
        raise
    building: Opening[ChatRun] = Opening(
        lambda notes: _open(chat, notes, resuming), PROMPT_SHOWN, "open"
    )
    empty = RETRY_HINT if found.unanswered else None
    return opened(chat, history, settings, building, refused, first_run, plain, empty)


def opened(
    chat: ChatOptions,
    history: History,
    settings: ModelSettings,
    building: "Opening[ChatRun]",
    refused: str | None,
    first_run: bool,
    plain: Sink,
    empty: str | None = None,
) -> str | None:
    """The chat once its prompt shows: the endpoint probed while the user types (unless
    it was found out of reach), the first line sent waits for the agent and the probe,
    their notes print, then it runs. `empty` is said to an empty first line."""
    probing = None
    if refused is None:  # nothing said yet: GET /models while the user types
        probing = Opening(lambda _: endpoint.probe(settings), PROMPT_SHOWN, "probe")
    with interrupts_kept():
        while True:
            line = first_line(plain, history, empty)
            if line is None:  # left before sending anything: let go of what was built
                # the agent, the store and rich: built after the prompt shows
                from gitsessions.cli.chat_session import finish

                finish(building.wait(), history)
                return None
            restore = unechoed()  # a ^C echoed would wrap the spinner's line
            try:
                run = building.wait()
                found = probed(probing, settings) if probing is not None else None
                if found is not None:  # the budget: the smaller of ours and the server's
                    from gitsessions.agent.server_budget import use_server_context

                    use_server_context(run.agent, run.settings, found.context)
                break
            except KeyboardInterrupt:
                write_plain([("", ""), (CANCELLED, "yellow")], plain)
            except (OSError, GitsessionsError):  # the chat cannot start: keep the prompt
                if not is_command(line):
                    kept = f"your prompt was not sent, here it is: {line}"
                    write_plain([(kept, "yellow")], plain)
                raise
            finally:
                restore()
        # the agent, the store and rich: built after the prompt shows
        from gitsessions.cli.chat_session import converse

        try:
            write_rich(building.notes)
            if found is not None:  # the Ollama hint, unless the first run gave it already
                hint = found.unreachable is not None and not first_run
                said = endpoint_lines(
                    settings, found.unreachable, found.models, hint=hint, home=chat.state.home
                )
                write_rich(said)
        except BaseException:
            run.stack.close()
            raise
        return converse(run, history, chat.quiet, first=line)


def _open(chat: ChatOptions, notes: Notes, resuming: "Resuming | None" = None) -> "ChatRun":
    from gitsessions.cli.chat_session import open_chat  # the agent, rich, the store

    try:
        return open_chat(chat, notes, resuming)
    except BaseException:
        if resuming is not None:  # leased before the prompt: let go of it
            resuming.lease.release()
        raise


def probed(probing: "Opening[endpoint.Probe]", settings: ModelSettings) -> endpoint.Probe:
    """What the probe found; a spinner says what is awaited when it is not done yet (a
    server slow to list its models: at most `endpoint.PROBE_SECONDS`)."""
    if probing.done:
        return probing.wait()
    # `err` is made (a console) on first use
    from gitsessions.cli.state import err
    from gitsessions.cli.terminal import spinning

    with spinning(err, f"asking the model server at {one_line(settings.base_url)}..."):
        return probing.wait()


def first_line(plain: Sink, history: History, empty: str | None = None) -> str | None:
    """The first line to act on; None at end of input. Ctrl-C and an empty line ask
    again (Ctrl-C on an empty line says how to leave); an empty line is told `empty` (a
    resumed chat's unanswered prompt: how to send it again), as the chat tells it later."""
    while True:
        try:
            line = read_prompt(history)
        except EOFError:
            return None
        except KeyboardInterrupt as error:
            if isinstance(error, EmptyCancel):
                write_plain([(LEAVE_HINT, "dim")], plain)
            continue
        if line.strip():
            return line
        if empty is not None:
            write_plain([(empty, "yellow")], plain)


def check_budget_early(max_context_tokens: int, workspace: Path) -> None:
    """Refuse a budget the agent can never work in before the prompt; only one under
    SURE_BUDGET (plus the workspace path) is counted, which loads the tool schemas."""
    if max_context_tokens >= SURE_BUDGET + len(str(workspace).encode()):
        return
    # the agent's assembly and the store: only for a budget too small to accept unread
    from gitsessions.cli.agent_setup import check_budget

    check_budget(max_context_tokens, system_prompt(str(workspace)))


def banner(named: str, settings: ModelSettings, workspace: Path, auto_approve: bool) -> list[Line]:
    lines = [
        (f"gitsessions · {named} · {settings.model} at {settings.base_url} · {workspace}", "bold"),
        ("\\help for commands · Ctrl-C cancels a request · Ctrl-D leaves", "dim"),
    ]
    if auto_approve:
        lines.append((options.AUTO_APPROVE_BANNER, "bold yellow"))
    return lines


def endpoint_lines(
    settings: ModelSettings,
    unreachable: str | None,
    models: tuple[str, ...] | None,
    hint: bool,
    home: Path | None = None,
) -> list[Line]:
    """What to say about the endpoint: out of reach, lacking the model (once per
    endpoint and model in `home`: cli/once.py), and (`hint`, on a first run or when it
    is out of reach) how to start Ollama when it is the default."""
    lines: list[Line] = []
    if unreachable:
        lines.append(
            (
                f"warning: {one_line(unreachable)}. Prompts are still saved; \\retry sends "
                "the last one again once the server is up.",
                "yellow",
            )
        )
    if hint and endpoint.is_default_endpoint(settings):
        config = config_path(Path("$GITSESSIONS_HOME"))
        hinted = endpoint.OLLAMA_HINT.format(
            url=settings.base_url, model=settings.model, config=config
        )
        lines.append((hinted, "dim"))
    if models and settings.model not in models and _first(home, settings):
        lines.append(
            (
                f"warning: the server does not list model {settings.model!r} (it has: "
                f"{', '.join(models[:8])}); set --model or GITSESSIONS_MODEL",
                "yellow",
            )
        )
    return lines


def _first(home: Path | None, settings: ModelSettings) -> bool:
    """Whether the model missing from the server's list was not said yet in `home`."""
    if home is None:
        return True

    return first_time(home, "unlisted model", f"{settings.base_url} {settings.model}")


def stderr_sink(state: State) -> Sink:
    """stderr without rich (before the prompt); coloured on a terminal, unless NO_COLOR."""
    stream = StreamOf("stderr")
    if piped(stream):
        return Sink(stream.file, colour=False)
    width = shutil.get_terminal_size().columns  # notes wrap at words, as rich wraps them
    return Sink(stream.file, colour="NO_COLOR" not in state.env, width=max(20, width))


def write_plain(lines: list[Line], sink: Sink) -> None:
    """Lines on `sink`, visible-safe."""
    for text, style in lines:
        sink.line(text, style)
    sink.flush()


def write_rich(lines: "list[Line] | Notes") -> None:
    """Lines, or kept notes, on the chat's stderr console."""
    # `err` is made (a console) on first use
    from gitsessions.cli.state import err

    if isinstance(lines, Notes):
        lines.replay(err)
        return
    for text, style in lines:
        err.print(vtext(text, style=style), highlight=False)


def session_ids(state: State) -> list[tuple[str, str]]:
    """The sessions `\\diff ID` completes at the prompt: id and label, newest first."""
    # the header cache (sqlite): over 2 ms before the prompt
    from gitsessions.cli import listing

    rows = listing.session_rows(state.store, include_archived=False)
    return [(row["id"], listing.label(row)) for row in rows]


def pick_session(state: State, workspace: Path) -> str | None:
    """`chat --resume` without an id: the session picked among this workspace's."""
    # rich and the store: only to pick a session
    from gitsessions.cli.picker import pick, recent
    from gitsessions.cli.state import err

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


def register(app: typer.Typer) -> None:
    app.command("chat")(cmd_chat)
