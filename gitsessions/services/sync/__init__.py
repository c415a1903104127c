"""Sync: sessions pushed to and pulled from git remotes."""
