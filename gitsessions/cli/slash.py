"""Slash commands inside `chat` (`\\cmd` or `/cmd`). Nothing here is sent to the model."""

import os
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitsessions.agent.loop import Agent
from gitsessions.agent.turns import TurnResult
from gitsessions.cli import diff_cmd, picker
from gitsessions.cli.chat_input import discard_ahead, discarded_note, echoed
from gitsessions.cli.chat_line import is_command
from gitsessions.cli.merge_cmd import merge_here
from gitsessions.cli.plain import one_line, vtext
from gitsessions.cli.render import instructions_line
from gitsessions.cli.rewind_cmd import report
from gitsessions.cli.search import held_by, highlighted
from gitsessions.cli.session_facts import messages_text, usage_text
from gitsessions.services.code import worktrees
from gitsessions.services.code.line_origin import blame_file, line_origin
from gitsessions.services.code.rewind import Rewound, rewind
from gitsessions.services.compaction.hold import auto_threshold
from gitsessions.services.compaction.undoing import undo_last
from gitsessions.services.sessions import manage, points, session_diff
from gitsessions.services.sessions.granted import described
from gitsessions.services.sessions.revisions import resolve
from gitsessions.services.sessions.search import SearchIndex
from gitsessions.values.errors import BadUsage
from gitsessions.values.ids import check_title, short
from gitsessions.values.line_range import lines_of, parse_range, split_file
from gitsessions.values.plural import plural

HELP = [
    ("\\compact [focus]", "compact the working context now (summary kept, full record kept)"),
    ("\\compact undo", "take the last compaction back (the context as before it, plus since)"),
    ("\\retry", "send the last prompt again (its answer, if any, leaves the context)"),
    ("\\undo", "drop the last turn from the working context (the full record keeps it)"),
    ("\\title TEXT", "set this session's title"),
    ("\\info", "session id, title, messages, compactions, usage and cost, context tokens"),
    ("\\fork [TITLE]", "save a checkpoint and fork this session (you stay here)"),
    ("\\fork --worktree [TITLE]", "fork with a git worktree of the project at this turn's code"),
    ("\\merge FORK [--force]", "join a fork back here: its code and its conclusion"),
    ("\\rewind N [--force]", "back to turn N: context, plan and files (shows them, asks first)"),
    ("\\pin TEXT", "pin a note that survives every compaction verbatim"),
    ("\\plan", "show the agent's plan"),
    ("\\sessions", "pick a recent session of this project and switch to it"),
    ("\\search QUERY", "search all sessions"),
    ("\\diff ID", "compare this session with another (or a revision: ID@turn:N, ID~N)"),
    (
        "\\blame FILE[:LINE] [-L A,B]",
        "which session turn wrote each line of FILE (or LINE, with its prompt)",
    ),
    ("\\mcp", "the MCP servers of config.toml and the tools each offers"),
    ("\\help", "this list"),
    ("\\exit", "leave (Ctrl-D works too)"),
]


Turn = Callable[[], TurnResult]


class Exit(Exception):
    """The user asked to leave."""


