"""Issue 41, item 8: at 80 columns an approval's diff and command lines wrapped to column
0 and lost their `+`/`-` gutter, and the status line took two lines. Run in a real pty
of 80 columns, the screen read back with pyte."""

import io
from pathlib import Path

import pyte
import pytest

from tests.test_chat import PROMPT, leave, spawn

COLUMNS = 80


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def screen(log: io.StringIO) -> list[str]:
    """The terminal's rows as drawn, each padded to the width (a row cut at a space
    keeps it)."""
    shown = pyte.Screen(COLUMNS, 50)
    pyte.Stream(shown).feed(log.getvalue())
    return list(shown.display)


def block(lines: list[str], first: str) -> list[str]:
    """The question's rows: from the line starting `first` to the choices line."""
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("y: yes"))
    return lines[start + 1 : end]


def test_an_approval_wraps_under_its_gutter_and_the_status_line_fits(server, ws):
    old = "short line\n" + "keep = 1\n"
    new_line = "value = '" + "".join(f"{n:02d}" for n in range(60)) + "'"
    (ws / "app.py").write_text(old)
    command = "echo " + " ".join(f"word{n:02d}" for n in range(25))

    def call(name: str, **arguments: str) -> None:
        server.reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])

    call("write_file", path="app.py", content=new_line + "\nkeep = 1\n")
    call("run_shell", command=command)
    server.reply(content="done")
    child = spawn(server.base_url, ws, "--max-context-tokens", "1000000", columns=COLUMNS)
    log = io.StringIO()
    child.logfile_read = log
    child.sendline("change it")
    child.expect_exact("[y/N/a] ")
    diff = block(screen(log), "allow write_file?")
    child.sendline("y")
    child.expect_exact("[y/N/a] ")
    lines = screen(log)
    shell = block(lines[lines.index(diff[-1]) + 1 :], "allow run_shell?")
    child.sendline("n")
    child.expect(PROMPT)
    lines = screen(log)
    leave(child)

    assert all(row.startswith("    ") for row in diff[1:]), diff  # none at column 0
    added = [row for row in diff if row.lstrip(" 0123456789").startswith("+ ")]
    assert len(added) > 1, diff  # the long line wrapped, each row under its `+`
    assert "".join(row.split("+ ", 1)[1] for row in added).rstrip() == new_line
    assert all(row.startswith("      + ") for row in added[1:]), added  # the number blank
    assert shell[0].startswith("  $ echo ") and all(r.startswith("    ") for r in shell[1:])
    assert "".join(row[4:] for row in shell).rstrip() == command  # every character kept

    status = [i for i, line in enumerate(lines) if line.startswith("turn 1 ·")]
    assert len(status) == 1, lines
    row = lines[status[0]]
    assert "tokens (0%)" in row and "turn $0.0000 · session $0.0000" in row, row
    assert lines[status[0] + 1].startswith(">"), lines[status[0] : status[0] + 2]


def test_a_wrapped_row_never_splits_a_wide_character_nor_passes_the_width():
    from rich.cells import cell_len
    from rich.text import Text

    from gitsessions.cli.hanging import hanging

    line = "    12 + " + "表" * 50 + "x"
    rows = hanging(Text(line), 40).plain.split("\n")
    assert all(cell_len(row) <= 40 for row in rows), rows
    assert rows[0].startswith("    12 + ") and all(r.startswith("       + ") for r in rows[1:])
    assert "".join(row[9:] for row in rows) == line[9:]
    assert hanging(Text("short"), 40).plain == "short"
