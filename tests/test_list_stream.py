"""`list` streamed from the header cache in the order shown (issue 46): the same rows,
in the same order, as when the whole store was read and sorted in memory."""

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from gitsessions.cli.plain import write_json, write_json_array
from gitsessions.store import catalog
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import git


class _Out:
    def __init__(self) -> None:
        self.file = io.StringIO()


def _sessions(store: SessionStore, count: int) -> list[str]:
    """`count` sessions, active a minute apart (ties broken by id), a few archived."""
    ids = []
    system = {"role": "system", "content": "You are a coding agent."}
    for n in range(count):
        at = f"2026-05-{1 + n % 3:02d}T10:{n // 3:02d}:00Z"  # out of order, some equal days
        header = new_header(new_id(), at, title=f"session {n}")
        header["archived"] = n % 5 == 4
        store.create(header, Change(context=[system], append=[system]))
        ids.append(header["id"])
    return ids


def test_list_limit_is_the_head_of_the_whole_list_in_every_form(cli, store: SessionStore) -> None:
    _sessions(store, 23)
    whole = cli("list", "--limit", "0").stdout.splitlines()
    assert len(whole) == 23 - 4  # archived ones left out
    stamps = [line.split("\t")[1] for line in whole]
    assert stamps == sorted(stamps, reverse=True)
    for limit in ("1", "7", "19", "40"):
        assert cli("list", "--limit", limit).stdout.splitlines() == whole[: int(limit)]
    every = cli.json("list", "--include-archived")
    assert len(every) == 23
    assert cli.json("list", "--include-archived", "--limit", "5") == every[:5]
    assert [r["id"] for r in cli.json("list")] == [line.split("\t")[0] for line in whole]
    keys = [(r["active_at"], r["id"]) for r in every]
    assert keys == sorted(keys, reverse=True)


def test_the_cache_is_read_through_its_index_on_activity(cli, home: Path, store) -> None:
    _sessions(store, 3)
    cli("list")
    with sqlite3.connect(home / "index.sqlite") as db:
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM headers WHERE archived = 0 "
            "ORDER BY active_at DESC, id DESC"
        ).fetchall()
        stamps = [row[0] for row in db.execute("SELECT active_at FROM headers")]
    assert "INDEX headers_by_activity" in " ".join(str(step[-1]) for step in plan)  # covering
    assert sorted(stamps)[0].startswith("2026-05-01T10:")


def test_a_streamed_json_array_is_the_text_of_the_whole_one() -> None:
    cases: list[list[Any]] = [
        [],
        [{"id": "a"}],
        [{"id": "a", "nested": {"x": [1, 2, {"y": None}], "e": []}}, {"t": "line\nbreak \x1b[31m"}],
        [1, "two", [3]],
    ]
    for items in cases:
        whole, streamed = _Out(), _Out()
        write_json(whole, items)
        write_json_array(streamed, iter(items))
        assert streamed.file.getvalue() == whole.file.getvalue()
        assert json.loads(streamed.file.getvalue()) == items


def test_a_warm_cache_still_follows_what_another_writer_did(cli, home: Path, store) -> None:
    """A listing whose refs all match the cache answers from it at once; stock git moving
    one ref back, deleting one, or a damaged ref is still seen by the next listing."""
    first, gone, damaged = _sessions(store, 3)
    old = store.head(first).commit.decode()
    cli("rename", first, "renamed")
    cli("rename", gone, "renamed too")
    assert cli.json("list")[2]["title"] == "renamed"
    assert {r["title"] for r in cli.json("list")} == {"renamed", "renamed too", "session 2"}
    git(home / "store.git", "update-ref", f"refs/heads/sessions/{first}", old)
    git(home / "store.git", "update-ref", "-d", f"refs/heads/sessions/{gone}")
    git(home / "store.git", "pack-refs", "--all")
    (home / "store.git" / "refs" / "heads" / "sessions").mkdir(parents=True, exist_ok=True)
    (home / "store.git" / "refs" / "heads" / "sessions" / damaged).write_text("not a commit\n")
    listed = cli("list", "--json")
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["title"]) for r in rows] == [(first, "session 0")]
    assert damaged in listed.stderr and "does not hold a commit id" in listed.stderr
    (home / "store.git" / "refs" / "heads" / "sessions" / damaged).unlink()  # its packed ref
    assert [r["id"] for r in cli.json("list")] == [damaged, first]  # by activity


def test_merges_are_read_through_their_own_index(cli, home: Path, store) -> None:
    """Only the headers that may record a merge are read for `merged_into` (a partial
    index), and a fork is marked while its head is the one merged."""
    parent, other = _sessions(store, 2)
    fork = store.fork(store.head(parent), new_id(), title="fork", created_at="2026-05-04T10:00:00Z")
    head = store.head(other)
    merged = {**head.header, "merged": [{"id": fork.id, "commit": fork.commit.decode()}]}
    store.commit(head, Change(header=merged), event="edit", subject="merged")
    rows = {r["id"]: r for r in cli.json("list")}
    assert rows[fork.id]["merged_into"] == other and rows[parent]["merged_into"] is None
    with sqlite3.connect(home / "index.sqlite") as db:
        query = "SELECT id, head, header FROM headers WHERE " + catalog._MERGING
        plan = " ".join(str(step[-1]) for step in db.execute("EXPLAIN QUERY PLAN " + query))
        assert [row[0] for row in db.execute(query)] == [other]
    assert "USING INDEX headers_merging" in plan
    store.commit(store.head(fork.id), Change(header={**fork.header, "title": "on"}), event="edit",
                 subject="went on")  # fmt: skip
    assert {r["id"]: r for r in cli.json("list")}[fork.id]["merged_into"] is None
