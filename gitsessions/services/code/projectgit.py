"""Stock git on the user's project, with the project's command-running settings off.

The project's `.git` is not gitsessions' to trust: an agent's shell (or anything else)
may have written `.git/config`, `.git/hooks/*`, `.git/info/attributes` or a
`.gitattributes`. Every git command gitsessions itself runs on a project (workspace
facts, snapshots, rewind, `diff --code`, worktrees, code push/pull, the git hooks'
lookups) is built by `command` (and run by `run`), so none of them runs a command that
config names.

Invariants:
- The overrides go in as command-line config (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`
  appended to the caller's, so they win over every config file and reach the git
  processes git itself starts): fsmonitor off, hooks from `/dev/null` (none), no pager
  or editor, no signing or signature checks (both run `gpg.program`), no
  `ext::` transport, no automatic gc or maintenance, no submodule recursion.
- A command that can run a clean or smudge filter (`FILTERING`: every one that reads
  the working tree or writes an index, since writing an index re-hashes its racily clean
  entries through the clean filter, even `write-tree`; `checkout-index` and `worktree
  add` smudge) first lists the filter drivers the project's config defines (one
  `git config` call) and blanks every one of them: filters cannot be switched off
  wholesale, only driver by driver. A run of such commands on one project may share
  one listing (`filters_listed`: the environment then says so with a value only this
  process knows, so an inherited variable cannot skip it).
- `push`, `fetch` and `ls-remote` name the remote side's program themselves
  (`--receive-pack=git-receive-pack`, `--upload-pack=git-upload-pack`): for a local or
  ssh remote, `remote.*.receivepack`/`uploadpack` is a command run as given, and the
  first value git reads wins, so command-line config cannot replace it.
- Diff options that could run a program (`--no-ext-diff --no-textconv`) and hashing
  without filters (`hash-object --no-filters`) are the callers' to pass; `DIFF_SAFE`
  names the former.
- Nothing here reads the environment or prints; git is found on the caller's PATH.
"""

import os
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
