"""What "always" for a run_shell command covers: the command and its subcommand, nothing
wider, and never a command line that does more than run that command.

Invariants:
- `scope_of` is the one function that both offers a scope and matches a later command
  (`Scope.allows`), so a rule is exactly what the user was shown; `always_offer` and
  `offer_words` are the same words for chat (cli/approvals.py) and ACP (events.py).
- A scope is the first word plus, for a tool of subcommands (git, cargo, make...), the
  subcommand (`uv run pytest`, `python -m pytest` scopes of their own).
- A command that runs code its arguments name (`bash -c`, `python x.py`, `sudo`, `xargs`)
  or destroys what it names (`rm`, `mv`, `git push`, `git reset`...) is offered for that
  exact line only: "always" for `rm -f x` never allows `rm -rf ~`.
- No scope at all for a line that chains, substitutes, redirects into a file, pipes into
  anything but a reader, asks for `--output`, or is unbalanced.
"""

import re
import shlex
from collections.abc import Mapping
from typing import Any, NamedTuple

from gitsessions.values.visible import visible

# fmt: off
# Tools whose second word is a subcommand: their scope never stops at the first word.
SUBCOMMAND_TOOLS = frozenset({
    "git", "cargo", "npm", "pnpm", "yarn", "uv", "pip", "pip3", "poetry", "go", "docker",
    "podman", "kubectl", "gh", "apt", "apt-get", "brew", "dnf", "systemctl", "conda", "rustup",
    "dotnet", "mvn", "gradle", "bundle", "gem", "hatch", "pdm", "tox", "nox", "make", "just",
    "pipx"
})
# Subcommands that run another program: the word after them is part of the scope.
RUNNERS = frozenset({
    "uv:run", "uv:tool", "poetry:run", "pdm:run", "hatch:run", "npm:exec", "npm:run",
    "pnpm:exec", "pnpm:run", "yarn:run", "yarn:exec", "cargo:run", "go:run", "bundle:exec",
    "conda:run", "pipx:run"
})
# Commands that run whatever code their arguments give: always for the exact line only.
ANY_CODE = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "fish", "env", "sudo", "doas", "su", "xargs", "eval",
    "exec", "source", ".", "command", "builtin", "nohup", "nice", "timeout", "time", "watch",
    "stdbuf", "setsid", "chroot", "unshare", "nsenter", "ssh", "perl", "ruby", "node", "deno",
    "bun", "php", "lua", "awk", "gawk", "find", "parallel", "npx", "uvx"
})
# Commands that destroy or overwrite what they name: always for the exact line only
# (`rm -f x` must never allow `rm -rf ~`), and so their destructive subcommands.
DESTRUCTIVE = frozenset({
    "rm", "rmdir", "unlink", "shred", "srm", "mv", "dd", "truncate", "chmod", "chown",
    "chgrp", "kill", "pkill", "killall", "mkfs", "wipefs", "fdisk", "parted", "reboot",
    "shutdown", "halt", "poweroff", "crontab", "rsync"
})
DESTRUCTIVE_SUBCOMMANDS = frozenset({
    "git:clean", "git:reset", "git:rm", "git:restore", "git:checkout", "git:stash",
    "git:push", "git:branch", "git:tag", "git:filter-branch", "git:gc", "git:prune",
    "docker:rm", "docker:rmi", "docker:prune", "docker:kill", "podman:rm", "podman:rmi",
    "kubectl:delete", "npm:unpublish", "cargo:clean", "make:clean", "brew:uninstall",
    "apt:remove", "apt:purge", "apt-get:remove", "apt-get:purge", "dnf:remove",
    "pip:uninstall", "pip3:uninstall", "uv:remove", "gh:repo"
})
PYTHONS = re.compile(r"python[0-9.]*$")
# What a pipe may lead into: programs that only read their input and print.
READERS = frozenset({
    "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "cut", "tr", "cat",
    "column", "nl", "sort", "uniq", "fold", "fmt", "rev", "tac", "jq"
})
# fmt: on
CHAIN = frozenset({";", "&&", "||", "&", "|&", ";;", "(", ")", "<>", ">|", "&>", "&>>"})
REDIRECT_OUT = frozenset({">", ">>"})
PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9._:+-]*$")
COMMAND_WORD = re.compile(r"[A-Za-z0-9_./+-]+$")


class Scope(NamedTuple):
    """What "always" allows: commands whose scope is `words`, or (`exact`) the one
    command line `words[0]`."""

    words: tuple[str, ...]
    exact: bool = False

    def allows(self, command: str) -> bool:
        """Whether `command` runs unasked under this rule."""
        return scope_of(command) == self

    def shown(self) -> str:
        """The rule in the words the approval says it: `git log ...`, or the command."""
        return self.words[0] if self.exact else " ".join(self.words) + " ..."


