"""The git hooks in a real project repository: `hooks install` chains to the user's own
hooks and `uninstall` restores them byte for byte; a real `git commit` made by a session's
agent (GITSESSIONS_SESSION) or in a session's worktree (its header's worktree.path) gets
one Gitsessions-Session trailer, and `show --commit` finds the session back."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitsessions.services.code import git_hooks, worktree_mark
from gitsessions.services.tools.shell_env import shell_environment
from gitsessions.store.sessions import Change
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from tests.conftest import exec_args, run_gitsessions

BIN = Path(sys.executable).parent  # where this environment's `gitsessions` script is
TRAILER_FORMAT = "--format=%(trailers:key=Gitsessions-Session,valueonly)"


def hook_env(**extra: str) -> dict[str, str]:
    """The test's environment with this gitsessions first on PATH."""
    assert (BIN / "gitsessions").exists(), "run the tests with `uv run pytest`"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.update(extra)
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True):
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env=env or hook_env(),
        stdin=subprocess.DEVNULL,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project repository with one commit."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Dev")
    git(repo, "config", "user.email", "dev@example.com")
    (repo / "app.py").write_text("print('v1')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def commit(repo: Path, message: str, env: dict[str, str], *flags: str, check: bool = True):
    (repo / "app.py").write_text((repo / "app.py").read_text() + "#\n")
    git(repo, "add", "-A", env=env)
    return git(repo, "commit", "-q", *flags, *(["-m", message] if message else []), env=env,
               check=check)  # fmt: skip


def trailers(repo: Path, rev: str = "HEAD") -> list[str]:
    return git(repo, "log", "-1", TRAILER_FORMAT, rev).stdout.split()


def install(repo: Path) -> subprocess.CompletedProcess[str]:
    done = run_gitsessions("hooks", "install", "--workspace", str(repo), env=hook_env())
    assert done.returncode == 0, done.stderr
    return done


def snapshot(directory: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every entry of a hooks folder: symlinks by target, files by mode and bytes."""
    found: dict[str, tuple[str, int, bytes | str]] = {}
    for path in sorted(directory.iterdir()):
        if path.is_symlink():
            found[path.name] = ("link", 0, os.readlink(path))
        elif path.is_file():
            found[path.name] = ("file", path.stat().st_mode, path.read_bytes())
    return found


def test_agent_session_commit_gets_one_trailer(project):
    install(project)
    sid = new_id()
    env = hook_env(GITSESSIONS_SESSION=sid)
    commit(project, "change app", env)
    assert trailers(project) == [sid]
    git(project, "commit", "-q", "--amend", "--no-edit", env=env)  # both hooks run again
    assert trailers(project) == [sid]  # never doubled
    body = git(project, "log", "-1", "--format=%B").stdout
    assert body.startswith("change app\n\nGitsessions-Session: ")
    commit(project, "by hand", hook_env())  # no session around: no trailer
    assert trailers(project) == []
    assert git(project, "fsck", "--no-progress").returncode == 0


def test_editor_commits_get_the_trailer_and_empty_messages_still_abort(project):
    install(project)
    sid = new_id()
    # the message is typed in the editor: commit-msg adds the trailer after editing
    typed = hook_env(GITSESSIONS_SESSION=sid, GIT_EDITOR="sed -i 1iTyped-in-the-editor")
    commit(project, "", typed)
    assert git(project, "log", "-1", "--format=%s").stdout.strip() == "Typed-in-the-editor"
    assert trailers(project) == [sid]
    # the editor leaves the message empty: git aborts as it would without the hooks
    empty = hook_env(GITSESSIONS_SESSION=sid, GIT_EDITOR="true")
    done = commit(project, "", empty, check=False)
    assert done.returncode != 0 and "empty commit message" in done.stderr
    assert git(project, "log", "-1", "--format=%s").stdout.strip() == "Typed-in-the-editor"


def test_worktree_session_commit_and_show_commit(project, store, tmp_path):
    worktree = tmp_path / "fork-wt"
    git(project, "worktree", "add", "-q", "-b", "gitsessions/abcd1234", str(worktree))
    sid = new_id()
    header = new_header(sid, now_iso(), title="worktree fork")
    header["worktree"] = {  # what `fork --worktree` records (issue 11)
        "path": str(worktree),
        "branch": "gitsessions/abcd1234",
        "base": None,
        "repo": str(project),
    }
    worktree_mark.remember(store.home, sid, header["worktree"])  # and that this home made it
    system = {"role": "system", "content": "You are a coding agent."}
    prompt = {"role": "user", "content": "make the worktree change"}
    store.create(header, Change(context=[system, prompt], append=[system, prompt]))
    install(project)  # the main checkout's hooks are the worktree's too
    env = hook_env()
    commit(worktree, "in the fork's worktree", env)
    assert trailers(worktree) == [sid]
    commit(project, "in the main checkout", env)
    assert trailers(project) == []  # another checkout: not the session's

    shown = subprocess.run(
        [sys.executable, "-m", "gitsessions", "show", "--commit", "gitsessions/abcd1234"],
        capture_output=True, text=True, env=env, cwd=project,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "make the worktree change" in shown.stdout
    assert sid in shown.stderr
    as_json = subprocess.run(
        [sys.executable, "-m", "gitsessions", "show", "--commit", "HEAD", "--json"],
        capture_output=True, text=True, env=env, cwd=worktree,
    )  # fmt: skip
    assert json.loads(as_json.stdout)[1]["content"] == "make the worktree change"
    plain = subprocess.run(
        [sys.executable, "-m", "gitsessions", "show", "--commit", "main"],
        capture_output=True, text=True, env=env, cwd=project,
    )  # fmt: skip
    assert plain.returncode == 1
    assert plain.stderr.strip().splitlines() == [
        f"error: commit {git(project, 'rev-parse', 'main').stdout[:12]} names no session "
        "(it has no Gitsessions-Session trailer)"
    ]
    both = run_gitsessions("show", sid, "--commit", "HEAD", env=env)
    assert both.returncode == 2 and both.stderr.startswith("error: show takes a session ID")


def test_users_own_hooks_run_first_and_come_back_after_uninstall(project, tmp_path):
    hooks = project / ".git" / "hooks"
    log = tmp_path / "user-hook.log"
    own = hooks / "prepare-commit-msg"
    own.write_text(
        "#!/bin/sh\n"
        f'echo "prepare $*" >> "{log}"\n'
        'sed -i "1s/^/[TICKET-7] /" "$1"\n'
        'test -e "$HOME/refuse" && exit 1\n'
        "exit 0\n"
    )
    own.chmod(0o750)
    (tmp_path / "scripts").mkdir()
    target = tmp_path / "scripts" / "check-msg"
    target.write_text(f'#!/bin/sh\necho "commit-msg $1" >> "{log}"\n')
    target.chmod(0o755)
    (hooks / "commit-msg").symlink_to(target)  # a hook that is a symlink comes back as one
    before = snapshot(hooks)

    done = install(project)
    assert "your hook now runs from prepare-commit-msg.pre-gitsessions" in done.stderr
    assert (hooks / "prepare-commit-msg.pre-gitsessions").read_bytes() == before[
        "prepare-commit-msg"
    ][2]
    assert os.readlink(hooks / "commit-msg.pre-gitsessions") == str(target)
    listed = json.loads(
        run_gitsessions("hooks", "list", "--workspace", str(project), "--json").stdout
    )
    assert [(h["name"], h["state"]) for h in listed["git"]] == [
        ("prepare-commit-msg", "installed"),
        ("commit-msg", "installed"),
    ]
    assert listed["git"][0]["chained"].endswith("prepare-commit-msg.pre-gitsessions")
    assert "already installed" in install(project).stderr  # twice is harmless

    sid = new_id()
    commit(project, "fix the bug", hook_env(GITSESSIONS_SESSION=sid))
    assert git(project, "log", "-1", "--format=%s").stdout.strip() == "[TICKET-7] fix the bug"
    assert trailers(project) == [sid]
    lines = log.read_text().splitlines()
    assert lines[0] == "prepare .git/COMMIT_EDITMSG message"
    assert lines[1].startswith("commit-msg ")
    # the user's hook still decides: when it refuses, the commit does not happen
    (Path(os.environ["HOME"])).mkdir(parents=True, exist_ok=True)
    (Path(os.environ["HOME"]) / "refuse").write_text("")
    refused = commit(project, "refused", hook_env(GITSESSIONS_SESSION=sid), check=False)
    assert refused.returncode != 0
    assert git(project, "log", "-1", "--format=%s").stdout.strip() == "[TICKET-7] fix the bug"

    done = run_gitsessions("hooks", "uninstall", "--workspace", str(project), env=hook_env())
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("your own hook is back") == 2
    assert snapshot(hooks) == before


def test_core_hooks_path_is_respected(project):
    git(project, "config", "core.hooksPath", "githooks")
    install(project)
    assert (project / "githooks" / "prepare-commit-msg").exists()
    assert not (project / ".git" / "hooks" / "prepare-commit-msg").exists()
    sid = new_id()
    commit(project, "with hooksPath", hook_env(GITSESSIONS_SESSION=sid))
    assert trailers(project) == [sid]


def test_install_refuses_when_the_chained_name_is_taken(project):
    hooks = project / ".git" / "hooks"
    for name in ("commit-msg", "commit-msg.pre-gitsessions"):
        (hooks / name).write_text("#!/bin/sh\nexit 0\n")
    before = snapshot(hooks)
    done = run_gitsessions("hooks", "install", "--workspace", str(project), env=hook_env())
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "move one of them away" in done.stderr
    assert snapshot(hooks) == before


def test_not_a_repository_is_one_line(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    done = run_gitsessions("hooks", "install", "--workspace", str(plain), env=hook_env())
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: {plain} is not inside a git repository"


def test_the_hooks_find_gitsessions_without_path(project):
    """The shim runs the Python `hooks install` ran from: a PATH without gitsessions (an
    IDE's, a GUI's) still gets the trailer."""
    bare_path = "/usr/local/bin:/usr/bin:/bin"
    if shutil.which("gitsessions", path=bare_path):
        pytest.skip("a gitsessions is installed system-wide")
    install(project)
    sid = new_id()
    commit(project, "from an IDE", dict(hook_env(GITSESSIONS_SESSION=sid), PATH=bare_path))
    assert trailers(project) == [sid]
    listed = json.loads(
        run_gitsessions("hooks", "list", "--workspace", str(project), "--json").stdout
    )
    assert {h["state"] for h in listed["git"]} == {"installed"}


def test_a_gone_gitsessions_warns_and_runs_only_the_users_hook(project, tmp_path):
    """The Python the hooks were installed from is gone (its venv removed) and none is on
    PATH: the user's own hook still runs, the commit is made, and git's output says why
    it has no trailer."""
    bare_path = "/usr/local/bin:/usr/bin:/bin"
    if shutil.which("gitsessions", path=bare_path):
        pytest.skip("a gitsessions is installed system-wide")
    marker = tmp_path / "ran"
    own = project / ".git" / "hooks" / "prepare-commit-msg"
    own.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    own.chmod(0o755)
    install(project)
    for name in git_hooks.MANAGED:
        shim = project / ".git" / "hooks" / name
        text = shim.read_text().replace(f"python='{sys.executable}'", "python='/gone/python'")
        assert "/gone/python" in text
        shim.write_text(text)
    env = dict(hook_env(GITSESSIONS_SESSION=new_id()), PATH=bare_path)
    done = commit(project, "no gitsessions here", env)
    assert marker.exists() and trailers(project) == []
    assert "gitsessions: not found (neither /gone/python nor on PATH)" in done.stderr
    listed = json.loads(
        run_gitsessions("hooks", "list", "--workspace", str(project), "--json").stdout
    )
    assert {h["state"] for h in listed["git"]} == {"outdated"}
    install(project)  # installing again repairs them
    commit(project, "found again", dict(env, PATH=bare_path))
    assert len(trailers(project)) == 1


def test_install_refuses_a_python_that_does_not_run_gitsessions(project, tmp_path):
    hooks = project / ".git" / "hooks"
    before = snapshot(hooks)
    package = Path(git_hooks.__file__).parents[2]
    for python, why in (
        (tmp_path / "none", "is not an executable Python"),
        (Path(shutil.which("false") or "/bin/false"), "-I -m gitsessions failed"),
    ):
        with pytest.raises(git_hooks.HookInstallError) as raised:
            git_hooks.install(project, hook_env(), git_hooks.Launcher(python, package))
        assert str(raised.value).startswith(
            "cannot install the git hooks: they would not find gitsessions ("
        )
        assert why in str(raised.value)
    with pytest.raises(git_hooks.HookInstallError, match="is not a gitsessions package"):
        git_hooks.install(project, hook_env(), git_hooks.Launcher(Path(sys.executable), tmp_path))
    assert snapshot(hooks) == before  # nothing changed


def test_run_shell_gets_the_session_id_and_nothing_else_of_ours():
    env = {"PATH": "/bin", "GITSESSIONS_HOME": "/x", "GITSESSIONS_SESSION": "inherited"}
    assert shell_environment(env) == {"PATH": "/bin"}
    sid = new_id()
    assert shell_environment(env, session=sid) == {"PATH": "/bin", "GITSESSIONS_SESSION": sid}


def test_a_commit_by_the_agent_names_its_session(project, server):
    install(project)
    command = "git add -A && git commit -q -m 'agent change'"
    server.reply(content=None, tool_calls=[{"name": "run_shell", "arguments": {
        "command": f"echo v2 > app.py && {command}"}}])  # fmt: skip
    server.reply(content="Committed.")
    server.reply(content="Agent commit")  # the list summary
    done = run_gitsessions(
        *exec_args(server, project), "commit it", "--auto-approve", "--json", env=hook_env()
    )
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["session"]
    assert git(project, "log", "-1", "--format=%s").stdout.strip() == "agent change"
    assert trailers(project) == [sid]


def test_has_content_ignores_comments_and_the_scissors():
    scissors = "# ------------------------ >8 ------------------------"
    assert not git_hooks.has_content("\n# Please enter\n#\n", "#")
    assert not git_hooks.has_content(f"\n# c\n{scissors}\ndiff --git a/x b/x\n", "#")
    assert git_hooks.has_content("fix\n# c\n", "#")
    assert git_hooks.has_content("# not a comment here\n", ";")


def test_the_wheel_ships_the_hooks(tmp_path):
    """An installed wheel has the shims and the example, executable, and the shims are
    the templates `hooks install` fills in."""
    import stat
    import zipfile

    from hatchling.builders.wheel import WheelBuilder

    from tests.conftest import REPO

    builder = WheelBuilder(str(REPO))
    wheel = Path(next(builder.build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        for name in ("prepare-commit-msg", "commit-msg", "post-turn-push"):
            info = infos[f"gitsessions/hooks_data/{name}"]
            assert stat.S_IMODE(info.external_attr >> 16) & 0o111, name
            assert archive.read(info) == git_hooks.shipped(name).read_bytes()
            # one source of truth: the top-level hooks/ folder links to the package's files
            assert (REPO / "hooks" / name).resolve() == git_hooks.shipped(name).resolve()
