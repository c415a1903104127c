"""Files other programs hand us (issue 32, "Files"): an instruction file that is not a
regular file is skipped without blocking, the note of a cut one stays outside its
`<instructions>` element, instruction files over a quarter of the context budget are
one warning and `info` says what they take, and Claude Code's and Codex's settings are
written through a symlink to its target. Real `exec` processes against the fake model
server; the in-process CLI for `hooks`."""

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import run_gitsessions
from tests.fake_openai import FakeOpenAI


def gs(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_gitsessions(*args, cwd=cwd, timeout=timeout)


def exec_turn(server: FakeOpenAI, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return gs(cwd, "exec", *args, "--base-url", server.base_url, "--model", "m", "--json")


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return Path(os.path.realpath(root))


def test_an_agents_md_linked_to_a_fifo_is_skipped_without_blocking(tmp_path):
    root = repository(tmp_path)
    os.mkfifo(root / "pipe")
    (root / "AGENTS.md").symlink_to(root / "pipe")  # inside the project
    (root / "sub").mkdir()
    os.mkfifo(root / "sub" / "AGENTS.md")  # a FIFO of its own name
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Title")
        done = gs(root / "sub", "exec", "hi", "--base-url", server.base_url, "--model", "m",
                  timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "is not a regular file" in line]
    assert len(notes) == 2, done.stderr
    assert "<instructions" not in server.requests[0]["messages"][0]["content"]


def test_the_cut_note_is_outside_the_instructions_element(tmp_path):
    root = repository(tmp_path)
    (root / "AGENTS.md").write_text("".join(f"rule {n}: keep it tidy\n" for n in range(5000)))
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Title")
        assert exec_turn(server, root, "hi").returncode == 0
        system = server.requests[0]["messages"][0]["content"]
    opening = f'<instructions path="{root / "AGENTS.md"}">\n'
    assert opening in system  # the tag holds its path and nothing else
    after = system[system.index("</instructions>") :]
    assert after.startswith("</instructions>\n(cut: only its first 32,"), after[:200]
    assert system.count("(cut:") == 1


def test_instructions_over_a_quarter_of_the_budget_warn_once_and_info_says(tmp_path):
    root = repository(tmp_path)
    (root / "AGENTS.md").write_text("".join(f"rule {n}: keep it tidy\n" for n in range(1300)))
    with FakeOpenAI(strict=True) as server:
        server.reply(content="ok")
        server.reply(content="Title")
        done = exec_turn(server, root, "hi", "--max-context-tokens", "24000")
        assert done.returncode == 0, done.stderr
        warnings = [line for line in done.stderr.splitlines() if "instruction files take" in line]
        assert len(warnings) == 1 and "of the 24,000-token context budget" in warnings[0]
        sid = json.loads(done.stdout)["session"]
        server.reply(content="ok")
        quiet = exec_turn(server, root, "more", "--resume", sid, "--max-context-tokens", "64000")
        assert quiet.returncode == 0 and "instruction files take" not in quiet.stderr
    info = json.loads(gs(root, "info", sid, "--json").stdout)
    assert info["instructions_tokens"] == info["instructions"][0]["tokens"] > 6000
    shown = gs(root, "info", sid).stdout
    assert f"about {info['instructions_tokens']:,} tokens in all" in shown


def test_hooks_write_through_a_symlinked_settings_file(cli, tmp_path, monkeypatch):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"model": "opus"}\n')
    (dotfiles / "codex.toml").write_text('model = "gpt-5"\n')
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    claude.mkdir()
    codex.mkdir()
    (claude / "settings.json").symlink_to(dotfiles / "claude.json")
    (codex / "config.toml").symlink_to(dotfiles / "codex.toml")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    cli("hooks", "install", "--claude-code", "--codex")
    for link, target in ((claude / "settings.json", "claude.json"),
                         (codex / "config.toml", "codex.toml")):  # fmt: skip
        assert link.is_symlink() and link.readlink() == dotfiles / target
    assert "Stop" in json.loads((dotfiles / "claude.json").read_text())["hooks"]
    assert (dotfiles / "codex.toml").read_text().startswith("notify = ")
    cli("hooks", "uninstall", "--claude-code", "--codex")
    assert (claude / "settings.json").is_symlink() and (codex / "config.toml").is_symlink()
    assert json.loads((dotfiles / "claude.json").read_text()) == {"model": "opus"}
    assert (dotfiles / "codex.toml").read_text() == 'model = "gpt-5"\n'
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json", "codex.toml"]
