"""A transcript line holding Unicode line separators (U+2028, U+0085, as real Codex tool
outputs do) stays one line: the session reads back whole (issue 30)."""

import json

from tests.conftest import exec_args, run_gitsessions


def test_a_message_with_unicode_line_separators_reads_back(server, workspace):
    prompt = "one\u2028two\u0085three\u2029four"
    server.reply(content="seen: \u2028\u0085")
    server.reply(content="A title")
    done = run_gitsessions(*exec_args(server, workspace), prompt, "--json")
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    shown = run_gitsessions("show", sid, "--json")
    assert shown.returncode == 0, shown.stderr
    messages = json.loads(shown.stdout)
    assert [m["content"] for m in messages[1:]] == [prompt, "seen: \u2028\u0085"]
    exported = run_gitsessions("export", sid)
    assert exported.returncode == 0, exported.stderr
