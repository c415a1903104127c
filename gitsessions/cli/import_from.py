"""`import --from claude-code|codex [PATH ...]`: other agents' sessions into the store,
one line per source session (stdout), what was damaged, ignored or held back (stderr)."""

import time
from pathlib import Path
from typing import Any

from gitsessions.cli.plain import one_line, write_json, write_records
from gitsessions.cli.state import State, err, out
from gitsessions.services.imports import claude_code, claude_scan, codex, sources
from gitsessions.services.imports.agent_hooks import hook_ended, hook_transcript
from gitsessions.services.imports.finished import is_finished
from gitsessions.services.imports.forks import import_one
from gitsessions.services.imports.source import Outcome, Source
from gitsessions.store.lease import HomeNotWritable, check_writable, home_failure, not_writable
from gitsessions.store.sessions import SessionStore
from gitsessions.values.clock import now_iso
from gitsessions.values.errors import BadUsage, GitsessionsError, InvalidInput
from gitsessions.values.ids import short
from gitsessions.values.plural import plural

REFUSED = ("shortened", "rewritten", "diverged", "continued")
LEFT = "the files left were not imported"
THEN = "import again"  # what a home that cannot be written asks of the user


def run_import_from(state: State, format_: str, paths: list[Path], json_: bool) -> int:
    """Import every session file `paths` name (default: the source's own folder); the
    exit code: 1 when a source was refused or failed (nothing written for it), else 0."""
    if format_ not in sources.FORMATS:
        raise BadUsage(f"unknown source {format_!r}: expected one of {', '.join(sources.FORMATS)}")
    reader = claude_code if format_ == "claude-code" else codex
    if not paths:
        root = sources.default_root(format_, state.env, Path(state.env.get("HOME") or Path.home()))
        if not root.is_dir():
            raise InvalidInput(f"nothing to import from {format_}: {root} is not a folder")
        paths = [root]
    files = sources.session_files(paths)
    started = time.monotonic()
    # a summary line may stand in another file of the directory than the session it sums
    summaries = claude_scan.summaries_in(files) if format_ == "claude-code" else {}
    store = state.store
    if files:  # a home that cannot be written fails every file alike: said once, first
        check_writable(state.home, "nothing was imported", THEN)
    outcomes: list[Outcome] = []
    failed = 0
    stopped: HomeNotWritable | None = None
    for path in files:
        try:
            other = sources.format_of(path)
            if other is not None and other != format_:
                err.print(
                    f"error: {one_line(path)} is a {other} session file:"
                    f" import it with --from {other}",
                    markup=False,
                )
                failed += 1
                continue
            found = _sources(reader, path, store, summaries)
        except OSError as error:
            if folder := home_failure(error, state.home):
                stopped = not_writable(folder, error, LEFT, THEN)
                break
            err.print(f"warning: cannot read {one_line(path)}: {error.strerror}", markup=False)
            failed += 1
            continue
        not_imported, stopped = _import_all(state, path, found, outcomes)
        failed += not_imported
        if stopped is not None:
            break
    _report(outcomes, json_)
    refused = [o for o in outcomes if o.status in REFUSED]
    written = sum(1 for o in outcomes if o.wrote)
    unchanged = sum(1 for o in outcomes if o.status == "unchanged")
    forks = sum(1 for o in outcomes if o.source.fork_of is not None and o.status == "created")
    err.print(
        f"read {plural(len(files), f'{format_} session file')}:"
        f" {plural(written, 'session')} imported"
        + (f" ({plural(forks, 'fork')} of a branch in its file)" if forks else "")
        + (f", {unchanged} unchanged" if unchanged else "")
        + (f"; {len(refused)} refused (nothing written for them)" if refused else "")
        + (f"; {failed} failed" if failed else "")
        + ("; stopped" if stopped is not None else "")
        + f" in {time.monotonic() - started:.1f} s",
        markup=False,
    )
    if stopped is not None:
        raise stopped  # the one line of the cause every file left would have met
    return 1 if refused or failed else 0


def _import_all(
    state: State, path: Path, found: list[Source], outcomes: list[Outcome]
) -> tuple[int, HomeNotWritable | None]:
    """Import the source sessions read from `path`, their outcomes added to `outcomes`
    (each one's notes said); how many failed, and the error that stops the whole import
    (a home that cannot be written), if one did."""
    store = state.store
    failed = 0
    for one in found:
        if one.parent is not None and not store.exists(one.parent):
            one.parent = None  # a side chain whose main session was not imported
        one.finished = is_finished(path, one.tally.partial_tail)
        try:
            outcome = _import_one(store, one)
            if outcome is None:
                continue
        except OSError as error:
            if folder := home_failure(error, state.home):
                return failed, not_writable(folder, error, LEFT, THEN)
            err.print(f"warning: cannot read {one_line(path)}: {error.strerror}", markup=False)
            failed += 1
            continue
        except GitsessionsError as error:  # in use by another process, not an import...
            err.print(f"warning: {one_line(path)}: {error}", markup=False)
            failed += 1
            continue
        _notes(outcome)
        outcomes.append(outcome)
    return failed, None


def _report(outcomes: list[Outcome], json_: bool) -> None:
    """One line (or JSON object) per source session on stdout; an empty one is left out
    of the lines."""
    if json_:
        write_json(out, [_as_json(o) for o in outcomes])
        return
    write_records(
        out,
        (
            (o.source.session_id, o.status, o.messages, str(o.source.path))
            for o in outcomes
            if o.status != "empty"
        ),
    )


