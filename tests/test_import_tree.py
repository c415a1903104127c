"""`import --from claude-code` on a project folder whose files are real trees (issue 39):
tests/fixtures/real/claude-tree, three session files modelling the shapes that lost
outputs, texts, prompts and thinking on real Claude Code 2.1.x files (see SOURCES):

- a `compact_boundary` (parentUuid null) whose `logicalParentUuid` is not in the file;
- a Stop hook's `progress` line whose parent (the unwritten rest of an interrupted reply)
  is not in the file, the conversation going on from it;
- parallel calls of one message, a line each, chained, whose results come back out of
  order, the next reply continuing from the result written last;
- a finished file whose last line (its final reply) has no newline;
- `summary` lines whose `leafUuid` is in another file of the folder;
- a prompt edited: one reply with two typed prompts as children, the newer the main line;
- a reply that is only thinking at the end of a turn;
- a Bash call whose output is the empty string.

Everything expected is counted here from the fixture's own lines, by a walk of its JSON
written for this test (nothing of gitsessions.services.imports is used), and looked for
in every session the import left in the home: the main sessions and their forks."""

import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gitsessions.values.messages import alternating
from tests.conftest import Cli, git

TREE = Path(__file__).parent / "fixtures" / "real" / "claude-tree"

# The report's keys for what issue 39 adds (`import --json`)
REPORT_JOINED = "joined"  # per outcome: lines whose parent is missing, joined to the line before
REPORT_FORK_OF = "fork_of"  # on a fork's outcome: the id of the session it branched from


# -- the count from the source -------------------------------------------------------


@dataclass
class Branch:
    """A line with two or more typed prompts as children: the last one in the file is
    the main line, each earlier one a branch the user left."""

    file: str  # the file's stem
    parent: str  # the line both prompts answer
    prompts: list[str]  # the children's prompt texts, in file order


@dataclass
class Counted:
    """What the fixture holds, read straight from its lines."""

    outputs: dict[str, str] = field(default_factory=dict)  # tool_use_id -> output text
    calls: dict[str, str] = field(default_factory=dict)  # tool_use id -> tool name
    texts: list[str] = field(default_factory=list)  # assistant text blocks
    prompts: list[str] = field(default_factory=list)  # prompts typed
    thinking: list[str] = field(default_factory=list)  # thinking blocks' text
    uuids: dict[str, set[str]] = field(default_factory=dict)  # file stem -> its line uuids
    summaries: list[tuple[str, str, str]] = field(default_factory=list)  # (text, leaf, in file)
    joined: dict[str, int] = field(default_factory=dict)  # file stem -> lines with parent missing
    branches: list[Branch] = field(default_factory=list)
    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # file stem -> lines
    raw: dict[str, bytes] = field(default_factory=dict)  # file stem -> its bytes


def parsed(data: bytes) -> Iterator[dict[str, Any]]:
    """Each line of a file as JSON (not splitlines(): U+2028 may stand inside a line)."""
    for raw in data.decode("utf-8").split("\n"):
        if raw.strip():
            yield json.loads(raw)


def as_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)


