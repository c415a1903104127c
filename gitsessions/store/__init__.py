"""Sessions on dulwich: read, commit, fork, list, delete, purge."""
