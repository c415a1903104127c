"""Stock git on the user's project, with the project's command-running settings off: the
project's `.git` (config, hooks, attributes) may have been written by anyone, so every
git command gitsessions runs on a project is built by `command` and run by `run`.

Invariants:
- Overrides go in as command-line config (`GIT_CONFIG_COUNT`, winning over every file and
  reaching git's children): no fsmonitor, hooks, pager, editor, signing, `ext::`, auto
  gc, submodule recursion.
- A command that can run a clean or smudge filter (`FILTERING`: anything reading the
  working tree or writing an index, even `write-tree`) first blanks every filter driver
  the config defines (listed once per run: `filters_listed`, a value only this process
  knows).
- `push`, `fetch`, `ls-remote` name the remote program themselves (`--receive-pack`,
  `--upload-pack`); callers pass `DIFF_SAFE` and `--no-filters` where they apply.
"""

import os
import re
import subprocess
from collections.abc import Mapping
from os import PathLike
from typing import Any

HOOKS_OFF = "/dev/null"  # core.hooksPath: every hook is /dev/null/<name>, which never exists
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", HOOKS_OFF),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("protocol.ext.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
)
DIFF_SAFE = ("--no-ext-diff", "--no-textconv")
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a SHA-1 or SHA-256 object id
FILTERING = frozenset(
    {"status", "update-index", "checkout-index", "read-tree", "write-tree", "worktree",
     "diff-files"}
)  # fmt: skip
TRANSPORT = {
    "push": "--receive-pack=git-receive-pack",
    "fetch": "--upload-pack=git-upload-pack",
    "ls-remote": "--upload-pack=git-upload-pack",
}
LIST_TIMEOUT = 30
FILTERS_LISTED = "GITSESSIONS_GIT_FILTERS_OFF"  # set by `filters_listed`: not listed again
_LISTED_HERE = os.urandom(8).hex()  # its value: only this process's `filters_listed` sets it


def command(
    cwd: str | PathLike[str], env: Mapping[str, str], *args: str, own_hooks_path: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment to run `git -C cwd ARGS` with the project's
    command-running config off (see the module's invariants). `own_hooks_path` keeps
    the project's core.hooksPath, for a command that runs no hook but must name the
    folder git runs them from (`rev-parse --git-path hooks`: `hooks install`)."""
    pairs = [p for p in SAFE_CONFIG if not (own_hooks_path and p[0] == "core.hooksPath")]
    filtering = args and args[0] in FILTERING and args[1:2] not in (("list",), ("prune",))
    if filtering and env.get(FILTERS_LISTED) != _LISTED_HERE:
        pairs += _filters_off(cwd, env)
    if args and args[0] in TRANSPORT:
        args = (args[0], TRANSPORT[args[0]], *args[1:])
    return ["git", "-C", str(cwd), *args], with_config(env, pairs)


def run(
    cwd: str | PathLike[str],
    env: Mapping[str, str],
    *args: str,
    timeout: float,
    input: str | bytes | None = None,
    text: bool = True,
    own_hooks_path: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """`git -C cwd ARGS` as `command` builds it, its output captured; its stdin is
    `input`, else nothing (never ours). `options` go to `subprocess.run`."""
    argv, full = command(cwd, env, *args, own_hooks_path=own_hooks_path)
    return subprocess.run(
        argv,
        input=input,
        capture_output=True,
        text=text,
        env=full,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
        **options,
    )


def filters_listed(cwd: str | PathLike[str], env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the project's filter drivers blanked once, for a run of commands that
    would each list them (a snapshot's `update-index` calls and `write-tree`)."""
    return {**with_config(env, _filters_off(cwd, env)), FILTERS_LISTED: _LISTED_HERE}


def with_config(env: Mapping[str, str], pairs: list[tuple[str, str]]) -> dict[str, str]:
    """`env` plus `pairs` as command-line config, after any the caller already gives."""
    full = dict(env)
    try:
        start = max(0, int(full.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        start = 0
    for offset, (key, value) in enumerate(pairs):
        full[f"GIT_CONFIG_KEY_{start + offset}"] = key
        full[f"GIT_CONFIG_VALUE_{start + offset}"] = value
    full["GIT_CONFIG_COUNT"] = str(start + len(pairs))
    return full


def _filters_off(cwd: str | PathLike[str], env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Overrides blanking every filter driver the config defines (`clean`, `smudge`,
    `process` empty: git then runs none; `required` false: git then takes the bytes as
    they are). git failing to list them (no repository, bad config) gives none: the
    command itself then fails the same way before it runs anything."""
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), "config", "-z", "--get-regexp", r"^filter\."],
            capture_output=True,
            env=with_config(env, list(SAFE_CONFIG)),
            timeout=LIST_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    pairs: list[tuple[str, str]] = []
    drivers: set[str] = set()
    for entry in done.stdout.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        name = key.partition(".")[2].rpartition(".")[0]
        if name and name not in drivers:
            drivers.add(name)
            for driver_key in ("clean", "smudge", "process"):
                pairs.append((f"filter.{name}.{driver_key}", ""))
            pairs.append((f"filter.{name}.required", "false"))
    return pairs
