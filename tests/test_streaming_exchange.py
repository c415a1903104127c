"""Export and import of long sessions stream: one transcript record in memory at a time,
a long import written in parts whose branch appears only with the last."""

import io
import json
from functools import partial

import pytest

from gitsessions.services.sessions import exchange
from gitsessions.store.sessions import Change, SessionStore
from gitsessions.values import jsonstream
from gitsessions.values.canonical import dumps
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from gitsessions.values.secrets import redact_value
from tests.conftest import fsck, git


def _session(store: SessionStore, turns: int) -> str:
    sid = new_id()
    system = {"role": "system", "content": "You are a coding agent."}
    head = store.create(
        new_header(sid, now_iso(), title="long"), Change(context=[system], append=[system])
    )
    body = []
    for n in range(turns):
        body += [
            {
                "role": "user",
                "content": f"question {n} token=ghp_{'a' * 36}" if n == 3 else f"question {n}",
            },
            {"role": "assistant", "content": f"answer {n}"},
        ]
    store.commit(head, Change(context=[system, *body[-6:]], append=body), event="turn", subject="t")
    return sid


def test_streamed_export_is_the_same_bytes_as_the_whole_document(store):
    sid = _session(store, 40)
    head = store.head(sid)
    counted: exchange.Counter[str] = exchange.Counter()
    streamed = b"".join(exchange.export_bytes(store, head, counted))
    whole = exchange._document(store, head, store.records(head))  # held whole in memory
    doc, redacted = redact_value(whole) if store.redact else (whole, {})
    assert streamed == dumps(doc)
    assert dict(counted) == redacted  # what export redacts is counted either way


def test_a_long_import_is_written_in_parts_and_the_branch_comes_last(store, tmp_path, monkeypatch):
    sid = _session(store, 40)  # 81 messages
    path = tmp_path / "export.json"
    path.write_bytes(b"".join(exchange.export_bytes(store, store.head(sid), exchange.Counter())))
    original = store.transcript(store.head(sid))
    monkeypatch.setattr(exchange, "PART", 16)
    export = exchange.load_export(partial(open, path, encoding="utf-8"))
    assert export.records == 81 and export.doc["transcript"] == []
    head = exchange.import_export(store, export, fresh_id=True, now=now_iso())
    assert store.transcript(head) == original
    assert store.read(head, "context") == original[:1] + original[-6:]
    inline = store.git.get(store.git.get(head.tree)[b"context-inline.json"][1]).data
    assert json.loads(inline)["inline"] == []  # every context message is a transcript line
    subjects = git(store.git.path, "log", "--format=%s", f"refs/heads/sessions/{head.id}").stdout
    assert subjects.splitlines() == ["import: long"] + [
        f"import: long (part {n})" for n in range(5, 0, -1)
    ]
    again = b"".join(exchange.export_bytes(store, head, exchange.Counter()))
    assert json.loads(again)["transcript"] == json.loads(path.read_bytes())["transcript"]
    fsck(store.home)


def test_an_import_that_fails_midway_leaves_no_session(store, tmp_path, monkeypatch):
    sid = _session(store, 40)
    path = tmp_path / "export.json"
    path.write_bytes(b"".join(exchange.export_bytes(store, store.head(sid), exchange.Counter())))
    monkeypatch.setattr(exchange, "PART", 16)
    export = exchange.load_export(partial(open, path, encoding="utf-8"))
    real = exchange._change
    calls = []

    def failing(batch, change):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(batch, change)

    monkeypatch.setattr(exchange, "_change", failing)
    before = set(store.ids())
    with pytest.raises(OSError):
        exchange.import_export(store, export, fresh_id=True, now=now_iso())
    assert set(store.ids()) == before
    fsck(store.home)


def test_the_checks_see_the_whole_file_before_anything_is_written(store, tmp_path, monkeypatch):
    sid = _session(store, 20)
    doc = json.loads(b"".join(exchange.export_bytes(store, store.head(sid), exchange.Counter())))
    doc["transcript"][-1]["message"] = {"role": "tool", "tool_call_id": "nobody", "content": "x"}
    doc["id"] = new_id()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(exchange, "PART", 4)
    with pytest.raises(exchange.InvalidExport, match="has no matching call"):
        exchange.load_export(partial(open, path, encoding="utf-8"))
    assert doc["id"] not in store.ids()


def test_format_after_transcript_is_still_checked(tmp_path):
    doc = {"transcript": [{"message": {"role": "user", "content": "hi"}, "turn": -1}],
           "messages": [], "id": new_id(), "format": "gitsessions.session/2"}  # fmt: skip
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(exchange.InvalidExport, match="non-negative integer"):
        exchange.load_export(partial(open, path, encoding="utf-8"))


@pytest.mark.parametrize("read", [1, 3, 7, 1 << 20])
def test_members_read_across_any_buffer_boundary(monkeypatch, read):
    monkeypatch.setattr(jsonstream, "READ", read)
    text = json.dumps({"a": 12345678, "t": [{"x": "y" * 20}, 3.25, [1, [2]], "s"], "z": None})
    seen = {}
    for key, value in jsonstream.members(io.StringIO(text), streamed="t"):
        seen[key] = list(value) if key == "t" else value
    assert seen == json.loads(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": 1,', "Expecting"),
        ('{"t": [1, 2', "Expecting"),
        ('{"a": 1} x', "Extra data"),
        ('{"a" 1}', "Expecting ':'"),
        ("[1]", "not a JSON object"),
    ],
)
def test_members_refuse_malformed_json(text, problem):
    with pytest.raises(ValueError, match=problem):
        for _key, value in jsonstream.members(io.StringIO(text), streamed="t"):
            if not isinstance(value, int | str | type(None)):
                list(value)


def test_a_late_error_names_its_line_in_the_file(monkeypatch):
    monkeypatch.setattr(jsonstream, "READ", 8)
    text = '{"t": [\n' + "1,\n" * 50 + "x]}"
    with pytest.raises(json.JSONDecodeError) as caught:
        for _key, value in jsonstream.members(io.StringIO(text), streamed="t"):
            list(value)
    assert caught.value.lineno == 52


def test_cli_import_of_an_export_piped_in(cli, store, tmp_path):
    sid = _session(store, 10)
    store.close()
    data = cli("export", sid).stdout
    assert json.loads(data)["id"] == sid
    new = cli("import", "--new-id", "-", input=data).stdout.strip()
    assert cli.json("show", new)[-1]["content"] == "answer 9"
