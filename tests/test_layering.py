"""The layering of docs/architecture.md, checked on the source: each module imports only
from its own layer or below, third-party libraries stay in their modules, and only the
CLI reads the environment or prints. The layers, bottom first: values, store, services,
agent, protocols (the ACP and MCP server adapters: never typer or rich), cli; the `acp`
and `mcp` SDKs stay in their adapters (and the MCP client in services/tools/).

Every import form counts: `import a.b`, `from a.b import c`, `from a import b` (b may be
a module), relative imports (`from ..cli import app`, `from .. import cli`) resolved
against the importing module, and `importlib.import_module("a.b")` / `__import__` with a
literal name. An import of a gitsessions module that does not exist is a violation too,
and `test_the_checker_catches_planted_violations` proves each rule can fail.

Inside `services/`, the packages stand on floors (`SERVICE_FLOORS`, bottom first): a
module imports only its own package and packages on lower floors (any import, in a
function body too), so the arrows of docs/architecture.md's package map run down only.
Every module of `services/` is in a package on a floor, and a package's `__init__.py`
imports nothing (`tools/` aside: its `__init__` is its public face).

No gitsessions modules import each other in a circle through any of their imports:
module-level ones, `if TYPE_CHECKING:` blocks, and late ones, in a function body (a late
import hides a circle from the interpreter, not from a reader); the cycle finder is shown
planted circles of each kind."""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitsessions"
LAYERS = ["values", "store", "services", "agent", "protocols", "cli"]
# services/ packages, bottom floor first: a package imports only its own and lower floors
SERVICE_FLOORS: list[set[str]] = [
    {"settings", "tools"},
    {"hooks", "model"},
    {"sessions"},
    {"code", "compaction", "imports"},
    {"sync"},
]
INIT_WITH_IMPORTS = {"tools"}  # a package whose __init__ is its public API
# third-party module -> where it may be imported (path prefixes inside gitsessions/)
CONFINED = {
    "typer": ("cli/",),
    "rich": ("cli/",),
    "openai": ("services/model/model.py",),
    "dulwich": ("store/",),
    "acp": ("protocols/acp/",),
    "mcp": (
        "protocols/mcp_server/",
        "services/tools/mcp_hub.py",
        "services/tools/mcp_stdio.py",
        "services/tools/mcp_http.py",
    ),
    "mcp_types": ("protocols/mcp_server/",),
}
ENV_READERS = ("cli/",)
PRINTERS = ("cli/",)
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(relative: str) -> int | None:
    top = relative.split("/")[0]
    return LAYERS.index(top) if top in LAYERS else None


def floor_of(relative: str) -> tuple[str, int] | None:
    """`services/code/rewind.py` (or `services/code/`) -> ("code", 3); None outside a
    services package (`services/x.py`: test_every_service_module_is_on_a_floor)."""
    parts = relative.split("/")
    if len(parts) < 3 or parts[0] != "services":
        return None
    for n, floor in enumerate(SERVICE_FLOORS):
        if parts[1] in floor:
            return parts[1], n
    return parts[1], -1  # on no floor: below nothing


