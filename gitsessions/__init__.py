"""gitsessions: a coding agent whose sessions live in git."""
