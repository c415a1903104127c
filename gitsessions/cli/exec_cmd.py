"""`gitsessions exec PROMPT`: one user turn, run to completion, for scripts and CI."""

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from gitsessions.agent.granted import Granted
from gitsessions.agent.loop import Agent
from gitsessions.agent.turns import (
    CUT_MARK,
    CUT_REASONS,
    PromptNotSaved,
    ReplyNotSaved,
    TurnResult,
)
from gitsessions.cli import options
from gitsessions.cli.agent_setup import build_agent, turn_usage, warm_up
from gitsessions.cli.options import AUTO_APPROVE_BANNER
from gitsessions.cli.plain import Styled, piped, vtext
from gitsessions.cli.progress import ProgressEvents
from gitsessions.cli.render import print_json
from gitsessions.cli.state import State, err, out
from gitsessions.services.settings.config import ModelSettings
from gitsessions.services.tools import NotAsked, approve_all
from gitsessions.values.errors import BadUsage, GitsessionsError, InvalidInput
from gitsessions.values.ids import check_text

EXIT_STOPPED = 3
# exec_summary (config.toml) -> when the agent asks for the list summary (AgentConfig)
SUMMARY_MODES = {"background": "later", "wait": "wait", "off": "off"}
WHY_NOT_RUN = "exec needs --auto-approve to write files or run commands"
NOT_RUN = f"not run: {WHY_NOT_RUN}"


def cmd_exec(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="The prompt; '-' reads it from stdin.")],
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
        int, typer.Option("--max-steps", min=1, help="At most this many model requests.")
    ] = 50,
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON result on stdout.")] = False,
) -> None:
    """Run one turn (tool calls included) and print the final reply.

    write_file, edit_file and run_shell do not run unless --auto-approve (the model is
    told "not run: exec needs --auto-approve"). Exit codes: 0 done, 1 error (the session
    is saved up to the last complete step; a reply that could not be saved is still
    printed, and --json then carries "error"), 3 the turn stopped early (--max-steps,
    repeated tool failures) or a tool call was not run for want of --auto-approve.
    """
    state: State = ctx.obj
    warm_up()  # the SDK imports while the prompt, the settings and the store are read
    text = read_prompt(prompt)
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
    if auto_approve:
        err.print(AUTO_APPROVE_BANNER, style="yellow", highlight=False)
    denied, events = Denials(), progress_events()
    unsent: str | None = None  # a fresh session whose first request failed: not kept
    try:
        with build_agent(
            state,
            settings,
            shell,
            resume=resume,
            continue_=continue_,
            workspace_flag=workspace,
            approve=approve_all if auto_approve else denied,
            events=events,
            max_steps=max_steps,
            stream=False,
            all_sessions=all_sessions,
            snapshots=snapshots,
            summary=SUMMARY_MODES[settings.exec_summary],
        ) as built:
            agent, fresh = built.agent, built.agent.session.is_draft
            said = _started(agent, events, denied)
            before = dict(agent.session.usage)
            try:
                result, unsaved = run_turn(agent, text)
            except GitsessionsError as error:
                unsent = failed(agent, error, fresh, json_, said)
                raise
            try:
                _finish(agent, result, unsaved, before, denied, json_)
            finally:  # after the reply is printed: no script waits on it
                _summary_after(state, agent, built.settings)
    except GitsessionsError:
        if unsent is not None:
            forget(state, unsent)
        raise


def run_turn(agent: Agent, text: str) -> tuple[TurnResult, ReplyNotSaved | None]:
    """The turn's result, and the error when its reply could not be saved (the reply is
    still the user's: it is printed, then exec fails)."""
    try:
        return agent.run_turn(text), None
    except ReplyNotSaved as error:
        return error.result, error


def read_prompt(prompt: str) -> str:
    """The prompt given, or stdin's for '-': UTF-8 and not empty."""
    if prompt == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidInput(
                f"the prompt on stdin is not valid UTF-8 (byte {error.start})"
            ) from None
    else:
        text = prompt
    if not check_text(text, "the prompt").strip():
        raise BadUsage("the prompt is empty")
    return text


def _started(agent: Agent, events: ProgressEvents, denied: "Denials") -> "Announce":
    """The approvals this home granted the session, and its `session ID` line: said now
    for a stored session, at the model's first reply for a fresh one (a failed start
    keeps none)."""
    session = agent.session
    denied.granted.bind(session.store.home, session.id)
    said = Announce(session.id)
    if session.is_draft:
        events.first_reply = said
    else:
        said()
    return said


