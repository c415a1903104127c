"""Secret redaction: the rule table against a corpus of fake keys and look-alikes, and the
store's gate end to end (an exec turn, import, export, search, audit, `redact = false`)."""

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from gitsessions.store.errors import ConcurrentUpdate
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.provider_secrets import GITLEAKS_VERSION, JWT, PROVIDERS
from gitsessions.values.records import new_header
from gitsessions.values.secrets import RULE_NAMES, RULES, redact, redact_value
from tests.conftest import exec_args, run_gitsessions
from tests.secrets_corpus import NEGATIVES, POSITIVES, _jwt, _pem, chars

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def test_corpus_every_fake_key_is_redacted_with_its_rule(record_property):
    counts: Counter[str] = Counter()
    for rule, value, text in POSITIVES:
        new, found = redact(text)
        assert value not in new, (rule, new)
        assert found == {rule: 1}, (rule, text, found)
        assert f"[REDACTED:{rule}]" in new
        counts[rule] += 1
    assert set(counts) == set(RULE_NAMES)  # every rule has fake keys in the corpus
    record_property("positives", dict(counts))
    print(f"positives: {sum(counts.values())} {dict(sorted(counts.items()))}")


def test_corpus_no_look_alike_matches(record_property):
    for text in NEGATIVES:
        new, found = redact(text)
        assert (new, found) == (text, {}), text
    record_property("negatives", len(NEGATIVES))
    print(f"negatives: {len(NEGATIVES)}, matched: 0")


def test_redaction_is_idempotent_and_keeps_the_text_around():
    for _rule, _value, text in POSITIVES:
        once, _ = redact(text)
        assert redact(once) == (once, {})
    key = "ghp_" + chars(ALNUM, 36)
    assert redact(f"use {key} now") == ("use [REDACTED:github-token] now", {"github-token": 1})
    assert redact("aws_secret_access_key = " + (secret := chars(ALNUM + "/+", 40)))[0] == (
        "aws_secret_access_key = [REDACTED:aws-secret-access-key]"
    )
    assert secret
    url = "postgres://admin:" + chars(ALNUM, 12) + "@db:5432/app"
    assert redact(url)[0] == "postgres://admin:[REDACTED:url-password]@db:5432/app"


def test_a_private_key_block_goes_whole_also_inside_json():
    block = _pem("OPENSSH")
    text = "before\n" + block + "\nafter"
    new, found = redact(text)
    assert new == "before\n[REDACTED:private-key]\nafter" and found == {"private-key": 1}
    escaped = json.dumps({"content": block})  # newlines as \n escapes: one line of JSON
    new, found = redact(escaped)
    assert json.loads(new) == {"content": "[REDACTED:private-key]"}
    two = block + "\n\n" + _pem("EC")
    assert redact(two) == ("[REDACTED:private-key]\n\n[REDACTED:private-key]", {"private-key": 2})


def test_a_message_is_redacted_in_content_parts_and_tool_call_arguments():
    key = "sk-" + "proj-" + chars(ALNUM, 60)
    token = "glpat-" + chars(ALNUM, 20)
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": f"set {key}"}],
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "run_shell", "arguments": json.dumps({"command": token})},
            }
        ],
    }
    new, found = redact_value(message)
    assert found == {"openai-api-key": 1, "gitlab-token": 1}
    assert key not in json.dumps(new) and token not in json.dumps(new)
    assert json.loads(new["tool_calls"][0]["function"]["arguments"]) == {
        "command": "[REDACTED:gitlab-token]"
    }
    assert new["tool_calls"][0]["id"] == "call_1" and message["content"][0]["text"].endswith(key)
    plain = {"role": "user", "content": "nothing here"}
    assert redact_value(plain) == (plain, {}) and redact_value(plain)[0] is plain


def test_megabytes_of_text_without_secrets_come_back_unchanged():
    text = ("x = compute(task-list, 'https://example.com/a')  # sha 3f2a9c1d\n" * 20_000) * 2
    new, found = redact(text)
    assert new == text and found == {}
    key = "AIza" + chars(ALNUM, 35)
    new, found = redact(text + key)
    assert found == {"google-api-key": 1} and new.endswith("[REDACTED:google-api-key]")


