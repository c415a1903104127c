"""One session as a live agent process sees it: the committed head plus what is pending.

Invariants:
- Every message goes to both records at once (`record` to the transcript alone: the
  context stays a subsequence of it); `checkpoint` commits both in one commit.
- The context starts with gitsessions' own system prompt and holds no other system
  message, whatever a session brought (`use_system_prompt`).
- After a checkpoint the context in memory is the one stored: with redaction on, the
  model is sent `[REDACTED:<rule>]`, never the secret.
- Commits build only on `self.head` (else `ConcurrentUpdate`; the CLI's lease makes it rare).
- Opening writes nothing: this workspace's system prompt and the current settings ride
  with the next commit something else makes. A new session is a draft until its first
  checkpoint (no empty sessions), which writes `create` then the turn; `head` raises
  `NotStored` on a draft.
"""

from collections.abc import Mapping
from typing import Any

from gitsessions.agent.prompts import for_another_workspace
from gitsessions.services.sessions import writer
from gitsessions.services.sessions.writer import Edit
from gitsessions.store.sessions import Change, Head, SessionStore, touch
from gitsessions.store.trailers import parse_trailers
from gitsessions.values.canonical import scrub
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import GitsessionsError
from gitsessions.values.ids import new_id
from gitsessions.values.messages import Message, text_of
from gitsessions.values.records import add_usage, empty_usage, new_header


class NotStored(GitsessionsError):
    """What needs a stored session was asked of a draft (no prompt was sent yet)."""


