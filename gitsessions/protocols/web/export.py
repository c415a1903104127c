"""`view --html FILE`: one session as one self-contained page to share: its stylesheet
inline, no script (a Content-Security-Policy in the page allows none), no links out;
the secrets are redacted as the store holds them (nothing is read but the store).

Invariant: the page is written as it is read (the transcript a record at a time, the
timeline's points first, one small record a turn), so a long session costs bounded
memory; the file is written beside its name and renamed into place when whole.
"""

import os
from pathlib import Path

from gitsessions.protocols.web import timeline
from gitsessions.protocols.web.markup import CLOSING, e, opening, table
from gitsessions.protocols.web.server import stylesheet
from gitsessions.protocols.web.session_page import facts, log_rows, tree
from gitsessions.protocols.web.source import Source
from gitsessions.protocols.web.transcript import message_html
from gitsessions.services.sessions import sessionlog
from gitsessions.values.plural import plural
from gitsessions.values.records import label


def write_html(source: Source, text: str, path: Path) -> tuple[str, int]:
    """Write session `text` to `path`; (its id, how many messages it holds)."""
    store = source.store()
    head = store.head(store.resolve(text))
    total = head.counts.get("messages", 0)
    css = stylesheet().decode("utf-8")
    drawn, _turns = timeline.chart(store, head, store.iter_records(head), links=False)
    entries = sessionlog.turns(store, head, sessionlog.commits(store, head))
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("w", encoding="utf-8") as out:
        out.write(opening(f"{label(head.header)} · gitsessions", css))
        out.write(f"<h1>{e(label(head.header))}</h1>{facts(head)}")
        out.write("<h2>Forks</h2>" + tree(head, source.rows(True), False))
        if drawn:
            out.write(f'<h2>Context</h2><div class="chart">{drawn}</div>')
        counted = plural(total, "message")
        out.write(f'<h2 id="transcript">Transcript <span class="dim">{counted}</span></h2>')
        where = f"gitsessions show {head.id}"
        for index, record in store.iter_records(head):
            out.write(message_html(index, record, where))
        out.write('<h2 id="turns">Turns</h2>')
        out.write(
            table(["commit", "time", "event", "subject", "detail"], log_rows(head, entries, False))
        )
        out.write(CLOSING)
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    return head.id, total
