"""A source session written to the store and kept in step with it. Its id derives from the
source's id; the header's `imported` records the source, the bytes read (and their
SHA-256), the outputs committed with their chained SHA-256 (`outputs`, `digest`), where
the next import may read on (`resume`) and what a finished file's end settled.

Invariants:
- A re-import appends only outputs past `outputs`, and only when the source still begins
  with the bytes read and its outputs hash to `digest`: a source shortened, rewritten or
  whose chain moved, or a session continued here since, is reported, nothing written.
- A finished file settled at its end that grows after all settles again at the same
  lines, so what was imported stays how the source's outputs begin.
- Memory: one line, one batch of `PART` records (and `files.MAX_COMMIT` bytes of images),
  the context since the last compaction; never the whole transcript.
- Every commit passes the redaction gate (the `source` data redacted here with the same
  rules), under the session's lease.
"""

import copy
import hashlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from gitsessions.services.hooks.audit import audit
from gitsessions.services.imports.assemble import (
    Assembler,
    Compacted,
    Entry,
    Item,
    Output,
    RolledBack,
)
from gitsessions.services.imports.lines import prefix_sha256
from gitsessions.services.imports.source import Outcome, Snapshot, Source
from gitsessions.services.sessions import writer
from gitsessions.store.files import MAX_COMMIT
from gitsessions.store.lease import Lease
from gitsessions.store.sessions import Change, Head, SessionStore
from gitsessions.values.canonical import dumps_line
from gitsessions.values.errors import InvalidInput
from gitsessions.values.ids import MAX_TITLE
from gitsessions.values.plural import plural
from gitsessions.values.records import add_usage, empty_usage, empty_workspace
from gitsessions.values.secrets import redact_value

PART = 2048  # transcript records per commit
MAX_SETTLED = 100  # lines where a finished file's end settled what was open, kept


class _Mismatch(Exception):
    """The source's outputs no longer begin as what was imported."""


def import_source(store: SessionStore, source: Source, now: str) -> Outcome:
    """Import `source` (see the module's invariants); one audit line."""
    with Lease(store.home, source.session_id):
        outcome = _import(store, source, now)
    if outcome.redacted:  # in the records' `source` data (messages: the store's gate says)
        found = [{"where": "source", "rule": r, "count": n} for r, n in outcome.redacted.items()]
        audit(store.home, "redact", source.session_id, "ok", findings=found)
    audit(
        store.home,
        "import",
        source.session_id,
        outcome.status,
        source=source.format,
        messages=outcome.messages,
    )
    return outcome


def _import(store: SessionStore, source: Source, now: str) -> Outcome:
    if source.finished:
        source.tally.settle_tail()  # a cut last line: nothing will complete it now
    head = store.head(source.session_id) if store.exists(source.session_id) else None
    skip, expect = 0, ""
    if head is not None:
        refused = _refusal(source, head)
        if refused is not None:
            return refused
        done = done_of(head)
        skip, expect = int(done.get("outputs", 0)), str(done.get("digest"))
    assembler = source.assembler or Assembler()
    run = _Run(store, source, head, now, assembler)
    start = source.start
    if start is not None:  # read on from where the last import (or a branch's) stood
        at = (start["outputs"], start["digest"])
        if head is None or at[0] > skip or (at[0] == skip and at[1] != expect):
            raise InvalidInput(f"session {source.session_id[:8]} changed while it was read")
        run.seen, run.digest = at
        assembler.turn, assembler.step = start["turn"], start["step"]
    run.skip = skip
    try:
        if skip == run.seen and run.digest != expect:
            raise _Mismatch
        settled = [] if start is not None else list(done_of(head).get("settled") or [])
        outputs = assembled(
            assembler, source.items(), source.finished, settled, source.cuts, run.snapshot
        )
        for output in outputs:
            run.take(output, skip, expect)
        if run.seen < skip:
            raise _Mismatch
        if source.resume_point is not None:
            run.resume = source.resume_point(assembler)
        if assembler.forced and source.tally.lines not in run.settled:
            # where a read of the file grown since settles the same way
            run.settled = [*run.settled, source.tally.lines][-MAX_SETTLED:]
        run.flush(final=True)
    except _Mismatch:
        if run.head is not head:  # cannot happen: nothing is written before the check
            raise AssertionError("an import wrote before its check") from None
        return Outcome(
            source,
            "diverged",
            detail="what was imported is no longer how the source begins"
            " (a prompt edited or a turn rolled back in it)",
        )
    status = "unchanged"
    if head is None:
        status = "created" if run.head is not None else "empty"
    elif run.head is not None and run.head.commit != head.commit:
        status = "appended"
    return Outcome(
        source,
        status,
        messages=run.messages,
        compactions=run.compactions,
        held=assembler.held,
        orphans=assembler.orphans,
        stubbed=assembler.stubbed,
        redacted=run.redacted,
        read_from_line=start["line"] + 1 if start is not None else None,
    )