class SwitchSession(Exception):
    """The user picked another session (`\\sessions`): the chat goes on there."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class Slash:
    def __init__(
        self, agent: Agent, out: Console, err: Console, workspace: Path | None = None
    ) -> None:
        self.agent = agent
        self.workspace = workspace or Path.cwd()
        self.out = out
        self.err = err
        # the prompt `\\undo` took out, and the context it left (its length, last message)
        self.undone: tuple[str, int, object] | None = None
        self.commands: dict[str, Callable[[str], Turn | None]] = {
            "retry": self.retry,
            "undo": self.undo,
            "compact": self.compact,
            "title": self.title,
            "info": self.info,
            "fork": self.fork,
            "rewind": self.rewind,
            "merge": self.merge,
            "pin": self.pin,
            "plan": self.plan,
            "sessions": self.sessions,
            "search": self.search,
            "diff": self.diff,
            "mcp": self.mcp,
            "blame": self.blame,
            "help": self.help,
            "exit": self.exit,
            "quit": self.exit,
        }

    is_command = staticmethod(is_command)

    def run(self, line: str) -> Turn | None:
        """Run a command; a command that sends something to the model (`\\retry`)
        returns the turn to run, for the chat to run like a prompt."""
        name, _, rest = line[1:].strip().partition(" ")
        command = self.commands.get(name.lower())
        if command is None:
            self.err.print(
                f"unknown command {one_line(line.split()[0])}; \\help lists them (nothing "
                "was sent to the model)",
                markup=False,
                highlight=False,
            )
            return None
        return command(rest.strip())

    def _say(self, text: str, style: str = "") -> None:
        self.err.print(vtext(text, style=style), highlight=False)

    def _stored(self, command: str) -> bool:
        """Whether the session is stored; on a draft, say in one line why `command` waits."""
        if not self.agent.session.is_draft:
            return True
        self._say(f"nothing to {command} yet: the session is saved with your first prompt")
        return False

    # -- commands ------------------------------------------------------------------------

    def help(self, _: str) -> None:
        table = Table(box=None, show_header=False, pad_edge=False)
        for usage, what in HELP:
            table.add_row(Text(usage, style="bold"), what)
        self.err.print(table)
        self._say("/ works instead of \\ too. A line ending in \\ continues on the next.", "dim")

    def exit(self, _: str) -> None:
        raise Exit

    def retry(self, _: str) -> Turn:
        """The last prompt again; right after `\\undo`, the prompt it took out."""
        undone, self.undone = self.undone, None
        context = self.agent.session.context
        if undone is not None and undone[1:] == (len(context), context[-1] if context else None):
            prompt = undone[0]
            self._say(f"sending the undone prompt again: {one_line(prompt)[:60]}", "dim")
            return lambda: self.agent.run_turn(prompt)
        return self.agent.retry

    def undo(self, _: str) -> None:
        self.undone = None
        undone = self.agent.undo()
        if undone is None:
            self._say("nothing to undo: the working context holds no prompt")
            return
        context = self.agent.session.context  # as `\\retry` must find it to resend
        self.undone = (undone.prompt, len(context), context[-1] if context else None)
        which = f"turn {undone.turn}" if undone.turn else "the last prompt"
        self._say(
            f"undone: {which} ({one_line(undone.prompt)[:60]}) left the working context; "
            "the full record keeps it"
        )

    def compact(self, focus: str) -> None:
        if not self._stored("compact"):
            return
        if focus.lower() == "undo":
            self._undo_compaction()
            return
        result = self.agent.compact("manual", focus=focus or None)
        if result is None:
            return  # the loop already said why
        if result.outcome == "nothing_to_compact":
            self._say("nothing to compact")
        elif result.outcome == "not_needed":
            self._say(f"nothing changed ({result.before_tokens:,} tokens)")

    def _compaction_at(self) -> str:
        """Where auto-compaction starts: the threshold, or after an undo the raised one."""
        policy = self.agent.config.policy
        at = auto_threshold(policy, self.agent.session.header)
        if at > policy.trim_threshold * policy.max_context_tokens:
            return f"compaction held until {int(at):,} tokens (after \\compact undo)"
        return f"compaction at {int(policy.trim_threshold * 100)}%"

    def _undo_compaction(self) -> None:
        """`\\compact undo`: the last compaction taken back, as `compact --undo` does."""
        agent = self.agent
        agent.save()  # pending steps first: the undo builds on them
        session = agent.session
        tools = agent.tools
        undone = undo_last(
            session.store,
            session.head,
            session.context,
            lambda messages: agent.counter.estimate(messages, tools),
        )
        session.adopt(undone.written.head)
        self._say(undone.said(session.id))

    def title(self, text: str) -> None:
        title = check_title(text)
        self.agent.save()  # pending steps first: the rename builds on them
        session = self.agent.session
        if session.is_draft:
            session.title_draft(title)
            self._say(f"title: {title} (saved with your first prompt)")
            return
        written = manage.rename(session.store, session.id, title, lease_held=True)
        session.adopt(written.head)
        self._say(f"title: {title}" if written.committed else f"already titled {title}")

    def info(self, _: str) -> None:
        session = self.agent.session
        self.agent.save()
        usage = session.usage
        tokens = self.agent.estimate()
        budget = self.agent.config.policy.max_context_tokens
        rows = [
            ("id", "new (saved with your first prompt)" if session.is_draft else session.id),
            ("title", session.header.get("title") or "-"),
            ("summary", session.header.get("summary") or "-"),
            ("messages", messages_text(session.messages_total, len(session.context))),
            ("compactions", f"{(session.header.get('counts') or {}).get('compactions', 0):,}"),
            ("usage", usage_text(usage)),
            (
                "context",
                f"{tokens:,} / {budget:,} tokens ({100 * tokens // budget}%), "
                + self._compaction_at(),
            ),
            ("counting", self.agent.counter.method),
            (
                "instructions",
                instructions_line({**session.header, **session.header_updates}.get("instructions")),
            ),
            ("approvals", ", ".join(described(session.store.home, session.id)) or "-"),
        ]
        table = Table(box=None, show_header=False, pad_edge=False)
        for key, value in rows:
            table.add_row(Text(key, style="bold"), Text(one_line(value)))
        self.err.print(table)

    def mcp(self, _: str) -> None:
        hub = self.agent.mcp
        if hub is None:
            self.err.print(
                "no MCP servers: add [mcp_servers.NAME] to config.toml"
                " (docs/configuration.md: MCP servers)",
                markup=False,
                highlight=False,
            )
            return
        for name in hub.servers:
            tools = sorted(o for o, (server, _tool) in hub.tools.items() if server == name)
            why = hub.failed.get(name)
            state = f"not running: {why}" if why else plural(len(tools), "tool")
            self.err.print(one_line(f"{name}: {state}"), markup=False, highlight=False)
            for offered in tools:
                description = getattr(hub.tools[offered][1], "description", None) or ""
                line = f"  {offered}  {description.splitlines()[0] if description else ''}"
                self.err.print(one_line(line), markup=False, highlight=False)

    def fork(self, rest: str) -> None:
        if not self._stored("fork"):
            return
        self.agent.save()
        session = self.agent.session
        if rest.split()[:1] == ["--worktree"]:
            title = rest.removeprefix("--worktree").strip() or None
            forked = worktrees.fork(
                session.store, dict(os.environ), session.id, title=title, hooks=self.agent.hooks
            )
            self._say(
                f"forked: {forked.head.id} with worktree {forked.worktree['path']} on branch "
                f"{forked.worktree['branch']} (you are still in {short(session.id)}; "
                f"`gitsessions chat --resume {short(forked.head.id)}` works in it)"
            )
            return
        head = manage.fork(session.store, session.id, rest or None, hooks=self.agent.hooks)
        self._say(
            f"forked: {head.id} (you are still in {short(session.id)}; "
            f"`gitsessions chat --resume {short(head.id)}` to work on the fork)"
        )

    def merge(self, text: str) -> None:
        if self._stored("merge"):
            merge_here(self.agent, text, self.workspace, self.err)

    def rewind(self, text: str) -> None:
        usage = (
            "usage: \\rewind N [--force] (N: the turn to go back to, a number; `gitsessions "
            "log` lists them; --force snapshots changes no snapshot holds first)"
        )
        words = text.split()
        force = "--force" in words
        words = [w for w in words if w != "--force"]

        try:
            turn = points.parse_turn(words[0] if len(words) == 1 else "")
        except BadUsage:
            self._say(usage)
            return
        if not self._stored("rewind"):
            return
        self.agent.save()
        session = self.agent.session

        def run(dry_run: bool) -> Rewound:
            return rewind(session.store, dict(os.environ), session.id, turn, force=force,
                          workspace=self.workspace, lease_held=True,
                          dry_run=dry_run)  # fmt: skip

        preview = run(dry_run=True)
        report(self.err, preview)
        if preview.unchanged:
            return
        if not self._confirm(f"rewind to turn {turn}?"):
            self._say("not rewound; nothing changed", "dim")
            return
        done = run(dry_run=False)
        session.adopt(done.head)
        if done.unchanged or done.saved:  # changed back meanwhile; how to restore the save
            report(self.err, done)
        else:
            self._say(f"rewound to turn {turn}")

    def _confirm(self, question: str) -> bool:
        """A yes from the user at the prompt (Enter, Ctrl-D or Ctrl-C: no); keys typed
        before it was asked are no answer (discarded, and said so)."""
        dropped = discard_ahead()
        if dropped:
            self._say(discarded_note(dropped), "dim")
        self.err.print(vtext(question), end=" ", highlight=False)
        restore = echoed()
        try:
            answer = input("[y/N] ")
        except (EOFError, KeyboardInterrupt):
            self.err.print()
            return False
        finally:
            restore()
        return answer.strip().lower() in ("y", "yes")

    def pin(self, text: str) -> None:
        if not text.strip():
            self._say("usage: \\pin TEXT")
            return
        if not self._stored("pin"):
            return
        self.agent.save()
        session = self.agent.session
        written, pins = manage.pin(session.store, session.id, text, lease_held=True)
        session.adopt(written.head)
        self._say(f"pinned as {len(pins)}")

    def plan(self, _: str) -> None:
        items = self.agent.session.plan
        if not items:
            self._say("no plan yet")
        for item in items:
            mark = {"completed": "x", "in_progress": ">"}.get(item.get("status"), " ")
            self.err.print(vtext(f"[{mark}] {item.get('step', '')}"), highlight=False)

    def sessions(self, _: str) -> None:
        session = self.agent.session
        choices = picker.recent(session.store, self.workspace, current=session.id)
        if not choices or [c.id for c in choices.choices] == [session.id]:
            self._say("no other session in this workspace yet")
            return
        picked = picker.pick(
            self.err,
            choices,
            f"sessions of {one_line(self.workspace)}, the most recent first",
            "`gitsessions chat --resume ID` opens one",
        )
        if picked is None:
            self._say("nothing picked; still in this session", "dim")
        elif picked == session.id:
            self._say("already in this session", "dim")
        else:
            self.agent.save()
            raise SwitchSession(picked)

    def search(self, query: str) -> None:
        if not query:
            self._say("usage: \\search QUERY")
            return
        self.agent.save()
        hits = SearchIndex(self.agent.session.store).search(query, limit=20)
        if not hits:
            self._say("no matches")
        for h in hits:
            where = h.role if h.index is None else f"message {h.index}"
            line = Text(f"{held_by(h.holders)} {one_line(where)}: ")
            self.err.print(line + highlighted(h.snippet, h.marks), highlight=False)

    def diff(self, other: str) -> None:
        if not other:
            self._say("usage: \\diff ID (another session, or a revision: ID@turn:N, ID~N)")
            return
        self.agent.save()
        store = self.agent.session.store
        here = resolve(store, self.agent.session.id)
        diff_cmd.render(self.err, session_diff.diff(store, here, resolve(store, other)))

    def blame(self, arg: str) -> None:
        """`\\blame FILE[:LINE]` or `FILE -L A,B` (line_range.py, as the CLI's): one
        line's turn and prompt, a range's lines with their turns, or a file's turns."""
        given, flag, spec = arg.rpartition(" -L ")
        given = given.strip() if flag else arg.strip()
        if not given or (flag and not spec.strip()):
            self._say("usage: \\blame FILE[:LINE] or \\blame FILE -L A,B")
            return
        name, chosen = split_file(given, lambda whole: (self.workspace / whole).exists())
        chosen = parse_range(spec) if flag else chosen
        file = (self.workspace / name).absolute()
        reader = self.agent.session.store
        env = dict(os.environ)
        if chosen is not None and chosen[0] != chosen[1]:
            path, whole = blame_file(reader, env, file)
            for n in lines_of(chosen, len(whole.lines), path):
                by = whole.lines[n - 1].by
                self.err.print(vtext(f"{path}:{n}: {whole.lines[n - 1].text}"), highlight=False)
                self._say(f"  by {short(by.session)} turn {by.turn}" if by else "  a person's")
            return
        if chosen is not None:
            found = line_origin(reader, env, file, chosen[0])
            self.err.print(vtext(f"{found.path}:{found.line}: {found.text}"), highlight=False)
            if found.session is None:
                self._say("  a person's line: no turn of a session here wrote it")
                return
            self._say(f"  written by {short(found.session)} turn {found.turn}: {found.title}")
            if found.prompt:
                self._say(f"  prompt: {one_line(found.prompt)[:200]}")
            self._say(f"  gitsessions show {found.session[:8]}@turn:{found.turn}")
            return
        path, whole = blame_file(reader, env, file)
        counts: dict[tuple[str, int | None], int] = {}
        people = 0
        for line in whole.lines:
            if line.by is None:
                people += 1
            else:
                key = (line.by.session, line.by.turn)
                counts[key] = counts.get(key, 0) + 1
        self._say(f"{path}: {plural(len(whole.lines), 'line')}")
        for (sid, turn), n in sorted(counts.items(), key=lambda kv: -kv[1])[:10]:
            self._say(f"  {plural(n, 'line')} by {short(sid)} turn {turn}")
        if people:
            self._say(f"  {plural(people, 'line')} by a person")
