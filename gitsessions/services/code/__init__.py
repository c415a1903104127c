"""Code: the user's project (snapshots, worktrees, rewind, code diff and sync)."""
