"""Slash commands inside `chat` (`\\cmd` or `/cmd`). Nothing here is sent to the model."""

from collections.abc import Callable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitsessions.agent.loop import Agent, TurnResult
from gitsessions.cli.search import highlighted
from gitsessions.cli.terminal import one_line, vtext
from gitsessions.services import manage
from gitsessions.services.search import SearchIndex
from gitsessions.store.catalog import Catalog
from gitsessions.values.ids import check_title, short
from gitsessions.values.plural import plural

HELP = [
    ("\\compact [focus]", "compact the working context now (summary kept, full record kept)"),
    ("\\retry", "send the last prompt again (its answer, if any, leaves the context)"),
    ("\\undo", "drop the last turn from the working context (the full record keeps it)"),
    ("\\title TEXT", "set this session's title"),
    ("\\info", "session id, title, messages, compactions, usage and cost, context tokens"),
    ("\\fork", "save a checkpoint and fork this session (you stay here)"),
    ("\\pin TEXT", "pin a note that survives every compaction verbatim"),
    ("\\plan", "show the agent's plan"),
    ("\\sessions", "recent sessions"),
    ("\\search QUERY", "search all sessions"),
    ("\\help", "this list"),
    ("\\exit", "leave (Ctrl-D works too)"),
]


Turn = Callable[[], TurnResult]


class Exit(Exception):
    """The user asked to leave."""


class Slash:
    def __init__(self, agent: Agent, out: Console, err: Console) -> None:
        self.agent = agent
        self.out = out
        self.err = err
        self.commands: dict[str, Callable[[str], Turn | None]] = {
            "retry": self.retry,
            "undo": self.undo,
            "compact": self.compact,
            "title": self.title,
            "info": self.info,
            "fork": self.fork,
            "pin": self.pin,
            "plan": self.plan,
            "sessions": self.sessions,
            "search": self.search,
            "help": self.help,
            "exit": self.exit,
            "quit": self.exit,
        }

    @staticmethod
    def is_command(line: str) -> bool:
        return line[:1] in ("\\", "/") and line[1:2].isalpha()

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
        return self.agent.retry

    def undo(self, _: str) -> None:
        undone = self.agent.undo()
        if undone is None:
            self._say("nothing to undo: the working context holds no prompt")
            return
        which = f"turn {undone.turn}" if undone.turn else "the last prompt"
        self._say(
            f"undone: {which} ({one_line(undone.prompt)[:60]}) left the working context; "
            "the full record keeps it"
        )

    def compact(self, focus: str) -> None:
        result = self.agent.compact("manual", focus=focus or None)
        if result is None:
            return  # the loop already said why
        if result.outcome == "nothing_to_compact":
            self._say("nothing to compact")
        elif result.outcome == "not_needed":
            self._say(f"nothing changed ({result.before_tokens} tokens)")

    def title(self, text: str) -> None:
        title = check_title(text)
        self.agent.save()  # pending steps first: the rename builds on them
        session = self.agent.session
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
            ("session", session.id),
            ("title", session.head.header.get("title") or "-"),
            ("summary", session.head.header.get("summary") or "-"),
            (
                "messages",
                f"{session.messages_total} in the full record, "
                f"{len(session.context)} in the working context",
            ),
            ("compactions", str(session.head.counts.get("compactions", 0))),
            (
                "usage",
                f"{usage.get('prompt_tokens', 0)} prompt + "
                f"{usage.get('completion_tokens', 0)} completion tokens, "
                f"{plural(usage.get('requests', 0), 'request')}, ${usage.get('cost_usd', 0.0):.4f}",
            ),
            (
                "context",
                f"{tokens} / {budget} tokens ({100 * tokens // budget}%), "
                f"compaction at {int(self.agent.config.policy.trim_threshold * 100)}%",
            ),
            ("counting", self.agent.counter.method),
        ]
        table = Table(box=None, show_header=False, pad_edge=False)
        for key, value in rows:
            table.add_row(Text(key, style="bold"), Text(one_line(value)))
        self.err.print(table)

    def fork(self, _: str) -> None:
        self.agent.save()
        session = self.agent.session
        head = manage.fork(session.store, session.id)
        self._say(
            f"forked: {head.id} (you are still in {short(session.id)}; "
            f"`gitsessions chat --resume {short(head.id)}` to work on the fork)"
        )

    def pin(self, text: str) -> None:
        if not text.strip():
            self._say("usage: \\pin TEXT")
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
        headers = [h for h in Catalog(self.agent.session.store).headers() if not h.get("archived")]
        headers.sort(key=lambda h: h.get("active_at") or h.get("updated_at") or "", reverse=True)
        table = Table(box=None, pad_edge=False)
        for column in ("id", "title", "summary", "active"):
            table.add_column(column)
        for h in headers[:15]:
            here = " *" if h["id"] == self.agent.session.id else ""
            table.add_row(
                short(h["id"]) + here,
                one_line(h.get("title") or ""),
                one_line(h.get("summary") or ""),
                one_line((h.get("active_at") or h.get("updated_at") or "").replace("T", " ")),
            )
        self.err.print(table, markup=False)

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
            line = Text(f"{short(h.session)} {one_line(where)}: ")
            self.err.print(line + highlighted(h.snippet, h.marks), highlight=False)
