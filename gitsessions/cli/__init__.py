"""The typer application: the only layer that prints or reads the environment."""
