"""Planted-fact session 2 of bench/compaction_quality.py: meter readings lost on the
night the clocks went back (a CSV importer, zoneinfo, UTC), with the user's constraints
given along the way."""

from bench.quality_scoring import LEAVE, Fact
from bench.quality_sessions import Planted, Script, diff_text, numbered, shell

PARSE_PY = '''\
"""Parse a meter's CSV export into readings ready for the database."""

import csv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytz

from ingest.config import settings

LOCAL_FORMAT = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class Reading:
    meter_id: str
    taken_at: datetime  # aware, UTC
    kwh: float


def parse_file(path: Path) -> "list[Reading]":
    cfg = settings()
    tz = pytz.timezone(cfg["default_tz"])
    readings: "dict[str, Reading]" = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter=";"):
            local = datetime.strptime(row["timestamp"], LOCAL_FORMAT)
            aware = tz.localize(local)  # is_dst=False by default
            reading = Reading(row["meter"], aware.astimezone(pytz.utc), float(row["kwh"]))
            readings[row["timestamp"]] = reading  # one reading per local timestamp
    return list(readings.values())


def batches(readings: "list[Reading]", size: int) -> "list[list[Reading]]":
    return [readings[i : i + size] for i in range(0, len(readings), size)]
'''

TEST_PARSE_PY = """\
from datetime import datetime, timezone
from pathlib import Path

from ingest.parse import parse_file

DATA = Path(__file__).parent / "data"


def test_plain_day_has_96_readings():
    readings = parse_file(DATA / "2025-10-20_M-2291.csv")
    assert len(readings) == 96


def test_readings_are_utc():
    readings = parse_file(DATA / "2025-10-20_M-2291.csv")
    assert all(r.taken_at.tzinfo is timezone.utc for r in readings)


def test_dst_fallback_keeps_both_readings():
    # 2025-10-26: 02:00-02:45 happen twice in Europe/Berlin, 100 quarter hours in all
    readings = parse_file(DATA / "2025-10-26_M-2291.csv")
    assert len(readings) == 100
    first = datetime(2025, 10, 26, 0, 30, tzinfo=timezone.utc)
    second = datetime(2025, 10, 26, 1, 30, tzinfo=timezone.utc)
    assert {first, second} <= {r.taken_at for r in readings}
"""

CONFIG = """\
[ingest]
default_tz = "Europe/Berlin"     # when the export has no tz column
batch_size = 5000                # rows per INSERT ... ON CONFLICT batch
source_dir = "/srv/meter-exports"
dsn = "postgresql://ingest@localhost/meter_test"

[ingest.retention]
raw_days = 400
"""

UNIQUE = """\
Traceback (most recent call last):
  File "/home/dev/meter-ingest/ingest/load.py", line 61, in load_batch
    cursor.executemany(INSERT, rows)
psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \
"readings_meter_id_taken_at_key"
DETAIL:  Key (meter_id, taken_at)=(M-2291, 2025-10-26 01:00:00+00) already exists.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/dev/meter-ingest/ingest/load.py", line 88, in main
    load_batch(conn, batch)
ingest.load.LoadError: batch 1 of 1 rolled back (96 rows)"""

CSV_HEAD = """\
meter;timestamp;kwh
M-2291;2025-10-26 01:30;0.412
M-2291;2025-10-26 01:45;0.398
M-2291;2025-10-26 02:00;0.405
M-2291;2025-10-26 02:15;0.391
M-2291;2025-10-26 02:30;0.377
M-2291;2025-10-26 02:45;0.380
M-2291;2025-10-26 02:00;0.366
M-2291;2025-10-26 02:15;0.371
M-2291;2025-10-26 02:30;0.359
M-2291;2025-10-26 02:45;0.362
M-2291;2025-10-26 03:00;0.354
--
100 lines after the header"""

TIMEZONES_PY = '''\
"""Local wall-clock times of meter exports to aware UTC datetimes (zoneinfo)."""

from datetime import datetime, timezone
from zoneinfo import ZoneInfo


class WallClock:
    """Turns the local timestamps of one export, in file order, into UTC. A repeated
    wall-clock time (the hour the clocks go back) gets fold=1 the second time."""

    def __init__(self, tz_name: str) -> None:
        self.tz = ZoneInfo(tz_name)
        self.seen: "set[datetime]" = set()

    def to_utc(self, local: datetime) -> datetime:
        fold = 1 if local in self.seen else 0
        self.seen.add(local)
        aware = local.replace(tzinfo=self.tz, fold=fold)
        return aware.astimezone(timezone.utc)
'''