def _unbounded_repeats(pattern: str) -> list[str]:
    """The repetitions of `pattern` without an upper bound (`*`, `+`, `{n,}`)."""
    from re import _constants, _parser  # type: ignore[attr-defined]

    repeats = {_constants.MAX_REPEAT, _constants.MIN_REPEAT}
    repeats |= {getattr(_constants, "POSSESSIVE_REPEAT", _constants.MAX_REPEAT)}
    found: list[str] = []

    def walk(items) -> None:  # type: ignore[no-untyped-def]
        for op, av in items:
            if op in repeats:
                if av[1] == _constants.MAXREPEAT:
                    found.append(str(av[2]))
                walk(av[2])
            elif op == _constants.SUBPATTERN:
                walk(av[-1])
            elif op == _constants.BRANCH:
                for branch in av[1]:
                    walk(branch)
            elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
                walk(av[1])

    walk(_parser.parse(pattern))
    return found


def test_provider_rules_follow_gitleaks_bounded_and_hinted():
    assert GITLEAKS_VERSION.startswith("v8.")
    assert len(_unbounded_repeats(r"a[0-9]+b{2,}(?:c|d*)x{1,9}")) == 3  # it finds them
    names = [row.name for row in (*PROVIDERS, JWT)]
    assert len(names) == len(set(names))
    for row in (*PROVIDERS, JWT):
        assert row.gitleaks and all(gid == gid.lower() for gid in row.gitleaks), row.name
        assert _unbounded_repeats(row.pattern) == [], row.name  # no run without an end
        assert row.name in RULE_NAMES and row.hints, row.name
    # a rule runs only when a hint occurs: every fake key of a rule holds one of its hints
    hints = {rule.name: rule.hints for rule in RULES}
    for rule, value, _text in POSITIVES:
        if rule in {row.name for row in PROVIDERS}:
            assert any(h.lower() in _text.lower() for h in hints[rule]), (rule, value)


def test_the_named_formats_and_their_look_alikes():
    stripe = "sk_" + "live_" + chars(ALNUM, 24)
    cases = {
        stripe: "stripe-access-token",
        "rk_" + "live_" + chars(ALNUM, 24): "stripe-access-token",
        "sk_" + "test_" + chars(ALNUM, 24): "stripe-access-token",
        "hf_" + chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34): (
            "huggingface-access-token"
        ),
        "npm_" + chars(ALNUM, 36): "npm-access-token",
        "pypi-" + "AgEIcHlwaS5vcmc" + chars(ALNUM + "_-", 120): "pypi-upload-token",
        _jwt(): "jwt",
    }
    for key, rule in cases.items():
        assert redact(f"key: {key}\n") == (f"key: [REDACTED:{rule}]\n", {rule: 1}), key
        assert redact(f'"{key}"')[0] == f'"[REDACTED:{rule}]"'  # quoted, in JSON
        assert redact(f"it is {key}.")[0] == f"it is [REDACTED:{rule}]."  # end of a sentence
        assert redact("x" + key)[1] == {}  # the end of a longer identifier: not a key
    assert redact(f"Authorization: Bearer {_jwt()}")[1] == {"bearer-token": 1}
    for text in (
        "sk_" + "live_" + chars(ALNUM, 6),  # too few characters
        "sk_" + "live_" + "x" * 30,  # a placeholder
        "from huggingface_hub import hf_hub_download",
        "npm_config_cache npm_package_json",
        "pypi-" + "AgEIcHlwaS5vcmc" + "x" * 10,
        "eyJ" + "abc.eyJ" + "def.ghi",
    ):
        assert redact(text) == (text, {}), text


@pytest.mark.parametrize("body", ["a", "A1", "~", ".", "-", "/"])
def test_hostile_runs_of_every_hint_end(body):
    """Every hint repeated and glued to long runs: the rules finish (none backtracks
    catastrophically: their repetitions are bounded, starts only at a token's edge), and
    what they leave is stable."""
    hints = sorted({h for rule in RULES for h in rule.hints})
    for hint in hints:
        for text in (
            (hint + body * 3000 + " ") * 8,
            hint * 3000,
            (hint + body * 20) * 500,
            (hint + body * 20 + ".") * 500,
        ):
            once, found = redact(text)
            assert redact(once) == (once, {}), hint
            assert sum(found.values()) <= text.count(hint), hint


