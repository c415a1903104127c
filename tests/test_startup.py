"""Startup stays cheap (issue 10, Speed): a command imports only what it needs, and typer
is pinned to a release (0.28) whose option conversion imports no pydantic. The timings
themselves are measured by bench/startup.py, never asserted here."""

import ast
import json
import subprocess
import sys

import pexpect
import pytest

from gitsessions.store.sessions import Change
from tests.conftest import REPO, run_gitsessions

HEAVY = ("openai", "tiktoken", "httpx2", "gitsessions.agent.loop", "rich.markdown")
PROBE = """
import sys
sys.argv = ["gitsessions", *sys.argv[1:]]
from gitsessions.cli.app import main
try:
    main()
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
print("HEAVY", heavy, file=sys.stderr)
"""


def imported(*args: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `modules` `gitsessions *args` imports (its stdout is a pipe)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=modules), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY"))
    return ast.literal_eval(line.removeprefix("HEAVY "))


@pytest.mark.parametrize("args", [("--help",), ("list",), ("list", "--json"), ("search", "x")])
def test_reading_commands_import_no_model_client_tokenizer_or_agent(args, make_session):
    make_session(turns=1)
    assert imported(*args) == []


def test_info_show_and_log_import_nothing_heavy(make_session):
    sid = make_session(turns=1).id[:8]
    for command in ("info", "show", "log"):
        assert imported(command, sid) == [], command


def test_push_and_pull_import_nothing_heavy(make_session):
    """The sync client is stock git: no SDK, tokenizer or agent."""
    sid = make_session(turns=1).id[:8]
    assert imported("push", sid) == []  # no remote yet: a usage error, after parsing
    assert imported("pull") == []
    assert imported("remote", "list") == []


def test_the_git_hook_command_is_built_alone(make_session):
    """`hook NAME` (run at every commit) is an ordinary command of the app, built from
    its own module: no rich, no agent, no store for a commit outside a session."""
    make_session(turns=1)
    light = ("rich", "gitsessions.agent", "dulwich", "gitsessions.cli.hooks_cmd")
    assert imported("hook", "commit-msg", "/nonexistent-hook", modules=light) == []


def test_a_pull_that_only_fast_forwards_imports_no_writer(cli, home, tmp_path):
    """A pull reads the store through dulwich (the one reader) but imports no writer
    and no header cache unless it forks; the sessions it brings are there all the same."""
    from tests.test_sync import contents, pushed, say

    bare, _url, sid = pushed(cli, home, tmp_path)
    other = tmp_path / "other"
    cli("--home", str(other), "remote", "add", "origin", str(bare))
    cli("--home", str(other), "pull")
    say(home, sid, "more")
    cli("push", "--all")
    writers = ("gitsessions.services.sessions.writer", "gitsessions.store.catalog")
    assert imported("--home", str(other), "pull", modules=writers) == []
    assert contents(other, sid) == contents(home, sid)
    assert imported("--home", str(other), "pull", modules=writers) == []  # nothing new


def test_a_plain_pull_says_what_it_did_and_fails_in_one_line(cli, home, tmp_path):
    """`[--home DIR] pull [REMOTE]` through the console script: its records on stdout,
    its summary and its one-line errors on stderr, with their exit codes."""
    from tests.test_sync import pushed, say

    other = tmp_path / "other"
    done = run_gitsessions("--home", str(other), "pull")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: no remote yet: gitsessions remote add NAME URL"]

    bare, _url, sid = pushed(cli, home, tmp_path)
    cli("--home", str(other), "remote", "add", "origin", str(bare))
    done = run_gitsessions("--home", str(other), "pull", "origin")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{sid[:8]}\tcreated\t\n"
    assert done.stderr.splitlines()[-1] == f"pulled {bare}: 1 created"
    done = run_gitsessions("pull", "nowhere", "--home", str(other))  # --home after it too
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: no remote named 'nowhere' (remotes: origin)"]

    say(home, sid, "more")
    cli("push", "--all")
    done = run_gitsessions(f"--home={other}", "pull", "--json")
    assert done.returncode == 0 and '"updated"' in done.stdout
    done = run_gitsessions(f"--home={other}", "pull")
    assert done.returncode == 0
    assert done.stdout == "" and done.stderr.splitlines()[-1] == f"pulled {bare}: 1 unchanged"