DIFF = """\
 ingest/parse.py     | 20 ++++++++++----------
 ingest/timezones.py | 21 +++++++++++++++++++++
 tests/test_parse.py |  7 +++++++
 3 files changed, 38 insertions(+), 10 deletions(-)
diff --git a/ingest/parse.py b/ingest/parse.py
index 6d1c2b4..e07a9f1 100644
--- a/ingest/parse.py
+++ b/ingest/parse.py
@@ -5,9 +5,8 @@ from dataclasses import dataclass
 from datetime import datetime
 from pathlib import Path

-import pytz
-
 from ingest.config import settings
+from ingest.timezones import WallClock

 LOCAL_FORMAT = "%Y-%m-%d %H:%M"

@@ -20,15 +19,16 @@ class Reading:


 def parse_file(path: Path) -> "list[Reading]":
-    cfg = settings()
-    tz = pytz.timezone(cfg["default_tz"])
-    readings: "dict[str, Reading]" = {}
+    cfg: "dict[str, str]" = settings()
+    clock = WallClock(cfg["default_tz"])
+    readings: "dict[tuple[str, datetime], Reading]" = {}
     with path.open(newline="", encoding="utf-8") as handle:
         for row in csv.DictReader(handle, delimiter=";"):
             local = datetime.strptime(row["timestamp"], LOCAL_FORMAT)
-            aware = tz.localize(local)  # is_dst=False by default
-            reading = Reading(row["meter"], aware.astimezone(pytz.utc), float(row["kwh"]))
-            readings[row["timestamp"]] = reading  # one reading per local timestamp
+            reading = Reading(row["meter"], clock.to_utc(local), float(row["kwh"]))
+            # one reading per (meter_id, utc_ts), the table's unique key
+            readings[(reading.meter_id, reading.taken_at)] = reading
     return list(readings.values())


diff --git a/ingest/timezones.py b/ingest/timezones.py
new file mode 100644
index 0000000..b71f2c0
--- /dev/null
+++ b/ingest/timezones.py
@@ -0,0 +1,21 @@
+\"\"\"Local wall-clock times of meter exports to aware UTC datetimes (zoneinfo).\"\"\"
+
+from datetime import datetime, timezone
+from zoneinfo import ZoneInfo
+
+
+class WallClock:
+    \"\"\"Turns the local timestamps of one export, in file order, into UTC. A repeated
+    wall-clock time (the hour the clocks go back) gets fold=1 the second time.\"\"\"
+
+    def __init__(self, tz_name: str) -> None:
+        self.tz = ZoneInfo(tz_name)
+        self.seen: "set[datetime]" = set()
+
+    def to_utc(self, local: datetime) -> datetime:
+        fold = 1 if local in self.seen else 0
+        self.seen.add(local)
+        aware = local.replace(tzinfo=self.tz, fold=fold)
+        utc = aware.astimezone(timezone.utc)
+        return utc
diff --git a/tests/test_parse.py b/tests/test_parse.py
index 2a9e0c3..51f7d8b 100644
--- a/tests/test_parse.py
+++ b/tests/test_parse.py
@@ -16,6 +16,13 @@ def test_readings_are_utc():
     assert all(r.taken_at.tzinfo is timezone.utc for r in readings)


+def test_repeated_hour_is_one_hour_apart_in_utc():
+    readings = parse_file(DATA / "2025-10-26_M-2291.csv")
+    times = sorted(r.taken_at for r in readings)
+    assert all(b - a == timedelta(minutes=15) for a, b in zip(times, times[1:]))
+
+
 def test_dst_fallback_keeps_both_readings():"""

MYPY = """\
ingest/timezones.py:24: error: Missing return statement  [return]
ingest/parse.py:31: error: Argument 1 to "WallClock" has incompatible type "object"; \
expected "str"  [arg-type]
Found 2 errors in 2 files (checked 9 source files)"""

PYTEST_FAIL = """\
..F                                                                      [100%]
=================================== FAILURES ===================================
____________________ test_dst_fallback_keeps_both_readings _____________________

    def test_dst_fallback_keeps_both_readings():
        readings = parse_file(DATA / "2025-10-26_M-2291.csv")
>       assert len(readings) == 100
E       assert 96 == 100
E        +  where 96 = len([Reading(meter_id='M-2291', taken_at=datetime.datetime(2025, 10, \
25, 22, 0, tzinfo=<UTC>), kwh=0.412), ...])

tests/test_parse.py:22: AssertionError
=========================== short test summary info ============================
FAILED tests/test_parse.py::test_dst_fallback_keeps_both_readings - assert 96 == 100
1 failed, 2 passed in 0.21s"""


