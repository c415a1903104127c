"""Terminal escapes: no string from a model, a tool, a file, the store or an import reaches
the terminal raw. `visible()` escapes it; every CLI write goes through consoles that apply
it; hostile sessions and a hostile model are run through every command."""

import ast
import io
import json
import os
import re
import sys
from pathlib import Path

import pexpect
import pytest
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from gitsessions.cli import state
from gitsessions.cli.approvals import describe_approval
from gitsessions.cli.chat_ui import ChatEvents, markdown
from gitsessions.cli.plain import PlainConsole, Styled, one_line, vtext, write_json, write_records
from gitsessions.cli.terminal import VisibleConsole
from gitsessions.store.sessions import Change
from gitsessions.values.clock import now_iso
from gitsessions.values.ids import new_id
from gitsessions.values.records import new_header
from gitsessions.values.visible import json_visible, visible
from tests.conftest import REPO, run_gitsessions
from tests.test_chat import as_a_terminal

CLI = Path(__file__).resolve().parent.parent / "gitsessions" / "cli"

# What an attacker writes: erase the line and rewrite it, a hidden hyperlink, a window
# title, carriage return and backspace, a one-byte CSI, a bidi override, a zero-width space.
WIPE = "\x1b[2K\x1b[1G"
EVIL = (
    f"{WIPE}ls -la \x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ "
    "\x1b]0;pwned-title\x07 over\rwrite\b \x9b31m \u202etxt.exe\u2066 zero\u200bwidth"
)
# The same text without C0/C1 controls, for a title (import refuses controls in titles).
EVIL_TITLE = "report\u202egnp.exe\u2066 zero\u200bwidth"
SGR = re.compile(r"\x1b\[[0-9;]*m")
RAW = ("\x1b", "\x9b", "\u202e", "\u2066", "\u200b", "\x07", "\b")


def assert_safe(text: str) -> None:
    """Not one raw control, bidi or zero-width character (output that is not a terminal
    carries no styling, so not even an ESC of rich's own)."""
    for char in (*RAW, "\r"):
        assert char not in text, f"raw {char!r} in {text!r}"


