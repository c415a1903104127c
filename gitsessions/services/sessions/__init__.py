"""Sessions: the operations on stored sessions. The one write path (`writer.py`),
rename/archive/fork/pin/gc (`manage.py`), export and import (`exchange.py`), the search
index (`search.py`), revisions and points in a history (`revisions.py`, `points.py`),
`diff` of two states (`session_diff.py`), `log` (`sessionlog.py`), `doctor` and its
repair (`doctor.py`), the chat's input history (`chat_history.py`).

Owns: every change to a session in the store, each through `writer.py` (lease,
compare-and-swap, one audit line). Must never commit around the writer, talk to the
model, touch the user's project, or reach a remote.
Uses: hooks (and the store).
"""
