"""Hooks: the lifecycle hooks (`hooks.py`: $GITSESSIONS_HOME/hooks/<event>, JSON on
stdin, run after the commit they report) and the append-only audit log (`audit.py`),
what the home is told of each operation.

Owns: telling. Must never let a hook veto, delay past its timeout or lose anything,
and never rewrite an audit line. (The project's git hooks are the project's: `code/`.)
Uses: settings.
"""
