"""Generate the compaction bench fixtures: long, realistic coding sessions as JSON.

Invariant: the output is a pure function of this file (fixed seeds, no clock), so running
it again rewrites bench/fixtures/*.json byte for byte. The JSON is committed; this script
only documents how it was made. Each fixture is {"name", "messages", "plan", "pins",
"facts"}: OpenAI chat messages with read_file / write_file / edit_file / run_shell /
search_files / update_plan calls, `run_shell` results starting with `exit code: N`, and
the exact strings ("facts") that must survive compaction.

    uv run python bench/make_compaction_fixtures.py
"""

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "fixtures"
SYSTEM = (
    "You are gitsessions, a coding agent working in the user's repository. Use the tools "
    "to read, edit and test code. Keep the plan current with update_plan. Prefer small, "
    "verified steps: run the tests after each change."
)
BAR = "=" * 25
THREAD_TEST = "pytest -q -x tests/test_cache_threads.py"
WORDS = [
    "request",
    "response",
    "session",
    "retry",
    "delay",
    "budget",
    "cache",
    "entry",
    "value",
    "config",
    "loader",
    "parser",
    "render",
    "table",
    "column",
    "header",
    "client",
    "server",
    "token",
    "stream",
    "buffer",
    "chunk",
    "record",
    "writer",
    "reader",
    "index",
    "lookup",
    "handler",
    "event",
    "queue",
    "worker",
    "task",
    "result",
    "error",
    "status",
    "limit",
]


