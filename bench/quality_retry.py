"""Planted-fact session 3 of bench/compaction_quality.py: an HTTP client library that
ignores a Retry-After given as a date, with the user's constraints given along the way."""

from bench.quality_scoring import Fact
from bench.quality_sessions import Planted, Script, diff_text, numbered, shell

RETRY_PY = '''\
"""Retries for fetchkit.fetch: which answers are retried and how long to wait."""

import logging
import random
import time
from datetime import datetime

from fetchkit.defaults import DEFAULTS

log = logging.getLogger("fetchkit.retry")
RETRY_STATUSES = frozenset(DEFAULTS["retry_statuses"])


def wait_for(attempt, response):
    """Seconds to wait before retry number `attempt` (1-based)."""
    header = response.headers.get("Retry-After")
    if header is not None:
        if header.isdigit():
            return float(header)
        when = datetime.strptime(header, "%a, %d %b %Y %H:%M:%S GMT")
        return (when - datetime.now()).total_seconds()
    delay = DEFAULTS["backoff_base"] * 2 ** (attempt - 1)
    return delay + random.random()


def with_retries(send, request, retries):
    for attempt in range(1, retries + 2):
        response = send(request)
        if response.status not in RETRY_STATUSES or attempt > retries:
            return response
        delay = wait_for(attempt, response)
        log.info("retrying %s in %.1fs (status %d)", request.url, delay, response.status)
        time.sleep(delay)
    return response
'''

DEFAULTS_PY = '''\
"""Library defaults. Users override them per call; never read from the environment."""

DEFAULTS = {
    "timeout": 10.0,
    "retry_statuses": (429, 503),
    "backoff_base": 0.25,        # seconds, doubled per attempt
    "max_total_wait": 300,       # seconds, all retries of one fetch together
    "user_agent": "fetchkit",
}
'''

TEST_RETRY_PY = """\
import pytest

from fetchkit.retry import wait_for, with_retries
from tests.fakes import FakeResponse, Recorder


def test_seconds_header_is_used_as_is():
    assert wait_for(1, FakeResponse(503, {"Retry-After": "7"})) == 7


def test_backoff_doubles():
    first = wait_for(1, FakeResponse(503, {}))
    third = wait_for(3, FakeResponse(503, {}))
    assert third > first


def test_retry_after_http_date_is_honoured(monkeypatch):
    monkeypatch.setattr("fetchkit.retry.now", lambda: FROZEN)
    response = FakeResponse(429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert wait_for(1, response) == 42


def test_gives_up_after_retries():
    send = Recorder([FakeResponse(503, {"Retry-After": "0"})] * 5)
    assert with_retries(send, object(), retries=3).status == 503
    assert send.calls == 4
"""

FETCH_PY = '''\
"""fetchkit's one public entry point."""

from fetchkit.retry import with_retries
from fetchkit.transport import Request, send


def fetch(url, *, retries=3):
    """GET `url`; answers 429 and 503 are retried up to `retries` times."""
    return with_retries(send, Request("GET", url), retries)
'''

TYPEERROR = """\
..F.                                                                     [100%]
=================================== FAILURES ===================================
____________________ test_retry_after_http_date_is_honoured ____________________

    def wait_for(attempt, response, clock):
        header = response.headers.get("Retry-After")
        if header is not None:
            if header.isdigit():
                return float(header)
            when = parsedate_to_datetime(header)
>           return (when - clock.now()).total_seconds()
E           TypeError: can't subtract offset-naive and offset-aware datetimes

fetchkit/retry.py:24: TypeError
=========================== short test summary info ============================
FAILED tests/test_retry.py::test_retry_after_http_date_is_honoured - TypeError: can't \
subtract offset-naive and offset-aware datetimes
1 failed, 3 passed in 0.09s"""

