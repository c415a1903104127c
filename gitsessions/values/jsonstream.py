"""A JSON object read from a file member by member, one array member element by element.

`members(file, streamed=...)` yields `(key, value)` for each member of the top-level
object; the member named in `streamed` (an array) comes as an iterator of its elements,
which must be consumed before the next member is asked for. Memory holds one element
(plus a read-ahead of about a megabyte), not the document: an import of a session of
100,000 messages stays small. Errors are `ValueError`s (`json.JSONDecodeError` with a
line and column where the text says where).
"""

import json
from collections.abc import Iterator
from typing import IO, Any

READ = 1 << 20


class NotAnObject(ValueError):
    """The document is valid JSON but not an object."""


WHITESPACE = " \t\n\r"


class _Reader:
    def __init__(self, file: IO[str], decoder: json.JSONDecoder) -> None:
        self.file = file
        self.decoder = decoder
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.dropped_lines = 0

    def fill(self, at_least: int = READ) -> bool:
        if self.eof:
            return False
        data = self.file.read(max(READ, at_least))
        if not data:
            self.eof = True
            return False
        if self.pos > READ:  # drop what was read, keep line numbers right
            self.dropped_lines += self.buf.count("\n", 0, self.pos)
            self.buf, self.pos = self.buf[self.pos :], 0
        self.buf += data
        return True

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"Expecting {char!r}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as error:
                if self.fill(len(self.buf)):  # maybe cut off by the read-ahead: read on
                    continue
                raise self._moved(error) from None
            if end == len(self.buf) and self.fill():  # a number may go on: look again
                continue
            self.pos = end
            return value

    def fail(self, message: str) -> None:
        raise self._moved(json.JSONDecodeError(message, self.buf, self.pos))

    def _moved(self, error: json.JSONDecodeError) -> json.JSONDecodeError:
        """The error with its line counted from the start of the file."""
        return _at_line(error, self.dropped_lines) if self.dropped_lines else error


def _at_line(error: json.JSONDecodeError, dropped: int) -> json.JSONDecodeError:
    moved = json.JSONDecodeError(error.msg, error.doc, error.pos)
    moved.lineno += dropped
    moved.args = (f"{error.msg}: line {moved.lineno} column {moved.colno}",)
    return moved


def members(
    file: IO[str], *, streamed: str, decoder: json.JSONDecoder | None = None
) -> Iterator[tuple[str, Any]]:
    """`(key, value)` of each member of the object in `file`; see the module doc."""
    reader = _Reader(file, decoder or json.JSONDecoder())
    if reader.peek() != "{":
        reader.value()  # malformed JSON says so first
        raise NotAnObject("the document is not a JSON object")
    reader.expect("{")
    if reader.peek() == "}":
        reader.pos += 1
    else:
        while True:
            key = reader.value()
            if not isinstance(key, str):
                reader.fail("Expecting property name enclosed in double quotes")
            reader.expect(":")
            if key == streamed and reader.peek() == "[":
                elements = _elements(reader)
                yield key, elements
                for _ in elements:  # what the caller left unread
                    pass
            else:
                yield key, reader.value()
            if reader.peek() == ",":
                reader.pos += 1
                continue
            reader.expect("}")
            break
    if reader.peek() != "":
        reader.fail("Extra data")


def _elements(reader: _Reader) -> Iterator[Any]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        yield reader.value()
        if reader.peek() == ",":
            reader.pos += 1
            continue
        reader.expect("]")
        return
