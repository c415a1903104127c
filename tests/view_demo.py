"""A demo store for `gitsessions view`: what its tests, bench/view.py and the screenshots
under docs/ read. Written through the store's API (turns of prompt, tool call and
reply, each step a commit with the trailers the agent writes, replies with the usage a
server reports), code snapshots that are real commits of a real git project, a
compaction with its continuation note, a fork; and, on request, a hostile session whose
every string tries to run script in a page (`MARKER` shows in the DOM if one does).
"""

import json
import subprocess
from pathlib import Path
from typing import Any

from gitsessions.services.compaction.continuation import make_note
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.ids import new_id
from gitsessions.values.records import empty_usage, new_header

MARKER = "x-pwned"  # an element a payload adds to the page when it runs
RUN = f"document.body.appendChild(document.createElement('{MARKER}'))"
PAYLOADS = [
    f"<script>{RUN}</script>",
    f'<img src=x onerror="{RUN}">',
    f"</textarea></pre></title><script>{RUN}</script>",
    f'<svg onload="{RUN}"></svg>',
    f'"\'><iframe srcdoc="<script>parent.{RUN}</script>"></iframe>',
]
HOSTILE = " ".join(PAYLOADS)
SYSTEM = {"role": "system", "content": "You are a coding agent working in a git project."}


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(project), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def project_commit(project: Path, files: dict[str, str], message: str) -> str:
    """Write `files` in the project and commit them: a code snapshot's commit."""
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8")
    git(project, "add", "-A")
    git(project, "-c", "user.name=demo", "-c", "user.email=demo@localhost", "commit", "-qm",
        message)  # fmt: skip
    return git(project, "rev-parse", "HEAD")


def call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip


def turn(
    store: SessionStore,
    head: Head,
    context: list[dict[str, Any]],
    number: int,
    prompt: str,
    tool: tuple[str, dict[str, Any], str],
    reply: str,
    tokens: int,
    snapshot: str | None,
) -> Head:
    """One turn of three commits: the prompt, a tool call and its output, the reply."""
    name, arguments, output = tool
    steps: list[tuple[list[dict[str, Any]], list[dict[str, Any]], str]] = [
        ([{"role": "user", "content": prompt}], [{}], f"turn {number}: {prompt[:40]}"),
        (
            [
                {"role": "assistant", "content": None,
                 "tool_calls": [call(number, name, arguments)]},
                {"role": "tool", "tool_call_id": f"call_{number}", "content": output},
            ],
            [{"model": "demo-model", "usage": {"prompt_tokens": tokens,
                                                "completion_tokens": 40}}, {}],
            f"turn {number}.1: {name}",
        ),
        (
            [{"role": "assistant", "content": reply}],
            [{"model": "demo-model", "usage": {"prompt_tokens": tokens + 300,
                                                "completion_tokens": 60}}],
            f'turn {number}.2: reply "{reply[:30]}"',
        ),
    ]  # fmt: skip
    for step, (messages, meta, subject) in enumerate(steps):
        context += messages
        trailers: dict[str, Any] = {"Turn": number, "Step": step}
        if step and snapshot:
            trailers["Code-Snapshot"] = snapshot
        usage = dict(head.header.get("usage") or empty_usage())
        if step:  # a request answered
            usage["requests"] += 1
            usage["prompt_tokens"] += meta[0]["usage"]["prompt_tokens"]
            usage["completion_tokens"] += meta[0]["usage"]["completion_tokens"]
        head = store.commit(
            head,
            Change(context=list(context), append=messages, append_meta=meta, usage=usage),
            event="turn", subject=subject, trailers=trailers,
        )  # fmt: skip
    return head