def _sources(
    reader: Any, path: Path, store: "SessionStore", summaries: dict[str, str]
) -> list[Source]:
    """The source sessions of one file: Claude Code's main file may hold side chains
    and branches, and one imported before is read from where that import stopped."""

    def header_of(session_id: str) -> dict[str, Any] | None:
        return store.head(session_id).header if store.exists(session_id) else None

    if reader is claude_code:
        return claude_code.sources(path, store.exists, header_of, summaries)
    return codex.sources(path, store.exists, header_of)


def _import_one(store: SessionStore, one: Source) -> Outcome | None:
    """One source session into the store (`forks.import_one`); a path that moved since
    its session was imported is said in one line."""
    outcome = import_one(store, one, now_iso())
    if outcome is not None and outcome.moved_from is not None:
        err.print(
            f"note: {one_line(one.path)}: its path moved since session"
            f" {short(outcome.moved_from)} was imported (a prompt edited or rewound):"
            " imported as a fork of it",
            markup=False,
        )
    return outcome


def _notes(outcome: Outcome) -> None:
    """What the user should know of one source: damage, ignored lines, a refusal."""
    source, tally = outcome.source, outcome.source.tally
    name = one_line(source.path)
    for number, reason in tally.damaged:
        err.print(f"warning: {name}: line {number} skipped: {reason}", markup=False)
    if tally.damaged_count > len(tally.damaged):
        more = tally.damaged_count - len(tally.damaged)
        err.print(f"warning: {name}: {plural(more, 'more damaged line')} skipped", markup=False)
    if tally.unknown:
        kinds = ", ".join(f"{one_line(k)} ({n})" for k, n in sorted(tally.unknown.items()))
        err.print(f"note: {name}: unknown line types ignored: {kinds}", markup=False)
    if tally.joined:
        err.print(
            f"note: {name}: {plural(tally.joined, 'line')} whose parent is not in the file"
            " joined to the line before it",
            markup=False,
        )
    if outcome.held is not None:
        err.print(
            f"note: {name}: from line {outcome.held} held back (the file is still being"
            " written); the next import takes it",
            markup=False,
        )
    if outcome.stubbed:
        err.print(
            f"note: {name}: {plural(outcome.stubbed, 'tool call')} without a result in the"
            " source (given a stub result)",
            markup=False,
        )
    if outcome.orphans:
        err.print(
            f"note: {name}: {plural(outcome.orphans, 'tool result')} without a call in the"
            " source kept as notes",
            markup=False,
        )
    if outcome.status in REFUSED:
        err.print(
            f"warning: {name}: {outcome.status}, nothing written to session"
            f" {short(source.session_id)}: {outcome.detail}",
            markup=False,
        )


def _as_json(outcome: Outcome) -> dict[str, Any]:
    tally = outcome.source.tally
    return {
        "session": outcome.source.session_id,
        "status": outcome.status,
        "path": str(outcome.source.path),
        "source_id": outcome.source.source_id,
        "messages": outcome.messages,
        "compactions": outcome.compactions,
        "lines": tally.lines,
        "damaged": [{"line": n, "reason": r} for n, r in tally.damaged],
        "damaged_count": tally.damaged_count,
        "unknown": dict(tally.unknown),
        "joined": tally.joined,
        "parent": outcome.source.parent,
        "fork_of": outcome.source.fork_of,
        "ignored": dict(tally.ignored),
        "held_from_line": outcome.held,
        "stubbed": outcome.stubbed,
        "orphans": outcome.orphans,
        "read_from_line": outcome.read_from_line,
        "detail": outcome.detail,
    }


def run_hook(state: State, format_: str, payload: str) -> None:
    """One source session mirrored as its agent runs (a Claude Code hook, Codex's
    notify): the file its JSON names imported; every failure one line on stderr, never
    an exit code that could stop the agent."""
    try:
        if format_ not in sources.FORMATS:
            raise InvalidInput(f"unknown source {format_!r}")
        home = Path(state.env.get("HOME") or Path.home())
        path = hook_transcript(format_, payload, sources.default_root(format_, state.env, home))
        if path is None or not path.is_file():
            raise InvalidInput("the hook named no session file")
        ended = hook_ended(format_, payload)
        if format_ == "claude-code":
            from gitsessions.services.imports import claude_code as reader
        else:
            # the other importer, with the same functions (`_sources` takes either)
            from gitsessions.services.imports import codex as reader  # type: ignore[no-redef]
        store = state.store
        for one in _sources(reader, path, store, {}):
            if one.parent is not None and not store.exists(one.parent):
                one.parent = None
            one.finished = is_finished(path, one.tally.partial_tail, hook=True, ended=ended)
            outcome = _import_one(store, one)
            if outcome is not None and outcome.status in REFUSED:
                _notes(outcome)
    except (GitsessionsError, OSError) as error:  # in use, refused, a file that went away
        if isinstance(error, OSError) and (folder := home_failure(error, state.home)):
            error = not_writable(
                folder, error, "this turn is not imported yet", "the next hook run imports it"
            )
        err.print(f"gitsessions: import hook: {one_line(error)}", markup=False)
