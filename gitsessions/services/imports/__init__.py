"""Imports: other agents' sessions (Claude Code, Codex CLI) brought into the store and
kept in step. A source file is read line by line (`lines.py`: one line in memory, a
damaged one reported with its number), its lines mapped to items by the format's reader
(`claude_code.py`, `codex.py`), the items assembled into OpenAI chat messages whose tool
calls and results pair (`assemble.py`), and those written to the session the source's
id names (`mirror.py`: batches of commits, compaction commits, only what is new on a
re-import; a rewritten or shortened source reported, not merged). `sources.py` finds
the default source files and tells the formats apart, `finished.py` whether a file is
finished (its end settles everything), `titles.py` a title from the first prompt typed,
`tool_names.py` tool names the API accepts.

Owns: reading those formats and writing what they hold as imported sessions. Must never
write to a source file, commit except through `sessions/writer.py` and the store's
redaction gate, or send anything to a model.
Uses: sessions (and the store).
"""
