"""The root of every error gitsessions raises on purpose.

Each layer defines its specific errors next to the code that raises them, as subclasses
of `GitsessionsError`. The CLI catches `GitsessionsError` once and prints `str(error)` as a
single line with exit code `error.exit_code`; anything else is a bug and shows a traceback.
"""


class GitsessionsError(Exception):
    """An expected failure with a one-line, user-facing message."""

    exit_code: int = 1

    def __str__(self) -> str:
        text = super().__str__()
        return " ".join(text.split()) if text else type(self).__name__


class InvalidInput(GitsessionsError):
    """User-supplied input (an id, a title, a file) is malformed."""


class BadUsage(InvalidInput):
    """The command line itself is wrong (an id too short, flags that exclude each other,
    a missing confirmation): exit code 2, like a usage error."""

    exit_code = 2
