"""Everything with a job but no UI, one package per capability, each using only the
packages below it (tests/test_layering.py checks the order):

    sync/         push, pull, tombstones, the secret scan before anything leaves
    code/         the user's project: snapshots, worktrees, rewind, code diff and sync
    compaction/   policy, clearing, the summary request, the continuation note, ledger
    sessions/     the one writer, manage, export/import, search, diff, revisions, doctor
    model/        the model client, endpoint probe, pricing
    hooks/        lifecycle hooks, the audit log
    settings/     config.toml, flags and environment, per-session settings
    tools/        the agent's tools

Each package's `__init__.py` says what it owns and what it must never do, and imports
nothing (importing a module of a package runs its `__init__.py`).
"""