def _refusal(source: Source, head: Head) -> Outcome | None:
    """Why the source cannot be imported again into `head` (nothing written), if so."""
    done = done_of(head)
    if done.get("from") != source.format or done.get("id") != source.source_id:
        raise InvalidInput(
            f"session {source.session_id[:8]} exists and is not an import of"
            f" {source.format} session {source.source_id}"
        )
    read = int(done.get("bytes", 0))
    if source.tally.bytes < read:
        return Outcome(source, "shortened", detail=f"{read} bytes were imported, it now has fewer")
    # a source read on from the last import's end (`start`) had its first bytes checked
    # by its reader (`lines.resume_point`): not hashed twice
    if source.start is None and prefix_sha256(source.path, read) != done.get("sha256"):
        return Outcome(source, "rewritten", detail=f"its first {read} bytes changed")
    if head.counts.get("messages") != done.get("messages"):
        return Outcome(
            source,
            "continued",
            detail="the session was continued here since its last import;"
            " the source's new lines are not merged into it",
        )
    return None


def assembled(
    assembler: Assembler,
    items: Iterator[Item],
    final: bool,
    settled: list[int],
    cuts: Sequence[int] = (),
    at_cut: Callable[[int, bool], None] | None = None,
) -> Iterator[Output]:
    """The assembled outputs; at each line of `settled` (where an earlier import found
    the file finished and settled what was open), what is open settled again; before
    the first item past each line of `cuts`, `at_cut(line, False)`, then what that item
    would close anyway closed (`Assembler.close_before`), then `at_cut(line, True)`."""
    points, forks = sorted(settled), sorted(cuts)
    for item in items:
        while points and item.line > points[0]:
            points.pop(0)
            yield from assembler.settle()
        while forks and item.line > forks[0]:
            line = forks.pop(0)
            if at_cut is not None:
                at_cut(line, False)
            yield from assembler.close_before(item)
            if at_cut is not None:
                at_cut(line, True)
        yield from assembler.feed(item)
    yield from assembler.finish(final)


def done_of(head: Head | None) -> dict[str, Any]:
    """The `imported` record of a session's header ({} for none)."""
    done = head.header.get("imported") if head is not None else None
    return done if isinstance(done, dict) else {}