class Announce:
    """The `session ID` line on stderr, said at most once."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.said = False

    def __call__(self) -> None:
        if not self.said:
            self.said = True
            err.print(f"session {self.session_id}", style="dim", highlight=False)


class Denials(list[str]):
    """The approver without --auto-approve: each mutating call is not run (the model is
    told why), and its tool's name kept for the exit code; but a call an "always" in
    chat (or an ACP client) allowed in this session, in this home, runs."""

    def __init__(self) -> None:
        super().__init__()
        self.granted = Granted()  # bound to the session once it is built

    def __call__(self, name: str, arguments: Any) -> NotAsked | bool:
        if self.granted.allows(name, arguments):
            return True
        self.append(name)
        return NotAsked(WHY_NOT_RUN)


def failed(
    agent: Agent, error: GitsessionsError, fresh: bool, json_: bool, said: Callable[[], None]
) -> str | None:
    """A turn that failed: the id of a fresh session that holds nothing but the prompt
    (not kept), else None (and a kept one's id is said); with --json a script still
    learns which session it was."""
    unsent = None
    if fresh and not isinstance(error, PromptNotSaved) and unanswered(agent):
        unsent = agent.session.id
    elif not agent.session.is_draft:
        said()  # kept (a partial reply): its id, unless said already
    if json_:
        print_json(out, {"session": None if unsent else agent.session.id, "error": str(error)})
    return unsent


def _summary_after(state: State, agent: Agent, settings: ModelSettings) -> None:
    """The list summary the turn made due, once its reply is out: handed to a process
    of its own (exec_summary "background"), or waited for ("wait")."""
    due = agent.summary_due
    if due is not None:
        from gitsessions.agent.summary_later import hand_on

        try:
            hand_on(state.store, agent.session.id, due, settings)
        except OSError as error:
            err.print(vtext(f"note: the list summary is not asked: {error}"), highlight=False)
    agent.settle_title()


def unanswered(agent: Agent) -> bool:
    """Whether nothing happened but the prompt: it is the session's only message after
    the system prompt (no reply, not even a partial one, and so no tool ran)."""
    session = agent.session
    return not session.is_draft and session.head.counts.get("messages", 0) <= 2


def forget(state: State, session_id: str) -> None:
    """Delete a fresh session whose first request failed, and say so: nothing happened
    that is worth a session (the prompt is still on the user's command line)."""
    from gitsessions.services.sessions import manage

    try:
        manage.delete(state.store, session_id)
    except (OSError, GitsessionsError) as error:
        err.print(vtext(f"note: session {session_id[:8]} is kept: {error}"), highlight=False)
        return
    err.print(
        vtext(
            "note: nothing was saved: the model server failed before it answered "
            "(the same command tries again)",
            style="yellow",
        ),
        highlight=False,
    )


def _finish(
    agent: Agent,
    result: TurnResult,
    unsaved: ReplyNotSaved | None,
    before: dict[str, Any],
    denied: list[str],
    json_: bool,
) -> None:
    """What a turn that ran prints: its reply (or JSON), then how it ended."""
    session = agent.session
    stopped = result.stopped or (NOT_RUN if denied else None)
    cut = result.finish_reason in CUT_REASONS
    if json_:
        print_json(
            out,
            {
                "session": session.id,
                "reply": result.reply,
                "usage": turn_usage(before, session.usage),
                "compacted": result.compacted,
                "commit": session.head.commit.decode(),
                **({"stopped": stopped} if stopped else {}),
                **({"finish_reason": result.finish_reason} if cut else {}),
                **({"error": str(unsaved)} if unsaved else {}),
            },
        )
    elif result.reply:
        out.print(vtext(result.reply), highlight=False)
    if cut:  # after the reply: where it ends
        err.print(Styled(CUT_MARK, style="dim"), highlight=False)
    if unsaved is not None:
        raise unsaved
    if stopped:
        err.print(vtext(stopped), highlight=False)
        raise typer.Exit(EXIT_STOPPED)


def progress_events() -> ProgressEvents:
    """The progress lines on stderr; on a terminal also a running tool's spinner (into a
    pipe nothing more, and rich is not imported)."""
    if piped(err):
        return ProgressEvents(err)
    from gitsessions.cli.running import RunningEvents

    return RunningEvents(err)


def register(app: typer.Typer) -> None:
    app.command("exec")(cmd_exec)