FAKES_PY = '''\
"""Test doubles for fetchkit: answers, a recording sender, a clock that never sleeps."""

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class FakeResponse:
    status: int
    headers: dict
    body: bytes = b""


@dataclass
class Recorder:
    """Sends nothing: answers with the given responses in turn and counts the calls."""

    responses: list
    calls: int = 0

    def __call__(self, request):
        self.calls += 1
        return self.responses[min(self.calls, len(self.responses)) - 1]


@dataclass
class FakeClock:
    """now() is fixed until sleep() moves it; sleeping only records the seconds."""

    at: datetime = field(default_factory=lambda: datetime(2015, 10, 21, 7, 0, 0))
    slept: list = field(default_factory=list)

    def now(self):
        return self.at

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.at = self.at + timedelta(seconds=seconds)
'''

LOOP_DIFF = """\
diff --git a/fetchkit/retry.py b/fetchkit/retry.py
index 41d2c9a..f3b7e10 100644
--- a/fetchkit/retry.py
+++ b/fetchkit/retry.py
@@ -1,37 +1,40 @@
 \"\"\"Retries for fetchkit.fetch: which answers are retried and how long to wait.\"\"\"

 import logging
 import random
-import time
-from datetime import datetime
+from email.utils import parsedate_to_datetime

+from fetchkit.clock import MonotonicClock
 from fetchkit.defaults import DEFAULTS

 log = logging.getLogger("fetchkit.retry")
 RETRY_STATUSES = frozenset(DEFAULTS["retry_statuses"])
+MAX_RETRY_AFTER = 120.0


-def wait_for(attempt, response):
+def wait_for(attempt, response, clock):
     \"\"\"Seconds to wait before retry number `attempt` (1-based).\"\"\"
     header = response.headers.get("Retry-After")
     if header is not None:
         if header.isdigit():
-            return float(header)
-        when = datetime.strptime(header, "%a, %d %b %Y %H:%M:%S GMT")
-        return (when - datetime.now()).total_seconds()
+            return min(float(header), MAX_RETRY_AFTER)
+        when = parsedate_to_datetime(header)
+        seconds = (when - clock.now()).total_seconds()
+        return min(max(seconds, 0.0), MAX_RETRY_AFTER)
     delay = DEFAULTS["backoff_base"] * 2 ** (attempt - 1)
-    return delay + random.random()
+    return random.uniform(0, delay)  # full jitter


-def with_retries(send, request, retries):
+def with_retries(send, request, retries, clock=None):
+    clock = clock or MonotonicClock()
     for attempt in range(1, retries + 2):
         response = send(request)
         if response.status not in RETRY_STATUSES or attempt > retries:
             return response
-        delay = wait_for(attempt, response)
-        log.info("retrying %s in %.1fs (status %d)", request.url, delay, response.status)
-        time.sleep(delay)
+        delay = wait_for(attempt, response, clock)
+        url = request.url.split("?", 1)[0]
+        log.info("retrying %s in %.1fs (status %d)", url, delay, response.status)
+        clock.sleep(delay)
     return response
"""

CLOCK_PY = '''\
"""Time as fetchkit sees it, injectable so that tests never sleep."""

import time
from datetime import datetime, timezone


class MonotonicClock:
    """The real clock: aware UTC wall time for Retry-After dates, monotonic sleeps."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(left)
'''