def blocks(line: dict[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def typed_prompts(line: dict[str, Any]) -> list[str]:
    """The prompts a user line holds: its string content or text blocks, unless Claude
    Code wrote it (isMeta) or it is a compaction's summary."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return []
    content = line["message"]["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in blocks(line) if b.get("type") == "text"]


def count(folder: Path) -> Counted:
    counted = Counted()
    for path in sorted(folder.glob("*.jsonl")):
        stem = path.stem
        data = path.read_bytes()
        lines = list(parsed(data))
        counted.raw[stem], counted.lines[stem] = data, lines
        uuids = {line["uuid"] for line in lines if isinstance(line.get("uuid"), str)}
        counted.uuids[stem] = uuids
        children: dict[str, list[dict[str, Any]]] = defaultdict(list)
        joined = 0
        for line in lines:
            kind = line.get("type")
            if kind == "summary":
                counted.summaries.append((line["summary"], line["leafUuid"], stem))
                continue
            if "uuid" not in line:
                continue
            parent = line.get("parentUuid")
            if parent is None and line.get("subtype") == "compact_boundary":
                parent = line.get("logicalParentUuid")
            if parent is not None and parent not in uuids:
                joined += 1
            if parent is not None:
                children[parent].append(line)
            counted.prompts += typed_prompts(line)
            for block in blocks(line):
                if block.get("type") == "tool_result":
                    counted.outputs[block["tool_use_id"]] = as_text(block.get("content"))
                elif block.get("type") == "tool_use" and kind == "assistant":
                    counted.calls[block["id"]] = block["name"]
                elif block.get("type") == "text" and kind == "assistant":
                    counted.texts.append(block["text"])
                elif block.get("type") == "thinking" and kind == "assistant":
                    counted.thinking.append(block["thinking"])
        counted.joined[stem] = joined
        for parent, kids in children.items():
            prompts = [p for kid in kids for p in typed_prompts(kid)]
            if len(prompts) > 1:
                counted.branches.append(Branch(stem, parent, prompts))
    return counted


COUNTED = count(TREE)


# -- what the home holds ---------------------------------------------------------------


@dataclass
class Stored:
    """Every session of the home, exported, and what their transcripts hold."""

    sessions: dict[str, dict[str, Any]]  # id -> export document
    tool: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    said: list[str] = field(default_factory=list)  # assistant messages' content
    asked: list[str] = field(default_factory=list)  # user messages' content
    reasoning: list[str] = field(default_factory=list)  # every string in source.reasoning

    def __post_init__(self) -> None:
        for doc in self.sessions.values():
            for record in doc["transcript"]:
                message = record.get("message", record)  # a format-1 line is the bare message
                role, text = message.get("role"), as_text(message.get("content"))
                if role == "tool":
                    self.tool[message.get("tool_call_id")].append(text)
                elif role == "assistant":
                    self.said.append(text)
                elif role == "user":
                    self.asked.append(text)
                source = record.get("source") or {}
                self.reasoning += strings(source.get("reasoning"))

    def by_source(self, stem: str) -> str:
        """The id of the (main) session imported from the file `stem`."""
        found = [
            sid
            for sid, doc in self.sessions.items()
            if (doc.get("imported") or {}).get("id") == stem
        ]
        if len(found) > 1:  # a fork that names the same source: the main one is its parent
            found = [sid for sid in found if self.sessions[sid].get("parent_id") not in found]
        assert len(found) == 1, (stem, found)
        return found[0]

    def forks_of(self, sid: str) -> list[str]:
        return [s for s, doc in self.sessions.items() if doc.get("parent_id") == sid]

    def holds(self, sid: str, prompt: str) -> bool:
        return any(
            prompt in as_text(r.get("message", r).get("content"))
            for r in self.sessions[sid]["transcript"]
            if r.get("message", r).get("role") == "user"
        )


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


def refs(home: Path) -> str:
    return git(home / "store.git", "for-each-ref", "--format=%(objectname) %(refname)").stdout


def session_ids(home: Path) -> list[str]:
    out = git(home / "store.git", "for-each-ref", "--format=%(refname)", "refs/heads/sessions/")
    return [line.rsplit("/", 1)[1] for line in out.stdout.split()]


def stored(cli: Cli, home: Path) -> Stored:
    ids = session_ids(home)
    return Stored({sid: json.loads(cli("export", sid).stdout) for sid in ids})


def transcript_at(home: Path, commit: str) -> list[dict[str, Any]]:
    """The messages of a session's transcript as the commit `commit` holds it (stock git)."""
    store = home / "store.git"
    names = git(store, "ls-tree", "-r", "--name-only", commit, "transcript").stdout.split()
    messages = []
    for name in sorted(names):
        for record in parsed(git(store, "show", f"{commit}:{name}").stdout.encode()):
            messages.append(record.get("message", record))
    return messages


@dataclass
class Imported:
    report: list[dict[str, Any]]
    stored: Stored
    folder: Path


def staged(tmp_path: Path) -> Path:
    """The fixture's folder copied under tmp_path, its files last written an hour ago:
    finished files (a plain import takes them whole)."""
    folder = tmp_path / "projects" / "-home-rui-src-tallyho"
    folder.mkdir(parents=True)
    old = time.time() - 3600
    for path in TREE.glob("*.jsonl"):
        shutil.copyfile(path, folder / path.name)
        os.utime(folder / path.name, (old, old))
    return folder


@pytest.fixture
def imported(cli: Cli, home: Path, tmp_path: Path) -> Imported:
    folder = staged(tmp_path)
    report = cli.json("import", "--from", "claude-code", str(folder))
    return Imported(report, stored(cli, home), folder)


# -- the fixture holds what the tests count on -----------------------------------------


def test_the_fixture_holds_every_shape():
    """Each shape of issue 39 is in the fixture (a test of a fixture without it would
    prove nothing), and every line parses."""
    c = COUNTED
    assert len(c.lines) == 3
    every = [line for lines in c.lines.values() for line in lines]
    versions = {line["version"] for line in every if "version" in line}
    assert versions == {"2.1.17", "2.1.29", "2.1.42"}

    # 1. a compact_boundary whose logicalParentUuid is not in its file, in two files
    boundaries = [
        stem
        for stem, lines in c.lines.items()
        for line in lines
        if line.get("subtype") == "compact_boundary"
        and line["parentUuid"] is None
        and line["logicalParentUuid"] not in c.uuids[stem]
    ]
    assert len(boundaries) == 2 and len(set(boundaries)) == 2
    # and each is followed by its isCompactSummary line
    for stem in boundaries:
        lines = c.lines[stem]
        n = next(i for i, line in enumerate(lines) if line.get("subtype") == "compact_boundary")
        assert lines[n + 1]["isCompactSummary"] is True
        assert lines[n + 1]["parentUuid"] == lines[n]["uuid"]

    # 2. a Stop hook's progress line whose parent is not in the file, the chat going on
    stops = [
        (stem, line)
        for stem, lines in c.lines.items()
        for line in lines
        if line["type"] == "progress"
        and line["data"]["hookEvent"] == "Stop"
        and line["parentUuid"] not in c.uuids[stem]
    ]
    assert len(stops) == 1
    stem, stop = stops[0]
    after = {line.get("parentUuid"): line for line in c.lines[stem]}
    summary_line = after[stop["uuid"]]
    assert summary_line["subtype"] == "stop_hook_summary"
    assert typed_prompts(after[summary_line["uuid"]]), "no prompt goes on from the hook"

    # 3. parallel calls: one message.id over several lines, a call each, chained; their
    # results on lines of their own, out of order; the next reply after the last one
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in every:
        if line["type"] == "assistant":
            by_id[line["message"]["id"]].append(line)
    parallel = [
        ls
        for ls in by_id.values()
        if sum(b["type"] == "tool_use" for x in ls for b in blocks(x)) > 2
    ]
    assert len(parallel) == 1
    calls = [x for x in parallel[0] if any(b["type"] == "tool_use" for b in blocks(x))]
    assert all(len(blocks(x)) == 1 for x in calls)
    assert [x["parentUuid"] for x in calls[1:]] == [x["uuid"] for x in calls[:-1]]
    stem = next(s for s, ls in c.lines.items() if calls[0] in ls)
    results = [
        line
        for line in c.lines[stem]
        if any(b.get("type") == "tool_result" for b in blocks(line))
        and line["parentUuid"] in {x["uuid"] for x in calls}
    ]
    order = [blocks(r)[0]["tool_use_id"] for r in results]
    assert sorted(order) == sorted(blocks(x)[0]["id"] for x in calls)
    assert order[0] == blocks(calls[-1])[0]["id"], "the last call's result is not first"
    line_of_call = {blocks(x)[0]["id"]: x["uuid"] for x in calls}
    for result in results:  # each result's parent is its own call's line
        assert result["parentUuid"] == line_of_call[blocks(result)[0]["tool_use_id"]]
    assert after_line(c.lines[stem], results[-1])["parentUuid"] == results[-1]["uuid"]

    # 4. a finished file whose last line, its final reply, has no newline
    unended = [stem for stem, data in c.raw.items() if not data.endswith(b"\n")]
    assert len(unended) == 1
    last = c.lines[unended[0]][-1]
    assert last["type"] == "assistant" and blocks(last)[0]["type"] == "text"

    # 5. every file's summary line is another file's: each leafUuid is in another file
    assert len(c.summaries) == 3
    homes = [file_of(leaf) for _text, leaf, _in in c.summaries]
    assert sorted(homes) == sorted(c.lines)
    for _text, leaf, sits in c.summaries:
        assert file_of(leaf) != sits

    # 6. a real branch: one reply answered by two typed prompts, each with its own turn
    assert [(len(b.prompts)) for b in c.branches] == [2]
    branch = c.branches[0]
    kids = [x for x in c.lines[branch.file] if x.get("parentUuid") == branch.parent]
    for kid in kids:
        grandchildren = [x for x in c.lines[branch.file] if x.get("parentUuid") == kid["uuid"]]
        assert [x["type"] for x in grandchildren] == ["assistant"]

    # 7. a reply that is only thinking, ending its turn
    only = [
        ls
        for ls in by_id.values()
        if all(b["type"] == "thinking" for x in ls for b in blocks(x))
        and ls[-1]["message"]["stop_reason"] == "end_turn"
    ]
    assert len(only) == 1

    # 8. a Bash call whose output is the empty string
    empty = [i for i, text in c.outputs.items() if text == ""]
    assert [c.calls[i] for i in empty] == ["Bash"]

    # and something of each kind to count
    assert c.outputs and c.texts and c.prompts and c.thinking
    assert set(c.outputs) == set(c.calls), "a call without a result, or the reverse"


def after_line(lines: list[dict[str, Any]], line: dict[str, Any]) -> dict[str, Any]:
    return lines[lines.index(line) + 1]


def file_of(uuid: str) -> str:
    found = [stem for stem, uuids in COUNTED.uuids.items() if uuid in uuids]
    assert len(found) == 1, uuid
    return found[0]


# -- everything the source holds is stored somewhere -----------------------------------


def test_every_tool_output_is_stored(imported: Imported):
    tool = imported.stored.tool
    lost = {
        call_id: text[:60]
        for call_id, text in COUNTED.outputs.items()
        if not any(text in content for content in tool.get(call_id, []))
    }
    assert not lost, f"{len(lost)} of {len(COUNTED.outputs)} tool outputs stored nowhere: {lost}"


def test_an_empty_output_is_stored_and_sent_as_a_text_that_says_so(imported: Imported):
    empty = [call_id for call_id, text in COUNTED.outputs.items() if text == ""]
    assert empty
    for call_id in empty:
        contents = imported.stored.tool.get(call_id)
        assert contents == [""], f"the empty output of {call_id} is not stored as it was"
        for doc in imported.stored.sessions.values():  # what a resumed turn sends
            for message in alternating(doc["messages"]):
                if message.get("tool_call_id") == call_id:
                    assert message["content"].strip(), f"{call_id} is sent empty"


def test_every_assistant_text_is_stored(imported: Imported):
    said = imported.stored.said
    lost = [t[:60] for t in COUNTED.texts if not any(t in s for s in said)]
    assert not lost, f"{len(lost)} of {len(COUNTED.texts)} assistant texts stored nowhere: {lost}"


def test_every_typed_prompt_is_stored(imported: Imported):
    asked = imported.stored.asked
    lost = [p[:60] for p in COUNTED.prompts if not any(p in a for a in asked)]
    assert not lost, f"{len(lost)} of {len(COUNTED.prompts)} prompts stored nowhere: {lost}"


def test_every_thinking_block_is_stored(imported: Imported):
    reasoning = imported.stored.reasoning
    lost = [t[:60] for t in COUNTED.thinking if not any(t in r for r in reasoning)]
    assert not lost, (
        f"{len(lost)} of {len(COUNTED.thinking)} thinking blocks stored nowhere: {lost}"
    )


def test_a_reply_that_is_only_thinking_is_kept_in_its_turn(imported: Imported):
    """Its thinking is stored on a record of its own turn: before the prompt typed after
    it (not carried to the next turn's reply)."""
    checked = 0
    for lines in COUNTED.lines.values():
        for line in lines:
            kinds = {b.get("type") for b in blocks(line)}
            if line["type"] != "assistant" or kinds != {"thinking"}:
                continue
            if line["message"]["stop_reason"] != "end_turn":
                continue
            thought = blocks(line)[0]["thinking"]
            after = [
                p for x in lines if x.get("parentUuid") == line["uuid"] for p in typed_prompts(x)
            ]
            assert after, "the fixture's thinking-only reply has no prompt after it"
            checked += 1
            kept = False
            for doc in imported.stored.sessions.values():
                records = doc["transcript"]
                at = [
                    n
                    for n, r in enumerate(records)
                    if any(thought in t for t in strings((r.get("source") or {}).get("reasoning")))
                ]
                asked = [
                    n
                    for n, r in enumerate(records)
                    if r.get("message", r).get("role") == "user"
                    and after[0] in as_text(r.get("message", r).get("content"))
                ]
                kept = kept or bool(at and asked and at[0] < asked[0])
            assert kept, f"the thinking-only reply {thought[:40]!r} is not kept in its turn"
    assert checked == 1


# -- where things land -----------------------------------------------------------------


def test_each_summary_lands_on_the_session_holding_its_leaf(imported: Imported):
    s = imported.stored
    want = {s.by_source(file_of(leaf)): text for text, leaf, _in in COUNTED.summaries}
    got = {sid: s.sessions[sid]["summary"] for sid in want}
    assert got == want
    for text, _leaf, sits in COUNTED.summaries:  # never on the file it sits in
        assert s.sessions[s.by_source(sits)]["summary"] != text


def test_the_branch_left_is_a_fork_of_the_main_line(imported: Imported, home: Path):
    s = imported.stored
    for branch in COUNTED.branches:
        main = s.by_source(branch.file)
        *older, newest = branch.prompts
        assert s.holds(main, newest), "the newest prompt is not on the main line"
        forks = s.forks_of(main)
        for prompt in older:
            assert not s.holds(main, prompt), "an older branch's prompt is on the main line"
            holding = [f for f in forks if s.holds(f, prompt)]
            assert len(holding) == 1, f"no fork of {main} holds the prompt {prompt!r}"
            fork = s.sessions[holding[0]]
            assert fork["parent_id"] == main
            point = fork["fork_point"]
            assert point, "the fork has no fork point"
            ancestor = git(
                home / "store.git",
                "merge-base",
                "--is-ancestor",
                point,
                f"refs/heads/sessions/{main}",
                check=False,
            )
            assert ancestor.returncode == 0, f"fork point {point} is not a commit of {main}"
            # the fork point is the branching turn: the reply both prompts answer, and
            # neither prompt yet
            there = [as_text(m.get("content")) for m in transcript_at(home, point)]
            replied = [
                b["text"]
                for line in COUNTED.lines[branch.file]
                if line.get("uuid") == branch.parent
                for b in blocks(line)
                if b.get("type") == "text"
            ]
            assert replied and all(any(t in m for m in there) for t in replied)
            assert not any(p in m for p in branch.prompts for m in there)


def test_the_report_counts_joined_lines_and_forks(imported: Imported):
    report = imported.report
    for outcome in report:
        assert REPORT_JOINED in outcome, f"no {REPORT_JOINED!r} in the report: {sorted(outcome)}"
    joined: dict[str, int] = defaultdict(int)
    for outcome in report:
        joined[Path(outcome["path"]).stem] += outcome[REPORT_JOINED]
    assert dict(joined) == COUNTED.joined
    s = imported.stored
    forks = [o for o in report if o.get(REPORT_FORK_OF)]
    want = [s.by_source(b.file) for b in COUNTED.branches for _older in b.prompts[:-1]]
    assert sorted(o[REPORT_FORK_OF] for o in forks) == sorted(want)
    assert all(s.sessions[o["session"]]["parent_id"] == o[REPORT_FORK_OF] for o in forks)


def test_importing_the_folder_again_writes_nothing(imported: Imported, cli: Cli, home: Path):
    before = refs(home)
    again = cli.json("import", "--from", "claude-code", str(imported.folder))
    assert [o["status"] for o in again] == ["unchanged"] * len(again)
    # each file is read on from where its import stopped: its forks are not read again
    assert {o["path"] for o in again} == {o["path"] for o in imported.report}
    assert refs(home) == before
