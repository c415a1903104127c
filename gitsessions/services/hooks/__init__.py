"""Hooks: lifecycle hooks and the audit log."""