class Session:
    """Builds one session's messages with sequential tool-call ids."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = random.Random(seed)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        self.calls = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def tools(self, *calls: tuple[str, dict[str, Any], str], text: str | None = None) -> None:
        ids = []
        for _ in calls:
            self.calls += 1
            ids.append(f"call_{self.name[:4]}_{self.calls:03d}")
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                    for call_id, (name, arguments, _) in zip(ids, calls, strict=True)
                ],
            }
        )
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    def tool(self, name: str, arguments: dict[str, Any], result: str, text: str | None = None):
        self.tools((name, arguments, result), text=text)

    # -- realistic content ---------------------------------------------------------

    def call(self) -> str:
        return f"{self.rng.choice(WORDS)}({self.rng.choice(WORDS)}, {self.rng.randint(0, 9)})"

    def ident(self) -> str:
        return "_".join(self.rng.sample(WORDS, 2))

    def module(self, path: str, functions: int) -> str:
        """Numbered source lines, as read_file returns them."""
        rng = self.rng
        functions = functions * 7 // 4  # sized so every session is well over 24000 tokens
        lines = [f'"""{path}: {" ".join(rng.sample(WORDS, 6))}."""', "", "import logging"]
        lines += [
            "import time",
            "from dataclasses import dataclass",
            "",
            "log = logging.getLogger(__name__)",
            "",
        ]
        for _ in range(functions):
            name, arg, other = self.ident(), rng.choice(WORDS), rng.choice(WORDS)
            lines += [
                "",
                f"def {name}({arg}: dict, {other}: int = {rng.randint(1, 60)}) -> dict:",
                f'    """Return the {arg} {rng.choice(WORDS)} for {other}, or raise KeyError."""',
                f"    if {other} <= 0:",
                f'        raise ValueError("{other} must be positive, got %r" % {other})',
                f"    result = dict({arg})",
                "    for key in sorted(result):",
                f"        if key.startswith('{rng.choice(WORDS)}'):",
                f"            result[key] = result[key] * {other}",
                f"    log.debug('{name}: %d keys', len(result))",
                "    return result",
            ]
        return "\n".join(f"{n + 1:5d}  {line}" for n, line in enumerate(lines))

    def pytest(self, files: list[str], failures: list[tuple[str, str]], passed: int) -> str:
        """A pytest run: `exit code: N` first, then the usual report."""
        rng = self.rng
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0",
            "rootdir: /home/dev/project",
            "configfile: pyproject.toml",
            f"collected {passed + len(failures)} items",
            "",
        ]
        failed_files = {test.split("::")[0] for test, _ in failures}
        for path in files:
            marks = "".join(rng.choice("....") for _ in range(rng.randint(8, 30)))
            if path in failed_files:
                marks = marks[:3] + "F" + marks[4:]
            out.append(f"{path} {marks:<50} [{rng.randint(5, 99):3d}%]")
        if failures:
            out += [
                "",
                "=================================== FAILURES ===================================",
            ]
        for test, message in failures:
            name = test.split("::")[1]
            out += [
                f"_________________________________ {name} _________________________________",
                "",
            ]
            for _ in range(rng.randint(12, 20)):
                out.append(f"    {self.ident()} = {self.call()}")
            out += [
                f">       {message.split(':')[0].lower()}",
                f"E       {message}",
                "",
                f"{test.split('::')[0]}:{rng.randint(20, 300)}: {message.split(':')[0]}",
            ]
        if failures:
            out.append(
                "=========================== short test summary info ============================"
            )
            out += [f"FAILED {test} - {message}" for test, message in failures]
            out.append(
                f"{BAR} {len(failures)} failed, {passed} passed in {rng.uniform(0.5, 9):.2f}s {BAR}"
            )
        else:
            out.append(f"{BAR} {passed} passed in {rng.uniform(0.5, 9):.2f}s {BAR}")
        return f"exit code: {1 if failures else 0}\n" + "\n".join(out) + "\n"

    def grep(self, pattern: str, paths: list[str], hits: int) -> str:
        rng = self.rng
        rows = [
            f"{rng.choice(paths)}:{rng.randint(1, 400)}: {self.ident()}({pattern}, {self.call()})"
            for _ in range(hits)
        ]
        return "\n".join(sorted(rows)) + "\n"

    def diff(self, paths: list[str], hunks: int) -> str:
        rng = self.rng
        out = ["exit code: 0"]
        for path in paths:
            out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
            for _ in range(hunks):
                start = rng.randint(1, 300)
                out.append(f"@@ -{start},7 +{start},9 @@ def {self.ident()}(")
                for _ in range(3):
                    out.append(f"     {self.ident()} = {rng.choice(WORDS)}")
                out.append(f"-    return {self.ident()}({rng.choice(WORDS)})")
                out.append(f"+    return {self.ident()}({rng.choice(WORDS)}, retries=3)")
                out.append(f"+    # {' '.join(rng.sample(WORDS, 5))}")
        return "\n".join(out) + "\n"

    def source(self, functions: int) -> str:
        return "\n".join(line[7:] for line in self.module("new", functions).split("\n"))

    def save(self, plan: list[dict[str, str]], pins: list[str], facts: list[str]) -> None:
        text = "\n".join(_text(m) for m in self.messages)
        missing = [fact for fact in facts if fact not in text and fact not in pins]
        assert not missing, f"{self.name}: facts not in the session: {missing}"
        data = {
            "name": self.name,
            "messages": self.messages,
            "plan": plan,
            "pins": pins,
            "facts": facts,
        }
        path = OUT / f"{self.name}.json"
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path}: {path.stat().st_size // 1024} KB, {len(self.messages)} messages")


def _text(message: dict[str, Any]) -> str:
    parts = [message.get("content") or ""]
    parts += [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return "\n".join(parts)


def plan_call(items: list[tuple[str, str]]) -> tuple[str, dict[str, Any], str]:
    steps = [{"step": step, "status": status} for step, status in items]
    return ("update_plan", {"items": steps}, f"plan updated: {len(steps)} steps")


def http_retries() -> None:
    s = Session("http-retries", 1)
    goal = "add retry with exponential backoff to fetch() in src/client/http.py"
    c1 = "do not add new dependencies"
    c2 = "keep the public signature of fetch() unchanged"
    c3 = "cap the delay at 30 seconds"
    c4 = "jitter must be deterministic in tests"
    last_fail = "tests/test_http.py::test_fetch_gives_up_after_max_attempts"
    tests = ["tests/test_http.py", "tests/test_session.py", "tests/test_backoff.py"]
    s.user(f"Please {goal}.\nConstraints: {c1}; {c2}; {c3}.\nStart by reading the code.")
    s.tool(
        "update_plan",
        plan_call(
            [
                ("Read the client code", "in_progress"),
                ("Write src/client/backoff.py with tests", "pending"),
                ("Wire retries into fetch()", "pending"),
                ("Update CHANGELOG.md", "pending"),
            ]
        )[1],
        "plan updated: 4 steps",
    )
    s.tool("read_file", {"path": "src/client/http.py"}, s.module("src/client/http.py", 40))
    s.tool("read_file", {"path": "src/client/session.py"}, s.module("src/client/session.py", 30))
    s.tool(
        "search_files",
        {"pattern": "def fetch", "path": None},
        s.grep("url", ["src/client/http.py", "src/client/session.py", "tests/test_http.py"], 60),
    )
    s.tool("run_shell", {"command": "python -m pytest -q"}, s.pytest(tests[:2], [], 48))
    s.say(
        "fetch() calls _send() once and raises on any 5xx. There is no retry logic yet. "
        "I will put the delay computation in a new module and test it on its own."
    )
    s.user(
        "Sounds good. Put the backoff math in its own module src/client/backoff.py and add tests."
    )
    s.tool(
        "write_file",
        {"path": "src/client/backoff.py", "content": s.source(12)},
        "wrote src/client/backoff.py (3411 bytes)",
    )
    s.tool(
        "write_file",
        {"path": "tests/test_backoff.py", "content": s.source(8)},
        "wrote tests/test_backoff.py (2210 bytes)",
    )
    s.tool(
        "run_shell",
        {"command": "python -m pytest -q tests/test_backoff.py"},
        s.pytest(
            tests[2:],
            [
                (
                    "tests/test_backoff.py::test_delay_is_capped",
                    "AssertionError: assert 64.0 <= 30.0",
                )
            ],
            7,
        ),
    )
    s.tool("read_file", {"path": "src/client/backoff.py"}, s.module("src/client/backoff.py", 12))
    s.tool(
        "edit_file",
        {
            "path": "src/client/backoff.py",
            "old": "return base * 2 ** attempt",
            "new": "return min(cap, base * 2 ** attempt)",
        },
        "edited src/client/backoff.py: 1 replacement",
    )
    s.tool(
        "run_shell",
        {"command": "python -m pytest -q tests/test_backoff.py"},
        s.pytest(tests[2:], [], 8),
    )
    s.tool(
        "edit_file",
        {
            "path": "src/client/http.py",
            "old": "response = self._send(request)",
            "new": "response = self._send_with_retries(request)",
        },
        "edited src/client/http.py: 1 replacement",
    )
    s.tool(
        "run_shell",
        {"command": "python -m pytest -q"},
        s.pytest(
            tests,
            [
                (
                    "tests/test_http.py::test_fetch_retries_on_503",
                    "AssertionError: expected 3 calls, got 1",
                )
            ],
            55,
        ),
    )
    s.say("The 503 test fails because _send_with_retries only retries on connection errors.")
    s.user(f"Also: {c4} -- accept a random.Random instance. Then fix the 503 case.")
    s.tool(
        "edit_file",
        {
            "path": "src/client/backoff.py",
            "old": "def delay(attempt, base, cap):",
            "new": "def delay(attempt, base, cap, rng=None):",
        },
        "edited src/client/backoff.py: 1 replacement",
    )
    s.tool(
        "edit_file",
        {
            "path": "tests/test_http.py",
            "old": "client = Client()",
            "new": "client = Client(rng=random.Random(7))",
        },
        "edited tests/test_http.py: 2 replacements",
    )
    s.tool("read_file", {"path": "tests/test_http.py"}, s.module("tests/test_http.py", 35))
    s.tool(
        "run_shell",
        {"command": "python -m pytest -q"},
        s.pytest(
            tests,
            [(last_fail, "AssertionError: expected HTTPError after 5 attempts, got 6 calls")],
            56,
        ),
    )
    s.tool(
        *plan_call(
            [
                ("Read the client code", "completed"),
                ("Write src/client/backoff.py with tests", "completed"),
                ("Wire retries into fetch()", "in_progress"),
                (f"Fix {last_fail}", "pending"),
                ("Update CHANGELOG.md", "pending"),
            ]
        )
    )
    s.say("One failure left: the retry loop is off by one (6 calls for max_attempts=5).")
    s.user("Keep going: fix the remaining failure, then update CHANGELOG.md.")
    s.tool("read_file", {"path": "src/client/http.py"}, s.module("src/client/http.py", 42))
    s.tool(
        "run_shell",
        {"command": "git diff"},
        s.diff(["src/client/http.py", "src/client/backoff.py"], 14),
    )
    plan = [
        {"step": "Read the client code", "status": "completed"},
        {"step": "Write src/client/backoff.py with tests", "status": "completed"},
        {"step": "Wire retries into fetch()", "status": "in_progress"},
        {"step": f"Fix {last_fail}", "status": "pending"},
        {"step": "Update CHANGELOG.md", "status": "pending"},
    ]
    pins = ["Release branch is release/2.4; never push to main."]
    facts = [
        goal,
        c1,
        c2,
        c3,
        c4,
        "src/client/backoff.py",
        "tests/test_backoff.py",
        "src/client/http.py",
        "tests/test_http.py",
        last_fail,
        "Wire retries into fetch()",
        "Update CHANGELOG.md",
        pins[0],
    ]
    s.save(plan, pins, facts)


def cli_json() -> None:
    s = Session("cli-json-output", 2)
    goal = "add a --json flag to `tool list` and `tool show`"
    c1 = "JSON goes to stdout, messages to stderr"
    c2 = "keys must be sorted so the output is stable"
    c3 = "support Python 3.10"
    last_fail = "tests/test_cli_json.py::test_show_json_includes_tags"
    tests = ["tests/test_cli.py", "tests/test_render.py", "tests/test_cli_json.py"]
    s.user(f"I want to {goal}.\nRules: {c1}; {c2}; {c3} (no match statements).")
    s.tool("list_files", {"path": "."}, "\n".join(f"cli/{s.ident()}.py" for _ in range(120)))
    s.tool("read_file", {"path": "cli/main.py"}, s.module("cli/main.py", 45))
    s.tool("read_file", {"path": "cli/render.py"}, s.module("cli/render.py", 30))
    s.tool("run_shell", {"command": "pytest -q"}, s.pytest(tests[:2], [], 61))
    s.say("Listing renders with rich tables in cli/render.py; there is no JSON path.")
    s.user("Go ahead. Write the JSON rendering in cli/render_json.py.")
    s.tool(
        "write_file",
        {"path": "cli/render_json.py", "content": s.source(10)},
        "wrote cli/render_json.py (2804 bytes)",
    )
    s.tool(
        "edit_file",
        {
            "path": "cli/main.py",
            "old": "def list_cmd(",
            "new": "def list_cmd(json_: bool = False, ",
        },
        "edited cli/main.py: 1 replacement",
    )
    s.tool(
        "write_file",
        {"path": "tests/test_cli_json.py", "content": s.source(9)},
        "wrote tests/test_cli_json.py (2533 bytes)",
    )
    s.tool(
        "run_shell",
        {"command": "pytest -q tests/test_cli_json.py"},
        s.pytest(
            tests[2:],
            [
                (
                    "tests/test_cli_json.py::test_list_json_is_sorted",
                    "AssertionError: keys out of order: ['name', 'id']",
                )
            ],
            6,
        ),
    )
    s.tool(
        "edit_file",
        {
            "path": "cli/render_json.py",
            "old": "json.dumps(rows)",
            "new": "json.dumps(rows, sort_keys=True)",
        },
        "edited cli/render_json.py: 1 replacement",
    )
    s.tool(
        "run_shell",
        {"command": "ruff check cli tests"},
        "exit code: 1\ncli/render_json.py:3:1: F401 `sys` imported but unused\nFound 1 error.\n",
    )
    s.tool(
        "edit_file",
        {"path": "cli/render_json.py", "old": "import sys\n", "new": ""},
        "edited cli/render_json.py: 1 replacement",
    )
    s.tool("read_file", {"path": "tests/test_cli.py"}, s.module("tests/test_cli.py", 40))
    s.say("Sorting fixed; lint clean. Next: `tool show --json`.")
    s.user("Now do `show`. Tags should be included as a list.")
    s.tool(
        "edit_file",
        {
            "path": "cli/main.py",
            "old": "def show_cmd(",
            "new": "def show_cmd(json_: bool = False, ",
        },
        "edited cli/main.py: 1 replacement",
    )
    s.tool("read_file", {"path": "cli/models.py"}, s.module("cli/models.py", 38))
    s.tool(
        "run_shell",
        {"command": "pytest -q"},
        s.pytest(tests, [(last_fail, "KeyError: 'tags'")], 70),
    )
    s.tool(
        *plan_call(
            [
                ("List --json", "completed"),
                ("Show --json with tags", "in_progress"),
                ("Document --json in README.md", "pending"),
            ]
        )
    )
    s.user("Fix the tags failure and document --json in README.md.")
    s.tool(
        "search_files",
        {"pattern": "tags", "path": "cli"},
        s.grep("tags", ["cli/models.py", "cli/main.py"], 90),
    )
    s.tool("read_file", {"path": "cli/models.py"}, s.module("cli/models.py", 38))
    plan = [
        {"step": "List --json", "status": "completed"},
        {"step": "Show --json with tags", "status": "in_progress"},
        {"step": "Document --json in README.md", "status": "pending"},
    ]
    pins = ["The user's terminal is 80 columns wide; keep tables narrow."]
    facts = [
        goal,
        c1,
        c2,
        c3,
        "cli/render_json.py",
        "cli/main.py",
        "tests/test_cli_json.py",
        last_fail,
        "Show --json with tags",
        "Document --json in README.md",
        pins[0],
    ]
    s.save(plan, pins, facts)


def config_toml() -> None:
    s = Session("config-toml-migration", 3)
    goal = "migrate the settings loader from INI to TOML"
    c1 = "old settings.ini files must still load, with a deprecation warning"
    c2 = "environment variables override the file"
    c3 = "no new dependencies: use tomllib"
    last_fail = "tests/test_config.py::test_env_overrides_file"
    tests = ["tests/test_config.py", "tests/test_app.py"]
    s.user(f"Task: {goal}.\nRequirements:\n- {c1}\n- {c2}\n- {c3}")
    s.tool("read_file", {"path": "app/config.py"}, s.module("app/config.py", 50))
    s.tool(
        "read_file",
        {"path": "app/defaults.ini"},
        "\n".join(f"{s.ident()} = {s.rng.randint(0, 999)}" for _ in range(300)),
    )
    s.tool("run_shell", {"command": "pytest -q"}, s.pytest(tests, [], 40))
    s.say("Settings are read with configparser in app/config.py:load().")
    s.user("Write the TOML defaults as app/defaults.toml and switch the loader.")
    s.tool(
        "write_file",
        {
            "path": "app/defaults.toml",
            "content": "\n".join(f"{s.ident()} = {s.rng.randint(0, 999)}" for _ in range(300)),
        },
        "wrote app/defaults.toml (9120 bytes)",
    )
    s.tool(
        "edit_file",
        {
            "path": "app/config.py",
            "old": "import configparser",
            "new": "import configparser\nimport tomllib",
        },
        "edited app/config.py: 1 replacement",
    )
    s.tool(
        "run_shell",
        {"command": "pytest -q"},
        s.pytest(
            tests,
            [("tests/test_config.py::test_ini_still_loads", "DeprecationWarning not raised")],
            39,
        ),
    )
    s.tool(
        "edit_file",
        {"path": "app/config.py", "old": "def load(path):", "new": "def load(path, env=None):"},
        "edited app/config.py: 1 replacement",
    )
    s.tool("read_file", {"path": "tests/test_config.py"}, s.module("tests/test_config.py", 45))
    s.tool(
        "edit_file",
        {"path": "tests/test_config.py", "old": "load(path)", "new": "load(path, env={})"},
        "edited tests/test_config.py: 4 replacements",
    )
    s.tool(
        "edit_file",
        {"path": "app/legacy.py", "old": "x", "new": "y"},
        "error: app/legacy.py does not exist",
    )
    s.tool(
        "run_shell",
        {"command": "pytest -q"},
        s.pytest(tests, [(last_fail, "AssertionError: assert 8080 == 9090")], 41),
    )
    s.tool(
        *plan_call(
            [
                ("Write app/defaults.toml", "completed"),
                ("Switch loader to tomllib", "completed"),
                ("Make env override the file", "in_progress"),
                ("Write docs/config.md", "pending"),
            ]
        )
    )
    s.say("Env override is applied before the file is read, so the file wins. Needs reordering.")
    s.user("Fix the override order, then write docs/config.md.")
    s.tool("read_file", {"path": "app/config.py"}, s.module("app/config.py", 52))
    s.tool(
        "run_shell",
        {"command": "git diff --stat && git diff"},
        s.diff(["app/config.py", "tests/test_config.py"], 12),
    )
    plan = [
        {"step": "Write app/defaults.toml", "status": "completed"},
        {"step": "Switch loader to tomllib", "status": "completed"},
        {"step": "Make env override the file", "status": "in_progress"},
        {"step": "Write docs/config.md", "status": "pending"},
    ]
    pins = ["Config keys are snake_case; never rename an existing key."]
    facts = [
        goal,
        c1,
        c2,
        c3,
        "app/defaults.toml",
        "app/config.py",
        "tests/test_config.py",
        last_fail,
        "Make env override the file",
        "Write docs/config.md",
        pins[0],
    ]
    s.save(plan, pins, facts)


def flaky_cache() -> None:
    s = Session("flaky-cache-race", 4)
    goal = "fix the race condition in LRUCache.get_or_set in pkg/cache.py"
    c1 = "no global locks: lock per cache instance"
    c2 = "the fix must keep get() lock-free on a hit"
    last_fail = "tests/test_cache_threads.py::test_concurrent_get_or_set_calls_factory_once"
    tests = ["tests/test_cache.py", "tests/test_cache_threads.py"]
    s.user(f"CI is flaky. Please {goal}.\nConstraints: {c1}; {c2}.")
    s.tool("read_file", {"path": "pkg/cache.py"}, s.module("pkg/cache.py", 44))
    s.tool(
        "run_shell",
        {"command": f"for i in $(seq 20); do {THREAD_TEST} || break; done"},
        s.pytest(tests[1:], [(last_fail, "AssertionError: factory called 2 times")], 11),
    )
    s.tool(
        "read_file",
        {"path": "tests/test_cache_threads.py"},
        s.module("tests/test_cache_threads.py", 25),
    )
    s.say("Two threads can both miss and both call the factory: check-then-set is not atomic.")
    s.user("Agreed. Implement a per-key in-flight map so the factory runs once.")
    s.tool(
        "edit_file",
        {
            "path": "pkg/cache.py",
            "old": "value = factory()",
            "new": "value = self._once(key, factory)",
        },
        "edited pkg/cache.py: 1 replacement",
    )
    s.tool(
        "write_file",
        {"path": "pkg/inflight.py", "content": s.source(9)},
        "wrote pkg/inflight.py (2410 bytes)",
    )
    s.tool(
        "run_shell",
        {"command": "pytest -q"},
        s.pytest(
            tests,
            [
                (
                    "tests/test_cache.py::test_eviction_order",
                    "AssertionError: assert ['b', 'c'] == ['a', 'c']",
                )
            ],
            30,
        ),
    )
    s.tool("read_file", {"path": "pkg/cache.py"}, s.module("pkg/cache.py", 46))
    s.tool(
        "edit_file",
        {
            "path": "pkg/cache.py",
            "old": "self._order.append(key)",
            "new": "self._order.move_to_end(key)",
        },
        "edited pkg/cache.py: 1 replacement",
    )
    s.tool("run_shell", {"command": "pytest -q tests/test_cache.py"}, s.pytest(tests[:1], [], 22))
    s.tool(
        *plan_call(
            [
                ("Make get_or_set atomic per key", "completed"),
                ("Fix eviction order", "completed"),
                ("Stress test 200 runs", "in_progress"),
                ("Add a regression test for the race", "pending"),
            ]
        )
    )
    s.user("Run the thread test 200 times to be sure.")
    s.tool(
        "run_shell",
        {"command": f"for i in $(seq 200); do {THREAD_TEST} || break; done"},
        s.pytest(tests[1:], [(last_fail, "AssertionError: factory called 2 times")], 11),
    )
    s.tool("read_file", {"path": "pkg/inflight.py"}, s.module("pkg/inflight.py", 20))
    s.say("Still fails on run 143: the in-flight entry is removed before waiters read the value.")
    s.user("Fix that too and add a regression test.")
    s.tool("read_file", {"path": "pkg/inflight.py"}, s.module("pkg/inflight.py", 22))
    s.tool(
        "search_files",
        {"pattern": "_once", "path": "pkg"},
        s.grep("_once", ["pkg/cache.py", "pkg/inflight.py"], 70),
    )
    s.tool("read_file", {"path": "pkg/cache.py"}, s.module("pkg/cache.py", 46))
    plan = [
        {"step": "Make get_or_set atomic per key", "status": "completed"},
        {"step": "Fix eviction order", "status": "completed"},
        {"step": "Stress test 200 runs", "status": "in_progress"},
        {"step": "Add a regression test for the race", "status": "pending"},
    ]
    pins = ["Run thread tests with -p no:randomly; the plugin hides the race."]
    facts = [
        goal,
        c1,
        c2,
        "pkg/cache.py",
        "pkg/inflight.py",
        last_fail,
        "Stress test 200 runs",
        "Add a regression test for the race",
        pins[0],
    ]
    s.save(plan, pins, facts)


def prose_facts() -> None:
    """Facts that live only in prose: no path, plan item or pin names them, so only a
    summary (a real model) can keep them; the ledger cannot."""
    s = Session("prose-only-facts", 5)
    limit = "each export file must stay under 50 MB"
    deadline = "the report is due Friday 18:00 UTC"
    decision = "we keep SQLite and drop the Redis cache"
    weeks = "name the reports by ISO week number"
    error = "OperationalError: database is locked (timeout=5.0s)"
    filler = " ".join(s.rng.choice(WORDS) for _ in range(90))
    s.user(
        "We need a weekly usage report exported from the reporting job. Some background "
        f"first: {filler}. One hard rule from the storage team: {limit}, whatever the "
        f"week's volume. {filler}. Also {deadline}; plan the work so it lands before then."
    )
    s.tool("read_file", {"path": "report/job.py"}, s.module("report/job.py", 40))
    s.tool("read_file", {"path": "report/store.py"}, s.module("report/store.py", 36))
    s.say(
        "The job writes through two stores today. After reading both, my recommendation: "
        f"{decision}, since the deploy target has no Redis and the cache only hides "
        "slow queries we can index instead."
    )
    s.user("Fine. Go ahead and run the job once against the staging copy.")
    log = [f"{s.ident()}: {s.call()}" for _ in range(120)]
    log.insert(70, f"Traceback (most recent call last): ... sqlite3.{error}")
    s.tool(
        "run_shell",
        {"command": "python -m report.job --staging"},
        "exit code: 1\n" + "\n".join(log) + "\n",
    )
    s.say(f"The run failed: {error.split(':')[0]} while the indexer held a write lock.")
    s.user("What naming scheme should the files use?")
    s.say(f"Dates collide across year ends, so {weeks}, e.g. usage-2026-W48.json.")
    for n in range(3):
        path = f"report/part{n}.py"
        s.tool("read_file", {"path": path}, s.module(path, 34))
    s.user("Continue with the exporter.")
    s.tool("read_file", {"path": "report/export.py"}, s.module("report/export.py", 38))
    s.save([], [], [limit, deadline, decision, weeks, error])


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    http_retries()
    cli_json()
    config_toml()
    flaky_cache()
    prose_facts()


if __name__ == "__main__":
    main()
