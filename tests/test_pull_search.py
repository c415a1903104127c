"""A pull brings search's index up for the sessions it brings (issue 46): what it writes
is what a search builds from the store itself, and a search after it reads no session."""

import sqlite3
from pathlib import Path

from gitsessions.services.sessions.search import SLOTS, SearchIndex
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from tests.conftest import Cli
from tests.test_hostile_remote import bare
from tests.test_sync import make, results, summary


def _dump(home: Path) -> dict[str, list[tuple[object, ...]]]:
    """The index's rows, keyed by what they hold (not by the row ids a build picked)."""
    with sqlite3.connect(home / "search.sqlite") as db:
        q = {
            "meta": "SELECT * FROM meta",
            "labels": "SELECT text, session, idx, role FROM labels",
            "holds": "SELECT session, start, sha FROM holds JOIN blobs ON blobs.id = blob",
            "texts": f"SELECT sha, texts.rowid % {SLOTS}, text, role FROM texts"
            f" JOIN blobs ON blobs.id = texts.rowid / {SLOTS}",
        }
        return {name: sorted(db.execute(sql).fetchall()) for name, sql in q.items()}


def arriving_sessions(cli: Cli, tmp_path: Path) -> list[str]:
    """Five sessions on a remote `origin` of this home, pushed by another: one empty,
    three of two turns, one of 21 chunks (a transcript of two tree levels); their ids."""
    writer = tmp_path / "writer"
    arriving = [
        make(writer, turns=0, tag="empty"),
        *(make(writer, tag=f"t{n}") for n in range(3)),
        make(writer, turns=20, tag="long"),
    ]
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    return arriving


def test_a_search_after_a_pull_reads_no_session(cli: Cli, home: Path, tmp_path: Path) -> None:
    arriving = arriving_sessions(cli, tmp_path)
    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")
    pulled = _dump(home)
    assert {row[0] for row in pulled["meta"]} == set(arriving)
    store = SessionStore(home)
    try:
        index = SearchIndex(store)
        hits = index.search("long question 19")
        assert index.read == 0 and [(h.session, h.index) for h in hits] == [(arriving[-1], 39)]
        assert index.search("t1 answer") and index.read == 0
        assert _dump(home) == pulled
        (home / "search.sqlite").unlink()
        index.refresh()  # built anew from the store: the rows the pull wrote
        assert index.read == len(arriving) and _dump(home) == pulled
    finally:
        store.close()


def _compacted(home: Path) -> str:
    """A session with a compaction record (summary: `lexer moved`)."""
    sid = make(home, tag="compacted")
    store = SessionStore(home, background_maintenance=False)
    try:
        head = store.head(sid)
        record = {"time": now_iso(), "trigger": "manual", "stages": ["summarize"],
                  "before_tokens": 10, "after_tokens": 5, "cleared": [], "summarizer": None,
                  "summary": "Earlier: the user moved the lexer"}  # fmt: skip
        change = Change(header={**head.header, "updated_at": now_iso()}, compactions=[record])
        store.commit(head, change, event="compact", subject="compact")
        return sid
    finally:
        store.close()


def test_a_session_with_compactions_is_left_to_the_search(
    cli: Cli, home: Path, tmp_path: Path
) -> None:
    """Its compaction records are not read by the pull: the search reads it, and finds
    them."""
    writer = tmp_path / "writer"
    plain, compacted = make(writer, tag="plain"), _compacted(writer)
    origin = bare(tmp_path / "origin.git")
    cli("--home", str(writer), "remote", "add", "origin", str(origin))
    cli("--home", str(writer), "push", "--all")
    cli("remote", "add", "origin", str(origin))
    assert results(summary(cli, home, "pull")) == {plain: "created", compacted: "created"}
    assert {row[0] for row in _dump(home)["meta"]} == {plain}
    store = SessionStore(home)
    try:
        index = SearchIndex(store)
        assert [h.session for h in index.search("lexer moved")] == [compacted]
        assert index.read == 1
    finally:
        store.close()
