"""`python -m gitsessions`."""

from gitsessions.cli.entry import main

main()