class _Run:
    """One import's writing: outputs taken in order, committed in batches."""

    def __init__(
        self, store: SessionStore, source: Source, head: Head | None, now: str, assembler: Assembler
    ) -> None:
        self.store, self.source, self.head, self.now = store, source, head, now
        self.assembler = assembler  # its `title`: the first prompt typed
        self.latest = _parse(now)  # no time of the source's is later than the import's
        self.settled: list[int] = list(done_of(head).get("settled") or [])
        self.skip = 0  # outputs a re-import takes without writing them (its first)
        self.digest = ""  # chained: sha256(previous digest, the output), per output
        self.resume: dict[str, Any] | None = None  # set once the source is read to its end
        self.seen = 0  # outputs of the source taken (imported before or now)
        self.batch: list[Entry] = []
        self.held_bytes = 0  # of the batch's files
        self.messages = 0
        self.compactions = 0
        self.redacted: dict[str, int] = {}
        self.tools: set[str] = set()
        if head is not None:
            self.context: list[dict[str, Any]] = store.read(head, "context")
            self.records: list[dict[str, Any]] = store.read(head, "compactions")
            self.usage: dict[str, Any] = head.header.get("usage") or empty_usage()
            self.tools = set((head.header.get("imported") or {}).get("tools") or [])
        else:
            self.context, self.records, self.usage = [], [], empty_usage()
        self.starts = [n for n, m in enumerate(self.context) if m.get("role") == "user"]

    def take(self, output: Output, skip: int, expect: str) -> None:
        if self.seen >= skip and not isinstance(output, Entry):
            self.flush()  # the batch so far, its digest without this output
        self.seen += 1
        self.digest = chained(self.digest, output)
        if self.seen < skip:
            return
        if self.seen == skip:
            if self.digest != expect:
                raise _Mismatch
            return
        if isinstance(output, Entry):
            self._add(output)
            if len(self.batch) >= PART or self.held_bytes >= MAX_COMMIT:
                self.flush()
        elif isinstance(output, Compacted):
            summary = [output.summary] if output.summary is not None else []
            self.context, self.starts = [], []
            self.records = [*self.records, output.record]
            for entry in summary:
                self._add(entry, turn_start=False)
            self.compactions += 1
            record = output.record
            self._commit(
                "compact",
                f"compact: {record['before_tokens']} -> {record['after_tokens']} tokens"
                f" (imported from {self.source.format})",
                {
                    "Tokens-Before": record["before_tokens"],
                    "Tokens-After": record["after_tokens"],
                    "Trigger": record["trigger"],
                    "Stages": ",".join(record["stages"]) or "none",
                },
            )
        elif isinstance(output, RolledBack):
            if output.turns and len(self.starts) >= output.turns:
                cut = self.starts[-output.turns]
                self.context, self.starts = self.context[:cut], self.starts[: -output.turns]
            turns = plural(output.turns, "turn")
            self._commit("import", f"import: {turns} rolled back in the source")

    def snapshot(self, line: int, closed: bool) -> None:
        """Before the first line past `line`, where a branch of the file leaves: how the
        import stands kept for the branch (`Snapshot`); once what that line would close
        is closed (`closed`), what is taken committed, and the commit kept with it."""
        if not closed:
            copied = copy.deepcopy(self.assembler)
            self.source.snapshots[line] = Snapshot(copied, self.seen, self.digest)
            return
        snapshot = self.source.snapshots[line]
        if self.seen >= self.skip:
            self.flush()
            if self.head is not None:
                snapshot.commit = self.head.commit
                snapshot.committed, snapshot.committed_digest = self.seen, self.digest

    def _add(self, entry: Entry, turn_start: bool = True) -> None:
        message, meta = entry.message, dict(entry.meta)
        if "time" in meta:
            meta["time"] = record_time(meta["time"], self.latest)
            if meta["time"] is None:
                del meta["time"]
        if "source" in meta and self.store.redact:
            meta["source"], found = redact_value(meta["source"])
            for rule, n in found.items():
                self.redacted[rule] = self.redacted.get(rule, 0) + n
        usage = meta.get("usage")
        if usage:
            self.usage = add_usage(
                self.usage,
                str(meta.get("model") or "unknown"),
                usage["prompt_tokens"],
                usage["completion_tokens"],
                0.0,
            )
        for call in message.get("tool_calls") or []:
            self.tools.add(call["function"]["name"])
        if turn_start and message.get("role") == "user" and meta.get("step") == 0:
            self.starts.append(len(self.context))
        self.context.append(message)
        self.batch.append(Entry(message, meta, files=entry.files))
        self.held_bytes += sum(map(len, entry.files.values()))

    def flush(self, final: bool = False) -> None:
        """Commit the batch; at the end, a header the source changed (a new title)."""
        if self.batch:
            self._commit("import", self._subject())
        elif (
            final
            and self.head is not None
            and _comparable(self._header()) != _comparable(self.head.header)
        ):
            self._commit("import", f"import: header from {self.source.format}")

    def _subject(self) -> str:
        if self.head is None:
            name = stored_title(self.source.title) or self.source.source_id
            return f"import: {name} (from {self.source.format})"
        return f"import: {plural(len(self.batch), 'message')} from {self.source.format}"

    def _header(self) -> dict[str, Any]:
        """The header this import writes (compared with a head's by `_comparable`)."""
        source = self.source
        base = dict(self.head.header) if self.head is not None else {}
        done = base.get("imported") or {}
        header = {
            **base,
            "id": source.session_id,
            "title": base.get("title", ""),
            "summary": base.get("summary", ""),
            "parent_id": base.get("parent_id", source.parent),
            "fork_point": base.get("fork_point"),
            "archived": base.get("archived", False),
            "created_at": base.get("created_at")
            or header_time(source.first_time, self.now)
            or self.now,
            "workspace": base.get("workspace")
            or {**empty_workspace(source.cwd), "branch": source.branch},
            "model": base.get("model"),
        }
        for key in ("title", "summary"):  # what the source renamed since (not our renames)
            value = stored_title(getattr(source, key)) if key == "title" else source.summary
            if value is not None and value != done.get(key):
                header[key] = value
        typed = stored_title(self.assembler.title)
        if not header["title"] and not header["summary"] and typed:
            header["title"] = typed  # no title of the source's own: the first prompt typed
        last = header_time(source.last_time, self.now) or header["created_at"]
        header["updated_at"] = max(base.get("updated_at") or last, last)
        header["active_at"] = max(base.get("active_at") or last, last)
        if header["model"] is None:
            header["model"] = next(
                (m for m in self.usage.get("by_model", {}) if m != "unknown"), None
            )
        header["imported"] = {
            **source.extra,
            "from": source.format,
            "id": source.source_id,
            "path": str(source.path),
            "cwd": source.cwd,
            "title": stored_title(source.title),
            "summary": source.summary,
            "bytes": source.tally.bytes,
            "sha256": source.tally.sha256,
            "lines": source.tally.lines,
            "outputs": self.seen,
            "messages": (self.head.counts.get("messages", 0) if self.head else 0) + len(self.batch),
            "digest": self.digest,
            "tools": sorted(self.tools),
            "resume": self.resume,
        }
        if self.settled:
            header["imported"]["settled"] = self.settled
        return header

    def _commit(self, event: str, subject: str, trailers: dict[str, Any] | None = None) -> None:
        header = self._header()
        change = Change(
            header=header,
            context=list(self.context),
            append=[e.message for e in self.batch],
            append_meta=[e.meta for e in self.batch],
            as_recorded=True,
            compactions=list(self.records),
            usage=self.usage,
            files={name: data for e in self.batch for name, data in e.files.items()},
        )
        count = len(self.batch)
        if self.head is None:
            self.head = writer.create(
                self.store,
                header,
                change,
                operation=None,
                event=event,
                subject=subject,
                trailers=trailers,
            )
        else:
            edit = writer.Edit(change, event, subject, trailers or {})
            self.head = writer.commit_on(self.store, self.head, edit).head
        self.messages += count
        self.batch, self.held_bytes = [], 0


