"""`python -m gitsessions`."""

from gitsessions.cli.app import main

main()
