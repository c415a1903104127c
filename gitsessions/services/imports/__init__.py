"""Imports: other agents' sessions (Claude Code, Codex CLI) brought into the store and kept
in step: a source read a line at a time (`lines.py`), its lines mapped to items by the
format's reader (`claude_code.py`, `codex.py`), the items assembled into chat messages
that pair (`assemble.py`), written to the session the source's id names (`mirror.py`).

Owns: reading those formats and writing what they hold as imported sessions. Must never
write to a source file, commit except through `sessions/writer.py` and the store's
redaction gate, or send anything to a model.
Uses: sessions (and the store).
"""