def test_options_still_check_their_values(workspace):
    done = run_gitsessions("exec", "hi", "--max-steps", "0", "--workspace", str(workspace))
    assert done.returncode == 2
    assert "Invalid value for '--max-steps': 0 is not in the range x>=1." in done.stderr
    done = run_gitsessions("search", "x", "--limit", "many")
    assert done.returncode == 2 and "Invalid value for '--limit'" in done.stderr


@pytest.mark.parametrize("args", [("--help",), ("list",), ("show",), ("list", "--help")])
def test_reading_commands_and_help_import_no_pydantic(args, make_session):
    """typer is pinned below 0.29, whose every command converts options through pydantic
    (issue 33): `--help`, `list` and `show` must not import it."""
    make_session(turns=1)
    assert imported(*args, modules=("pydantic",)) == []


def test_exec_of_a_small_turn_never_loads_the_tokenizer(server, workspace):
    """Far under the budget by a bound that needs no tokenizer, exec does not load it (a
    few hundred milliseconds); the reply is the same."""
    from tests.conftest import exec_args

    assert "tiktoken" not in imported(*exec_args(server, workspace), "hi")
    assert len(server.requests) >= 1


def test_a_plain_exec_turn_into_a_pipe_imports_no_rich_and_no_compaction(server, workspace):
    """Output into a pipe without rich (the model client is the openai SDK, imported in
    a thread while the store is read), and a turn far under its budget without the
    compaction engine, the tokenizer or sqlite; a plain store written without dulwich's
    `Repo` (its hooks, reflogs, worktrees; its config parser, under 1 ms, is the one
    reader of the store's config) and, calling no tool, none of the tools' modules; the
    reply is the same."""
    from tests.conftest import exec_args

    heavy = ("rich.console", "rich.text", "tiktoken", "gitsessions.services.compaction.compaction",
             "sqlite3",
             "dulwich.repo", "dulwich.hooks", "dulwich.reflog",
             "dulwich.worktree", "gitsessions.services.tools.files",
             "gitsessions.services.tools.listing", "gitsessions.services.tools.shell")  # fmt: skip
    assert run_gitsessions(*exec_args(server, workspace), "first").returncode == 0  # a store
    assert imported(*exec_args(server, workspace), "hi", modules=heavy) == []
    assert len(server.requests) >= 1


def test_the_bound_is_never_under_the_estimate():
    from gitsessions.services.tools import BUILTIN_TOOLS
    from gitsessions.values.tokens import TokenCounter

    counter = TokenCounter()
    contexts = [
        [{"role": "system", "content": "s"}, {"role": "user", "content": "héllo wörld 🙂" * 50}],
        [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
         {"role": "tool", "tool_call_id": "c", "content": "\x1b[31m" + "x = 1\n" * 400}],
        [{"role": "user", "content": [{"type": "text", "text": "日本語のテキスト" * 30}]}],
    ]  # fmt: skip
    for messages in contexts:
        for tools in (None, BUILTIN_TOOLS):
            assert counter.bound(messages, tools) >= counter.estimate(messages, tools)
    counter.calibrate(100, 190)
    assert counter.bound(contexts[0]) >= counter.estimate(contexts[0])


# A pipe's output needs no rich, and a warm header cache no git library but dulwich's
# config parser (the store's format is read from its config).
LIGHT = (
    "dulwich.objects",
    "dulwich.repo",
    "rich.console",
    "rich.table",
    "gitsessions.store.sessions",
    "gitsessions.agent",
    "gitsessions.services.settings.config",
)