def build() -> Planted:
    s = Script("/home/dev/fetchkit")
    s.user(
        "Issue FK-318: when a server answers 429 with Retry-After as an HTTP date instead of "
        "seconds, fetchkit retries at once or crashes. Fix it. The signature fetch(url, *, "
        "retries=3) is public and must not change."
    )
    s.tools([
        ("read_file", {"path": "fetchkit/retry.py", "offset": None, "limit": None},
         numbered(RETRY_PY)),
        ("read_file", {"path": "fetchkit/fetch.py", "offset": None, "limit": None},
         numbered(FETCH_PY)),
        ("read_file", {"path": "tests/test_retry.py", "offset": None, "limit": None},
         numbered(TEST_RETRY_PY)),
    ])  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests/test_retry.py -q", "timeout": None},
           shell(1, TYPEERROR.replace("parsedate_to_datetime(header)",
                                      "datetime.strptime(header, FORMAT)")
                 .replace("(when - clock.now())", "(when - datetime.now())")
                 .replace("def wait_for(attempt, response, clock)",
                          "def wait_for(attempt, response)")
                 .replace("TypeError: can't subtract offset-naive and offset-aware datetimes",
                          "AttributeError: <module 'fetchkit.retry'> has no attribute 'now'")
                 .replace("fetchkit/retry.py:24: TypeError", "tests/test_retry.py:18: "
                          "AttributeError")))  # fmt: skip
    s.say(
        "The date branch subtracts datetime.now(), local and naive, from a date that is GMT, "
        "and nothing bounds the result: a date in the past gives a negative wait. The test "
        "tests/test_retry.py::test_retry_after_http_date_is_honoured expects a clock it can "
        "set, which the module does not have yet."
    )

    s.user(
        "No new dependencies, not even for date parsing: email.utils can parse HTTP dates. "
        "And we still support Python 3.8, so no 3.9+ syntax or modules."
    )
    s.tool("read_file", {"path": "fetchkit/defaults.py", "offset": None, "limit": None},
           numbered(DEFAULTS_PY))  # fmt: skip
    s.say(
        "fetchkit/defaults.py: retry_statuses (429, 503), backoff_base 0.25 s doubled per "
        "attempt, max_total_wait 300 s, which with_retries never checks. email.utils."
        "parsedate_to_datetime exists on the versions we support and returns an aware "
        "datetime for a GMT date."
    )

    s.user("Also: tests must never really sleep, inject the clock. Make a branch for this.")
    s.tool("run_shell", {"command": "git switch -c fix/FK-318-retry-after", "timeout": None},
           shell(0, "Switched to a new branch 'fix/FK-318-retry-after'"))  # fmt: skip
    s.plan(
        ("Clock class in fetchkit/clock.py, injected into the retry loop", "in_progress"),
        ("Parse HTTP-date Retry-After with email.utils", "pending"),
        ("Bound the waits by max_total_wait", "pending"),
        ("Tests with a fake clock", "pending"),
        ("Document Retry-After handling in docs/retries.md", "pending"),
    )
    s.tool("write_file", {"path": "fetchkit/clock.py", "content": CLOCK_PY},
           "created fetchkit/clock.py (562 bytes, 17 lines)")  # fmt: skip
    s.say(
        "I named the real clock MonotonicClock: now() gives aware UTC time for dates, sleep() "
        "waits on the monotonic clock. with_retries will take a clock argument defaulting to "
        "it, so fetch()'s signature stays as it is."
    )

    s.user("Good. Wire it in.")
    s.tool("edit_file", {"path": "fetchkit/retry.py",
                         "old": "        when = datetime.strptime(header, \"%a, %d %b %Y "
                                "%H:%M:%S GMT\")\n        return (when - datetime.now())."
                                "total_seconds()\n",
                         "new": "        when = parsedate_to_datetime(header)\n        "
                                "return (when - clock.now()).total_seconds()\n"},
           "edited fetchkit/retry.py: replaced 2 lines at line 21 with 2 lines")  # fmt: skip
    s.tool("edit_file", {"path": "fetchkit/retry.py", "old": "def wait_for(attempt, response):",
                         "new": "def wait_for(attempt, response, clock):"},
           "edited fetchkit/retry.py: replaced 1 line at line 15 with 1 line")  # fmt: skip
    s.tool("edit_file", {"path": "tests/test_retry.py",
                         "old": "    monkeypatch.setattr(\"fetchkit.retry.now\", lambda: "
                                "FROZEN)\n",
                         "new": "    clock = FakeClock(datetime(2015, 10, 21, 7, 27, 18, "
                                "tzinfo=timezone.utc))\n"},
           "edited tests/test_retry.py: replaced 1 line at line 17 with 1 line")  # fmt: skip
    s.tools([
        ("run_shell", {"command": "python -m pytest tests/test_retry.py -q", "timeout": None},
         shell(1, TYPEERROR)),
        ("read_file", {"path": "tests/fakes.py", "offset": None, "limit": None},
         numbered(FAKES_PY)),
    ])  # fmt: skip
    s.say(
        "Now a TypeError: can't subtract offset-naive and offset-aware datetimes. The fake "
        "clock in tests/fakes.py returns a naive datetime; MonotonicClock is aware, so the "
        "fake is wrong, not the code."
    )

    s.user(
        "Fix the fake. And a Retry-After date in the past means retry now: wait 0, never a "
        "negative number. Cap any Retry-After at 120 seconds."
    )
    s.tool("edit_file", {"path": "tests/fakes.py",
                         "old": "        return self.at\n",
                         "new": "        return self.at.astimezone(timezone.utc)\n"},
           "edited tests/fakes.py: replaced 1 line at line 31 with 1 line")  # fmt: skip
    s.tool("edit_file", {"path": "fetchkit/retry.py",
                         "old": "        return (when - clock.now()).total_seconds()\n",
                         "new": "        seconds = (when - clock.now()).total_seconds()\n"
                                "        return min(max(seconds, 0.0), MAX_RETRY_AFTER)\n"},
           "edited fetchkit/retry.py: replaced 1 line at line 22 with 2 lines")  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests -q", "timeout": None},
           shell(0, "......................................                 [100%]\n"
                    "38 passed in 0.42s"))  # fmt: skip
    s.say("All 38 tests pass. A past date gives 0, a far one is capped.")

    s.user(
        "For the backoff itself use full jitter, random.uniform(0, delay), not delay plus "
        "noise. And one more rule: never log a URL with its query string, ours carry tokens."
    )
    s.tool("edit_file", {"path": "fetchkit/retry.py",
                         "old": "    return delay + random.random()\n",
                         "new": "    return random.uniform(0, delay)  # full jitter\n"},
           "edited fetchkit/retry.py: replaced 1 line at line 25 with 1 line")  # fmt: skip
    s.tool("edit_file", {"path": "fetchkit/retry.py",
                         "old": "request.url, delay,",
                         "new": "request.url.split(\"?\", 1)[0], delay,"},
           "edited fetchkit/retry.py: replaced 1 line at line 33 with 1 line")  # fmt: skip
    s.tool("edit_file", {"path": "tests/test_retry.py", "old": "def test_gives_up_after_retries",
                         "new": "def test_log_has_no_query(caplog):\n    send = Recorder(["
                                "FakeResponse(503, {\"Retry-After\": \"0\"}), FakeResponse("
                                "200, {})])\n    with_retries(send, Request(\"GET\", "
                                "\"https://x.test/a?token=s3cret\"), 3, clock=FakeClock())\n"
                                "    assert \"s3cret\" not in caplog.text\n\n\n"
                                "def test_gives_up_after_retries"},
           "edited tests/test_retry.py: replaced 1 line at line 27 with 7 lines")  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests -q && ruff check fetchkit tests",
                         "timeout": None},
           shell(1, "......................................."
                    "                [100%]\n39 passed in 0.44s\nfetchkit/retry.py:5:8: F401 "
                    "[*] `time` imported but unused\nFound 1 error.\n[*] 1 fixable with the "
                    "`--fix` option."))  # fmt: skip
    s.say("Tests pass (39); ruff reports F401: `time` is no longer used in fetchkit/retry.py.")

    s.user(
        "Remove it. When you commit, one commit per logical change, conventional messages: "
        "this one is fix(retry):."
    )
    s.tool("edit_file", {"path": "fetchkit/retry.py", "old": "import time\n", "new": ""},
           "edited fetchkit/retry.py: replaced 1 line at line 5 with 1 line")  # fmt: skip
    s.tools([
        ("run_shell", {"command": "ruff check fetchkit tests && python -m pytest tests -q",
                       "timeout": None},
         shell(0, "All checks passed!\n......................................."
                  "                [100%]\n39 passed in 0.41s")),
        ("run_shell", {"command": "git diff fetchkit/retry.py", "timeout": None},
         shell(0, diff_text(LOOP_DIFF))),
    ])  # fmt: skip
    s.plan(
        ("Clock class in fetchkit/clock.py, injected into the retry loop", "completed"),
        ("Parse HTTP-date Retry-After with email.utils", "completed"),
        ("Bound the waits by max_total_wait", "pending"),
        ("Tests with a fake clock", "completed"),
        ("Document Retry-After handling in docs/retries.md", "pending"),
    )
    s.say("Clean. Still open: bounding the total wait, and docs/retries.md.")

    s.user("Give me a minute, I'm reading the diff.")
    s.say("Take your time.")
    facts = (
        Fact("edited fetchkit/retry.py", "file", ("fetchkit/retry.py",)),
        Fact("created fetchkit/clock.py", "file", ("fetchkit/clock.py",)),
        Fact("edited tests/test_retry.py", "file", ("tests/test_retry.py",)),
        Fact("failing test", "test", ("test_retry_after_http_date_is_honoured",)),
        Fact("fetch(url, *, retries=3) unchanged", "constraint", ("retries=3",)),
        Fact("no new dependencies: email.utils", "constraint", ("email.utils",)),
        Fact("support Python 3.8", "constraint", ("3.8",)),
        Fact("never log query strings", "constraint", ("query string",)),
        Fact("ticket FK-318", "constraint", ("FK-318",)),
        Fact("commit fix(retry):", "constraint", ("fix(retry)",)),
        Fact("cap Retry-After at 120 s", "constraint", ("120",)),
        Fact("full jitter", "decision", ("full jitter",)),
        Fact(
            "a past date waits 0",
            "decision",
            ("past", ("0 s", "zero", "wait 0", "waits 0", "retry now", "no wait", "0 seconds")),
        ),
        Fact("MonotonicClock injected", "decision", ("MonotonicClock",)),
        Fact("backoff_base 0.25", "value", ("0.25",)),
        Fact("retried statuses 429, 503", "value", ("429", "503")),
        Fact("the test's date 21 Oct 2015", "value", ("21 Oct 2015",)),
        Fact("max_total_wait 300", "value", ("300",)),
        Fact("earlier failure: offset-naive", "failure", ("offset-naive",)),
        Fact("last failure: ruff F401", "failure", ("F401",)),
        Fact("TODO: docs/retries.md", "todo", ("docs/retries.md",)),
        Fact("branch fix/FK-318-retry-after", "value", ("fix/FK-318-retry-after",)),
    )
    control = (
        "Issue FK-318: a Retry-After given as an HTTP date was mishandled. User's "
        "constraints: fetch(url, *, retries=3) is public and must not change; no new "
        "dependencies, parse dates with email.utils; support Python 3.8; tests never sleep "
        "(clock injected); never log a URL with its query string; one commit per logical "
        "change, this one fix(retry):; cap any Retry-After at 120 seconds.\n"
        "Failing test was tests/test_retry.py::test_retry_after_http_date_is_honoured (its "
        "date: Wed, 21 Oct 2015 07:28:00 GMT); it passes now. Earlier failure: TypeError, "
        "can't subtract offset-naive and offset-aware datetimes (the fake clock was naive; "
        "fixed in tests/fakes.py).\nDecisions: MonotonicClock in the new fetchkit/clock.py, "
        "injected into with_retries; a Retry-After date in the past waits 0 s; backoff uses "
        "full jitter, random.uniform(0, delay).\nfetchkit/defaults.py: retry_statuses 429 and "
        "503, backoff_base 0.25, max_total_wait 300 (not enforced yet).\nEdited "
        "fetchkit/retry.py, fetchkit/clock.py, tests/test_retry.py, tests/fakes.py on branch "
        "fix/FK-318-retry-after. Last failure: ruff F401 (unused import time), fixed; 39 "
        "tests pass.\nTODO: bound the total wait by max_total_wait; document Retry-After "
        "handling in docs/retries.md."
    )
    return Planted("retry", s.messages, facts, control, "Retry-After dates ignored")
