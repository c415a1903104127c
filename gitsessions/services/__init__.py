"""Compaction, tools, the model client, search, audit, import/export."""
