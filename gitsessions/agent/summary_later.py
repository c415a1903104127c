"""A fresh `exec`'s list summary, asked after `exec` exits by a detached process of its own
(`hand_on`), so no script waits on a second request.

Invariants:
- The job goes as JSON on the child's stdin (the API key never in argv); the child runs
  in a session of its own, prints nothing, and audits every outcome (`summary`).
- It writes through `writer.update` (the session's lease, the current head), its own
  commit `turn N: summary "..."`; a session in use is waited for up to `LEASE_WAIT`, then
  left (its next turn asks again). A later turn's summary is never replaced (an older
  one is); a session deleted meanwhile stays deleted, with no lease file left.
- Its lease is marked "summary" (`store/lease.py`): an opener waits for it instead of
  failing as "in use".
"""

import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gitsessions.agent.titling import SummaryDue, summary_line, summary_subject
from gitsessions.services.hooks.audit import audit
from gitsessions.services.model.completion import Completion, Usage
from gitsessions.services.model.model import ModelClient
from gitsessions.services.model.pricing import Prices, estimate_cost
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.services.settings.config import ModelSettings
from gitsessions.store.lease import Lease, SessionInUse
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.records import add_usage

LEASE_WAIT = 60.0  # seconds: a chat resumed meanwhile keeps the session longer than this
RETRIES = 3  # as a turn's request: a 429 or 5xx is sent again
KEPT_TRAILERS = ("Turn", "Step", "Workspace-Head", "Code-Snapshot")


def hand_on(store: SessionStore, session_id: str, due: SummaryDue, settings: ModelSettings) -> None:
    """Start the child that asks for `due` and records it; return at once."""
    payload = {
        "home": str(store.home),
        "redact": store.redact,
        "session": session_id,
        "turn": due.turn,
        "model": due.model,
        "request": due.request,
        "settings": {k: v for k, v in asdict(settings).items() if k != "sources"},
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "gitsessions.agent.summary_later"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    assert child.stdin is not None
    with child.stdin:
        child.stdin.write(json.dumps(payload).encode())
    child.returncode = 0  # never waited for: it outlives exec by design


def record(
    store: SessionStore,
    session_id: str,
    turn: int,
    completion: Completion,
    model: str,
    prices: Prices,
) -> writer.Written:
    """Commit the summary `completion` gives for `turn`, unless a later turn's summary
    is there already, and its usage (`model`'s, costed by `prices`) whatever became of
    it: the tokens were spent. Nothing when there is neither. The caller holds the
    lease."""
    summary = summary_line(completion)
    usage = completion.usage or Usage(0, 0)
    cost = estimate_cost(model, usage.prompt_tokens, usage.completion_tokens, prices)[0]
    spent = bool(usage.prompt_tokens or usage.completion_tokens) or cost > 0

    def edit(head: Head) -> Edit | None:
        trailers = _trailers(store, head)
        turn_there = str(trailers.get("Turn", ""))
        at = int(turn_there) if turn_there.isdigit() else 0
        kept = bool(summary) and not newer_summary(store, head, turn)
        if not kept and not spent:
            return None
        counted = add_usage(
            store.read(head, "usage"), model, usage.prompt_tokens, usage.completion_tokens, cost
        )
        header = touch(head.header, summary=summary) if kept else touch(head.header)
        subject = summary_subject(at or turn, summary if kept else "(none kept)")
        return Edit(Change(header=header, usage=counted), "turn", subject, trailers)

    return writer.update(store, session_id, edit, operation="summary", lease_held=True)


def newer_summary(store: SessionStore, head: Head, turn: int) -> bool:
    """Whether `head`'s summary was written for a turn after `turn`: it is not the one
    the session held at its newest commit of `turn` or before (by their `Turn` trailers;
    the commits after it, of later turns, are what changed it). With no such commit
    (its turns rewritten) a summary there is kept."""
    summary = head.header.get("summary")
    if not summary:
        return False
    for commit_id, commit in store.history(head):
        there = str(parse_trailers(commit.message)[1].get("Turn", ""))
        if there.isdigit() and int(there) <= turn:
            return bool(store.head_at(head.id, commit_id).header.get("summary") != summary)
    return True


def _trailers(store: SessionStore, head: Head) -> dict[str, Any]:
    message = store.read_commit(head.commit).message
    found = parse_trailers(message)[1]
    return {name: found[name] for name in KEPT_TRAILERS if name in found}


def _lease(home: Path, session_id: str) -> Lease | None:
    deadline = time.monotonic() + LEASE_WAIT
    while True:
        try:
            return Lease(home, session_id, holder="summary")
        except SessionInUse:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.5)


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    try:
        ask_and_record(job)
    except Exception as error:  # no one sees this process: the audit log says it
        audit(Path(job["home"]), "summary", job["session"], "error", error=type(error).__name__)


def ask_and_record(job: dict[str, Any]) -> None:
    """Ask for the summary `job` names, then record it under the session's lease."""
    home, session_id, turn = Path(job["home"]), job["session"], int(job["turn"])
    settings = ModelSettings(**job["settings"])
    try:
        with ModelClient(settings, retries=RETRIES) as client:
            completion = client.complete(
                job["request"], model=job["model"], temperature=0.0, max_tokens=40
            )
    except GitsessionsError as error:
        audit(home, "summary", session_id, "error", error=type(error).__name__)
        return
    try:
        store = SessionStore(home, redact=bool(job["redact"]))
    except GitsessionsError as error:
        audit(home, "summary", session_id, "error", error=type(error).__name__)
        return
    lease = _lease(home, session_id)
    if lease is None:
        audit(home, "summary", session_id, "error", error="SessionInUse")
        return
    if not store.exists(session_id):  # deleted while asked: taking its lease made a file
        lease.discard()
        audit(home, "summary", session_id, "skipped", reason="deleted")
        return
    try:
        model = completion.model or job["model"]
        record(store, session_id, turn, completion, model, settings.prices)
    except GitsessionsError:
        pass  # said in the audit log by `writer.update`
    finally:
        lease.release()


if __name__ == "__main__":
    main()
