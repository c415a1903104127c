"""Export and import: format 3 (and format-2 and format-1 documents), validation, exact
round trips, a session's files carried and checked."""

import base64
import copy
import json
import os
from pathlib import Path

import pytest

from gitsessions.store.files import name_of
from gitsessions.store.sessions import Change
from tests.conftest import fsck, git, run_gitsessions
from tests.test_store_files import PNG, shown, with_image

SID = "0123456789abcdef0123456789abcdef"


def document() -> dict:
    context = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "fix the parser"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "parser.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "def parse(): ..."},
        {"role": "assistant", "content": "Fixed. ✓ (unicode kept)"},
    ]
    return {
        "format": "gitsessions.session/1",
        "id": SID,
        "title": "Parser fix",
        "summary": "",
        "parent_id": None,
        "fork_point": None,
        "archived": False,
        "created_at": "2026-11-30T10:00:00Z",
        "updated_at": "2026-11-30T10:05:00Z",
        "workspace": {"path": "/abs/dir", "repo_root": None, "branch": None, "head": None},
        "model": "gemma4",
        "messages": context,
        "transcript": context,
        "plan": [{"step": "write a test", "status": "pending"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "requests": 2, "cost_usd": 0.0},
        "compactions": [
            {
                "time": "2026-11-30T10:04:00Z",
                "trigger": "manual",
                "before_tokens": 900,
                "after_tokens": 200,
                "summary": "...",
            }
        ],
    }


def write(tmp_path: Path, doc: object, name: str = "export.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


def test_import_then_export_round_trips_exactly(cli, tmp_path, home):
    path = write(tmp_path, document())
    assert cli("import", str(path)).stdout.strip() == SID
    first = cli("export", SID).stdout
    assert "secrets" in cli("export", SID).stderr
    reimport = write(tmp_path, first, "again.json")
    cli("delete", SID, "--yes")
    cli("import", str(reimport))
    assert cli("export", SID).stdout == first
    exported = json.loads(first)
    original = document()
    # a format-1 document's transcript imports as records without times
    assert exported["format"] == "gitsessions.session/2"  # it holds no files
    assert exported["transcript"] == [{"message": m} for m in original["transcript"]]
    for key in (
        "messages",
        "title",
        "workspace",
        "plan",
        "compactions",
        "created_at",
        "updated_at",
        "model",
    ):
        assert exported[key] == original[key], key
    assert cli.json("info", SID)["usage"]["prompt_tokens"] == 120
    fsck(home)


def test_a_format_2_document_keeps_its_records_through_a_round_trip(cli, tmp_path):
    doc = document()
    doc["format"] = "gitsessions.session/2"
    doc["active_at"] = "2026-11-30T10:04:00Z"
    doc["transcript"] = [
        {"message": m, "time": f"2026-11-30T10:00:0{n}.125Z", "turn": 1, "step": n}
        for n, m in enumerate(doc["transcript"])
    ]
    doc["transcript"][-1].update(model="gemma4", usage={"prompt_tokens": 9})
    cli("import", str(write(tmp_path, doc)))
    exported = json.loads(cli("export", SID).stdout)
    assert exported["transcript"] == doc["transcript"]
    assert exported["active_at"] == "2026-11-30T10:04:00Z"
    bad = copy.deepcopy(doc)
    bad["transcript"][1]["time"] = "yesterday"
    cli("delete", SID, "--yes")
    result = cli("import", str(write(tmp_path, bad, "bad.json")), code=1)
    assert "transcript[1]: 'time' must look like" in result.stderr


def test_export_to_file(cli, tmp_path, make_session):
    head = make_session(turns=1)
    out = tmp_path / "out.json"
    cli("export", head.id, "-o", str(out))
    doc = json.loads(out.read_text())
    assert doc["id"] == head.id and doc["format"] == "gitsessions.session/2"  # no files
    assert len(doc["transcript"]) == 3
    assert all(r["time"].endswith("Z") for r in doc["transcript"])


def test_existing_id_needs_new_id(cli, tmp_path):
    path = write(tmp_path, document())
    cli("import", str(path))
    result = cli("import", str(path), code=1)
    assert "already exists" in result.stderr and "--new-id" in result.stderr
    fresh = cli("import", str(path), "--new-id").stdout.strip()
    assert len(fresh) == 32 and fresh != SID
    assert cli.json("info", fresh)["title"] == "Parser fix"
    assert len(cli.json("list")) == 2


def _broken(mutate) -> dict:
    doc = copy.deepcopy(document())
    mutate(doc)
    return doc


@pytest.mark.parametrize(
    "doc,message",
    [
        ("{not json", "malformed JSON"),
        (_broken(lambda d: d.update(format="gitsessions.session/9")), "unknown format"),
        (_broken(lambda d: d.update(id="../../etc")), "'id' must be 32"),
        (_broken(lambda d: d.update(title=5)), "'title' must be a string"),
        (_broken(lambda d: d.update(archived="yes")), "'archived' must be true or false"),
        (_broken(lambda d: d.update(messages="hi")), "messages: expected a list"),
        (_broken(lambda d: d["transcript"].pop(2)), "has no matching call"),
        (_broken(lambda d: d["messages"].pop(3)), "has no result"),
        (_broken(lambda d: d["messages"][1].update(role="wizard")), "role must be one of"),
        (_broken(lambda d: d.update(created_at="yesterday")), "'created_at' must look like"),
        (_broken(lambda d: d.update(usage={"prompt_tokens": -1})), "usage.prompt_tokens"),
        (_broken(lambda d: d.update(extra=1)), "unknown field 'extra'"),
        (_broken(lambda d: d.pop("transcript")), "missing 'transcript'"),
        (_broken(lambda d: d.update(title="a\nb")), "single line"),
        ([1, 2], "must be a JSON object"),
        (
            _broken(
                lambda d: d["messages"][2]["tool_calls"].append(d["messages"][2]["tool_calls"][0])
            ),
            "duplicate tool call id 'call_1'",
        ),
        (_broken(lambda d: d["messages"][4].update(incomplete="yes")), "incomplete must be true"),
        (
            _broken(lambda d: d["messages"][4].update(unsent_tool_calls=[{"id": 1}])),
            "unsent_tool_calls[0] needs a string id",
        ),
        (
            _broken(lambda d: d["messages"][4].update(incomplete=True)),
            "messages[4]: 'incomplete' belongs in the transcript only",
        ),
    ],
)
def test_invalid_documents_write_nothing(cli, tmp_path, home, doc, message):
    path = write(tmp_path, doc)
    result = cli("import", str(path), code=1)
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert str(path) in result.stderr
    assert cli("list", "--include-archived", "--json").stdout.strip() == "[]"
    every = git(home / "store.git", "cat-file", "--batch-all-objects", "--batch-check")
    readme = git(home / "store.git", "rev-list", "--objects", "refs/heads/main").stdout.split()
    ids = {line.split()[0] for line in every.stdout.splitlines()}
    assert ids == set(readme) - {"README.md"}  # nothing but main's README commit
    assert len(list((home / "store.git" / "objects").glob("pack/*.pack"))) == 1  # its pack


def test_non_utf8_and_missing_files(cli, tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"title": "caf\xe9"}')
    assert "not valid UTF-8" in cli("import", str(bad), code=1).stderr
    assert "cannot read" in cli("import", str(tmp_path / "nope.json"), code=1).stderr


def test_import_from_stdin(cli):
    result = cli("import", "-", input=json.dumps(document()))
    assert result.stdout.strip() == SID


@pytest.mark.parametrize(
    "number,message",
    [
        ("1" * 5000, "5000-digit integer is too large"),
        ("-" + "9" * 25, "25-digit integer is too large"),
        ("18446744073709551616", "20-digit integer is too large"),
        ("1e999", "is not a number a session can hold"),
    ],
)
def test_huge_numbers_are_one_line_errors(cli, tmp_path, home, number, message):
    text = json.dumps(document()).replace('"prompt_tokens": 120', f'"prompt_tokens": {number}')
    assert number in text
    path = write(tmp_path, text)
    result = cli("import", str(path), code=1)
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert cli("list", "--include-archived", "--json").stdout.strip() == "[]"


def test_huge_integer_anywhere_in_the_file_is_refused(cli, tmp_path):
    doc = document()
    doc["compactions"][0]["extra"] = 1  # unknown record fields are kept as data
    text = json.dumps(doc).replace('"extra": 1', '"extra": ' + "7" * 4400)
    result = cli("import", "-", input=text, code=1)
    assert "4400-digit integer" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_sessions_files_travel_once_and_round_trip(cli, tmp_path, home, store):
    head, name = with_image(store)
    again = {"role": "user", "content": f"the same: {name}"}
    context = [*store.read(head, "context"), again]
    meta = [{"source": {"files": [name, "files/" + "0" * 64 + ".png"]}}]  # one it lacks
    store.commit(
        head, Change(context=context, append=[again], append_meta=meta), event="turn", subject="t"
    )
    first = cli("export", head.id).stdout
    doc = json.loads(first)
    assert doc["format"] == "gitsessions.session/3"
    assert [r.get("files") for r in doc["transcript"]] == [
        {name: base64.b64encode(PNG).decode()},
        None,  # carried once; a name the session holds no file of travels as a name
    ]
    cli("delete", head.id, "--yes")
    cli("import", str(write(tmp_path, first, "again.json")))
    assert cli("export", head.id).stdout == first
    assert shown(home, f"refs/heads/sessions/{head.id}:{name}") == PNG
    fsck(home)


def _with_files(files: object, fmt: str = "gitsessions.session/3") -> dict:
    doc = document()
    doc["format"] = fmt
    doc["transcript"] = [{"message": m} for m in doc["transcript"]]
    doc["transcript"][3]["files"] = files
    return doc


GOOD = name_of(PNG, "image/png")
B64 = base64.b64encode(PNG).decode()


@pytest.mark.parametrize(
    "doc, why",
    [
        (_with_files({GOOD: B64}, "gitsessions.session/2"), "unknown field 'files'"),
        (_with_files([B64]), "'files' must be an object"),
        (_with_files({GOOD.replace("png", "svg"): B64}), "is not the name of a session's file"),
        (_with_files({"files/../session.json": B64}), "is not the name of a session's file"),
        (_with_files({name_of(b"x", "image/png"): B64}), "another SHA-256"),
        (_with_files({GOOD: "not base64!"}), "is not base64"),
        (_with_files({GOOD: "A" * (8 * 1024 * 1024)}), "not base64 of a file's size"),
    ],
)
def test_an_exports_files_are_checked_before_anything_is_written(cli, tmp_path, doc, why):
    result = cli("import", str(write(tmp_path, doc)), code=1)
    assert "transcript[3]: " in result.stderr and why in result.stderr
    assert cli.json("list") == []


def test_a_fifo_is_one_line_never_waited_on(tmp_path, home):
    """Issue 42, item 8: a FIFO named as the export file was opened and waited on for a
    writer for ever (a real process, so that a regression fails at its timeout)."""
    os.mkfifo(tmp_path / "pipe")
    done = run_gitsessions("import", str(tmp_path / "pipe"), timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / 'pipe'} is a FIFO: only a regular file is read; to import from "
        "a pipe, give - as FILE"
    ]
