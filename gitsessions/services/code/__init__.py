"""Code: the user's project. Snapshots (`snapshots.py`, `capture.py`, `snapshotter.py`),
worktree forks and their marks (`worktrees.py`, `worktree_mark.py`), `rewind`,
`snapshot restore`, `diff --code`, `push/pull --code` (`code_sync.py`), the project's git
hooks, its git facts (`workspace.py`), what a delete leaves there (`delete.py`).

Owns: everything gitsessions does to the user's repository. Must never change the user's
HEAD, index, stash or files except through rewind and snapshot restore (and the hooks it
is asked to install, chained to the user's), and runs git only through `projectgit.py`,
the project's command-running config off.
Uses: sessions, hooks, settings.
"""
