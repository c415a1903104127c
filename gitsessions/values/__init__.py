"""Pure values: messages, records, ids, canonical JSON, token counting, errors.

Nothing here touches the disk, the network or the environment.
"""
