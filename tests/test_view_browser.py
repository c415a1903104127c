"""`gitsessions view` in a real browser: headless Chromium (Debian's `chromium`, which
.ci/run installs) loads each page kind through the URL's token and dumps the DOM after
its scripts would have run; a session's payloads never add their marker, the token and
Host checks hold (a DNS-rebound name is refused), and a screenshot is taken of each page.
The server runs in this process (tests/test_view.py's); the browser is the subject."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_view import Served
from tests.view_demo import HOSTILE, MARKER, build

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Chromium: apt-get install chromium"
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]  # fmt: skip


def chromium(profile: Path, url: str, *args: str) -> str:
    """The DOM Chromium built from `url` (its scripts run), or "" with --screenshot."""
    done = subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def demo(home: Path, tmp_path: Path) -> Iterator[tuple[Served, dict[str, str]]]:
    ids = build(home, tmp_path / "project", hostile=True)
    served = Served(home, tmp_path / "project")
    yield served, ids
    served.close()


def test_each_page_kind_loads_in_the_browser(demo, tmp_path):
    served, ids = demo
    main, token = ids["main"], served.server.token
    base = f"http://127.0.0.1:{served.server.port}"
    pages = {
        "/": ["fix the cart total", "rewrite the total", f"fork of {main[:8]}"],
        f"/s/{main}": ["the cart total is off by one", "<svg", "5,200 → 1,400", "Turns"],
        f"/s/{main}/turn/2": ["Turn 2", '<span class="add">+TOTAL = 1</span>'],
        f"/s/{main}/compaction/1": ["Compaction 1", "Goal: fix the cart total"],
    }
    for path, shown in pages.items():
        dom = chromium(tmp_path / "profile", f"{base}{path}?token={token}", "--dump-dom")
        for text in shown:
            assert text in dom, (path, text)
        assert "forbidden" not in dom
    shot = tmp_path / "index.png"
    chromium(tmp_path / "profile", f"{base}/?token={token}", f"--screenshot={shot}",
             "--window-size=1200,900")  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_script_from_a_session_never_runs(demo, tmp_path):
    served, ids = demo
    raw = tmp_path / "raw.html"  # the control: unescaped, in a page of no policy, they run
    raw.write_text(f"<!DOCTYPE html><html><body><p>{HOSTILE}</p></body></html>")
    assert f"<{MARKER}" in chromium(tmp_path / "profile", raw.as_uri(), "--dump-dom")
    hostile, token = ids["hostile"], served.server.token
    base = f"http://127.0.0.1:{served.server.port}"
    for path in ["/", f"/s/{hostile}", f"/s/{hostile}/turn/1", f"/s/{hostile}/turn/2",
                 "/?q=textarea"]:  # fmt: skip
        query = "&" if "?" in path else "?"
        dom = chromium(tmp_path / "profile", f"{base}{path}{query}token={token}", "--dump-dom")
        assert f"<{MARKER}" not in dom, path  # no payload ran
        assert "&lt;script&gt;" in dom, path  # each shown as text
        assert "<iframe" not in dom and "<img" not in dom, path


def test_the_browser_needs_the_token_and_the_servers_own_name(demo, tmp_path):
    served, ids = demo
    port, token = served.server.port, served.server.token
    dom = chromium(tmp_path / "p1", f"http://127.0.0.1:{port}/s/{ids['main']}", "--dump-dom")
    assert "forbidden: no token" in dom and "fix the cart total" not in dom
    dom = chromium(tmp_path / "p2", f"http://127.0.0.1:{port}/?token=nope", "--dump-dom")
    assert "forbidden: wrong token" in dom
    # DNS rebinding: a name that resolves to 127.0.0.1, with the right token even
    rebound = "--host-resolver-rules=MAP evil.test 127.0.0.1"
    dom = chromium(tmp_path / "p3", f"http://evil.test:{port}/?token={token}", rebound,
                   "--dump-dom")  # fmt: skip
    assert "forbidden: this server answers only to 127.0.0.1" in dom
    assert "Sessions" not in dom
    dom = chromium(tmp_path / "p4", f"http://localhost:{port}/?token={token}", "--dump-dom")
    assert "fix the cart total" in dom