def test_piped_list_and_info_on_a_warm_cache_import_no_git_library_and_no_rich(make_session):
    sid = make_session(turns=1).id
    run_gitsessions("list")  # the header cache, written once
    for args in [("list",), ("list", "--json"), ("list", "--tree"), ("info", sid[:8]),
                 ("info", sid, "--json")]:  # fmt: skip
        assert imported(*args, modules=LIGHT) == [], args


def test_info_from_the_cache_says_what_the_store_says(make_session):
    """`info` before any `list` reads the store; after one, the cache: the same answer."""
    head = make_session(turns=2, title="same")
    cold = run_gitsessions("info", head.id[:8], "--json")
    run_gitsessions("list")
    assert imported("info", head.id[:8], modules=LIGHT) == []  # the cache is warm now
    warm = run_gitsessions("info", head.id[:8], "--json")
    assert cold.returncode == warm.returncode == 0
    assert json.loads(cold.stdout) == json.loads(warm.stdout)
    assert json.loads(warm.stdout)["head"] == head.commit.decode()
    assert run_gitsessions("info", head.id[:8]).stdout == run_gitsessions("info", head.id).stdout


def test_a_stale_row_is_read_from_the_store(store, make_session):
    """A session that moved since the cache was written is read again, from the store
    (through dulwich, read-only: no writing store, no rich)."""
    head = make_session(turns=1, title="before")
    run_gitsessions("list")
    store.commit(head, Change(header={**head.header, "title": "after"}), event="rename",
                 subject="rename")  # fmt: skip
    assert imported("info", head.id[:8], modules=LIGHT[2:]) == []
    assert json.loads(run_gitsessions("info", head.id, "--json").stdout)["title"] == "after"
    assert "after" in run_gitsessions("list").stdout


def test_a_store_not_plainly_of_this_format_is_opened_whole(home, make_session):
    """No `formatVersion` in the config (an older store): the store records it, as before.
    The config is read by dulwich's parser, as the store reads it."""
    from gitsessions.store.refs import StoreRefs, store_format

    sid = make_session(turns=1).id
    store = home / "store.git"
    config = store / "config"
    kept = config.read_text()
    config.write_text("[core]\n\tbare = true\n[GitSessions]\n formatversion=2\n")
    assert store_format(store) == 2  # sections and keys in any case, as git reads them
    config.write_text("[gitsessions\n\tformatVersion = 2\n")
    assert store_format(store) is None and StoreRefs.open(home) is None  # not a config
    config.write_text(kept)
    sid = make_session(turns=1).id
    config = home / "store.git" / "config"
    assert StoreRefs.open(home) is not None
    config.write_text(config.read_text().replace("formatVersion = 2", ""))
    assert StoreRefs.open(home) is None
    assert "dulwich.objects" in imported("info", sid[:8], modules=LIGHT)
    assert "formatVersion = 2" in config.read_text()  # the store wrote it back
    assert StoreRefs.open(home) is not None


def test_list_and_info_on_a_terminal_still_draw_tables(make_session):
    sid = make_session(turns=1, title="drawn").id
    for args, expected in [(["list"], "msgs"), (["info", sid[:8]], "transcript,")]:
        child = pexpect.spawn(
            sys.executable, ["-m", "gitsessions", *args], cwd=str(REPO), encoding="utf-8",
            timeout=60, dimensions=(40, 160),
        )  # fmt: skip
        child.expect(pexpect.EOF)
        child.wait()
        assert child.exitstatus == 0
        assert expected in child.before and "drawn" in child.before
        assert "\t" not in child.before  # a table, not the records of a pipe