def compaction(store: SessionStore, head: Head, context: list[dict[str, Any]]) -> Head:
    """Compaction 1: the turns so far summarised into a note; the last turn kept."""
    before, after = 5200, 1400
    note = make_note("Goal: fix the cart total. Done: read cart.py, fixed TOTAL.", "")
    kept = context[-4:]
    context[:] = [context[0], note, *kept]
    newest = store.records(head, head.counts["messages"] - 1)[0]
    record = {"time": newest["time"], "trigger": "manual", "stages": ["summarize"],
              "before_tokens": before, "after_tokens": after, "summary": "Goal: fix the cart",
              "summarizer": None, "cleared": []}  # fmt: skip
    return store.commit(
        head, Change(context=list(context), compactions=[record]), event="compact",
        subject=f"compact: {before} -> {after} tokens",
        trailers={"Tokens-Before": before, "Tokens-After": after, "Trigger": "manual",
                  "Stages": "summarize"},
    )  # fmt: skip


def build(home: Path, project: Path, hostile: bool = False) -> dict[str, str]:
    """The demo store in `home`, its project in `project`; the ids by role: `main`,
    `fork`, and `hostile` when asked."""
    project.mkdir(parents=True, exist_ok=True)
    git(project, "init", "-q")
    first = project_commit(project, {"cart.py": "TOTAL = 0\n"}, "start")
    store = SessionStore(home)
    workspace = {"path": str(project), "repo_root": str(project), "branch": "main",
                 "head": first}  # fmt: skip
    sid = new_id()
    header = new_header(sid, "2026-12-01T09:00:00Z", title="fix the cart total")
    header["workspace"] = workspace
    header["model"] = "demo-model"
    head = store.create(header, Change(context=[SYSTEM], append=[SYSTEM]))
    context = [SYSTEM]
    snapshot = first
    tokens = 900
    plan = [
        ("the cart total is off by one; find the cause", "read_file", {"path": "cart.py"}),
        ("fix it", "write_file", {"path": "cart.py", "content": "TOTAL = 1\n"}),
        ("add a test for it", "write_file", {"path": "test_cart.py"}),
        ("run the tests", "run_shell", {"command": "pytest -q"}),
    ]
    fork_at = head
    for n, (prompt, tool, args) in enumerate(plan, start=1):
        if n == 2:
            snapshot = project_commit(project, {"cart.py": "TOTAL = 1\n"}, "fix")
        if n == 3:
            test = "from cart import TOTAL\n\ndef test_total():\n    assert TOTAL == 1\n"
            snapshot = project_commit(project, {"test_cart.py": test}, "test")
        output = "\n".join(f"line {i}: TOTAL = {n}" for i in range(40))
        reply = f"Done with step {n}: the total now counts every item."
        head = turn(store, head, context, n, prompt, (tool, args, output), reply, tokens, snapshot)
        tokens += 1400
        if n == 2:
            fork_at = head
        if n == 3:
            head = compaction(store, head, context)
            tokens = 1700
    ids = {"main": sid}
    fork = store.fork(
        fork_at, new_id(), title="rewrite the total", created_at="2026-12-01T10:00:00Z"
    )
    ids["fork"] = fork.id
    if hostile:
        ids["hostile"] = hostile_session(store, project, workspace)
    store.close()
    return ids


def hostile_session(store: SessionStore, project: Path, workspace: dict[str, Any]) -> str:
    """A session whose title, prompt, reply, tool call, tool output and changed file's
    name all hold the payloads."""
    name = f"{PAYLOADS[1]}.py".replace("/", "_")
    before = git(project, "rev-parse", "HEAD")
    snapshot = project_commit(project, {name: HOSTILE + "\n"}, "hostile")
    sid = new_id()
    header = new_header(sid, "2026-12-01T11:00:00Z", title=HOSTILE)
    header["workspace"] = workspace
    head = store.create(header, Change(context=[SYSTEM], append=[SYSTEM]))
    context = [SYSTEM]
    tool = ("write_file", {"path": name, "content": HOSTILE}, HOSTILE)
    head = turn(store, head, context, 1, HOSTILE, tool, HOSTILE, 500, before)
    tool = ("read_file", {"path": HOSTILE}, HOSTILE * 40)
    turn(store, head, context, 2, HOSTILE, tool, HOSTILE, 800, snapshot)
    return sid