def chained(digest: str, output: Output) -> str:
    """The digest of the outputs so far (`digest`) and then `output` (`imported.digest`)."""
    return hashlib.sha256(digest.encode() + _digestible(output)).hexdigest()


def _digestible(output: Output) -> bytes:
    if isinstance(output, Entry):
        return b"E" + dumps_line([output.message, output.meta]) + b"\n"
    if isinstance(output, Compacted):
        summary = output.summary
        shown = [output.record, summary.message if summary else None]
        return b"C" + dumps_line(shown) + b"\n"
    return b"R" + str(output.turns).encode() + b"\n"


def _comparable(header: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in header.items() if k not in ("format", "counts", "usage")}


def stored_title(text: str | None) -> str | None:
    """A source's title as a stored title: one line, no control characters, at most
    `MAX_TITLE` characters (None when nothing is left)."""
    if text is None:
        return None
    line = "".join(
        c for c in text.strip().split("\n")[0] if ord(c) >= 32 and not 0x7F <= ord(c) < 0xA0
    )
    line = line.strip()[:MAX_TITLE].strip()
    return line or None


def _parse(text: Any, latest: datetime | str | None = None) -> datetime | None:
    """A source's timestamp in UTC; one later than `latest` (the import's time) is it."""
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        when = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    if isinstance(latest, str):
        latest = _parse(latest)
    return min(when, latest) if latest is not None else when


def record_time(text: Any, latest: datetime | str | None = None) -> str | None:
    """A source's timestamp as a record's `time` (UTC, milliseconds, at most `latest`);
    None if it is none."""
    when = _parse(text, latest)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" if when else None


def header_time(text: Any, now: str | None = None) -> str | None:
    when = _parse(text, now)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else None
