"""Issue 43: the type hints are checked, by mypy with the configuration in pyproject.toml
(`[tool.mypy]`: strict, over gitsessions/, no module left out), in process here so that
`uv run pytest` fails on a type error as CI's `uv run mypy` does. With mypy's cache
(.mypy_cache/, which CI's run fills first) this takes seconds; the first run about a
minute. And the check is strict enough to catch what it is for: a wrong argument type,
a missing return, a function without hints."""

from pathlib import Path

import pytest
from mypy import api

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "pyproject.toml"


def test_the_package_type_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # `files` and the cache are read from where pyproject.toml is
    out, err, status = api.run(["--config-file", str(CONFIG)])
    assert status == 0, out + err
    assert "no issues found" in out


def test_the_configuration_catches_planted_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def name(n: int) -> str:\n"
        "    if n:\n"
        "        return 'one'\n"
        "\n"
        "\n"
        "def untyped(x):\n"
        "    return x\n"
        "\n"
        "\n"
        "name('two')\n"
    )
    monkeypatch.chdir(REPO)
    out, _err, status = api.run(
        ["--config-file", str(CONFIG), "--cache-dir", str(tmp_path / "cache"), str(planted)]
    )
    assert status == 1
    for code in ("[return]", "[arg-type]", "[no-untyped-def]"):
        assert code in out, out
