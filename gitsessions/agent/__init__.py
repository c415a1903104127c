"""The agent: the turn loop (compact? -> model -> tools -> commit) and its assembly from
settings (assembly.py), shared by chat, exec and the ACP adapter.

Owns: a turn's order, what is saved when, approvals' "always" scope, which sessions the
session tools reach. Never: parses a command line, reads the environment, prints, or
imports typer or rich; notes for the user are handed back to the caller to print.
"""