# -- visible() --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("\x1b[2K\x1b[1Gls", "\\x1b[2K\\x1b[1Gls"),  # CSI
        ("\x1b]8;;http://x\x1b\\a\x1b]8;;\x1b\\", "\\x1b]8;;http://x\\x1b\\a\\x1b]8;;\\x1b\\"),
        ("a\rb", "a\\rb"),
        ("a\bb\x07\x00\x7f", "a\\x08b\\x07\\x00\\x7f"),
        ("\x9b31m", "\\x9b31m"),  # C1 CSI
        ("\x85", "\\x85"),
        ("abc\u202edef", "abc\\u202edef"),
        (
            "\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
            "\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c",
        ),
        ("a\u200bb\u200cc\u2060d\ufeff", "a\\u200bb\\u200cc\\u2060d\\ufeff"),
        ("x\u200dy", "x\\u200dy"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("lone \ud800", "lone \\ud800"),
        ("line\u2028sep", "line\\u2028sep"),
    ],
)
def test_visible_escapes(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert visible(shown) == shown  # idempotent: escapes are printable ASCII


def test_visible_keeps_normal_text() -> None:
    text = "héllo wörld, 中文, русский, עברית, 🙂 👨\u200d👩\u200d👧 👍🏽 ✓ [bold]x[/]\ttab\nnext"
    assert visible(text) == text
    assert visible("plain") is visible("plain")  # nothing to escape: no copy


def test_visible_one_line_escapes_newlines_and_tabs() -> None:
    assert visible("a\nb\tc", keep_newlines=False) == "a\\nb\\tc"


def test_escaping_is_per_character_so_split_sequences_stay_escaped() -> None:
    pieces = [EVIL[i : i + 3] for i in range(0, len(EVIL), 3)]
    assert "".join(visible(p) for p in pieces) == visible(EVIL)
    for char in RAW:
        assert char not in visible(EVIL)


def test_json_visible_is_the_same_data() -> None:
    value = {"t": EVIL, "emoji": "👨\u200d👩", "tag": "\U000e0041", "lone": "\udc80"}
    text = json_visible(json.dumps(value, ensure_ascii=False, indent=2))
    assert json.loads(text) == value
    assert_safe(text)
    assert "\n" in text  # the layout stays


def test_visible_is_fast_on_large_text() -> None:
    clean = "plain text, accents é and CJK 中文 " * 200_000  # ~7 MB
    assert visible(clean) is clean
    dirty = "\x1b[0m" * 100_000
    assert visible(dirty).count("\\x1b") == 100_000


# -- the consoles -----------------------------------------------------------------------


def render(renderable: object, terminal: bool) -> str:
    console = VisibleConsole(
        file=io.StringIO(),
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        width=100,
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def hostile_renderables() -> list[object]:
    table = Table()
    table.add_column("title")
    table.add_row(EVIL)
    return [EVIL, Text(EVIL, style="bold"), table, Markdown(f"# {EVIL}\n\n`{EVIL}`\n\n{EVIL}")]


@pytest.mark.parametrize("index", range(4))
def test_console_escapes_whatever_it_is_given(index: int) -> None:
    renderable = hostile_renderables()[index]
    assert_safe(render(renderable, terminal=False))
    styled = render(hostile_renderables()[index], terminal=True)
    assert "\x1b[" in styled or index == 0  # rich's own styling still works
    assert WIPE not in styled and "\x1b]0;" not in styled and "\x1b]8;;http://evil" not in styled
    for char in ("\x9b", "\u202e", "\u2066", "\u200b", "\x07"):
        assert char not in styled
    assert "\\x1b[2K\\x1b[1Gls -la" in SGR.sub("", styled)


def test_a_plain_console_would_not_be_safe() -> None:
    """The check above can fail: rich on its own passes ESC through."""
    console = Console(file=io.StringIO(), force_terminal=False, markup=False)
    console.print(EVIL)
    assert WIPE in console.file.getvalue()  # type: ignore[attr-defined]


def test_streaming_reply_is_escaped_across_chunks() -> None:
    out = VisibleConsole(file=io.StringIO(), force_terminal=True, width=100)
    err = VisibleConsole(file=io.StringIO(), force_terminal=True, width=100)
    events = ChatEvents(out, err)
    for i in range(0, len(EVIL), 2):  # ESC and its sequence arrive in separate chunks
        events.text(EVIL[i : i + 2])
    events.reply({"role": "assistant", "content": EVIL})
    shown = out.file.getvalue()  # type: ignore[attr-defined]
    assert WIPE not in shown and "\x1b]0;" not in shown and "\u202e" not in shown
    assert "\\x1b]0;pwned-title" in SGR.sub("", shown)


def test_markdown_shows_link_targets_instead_of_hiding_them() -> None:
    shown = render(markdown("[docs](http://evil.example/x)"), terminal=True)
    assert "\x1b]8;" not in shown and "http://evil.example/x" in shown


def test_approval_shows_every_argument_whole() -> None:
    command = "ls -la" + " " * 300 + f"; echo pwned > pwned.txt {WIPE}\u202e\nsecond line"
    text = describe_approval("run_shell", {"command": command, "timeout": 30})
    shown = render(text, terminal=False)
    assert_safe(shown)
    lines = shown.splitlines()
    assert lines[0] == "allow run_shell?"
    # the command on lines of its own, whole
    assert lines[1].startswith("  $ ls -la") and lines[1].endswith(
        "; echo pwned > pwned.txt \\x1b[2K\\x1b[1G\\u202e"
    )
    assert lines[2] == "    second line"
    assert lines[3] == "  timeout: 30"


def test_approval_of_a_file_shows_path_size_and_first_lines_and_all_on_request() -> None:
    content = "line 1\n" * 50 + f"hidden {WIPE}\u202e tail\n"
    arguments = {"path": f"a{WIPE}.py", "content": content}
    shown = render(describe_approval("write_file", arguments), False)
    assert_safe(shown)
    assert "  path: a\\x1b[2K\\x1b[1G.py" in shown
    assert "  content: 51 lines, 374 bytes" in shown
    assert shown.count("    | line 1") == 20 and "hidden" not in shown
    assert "    ... 31 more lines (v shows them all)" in shown
    whole = render(describe_approval("write_file", arguments, whole=True), False)
    assert_safe(whole)
    assert whole.count("    | line 1") == 50
    assert "    | hidden \\x1b[2K\\x1b[1G\\u202e tail" in whole


def test_approval_of_an_edit_is_a_coloured_unified_diff() -> None:
    arguments = {"path": "b.py", "old": "a = 1\nb = 2\n", "new": f"a = 1\nb = 3 {WIPE}\n"}
    plain_text = render(describe_approval("edit_file", arguments), False)
    assert_safe(plain_text)
    assert plain_text.splitlines()[1:] == [
        "  --- b.py",
        "  +++ b.py",
        "  @@ -1,2 +1,2 @@",
        "   a = 1",
        "  -b = 2",
        "  +b = 3 \\x1b[2K\\x1b[1G",
    ]
    coloured = render(describe_approval("edit_file", arguments), True)
    assert "\x1b[31m  -b = 2" in coloured and "\x1b[32m  +b = 3" in coloured
    removal = render(describe_approval("edit_file", {"path": "c", "old": "x", "new": ""}), False)
    assert removal.splitlines()[-1] == "  -x"


# -- structure: every write to the terminal goes through the safe consoles ---------------


def violations(source: str, name: str) -> list[str]:
    """Ways a CLI module could write to the terminal without `visible`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rich"):
            for alias in node.names:
                if alias.name in ("print", "get_console", "inspect", "print_json"):
                    found.append(f"{name}: rich's global console ({alias.name})")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "sys" and node.attr in ("stdout", "stderr"):
                found.append(f"{name}: sys.{node.attr}")
            if node.value.id in ("typer", "click") and node.attr in ("echo", "secho"):
                found.append(f"{name}: {node.value.id}.{node.attr}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if called == "print" and isinstance(func, ast.Name):
            found.append(f"{name}: builtin print")
        receiver = getattr(func, "value", None)
        if called == "write" and isinstance(receiver, ast.Name) and receiver.id == "os":
            found.append(f"{name}: os.write")
        if called in ("Live", "Status", "Progress") and not any(
            k.arg == "console" for k in node.keywords
        ):
            found.append(f"{name}: {called} on rich's global console")
        if called in ("Console", "VisibleConsole") and name not in ("terminal.py", "state.py"):
            found.append(f"{name}: a console of its own")
        if called == "Console" and name == "state.py":
            found.append(f"{name}: a plain Console")
        if (
            called in ("write", "writelines")
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)  # out.file.write, x.buffer.write
            and name not in ("terminal.py", "plain.py")  # plain.py: its rich-free half
        ):
            found.append(f"{name}: .{called}() on a console's file")
        if called == "input" and not all(isinstance(a, ast.Constant | ast.Name) for a in node.args):
            found.append(f"{name}: input() with a computed prompt")
        if called == "Markdown" and not any(
            k.arg == "hyperlinks" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        ):
            found.append(f"{name}: Markdown with hidden hyperlinks")
    return found


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_cli_writes_only_through_visible_consoles(path: Path) -> None:
    assert violations(path.read_text(encoding="utf-8"), path.name) == []


def test_the_structure_check_catches_violations() -> None:
    bad = (
        "import sys\nsys.stdout.write(x)\nprint(x)\nc = Console()\ntyper.echo(x)\n"
        "out.file.write(x)\ninput(f'{x}')\nMarkdown(x)\nfrom rich import print\n"
        "os.write(1, x)\nLive(x)\n"
    )
    assert len(violations(bad, "bad.py")) == 11


def test_the_shared_consoles_are_visible_consoles() -> None:
    """On a terminal, VisibleConsoles; into a pipe (as here), PlainConsoles, which print
    text exactly as a VisibleConsole would and hand anything else to one."""
    for console in (state.out, state.err):
        assert isinstance(console, VisibleConsole | PlainConsole)
        if isinstance(console, PlainConsole):
            assert isinstance(console.real, VisibleConsole)
    assert state.plain_console_fits("stdout", {})
    assert not state.plain_console_fits("stdout", {"FORCE_COLOR": "1"})


@pytest.mark.parametrize(
    "value",
    [
        EVIL,
        "plain words",
        "a [bold]markup[/bold] look-alike",
        "two\nlines\n",
        "an emoji :smile: code",
        "a\ttab",
        "",
        vtext(EVIL, style="yellow"),
        vtext("styled", style="bold red"),
        Styled("already escaped", "dim"),
    ],
)
def test_the_plain_console_prints_as_a_visible_console_into_a_pipe(value: object) -> None:
    """exec's output into a pipe goes through PlainConsole (no rich): byte for byte what
    the VisibleConsole wrote (and the VisibleConsole itself where only it can say)."""

    def through(make_plain: bool) -> str:
        file = io.StringIO()

        def real() -> VisibleConsole:
            return VisibleConsole(
                file=file, soft_wrap=True, markup=False, emoji=False, highlight=False
            )

        console = PlainConsole("stdout", real) if make_plain else real()
        if make_plain:
            console._stream = type("S", (), {"file": file})()  # type: ignore[assignment]
        console.print(value, style="yellow", highlight=False)
        console.print(value, "and more", highlight=False)
        return file.getvalue()

    assert through(True) == through(False)
    assert_safe(through(True))


def test_write_json_keeps_data_and_escapes() -> None:
    console = VisibleConsole(file=io.StringIO())
    write_json(console, {"title": EVIL})
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert_safe(text)
    assert json.loads(text) == {"title": EVIL}


def test_records_show_each_field_one_line_clean_or_not() -> None:
    """`write_records` scans a record's fields at once: a line is still each field as
    `one_line` shows it (a joiner split across two fields escaped as in each alone)."""
    rows: list[list[object]] = [
        ["a", 1, None, "b c", "中文 🙂"],
        ["clean", EVIL, "x\ty", "two\nlines", "👨\u200d👩"],
        ["👨", "\u200d👩", "\u200d"],
    ]
    console = VisibleConsole(file=io.StringIO())
    write_records(console, rows)
    lines = console.file.getvalue().split("\n")  # type: ignore[attr-defined]
    assert lines == ["a\t1\t\tb c\t中文 🙂", *("\t".join(map(one_line, r)) for r in rows[1:]), ""]
    assert lines[2] == "👨\t\\u200d👩\t\\u200d" and lines[1].count("\t") == 4
    assert_safe("".join(lines))


# -- a hostile session through every command --------------------------------------------


def hostile_document(sid: str) -> dict:
    context = [
        {"role": "system", "content": f"system {EVIL}"},
        {"role": "user", "content": f"user {EVIL}"},
        {
            "role": "assistant",
            "content": f"assistant {EVIL}",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "run_shell",
                        "arguments": json.dumps({"command": EVIL}, ensure_ascii=False),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": f"output {EVIL}"},
        {"role": "assistant", "content": f"done {EVIL}"},
    ]
    return {
        "format": "gitsessions.session/1",
        "id": sid,
        "title": EVIL_TITLE,
        "summary": f"summary {EVIL}",
        "created_at": "2026-11-30T10:00:00Z",
        "updated_at": "2026-11-30T10:05:00Z",
        "workspace": {"path": f"/ws/{EVIL}", "repo_root": None, "branch": None, "head": None},
        "model": f"model {EVIL}",
        "messages": context,
        "transcript": context,
        "plan": [{"step": f"step {EVIL}", "status": "pending"}],
        "pins": [f"pin {EVIL}"],
        "compactions": [],
    }


@pytest.fixture
def hostile(cli, tmp_path: Path) -> str:
    sid = new_id()
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_document(sid), ensure_ascii=False), encoding="utf-8")
    assert_safe(cli("import", str(path)).stdout)
    return sid


@pytest.fixture
def stored(store) -> str:
    """A session written through the store API (no import checks): ESC in its title and
    its commit subject."""
    sid = new_id()
    message = {"role": "user", "content": EVIL}
    head = store.create(new_header(sid, now_iso(), title=EVIL), Change(context=[message]))
    store.commit(head, Change(append=[message]), event="turn", subject=f"turn 1: {EVIL}")
    return sid


def run(cli, *args: str, code: int = 0) -> str:
    result = cli(*args, code=code)
    both = result.stdout + result.stderr
    assert_safe(both)
    return both


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "--json"),
        ("list", "--include-archived"),
        ("info", "{id}"),
        ("info", "{id}", "--json"),
        ("show", "{id}"),
        ("show", "{id}", "--context"),
        ("show", "{id}", "--json"),
        ("log", "{id}"),
        ("log", "{id}", "--json"),
        ("search", "ls -la"),
        ("search", "ls -la", "--json"),
        ("pins", "{id}"),
        ("pins", "{id}", "--json"),
        ("export", "{id}"),
        ("fork", "{id}", "--title", EVIL_TITLE),
        ("archive", "{id}"),
        ("compact", "{id}", "--dry-run", "--clear-only"),
    ],
    ids=lambda args: " ".join("ID" if a == "{id}" else a for a in args if a != EVIL_TITLE),
)
def test_hostile_session_through_every_read_command(cli, hostile, stored, args) -> None:
    for sid in (hostile, stored):
        shown = run(cli, *[a.replace("{id}", sid) for a in args])
        if (sid, args[0]) == (stored, "pins"):
            continue  # it has none
        if "--json" not in args and args[0] in ("list", "info", "show", "log", "pins"):
            assert "\\x1b[2K\\x1b[1Gls -la" in shown or "\\u202e" in shown, shown


def test_json_and_export_keep_the_data(cli, hostile) -> None:
    assert cli.json("info", hostile)["summary"] == f"summary {EVIL}"
    assert cli.json("show", hostile)[1]["content"] == f"user {EVIL}"
    exported = json.loads(cli("export", hostile).stdout)
    assert exported["pins"] == [f"pin {EVIL}"] and exported["title"] == EVIL_TITLE


def test_hostile_session_through_every_changing_command(cli, hostile, stored, tmp_path) -> None:
    assert "\\u202e" in run(cli, "rename", hostile, f"new {EVIL_TITLE}")
    assert "unpinned: pin \\x1b[2K" in run(cli, "unpin", hostile, "1")
    assert "\\x1b[2K" in run(cli, "info", f"abcd{EVIL}", code=2)  # bad id, echoed safely
    run(cli, "archive", stored)
    run(cli, "unarchive", stored)
    run(cli, "delete", stored, code=2)  # refused without --yes: nothing deleted
    run(cli, "delete", stored, "--yes")
    run(cli, "export", hostile, "-o", str(tmp_path / f"out{EVIL}.json"), code=1)
    assert "\\x1b[2K" in run(cli, "import", str(tmp_path / f"missing{EVIL}.json"), code=1)
    run(cli, "delete", hostile, "--yes")


# -- a hostile model ---------------------------------------------------------------------


HOSTILE_COMMAND = "ls -la" + " " * 250 + f"; echo pwned > pwned.txt #{WIPE}ls -la \u202eexe.txt"
SHOWN_COMMAND = visible(HOSTILE_COMMAND)


def script_hostile_model(server) -> None:
    server.models = [f"other {EVIL}"]  # not the model asked for: the chat says so
    server.reply(
        content=f"let me look {EVIL}",
        tool_calls=[{"name": "run_shell", "arguments": {"command": HOSTILE_COMMAND}}],
    )
    server.reply(content=f"all done {EVIL}")
    server.responder = lambda request: f"title {EVIL}"  # the list summary


def test_exec_with_a_hostile_model(server, tmp_path, home) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    script_hostile_model(server)
    common = ["--base-url", server.base_url, "--model", "fake-model", "--workspace", str(ws)]
    first = run_gitsessions("exec", "go", *common)  # run_shell denied without --auto-approve
    assert first.returncode == 3, first.stderr  # and says so
    assert_safe(first.stdout + first.stderr)
    assert "all done \\x1b[2K\\x1b[1Gls -la" in first.stdout
    assert "run_shell: ls -la" in first.stderr and "let me look" not in first.stdout
    assert not (ws / "pwned.txt").exists()
    server.reply(
        content=None,
        tool_calls=[{"name": "run_shell", "arguments": {"command": "printf '\\033[2Kred'"}}],
    )
    server.reply(content=f"second {EVIL}")
    second = run_gitsessions("exec", "again", "--continue", "--auto-approve", "--json", *common)
    assert second.returncode == 0, second.stderr
    assert_safe(second.stdout + second.stderr)
    result = json.loads(second.stdout)
    assert result["reply"] == f"second {EVIL}"  # --json keeps the data exact
    shown = run_gitsessions("show", result["session"])
    assert_safe(shown.stdout + shown.stderr)
    assert "exit code: 0" in shown.stdout and "\\x1b[2Kred" in shown.stdout  # tool output


# the line editor is reading: it turns the terminal's bracketed paste on as it starts
# (its first prompt is written before it is loaded; keys typed then wait for it)
PROMPT = re.compile(r"\x1b\[\?2004h")


def spawn_chat(server, ws: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    """`chat` in a real pty; everything it writes is kept in the returned log."""
    log = io.StringIO()
    command = ["-m", "gitsessions", "chat", "--base-url", server.base_url, "--model"]
    child = pexpect.spawn(
        sys.executable,
        [*command, "fake-model", "--workspace", str(ws), *args],
        env=dict(os.environ, TERM="xterm", COLUMNS="120", LINES="50"),
        encoding="utf-8",
        timeout=30,
        cwd=str(REPO),
        dimensions=(50, 120),
    )
    as_a_terminal(child)
    child.logfile_read = log
    child.expect(PROMPT)
    return child, log


def assert_no_raw_sequences(everything: str) -> None:
    """In a terminal rich styles its own output, so look for the attacker's sequences."""
    for raw in (f"{WIPE}ls -la", "\x1b]0;pwned", "\x1b]8;;http://evil", "\x9b", "\u202e", "\u200b"):
        assert raw not in everything, raw


def test_chat_with_a_hostile_model(server, tmp_path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    script_hostile_model(server)
    child, log = spawn_chat(server, ws)
    child.sendline("list the files")
    child.expect_exact("[y/N] ")
    approval = child.before
    child.sendline("n")
    child.expect(PROMPT)
    child.sendline("\\info")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0
    assert not (ws / "pwned.txt").exists()
    # the approval shows the whole command, escaped, on lines of its own: one over the
    # width wraps under its `$ ` (issue 41), so the tail past the spaces is on screen
    rows = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in approval.splitlines()]
    at = next(i for i, row in enumerate(rows) if "  $ " in row)
    more = [row for row in rows[at + 1 :] if row.startswith("    ")]
    assert all(len(row) <= 120 for row in rows[at : at + 1 + len(more)])
    shown = rows[at].split("  $ ", 1)[1] + "".join(row[4:] for row in more)
    assert shown.rstrip() == SHOWN_COMMAND.rstrip()
    assert "; echo pwned > pwned.txt #\\x1b[2K\\x1b[1Gls -la \\u202eexe.txt" in shown
    everything = log.getvalue()
    assert_no_raw_sequences(everything)
    assert "\\x1b]0;pwned-title" in everything  # the reply, escaped as it streamed
    assert "other \\x1b[2K" in everything  # the server's model list, escaped


def test_chat_on_a_hostile_session(server, tmp_path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    sid = new_id()
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_document(sid), ensure_ascii=False), encoding="utf-8")
    assert run_gitsessions("import", str(path)).returncode == 0
    child, log = spawn_chat(server, ws, "--resume", sid)
    for line in ("\\info", "\\plan", "\\sessions", "\\search ls -la"):
        child.sendline(line)
        child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    everything = log.getvalue()
    assert_no_raw_sequences(everything)
    plain = SGR.sub("", everything)
    assert "recorded in /ws/\\x1b[2K" in plain  # the imported workspace path
    assert "step \\x1b[2K\\x1b[1Gls -la" in plain  # \\plan
    assert "summary \\x1b[2K\\x1b[1Gls -la" in plain  # \\info and \\sessions
    assert "\\u202egnp.exe\\u2066" in plain  # the title, in \\info and \\sessions


def test_a_hostile_error_message_is_one_safe_line(server, tmp_path) -> None:
    server.fail(status=400, message=f"bad request {EVIL}\nsecond line")
    ws = tmp_path / "project"
    ws.mkdir()
    common = ["--base-url", server.base_url, "--model", "fake-model", "--workspace", str(ws)]
    failed = run_gitsessions("exec", "go", *common)
    assert failed.returncode == 1
    assert_safe(failed.stdout + failed.stderr)
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "bad request \\x1b[2K" in errors[0], failed.stderr
