"""Text from sessions and errors prints as itself (issue 42, item 10): on a real
terminal (a pty), a title's `:x:` stays `:x:` (rich would make it an emoji) and its
`[bold]` stays `[bold]`, in `list`, `info` and an error quoting what was typed; a remote
URL Python cannot split (`https://[::1`) is one line, not a traceback; a session's
recorded endpoint that is no URL at all is only named in the resume's note."""

import os
import sys
from pathlib import Path

import pexpect

from gitsessions.services.settings.config import resolve_model_settings, with_session_settings
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import REPO

TITLE = "deploy :x: [bold]now[/bold] :smile:"


def _on_a_terminal(*args: str) -> str:
    child = pexpect.spawn(
        sys.executable, ["-m", "gitsessions", *args], env=dict(os.environ, TERM="xterm"),
        encoding="utf-8", timeout=60, cwd=str(REPO), dimensions=(40, 200),
    )  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    return child.before


def test_a_title_and_an_error_print_their_emoji_codes_and_brackets_as_typed(home: Path):
    store = SessionStore(home, background_maintenance=False)
    try:
        sid = new_id()
        msgs = [{"role": "user", "content": "hi :thumbs_up:"}]
        store.create(new_header(sid, now_iso(), title=TITLE), Change(context=msgs, append=msgs))
    finally:
        store.close()
    for args in (["list"], ["info", sid[:8]]):
        shown = _on_a_terminal(*args)
        assert ":x:" in shown and "[bold]now[/bold]" in shown and ":smile:" in shown, shown
        assert "\u274c" not in shown and "\U0001f604" not in shown
    shown = _on_a_terminal("info", ":x:")
    assert "':x:'" in shown and "\u274c" not in shown, shown


def test_a_remote_url_python_cannot_split_is_one_line(cli):
    for url in ("https://[::1", "https://tok3n@[::1/x", "ssh://h:99999/x"):
        done = cli("remote", "add", "r", url, code=2)
        assert done.stderr.startswith("error: invalid remote URL"), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "tok3n" not in done.stderr
    assert cli("remote", "list").stdout == ""


def test_a_recorded_endpoint_that_is_no_url_is_only_named():
    settings = resolve_model_settings({}, {}, {})
    for recorded in ("http://[::1", {"nested": 1}, "http://h:99999/v1"):
        ran, note = with_session_settings(settings, {"base_url": recorded}, "abcd")
        assert ran.base_url == settings.base_url
        assert note is not None and "was made against another model server" in note
