"""`gitsessions search` and the search index cache."""

import json
import sqlite3
import threading

from gitsessions.services.sessions import manage
from gitsessions.services.sessions.manage import fork
from gitsessions.services.sessions.search import SearchIndex
from gitsessions.store.sessions import Change, Head
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header


def test_search_finds_messages_titles_and_respects_archive(cli, make_session, store):
    a = make_session(turns=3, title="parser work", tag="tokenizer_bug")
    b = make_session(turns=1, title="other", tag="nothing here")
    hits = cli.json("search", "TOKENIZER_BUG")
    assert {h["session"] for h in hits} == {a.id}
    assert sorted(h["index"] for h in hits) == [1, 2, 3, 4, 5, 6]
    assert all("tokenizer_bug" in h["snippet"] for h in hits)
    assert [h["role"] for h in cli.json("search", "parser")] == ["title"]
    cli("archive", a.id)
    assert cli.json("search", "tokenizer_bug") == []
    assert len(cli.json("search", "tokenizer_bug", "--include-archived")) == 6
    assert b.id[:8] in cli("search", "nothing").stdout
    assert "no matches" in cli("search", "zzzzqqq").stderr


def test_short_queries_and_special_characters(cli, store, make_session):
    head = make_session(turns=0)
    store.commit(
        head,
        Change(
            append=[
                {"role": "user", "content": 'run "pytest -k x%_y" in a/b.py'},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "run_shell", "arguments": '{"command": "ls"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "ok"},
            ]
        ),
        event="turn",
        subject="t",
    )
    assert [h["index"] for h in cli.json("search", '"pytest -k x%_y"')] == [1]
    assert [h["index"] for h in cli.json("search", "x%")] == [1]
    assert [h["index"] for h in cli.json("search", "run_shell")] == [2]
    assert cli.json("search", "%%") == []


def test_index_is_incremental_and_follows_refs(store, make_session):
    head = make_session(turns=2, tag="alpha")
    index = SearchIndex(store)
    assert len(index.search("alpha")) == 4
    head = store.commit(
        head, Change(append=[{"role": "user", "content": "beta"}]), event="turn", subject="t"
    )
    assert [h.index for h in index.search("beta")] == [5]
    assert len(index.search("alpha")) == 4  # earlier messages indexed once, not twice
    store.delete(head)
    assert index.search("alpha") == [] and index.search("beta") == []


def test_delete_removes_text_from_index_file(cli, make_session, home):
    head = make_session(turns=2, tag="wipe-me-8d7e")
    make_session(turns=1, tag="stays")
    assert cli.json("search", "wipe-me-8d7e")
    cli("delete", head.id, "--yes")
    for name in ("search.sqlite", "index.sqlite"):
        assert b"wipe-me-8d7e" not in (home / name).read_bytes()
    assert cli.json("search", "stays")


def test_broken_cache_is_rebuilt(cli, make_session, home):
    make_session(turns=1, tag="rebuild")
    cli.json("search", "rebuild")
    (home / "search.sqlite").write_bytes(b"garbage" * 100)
    assert len(cli.json("search", "rebuild")) == 2


def test_delete_with_a_broken_search_cache(cli, make_session, home):
    head = make_session(turns=1, tag="gone")
    cli.json("search", "gone")
    (home / "search.sqlite").write_bytes(b"not a database")
    (home / "index.sqlite").write_bytes(b"not a database either")
    cli("delete", head.id, "--yes")
    assert cli.json("search", "gone") == [] and cli.json("list") == []


def _long_session(store, messages: int, tag: str) -> Head:
    """A session of `messages` messages of ~1 KB each, committed at once."""
    sid = new_id()
    system = {"role": "system", "content": "You are a helpful coding agent."}
    head = store.create(new_header(sid, now_iso()), Change(context=[system], append=[system]))
    body = [
        {"role": "user" if n % 2 else "assistant", "content": f"{tag} {n} " + "lorem ipsum " * 80}
        for n in range(messages)
    ]
    return store.commit(head, Change(append=body), event="import", subject="import")


def test_forks_share_the_index(store):
    parent = _long_session(store, 700, "shared")
    index = SearchIndex(store)
    assert len(index.search("shared 699 ")) == 1
    before = index.path.stat().st_size
    forks = [fork(store, parent.id, title=f"fork {n}") for n in range(5)]
    (hit,) = index.search("shared 699 ")  # one hit, naming every session holding it
    assert sorted(hit.holders) == sorted([parent.id] + [f.id for f in forks])
    assert hit.index == 700 and hit.session == hit.holders[0]
    grown = index.path.stat().st_size - before
    assert grown < 5 * 10_000, grown  # a fork adds under 10 KB, not a copy of its text
    assert [h.session for h in index.search("fork 3")] == [forks[3].id]


