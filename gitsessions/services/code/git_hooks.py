"""Git hooks in the user's project: installing the shims, and the trailer they add.

Invariants:
- Install never overwrites a hook: the user's is renamed to `<name>.pre-gitsessions` and
  run first; uninstall removes only our shim and renames theirs back, byte for byte. A
  taken `.pre-gitsessions` name makes install refuse, changing nothing.
- The folder is the one git runs (`git rev-parse --git-path hooks`: `core.hooksPath`,
  linked worktrees).
- The shim is the shipped file (`gitsessions/hooks_data/`) with the Python and package
  filled in (checked with `--version` first): it needs no PATH, and is recognised by its
  content (another launcher's reads as "outdated").
- At most one `Gitsessions-Session:` trailer per session, none on an empty message; a
  linked worktree names a session only through `worktree_mark.check`.
"""

import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from gitsessions.services.code.projectgit import run
from gitsessions.services.code.worktree_mark import check
from gitsessions.values.errors import BadUsage, GitsessionsError, InvalidInput
from gitsessions.values.ids import is_session_id

MANAGED = ("prepare-commit-msg", "commit-msg")
CHAINED_SUFFIX = ".pre-gitsessions"
TRAILER = "Gitsessions-Session"
AUTO_COMMENT_CHARS = "#;@!$%^&|:"  # what core.commentChar=auto may pick
GIT_TIMEOUT = 30


class HookInstallError(GitsessionsError):
    """A hook cannot be installed or uninstalled as asked; nothing was changed."""


class NotARepository(InvalidInput):
    """The workspace is not inside a git repository."""


def shipped(name: str) -> Path:
    """A file of the package's `hooks_data/` folder (shims and examples)."""
    return Path(str(resources.files("gitsessions") / "hooks_data" / name))


def shipped_dir() -> Path:
    return shipped("")


@dataclass(frozen=True)
class Launcher:
    """What an installed shim runs: `python -I -m gitsessions`, with the folder of the
    gitsessions package that Python imports (the shim checks it is still there)."""

    python: Path
    package: Path

    def check(self, timeout: float = GIT_TIMEOUT) -> None:
        """Refuse (HookInstallError) unless this launcher runs gitsessions."""
        why = None
        if not self.python.is_absolute() or not os.access(self.python, os.X_OK):
            why = f"{self.python} is not an executable Python"
        elif not (self.package / "__main__.py").is_file():
            why = f"{self.package} is not a gitsessions package"
        else:
            try:
                done = subprocess.run(
                    [str(self.python), "-I", "-m", "gitsessions", "--version"],
                    capture_output=True,
                    stdin=subprocess.DEVNULL,
                    timeout=timeout,
                    cwd=self.package.parent,
                )
                if done.returncode != 0:
                    tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
                    why = f"{self.python} -I -m gitsessions failed: {' '.join(tail)}"
            except (OSError, subprocess.TimeoutExpired) as error:
                why = f"{self.python} -I -m gitsessions does not run: {error}"
        if why:
            raise HookInstallError(
                f"cannot install the git hooks: they would not find gitsessions ({why})"
            )


def shim_bytes(name: str, launcher: Launcher) -> bytes:
    """The shim for `name` as installed for `launcher`."""
    text = shipped(name).read_text(encoding="utf-8")
    for key, value in (("python", launcher.python), ("package", launcher.package)):
        blank = f"\n{key}=''\n"
        assert blank in text, f"{name}: the shipped shim lost its {key} line"
        quoted = "'" + str(value).replace("'", "'\"'\"'") + "'"  # as shlex.quote, always
        text = text.replace(blank, f"\n{key}={quoted}\n", 1)
    return text.encode("utf-8")


