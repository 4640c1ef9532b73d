"""The import graph of src/concerto keeps its layers: no import runs back up, no surface or pack
reaches into a sibling, and nothing in src/ uses the test doubles of `concerto.testing`.

The graph is read from the source with `ast` (every import, those deferred into a function
included), so a rule holds whatever a test happens to import. The layers, as
docs/architecture.md draws them:

- the store (`concerto.store`), below the engine: it imports only the settings and the
  redaction (`BELOW_THE_STORE`), nothing of the engine, the surfaces or the packs (the engine
  imports it, not the reverse; with no store package the rule holds with nothing to check);
- the engine (`agents`, `contracts`, `orchestrator`, `cluster`) and the core beside it
  (`settings`, `resources`, `llm`, `nlp`, `redact`, `log_redaction`, `store`): they name no
  surface and no pack;
- the surfaces (`server`, `protocols`) and the packs (`packs/<name>`, and `data` and `mcp`,
  which are packs and also layers the packs build on): each imports the core, the shared
  layers where it may, and of a sibling only what that sibling publishes (`PUBLIC`).

Each message names the importing module and the line of the import. The last tests keep the
layout of tests/ and benchmarks/: no test module imports a conftest, nothing edits `sys.path`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

ENGINE = ("agents", "contracts", "orchestrator", "cluster")
CORE = (*ENGINE, "settings", "resources", "llm", "nlp", "redact", "log_redaction", "store")
BELOW_THE_STORE = ("settings", "redact", "log_redaction")
SURFACES_AND_PACKS = ("server", "protocols", "data", "mcp", "packs")
# Packs that are also layers other packs and the protocols build on (decisions 13 and 15).
SHARED_LAYERS = ("data", "mcp")
# What users run (the CLI, its commands, the Python API and the package's public names in
# `concerto/__init__.py`) and the core's own `Pack` declaration: the top, which nothing below
# imports (but the app, which mounts the core's routes).
TOP = ("concerto", "cli", "cli_input", "cli_render", "commands", "api", "core", "__main__")
# What a sibling may import of another: module → why it is public.
PUBLIC = {"concerto.server.errors": "the HTTP API's JSON error, for every router mounted on the app"}


@dataclass(frozen=True)
class Import:
    importer: str  # concerto.server.app
    file: str  # src/concerto/server/app.py
    line: int
    imported: str  # concerto.mcp.client
    type_only: bool = False  # under `if TYPE_CHECKING:`

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.importer} imports {self.imported}"


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "concerto").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def imports_of(name: str, path: Path) -> list[Import]:
    """The Concerto modules `name` imports, each with its line, deferred imports included."""
    known = modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    file = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in dict.fromkeys(targets):
            if target in known and target != name:
                found.append(Import(name, file, node.lineno, target, id(node) in typing_only))
    return sorted(found, key=lambda i: (i.line, i.imported))


@cache
def graph() -> tuple[Import, ...]:
    return tuple(i for name, path in sorted(modules().items()) for i in imports_of(name, path))


def part(module: str) -> str:
    """The top-level part of src/concerto a module belongs to: `server`, `store`, `packs.kpi`, ..."""
    parts = module.split(".")[1:] or ["concerto"]
    if parts[0] == "packs" and len(parts) > 1:
        return f"packs.{parts[1]}"
    return parts[0]


def is_in(module: str, parts: tuple[str, ...]) -> bool:
    return any(part(module) == p or part(module).startswith(f"{p}.") for p in parts)


# -- the rules: each says whether one import breaks it -------------------------------------


def store_reaches_up(i: Import) -> bool:
    """`concerto.store` is below the engine: the engine, the surfaces and the packs import it, it
    imports only what is below it (`BELOW_THE_STORE`), so nothing of the engine, the surfaces or
    the packs."""
    return part(i.importer) == "store" and not is_in(i.imported, ("store", *BELOW_THE_STORE))


def core_names_a_surface_or_pack(i: Import) -> bool:
    """The engine and the core beside it import no surface (`server`, `protocols`) and no pack
    (`packs/*`, `data`, `mcp`), a setting a pack owns included: a pack plugs in through the Pack
    interface, the engine does not reach for it."""
    return is_in(i.importer, CORE) and is_in(i.imported, SURFACES_AND_PACKS)


def reaches_into_a_sibling(i: Import) -> bool:
    """The server, the protocols and each pack import the core, the shared layers (`data`, `mcp`:
    packs and protocols only) and of a sibling only its `PUBLIC` modules: no server → MCP client,
    no protocol → server app, no pack → another pack."""
    mine, theirs = part(i.importer), part(i.imported)
    if mine == theirs or not (is_in(i.importer, SURFACES_AND_PACKS) and is_in(i.imported, SURFACES_AND_PACKS)):
        return False
    shared = theirs in SHARED_LAYERS and mine not in ("server", *SHARED_LAYERS)
    return not shared and i.imported not in PUBLIC


def reaches_up_to_the_top(i: Import) -> bool:
    """Nothing below the top (`TOP`: the CLI, its commands, the Python API, the core's `Pack`)
    imports it: the engine, the surfaces and the packs are what the top assembles. The one
    exception is the app mounting the core's routes (`server.app` → `concerto.core`)."""
    if is_in(i.importer, TOP) or not is_in(i.imported, TOP):
        return False
    return not (part(i.importer) == "server" and i.imported == "concerto.core")


def uses_the_test_doubles(i: Import) -> bool:
    """`concerto.testing` (ScriptedLLM, fake agents, the LLM guard) is for tests and users' fakes."""
    return i.imported == "concerto.testing"


def broken(rule: str, found: list[Import]) -> str:
    return f"{rule}:\n" + "\n".join(f"  {i}" for i in found)


def cycles(imports: Iterable[Import]) -> list[str]:
    """Each cycle as `module:line -> module:line -> ... -> first module`; imports only for type
    checkers do not run, so they may point back."""
    edges: dict[str, list[Import]] = defaultdict(list)
    for i in imports:
        if not i.type_only:
            edges[i.importer].append(i)
    state: dict[str, int] = {}
    stack: list[Import] = []
    found: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        for edge in sorted(edges[node], key=lambda i: i.imported):
            stack.append(edge)
            if state.get(edge.imported) == 1:
                start = next(n for n, e in enumerate(stack) if e.importer == edge.imported)
                found.append(" -> ".join(f"{e.importer}:{e.line}" for e in stack[start:]) + f" -> {edge.imported}")
            elif edge.imported not in state:
                visit(edge.imported)
            stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    """No import cycle, not even through an import deferred into a function."""
    found = cycles(graph())
    assert not found, "import cycles (module:line of each import):\n" + "\n".join(f"  {c}" for c in found)


def test_the_store_imports_nothing_above_it() -> None:
    """Holds with no store package too (nothing imports from it then)."""
    found = [i for i in graph() if store_reaches_up(i)]
    assert not found, broken("the store imports something above it", found)


def test_the_core_names_no_surface_and_no_pack() -> None:
    found = [i for i in graph() if core_names_a_surface_or_pack(i)]
    assert not found, broken("the core imports a surface or a pack", found)


def test_surfaces_and_packs_import_no_siblings_internals() -> None:
    found = [i for i in graph() if reaches_into_a_sibling(i)]
    assert not found, broken("a surface or pack imports a sibling's internals", found)


def test_nothing_below_imports_the_cli_the_python_api_or_the_core_pack() -> None:
    found = [i for i in graph() if reaches_up_to_the_top(i)]
    assert not found, broken("a module below the top imports the CLI, the Python API or the core pack", found)


def test_concerto_testing_is_for_tests_only() -> None:
    """No module of src/ imports `concerto.testing` but itself."""
    found = [i for i in graph() if uses_the_test_doubles(i)]
    assert not found, broken("src/ imports concerto.testing", found)


def test_each_rule_tells_a_breaking_import_from_an_allowed_one() -> None:
    """The rules on imports made up for the purpose (the tree's own change as the issues land)."""

    def edge(importer: str, imported: str) -> Import:
        return Import(importer, "x.py", 1, imported)

    rules = (
        store_reaches_up,
        core_names_a_surface_or_pack,
        reaches_into_a_sibling,
        reaches_up_to_the_top,
        uses_the_test_doubles,
    )
    breaking = {
        edge("concerto.store.sqlite", "concerto.orchestrator.events"): store_reaches_up,
        edge("concerto.store", "concerto.data.settings"): store_reaches_up,
        edge("concerto.store.database", "concerto.agents.pack"): store_reaches_up,
        edge("concerto.store.opened", "concerto.commands.serve"): store_reaches_up,
        edge("concerto.orchestrator.log", "concerto.data.settings"): core_names_a_surface_or_pack,
        edge("concerto.agents.loader", "concerto.packs.kpi.pack"): core_names_a_surface_or_pack,
        edge("concerto.settings", "concerto.server.app"): core_names_a_surface_or_pack,
        edge("concerto.server.app", "concerto.mcp.client"): reaches_into_a_sibling,
        edge("concerto.protocols.openai_chat.request", "concerto.server.app"): reaches_into_a_sibling,
        edge("concerto.packs.kpi.cli", "concerto.packs.city.calls"): reaches_into_a_sibling,
        edge("concerto.data.routes", "concerto.packs.analytics.sql"): reaches_into_a_sibling,
        edge("concerto.mcp.client", "concerto.data.store"): reaches_into_a_sibling,
        edge("concerto.packs.kpi.cli", "concerto.testing"): uses_the_test_doubles,
        edge("concerto.orchestrator.engine", "concerto.commands.serve"): reaches_up_to_the_top,
        edge("concerto.agents.loader", "concerto.core"): reaches_up_to_the_top,
        edge("concerto.packs.kpi.agent", "concerto.api"): reaches_up_to_the_top,
        edge("concerto.packs.kpi.cli", "concerto.commands.ask"): reaches_up_to_the_top,
        edge("concerto.server.routes.ask", "concerto.cli_render"): reaches_up_to_the_top,
    }
    for i, rule in breaking.items():
        assert rule(i), f"{rule.__name__} lets {i} through"
    allowed = [
        edge("concerto.orchestrator.log", "concerto.store.database"),
        edge("concerto.store.opened", "concerto.settings"),
        edge("concerto.store.postgres", "concerto.redact"),
        edge("concerto.store.sqlite", "concerto.store.database"),
        edge("concerto.server.app", "concerto.orchestrator.engine"),
        edge("concerto.server.runs", "concerto.store"),
        edge("concerto.protocols.a2a_routes", "concerto.server.errors"),
        edge("concerto.data.routes", "concerto.server.errors"),
        edge("concerto.packs.city.calls", "concerto.mcp.client"),
        edge("concerto.packs.analytics.sql", "concerto.data.context"),
        edge("concerto.protocols.mcp_server", "concerto.mcp.serve"),
        edge("concerto.packs.kpi.store", "concerto.packs.kpi.interpret"),
        edge("concerto.cli", "concerto.server.app"),
        edge("concerto.commands.serve", "concerto.server.app"),
        edge("concerto.server.app", "concerto.core"),
        edge("concerto.api", "concerto.orchestrator.engine"),
    ]
    for i in allowed:
        assert [r.__name__ for r in rules if r(i)] == [], f"{i} is allowed"

    loop = [edge("concerto.a", "concerto.b"), edge("concerto.b", "concerto.c"), edge("concerto.c", "concerto.a")]
    assert cycles(loop) == ["concerto.a:1 -> concerto.b:1 -> concerto.c:1 -> concerto.a"]
    assert cycles([*loop[:2], Import("concerto.c", "x.py", 1, "concerto.a", type_only=True)]) == []


def test_the_walk_finds_every_kind_of_import(tmp_path: Path) -> None:
    """Plain, `from`, relative, deferred and type-only imports, each with its line."""
    source = tmp_path / "example.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import concerto.settings\n"
        "from concerto.server import errors\n"
        "from ..contracts import common\n"
        "from . import engine\n"
        "if TYPE_CHECKING:\n"
        "    from concerto.mcp.client import MCPServer\n"
        "def later():\n"
        "    from concerto.testing import ScriptedLLM\n"
    )
    found = {(i.imported, i.line, i.type_only) for i in imports_of("concerto.orchestrator.example", source)}
    assert found == {
        ("concerto.settings", 2, False),
        ("concerto.server.errors", 3, False),
        ("concerto.contracts.common", 4, False),
        ("concerto.orchestrator.engine", 5, False),
        ("concerto.mcp.client", 7, True),
        ("concerto.testing", 9, False),
    }


# -- the layout of tests/ and benchmarks/ ---------------------------------------------------


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py") if ".venv" not in p.parts)


def test_no_test_module_imports_a_conftest() -> None:
    """Fixtures live in conftests, plain helpers in tests/_helpers/ and services in
    tests/_services/: a test module imports those, never a conftest."""
    found = []
    for path in _python_files("tests", "benchmarks"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import | ast.ImportFrom) else []
            if any(n == "conftest" or n.endswith(".conftest") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "imports from a conftest:\n" + "\n".join(found)


def test_tests_and_benchmarks_do_not_edit_sys_path() -> None:
    """They share code as packages (pytest's `pythonpath`, benchmarks run with `python -m`)."""
    found = []
    for path in _python_files("tests", "benchmarks", "scripts"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("sys.path."):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "sys.path edited in code:\n" + "\n".join(found)
