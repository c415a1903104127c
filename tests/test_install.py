"""The README's install for other projects, run for real: `uv tool install` of this
checkout (offline, from uv's cache: `.ci/run` fills it first with one online install; elsewhere a
cache without what it needs skips the test, saying how to fill it) into a folder of the test,
compiled to bytecode as the README's command says, then the installed `gitsessions` used
from a directory outside the checkout: `--version`, one `exec` against the fake model
server, and git hooks that name the session of a commit made with a PATH that has no
gitsessions on it."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI

REAL_ENV = dict(os.environ)  # before the fixtures move HOME: uv's cache and Pythons are there
README_INSTALL = "uv tool install --compile-bytecode ."
# where PYTHONDONTWRITEBYTECODE is set, a package installed uncompiled compiles at every
# start (issue 41); uv ignores a project's `[tool.uv] compile-bytecode` for a tool install


def uv() -> str:
    found = REAL_ENV.get("UV") or shutil.which("uv", path=REAL_ENV.get("PATH"))
    if not found:
        pytest.fail("uv not found: run the tests with `uv run pytest`, as the README says")
    return found


def test_the_readme_install_works_outside_the_checkout(tmp_path: Path):
    assert README_INSTALL in (REPO / "README.md").read_text(), "the README's command changed"
    tools, bin_dir = tmp_path / "uv-tools", tmp_path / "uv-bin"
    done = subprocess.run(
        [uv(), "tool", "install", "--offline", *README_INSTALL.split()[3:]],
        cwd=REPO,
        env=dict(REAL_ENV, UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bin_dir)),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    if done.returncode and "found in the cache" in done.stderr and not os.environ.get("CI"):
        pytest.skip(  # .ci/run fills the cache (CI=true: this is a failure there)
            "uv's cache lacks what an offline `uv tool install .` reads: one online "
            "install into a throwaway UV_TOOL_DIR fills it (as .ci/run does)"
        )
    assert done.returncode == 0, done.stderr
    installed = bin_dir / "gitsessions"
    assert installed.is_file()
    compiled = list(tools.glob("gitsessions/lib/python*/site-packages/gitsessions/cli/__pycache__"))
    assert compiled and any(p.name.startswith("entry.") for p in compiled[0].iterdir())

    project = tmp_path / "elsewhere"
    project.mkdir()
    env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")  # no venv, no checkout

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(installed), *args], cwd=project, env=env, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip

    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("gitsessions "), version

    git = ["git", "-C", str(project)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True, env=env)
    with FakeOpenAI(strict=True) as server:
        server.reply(content="Four.")
        server.reply(content="Arithmetic")  # the list summary
        done = run("exec", "what is 2+2", "--base-url", server.base_url, "--model", "m", "--json")
        assert done.returncode == 0, done.stderr
        session = json.loads(done.stdout)["session"]
        assert json.loads(done.stdout)["reply"] == "Four."

    hooks = run("hooks", "install")
    assert hooks.returncode == 0, hooks.stderr
    (project / "f.txt").write_text("x\n")
    commit_env = dict(env, GITSESSIONS_SESSION=session, GIT_AUTHOR_NAME="D",
                      GIT_AUTHOR_EMAIL="d@example.com", GIT_COMMITTER_NAME="D",
                      GIT_COMMITTER_EMAIL="d@example.com")  # fmt: skip
    subprocess.run([*git, "add", "f.txt"], check=True, env=commit_env)
    subprocess.run([*git, "commit", "-qm", "agent work"], check=True, env=commit_env)
    trailer = subprocess.run(
        [*git, "log", "-1", "--format=%(trailers:key=Gitsessions-Session,valueonly)"],
        check=True, env=env, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert trailer == session
    shown = run("show", "--commit", "HEAD")
    assert shown.returncode == 0 and "what is 2+2" in shown.stdout, shown.stderr
