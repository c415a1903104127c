"""Issue 30: what is resumed from an imported session is a request the API accepts:
tool names the API would refuse mapped (the source's kept in the record), arguments
that are not JSON wrapped, roles alternating, every call answered."""

import json
import re
from typing import Any

from gitsessions.services.imports import codex
from gitsessions.services.imports.tool_names import api_name
from gitsessions.values.messages import pairing_errors
from tests.conftest import exec_args, run_gitsessions
from tests.fake_openai import alternation_error
from tests.import_fixtures import CODEX_SESSION
from tests.test_import_evidence import Rollout

REDACTED = "[REDACTED_NAME len=43 sha=1f2e]"


def test_api_name_keeps_valid_names_and_maps_the_rest_uniquely():
    assert api_name("mcp__github__create_issue") == "mcp__github__create_issue"
    mapped = {api_name(n) for n in (REDACTED, "Bash\n", "x" * 65, "a.b", "a b", "")}
    assert len(mapped) == 6
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in mapped)
    assert api_name("Bash\n") != "Bash"  # `$` would match before the newline
    assert api_name(REDACTED) == api_name(REDACTED)


def test_a_resumed_import_sends_a_request_the_api_accepts(server, cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("developer", "<permissions instructions>sandboxed</permissions instructions>")
    r.message("user", "look around")
    r.call("call_1", name=REDACTED, arguments='{"q": "x"}')
    r.call("call_2", name="Bash\n", arguments="ls -la (not JSON)")
    r.tokens()
    r.message("developer", "Approved command prefix saved: ls")
    r.output("call_1", "found")
    r.output("call_2", "a.py")
    r.message("assistant", "First thought.")
    r.tokens()
    r.message("assistant", "Second thought.")  # two replies in a row
    r.tokens()
    r.message("user", "and now?")
    r.call("call_3", arguments='{"command":"make"}')  # never answered: the file ends
    path = r.write()
    cli("import", "--from", "codex", str(path))
    sid = codex.derived_id(CODEX_SESSION)
    doc = json.loads(cli("export", sid).stdout)
    [record] = [t for t in doc["transcript"] if t["message"].get("tool_calls")][:1]
    assert record["source"]["tool_names"] == {
        api_name(REDACTED): REDACTED,
        api_name("Bash\n"): "Bash\n",
    }
    ws = tmp_path / "here"
    ws.mkdir()
    server.reply(content="Resumed.")
    done = run_gitsessions(*exec_args(server, ws), "--resume", sid[:8], "go on")
    assert done.returncode == 0, done.stderr
    assert server.rejected == []
    sent: list[dict[str, Any]] = server.requests[0]["messages"]
    assert alternation_error(sent) is None
    assert pairing_errors(sent) == []
    calls = [c for m in sent for c in m.get("tool_calls") or []]
    assert len(calls) == 3
    for one in calls:
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", one["function"]["name"])
        assert isinstance(json.loads(one["function"]["arguments"]), dict)
    assert json.loads(calls[1]["function"]["arguments"]) == {"input": "ls -la (not JSON)"}
    text = json.dumps(sent)
    assert "First thought." in text and "Second thought." in text


def test_text_with_unicode_line_separators_is_stored_and_read_back(cli, tmp_path):
    r = Rollout(tmp_path / "rollout.jsonl")
    r.message("user", "split\u2028here\u2029and\x85there")
    r.message("assistant", "Kept\u2028whole.")
    cli("import", "--from", "codex", str(r.write()))
    doc = json.loads(cli("export", codex.derived_id(CODEX_SESSION)).stdout)
    assert [m["content"] for m in doc["messages"]] == [
        "split\u2028here\u2029and\x85there",
        "Kept\u2028whole.",
    ]