# -- the store's gate ------------------------------------------------------------------


def test_store_redacts_what_it_writes_and_reports_where(home):
    seen: list[tuple[str, list[dict]]] = []
    store = SessionStore(
        home, on_redacted=lambda sid, found: seen.append((sid, [f.as_dict() for f in found]))
    )
    key = "xoxb-" + "123456789012-1234567890123-" + chars(ALNUM, 24)
    sid = new_id()
    system = {"role": "system", "content": "system"}
    head = store.create(
        new_header(sid, now_iso(), title=f"about {key}"),
        Change(context=[system], append=[system], pins=[f"pin {key}"]),
        subject=f"create: {key}",
    )
    user = {"role": "user", "content": f"token {key}"}
    change = Change(context=[system, user], append=[user])
    head = store.commit(head, change, event="turn", subject="turn 1")
    note = {"role": "user", "content": f"<session_context_data>{key}</session_context_data>"}
    record = {"before_tokens": 9, "after_tokens": 5, "summary": f"used {key}"}
    compacted = store.commit(
        head,
        Change(context=[system, note, user], compactions=[record]),
        event="compact",
        subject="compact: 9 -> 5 tokens",
    )
    assert store.read(compacted, "compactions")[0]["summary"] == "used [REDACTED:slack-token]"
    assert key not in json.dumps(store.read(compacted, "context"))
    assert change.context[1]["content"] == "token [REDACTED:slack-token]"  # taken back
    assert store.transcript(head)[1]["content"] == "token [REDACTED:slack-token]"
    assert head.header["title"] == "about [REDACTED:slack-token]"
    assert store.read(head, "pins") == ["pin [REDACTED:slack-token]"]
    created, turn, compaction = seen
    assert [(f["where"], f.get("index")) for f in compaction[1]] == [
        ("context", 1),
        ("context", 2),  # the raw `user` dict again: whatever a caller holds is caught
        ("compactions", None),
    ]
    assert {f["where"] for f in created[1]} == {"session.json", "pins", "commit message"}
    assert turn == (  # the context's copy of an appended message is the same finding
        sid,
        [{"where": "transcript", "index": 1, "rule": "slack-token", "count": 1}],
    )
    assert key not in repr(seen)
    with pytest.raises(ConcurrentUpdate):  # `head` is stale: nothing stored, nothing audited
        store.commit(head, Change(append=[user]), event="turn", subject="late")
    assert len(seen) == 3
    store.close()


