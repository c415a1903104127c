"""The layering of docs/architecture.md, checked on the source: each module imports only
from its own layer or below, third-party libraries stay in their modules, and only the
CLI reads the environment."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitsessions"
LAYERS = ["values", "store", "services", "agent", "cli"]
# third-party module -> where it may be imported (path prefixes inside gitsessions/)
CONFINED = {
    "typer": ("cli/",),
    "rich": ("cli/",),
    "openai": ("services/model.py",),
    "dulwich": ("store/", "services/worktree", "services/sync"),
}
ENV_READERS = ("cli/",)


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(relative: str) -> int | None:
    top = relative.split("/")[0]
    return LAYERS.index(top) if top in LAYERS else None


def imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_respects_layers(path: Path) -> None:
    relative = str(path.relative_to(PACKAGE))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = layer_of(relative)
    for name in imported(tree):
        parts = name.split(".")
        if parts[0] == "gitsessions" and len(parts) > 1 and own is not None:
            target = layer_of(parts[1])
            assert target is None or target <= own, f"{relative} imports {name} (a higher layer)"
        if parts[0] in CONFINED:
            assert relative.startswith(CONFINED[parts[0]]), f"{relative} imports {parts[0]}"
    if not relative.startswith(ENV_READERS):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                assert not (isinstance(node.value, ast.Name) and node.value.id == "os"), (
                    f"{relative} reads os.{node.attr}; take the value as a parameter"
                )
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                assert not {a.name for a in node.names} & {"environ", "getenv"}, relative
        prints = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        assert not prints, f"{relative} prints; only the CLI talks to the user"


def test_the_checker_catches_violations(tmp_path: Path) -> None:
    bad = ast.parse("import os\nfrom gitsessions.cli import app\nx = os.environ['A']\n")
    assert "gitsessions.cli.app" in imported(bad) or "gitsessions.cli" in imported(bad)
    assert layer_of("store/x.py") < layer_of("cli/app.py")  # type: ignore[operator]
