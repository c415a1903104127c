"""Project instructions (issue 23, item 1): AGENTS.md from the repository root down to
the workspace (CLAUDE.md where a folder has no AGENTS.md) and the user's own in the home,
nearest last, in the system prompt with their paths; read again on resume; kept through
a compaction; cut with a note when huge; `info` names them with their size in tokens.
Real `exec` processes against the fake model server."""

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI


def gs(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_gitsessions(*args, cwd=cwd)


def exec_turn(server: FakeOpenAI, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return gs(cwd, "exec", *args, "--base-url", server.base_url, "--model", "m", "--json")


def system_of(request: dict) -> str:  # type: ignore[type-arg]
    first = request["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "sub" / "deeper").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text("ROOT RULE: run make test\n")
    (root / "sub" / "AGENTS.md").write_text("SUB RULE: tabs here\n")
    (root / "sub" / "CLAUDE.md").write_text("CLAUDE IN SUB: never read, AGENTS.md wins\n")
    (root / "sub" / "deeper" / "CLAUDE.md").write_text("DEEPER CLAUDE: read, no AGENTS.md\n")
    return root


def test_the_instructions_nearest_last_with_the_users_first(tmp_path, home):
    root = project(tmp_path)
    home.mkdir(parents=True, exist_ok=True)
    (home / "AGENTS.md").write_text("USER RULE: be brief\n")
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Summary")
        done = exec_turn(server, root / "sub" / "deeper", "hi")
        assert done.returncode == 0, done.stderr
        system = system_of(server.requests[0])
    order = [system.index(text) for text in ("USER RULE", "ROOT RULE", "SUB RULE", "DEEPER CLAUDE")]
    assert order == sorted(order)
    assert "CLAUDE IN SUB" not in system
    real = Path(os.path.realpath(root))
    assert f'<instructions path="{real / "sub" / "AGENTS.md"}">' in system
    sid = json.loads(done.stdout)["session"]
    info = json.loads(gs(tmp_path, "info", sid, "--json").stdout)
    assert [r["path"] for r in info["instructions"]] == [
        str(home / "AGENTS.md"), str(real / "AGENTS.md"), str(real / "sub" / "AGENTS.md"),
        str(real / "sub" / "deeper" / "CLAUDE.md"),
    ]  # fmt: skip
    assert info["instructions"][1]["tokens"] > 0 and not info["instructions"][1]["cut"]
    shown = gs(tmp_path, "info", sid).stdout
    assert "instructions" in shown and "AGENTS.md (about" in shown


def test_resume_reads_them_again_and_a_compaction_keeps_them(tmp_path):
    root = project(tmp_path)
    with FakeOpenAI(strict=True) as server:
        server.reply(content="first answer " + "x" * 400)
        server.reply(content="Summary")
        sid = json.loads(exec_turn(server, root, "one").stdout)["session"]
        (root / "AGENTS.md").write_text("ROOT RULE v2: run make check\n")
        server.reply(content="second answer " + "y " * 3000)
        done = exec_turn(server, root, "two", "--resume", sid)
        assert done.returncode == 0, done.stderr
        system = system_of(server.requests[-1])
        assert "ROOT RULE v2" in system and "run make test" not in system
        server.reply(content="third answer " + "z " * 3000)
        assert exec_turn(server, root, "more", "--resume", sid).returncode == 0
        server.reply(content="A summary of the work so far.")
        compacted = gs(root, "compact", sid, "--base-url", server.base_url, "--model", "m",
                       "--max-context-tokens", "4000", "--target", "0.05")  # fmt: skip
        assert compacted.returncode == 0, compacted.stderr
        assert "summarized 4 messages" in compacted.stderr
        context = json.loads(gs(root, "show", sid, "--context", "--json").stdout)
        assert context[0]["role"] == "system" and "ROOT RULE v2" in context[0]["content"]
        assert "<session_context_data>" in json.dumps(context)  # a summary took turns' place
        server.reply(content="fourth answer")
        assert exec_turn(server, root, "three", "--resume", sid).returncode == 0
        assert "ROOT RULE v2" in system_of(server.requests[-1])


def test_a_huge_file_is_cut_with_a_note_and_a_symlink_out_is_not_read(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text("".join(f"rule {n}: keep it tidy\n" for n in range(5000)))
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    (root / "sub").mkdir()
    (root / "sub" / "AGENTS.md").symlink_to(secret)
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Summary")
        done = exec_turn(server, root / "sub", "hi")
        assert done.returncode == 0, done.stderr
        system = system_of(server.requests[0])
    size = (root / "AGENTS.md").stat().st_size
    assert f"is {size:,} bytes; the model gets its first 32," in done.stderr
    assert "(cut: only its first 32," in system and "rule 4999" not in system
    assert "TOP SECRET" not in system
    assert "points outside" in done.stderr