def module_name(relative: str) -> str:
    """`agent/loop.py` -> `gitsessions.agent.loop`; a package's `__init__.py` -> the package."""
    parts = ["gitsessions", *relative.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def exists(name: str) -> bool:
    """Whether `name` (dotted, starting with `gitsessions`) is a module or package."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(relative: str, tree: ast.AST) -> Iterator[tuple[str, bool]]:
    """(absolute dotted name, certain) for every import in `tree`. `certain` is False for
    the `b` of `from a import b`, which may be a module or just a name defined in `a`."""
    package = module_name(relative).split(".")
    if not relative.endswith("__init__.py"):
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, True
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            yield source, True
            for alias in node.names:
                if alias.name != "*":
                    yield f"{source}.{alias.name}", False
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
            )
        ):
            yield node.args[0].value, True


def violations(relative: str, source: str) -> list[str]:
    """Every layering rule `source`, as the module at `relative`, breaks."""
    tree = ast.parse(source)
    own = layer_of(relative)
    found: list[str] = []
    for name, certain in imports(relative, tree):
        parts = name.split(".")
        if parts[0] == "gitsessions" and len(parts) > 1:
            if not exists(name):
                if certain:
                    found.append(f"{relative} imports {name}, which does not exist")
                continue
            target = layer_of(parts[1])
            if own is not None and target is not None and target > own:
                found.append(f"{relative} imports {name} (a higher layer)")
            package = floor_of(relative)
            imported = floor_of("/".join([*parts[1:3], ""])) if parts[1] == "services" else None
            if package and imported and imported[0] != package[0] and imported[1] >= package[1]:
                found.append(
                    f"{relative} imports {name}: services/{imported[0]}/ is not below"
                    f" services/{package[0]}/"
                )
        if parts[0] in CONFINED and certain and not relative.startswith(CONFINED[parts[0]]):
            found.append(f"{relative} imports {name}; only {CONFINED[parts[0]]} may")
    if not relative.startswith(ENV_READERS):
        os_aliases = {"os"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                os_aliases |= {a.asname or a.name for a in node.names if a.name == "os"}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ENV_NAMES
                and isinstance(node.value, ast.Name)
                and node.value.id in os_aliases
            ):
                found.append(f"{relative} reads os.{node.attr}; take the value as a parameter")
            if isinstance(node, ast.ImportFrom) and node.module == "os" and not node.level:
                for alias in node.names:
                    if alias.name in ENV_NAMES or alias.name == "*":
                        found.append(f"{relative} imports os.{alias.name}")
    if not relative.startswith(PRINTERS):
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            ):
                found.append(f"{relative} prints; only the CLI talks to the user")
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_respects_layers(path: Path) -> None:
    relative = path.relative_to(PACKAGE).as_posix()
    assert violations(relative, path.read_text(encoding="utf-8")) == []


def test_confined_places_exist() -> None:
    """An allowance for a module that does not exist is a hole waiting for one to appear."""
    for places in CONFINED.values():
        for place in places:
            assert (PACKAGE / place).exists(), place
    assert all((PACKAGE / place).is_dir() for place in ENV_READERS + PRINTERS)


PLANTED = [
    # (module path, source): each must be reported
    ("agent/x.py", "from gitsessions import cli\n"),
    ("agent/x.py", "from gitsessions import values, cli as c\n"),
    ("agent/x.py", "from ..cli import app\n"),
    ("agent/x.py", "from ..cli.app import app\n"),
    ("store/x.py", "from .. import services\n"),
    ("services/tools/x.py", "from ... import agent\n"),
    ("services/tools/x.py", "from ...agent import loop\n"),
    ("values/x.py", "import gitsessions.store.sessions\n"),
    ("values/x.py", "import gitsessions.cli.app as app\n"),
    ("store/x.py", "from gitsessions.services.model.model import ModelClient\n"),
    ("store/x.py", "def f():\n    from gitsessions.agent.loop import Agent\n"),
    ("store/__init__.py", "from ..services import model\n"),
    ("agent/x.py", "import importlib\nimportlib.import_module('gitsessions.cli.app')\n"),
    ("agent/x.py", "__import__('gitsessions.cli')\n"),
    ("store/x.py", "import gitsessions.nowhere\n"),
    ("store/x.py", "from gitsessions.store.nowhere import thing\n"),
    ("store/x.py", "from .nowhere import thing\n"),
    ("cli/x.py", "from ..nowhere import thing\n"),
    ("services/x.py", "import dulwich\n"),
    ("agent/x.py", "from dulwich.repo import Repo\n"),
    ("cli/x.py", "import openai\n"),
    ("services/compaction/compactor.py", "from openai import OpenAI\n"),
    ("services/x.py", "import typer\n"),
    ("agent/x.py", "from rich.console import Console\n"),
    ("store/x.py", "import importlib\nimportlib.import_module('rich')\n"),
    ("services/x.py", "import os\nx = os.environ['A']\n"),
    ("services/x.py", "import os as o\nx = o.getenv('A')\n"),
    ("store/x.py", "from os import environ\n"),
    ("store/x.py", "from os import getenv as g\n"),
    ("agent/x.py", "print('hello')\n"),
    # protocols/: below cli/, above agent/, no typer, rich, environment or print
    ("protocols/acp/x.py", "from gitsessions.cli.state import err\n"),
    ("protocols/mcp_server/x.py", "def f():\n    from gitsessions.cli import listing\n"),
    ("agent/x.py", "from gitsessions.protocols.acp.agent import GitsessionsAcp\n"),
    ("services/sessions/x.py", "from ...protocols import mcp_server\n"),
    ("protocols/acp/x.py", "import typer\n"),
    ("protocols/mcp_server/x.py", "from rich.text import Text\n"),
    ("protocols/acp/x.py", "import os\nx = os.environ.get('A')\n"),
    ("protocols/x.py", "print('hello')\n"),
    ("cli/x.py", "from acp import run_agent\n"),
    ("agent/x.py", "from mcp.server.lowlevel import Server\n"),
    # services/ packages: only lower floors
    ("services/sessions/x.py", "from gitsessions.services.sync import pull\n"),
    ("services/sessions/x.py", "def f():\n    from gitsessions.services.code import rewind\n"),
    ("services/settings/x.py", "from ..hooks.audit import audit\n"),
    ("services/model/x.py", "from gitsessions.services import hooks\n"),
    ("services/code/x.py", "import gitsessions.services.compaction.compactor\n"),
    ("services/sync/x.py", "from gitsessions.services.nowhere import x\n"),
    ("services/elsewhere/x.py", "from gitsessions.services.settings import config\n"),
]


@pytest.mark.parametrize(("relative", "source"), PLANTED)
def test_the_checker_catches_planted_violations(relative: str, source: str) -> None:
    assert violations(relative, source), f"not caught in {relative}: {source!r}"


def test_the_checker_passes_allowed_imports() -> None:
    allowed = (
        "import json\nimport os\nfrom pathlib import Path\n"
        "import gitsessions\nfrom gitsessions import values\n"
        "from gitsessions.values.errors import InvalidInput\n"
        "from gitsessions.store import sessions\n"
        "from ..values import canonical\nfrom .sessions import SessionStore\n"
        "from . import layout\nimport dulwich.repo\nfrom dulwich.objects import Blob\n"
        "x = os.path.join('a', 'b')\n"
    )
    assert violations("store/x.py", allowed) == []
    cli = "import os\nimport typer\nfrom rich.console import Console\nfrom . import app\n"
    assert violations("cli/x.py", cli + "print(os.environ.get('A'))\n") == []
    assert violations("services/model/model.py", "import openai\nfrom openai import OpenAI\n") == []
    downward = (
        "from gitsessions.services.code import code_sync\nfrom ..sessions.writer import fork\n"
        "from . import push_scan\nfrom gitsessions.services.settings.config import x\n"
        "def f():\n    from gitsessions.services.hooks import hooks\n"
    )
    assert violations("services/sync/x.py", downward) == []


def test_every_service_module_is_on_a_floor() -> None:
    """No module directly in services/ but its `__init__.py`, every package on a floor
    (and every floor's package there), and a package's `__init__.py` imports nothing."""
    services = PACKAGE / "services"
    assert sorted(p.name for p in services.glob("*.py")) == ["__init__.py"]
    packages = {p.parent.name for p in services.glob("*/__init__.py")}
    assert packages == set().union(*SERVICE_FLOORS)
    for package in packages - INIT_WITH_IMPORTS:
        tree = ast.parse((services / package / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"services/{package}/__init__.py says what it owns"
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], (
            f"services/{package}/__init__.py imports: every import of the package pays for it"
        )


def test_every_package_says_what_it_owns() -> None:
    """Each layer's and each protocol adapter's `__init__.py` has a docstring saying what
    it owns; an adapter's imports nothing (the CLI's command imports only what it runs)."""
    for layer in LAYERS:
        tree = ast.parse((PACKAGE / layer / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{layer}/__init__.py says what it owns"
    protocols = PACKAGE / "protocols"
    adapters = sorted(p.parent.name for p in protocols.glob("*/__init__.py"))
    assert adapters == ["acp", "mcp_server", "web"]
    for init in [protocols / "__init__.py", *(protocols / a / "__init__.py" for a in adapters)]:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert "Never" in (ast.get_docstring(tree) or ""), f"{init} says what it must never do"
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def imported_modules(relative: str, source: str) -> set[str]:
    """The gitsessions modules `source` (the module at `relative`) imports, wherever:
    at module level, under `if TYPE_CHECKING:`, in a class body, and late, in a function
    body (a late import still makes the modules depend on each other), by any form
    `imports` knows."""
    own = module_name(relative)
    return {
        name
        for name, _certain in imports(relative, ast.parse(source))
        if name.startswith("gitsessions.") and name != own and exists(name)
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {
        module_name(rel): imported_modules(rel, path.read_text(encoding="utf-8"))
        for path in modules()
        for rel in [path.relative_to(PACKAGE).as_posix()]
    }
    assert circles(graph) == []


def test_the_circle_finder_catches_planted_circles() -> None:
    chat = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import state\n"
    graph = {
        "gitsessions.cli.app": imported_modules("cli/app.py", "from . import lazy\n"),
        "gitsessions.cli.lazy": imported_modules("cli/lazy.py", "import gitsessions.cli.entry\n"),
        "gitsessions.cli.entry": imported_modules(
            "cli/entry.py",
            "try:\n    from gitsessions.cli.app import main\nexcept Exception:\n    pass\n",
        ),
        "gitsessions.cli.chat": imported_modules("cli/chat.py", chat),
        "gitsessions.cli.state": imported_modules(
            "cli/state.py", "class A:\n    from gitsessions.cli.chat import x\n"
        ),
        # late imports: in a function (under an `if` there), by `importlib` too
        "gitsessions.cli.chat_input": imported_modules(
            "cli/chat_input.py",
            "def read():\n    if x:\n        from gitsessions.cli import chat_editor as e\n",
        ),
        "gitsessions.cli.chat_editor": imported_modules(
            "cli/chat_editor.py", "from gitsessions.cli.chat_input import PROMPT\n"
        ),
        "gitsessions.cli.plain": imported_modules(
            "cli/plain.py",
            "import importlib\ndef f():\n    importlib.import_module('gitsessions.cli.picker')\n",
        ),
        "gitsessions.cli.picker": imported_modules("cli/picker.py", "from . import plain\n"),
    }
    assert circles(graph) == [
        ["gitsessions.cli.app", "gitsessions.cli.entry", "gitsessions.cli.lazy"],
        ["gitsessions.cli.chat", "gitsessions.cli.state"],
        ["gitsessions.cli.chat_editor", "gitsessions.cli.chat_input"],
        ["gitsessions.cli.picker", "gitsessions.cli.plain"],
    ]


MAX_MODULE_LINES = 500  # issue 33's goals: small modules with one job each
MAX_FUNCTION_LINES = 80  # from `def` to its last line, docstring included


def oversized(relative: str, source: str) -> list[str]:
    """What in a module is over the limits: the module, then each function."""
    found = []
    lines = source.count("\n") + (not source.endswith("\n") and bool(source))
    if lines > MAX_MODULE_LINES:
        found.append(f"{relative}: {lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{relative}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_over_500_lines_nor_function_over_80() -> None:
    found = [
        problem
        for path in modules()
        for problem in oversized(
            path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8")
        )
    ]
    assert found == []


def test_the_size_check_catches_a_long_module_and_function() -> None:
    body = "".join(f"    x = {n}\n" for n in range(80))
    source = f"def long():\n{body}\n" + "y = 1\n" * 420
    assert oversized("m.py", source) == ["m.py: 502 lines", "m.py:1 long: 81 lines"]
    assert oversized("m.py", "def short():\n    return 1\n") == []