def test_show_and_log_into_a_pipe_import_no_rich_and_nothing_that_writes(make_session):
    """Reading a session reads the store through dulwich (store/reader.py over
    store/repo.py), and nothing that writes: no writing store, no maintenance (packing,
    purging), no secret rules a commit is redacted with, no header cache (sqlite) and no
    git hooks (only `show --commit`)."""
    sid = make_session(turns=1).id[:8]
    writers = ("rich.console", "rich.table", "gitsessions.store.maintenance",
               "gitsessions.store.redaction", "gitsessions.services.hooks.audit",
               "gitsessions.cli.hooks_cmd", "dulwich.repo", "gitsessions.store.sessions",
               "sqlite3", "gitsessions.store.catalog")  # fmt: skip
    for args in [("show", sid), ("show", sid, "--json"), ("show", sid, "--context"),
                 ("log", sid), ("log", sid, "--steps", "--json")]:  # fmt: skip
        assert imported(*args, modules=writers) == [], args


GATED = """
import sys, threading
from gitsessions.cli.agent_setup import warm_up
from gitsessions.services.model import model
shown = threading.Event()
warm_up(chat=True, after=shown)
print("BEFORE", [m for m in ("openai", "tiktoken", "rich.markdown") if m in sys.modules])
shown.set()
model._openai()  # waits for the preload thread, as the first request does
print("AFTER", "openai" in sys.modules)
"""


def test_chat_warm_up_waits_for_the_prompt():
    """The warm-up threads (openai, the tokenizer, markdown) start their imports only once
    `chat` says its prompt shows: none of them competes with the prompt."""
    done = subprocess.run([sys.executable, "-c", GATED], capture_output=True, text=True,
                          cwd=REPO, timeout=120)  # fmt: skip
    assert "BEFORE []" in done.stdout and "AFTER True" in done.stdout, done.stderr


def test_the_config_files_known_keys_follow_the_settings():
    from gitsessions.services.settings import config, config_file

    tables = ("redact", "prices", "shell", "snapshots", "hooks", "mcp_servers")
    known = config_file.KNOWN_KEYS
    assert known == (*config._LOOKUP, *tables)
    assert config.KNOWN_KEYS is config_file.KNOWN_KEYS


def test_show_and_log_on_a_store_being_packed_read_the_same(make_session, store):
    """`show` and `log` give the same, loose or packed (their outputs are pinned by
    tests/test_cli_manage.py and test_golden.py)."""
    from gitsessions.store import maintenance

    sid = make_session(turns=3).id[:8]
    before = [run_gitsessions(*a, sid).stdout for a in (("show",), ("log", "--steps"))]
    maintenance.repack(store.git)
    after = [run_gitsessions(*a, sid).stdout for a in (("show",), ("log", "--steps"))]
    assert before == after and "answer 2" in after[0] and "turn 3" in after[1]


AT_PROMPT = """
import os, sys
sys.argv = ["gitsessions", *sys.argv[1:]]
from gitsessions.cli import chat_input

def shown():  # the prompt is about to show: what is imported by now?
    print("AT PROMPT", [m for m in {heavy!r} if m in sys.modules], file=sys.stderr, flush=True)
    os._exit(0)

chat_input.PROMPT_SHOWN.set = shown
from gitsessions.cli.app import main
main()
"""
# (not `socket`: typer's option conversion imports it, through pydantic's plugin loader)
BEFORE_PROMPT = (*HEAVY, "rich.console", "dulwich", "gitsessions.store.sessions",
                 "gitsessions.cli.agent_setup", "gitsessions.agent.assembly",
                 "urllib.request")  # fmt: skip


def test_a_new_chat_prompts_before_loading_rich_the_store_or_the_agent(server, workspace):
    """Issue 10 (speed): before a new chat's prompt, only its settings, a plain banner and
    a connect to a server on this machine; the rest is built while the user types."""
    done = subprocess.run(
        [sys.executable, "-c", AT_PROMPT.format(heavy=BEFORE_PROMPT), "chat",
         "--base-url", server.base_url, "--model", "fake-model", "--workspace", str(workspace)],
        capture_output=True, text=True, cwd=REPO, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("AT PROMPT"))
    assert ast.literal_eval(line.removeprefix("AT PROMPT ")) == []
    assert "gitsessions · new session · fake-model" in done.stderr