def _git(
    cwd: Path, env: Mapping[str, str], *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    # the project's own core.hooksPath stays: none of these runs a hook, and `hooks_dir`
    # must name the folder the user's commits run hooks from
    return run(cwd, env, *args, timeout=GIT_TIMEOUT, input=input, own_hooks_path=True)


def toplevel(path: Path, env: Mapping[str, str]) -> Path | None:
    """The working tree root `path` is in, or None outside a repository."""
    done = _git(path, env, "rev-parse", "--show-toplevel")
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def linked_worktree(path: Path, env: Mapping[str, str]) -> Path | None:
    """The top folder of the checkout `path` is in when it is a linked worktree (made by
    `git worktree add`), else None (a main checkout, or not a repository)."""
    done = _git(path, env, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir")
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 3:
        return None
    top, git_dir, common = (os.path.normpath(path / line) for line in lines)
    return Path(top) if git_dir != common else None


def hooks_dir(workspace: Path, env: Mapping[str, str]) -> Path:
    """The folder git runs hooks from for `workspace` (core.hooksPath honoured)."""
    done = _git(workspace, env, "rev-parse", "--git-path", "hooks")
    if done.returncode != 0 or not done.stdout.strip():
        raise NotARepository(f"{workspace} is not inside a git repository")
    return Path(os.path.normpath(workspace / done.stdout.strip()))


def _is_shim(path: Path, name: str) -> bool:
    """Whether `path` is a gitsessions shim for `name` (any version of it)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        if path.stat().st_size > 4096:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return f"gitsessions hook {name} " in text


def _exists(path: Path) -> bool:
    return path.is_symlink() or path.exists()


@dataclass(frozen=True)
class GitHook:
    """One managed git hook: its path, its state and the user's hook it runs first."""

    name: str
    path: Path
    state: str  # installed, outdated, absent, other (a hook that is not ours)
    chained: Path | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "state": self.state,
            "chained": str(self.chained) if self.chained else None,
        }


def states(workspace: Path, env: Mapping[str, str], launcher: Launcher) -> list[GitHook]:
    """The state of each managed hook in the repository of `workspace`: "installed" when
    it is the shim `launcher` would write."""
    directory = hooks_dir(workspace, env)
    found: list[GitHook] = []
    for name in MANAGED:
        path, chained = directory / name, directory / (name + CHAINED_SUFFIX)
        if _is_shim(path, name):
            current = path.read_bytes() == shim_bytes(name, launcher)
            state = "installed" if current else "outdated"
        elif _exists(path):
            state = "other"
        else:
            state = "absent"
        found.append(GitHook(name, path, state, chained if _exists(chained) else None))
    return found


def install(
    workspace: Path, env: Mapping[str, str], launcher: Launcher
) -> list[tuple[GitHook, str]]:
    """Install every managed shim, run by `launcher` (checked first: install refuses a
    launcher that does not run gitsessions); returns each hook with what was done."""
    hooks = states(workspace, env, launcher)
    for hook in hooks:  # check everything before changing anything
        if hook.state == "other" and hook.chained is not None:
            raise HookInstallError(
                f"cannot install {hook.name}: both {hook.path} and {hook.chained} exist; "
                f"move one of them away first"
            )
    launcher.check()
    done: list[tuple[GitHook, str]] = []
    for hook in hooks:
        if hook.state == "installed":
            done.append((hook, "already installed"))
            continue
        _place_shim(hook, shim_bytes(hook.name, launcher))
        if hook.state == "other":
            chained = hook.path.with_name(hook.name + CHAINED_SUFFIX)
            done.append((hook, f"installed; your hook now runs from {chained.name}"))
        else:
            done.append((hook, "updated" if hook.state == "outdated" else "installed"))
    return done


def _place_shim(hook: GitHook, shim: bytes) -> None:
    """Write the shim in place of `hook.path`, moving a user's hook aside first; on any
    failure the user's hook is back where it was."""
    hook.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = hook.path.with_name(f".{hook.name}.gitsessions-tmp")
    temporary.write_bytes(shim)
    temporary.chmod(0o755)
    moved: Path | None = None
    try:
        if hook.state == "other":
            moved = hook.path.with_name(hook.name + CHAINED_SUFFIX)
            os.rename(hook.path, moved)
        os.rename(temporary, hook.path)
    except OSError:
        if moved is not None and not _exists(hook.path):
            os.rename(moved, hook.path)
        raise
    finally:
        temporary.unlink(missing_ok=True)


def uninstall(
    workspace: Path, env: Mapping[str, str], launcher: Launcher
) -> list[tuple[GitHook, str]]:
    """Remove every shim of ours (any launcher's) and put the user's own hooks back."""
    done: list[tuple[GitHook, str]] = []
    for hook in states(workspace, env, launcher):
        ours = hook.state in ("installed", "outdated")
        if hook.state == "other":
            kept = f" (and {hook.chained.name} beside it)" if hook.chained else ""
            done.append((hook, f"not a gitsessions hook: left as it is{kept}"))
            continue
        if ours:
            hook.path.unlink()
        if hook.chained is not None:
            os.rename(hook.chained, hook.path)
            done.append((hook, "removed; your own hook is back"))
        else:
            done.append((hook, "removed" if ours else "not installed"))
    return done


def run_chained(hook_file: str, args: Sequence[str], env: Mapping[str, str], cwd: Path) -> int:
    """Run the user's hook that a shim at `hook_file` replaced, as git would have run it
    (same arguments, environment and folder); 0 when there is none or it is not
    executable (git ignores such a hook too)."""
    chained = Path(hook_file + CHAINED_SUFFIX)
    if not chained.is_file() or not os.access(chained, os.X_OK):
        return 0
    return subprocess.run([str(chained), *args], env=dict(env), cwd=cwd).returncode


def comment_chars(cwd: Path, env: Mapping[str, str]) -> str:
    done = _git(cwd, env, "config", "core.commentChar")
    value = done.stdout.strip() if done.returncode == 0 else ""
    if value == "auto":
        return AUTO_COMMENT_CHARS
    return value[:1] or "#"


def has_content(message: str, comments: str) -> bool:
    """Whether a commit message holds anything besides comments and blank lines (git's
    scissors line ends it, as in `git commit -v`)."""
    for line in message.splitlines():
        if line[:1] in comments and re.fullmatch(r". -{24} >8 -{24}", line):
            break
        if line.strip() and line[:1] not in comments:
            return True
    return False


def has_trailer(message_file: Path) -> bool:
    """Whether the message already names a session (a `Gitsessions-Session:` line)."""
    text = message_file.read_text(encoding="utf-8", errors="replace")
    return re.search(rf"^{TRAILER}:", text, re.MULTILINE | re.IGNORECASE) is not None


def add_trailer(message_file: Path, session_id: str, cwd: Path, env: Mapping[str, str]) -> bool:
    """Add `Gitsessions-Session: <id>` to the message unless it is empty or already has
    it; True when the message now carries it."""
    if not is_session_id(session_id):
        raise InvalidInput(f"not a session id: {session_id[:40]!r}")
    text = message_file.read_text(encoding="utf-8", errors="replace")
    if not has_content(text, comment_chars(cwd, env)):
        return False
    done = _git(
        cwd,
        env,
        "interpret-trailers",
        "--in-place",
        "--if-exists",
        "addIfDifferent",
        "--trailer",
        f"{TRAILER}: {session_id}",
        str(message_file.absolute()),
    )
    if done.returncode != 0:
        raise HookInstallError(f"git interpret-trailers failed: {done.stderr.strip()[:200]}")
    return True


def worktree_path(header: Mapping[str, Any]) -> str | None:
    """The path of the git worktree a session's header names (not to be trusted alone:
    `session_for` asks `worktree_mark.check` whether this home made it)."""
    worktree = header.get("worktree")
    if not isinstance(worktree, Mapping):
        return None
    path = worktree.get("path")
    return path if isinstance(path, str) and path else None


def session_for(
    top: Path | None,
    env_session: str | None,
    headers: Callable[[], Iterable[Mapping[str, Any]]],
    home: Path,
    env: Mapping[str, str],
) -> str | None:
    """The session a commit belongs to: the one whose agent runs the commit
    (`GITSESSIONS_SESSION`), else the session whose worktree is `top` (the most recently
    active one when several say so), a worktree `home` made for that session and git
    lists (`worktree_mark.check`: a pulled mark names nothing)."""
    if env_session and is_session_id(env_session):
        return env_session
    if top is None:
        return None
    where = os.path.realpath(top)
    matches = [
        h
        for h in headers()
        if "broken" not in h
        and is_session_id(h.get("id"))
        and (path := worktree_path(h)) is not None
        and os.path.realpath(path) == where
        and _made_here(home, h, env, where)
    ]
    if not matches:
        return None
    newest = max(matches, key=lambda h: str(h.get("active_at") or h.get("updated_at") or ""))
    return str(newest["id"])


def _made_here(home: Path, header: Mapping[str, Any], env: Mapping[str, str], where: str) -> bool:
    checked = check(home, str(header.get("id")), header, env)
    return (
        checked.live
        and checked.mark is not None
        and (os.path.realpath(checked.mark["path"]) == where)
    )


def sessions_of_commit(repo: Path, rev: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """The commit `rev` names in the repository at `repo` and the session ids its
    `Gitsessions-Session` trailers name, oldest first."""
    if not rev or rev.startswith("-"):
        raise BadUsage(f"not a commit: {rev[:40]!r}")
    found = _git(repo, env, "rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}")
    if found.returncode != 0:
        if toplevel(repo, env) is None:
            raise NotARepository(f"{repo} is not inside a git repository; run this in the project")
        raise InvalidInput(f"no commit {rev[:40]!r} in {repo}")
    sha = found.stdout.strip()
    done = _git(repo, env, "log", "-1", f"--format=%(trailers:key={TRAILER},valueonly)", sha)
    ids = [line.strip() for line in done.stdout.splitlines() if is_session_id(line.strip())]
    return sha, ids
