"""The file tools through the dispatcher, on real temp directories: happy paths, edit
failures, paging, binary refusal, listing and search, and workspace confinement
(absolute paths, `..`, symlinked files and directories, writes through symlinks)."""

import os
import threading
from pathlib import Path

import pytest

from gitsessions.services.tools import ToolRegistry, create_registry
from tests.tool_helpers import ENV, call


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("top secret\n")
    return secret


# read_file


def test_read_file_numbers_lines(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    outcome = call(tools, "read_file", path="a.txt")
    assert outcome.ok
    assert outcome.content == "     1\talpha\n     2\tbeta\n"


def test_read_file_offset_and_limit(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "n.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    outcome = call(tools, "read_file", path="n.txt", offset=4, limit=3)
    assert outcome.ok
    assert outcome.content.splitlines()[:3] == [
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
    ]
    assert "line 7" not in outcome.content
    assert "offset=7" in outcome.content
    assert "of 10" in outcome.content


def test_read_file_null_optionals_mean_defaults(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("x\n")
    outcome = call(tools, "read_file", path="a.txt", offset=None, limit=None)
    assert outcome.content == "     1\tx\n"


def test_read_file_offset_past_end(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    outcome = call(tools, "read_file", path="a.txt", offset=5)
    assert not outcome.ok
    assert "past the end" in outcome.content
    assert "2 lines" in outcome.content


def test_read_file_pages_long_files_instead_of_cutting(tmp_path: Path, workspace: Path) -> None:
    registry = create_registry(workspace, ENV, output_limit=2000)
    (workspace / "big.txt").write_text("".join(f"{'x' * 50} {n}\n" for n in range(1, 501)))
    outcome = call(registry, "read_file", path="big.txt")
    assert outcome.ok
    assert len(outcome.content) <= 2000
    assert "characters cut" not in outcome.content
    last_shown = int(outcome.content.splitlines()[-2].split("\t")[0])
    assert f"offset={last_shown + 1}" in outcome.content


def test_read_file_refuses_binary(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "img.bin").write_bytes(b"\x89PNG\0\0\x01\x02")
    outcome = call(tools, "read_file", path="img.bin")
    assert not outcome.ok
    assert "binary" in outcome.content


def test_read_file_missing_and_directory(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "d").mkdir()
    missing = call(tools, "read_file", path="nope.txt")
    directory = call(tools, "read_file", path="d")
    assert not missing.ok and "does not exist" in missing.content
    assert not directory.ok and "list_files" in directory.content


def test_read_file_accepts_absolute_path_inside(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("inside\n")
    outcome = call(tools, "read_file", path=str(workspace / "a.txt"))
    assert outcome.ok
    assert "inside" in outcome.content


# write_file and edit_file


def test_write_file_creates_parents(workspace: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "write_file", path="src/pkg/mod.py", content="x = 1\n")
    assert outcome.ok
    assert (workspace / "src/pkg/mod.py").read_text() == "x = 1\n"
    assert outcome.content.startswith("created src/pkg/mod.py")


def test_write_file_overwrites(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("old\n")
    outcome = call(tools, "write_file", path="a.txt", content="new\n")
    assert outcome.ok
    assert outcome.content.startswith("overwrote a.txt")
    assert (workspace / "a.txt").read_text() == "new\n"


def test_edit_file_replaces_unique_match(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    outcome = call(tools, "edit_file", path="m.py", old="    return 2\n", new="    return 3\n")
    assert outcome.ok
    assert outcome.content.startswith("edited m.py: replaced ") and "at line 5" in outcome.content
    assert (workspace / "m.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"


def test_edit_file_not_found_leaves_file(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "m.py").write_text("a = 1\n")
    outcome = call(tools, "edit_file", path="m.py", old="b = 2", new="b = 3")
    assert not outcome.ok
    assert "not found" in outcome.content
    assert (workspace / "m.py").read_text() == "a = 1\n"


def test_edit_file_ambiguous_names_lines(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "m.py").write_text("x = 0\ny = 1\nx = 0\n")
    outcome = call(tools, "edit_file", path="m.py", old="x = 0", new="x = 9")
    assert not outcome.ok
    assert "found 2 times" in outcome.content
    assert "lines 1, 3" in outcome.content
    assert "unique" in outcome.content
    assert (workspace / "m.py").read_text() == "x = 0\ny = 1\nx = 0\n"


def test_edit_file_counts_overlapping_matches(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("aaa")
    outcome = call(tools, "edit_file", path="a.txt", old="aa", new="b")
    assert not outcome.ok
    assert "found 2 times" in outcome.content


def test_edit_file_matches_crlf_files(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = call(tools, "edit_file", path="w.txt", old="one\ntwo", new="1\n2")
    assert outcome.ok
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_file_missing_file_suggests_write(tools: ToolRegistry) -> None:
    outcome = call(tools, "edit_file", path="nope.py", old="a", new="b")
    assert not outcome.ok
    assert "write_file" in outcome.content


# list_files and search_files


def test_list_files_marks_dirs_and_skips_junk(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("")
    (workspace / "README.md").write_text("")
    for junk in (".git", "node_modules", ".venv", "__pycache__"):
        (workspace / junk).mkdir()
        (workspace / junk / "inner.txt").write_text("")
    outcome = call(tools, "list_files")
    lines = outcome.content.splitlines()
    assert outcome.ok
    assert "src/" in lines
    assert "src/main.py" in lines
    assert "README.md" in lines
    assert ".git/ (skipped)" in lines
    assert "node_modules/ (skipped)" in lines
    assert not any("inner.txt" in line for line in lines)


def test_list_files_subdirectory(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "c.txt").write_text("")
    (workspace / "top.txt").write_text("")
    outcome = call(tools, "list_files", path="a")
    assert outcome.content.splitlines() == ["a/b/", "a/b/c.txt"]


def test_list_files_caps_entries(workspace: Path, tools: ToolRegistry) -> None:
    for n in range(1100):
        (workspace / f"f{n:04}.txt").write_text("")
    outcome = call(tools, "list_files")
    lines = outcome.content.splitlines()
    assert len(lines) == 1001
    assert "listing stopped at 1,000 entries" in lines[-1]


def test_search_files_reports_path_line_text(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "a.py").write_text("import os\ndef main():\n    pass\n")
    (workspace / "b.txt").write_text("nothing here\ndef other\n")
    (workspace / "blob.bin").write_bytes(b"def \0binary")
    outcome = call(tools, "search_files", pattern=r"^def \w+")
    assert outcome.ok
    assert outcome.content.splitlines() == ["b.txt:2: def other", "pkg/a.py:2: def main():"]


def test_search_files_caps_matches(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "many.txt").write_text("hit\n" * 300)
    outcome = call(tools, "search_files", pattern="hit")
    lines = outcome.content.splitlines()
    assert len(lines) == 201
    assert "stopped after 200 matches" in lines[-1]


def test_search_files_no_match(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "a.txt").write_text("abc\n")
    outcome = call(tools, "search_files", pattern="xyz", path="a.txt")
    assert outcome.ok
    assert "no matches" in outcome.content


def test_search_files_invalid_regex(tools: ToolRegistry) -> None:
    outcome = call(tools, "search_files", pattern="foo(")
    assert not outcome.ok
    assert outcome.content.startswith("error: invalid regular expression 'foo('")


# confinement


def test_absolute_path_outside_is_refused(outside: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "read_file", path=str(outside))
    assert not outcome.ok
    assert "outside the workspace" in outcome.content
    assert "top secret" not in outcome.content


def test_dotdot_escape_is_refused(outside: Path, tools: ToolRegistry) -> None:
    outcome = call(tools, "read_file", path="../outside/secret.txt")
    assert not outcome.ok
    assert "outside the workspace" in outcome.content
    assert "top secret" not in outcome.content


def test_dotdot_that_stays_inside_is_fine(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "d").mkdir()
    (workspace / "a.txt").write_text("ok\n")
    assert call(tools, "read_file", path="d/../a.txt").ok


def test_symlinked_file_pointing_outside_is_refused(
    workspace: Path, outside: Path, tools: ToolRegistry
) -> None:
    (workspace / "link.txt").symlink_to(outside)
    outcome = call(tools, "read_file", path="link.txt")
    assert not outcome.ok
    assert "symlink" in outcome.content
    assert "top secret" not in outcome.content


def test_symlinked_directory_pointing_outside_is_refused(
    workspace: Path, outside: Path, tools: ToolRegistry
) -> None:
    (workspace / "linkdir").symlink_to(outside.parent)
    for name, arguments in (
        ("read_file", {"path": "linkdir/secret.txt"}),
        ("list_files", {"path": "linkdir"}),
        ("search_files", {"pattern": "secret", "path": "linkdir"}),
    ):
        outcome = call(tools, name, **arguments)
        assert not outcome.ok, name
        assert "outside the workspace" in outcome.content, name
        assert "top secret" not in outcome.content, name


def test_walks_do_not_follow_symlinks_outside(
    workspace: Path, outside: Path, tools: ToolRegistry
) -> None:
    (workspace / "linkdir").symlink_to(outside.parent)
    (workspace / "link.txt").symlink_to(outside)
    listing = call(tools, "list_files")
    search = call(tools, "search_files", pattern="secret")
    assert "linkdir@ -> " in listing.content
    assert not any(line.startswith("linkdir/") for line in listing.content.splitlines())
    assert "no matches" in search.content


def test_write_through_symlinked_file_outside_is_refused(
    workspace: Path, outside: Path, tools: ToolRegistry
) -> None:
    (workspace / "link.txt").symlink_to(outside)
    write = call(tools, "write_file", path="link.txt", content="pwned\n")
    edit = call(tools, "edit_file", path="link.txt", old="top", new="pwned")
    assert not write.ok and "outside the workspace" in write.content
    assert not edit.ok and "outside the workspace" in edit.content
    assert outside.read_text() == "top secret\n"


def test_write_through_dangling_symlink_outside_is_refused(
    tmp_path: Path, workspace: Path, tools: ToolRegistry
) -> None:
    target = tmp_path / "created-outside.txt"
    (workspace / "dangling").symlink_to(target)
    outcome = call(tools, "write_file", path="dangling", content="x")
    assert not outcome.ok
    assert not target.exists()


def test_write_into_symlinked_directory_outside_is_refused(
    workspace: Path, outside: Path, tools: ToolRegistry
) -> None:
    (workspace / "linkdir").symlink_to(outside.parent)
    new = call(tools, "write_file", path="linkdir/new.txt", content="x")
    deep = call(tools, "write_file", path="linkdir/a/b/new.txt", content="x")
    over = call(tools, "write_file", path="linkdir/secret.txt", content="pwned")
    assert not new.ok and not deep.ok and not over.ok
    assert sorted(os.listdir(outside.parent)) == ["secret.txt"]
    assert outside.read_text() == "top secret\n"


def test_write_outside_by_path_is_refused(tmp_path: Path, tools: ToolRegistry) -> None:
    absolute = call(tools, "write_file", path=str(tmp_path / "abs.txt"), content="x")
    relative = call(tools, "write_file", path="../rel.txt", content="x")
    assert not absolute.ok and not relative.ok
    assert not (tmp_path / "abs.txt").exists()
    assert not (tmp_path / "rel.txt").exists()


def test_symlink_inside_the_workspace_is_fine(workspace: Path, tools: ToolRegistry) -> None:
    (workspace / "real.txt").write_text("real\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert "real" in call(tools, "read_file", path="alias.txt").content
    assert call(tools, "write_file", path="alias.txt", content="changed\n").ok
    assert (workspace / "real.txt").read_text() == "changed\n"


def test_nul_byte_in_path_is_an_error(tools: ToolRegistry) -> None:
    outcome = call(tools, "read_file", path="a\x00b")
    assert not outcome.ok
    assert "NUL" in outcome.content


def test_empty_path_is_an_error(tools: ToolRegistry) -> None:
    outcome = call(tools, "write_file", path="", content="x")
    assert not outcome.ok
    assert "empty" in outcome.content


def test_fifo_is_refused_without_blocking(workspace: Path, tools: ToolRegistry) -> None:
    os.mkfifo(workspace / "pipe")
    read = call(tools, "read_file", path="pipe")
    write = call(tools, "write_file", path="pipe", content="x")
    assert not read.ok and "not a regular file" in read.content
    assert not write.ok and "not a regular file" in write.content


def test_search_files_of_a_fifo_is_one_error_never_waited_on(
    workspace: Path, tools: ToolRegistry
) -> None:
    """Issue 42, item 8: search_files given a FIFO as its path opened it and waited for a
    writer for ever (the call runs in a thread here, so a regression fails at the join)."""
    os.mkfifo(workspace / "pipe")
    (workspace / "a.txt").write_text("needle\n")
    outcomes = []

    def search(path: str) -> None:
        outcomes.append(call(tools, "search_files", pattern="needle", path=path))

    for path in ("pipe", "."):
        worker = threading.Thread(target=search, args=(path,), daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), f"search_files of {path!r} is still waiting"
    named, walked = outcomes
    assert not named.ok and named.content == (
        "error: 'pipe' is not a regular file (a device, socket or pipe)"
    )
    assert walked.ok and walked.content == "a.txt:1: needle\n"  # the walk passes it by
