"""Everything with a job but no UI, one package per capability, each using only the
packages on lower floors (tests/test_layering.py `SERVICE_FLOORS`): sync/ (push, pull,
tombstones, the scan before anything leaves); code/ (the user's project), compaction/,
imports/ (other agents' sessions); sessions/ (the one writer and the operations on
stored sessions); hooks/ (lifecycle hooks, audit log), model/ (the model client);
settings/, tools/ (the agent's tools).

Each package's `__init__.py` says what it owns and what it must never do, and imports
nothing (importing a module of a package runs its `__init__.py`; tools/ aside).
"""
