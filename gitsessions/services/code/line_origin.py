"""Why is this line here: a line of a project's file, the session turn that wrote it
(services/code/blame.py) and that turn's prompt, for the chat's `\\blame` and the MCP
server's `blame` tool.

Invariants:
- Read-only: the project's snapshots through blame (its cache in the home) and the
  session's transcript through the reader; nothing is written to a session.
- Only what the caller may see: `allowed` is the set of session ids the caller's scope
  holds; a turn of any other session is reported as a person's line would be, never
  named. With `inside` (the MCP server's folder) only a file of that project is read,
  links resolved, so the tool reads no file beyond the project.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitsessions.services.code.blame import Blame, blame, cache_dir, file_text, relative
from gitsessions.services.code.session_turns import last_turns
from gitsessions.services.code.snapshots import find_project
from gitsessions.store.errors import SessionNotFound
from gitsessions.store.reader import Head, SessionReader
from gitsessions.values.errors import InvalidInput

PROMPT_CHARS = 500


@dataclass(frozen=True)
class Origin:
    """A line and who wrote it: `session` None for a person (or a session out of
    scope)."""

    path: str
    line: int
    text: str
    session: str | None = None
    turn: int | None = None
    snapshot: str | None = None
    title: str = ""
    prompt: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "session": self.session,
            "turn": self.turn,
            "commit": self.snapshot,
            "title": self.title,
            "prompt": self.prompt,
            "show": f"gitsessions show {self.session}@turn:{self.turn}" if self.session else None,
        }


def blame_file(
    reader: SessionReader, env: Mapping[str, str], file: Path, inside: Path | None = None
) -> tuple[str, Blame]:
    """The project-relative path of `file` and its blame (the home's cache used); with
    `inside`, only a file of the project holding that folder (links resolved)."""
    file = file.absolute()
    project = find_project(file.parent, env)
    if inside is not None:
        own = find_project(inside, env)
        real = file.resolve()
        if own is None or project is None or not real.is_relative_to(own.root.resolve()):
            raise InvalidInput(f"{file}: only a file of this project can be blamed")
        project = own
    if project is None:
        raise InvalidInput(f"{file} is not in a git working tree: nothing to blame")
    if file.is_dir():
        raise InvalidInput(f"{file} is a directory: blame takes a file")
    path = relative(project, file)
    text, _ = file_text(project, env, path, None)
    cache = cache_dir(reader.home, project)
    return path, blame(project, env, path, text, None, cache, last_turn=last_turns(reader))


def line_origin(
    reader: SessionReader,
    env: Mapping[str, str],
    file: Path,
    line: int,
    allowed: set[str] | None = None,
    inside: Path | None = None,
) -> Origin:
    """Who wrote line `line` (1-based) of `file`, with the turn's title and prompt (see
    `blame_file` for `inside`)."""
    path, found = blame_file(reader, env, file, inside)
    if not 1 <= line <= len(found.lines):
        raise InvalidInput(f"{path} has {len(found.lines)} lines: no line {line}")
    at = found.lines[line - 1]
    by = at.by
    if by is None or (allowed is not None and by.session not in allowed):
        return Origin(path, line, at.text)
    title, prompt = "", ""
    try:
        head = reader.head(by.session)
        title = str(head.header.get("title") or head.header.get("summary") or "")
        prompt = turn_prompt(reader, head, by.turn)
    except SessionNotFound:
        pass  # its snapshots are here, the session is not (another home's)
    return Origin(path, line, at.text, by.session, by.turn, by.commit, title, prompt)


def turn_prompt(reader: SessionReader, head: Head, turn: int | None) -> str:
    """The first user message of `turn` in the transcript, cut to PROMPT_CHARS."""
    for _i, record in reader.iter_records(head):
        message = record.get("message") or {}
        if record.get("turn") == turn and message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else str(content)
            return text[:PROMPT_CHARS]
    return ""
