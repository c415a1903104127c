"""The session store: every session a branch, every change one commit.

Invariants:
- All writes go through `SessionStore.commit`: tree and commit from a base `Head`,
  objects written, then the branch compare-and-swapped from the base; a lost race raises
  `ConcurrentUpdate` and overwrites nothing.
- A fork is one commit whose parent is the source's head, its branch created after it:
  never half-made, nothing copied.
- Ids reach ref names only after `values.ids` checked them.
- With `redact` on (the default) every commit passes `store.redaction` first; the
  `Change` is updated in place (the caller holds what was stored), and `on_redacted`
  hears where once the commit is made.
"""

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dulwich.objects import Commit, ObjectID

from gitsessions.store import context_refs, here, upgrades
from gitsessions.store.change import Change as Change  # re-exported: the writers' one import
from gitsessions.store.change import next_header, transcript_records
from gitsessions.store.errors import (
    ConcurrentUpdate,
    ObjectMissing,
    SessionExists,
    SessionNotFound,
    StoreCorrupt,
    StoreError,
)
from gitsessions.store.formats import FORMAT, wrap
from gitsessions.store.layout import INLINE, JSON_FILES, transcript_tree
from gitsessions.store.reader import Head as Head  # re-exported: the writers' one import
from gitsessions.store.reader import SessionReader
from gitsessions.store.refs import ref_name
from gitsessions.store.repo import GitStore
from gitsessions.store.trailers import commit_message
from gitsessions.store.treedraft import TreeDraft
from gitsessions.values.canonical import dumps
from gitsessions.values.clock import now_iso, parse_iso
from gitsessions.values.ids import is_session_id
from gitsessions.values.records import (
    empty_usage,
    usage_since,
    without_local_marks,
)

if TYPE_CHECKING:  # writing only: a reader never imports maintenance or the secret rules
    from gitsessions.store.redaction import Finding, OnRedacted

AUTHOR = b"gitsessions <gitsessions@localhost>"