class NoScope(NamedTuple):
    """Why "always" is not offered for a command, in plain words."""

    reason: str


def scope_of(command: str) -> Scope | NoScope:
    """The scope "always" would give `command`, or why it gives none."""
    if "\n" in command or "\r" in command:
        return NoScope("it runs more than one line")
    if "`" in command or "$(" in command or "<(" in command or ">(" in command:
        return NoScope("it runs a command inside it")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # bash starts a comment only at a word's start: `a#;b` chains
    try:
        tokens = list(lexer)
    except ValueError:
        return NoScope("its quoting is unbalanced")
    if not tokens:
        return NoScope("it is empty")
    segments = _pipeline(tokens)
    if isinstance(segments, NoScope):
        return segments
    first, *rest = segments
    for segment in rest:
        if not segment or segment[0] not in READERS or _does_more_than_read(segment):
            shown = segment[0] if segment else "nothing"
            return NoScope(f"it pipes into `{shown}`, which can do more than read")
    if not first:
        return NoScope("it starts with a pipe")
    if any(word.startswith("--output") for word in first):
        return NoScope("it names an output file")
    return _words(first, command.strip())


def _pipeline(tokens: list[str]) -> list[list[str]] | NoScope:
    """The commands of a pipeline, its harmless redirections dropped; or why not."""
    segments: list[list[str]] = [[]]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token in CHAIN:
            return NoScope(f"it chains commands (`{token}`)")
        if token == "|":
            segments.append([])
        elif token in REDIRECT_OUT or token == ">&":
            harmless = following == "/dev/null" or (
                token == ">&" and (following.isdigit() or following == "-")
            )
            if not harmless:
                return NoScope("it writes its output into a file")
            if segments[-1] and segments[-1][-1].isdigit() and token != ">>":
                segments[-1].pop()  # the descriptor of `2>&1`, `2> /dev/null`
            index += 1
        elif token in ("<", "<<", "<<<", "<&"):
            index += 1  # reads from a file or a string: the command is unchanged
        elif token and set(token) <= set("|&;<>()"):
            return NoScope(f"it uses the shell's `{token}`")
        else:
            segments[-1].append(token)
        index += 1
    return segments


def _does_more_than_read(segment: list[str]) -> bool:
    """A reader told to write or run something: `sort -o`, `sort --compress-program`,
    `uniq IN OUT`, `rg --pre`."""
    name, arguments = segment[0], segment[1:]
    if name == "sort":
        return any(a.startswith(("-o", "--output", "--compress")) for a in arguments)
    if name == "rg":
        return any(a.startswith("--pre") for a in arguments)
    if name == "uniq":
        return len([a for a in arguments if not a.startswith("-")]) > 1
    return False


def _words(words: list[str], line: str) -> Scope | NoScope:
    name = words[0]
    if "=" in name or not COMMAND_WORD.match(name):
        return Scope((line,), exact=True)
    base = name.rsplit("/", 1)[-1]
    if base in ANY_CODE or base in DESTRUCTIVE:
        return Scope((line,), exact=True)
    if PYTHONS.match(base):
        if len(words) >= 3 and words[1] == "-m" and PLAIN_WORD.match(words[2]):
            return Scope((name, "-m", words[2]))
        return Scope((line,), exact=True)
    second = words[1] if len(words) > 1 else ""
    if base in SUBCOMMAND_TOOLS:
        if not PLAIN_WORD.match(second):  # `git -C x push`, a bare `git`
            return Scope((line,), exact=True)
        if f"{base}:{second}" in RUNNERS:
            inner = _words(words[2:], line) if len(words) > 2 else Scope((line,), exact=True)
            if isinstance(inner, NoScope) or inner.exact:
                return Scope((line,), exact=True)
            return Scope((name, second, *inner.words))
        if f"{base}:{second}" in DESTRUCTIVE_SUBCOMMANDS:
            return Scope((line,), exact=True)
        return Scope((name, second))
    return Scope((name,))


def always_offer(name: str, arguments: Mapping[str, Any]) -> Scope | NoScope | str:
    """What "always" would allow for this call: a run_shell scope (or why none), else
    the tool's name."""
    command = arguments.get("command")
    if name == "run_shell":  # never the whole tool: every command would run unasked
        return scope_of(command) if isinstance(command, str) else NoScope("it has no command")
    return name


def offer_words(offer: Scope | NoScope | str) -> str:
    """The `a:` choice in words, or why there is none."""
    if isinstance(offer, NoScope):
        return f'no "always" here: {_one_line(offer.reason)}'
    if isinstance(offer, Scope) and offer.exact:
        return "a: always allow exactly this command in this session"
    if isinstance(offer, Scope):
        return f"a: always allow `{_one_line(offer.shown())}` commands in this session"
    return f"a: always allow {_one_line(offer)} in this session"


def _one_line(text: str) -> str:
    return visible(text, keep_newlines=False)