def test_segments_are_stored_once_and_unheld_text_goes(store, make_session):
    parent = make_session(turns=2, tag="first")
    child = fork(store, parent.id)
    index = SearchIndex(store)
    index.refresh()
    for head, word in ((store.head(parent.id), "parentword"), (store.head(child.id), "childword")):
        store.commit(
            head, Change(append=[{"role": "user", "content": word}]), event="turn", subject="t"
        )
    assert [h.session for h in index.search("parentword")] == [parent.id]
    assert [(h.session, h.index) for h in index.search("childword")] == [(child.id, 5)]
    first = index.search("first")  # 4 messages, each in both sessions: 4 hits
    assert len(first) == 4 and all(set(h.holders) == {parent.id, child.id} for h in first)
    with sqlite3.connect(index.path) as db:
        (stored,) = db.execute("SELECT count(*) FROM texts").fetchone()
    assert stored == 4 + 1 + 1  # 4 shared lines once (no system prompt); each new line once
    manage.delete(store, parent.id)
    assert index.search("parentword") == [] and len(index.search("first")) == 4


def test_a_message_forks_share_is_one_hit_naming_them(cli, store, make_session):
    parent = make_session(turns=1, title="parent", tag="sharedword")
    forks = [fork(store, parent.id, title=f"fork {n}") for n in range(2)]
    everyone = {parent.id, *(f.id for f in forks)}
    hits = [h for h in cli.json("search", "sharedword") if h["role"] == "user"]
    assert len(hits) == 1, hits  # once, not once per session
    assert set(hits[0]["sessions"]) == everyone and hits[0]["session"] == hits[0]["sessions"][0]
    rows = [r.split("\t") for r in cli("search", "sharedword").stdout.splitlines()]
    user = [r for r in rows if r[2] == "user"]
    assert len(user) == 1 and set(user[0][5].split(",")) == everyone
    assert [h["sessions"] for h in cli.json("search", "fork 1")] == [[forks[1].id]]


def test_a_refresh_reads_only_the_sessions_whose_head_moved(store, make_session):
    first = make_session(turns=2, tag="alpha")
    make_session(turns=1, tag="other")
    index = SearchIndex(store)
    index.refresh()
    assert index.read == 2
    index.refresh()
    assert index.read == 0
    turn = Change(append=[{"role": "user", "content": "gamma"}])
    store.commit(first, turn, event="turn", subject="t")
    assert [h.index for h in index.search("gamma")] == [5] and index.read == 1
    new = make_session(turns=1, tag="delta")
    assert len(index.search("delta")) == 2 and index.read == 1
    assert {h.session for h in index.search("alpha")} == {first.id} and new.id


def test_an_index_found_damaged_in_use_is_rebuilt_without_a_word(cli, make_session, home):
    make_session(turns=1, tag="mended")
    assert len(cli.json("search", "mended")) == 2
    path = home / "search.sqlite"
    with sqlite3.connect(path) as db:
        (size,) = db.execute("PRAGMA page_size").fetchone()
        (page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()
    data = bytearray(path.read_bytes())
    data[(page - 1) * size : page * size] = b"\x0d" * size  # the table's page: garbage
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as db:  # the file opens; reading the table fails
        db.execute("PRAGMA user_version").fetchone()
    result = cli("search", "mended", "--json")
    assert len(json.loads(result.stdout)) == 2 and result.stderr == ""


def test_refreshes_at_once_take_turns_and_leave_one_index(store, make_session, home):
    made = {make_session(turns=1, title=f"shared {n}", tag="both").id for n in range(12)}
    indexes = [SearchIndex(store) for _ in range(3)]
    failed: list[BaseException] = []

    def refresh(index: SearchIndex) -> None:
        try:
            index.refresh()
        except BaseException as error:
            failed.append(error)

    threads = [threading.Thread(target=refresh, args=(index,)) for index in indexes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert sum(index.read for index in indexes) >= len(made)  # each read by one at least
    with sqlite3.connect(home / "search.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*), count(DISTINCT session) FROM meta").fetchone() == (
            12,
            12,
        )
        assert db.execute("SELECT count(*) FROM labelled").fetchone() == (12,)
    hits = indexes[0].search("shared", limit=100)
    assert sorted(h.session for h in hits) == sorted(made) and indexes[0].read == 0


def test_sessions_sharing_a_transcript_read_its_chunks_once(store, make_session):
    parent = make_session(turns=2, tag="shared")
    child = fork(store, parent.id)
    known: dict[bytes, list[tuple[int, bytes]]] = {}
    first = store.segments(store.head(parent.id), known)
    assert store.segments(store.head(child.id), known) == first and len(known) == 1
    index = SearchIndex(store)
    index.refresh()
    assert index.read == 2 and len(index._tops) == 1