class SessionStore(SessionReader):
    """Sessions in `<home>/store.git`, read (`SessionReader`) and written."""

    git: GitStore

    def __init__(
        self,
        home: Path,
        *,
        redact: bool = True,
        on_redacted: "OnRedacted | None" = None,
        background_maintenance: bool = True,
    ) -> None:
        self.redact = redact
        self.on_redacted = on_redacted
        self.background_maintenance = background_maintenance
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            git = GitStore(home / "store.git")
        except OSError as error:
            reason = error.strerror or str(error)
            if home.exists() and not home.is_dir():  # mkdir says "File exists"
                reason = "it is not a directory"
            raise StoreError(f"cannot use {home} as the gitsessions home: {reason}") from None
        super().__init__(home, git)

    # -- writing --------------------------------------------------------------------------

    def commit(
        self,
        base: Head,
        change: Change,
        *,
        event: str,
        subject: str,
        trailers: Mapping[str, Any] | None = None,
        skip_unchanged: bool = False,
        merged: bytes | None = None,
    ) -> Head:
        """Commit `change` on top of `base`; `ConcurrentUpdate` if the branch moved.
        With `skip_unchanged`, a change that leaves every file as it was (but the
        header's `updated_at`) makes no commit: `base` itself comes back. `merged`: a
        second parent (another session's head joined in: a merge commit)."""
        return self._write(
            base.id, base, change, event, subject, trailers or {}, base.commit, skip_unchanged,
            merged=merged,
        )  # fmt: skip

    def create(
        self,
        header: dict[str, Any],
        change: Change,
        *,
        event: str = "create",
        subject: str | None = None,
        trailers: Mapping[str, Any] | None = None,
        when: int | None = None,
        parts: Iterable[Change] = (),
    ) -> Head:
        """A new session branch whose first commit holds `header` and `change`, dated
        `when` (Unix time; default: the header's `updated_at`).

        With `parts` (a long import read as it goes), each part is a commit of its own
        before the one of `change`, so no commit holds more than a part in memory; the
        branch is created only with the last commit, and the store's shared lock is held
        throughout, so `gc` cannot drop the commits no branch names yet. A failure
        midway leaves no session."""
        session_id = header["id"]
        if not is_session_id(session_id):
            raise StoreCorrupt(f"bad session id {session_id!r}")
        empty = Change(context=[], compactions=[], plan=[], pins=[], usage=empty_usage())
        subject = subject or f"{event}: {header.get('title') or session_id}"
        with self.git.locked():
            base: Head | None = None
            for n, part in enumerate(parts, start=1):
                if base is None:
                    part.header = header
                    for name in ("context", "compactions", "plan", "pins", "usage"):
                        if getattr(part, name) is None:
                            setattr(part, name, getattr(empty, name))
                base = self._write(
                    session_id, base, part, event, f"{subject} (part {n})", trailers or {},
                    None, when=when, publish=False,
                )  # fmt: skip
            if base is None:
                for name in ("context", "compactions", "plan", "pins", "usage"):
                    if getattr(change, name) is None:
                        setattr(change, name, getattr(empty, name))
            change.header = header
            made = self._write(
                session_id, base, change, event, subject, trailers or {}, None, when=when
            )
        self._made_here(session_id)
        return made

    def fork(
        self,
        source: Head,
        new_id: str,
        *,
        title: str | None,
        created_at: str,
        fork_point: bytes | None = None,
        header_updates: Mapping[str, Any] | None = None,
        trailers: Mapping[str, Any] | None = None,
        held_by: bytes | None = None,
    ) -> Head:
        """A new session on a commit whose parent is `source`'s head; nothing is copied.
        `fork_point` (default: that head) is what the header and trailer name: a pull's
        fork of a diverged line names the merge base. Marks that belong to one session
        alone (a worktree) are not inherited; `header_updates` sets the fork's own,
        `trailers` adds to its commit's. Its usage starts at zero: the parent's requests
        stay counted once, in the parent (a pull's fork counts what the line it holds
        spent since the merge base). `held_by`: the ref that keeps the source's objects
        (default: its branch; `undelete` names the trash ref of a deleted session)."""
        point = (fork_point or source.commit).decode()
        header = without_local_marks(source.header)
        header.pop("merged", None)  # the forks the source joined are its own record
        header.pop("format", None)
        header.pop("counts", None)
        header.update(header_updates or {})
        header.update(
            id=new_id,
            parent_id=source.id,
            fork_point=point,
            created_at=created_at,
            updated_at=created_at,
        )
        if title is not None:
            header["title"] = title
        all_trailers = {"Parent-Session": source.id, "Fork-Point": point, **(trailers or {})}
        usage = empty_usage()
        if fork_point is not None and fork_point != source.commit:
            # a pull's fork of a diverged line: what that line spent since the merge base
            then = self.head_at(source.id, fork_point).header.get("usage") or empty_usage()
            usage = usage_since(source.header.get("usage") or empty_usage(), then)
        try:
            made = self._write(
                new_id,
                source,
                Change(header=header, usage=usage),
                "fork",
                f"fork: from {source.id[:8]}",
                all_trailers,
                None,
                held_by=held_by,
            )
        except ObjectMissing:
            if self.exists(source.id):
                raise
            raise SessionNotFound(
                f"session {source.id[:8]} was deleted; nothing was forked"
            ) from None
        self._made_here(new_id)
        return made

    def _made_here(self, session_id: str) -> None:
        """A session this home made: `--continue` may pick it (store/here.py)."""
        here.remember_session(self.home, session_id, lambda: self.ids().keys())

    def _write(
        self,
        session_id: str,
        base: Head | None,
        change: Change,
        event: str,
        subject: str,
        trailers: Mapping[str, Any],
        expected: bytes | None,
        skip_unchanged: bool = False,
        *,
        when: int | None = None,
        publish: bool = True,
        held_by: bytes | None = None,
        merged: bytes | None = None,
    ) -> Head:
        """One commit of `change` on `base`, the branch moved from `expected` to it by
        compare-and-swap; with `publish=False` (the parts of a long import, see
        `create`) its objects are written and no ref moves. A fork goes ahead only while
        `held_by` (default: the source's branch) still keeps the source's objects."""
        self.git.ensure_main()  # a store made before `main` existed gets it now
        counts = (
            dict(base.counts) if base else {"messages": 0, "context_messages": 0, "compactions": 0}
        )
        findings: list[Finding] = []
        keys: list[bytes] | None = None  # the context's message keys, once computed
        if self.redact:
            subject, findings, keys = self._redact(change, subject, counts["messages"], base)
        draft, candidates = self._draft(base, change, trailers, counts, keys)
        header = next_header(session_id, base, change, event, counts)
        if skip_unchanged and base is not None and not change.append and merged is None:
            times = {k: base.header.get(k) for k in ("updated_at", "active_at")}
            draft.set("session.json", dumps({**header, **times}))
            if draft.root.id == base.tree:
                return base
            draft.new_objects.pop()
        draft.set("session.json", dumps(header))
        tree_id = draft.finish()

        commit = Commit()
        commit.tree = tree_id
        commit.parents = [ObjectID(base.commit)] if base else []
        if merged is not None and base is not None:  # a merge: the first parent stays own
            commit.parents.append(ObjectID(merged))
        commit.author = commit.committer = AUTHOR
        if when is None:
            when = _timestamp(header.get("updated_at"))
        commit.author_time = commit.commit_time = when
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = commit_message(subject, session_id, event, trailers)
        if not publish:
            with self.git.locked():
                self.git.add_objects([*draft.new_objects, commit])
            if candidates is not None:
                self.keep_context(session_id, commit.id, candidates)
            return Head(session_id, commit.id, tree_id, header)
        self._publish(session_id, base, expected, held_by, [*draft.new_objects, commit], merged)
        self._published(session_id, base, commit.id, findings, candidates)
        return Head(session_id, commit.id, tree_id, header)

    def _draft(
        self,
        base: Head | None,
        change: Change,
        trailers: Mapping[str, Any],
        counts: dict[str, int],
        keys: list[bytes] | None,
    ) -> tuple[TreeDraft, list[context_refs.Candidate] | None]:
        """The new tree (all but session.json) of `change` on `base` (one of an older
        format written whole as this build's), and `counts` updated; with the new context's
        (message key, transcript index) candidates when `change` sets a context."""
        older = base is not None and base.version < FORMAT
        draft = TreeDraft(self.git, None if base is None or older else base.tree)
        if base is not None and older:
            self._upgrading(base, change, draft)
        for what, name in JSON_FILES.items():
            value = getattr(change, what)
            if value is not None and what != "context":
                draft.set(name, dumps(wrap(what, value)))
        if change.files:  # bytes: the redaction gate does not scan them (store/files.py)
            draft.add_files(change.files)
        first = counts["messages"]
        if change.append:
            draft.append_transcript(transcript_records(change, trailers), first)
            counts["messages"] += len(change.append)
        candidates: list[context_refs.Candidate] | None = None
        if change.context is not None:
            counts["context_messages"] = len(change.context)
            known = self._candidates(base) if base is not None else []
            appended: list[context_refs.Candidate] = [
                (context_refs.key(m), first + i) for i, m in enumerate(change.append)
            ]
            candidates = context_refs.match(change.context, known + appended, keys)
            items, inline = context_refs.encode(change.context, [r for _k, r in candidates])
            draft.set("context.json", dumps(wrap("context", items)))
            draft.set(INLINE, dumps(wrap("inline", inline)))
        if change.compactions is not None:
            counts["compactions"] = len(change.compactions)
        return draft, candidates

    def _publish(
        self,
        session_id: str,
        base: Head | None,
        expected: bytes | None,
        held_by: bytes | None,
        objects: list[Any],
        merged: bytes | None = None,
    ) -> None:
        """Write `objects` (the commit last) and move the session's branch from `expected`
        to the commit by compare-and-swap; a fork only while its source's objects are kept,
        a merge only while the head it joins is still there."""
        ref = ref_name(session_id)
        staged = base is not None and base.id == session_id and expected is None
        with self.git.locked(), self.git.ref_locked(ref):
            if (
                base is not None
                and expected is None
                and not staged
                and not (self.git.ref(held_by) is not None if held_by else self.exists(base.id))
            ):
                # A fork whose source was deleted meanwhile: its objects may be purged.
                raise SessionNotFound(f"session {base.id[:8]} was deleted; nothing was forked")
            if merged is not None and not self.git.has(merged):
                raise SessionNotFound("the session to merge was deleted; nothing was merged")
            self.git.add_objects(objects)
            if not self.git.move_ref(ref, expected, objects[-1].id):
                if expected is None:
                    raise SessionExists(f"session {session_id} already exists")
                raise ConcurrentUpdate(
                    f"session {session_id[:8]} was changed by another process; "
                    "nothing was overwritten, try again"
                )

    def _published(
        self,
        session_id: str,
        base: Head | None,
        commit: bytes,
        findings: "list[Finding]",
        candidates: list[context_refs.Candidate] | None,
    ) -> None:
        """After a commit moved the branch: maintenance scheduled when due, the redaction
        heard, and the context's candidates kept for the next commit."""
        if self.background_maintenance:
            # writing only: 11-15 ms a command that only reads does not need
            from gitsessions.store import background, maintenance

            if maintenance.needs_maintenance(self.git):
                background.schedule(self.git.path)
        if findings and self.on_redacted is not None:  # only for a commit that happened
            self.on_redacted(session_id, findings)
        if candidates is not None:
            self.keep_context(session_id, commit, candidates)
        elif base is not None and self._contexts.get(session_id, (None,))[0] == base.commit:
            self.keep_context(session_id, commit, self._contexts[session_id][1])

    def _candidates(self, base: Head) -> list[context_refs.Candidate]:
        """The base's context as (message key, transcript index): what a new context is
        matched against (kept from the last read or commit, else read now)."""
        cached = self._contexts.get(base.id)
        if cached is not None and cached[0] == base.commit:
            return cached[1]
        self.context_lines(base)
        return self._contexts[base.id][1]

    def _upgrading(self, base: Head, change: Change, draft: TreeDraft) -> None:
        """A commit on a head of an older format writes it whole as this build's: every
        file as `upgrades` reads it (what the change leaves as it was filled in), the
        transcript's chunks filed in this format's trees (their blobs as they are)."""
        for what in (*JSON_FILES, "usage"):
            if getattr(change, what) is None:
                setattr(change, what, self.read(base, what))
        draft.transcript = transcript_tree(self.git, base.tree)
        if draft.transcript is not None:
            draft.add_trees(upgrades.transcript(self.git.tree, draft.transcript, base.version))

    def _redact(
        self, change: Change, subject: str, first: int, base: Head | None
    ) -> "tuple[str, list[Finding], list[bytes] | None]":
        """Redact `change` in place; the redacted subject, where secrets were found, and
        the keys of the context's messages as redacted (None: no context in `change`).
        A context message already stored (the base context's) or appended now (redacted
        with the transcript) is not scanned again: a commit's redaction costs what it
        adds, not the whole context."""
        # writing only: 11-15 ms a command that only reads does not need
        from gitsessions.store.redaction import redact_messages, redact_named, redact_subject

        findings: list[Finding] = []
        originals = [context_refs.key(m) for m in change.append]
        change.append, found = redact_messages(change.append, "transcript", first)
        findings += found
        keys: list[bytes] | None = None
        if change.context is not None:
            stored = {k for k, _ref in self._candidates(base)} if base is not None else set()
            appended = dict(zip(originals, change.append, strict=True))
            context: list[dict[str, Any]] = []
            keys = []
            for n, message in enumerate(change.context):
                text = context_refs.key(message)
                if text in stored:
                    context.append(message)
                    keys.append(text)
                    continue
                if text in appended:
                    redacted = [appended[text]]
                else:
                    redacted, found = redact_messages([message], "context", n)
                    findings += found
                context += redacted
                keys.append(text if redacted[0] is message else context_refs.key(redacted[0]))
            change.context = context
        for what, where in (
            ("header", "session.json"),
            ("pins", "pins"),
            ("plan", "plan"),
            ("compactions", "compactions"),
        ):
            if getattr(change, what) is not None:
                value, found = redact_named(getattr(change, what), where)
                setattr(change, what, value)
                findings += found
        subject, found = redact_subject(subject)
        return subject, findings + found, keys

    def delete(self, head: Head) -> dict[str, object]:
        """Remove the session's branch, then purge what no other branch reaches.

        The id is recorded as deleted first (so `doctor` never brings it back from its
        leftover commits), then the branch goes, then its objects."""
        # writing only: 11-15 ms a command that only reads does not need
        from gitsessions.store import maintenance, tombstones

        ref = ref_name(head.id)
        tombstones.record(self.git.path, head.id)
        with self.git.locked(), self.git.ref_locked(ref):
            if not self.git.move_ref(ref, head.commit, None):
                raise ConcurrentUpdate(f"session {head.id[:8]} changed while deleting; try again")
        self.git.forget_ref_lock(ref)
        return maintenance.purge(self.git, head.commit)

    def set_aside(self, head: Head, why: str, keep: bool = True) -> bool:
        """Delete the session as `delete` does, but keep its head in the trash
        (`store.trash`) and purge nothing: a remote's tombstone deletes here only what
        `undelete` can bring back (`keep=False`: what a fork of its whole line holds
        already; no trash). The trash ref is written before the branch goes; False
        (nothing deleted) when the branch moved meanwhile."""
        # writing only: 11-15 ms a command that only reads does not need
        from gitsessions.store import tombstones, trash

        ref = ref_name(head.id)
        with self.git.locked(), self.git.ref_locked(ref):
            if self.git.ref(ref) != head.commit:
                return False
            if keep:
                trash.set_aside(self.git, head.id, head.commit, why, int(time.time()))
            tombstones.record(self.git.path, head.id)
            if not self.git.move_ref(ref, head.commit, None):
                raise ConcurrentUpdate(f"session {head.id[:8]} changed while deleting; try again")
        self.git.forget_ref_lock(ref)
        return True


def _timestamp(iso: Any) -> int:
    try:
        return int(parse_iso(iso).timestamp())
    except (TypeError, ValueError):
        return int(time.time())


def touch(header: Mapping[str, Any], **updates: Any) -> dict[str, Any]:
    """A copy of a header with `updates` applied and `updated_at` set to now."""
    new = dict(updates)
    new.setdefault("updated_at", now_iso())
    return {**header, **new}
