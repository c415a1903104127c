"""Search that finds (issue 10, item 15): words in any order, all of which must match;
prefixes; the system prompt is not searched; titles and compaction summaries are; an
empty query is bad usage; hits show the words highlighted, safely."""

import json

from gitsessions.cli.search import MARK, highlighted
from gitsessions.services.sessions.search import SearchIndex, snippet
from gitsessions.store.sessions import Change, touch
from tests.conftest import run_gitsessions


def _say(store, head, *messages: dict):
    context = store.read(head, "context") + list(messages)
    return store.commit(head, Change(context=context, append=list(messages)), event="turn",
                        subject="turn")  # fmt: skip


def test_words_in_any_order_all_must_match(store, make_session):
    head = make_session(turns=0, title="t")
    head = _say(store, head, {"role": "user", "content": "the login bug in the auth module"},
                {"role": "assistant", "content": "the auth module has no bug tracker"})  # fmt: skip
    index = SearchIndex(store)
    assert [h.index for h in index.search("auth bug")] == [1, 2]
    assert [h.index for h in index.search("bug login")] == [1]  # any order
    assert index.search("login tracker") == []  # all words, in one message
    assert [h.index for h in index.search("no auth")] == [2]  # a short word too


def test_a_prefix_finds_the_word(store, make_session):
    head = make_session(turns=0)
    _say(store, head, {"role": "user", "content": "fix authentication tokens"})
    index = SearchIndex(store)
    assert len(index.search("authent")) == 1
    assert len(index.search("authent* tok")) == 1


def test_the_system_prompt_is_not_searched(store, make_session):
    make_session(turns=1)  # its system prompt: "You are a helpful coding agent."
    assert SearchIndex(store).search("helpful coding agent") == []


def test_titles_and_compaction_summaries_are_searched(store, make_session):
    head = make_session(turns=1, title="Refactor the parser")
    record = {"time": "2026-11-30T10:00:00Z", "trigger": "manual", "stages": ["summarize"],
              "before_tokens": 10, "after_tokens": 5, "cleared": [], "summarizer": None,
              "summary": "Earlier: the user moved the lexer into lexer.py"}  # fmt: skip
    store.commit(head, Change(header=touch(head.header), compactions=[record]),
                 event="compact", subject="compact")  # fmt: skip
    index = SearchIndex(store)
    assert [(h.role, h.index) for h in index.search("parser refactor")] == [("title", None)]
    hits = index.search("lexer moved")
    assert [(h.role, h.index) for h in hits] == [("compaction", None)]
    assert "lexer" in hits[0].snippet


def test_an_empty_query_is_bad_usage(make_session):
    for query in ("", "   "):
        done = run_gitsessions("search", query)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: the search query is empty")
        assert "Traceback" not in done.stderr


def test_the_snippet_marks_every_word():
    text = "x " * 100 + "the Auth module: auth fails when the token expires" + " y" * 100
    shown, marks = snippet(text, ["auth", "token"])
    assert [shown[a:b] for a, b in marks] == ["Auth", "auth", "token"]
    assert shown.startswith("...") and shown.endswith("...")


def test_hits_are_highlighted_and_stay_terminal_safe(store, make_session):
    head = make_session(turns=0)
    _say(store, head, {"role": "user", "content": "deploy \x1b[31mred\x1b[0m to prod now"})
    hit = SearchIndex(store).search("prod")[0]
    text = highlighted(hit.snippet, hit.marks)
    assert "\x1b" not in text.plain and "\\x1b" in text.plain
    styled = [text.plain[s.start : s.end] for s in text.spans if s.style == MARK]
    assert styled == ["prod"]


def test_cli_search_shows_hits_and_json_carries_the_marks(make_session):
    make_session(turns=2, tag="zebra")
    done = run_gitsessions("search", "answer zebra", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert len(hits) == 2
    for hit in hits:
        assert [hit["snippet"][a:b] for a, b in hit["marks"]] == ["answer", "zebra"]
    shown = run_gitsessions("search", "zebra answer")
    assert shown.returncode == 0 and "zebra" in shown.stdout
