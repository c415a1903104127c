"""`show` and `log` stream their output, and page it through $PAGER on a terminal."""

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from gitsessions.store.background import wait_for_maintenance
from gitsessions.store.sessions import Change, Head, SessionStore
from tests.conftest import REPO, add_session, add_turns, run_gitsessions

EVIL = "\x1b[2J\x1b]0;title\x07"


@pytest.fixture(scope="module")
def long_homes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], tuple[Path, Head]]:
    """A home holding one long session of `turns` turns (committed turn by turn), made
    once for the module: each test works on a copy (`_long`). One of 600 turns is a copy
    of the one of 300 with 300 more (each commit costs more as the context grows)."""
    made: dict[int, tuple[Path, Head]] = {}

    def home_of(turns: int) -> tuple[Path, Head]:
        if turns not in made:
            template = tmp_path_factory.mktemp(f"long{turns}") / "gshome"
            shorter = turns // 2 if turns >= 600 else 0
            if shorter:
                shutil.copytree(home_of(shorter)[0], template,
                                ignore=shutil.ignore_patterns("*.lock"))  # fmt: skip
            store = SessionStore(template)
            try:
                if shorter:
                    head = store.head(made[shorter][1].id)
                    head = add_turns(store, head, store.read(head, "context"), shorter, turns)
                else:
                    head = add_session(store, turns=turns, title="long")
            finally:
                store.close()
            wait_for_maintenance(template / "store.git")
            made[turns] = (template, head)
        return made[turns]

    return home_of


def _long(long_homes: Callable[[int], tuple[Path, Head]], home: Path, turns: int = 600) -> Head:
    """The test's home a copy of the long session's."""
    template, head = long_homes(turns)
    shutil.copytree(template, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.lock"))
    return head


def test_show_on_a_terminal_goes_through_the_pager_with_colour(store, make_session, tmp_path):
    head = make_session(turns=3, title="paged")
    store.close()
    paged = tmp_path / "paged.txt"
    env = dict(os.environ, PAGER=f"cat > {paged}", TERM="xterm")
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable, ["-m", "gitsessions", "show", head.id], env=env, cwd=str(REPO),
        encoding="utf-8", timeout=60,
    )  # fmt: skip
    child.expect(pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0
    text = paged.read_text()
    assert "question 2" in text and "answer 2" in text
    assert "\x1b[1;32m[1] user\x1b[0m" in text  # the role in colour, for `less -R`
    assert "question" not in child.before  # everything went to the pager


def test_no_pager_and_pager_cat_write_to_the_terminal(store, make_session, tmp_path):
    head = make_session(turns=2)
    store.close()
    paged = tmp_path / "paged.txt"
    for args, pager in [(["--no-pager"], f"cat > {paged}"), ([], "cat")]:
        env = dict(os.environ, PAGER=pager, TERM="xterm")
        child = pexpect.spawn(
            sys.executable, ["-m", "gitsessions", "log", head.id, *args], env=env,
            cwd=str(REPO), encoding="utf-8", timeout=60,
        )  # fmt: skip
        child.expect(pexpect.EOF)
        assert "turn 2: question 1" in child.before
    assert not paged.exists()


def test_piped_show_is_plain_streamed_and_stops_quietly_when_the_reader_does(long_homes, home):
    head = _long(long_homes, home)
    store = SessionStore(home)
    store.commit(
        head,
        Change(append=[{"role": "assistant", "content": f"bad {EVIL} text"}]),
        event="turn",
        subject="turn: evil",
    )
    store.close()
    full = run_gitsessions("show", head.id).stdout
    assert "\x1b" not in full and "\\x1b[2J" in full  # escaped, never raw
    assert full.count("\n[") + 1 == 1 + 2 * 600 + 1  # every message, one label each
    shown = subprocess.run(
        f"{sys.executable} -m gitsessions show {head.id} | head -n 3",
        shell=True, capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert shown.stdout.splitlines()[0] == "[0] system"
    assert "Traceback" not in shown.stderr and "Broken pipe" not in shown.stderr


def test_streamed_json_is_the_same_document(long_homes, home):
    head = _long(long_homes, home, turns=300)
    text = run_gitsessions("show", head.id, "--json").stdout
    messages = json.loads(text)
    assert len(messages) == 601 and messages[-1]["content"].startswith("answer 299")
    assert text == json.dumps(messages, indent=2, ensure_ascii=False) + "\n"
    empty = run_gitsessions("show", head.id, "--context", "--json").stdout
    assert json.loads(empty)[0]["role"] == "system"


def test_log_piped_is_tab_separated_with_stable_columns(store, make_session):
    head = make_session(turns=3)
    store.close()
    lines = run_gitsessions("log", head.id).stdout.splitlines()
    assert [line.split("\t")[2] for line in lines] == ["turn", "turn", "turn", "create"]
    assert all(len(line.split("\t")) == 6 for line in lines)


def test_export_into_a_reader_that_stops_ends_quietly(long_homes, home):
    head = _long(long_homes, home, turns=300)
    shown = subprocess.run(
        f"{sys.executable} -m gitsessions export {head.id} | head -n 1; "
        'echo "status=${PIPESTATUS[0]}"',
        shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=REPO,
        timeout=120,
    )  # fmt: skip
    first, status = shown.stdout.splitlines()
    assert first.startswith("{") and status == "status=0"
    assert "error" not in shown.stderr and "Traceback" not in shown.stderr
