"""What the CLI adds to the agent's assembly (agent/assembly.py) for `chat`, `exec` and
`acp`: the session to resume and the folder, as the command line names them; the notes
printed; the cost function (a model without a price said once, never for a server on
this machine); the warm-up."""

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsessions.agent.assembly import Built, assemble
from gitsessions.agent.assembly import check_budget as check_budget  # cli/chat.py imports it here
from gitsessions.agent.turns import Events
from gitsessions.cli.once import first_time
from gitsessions.cli.opening import Printer
from gitsessions.cli.options import workspace_dir
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.resuming import Resuming, pick, place
from gitsessions.cli.state import State, err
from gitsessions.services.model.endpoint import on_this_machine
from gitsessions.services.model.model import preload
from gitsessions.services.model.pricing import estimate_cost
from gitsessions.services.settings.config import (
    ModelSettings,
    ShellSettings,
    SnapshotSettings,
    with_session_settings,
)
from gitsessions.services.tools import Approver
from gitsessions.store.here import endpoints
from gitsessions.store.sessions import Head, SessionStore
from gitsessions.values.ids import short
from gitsessions.values.records import USAGE_TOTAL_KEYS
from gitsessions.values.tokens import default_counter

if TYPE_CHECKING:
    from gitsessions.store.catalog import Catalog


def warm_up(chat: bool = False, after: threading.Event | None = None) -> None:
    """Import the model client (the openai SDK) in a background thread: `chat` starts
    it when its prompt shows (the user types meanwhile: `after` is set then, and each
    thread waits for it, so none competes with the prompt for the interpreter), `exec`
    first thing, so it overlaps reading the prompt and the store; the first request
    then waits less or not at all. `chat` also loads the
    tokenizer (its status line counts the context) and the markdown renderer; `exec`
    loads the tokenizer only if a context gets near the budget."""
    preload(after)
    if chat:
        default_counter().warm_up(after)  # a thread of its own: the first request counts first
        threading.Thread(
            target=_import_markdown, args=(after,), daemon=True, name="warm-up"
        ).start()


def _import_markdown(after: threading.Event | None) -> None:
    if after is not None:
        after.wait(2.0)
    import rich.markdown  # noqa: F401 - the first reply renders markdown


def pick_session(
    store: SessionStore, resume: str | None, continue_: bool, workspace: Path
) -> Head | None:
    """The session to resume, or None for a new one."""

    def catalog() -> "Catalog":
        from gitsessions.store.catalog import Catalog  # sqlite: only for --continue

        return Catalog(store)

    return pick(store, resume, continue_, workspace, catalog)


def cost_function(
    settings: ModelSettings, home: Path | None = None
) -> Callable[[str, int, int], float]:
    """Costs by the settings' prices; a model without one is said once (per process,
    and with `home` once in that home: cli/once.py), unless its server is on this
    machine (a local model: no price to know)."""
    unknown: set[str] = set()
    local = on_this_machine(settings.base_url)

    def cost(model: str, prompt: int, completion: int) -> float:
        value, known = estimate_cost(model, prompt, completion, settings.prices)
        if not known and model not in unknown:
            unknown.add(model)
            if local:
                return value
            if home is not None and not first_time(home, "no price", model):
                return value
            err.print(
                f"note: no price known for model {one_line(model)}; tokens are recorded, cost "
                'counts as 0 (set [prices."MODEL"] in config.toml)',
                markup=False,
                highlight=False,
                style="dim",
            )
        return value

    return cost


@contextmanager
def build_agent(
    state: State,
    settings: ModelSettings,
    shell: ShellSettings,
    *,
    resume: str | None,
    continue_: bool,
    workspace_flag: Path | None,
    approve: Approver,
    events: Events,
    max_steps: int = 50,
    stream: bool = True,
    all_sessions: bool = False,
    snapshots: SnapshotSettings | None = None,
    notes: Printer = err,
    resuming: Resuming | None = None,
    summary: str = "background",
    ask_server: bool = True,
) -> Iterator[Built]:
    """The agent (agent/assembly.py), its session leased, for what the command line
    asked: the session to resume and the folder to work in. Its notes (the workspace,
    the sandbox, snapshots) go to `notes`: `chat` builds it while the user types and
    prints them later. A session `resuming` names was found, said and leased before
    (cli/resuming.py). With `ask_server`, the context the server holds is asked as
    the agent is built (chat asks it with its endpoint probe: agent/server_budget.py)."""
    store = state.store
    if resuming is not None:  # found and said before the prompt; re-read under its lease
        picked: Head | None = store.head(resuming.session_id)
        settings, workspace = resuming.settings, resuming.workspace
    else:
        workspace = workspace_dir(workspace_flag)
        picked = pick_session(store, resume, continue_, workspace)
    if picked is not None and resuming is None:  # its own model, endpoint and budget
        settings, endpoint_note = with_session_settings(
            settings, picked.header.get("settings"), short(picked.id), endpoints(state.home)
        )
        workspace, said = place(picked, workspace, workspace_flag, state.home, state.env)
        if endpoint_note is not None:
            said.insert(0, (endpoint_note, "yellow"))
        for text, style in said:
            notes.print(vtext(text, style=style), highlight=False)

    def note(text: str, style: str) -> None:
        notes.print(vtext(text, style=style), highlight=False)

    def stderr(text: str, style: str) -> None:
        err.print(vtext(text, style=style), highlight=False)

    with assemble(
        state,
        settings,
        shell,
        picked=picked,
        workspace=workspace,
        lease=resuming.lease if resuming is not None else None,
        approve=approve,
        events=events,
        cost=cost_function(settings, state.home),
        notes=note,
        stderr=stderr,
        max_steps=max_steps,
        stream=stream,
        all_sessions=all_sessions,
        snapshots=snapshots,
        summary=summary,
        ask_server=ask_server,
    ) as built:
        yield built


def turn_usage(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in USAGE_TOTAL_KEYS}
    delta["cost_usd"] = round(delta["cost_usd"], 8)
    return delta
