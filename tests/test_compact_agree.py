"""`compact --dry-run` says what `compact` does (issue 31, item 5): both run, as real
processes against a real fake model server, on the same sessions, and are compared."""

import json

import pytest

from tests.conftest import run_gitsessions
from tests.test_compact_cli import big_session


def compact(server, sid: str, *args: str) -> dict:
    done = run_gitsessions(
        "compact", sid, "--base-url", server.base_url, "--model", "fake",
        "--max-context-tokens", "3000", "--json", *args,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def both(server, sid: str, *args: str) -> tuple[dict, dict, int]:
    """The dry run's JSON, the run's JSON, and how many model requests the run made."""
    dry = compact(server, sid, "--dry-run", *args)
    assert server.requests == []  # a dry run asks no model
    return dry, compact(server, sid, *args), len(server.requests)


def test_where_summarizing_cannot_help_both_say_so_and_no_model_is_asked(
    server, store, make_session
):
    head = make_session(turns=3)  # a few short turns: the note alone outweighs them
    server.reply(content="a summary the run must not ask for")
    dry, run, asked = both(server, head.id)
    assert any("summarizing cannot make the context smaller" in n for n in dry["notes"])
    assert any("summarizing cannot make the context smaller" in n for n in run["notes"])
    assert asked == 0
    assert (dry["outcome"], dry["stages"]) == (run["outcome"], run["stages"])
    assert run["commit"] is None and store.head(head.id).commit == head.commit
    assert dry["after_tokens"] == run["after_tokens"] == run["before_tokens"]


@pytest.mark.parametrize("args", [(), ("--clear-only",)])
def test_where_it_helps_the_dry_run_brackets_what_the_run_did(server, store, make_session, args):
    head = big_session(store, make_session)
    server.reply(content="Goal: read every module. Done: modules 0-2.")
    dry, run, asked = both(server, head.id, *args)
    assert (dry["outcome"], dry["stages"]) == (run["outcome"], run["stages"])
    assert run["outcome"] == "compacted"
    assert run["stages"][-1] == ("clear" if args else "summarize")
    assert asked == (0 if args else 1)
    assert dry["before_tokens"] == run["before_tokens"]
    low = dry.get("after_tokens_min", dry["after_tokens"])
    assert low <= run["after_tokens"] <= dry["after_tokens"]
