"""Compaction: the engine, its policy, the summary request, the ledger."""
