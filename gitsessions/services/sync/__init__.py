"""Sync: sessions pushed to and pulled from git remotes (`push.py`, `pull.py`; a pull's
forks `forks.py`; what both report `report.py`; the remotes `remotes.py`), deleted ids
merged and forwarded (tombstones, `deletions.py`), and the secret scan of everything a
push sends (`push_scan.py`); `--code` hands the project's snapshot refs to
`code/code_sync.py`.

Owns: what leaves this home and what arrives in it. Must never force a ref, move a
session whose lease is held, send anything the scan has not passed, create a session
deleted on either side, or commit a fork except through `sessions/writer.py`.
Uses: code, sessions (and the store). Nothing below imports it.
"""
