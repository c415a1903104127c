"""The typer application: commands parse their arguments, call the agent, a service or
a protocol adapter, and print with rich; the only layer that prints or reads the
environment."""
