"""`gitsessions view`: the server's door (token, Host header, headers), each page kind,
escaping, paging and `--html`, in process over http.client against a real server on
127.0.0.1 (tests/test_view_browser.py loads the same pages in a real browser)."""

import http.client
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from dulwich.objects import Commit

from gitsessions.cli.state import State
from gitsessions.cli.view_cmd import source_of
from gitsessions.protocols.web import turn_page
from gitsessions.protocols.web.server import COOKIE, ViewServer
from gitsessions.services.sessions import merging
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import REPO, add_session, run_gitsessions
from tests.diff_helpers import turn
from tests.view_demo import HOSTILE, MARKER, build


class Served:
    """A view server over a demo store, in a thread of this process."""

    def __init__(self, home: Path, project: Path) -> None:
        self.state = State(home, dict(os.environ))
        self.server = ViewServer(source_of(self.state, project))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.host = f"127.0.0.1:{self.server.port}"

    def get(
        self, path: str, host: str | None = None, cookie: bool = True, method: str = "GET"
    ) -> tuple[int, dict[str, str], str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        headers = {"Host": host or self.host}
        if cookie:
            headers["Cookie"] = f"{self.server.cookie_name}={self.server.token}"
        connection.putrequest(method, path, skip_host=True)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders()
        answer = connection.getresponse()
        body = answer.read().decode()
        connection.close()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.state.close()


@pytest.fixture
def demo(home: Path, tmp_path: Path) -> Iterator[tuple[Served, dict[str, str]]]:
    ids = build(home, tmp_path / "project", hostile=True)
    served = Served(home, tmp_path / "project")
    yield served, ids
    served.close()


def test_the_token_is_the_one_way_in(demo):
    served, _ids = demo
    status, _h, body = served.get("/", cookie=False)
    assert status == 403 and body.startswith("forbidden: ") and body.count("\n") == 1
    status, _h, _b = served.get("/?token=wrong", cookie=False)
    assert status == 403
    status, headers, _b = served.get(f"/s/abc?token={served.server.token}&at=5", cookie=False)
    assert status == 303 and headers["location"] == "/s/abc?at=5"  # the token leaves the URL
    cookie = headers["set-cookie"]
    assert f"{COOKIE}_{served.server.port}={served.server.token}" in cookie  # this view's
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, _h, body = served.get("/")
    assert status == 200 and "<h1>Sessions</h1>" in body
    other = ViewServer(served.server.source)  # another view: its own cookie, its own token
    assert other.cookie_name != served.server.cookie_name and other.token != served.server.token
    other.server_close()
    status, _h, _b = served.get("/assets/view.css", cookie=False)
    assert status == 403  # the stylesheet too


@pytest.mark.parametrize(
    "host", ["evil.test", "evil.test:{port}", "127.0.0.1", "127.0.0.1:1", "localhost.evil:{port}"]
)
def test_a_host_header_not_the_servers_own_is_refused(demo, host):
    served, _ids = demo
    status, _h, body = served.get("/", host=host.format(port=served.server.port))
    assert status == 403 and "127.0.0.1" in body
    status, _h, _b = served.get("/", host=f"localhost:{served.server.port}")
    assert status == 200


def test_every_answer_carries_the_security_headers(demo):
    served, ids = demo
    for path in ["/", f"/s/{ids['main']}", "/nowhere", "/assets/view.css"]:
        _status, headers, _b = served.get(path)
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
    status, _h, _b = served.get("/", method="POST")
    assert status == 501  # only GET and HEAD
    status, _h, body = served.get("/?" + "&".join(f"k{n}=v" for n in range(40)))
    assert status == 400 and body == "bad request: too many query fields\n"
    status, _h, _b = served.get("/")
    assert status == 200  # and the server goes on
    status, headers, body = served.get("/", method="HEAD")
    assert status == 200 and body == "" and int(headers["content-length"]) > 0


def test_each_page_kind_shows_what_it_should(demo):
    served, ids = demo
    main, fork = ids["main"], ids["fork"]
    _s, _h, index = served.get("/")
    assert "fix the cart total" in index and "rewrite the total" in index
    assert f"fork of {main[:8]}" in index and f'href="/s/{main}"' in index
    _s, _h, page = served.get(f"/s/{main}")
    assert "<h2>Forks</h2>" in page and f'href="/s/{fork}"' in page  # the fork under it
    assert '<svg class="timeline"' in page
    assert f'href="/s/{main}/compaction/1"' in page and "5,200 → 1,400" in page
    assert "the cart total is off by one" in page and "<details>" in page  # outputs folded
    assert f'href="/s/{main}/turn/2"' in page and "compaction 1: 5200 -&gt; 1400" in page
    _s, _h, turn = served.get(f"/s/{main}/turn/2")
    assert "<h1>Turn 2</h1>" in turn and "fix it" in turn
    assert '<span class="add">+TOTAL = 1</span>' in turn  # the snapshot diff
    assert '<span class="del">-TOTAL = 0</span>' in turn
    _s, _h, compaction = served.get(f"/s/{main}/compaction/1")
    assert "<h1>Compaction 1</h1>" in compaction and "Goal: fix the cart total" in compaction
    _s, _h, forked = served.get(f"/s/{fork}")
    assert f'href="/s/{main}"' in forked and "forked at" in forked  # its parent, fork point
    _s, _h, hits = served.get("/?q=off+by+one")
    assert "<mark>off</mark>" in hits and f"/s/{fork}?at=0#m1" in hits  # forks share it
    assert f'href="/s/{main}">{main[:8]}</a>' in hits
    status, _h, missing = served.get(f"/s/{main}/turn/99")
    assert status == 404 and "has no turn 99" in missing
    status, _h, _b = served.get("/s/ffff")
    assert status == 404


def test_a_merged_fork_shows_where_it_was_joined(demo, home):
    served, ids = demo
    main, fork = ids["main"], ids["fork"]
    store = SessionStore(home)
    try:
        turn(store, store.head(fork), 3, "fork")  # a turn of its own, to join back
        assert merging.merge_chat(store, main, store.head(fork)).committed
    finally:
        store.close()
    _s, _h, page = served.get(f"/s/{main}")
    assert f"merged into {main[:8]}" in page  # the fork in the tree, marked
    assert f"joins {fork[:8]} at" in page  # the merge in the turns, as `log` says it
    _s, _h, forked = served.get(f"/s/{fork}")
    assert f"merged into {main[:8]}" not in forked.split("<h2>Forks</h2>")[0]


def test_what_a_session_holds_is_escaped_on_every_page(demo):
    served, ids = demo
    hostile = ids["hostile"]
    pages = ["/", f"/s/{hostile}", f"/s/{hostile}/turn/1", f"/s/{hostile}/turn/2",
             "/?q=textarea"]  # fmt: skip
    for path in pages:
        status, _h, body = served.get(path)
        assert status == 200, path
        assert "<script" not in body and "<img" not in body and "<iframe" not in body, path
        assert "&lt;script&gt;" in body, path
        assert not re.search(r"<[a-z]+[^<>]*\son\w+=", body), path  # no tag with a handler
    _s, _h, turn = served.get(f"/s/{hostile}/turn/2")
    assert "diff --git &quot;a/&lt;img src=x onerror=" in turn  # the changed file's name


class NoWalk(SessionStore):
    """A store whose history is never to be read (each page that would read it fails)."""

    def history(self, head: Head) -> Iterator[tuple[bytes, Commit]]:
        raise AssertionError("the history was walked")


def test_a_turn_past_the_last_is_none_without_walking_the_history(demo, home):
    """The transcript's last records name the last turn: a turn past it is answered from
    them (the history, up to `WALK` commits of it, is not read); one within still is."""
    served, ids = demo
    main = ids["main"]
    store = NoWalk(home)
    try:
        source = replace(served.server.source, store=lambda: store)
        assert turn_page.last_turn(store, store.head(main)) == 4
        for past in (5, 99, 10**9):
            with pytest.raises(InvalidInput, match=f"has no turn {past}$"):
                turn_page.render_turn(source, main, past)
        with pytest.raises(AssertionError, match="the history was walked"):
            turn_page.render_turn(source, main, 4)  # a turn of it: its commits are read
    finally:
        store.close()
    _s, _h, page = served.get(f"/s/{main}/turn/2")
    assert "<h1>Turn 2</h1>" in page


def test_a_long_session_is_read_a_page_at_a_time(home, tmp_path):
    """A page of a long session reads a bounded range: the transcript page, the
    timeline's sample and a page of the history, with links to the others; a turn with
    no commit of its own (an import's) is found by its records."""
    store = SessionStore(home)
    system = {"role": "system", "content": "s"}
    records = [{"message": system, "time": "2026-12-01T00:00:00.000Z"}]
    for n in range(1, 3000):
        turn = (n + 1) // 2
        message = {"role": "user" if n % 2 else "assistant", "content": f"message number {n}"}
        record = {"message": message, "time": f"2026-12-01T01:{n // 60 % 60:02}:{n % 60:02}.000Z",
                  "turn": turn, "step": 0 if n % 2 else 1}  # fmt: skip
        if not n % 2:
            record["usage"] = {"prompt_tokens": 10 * n, "completion_tokens": 1}
        records.append(record)
    meta = [{k: v for k, v in r.items() if k != "message"} for r in records]
    head = store.create(new_header(new_id(), "2026-12-01T09:00:00Z", title="long"),
                        Change(context=[system], append=[r["message"] for r in records],
                               append_meta=meta, as_recorded=True), event="import")  # fmt: skip
    store.close()
    served = Served(home, tmp_path)
    try:
        _s, _h, first = served.get(f"/s/{head.id}")
        assert "message number 99<" in first and "message number 100<" not in first
        assert f'href="/s/{head.id}?at=100"' in first and "?at=2900" in first
        assert "turns sampled evenly" in first
        assert 60 < first.count('<circle class="dot"') <= 120  # a sample, not every turn
        _s, _h, later = served.get(f"/s/{head.id}?at=2950")
        assert "message number 2900<" in later and "message number 2999<" in later
        assert "message number 2899<" not in later
        status, _h, turn = served.get(f"/s/{head.id}/turn/700")
        assert status == 200 and "<h1>Turn 700</h1>" in turn
        assert "message number 1399<" in turn and "message number 1400<" in turn
        assert "message number 1398<" not in turn and "message number 1401<" not in turn
        assert f"gitsessions diff {head.id}@turn:699" in turn  # no commits: the command
        status, _h, _b = served.get(f"/s/{head.id}/turn/1501")
        assert status == 404
    finally:
        served.close()


def test_html_writes_one_self_contained_page(home, tmp_path):
    ids = build(home, tmp_path / "project", hostile=True)
    out = tmp_path / "shared.html"
    done = run_gitsessions("view", ids["main"], "--html", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"wrote session {ids['main'][:8]} (17 messages)")
    page = out.read_text()
    assert "<style>" in page and "/assets/" not in page and "<script" not in page
    assert "script-src" not in page and "default-src 'none'" in page  # no script at all
    assert "the cart total is off by one" in page and '<svg class="timeline"' in page
    assert 'href="/' not in page  # no links to a server that is not there
    done = run_gitsessions("view", ids["hostile"], "--html", str(out), cwd=tmp_path)
    assert done.returncode == 0 and "&lt;script&gt;" in out.read_text()
    assert "<script" not in out.read_text() and MARKER in out.read_text()
    assert HOSTILE not in out.read_text()


def test_view_prints_its_url_opens_it_and_serves_until_stopped(home, tmp_path):
    """The process is the subject: its URL line, its token, the browser it opens
    (`$BROWSER`, as the webbrowser module reads it: here a script noting the URL)."""
    build(home, tmp_path / "project")
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    process = subprocess.Popen(
        [sys.executable, "-m", "gitsessions", "view", "--open"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=tmp_path / "project",
        env={**os.environ, "BROWSER": f"{browser} %s"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]{43})", url)
        assert match, url
        connection = http.client.HTTPConnection("127.0.0.1", int(match[1]), timeout=30)
        connection.request("GET", f"/?token={match[2]}")
        assert connection.getresponse().status == 303
        for _ in range(300):  # the browser is started as the URL is printed
            if opened.exists() and opened.read_text().strip():
                break
            time.sleep(0.1)
        assert opened.read_text().strip() == url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_taken_port_and_a_wrong_id_are_one_line(home, tmp_path):
    build(home, tmp_path / "project")
    served = Served(home, tmp_path)
    try:
        done = run_gitsessions("view", "--port", str(served.server.port), cwd=REPO)
        assert done.returncode != 0
        assert done.stderr.startswith(f"error: cannot serve on 127.0.0.1:{served.server.port}")
        assert done.stderr.count("\n") == 1
    finally:
        served.close()
    done = run_gitsessions("view", "abcdef", cwd=REPO)
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr


def test_the_turns_are_paged_from_a_commit(home, tmp_path):
    """The turns come `LOG_PAGE` commits a page; an older page starts at its commit."""
    store = SessionStore(home)
    head = add_session(store, turns=130, title="many turns")
    store.close()
    served = Served(home, tmp_path)
    try:
        _s, _h, first = served.get(f"/s/{head.id}")
        assert "turn 130: question 129" in first and "turn 81: question 80<" in first
        assert "turn 80: question 79<" not in first and ">newest<" not in first
        older = re.search(r'href="(/s/[0-9a-f]+\?log=[0-9a-f]{40})">older<', first)
        assert older, first[-2000:]
        _s, _h, second = served.get(older[1])
        assert "turn 80: question 79<" in second and "turn 31: question 30<" in second
        assert "turn 81: question 80<" not in second and "turn 30: question 29<" not in second
        assert ">newest<" in second
        older = re.search(r'href="(/s/[0-9a-f]+\?log=[0-9a-f]{40})">older<', second)
        assert older
        _s, _h, last = served.get(older[1])
        assert "turn 30: question 29<" in last and "turn 1: question 0<" in last
        assert ">older<" not in last
    finally:
        served.close()
