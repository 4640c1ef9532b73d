"""What holds for the whole project: settings documented, the public API, the README's two
commands, the test isolation, no import cycle, nothing test-only under src/."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import concerto
from concerto.agents.loader import load_packs
from concerto.settings import reference

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def test_settings_doc_is_generated_from_every_pack() -> None:
    """docs/settings.md ends with `concerto config --markdown`: every setting of every pack, current."""
    text = (ROOT / "docs" / "settings.md").read_text()
    table = reference(load_packs().settings_sections())
    assert text.endswith(table), "regenerate the table: concerto config --markdown"
    assert "`CONCERTO_PROMETHEUS_URL`" in table and "`CONCERTO_WEATHER_URL`" in table


def test_public_api_is_sorted_and_importable() -> None:
    assert concerto.__all__ == sorted(concerto.__all__)
    for name in concerto.__all__:
        assert getattr(concerto, name) is not None
    assert {"Pack", "PackSettings", "Agent", "Orchestrator"} <= set(concerto.__all__)


def test_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    first, second = (block.split("\n", 1)[1].strip() for block in readme.split("```bash")[1:3])
    assert first.startswith("bash scripts/demo.sh") and second.startswith("bash scripts/test.sh")
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("exec bash scripts/test.sh")


def test_no_setting_leaks_in_from_the_environment() -> None:
    """tests/conftest.py clears every CONCERTO_* variable but the test data dir."""
    assert [k for k in os.environ if k.startswith("CONCERTO_")] == ["CONCERTO_DATA_DIR"]


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "concerto").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Concerto modules `name` imports, deferred imports included, TYPE_CHECKING blocks not."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return {m for m in out if m in modules and m != name}


def test_no_module_imports_itself_back() -> None:
    """No import cycle, not even through an import deferred into a function."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*stack[stack.index(dep) :], dep]))
            elif dep not in state:
                visit(dep)
        state[node] = 2
        stack.pop()

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def test_nothing_test_only_under_src() -> None:
    """Services for tests live in tests/_services; src/ imports neither pytest nor them."""
    for name, path in _modules().items():
        text = path.read_text()
        assert "import pytest" not in text and "_services" not in text, name
