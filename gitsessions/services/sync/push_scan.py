"""The secret scan of what a push sends: nothing leaves unscanned.

Invariant: every file version and commit message a push would send (only what the
remote lacks) is checked with the store's secret rules before anything is sent; a
finding refuses the whole push, naming session, message index and rule (or the file,
for an older version). Stock git and grep search for the rules' hints where the
objects are; only objects holding one are read and parsed here. Imported by `push`
alone, so a pull never loads the rules.
"""

import json
from typing import Any

from gitsessions.store import history, transport
from gitsessions.store.sessions import SessionStore
from gitsessions.store.tracking import SESSIONS
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import short
from gitsessions.values.secrets import HINT_BYTES, hinted, may_hold_secret, redact, redact_value

COMMIT, BLOB = 1, 3  # git's object type numbers (what `transport` lists objects by)


class SecretsInPush(GitsessionsError):
    """What a push would send holds a secret; nothing was sent."""


def scan_sent(
    store: SessionStore,
    entries: list[transport.Entry],
    plan: dict[bytes, tuple[bytes | None, bytes]],
    env: transport.Env = None,
) -> None:
    """Scan every blob and commit message the push would send. Only text holding one
    of the rules' literal hints is parsed and checked; on a finding, `_scan` names the
    session, message index and rule."""
    found: list[str] = []
    scanned = [e for e in entries if e[1] in (BLOB, COMMIT)]
    for n, raw in _hinted(store, [sha for sha, _t, _p in scanned], env).items():
        _sha, type_num, path = scanned[n]
        text = raw.decode("utf-8", "replace")
        if not may_hold_secret(text):
            continue
        where = path.decode("utf-8", "replace").lstrip("/") or "a commit message"
        for rule in sorted(_rules_in(text, path, type_num)):
            found.append(f"{where}: {rule}")
    if found:
        _scan(store, plan)  # names the session and message when it can
        raise SecretsInPush(
            f"refusing to push: {'; '.join(found[:3])}{' (and more)' if len(found) > 3 else ''}"
            " in an earlier version of a session's files; nothing was sent "
            "(--allow-secrets sends it anyway)"
        )


def _hinted(store: SessionStore, ids: list[bytes], env: transport.Env) -> dict[int, bytes]:
    """`{index: raw content}` of the objects holding a hint of the secret rules: stock
    git and grep search them where they are (only those found are read here), else
    every one is read and searched here."""
    hits = transport.hinted(store.git, ids, HINT_BYTES, env)
    if hits is None:
        raws = list(transport.contents(store.git, ids, env))
        return {n: raws[n] for n in sorted(hinted(raws))}
    order = sorted(hits)
    read = transport.contents(store.git, [ids[n] for n in order], env)
    return dict(zip(order, read, strict=True))


def _rules_in(text: str, path: bytes, type_num: int) -> set[str]:
    """The rules that match in one object's text, read as the store reads it."""
    if type_num == COMMIT:
        return set(redact(text.split("\n\n", 1)[-1])[1])
    values: list[Any] = []
    try:
        if path.endswith(b".jsonl"):
            values = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            values = [json.loads(text)]
    except ValueError:
        return set(redact(text)[1])
    rules: set[str] = set()
    for value in values:
        rules |= set(redact_value(value)[1])
    return rules


def _scan(store: SessionStore, plan: dict[bytes, tuple[bytes | None, bytes]]) -> None:
    """Refuse the whole push at the first secret found in what it would send."""
    found: list[str] = []
    for ref, (old, new) in sorted(plan.items()):
        sid = ref[len(SESSIONS) :].decode()
        head = store.head_at(sid, new)
        start = 0
        if old is not None and history.has(store.git, old):
            start = store.head_at(sid, old).counts.get("messages", 0)
        for index, record in enumerate(store.records(head, start), start):
            _, rules = redact_value(record.get("message"))
            found += [f"session {short(sid)} message {index}: {r}" for r in sorted(rules)]
        extras: list[tuple[str, Any]] = [("session.json", head.header)]
        extras += [(what, store.read(head, what)) for what in ("pins", "plan", "compactions")]
        for where, value in extras:
            _, rules = redact_value(value)
            found += [f"session {short(sid)} {where}: {r}" for r in sorted(rules)]
        if len(found) >= 3:
            break
    if found:
        more = " (and more)" if len(found) > 3 else ""
        raise SecretsInPush(
            f"refusing to push: {'; '.join(found[:3])}{more}; nothing was sent "
            "(--allow-secrets sends it anyway)"
        )