def build() -> Planted:
    s = Script("/home/dev/meter-ingest")
    s.user(
        "Ticket DATA-872: on the night the clocks went back (2025-10-26) we lost four quarter "
        "hours of readings for every meter. The export for meter M-2291 is in tests/data as a "
        "fixture. Find out why and fix it."
    )
    s.tools([
        ("list_files", {"path": None},
         "README.md\ningest/\ningest/__init__.py\ningest/config.py\ningest/load.py\n"
         "ingest/parse.py\nmigrations/\nmigrations/0001_readings.sql\n"
         "migrations/0002_unique_meter_time.sql\npyproject.toml\ntests/\ntests/data/\n"
         "tests/data/2025-10-20_M-2291.csv\ntests/data/2025-10-26_M-2291.csv\n"
         "tests/test_load.py\ntests/test_parse.py"),
        ("read_file", {"path": "ingest/parse.py", "offset": None, "limit": None},
         numbered(PARSE_PY)),
        ("read_file", {"path": "tests/test_parse.py", "offset": None, "limit": None},
         numbered(TEST_PARSE_PY)),
    ])  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests/test_parse.py -q", "timeout": None},
           shell(1, PYTEST_FAIL))  # fmt: skip
    s.say(
        "tests/test_parse.py::test_dst_fallback_keeps_both_readings fails: 96 readings where "
        "the file has 100. parse_file keys the readings by the local timestamp string, so the "
        "second 02:00-02:45 overwrite the first, and pytz's localize() puts both on the same "
        "UTC instant anyway."
    )

    s.user(
        "Load the fixture into the local test database to see what production saw. The DSN "
        "is in config/ingest.toml."
    )
    s.tool("read_file", {"path": "config/ingest.toml", "offset": None, "limit": None},
           numbered(CONFIG))  # fmt: skip
    s.tool("run_shell", {"command": "python -m ingest.load tests/data/2025-10-26_M-2291.csv",
                         "timeout": 120},
           shell(1, UNIQUE))  # fmt: skip
    s.say(
        "Loading fails with psycopg2.errors.UniqueViolation on readings_meter_id_taken_at_key: "
        "the hour that happens twice maps to one UTC time, so the batch of 96 rows is rolled "
        'back whole. The config says default_tz "Europe/Berlin" (used when an export has no '
        "tz column), batch_size 5000, DSN postgresql://ingest@localhost/meter_test."
    )

    s.user(
        "Some ground rules. Standard library only, no pandas: the ops box has no wheels for "
        "it. Everything is stored in UTC, never naive datetimes. Don't touch migrations/, the "
        "DBA owns them, and production runs PostgreSQL 12."
    )
    s.tool("run_shell", {"command": "sed -n '1,12p' tests/data/2025-10-26_M-2291.csv && "
                                    "echo -- && tail -n +2 tests/data/2025-10-26_M-2291.csv | "
                                    "wc -l | xargs printf '%s lines after the header\\n'",
                         "timeout": None},
           shell(0, CSV_HEAD))  # fmt: skip
    s.say(
        "Understood. The export lists the repeated hour in order: 02:00-02:45 first in summer "
        "time (CEST, UTC+2), then again in winter time (CET, UTC+1). With the file order we "
        "can tell them apart without any tz column."
    )

    s.user(
        "Use zoneinfo, not pytz: pytz is what caused this in the first place. Make a branch first."
    )
    s.tool("run_shell", {"command": "git switch -c fix/DATA-872-dst", "timeout": None},
           shell(0, "Switched to a new branch 'fix/DATA-872-dst'"))  # fmt: skip
    s.tool("search_files", {"pattern": "pytz", "path": None},
           "ingest/parse.py:8:import pytz\n"
           "ingest/parse.py:24:    tz = pytz.timezone(cfg[\"default_tz\"])\n"
           "ingest/parse.py:30:            reading = Reading(row[\"meter\"], aware.astimezone("
           "pytz.utc), float(row[\"kwh\"]))\n"
           "pyproject.toml:14:    \"pytz>=2023.3\",")  # fmt: skip
    s.plan(
        ("WallClock in ingest/timezones.py: local time to UTC with fold", "in_progress"),
        ("parse_file: no pytz, readings no longer keyed by local time", "pending"),
        ("Tests for the repeated hour", "pending"),
        ("Load the fixture into meter_test again", "pending"),
        ("Type check and full test run", "pending"),
    )
    s.say(
        "On fix/DATA-872-dst. pytz is used only in ingest/parse.py (and listed in "
        "pyproject.toml, which can go once nothing imports it)."
    )

    s.user(
        "For the repeated hour use fold=1 on the second occurrence; the export lists them in "
        "order, as you saw."
    )
    s.tool("write_file", {"path": "ingest/timezones.py", "content": TIMEZONES_PY},
           "created ingest/timezones.py (781 bytes, 20 lines)")  # fmt: skip
    s.tool("edit_file", {"path": "ingest/parse.py",
                         "old": "    tz = pytz.timezone(cfg[\"default_tz\"])\n",
                         "new": "    clock = WallClock(cfg[\"default_tz\"])\n"},
           "edited ingest/parse.py: replaced 1 line at line 24 with 1 line")  # fmt: skip
    s.tool("edit_file", {"path": "ingest/parse.py",
                         "old": "            aware = tz.localize(local)  # is_dst=False by "
                                "default\n            reading = Reading(row[\"meter\"], aware."
                                "astimezone(pytz.utc), float(row[\"kwh\"]))\n",
                         "new": "            reading = Reading(row[\"meter\"], clock.to_utc"
                                "(local), float(row[\"kwh\"]))\n"},
           "edited ingest/parse.py: replaced 2 lines at line 29 with 1 line")  # fmt: skip
    s.tool(
        "run_shell",
        {"command": "python -m pytest tests/test_parse.py -q", "timeout": None},
        shell(1, PYTEST_FAIL.replace("tzinfo=<UTC>", "tzinfo=datetime.timezone.utc")),
    )
    s.say(
        "The UTC times are right now (fold=1 gives the second 02:00 as 01:00 UTC), but the "
        "test still sees 96: the dict keyed by the local timestamp string drops the repeats."
    )

    s.user(
        "Dedupe on (meter_id, utc_ts), not on the local timestamp string. That is the unique "
        "key in the table anyway."
    )
    s.tool("edit_file", {"path": "ingest/parse.py",
                         "old": "            readings[row[\"timestamp\"]] = reading  # one "
                                "reading per local timestamp\n",
                         "new": "            # one reading per (meter_id, utc_ts), the table's "
                                "unique key\n            readings[(reading.meter_id, reading."
                                "taken_at)] = reading\n"},
           "edited ingest/parse.py: replaced 1 line at line 30 with 2 lines")  # fmt: skip
    s.tool("edit_file", {"path": "tests/test_parse.py", "old": "def test_dst_fallback_keeps",
                         "new": "def test_repeated_hour_is_one_hour_apart_in_utc():\n    "
                                "readings = parse_file(DATA / \"2025-10-26_M-2291.csv\")\n    "
                                "times = sorted(r.taken_at for r in readings)\n    assert all("
                                "b - a == timedelta(minutes=15) for a, b in zip(times, times"
                                "[1:]))\n\n\ndef test_dst_fallback_keeps"},
           "edited tests/test_parse.py: replaced 1 line at line 19 with 7 lines")  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests -q", "timeout": None},
           shell(0, "...........                                                  [100%]\n"
                    "11 passed in 0.64s"))  # fmt: skip
    s.say("All 11 tests pass, the fallback test and the new one-hour-apart test included.")

    s.user("Run the load against the test database again.")
    s.tool("run_shell", {"command": "python -m ingest.load tests/data/2025-10-26_M-2291.csv",
                         "timeout": 120},
           shell(0, "batch 1 of 1: 100 rows inserted (0 conflicts)\nloaded "
                    "2025-10-26_M-2291.csv: 100 readings for M-2291"))  # fmt: skip
    s.say("The fixture loads: 100 readings, no conflicts.")

    s.user("Now the type checker.")
    s.tool("run_shell", {"command": "mypy ingest", "timeout": None}, shell(1, MYPY))
    s.say(
        "mypy reports two errors: a missing return in ingest/timezones.py (line 24, a "
        "branch I left while editing) and settings() typed as object in ingest/parse.py."
    )

    s.user(
        "Fix both. For the record: the importer runs daily at 03:15 UTC from cron, so the "
        "first run after a deploy picks up yesterday's export; that's fine. When you commit: "
        "one commit, message starting fix(ingest):, no merge commits."
    )
    s.tool("edit_file", {"path": "ingest/timezones.py",
                         "old": "        return aware.astimezone(timezone.utc)\n",
                         "new": "        utc = aware.astimezone(timezone.utc)\n        return "
                                "utc\n"},
           "edited ingest/timezones.py: replaced 1 line at line 19 with 2 lines")  # fmt: skip
    s.tools([
        ("run_shell", {"command": "mypy ingest && python -m pytest tests -q", "timeout": None},
         shell(0, "Success: no issues found in 9 source files\n...........          "
                  "                                        [100%]\n11 passed in 0.61s")),
        ("run_shell", {"command": "git diff --stat && git diff", "timeout": None},
         shell(0, diff_text(DIFF))),
    ])  # fmt: skip
    s.plan(
        ("WallClock in ingest/timezones.py: local time to UTC with fold", "completed"),
        ("parse_file: no pytz, readings no longer keyed by local time", "completed"),
        ("Tests for the repeated hour", "completed"),
        ("Load the fixture into meter_test again", "completed"),
        ("Type check and full test run", "completed"),
        ("Backfill script for the October 2025 exports", "pending"),
    )
    s.say("mypy is clean and the tests pass. Left: the backfill for October 2025, then the commit.")

    s.user("Hold on, I'm looking at the cron logs.")
    s.say("OK, I'll wait.")
    facts = (
        Fact("edited ingest/parse.py", "file", ("ingest/parse.py",)),
        Fact("created ingest/timezones.py", "file", ("ingest/timezones.py",)),
        Fact("edited tests/test_parse.py", "file", ("tests/test_parse.py",)),
        Fact("failing test", "test", ("test_dst_fallback_keeps_both_readings",)),
        Fact("no pandas, stdlib only", "constraint", ("pandas",)),
        Fact("UTC, never naive", "constraint", ("UTC", "naive")),
        Fact("leave migrations/ alone", "constraint", ("migrations", (*LEAVE, "DBA"))),
        Fact("PostgreSQL 12", "constraint", (("PostgreSQL 12", "Postgres 12", "PG 12", "PG12"),)),
        Fact("ticket DATA-872", "constraint", ("DATA-872",)),
        Fact("zoneinfo, not pytz", "constraint", ("zoneinfo", "pytz")),
        Fact("commit fix(ingest):", "constraint", ("fix(ingest)",)),
        Fact("fold=1 on the repeat", "decision", ("fold",)),
        Fact("dedupe on (meter_id, utc_ts)", "decision", ("meter_id", "utc_ts")),
        Fact("default tz Europe/Berlin", "value", ("Europe/Berlin",)),
        Fact("batch_size 5000", "value", ("5000",)),
        Fact("the day 2025-10-26", "value", ("2025-10-26",)),
        Fact("fixture meter M-2291", "value", ("M-2291",)),
        Fact("earlier failure: UniqueViolation", "failure", ("UniqueViolation",)),
        Fact("last failure: mypy missing return", "failure", ("Missing return",)),
        Fact("TODO: backfill October 2025", "todo", ("backfill",)),
        Fact("branch fix/DATA-872-dst", "value", ("fix/DATA-872-dst",)),
        Fact("cron at 03:15 UTC", "value", ("03:15",)),
    )
    control = (
        "Ticket DATA-872: readings of 2025-10-26 (clocks going back) were lost; fixture meter "
        "M-2291 in tests/data. User's constraints: standard library only, no pandas; store "
        "everything in UTC, never naive datetimes; don't touch migrations/ (the DBA owns "
        "them); production is PostgreSQL 12; use zoneinfo, not pytz; one commit starting "
        "fix(ingest):, no merge commits. The importer runs daily at 03:15 UTC from cron.\n"
        "Failing test was tests/test_parse.py::test_dst_fallback_keeps_both_readings (96 of "
        "100); it passes now. Earlier failure: loading the fixture raised "
        "psycopg2.errors.UniqueViolation on readings_meter_id_taken_at_key; it loads now.\n"
        "Decisions: WallClock in the new ingest/timezones.py gives the second occurrence of a "
        "repeated local time fold=1; readings are deduplicated on (meter_id, utc_ts).\n"
        "config/ingest.toml: default_tz Europe/Berlin, batch_size 5000.\n"
        "Edited ingest/parse.py, ingest/timezones.py, tests/test_parse.py on branch "
        "fix/DATA-872-dst. Last failure: mypy, Missing return statement in "
        "ingest/timezones.py, fixed.\nTODO: a backfill script for the October 2025 exports, "
        "then the commit."
    )
    return Planted("ingest", s.messages, facts, control, "readings lost when the clocks go back")