def test_a_resumed_chat_prompts_before_loading_rich_the_store_or_the_agent(
    server, workspace, make_session
):
    """A resumed chat shows its prompt the same way: the session, its header and the end
    of its context are read (store/reader.py, through dulwich: no writing store), its
    banner names it."""
    sid = make_session(turns=1).id
    heavy = tuple(m for m in BEFORE_PROMPT if m != "dulwich")
    done = subprocess.run(
        [sys.executable, "-c", AT_PROMPT.format(heavy=heavy), "chat", "--resume",
         sid[:8], "--base-url", server.base_url, "--model", "fake-model", "--workspace",
         str(workspace)],
        capture_output=True, text=True, cwd=REPO, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("AT PROMPT"))
    assert ast.literal_eval(line.removeprefix("AT PROMPT ")) == []
    assert f"gitsessions · session {sid[:8]} (resumed) · fake-model" in done.stderr


def test_a_sure_budget_needs_no_count_before_the_prompt():
    """`chat` accepts a budget of SURE_BUDGET plus the workspace path's length without
    counting tokens: the exact check agrees, for short and long paths."""
    from gitsessions.agent.assembly import check_budget
    from gitsessions.agent.prompts import system_prompt
    from gitsessions.cli.chat import SURE_BUDGET

    for path in ("/", "/home/someone/project", "/" + "deep/" * 400):
        check_budget(SURE_BUDGET + len(path.encode()), system_prompt(path))  # never raises


GC_PROBE = """
import gc, sys
sys.argv = ["gitsessions", *sys.argv[1:]]
from gitsessions.cli.entry import main
try:
    main()
except SystemExit:
    pass
print("GC", gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)
"""


def test_the_collector_is_off_only_while_a_command_starts(make_session):
    """cli/entry.py turns the cycle collector off for start-up; once the command is built
    the start-up objects are frozen and it runs again (a long chat still collects)."""
    make_session(turns=1)
    # a command that builds, the pull and the git hook among them
    for args in (("list",), ("list", "--json"), ("pull", "nosuch"), ("hook", "commit-msg", "x")):
        done = subprocess.run([sys.executable, "-c", GC_PROBE, *args], capture_output=True,
                              text=True, cwd=REPO, timeout=120)  # fmt: skip
        assert "GC True True" in done.stderr, done.stderr


def test_a_resumed_session_reads_kept_counts_and_loads_no_tokenizer(server, workspace, store):
    """Issue 24: a session of 1,000 short messages is far over the byte bound (so its
    first turn here counts it with the tokenizer) yet far under the budget. That turn
    keeps every count it made (`tokens.sqlite`); the next process reads them back and
    bounds the context by kept counts plus the bytes of its few new messages: it never
    imports tiktoken, and its request is the same."""
    from gitsessions.values.records import new_header
    from tests.conftest import exec_args

    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(500):
        messages += [{"role": "user", "content": f"turn {n}: say ok"},
                     {"role": "assistant", "content": f"ok {n}"}]  # fmt: skip
    head = store.create(new_header("ab" * 16, "2026-01-01T00:00:00Z"),
                        Change(context=messages, append=messages))  # fmt: skip
    resume = [*exec_args(server, workspace), "--resume", head.id[:8]]
    assert not (store.home / "tokens.sqlite").exists()
    assert "tiktoken" in imported(*resume, "first")  # counted once, with the tokenizer
    assert (store.home / "tokens.sqlite").exists()
    assert "tiktoken" not in imported(*resume, "second")  # counts read back instead
    turns = [r["messages"] for r in server.requests if len(r["messages"]) > 1000]
    assert [t[-1]["content"] for t in turns] == ["first", "second"]  # (and a title asked)
    assert turns[1][1:-2] == turns[0][1:] and len(turns[1]) == 1 + 1000 + 3
