"""Search's index brought up by a pull for the sessions new here, from what the pull
reads of them by stock git in batches (`store.arrival_texts`), written through the
index's own storage (`SearchIndex._store`, `_blob`): a search after the pull reads none
of them (`SearchIndex.read` stays 0).

Invariants:
- Written before the branches are made, as the listing cache is: the refs stay the
  truth (a session whose branch never came is dropped by the next search, one whose
  branch holds another commit is read again).
- Only a session read whole here is written: one with compactions (their file is not
  read here), an older format's head, or a transcript whose trees or chunks do not read
  here (or a chunk over `arrivals.CHUNK_BYTES`) is left to the search's own refresh.
- Reads what the pull did not (`arrivals.Reads`: it adds the trees it reads, and the
  first prompts' lines of each chunk it reads, which the pull's first prompts then take
  from it). A chunk already indexed is not read again; one batch is one IMMEDIATE
  transaction, a chunk's text in it whole or not at all (a savepoint).
"""

from __future__ import annotations

import json
import sqlite3

from gitsessions.services.sessions.search import SearchIndex, _writing
from gitsessions.store import arrival_texts, transport
from gitsessions.store.arrivals import Arrival, Reads
from gitsessions.store.cache import is_damage
from gitsessions.store.catalog import FIRST_LINES
from gitsessions.store.errors import StoreError
from gitsessions.store.formats import FORMAT, check_header
from gitsessions.store.sessions import SessionStore


def fill(store: SessionStore, batch: list[Arrival], env: transport.Env, reads: Reads) -> int:
    """Index those of `batch` (accepted arrivals, `store.arrivals`) that read whole here;
    how many it indexed. `reads`: what the pull read of the batch's transcripts, which
    this adds to (the trees, the first prompts' lines of each chunk read). An index file
    busy or found damaged is left to the search (which rebuilds a damaged one): the pull
    goes on."""
    index = SearchIndex(store)
    try:
        return _fill(index, batch, env, reads)
    except sqlite3.DatabaseError as error:
        if is_damage(error):
            index.path.unlink(missing_ok=True)
        return 0


def _fill(index: SearchIndex, batch: list[Arrival], env: transport.Env, reads: Reads) -> int:
    store = index.store
    heads = [a for a in batch if _plain(a)]
    if not heads:
        return 0
    tops = {a.id: a.top for a in heads if a.top is not None}
    found = arrival_texts.segments(store.git, tops, env, reads.trees)
    keep = {sha for a in heads for sha in _first_chunks(a, found.get(a.id))}
    with index._db() as db:
        db.isolation_level = None
        with _writing(db):
            built, expected = index._mode(db)
            if built not in (None, expected):  # built under other rules: refresh rebuilds
                return 0  # and compacts the file, which a pull's transaction cannot
            index._match_mode(db)
            shas = sorted({s.decode() for c in found.values() if c for _first, s in c})
            held = "SELECT sha FROM blobs WHERE sha IN (SELECT value FROM json_each(?))"
            known = {row[0] for row in db.execute(held, (json.dumps(shas),))}
            wanted = [sha.encode() for sha in shas if sha not in known]
            unread: set[bytes] = set()
            for run in arrival_texts.records(store.git, wanted, env, reads.firsts, keep):
                for sha, records in run:
                    if records is None:
                        unread.add(sha)
                        continue
                    db.execute("SAVEPOINT chunk")  # a chunk's text goes in whole or not
                    try:
                        index._blob(db, sha.decode(), [r["message"] for r in records])
                    except (StoreError, LookupError, TypeError, AttributeError, ValueError):
                        db.execute("ROLLBACK TO chunk")
                        unread.add(sha)  # its sessions are left to the search
                    db.execute("RELEASE chunk")
            done = 0
            for arrival in heads:
                assert arrival.header is not None
                chunks = found.get(arrival.id, [])  # no top: an empty transcript
                if chunks is None or any(sha in unread for _first, sha in chunks):
                    continue
                current = {first: sha.decode() for first, sha in chunks}
                index._store(db, arrival.id, arrival.commit, arrival.header, [], current)
                done += 1
    return done


def _first_chunks(arrival: Arrival, found: arrival_texts.Segments | None) -> list[bytes]:
    """The chunks holding the lines its first prompt is found in (`catalog.FIRST_LINES`)."""
    assert arrival.header is not None
    counts = arrival.header.get("counts")
    messages = counts.get("messages") if isinstance(counts, dict) else 0
    end = min(FIRST_LINES, messages if isinstance(messages, int) else 0)
    return [sha for first, sha in found or [] if first < end]


def _plain(arrival: Arrival) -> bool:
    """A session whose whole text this pull reads: this build's format, no compactions,
    its transcript's top read (or no messages)."""
    header = arrival.header
    if header is None or arrival.why is not None or check_header(header, arrival.id) != FORMAT:
        return False
    counts = header.get("counts")
    if not isinstance(counts, dict) or counts.get("compactions") != 0:
        return False
    return arrival.top is not None or counts.get("messages") == 0
