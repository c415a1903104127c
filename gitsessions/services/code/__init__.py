"""Code: the user's project. Code snapshots (`snapshots.py`; their tree `capture.py`,
taken by `snapshotter.py`), fork worktrees and their marks (`worktrees.py`,
`worktree_mark.py`), `rewind` (`rewind.py`), `snapshot restore`
(`restore.py`), `diff --code` (`code_diff.py`), `push/pull --code` (`code_sync.py`), the
project's git hooks (`git_hooks.py`), the project's git facts (`workspace.py`), a
session's delete with
what it left in the project (`delete.py`), and every git command run on the project
(`projectgit.py`).

Owns: everything gitsessions does to the user's repository. Must never change the
user's HEAD, index, stash or files except through rewind and snapshot restore (and the
hooks it is asked to install, each chained to the user's), and runs git only through
`projectgit.py`, with
the project's command-running config off (fsmonitor, hooks, filters, signing, pager).
Uses: sessions, hooks, settings.
"""
