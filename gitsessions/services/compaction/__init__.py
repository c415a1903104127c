"""Compaction: the pure engine (`compaction.py`: clear old tool outputs, then
summarize), its policy and errors (`compaction_policy.py`: all a turn imports until a
context nears its budget), the summary request and the continuation note
(`continuation.py`), the ledger of what was compacted (`ledger.py`), and the run on a
stored session recorded as one commit (`compactor.py`).

Owns: rewriting the working context. Must never touch the transcript (nothing rewrites
it), drop a pinned note, or commit except through `sessions/writer.py`.
Uses: sessions, model, hooks.
"""
