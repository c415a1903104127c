"""A pull reads what it brings once (issue 46): the first prompts of the listing cache
and search's index come from one reading of each new session's transcript trees and
chunks (`arrivals.Reads`), not from two walkers each reading them."""

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from gitsessions.store import transport
from tests.conftest import Cli
from tests.test_pull_search import arriving_sessions
from tests.test_sync import results, summary


def test_a_pull_reads_each_tree_and_chunk_of_what_it_brings_once(
    cli: Cli, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arriving = arriving_sessions(cli, tmp_path)
    asked: Counter[bytes] = Counter()
    real: Callable[..., list[bytes | None]] = transport.contents_of

    def counted(
        git: transport.Git, names: list[bytes], env: transport.Env = None
    ) -> list[bytes | None]:
        asked.update(names)  # what the pull's readers ask stock git for, then asked of it
        return real(git, names, env)

    monkeypatch.setattr(transport, "contents_of", counted)

    assert results(summary(cli, home, "pull")) == dict.fromkeys(arriving, "created")

    assert asked and max(asked.values()) == 1, [n for n, c in asked.items() if c > 1]
    listed = {row["id"]: row for row in json.loads(cli("list", "--json").stdout)}
    assert listed[arriving[1]]["first_prompt"] == "t0 question 0"
    assert listed[arriving[-1]]["first_prompt"] == "long question 0"
    assert listed[arriving[0]]["first_prompt"] == ""
    hits = json.loads(cli("search", "long question 19", "--json").stdout)
    assert [h["session"] for h in hits] == [arriving[-1]]