def _all_objects(home: Path) -> str:
    """Every object in the store, as stock git prints it (commits, trees, blobs)."""
    return subprocess.run(
        ["git", "--git-dir", str(home / "store.git"), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")


def _git_grep(home: Path, value: str) -> str:
    store = str(home / "store.git")
    revs = subprocess.run(
        ["git", "--git-dir", store, "rev-list", "--all"], capture_output=True, text=True
    ).stdout.split()
    found = subprocess.run(
        ["git", "--git-dir", store, "grep", "-F", value, *revs], capture_output=True, text=True
    )
    return found.stdout


@pytest.fixture
def secrets() -> dict[str, str]:
    return {
        "github": "ghp_" + chars(ALNUM, 36),
        "aws": chars(ALNUM + "/+", 40),
        "pem": _pem("RSA"),
        "anthropic": "sk-" + "ant-api03-" + chars(ALNUM, 93) + "AA",
        "stripe": "sk_" + "live_" + chars(ALNUM, 99),
        "huggingface": "hf_" + chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34),
        "npm": "npm_" + chars(ALNUM, 36),
        "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + chars(ALNUM + "_-", 150),
        "jwt": _jwt(),
    }


NEW_FORMATS = {  # the secrets of the fixture the provider rules catch, and their rules
    "stripe": "stripe-access-token",
    "huggingface": "huggingface-access-token",
    "npm": "npm-access-token",
    "pypi": "pypi-upload-token",
    "jwt": "jwt",
}


def _exec_turn_with_secrets(server, tmp_path: Path, secrets: dict[str, str]):
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={secrets['aws']}\n{secrets['pem']}\n")
    server.reply(
        content=f"Reading it; the key {secrets['anthropic']} is not needed.",
        tool_calls=[{"name": "read_file", "arguments": {"path": ".env"}}],
    )
    server.reply(content="The file holds an AWS secret and a private key.")
    server.reply(content="Env file review")  # the list summary
    others = " ".join(secrets[name] for name in NEW_FORMATS)
    done = run_gitsessions(
        *exec_args(server, ws),
        "--json",
        f"my token is {secrets['github']}, now read .env; the others: {others}",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["session"]


def _values(secrets: dict[str, str]) -> list[str]:
    body_lines = [line for line in secrets["pem"].splitlines() if "-----" not in line]
    others = [secrets[name] for name in NEW_FORMATS]
    return [secrets["github"], secrets["aws"], secrets["anthropic"], *others, *body_lines]


def test_an_exec_turn_stores_no_secret_and_the_model_sees_none(server, tmp_path, home, secrets):
    sid = _exec_turn_with_secrets(server, tmp_path, secrets)
    values = _values(secrets)
    objects = _all_objects(home)
    assert "[REDACTED:github-token]" in objects and "[REDACTED:private-key]" in objects
    assert "[REDACTED:aws-secret-access-key]" in objects
    assert "[REDACTED:anthropic-api-key]" in objects
    for value in values:
        assert value not in objects  # no blob, tree or commit message holds it
        assert _git_grep(home, value) == ""
    # the model got the prompt and the tool output redacted, the prompt already at step 1
    sent = json.dumps(server.requests)
    assert all(value not in sent for value in values)
    assert "my token is [REDACTED:github-token]" in sent
    search = run_gitsessions("search", secrets["github"][:20], "--json")
    assert search.returncode == 0 and json.loads(search.stdout) == []
    found = json.loads(run_gitsessions("search", "REDACTED:private-key", "--json").stdout)
    assert [hit["session"] for hit in found] == [sid]
    exported = run_gitsessions("export", sid)
    assert exported.returncode == 0 and "[REDACTED:github-token]" in exported.stdout
    assert all(value not in exported.stdout for value in values)
    audit_text = (home / "audit.jsonl").read_text()
    assert all(value not in audit_text for value in values)
    lines = [json.loads(line) for line in audit_text.splitlines()]
    redactions = [f for a in lines if a["operation"] == "redact" for f in a["findings"]]
    assert all(a["session"] == sid for a in lines if a["operation"] == "redact")
    in_transcript = {(f["rule"], f["index"]) for f in redactions if f["where"] == "transcript"}
    assert in_transcript == {
        ("github-token", 1),  # the prompt
        *((rule, 1) for rule in NEW_FORMATS.values()),
        ("anthropic-api-key", 2),  # the assistant's text
        ("aws-secret-access-key", 3),  # the read_file output
        ("private-key", 3),
    }


def test_a_push_refuses_the_provider_formats_a_store_kept(cli, tmp_path, home, secrets):
    """A session stored with `redact = false` holding the new formats: the push scan
    (the same rules) refuses it and sends nothing."""
    store = SessionStore(home, redact=False, background_maintenance=False)
    sid = new_id()
    system = {"role": "system", "content": "system"}
    head = store.create(
        new_header(sid, now_iso(), title="keys"), Change(context=[system], append=[system])
    )
    for name in NEW_FORMATS:
        user = {"role": "user", "content": f"use {secrets[name]} for the upload"}
        context = [*store.read(head, "context"), user]
        head = store.commit(head, Change(context=context, append=[user]), event="turn", subject="t")
    store.close()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    cli("remote", "add", "origin", str(bare))
    result = cli("push", "--all", code=1)
    line = result.stderr.strip().splitlines()[-1]
    rules = list(NEW_FORMATS.values())
    assert line.startswith("error: refusing to push: "), line
    assert all(f"message {n}: {rule}" in line for n, rule in enumerate(rules[:3], 1)), line
    assert "(and more)" in line
    assert all(secrets[name] not in result.stderr + result.stdout for name in NEW_FORMATS)
    sent = subprocess.run(
        ["git", "--git-dir", str(bare), "for-each-ref"], capture_output=True, text=True
    )
    assert sent.stdout == ""  # nothing was sent


def test_a_search_index_built_under_older_rules_is_rebuilt(home, monkeypatch, secrets):
    """A key the rules of an older version missed was indexed as it was; once the rules
    catch it, the index is rebuilt and the key can no longer be searched for."""
    from gitsessions.services.sessions import search

    key = secrets["huggingface"]
    store = SessionStore(home, redact=False, background_maintenance=False)
    sid = new_id()
    user = {"role": "user", "content": f"log in with {key}"}
    store.create(new_header(sid, now_iso(), title="hub"), Change(context=[user], append=[user]))
    store.close()
    store = SessionStore(home, background_maintenance=False)
    try:
        index = search.SearchIndex(store)
        with monkeypatch.context() as older:  # an older version: its rules missed the key
            older.setattr(search, "redact", lambda text: (text, {}))
            older.setattr(search, "rules_id", lambda: 7)
            assert [hit.session for hit in index.search(key[:24])] == [sid]
        assert index.search(key[:24]) == []
        assert [hit.session for hit in index.search("REDACTED:huggingface")] == [sid]
    finally:
        store.close()
    assert key.encode() not in (home / "search.sqlite").read_bytes()


def test_redact_false_keeps_the_values(server, tmp_path, home, secrets):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("redact = false\n")
    sid = _exec_turn_with_secrets(server, tmp_path, secrets)
    objects = _all_objects(home)
    assert all(value in objects for value in _values(secrets))
    assert secrets["github"] in run_gitsessions("export", sid).stdout
    hits = json.loads(run_gitsessions("search", secrets["github"][:20], "--json").stdout)
    assert [hit["session"] for hit in hits] == [sid]
    # turned back on: exporting and searching that old session no longer show the value
    (home / "config.toml").write_text("redact = true\n")
    exported = run_gitsessions("export", sid).stdout
    assert all(value not in exported for value in _values(secrets))
    assert json.loads(run_gitsessions("search", secrets["github"][:20], "--json").stdout) == []
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["operation"] == "export"
    assert audit[-1]["redacted"]["github-token"] == 2  # the prompt in transcript and context
    assert secrets["github"].encode() not in (home / "search.sqlite").read_bytes()


def test_import_redacts_and_a_bad_setting_is_one_line(cli, tmp_path, home, secrets):
    doc = {
        "format": "gitsessions.session/1",
        "id": new_id(),
        "title": "imported",
        "pins": [f"deploy with {secrets['github']}"],
        "messages": [{"role": "user", "content": secrets["pem"]}],
        "transcript": [{"role": "user", "content": secrets["pem"]}],
    }
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    sid = cli("import", str(path)).stdout.strip()
    objects = _all_objects(home)
    assert all(value not in objects for value in _values(secrets))
    shown = cli("show", sid, "--json").stdout
    assert "[REDACTED:private-key]" in shown
    assert cli("pins", sid, "--json").stdout.count("[REDACTED:github-token]") == 1
    (home / "config.toml").write_text('redact = "no"\n')
    assert run_gitsessions("list").returncode == 0  # reading needs no settings (issue 31)
    bad = run_gitsessions("rename", sid, "renamed")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"error: {home / 'config.toml'}: redact must be true or false, got 'no'"
    ]


def test_chat_prompt_pin_title_and_input_history_are_redacted(server, tmp_path, home, secrets):
    from tests.test_chat import leave, say, spawn

    ws = tmp_path / "project"
    ws.mkdir()
    key = secrets["github"]
    child = spawn(server.base_url, ws)
    say(child, f"remember {key} for later")
    say(child, f"\\pin token {key}")
    say(child, f"\\title deploy with {key}")
    leave(child)
    sent = json.dumps(server.requests)
    assert key not in sent and "remember [REDACTED:github-token] for later" in sent
    objects = _all_objects(home)
    assert key not in objects and objects.count("[REDACTED:github-token]") >= 3
    history = (home / "chat_history").read_text()
    assert key not in history and "\\pin token [REDACTED:github-token]" in history


def test_the_setting_defaults_to_on():
    from gitsessions.services.settings.config_file import ConfigError, redact_setting

    assert redact_setting({}) is True
    assert redact_setting({"redact": False}) is False
    with pytest.raises(ConfigError, match="redact must be true or false"):
        redact_setting({"redact": 0})