class AgentSession:
    def __init__(
        self, store: SessionStore, head: Head | None, draft: dict[str, Any] | None = None
    ) -> None:
        self.store = store
        self._head = head
        self._draft = draft  # the header of a session not stored yet (head is None)
        if head is None:
            assert draft is not None
            system = {"role": "system", "content": draft.pop("system_prompt")}
            self.context: list[Message] = [system]
            self.plan: list[Any] = []
            self.pins: list[str] = []
            self.usage: dict[str, Any] = empty_usage()
            self.turn = 0
        else:
            self.context = store.read(head, "context")
            self.plan = store.read(head, "plan")
            self.pins = store.read(head, "pins")
            self.usage = store.read(head, "usage")
            self.turn = _turn_of(store, head)
        self.pending: list[Message] = []
        self.pending_meta: list[dict[str, Any]] = []  # per pending message: model, usage
        self.header_updates: dict[str, Any] = {}
        self._dirty = False

    @classmethod
    def draft(
        cls,
        store: SessionStore,
        system_prompt: str,
        workspace: Mapping[str, Any],
        model: str,
        settings: Mapping[str, Any] | None = None,
    ) -> "AgentSession":
        """A new session, stored at its first checkpoint (see the module's invariants)."""
        header = new_header(
            new_id(), now_iso(), workspace=workspace, model=model, settings=settings
        )
        return cls(store, None, {**header, "system_prompt": system_prompt})

    @classmethod
    def create(
        cls,
        store: SessionStore,
        system_prompt: str,
        workspace: Mapping[str, Any],
        model: str,
        settings: Mapping[str, Any] | None = None,
    ) -> "AgentSession":
        """A new session, stored now."""
        session = cls.draft(store, system_prompt, workspace, model, settings)
        session._store_draft()
        return session

    def _store_draft(self) -> None:
        assert self._draft is not None
        system = self.context[0]
        created = now_iso()
        header = {**self._draft, "created_at": created, "updated_at": created}
        self._head = writer.create(
            self.store,
            header,
            Change(context=[system], append=[system]),
            operation=None,  # a turn's tool runs are audited; the session's birth is its commit
            subject="create: new session",
        )
        self._draft = None

    def title_draft(self, title: str) -> None:
        """Title a draft: stored with it at its first checkpoint."""
        assert self._draft is not None
        self._draft["title"] = title

    @property
    def is_draft(self) -> bool:
        """Nothing stored yet: no prompt was sent."""
        return self._head is None

    @property
    def head(self) -> Head:
        if self._head is None:
            raise NotStored("the session is not saved yet: it starts with your first prompt")
        return self._head

    @head.setter
    def head(self, head: Head) -> None:
        self._head = head

    @property
    def header(self) -> dict[str, Any]:
        """The header as stored (a draft's as it will be)."""
        if self._head is not None:
            return self._head.header
        assert self._draft is not None  # a draft until its first checkpoint
        return dict(self._draft)

    @property
    def id(self) -> str:
        if self._head is None:
            assert self._draft is not None
            return str(self._draft["id"])
        return self._head.id

    @property
    def dirty(self) -> bool:
        """Whether anything awaits the next checkpoint."""
        return self._dirty

    @property
    def messages_total(self) -> int:
        stored = 0 if self._head is None else self._head.counts.get("messages", 0)
        return stored + len(self.pending)

    def add(self, message: Message, **meta: Any) -> None:
        """Append to the working context and (at the next checkpoint) the transcript;
        `meta` (a reply's `model` and `usage`) goes to its transcript record only."""
        message = scrub(message)  # a model or a tool may produce text UTF-8 cannot hold
        self.context.append(message)
        self._queue(message, meta)

    def _queue(self, message: Message, meta: dict[str, Any]) -> None:
        self.pending.append(message)
        self.pending_meta.append(meta)
        self._dirty = True

    def use_system_prompt(self, prompt: str) -> int:
        """Make `prompt` the context's first and only system message (on resume: the
        prompt is ours, written for this workspace, never one a stored or imported context
        brought along). Returns how many system messages with other text were dropped
        (ours for another workspace is not other text); they stay in the transcript. The
        change rides with the next commit, which it never makes on its own: opening a
        session and leaving writes nothing."""
        system: Message = {"role": "system", "content": prompt}
        others = [m for m in self.context if m.get("role") != "system"]
        dropped = sum(
            1
            for m in self.context
            if m.get("role") == "system"
            and text_of(m) != prompt
            and not for_another_workspace(text_of(m), prompt)
        )
        self.context = [system, *others]
        return dropped

    def set_context(self, messages: list[Message]) -> None:
        """Replace the working context (`\\undo`); the transcript keeps everything. The
        change is committed at the next checkpoint."""
        self.context = list(messages)
        self._dirty = True

    def record(self, message: Message, **meta: Any) -> None:
        """Append to the transcript only (at the next checkpoint): something that happened
        but that the model must not be sent, such as a reply cut off mid-stream."""
        self._queue(scrub(message), meta)

    def withdraw(self, count: int) -> None:
        """Take back the last `count` messages added and not committed yet (a prompt
        whose commit failed: it was never stored, nor sent)."""
        assert 0 < count <= len(self.pending)
        del self.context[-count:]
        del self.pending[-count:]
        del self.pending_meta[-count:]
        if self._head is None and not self.pending:  # a draft again, with nothing to store
            self._dirty = False

    def set_plan(self, items: list[Any]) -> None:
        self.plan = items
        self._dirty = True

    def count_usage(self, model: str, prompt: int, completion: int, cost: float) -> None:
        self.usage = add_usage(self.usage, model, prompt, completion, cost)
        self._dirty = True

    def update_header(self, **fields: Any) -> None:
        self.header_updates.update(fields)
        self._dirty = True

    def note_header(self, **fields: Any) -> None:
        """Header fields recorded with the next commit, which they never make on their
        own (the settings a resumed session now runs with)."""
        self.header_updates.update(fields)

    def unanswered_prompt(self) -> str | None:
        """The prompt of a turn the model left unfinished (it was down, or the process
        died): the context ends with that prompt or with tool results."""
        if len(self.context) < 2 or self.context[-1].get("role") not in ("user", "tool"):
            return None
        for message in reversed(self.context):
            if message.get("role") == "user":
                return text_of(message)
        return None

    def last_record(self) -> Message | None:
        """The newest transcript record's message (pending, else stored); None for none."""
        if self.pending:
            return self.pending[-1]
        if self._head is None:
            return None
        count = self._head.counts.get("messages", 0)
        tail = self.store.transcript(self._head, count - 1, count) if count else []
        return tail[-1] if tail else None

    def open_calls(self) -> list[str]:
        """Ids of the last assistant message's tool calls that have no result yet."""
        answered: set[str] = set()
        for message in reversed(self.context):
            if message.get("role") == "tool":
                answered.add(str(message.get("tool_call_id")))
                continue
            if message.get("role") == "assistant":
                calls = [str(c.get("id")) for c in message.get("tool_calls") or []]
                return [c for c in calls if c not in answered]
            return []
        return []

    def checkpoint(
        self, subject: str, event: str = "turn", trailers: Mapping[str, Any] | None = None
    ) -> bool:
        """Commit what is pending; False when there was nothing to commit."""
        if not self._dirty:
            return False
        if self._head is None:
            self._store_draft()
        header = touch(self.head.header, **self.header_updates)
        change = Change(
            header=header,
            context=self.context,
            append=self.pending,
            append_meta=self.pending_meta,
            plan=self.plan,
            pins=self.pins,
            usage=self.usage,
        )
        all_trailers = {"Turn": self.turn, **(trailers or {})}
        # The one write path, on exactly our head (we hold the lease). A failed commit
        # keeps everything pending, so the next checkpoint commits it.
        self.head = writer.commit_on(
            self.store, self.head, Edit(change, event, subject, all_trailers)
        ).head
        # what was stored (redacted, when redaction is on) is what the model sees next
        assert change.context is not None and change.plan is not None and change.pins is not None
        self.context, self.plan, self.pins = change.context, change.plan, change.pins
        self.pending = []
        self.pending_meta = []
        self.header_updates = {}
        self._dirty = False
        return True

    def adopt(self, head: Head) -> None:
        """Continue from `head` (written by compaction, a slash command...): re-read state."""
        assert not self.pending, "checkpoint before handing the session to another writer"
        self.head = head
        self.context = self.store.read(head, "context")
        self.plan = self.store.read(head, "plan")
        self.pins = self.store.read(head, "pins")
        self.usage = self.store.read(head, "usage")


def _turn_of(store: SessionStore, head: Head) -> int:
    """The number of the last turn, from the newest commit that records one (a fork
    continues its parent's numbering)."""
    for _commit_id, commit in store.history(head):
        _subject, trailers = parse_trailers(commit.message)
        if "Turn" in trailers and trailers["Turn"].isdigit():
            return int(trailers["Turn"])
    return 0
