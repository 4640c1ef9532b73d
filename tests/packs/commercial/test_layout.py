"""The commercial pack's layout rules (docs/packs/commercial.md, "Layout"; issue 27): the
statistics (`methods`) import nothing of the agent layer, no agent imports another, a method's
error reaches the user as the contract's error, and no function in the pack runs over 80 lines."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import concerto.packs.commercial
import concerto.packs.commercial.methods
from concerto.contracts.common import ErrorKind
from concerto.packs.commercial.base.errors import failure
from concerto.packs.commercial.methods.errors import Infeasible, MethodError, NoSolution

PACK = Path(concerto.packs.commercial.__file__).parent
MAX_FUNCTION_LINES = 80


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at the top, inside functions and under TYPE_CHECKING alike."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            found |= {node.module or ""} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_methods_import_nothing_of_the_agent_layer() -> None:
    """A method takes plain inputs and raises its own errors: of Concerto it may import only
    other methods (not `concerto.agents`, `concerto.contracts`, the pack's base or agents)."""
    package = concerto.packs.commercial.methods
    modules = [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    assert {"concerto.packs.commercial.methods.causal", "concerto.packs.commercial.methods.power"} <= set(modules)
    wrong = {}
    for name in [package.__name__, *modules]:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        outside = {
            m
            for m in _imported(Path(spec.origin))
            if m.split(".")[0] == "concerto" and not m.startswith(f"{package.__name__}.")
        }
        if outside:
            wrong[name] = sorted(outside)
    assert wrong == {}


def test_agents_import_only_base_methods_and_themselves() -> None:
    """No agent folder imports another, and `base` imports no agent."""
    prefix = "concerto.packs.commercial."
    shared = {"base", "methods"}
    folders = sorted(p.name for p in PACK.iterdir() if (p / "__init__.py").exists())
    assert len([f for f in folders if f not in shared]) == 9  # one folder per agent
    wrong = {}
    for folder in folders:
        allowed = {folder, "methods"} | (shared if folder != "methods" else set())
        for path in sorted((PACK / folder).glob("*.py")):
            used = {m[len(prefix) :].split(".")[0] for m in _imported(path) if m.startswith(prefix)}
            if used - allowed:
                wrong[f"{folder}/{path.name}"] = sorted(used - allowed)
    assert wrong == {}


def test_a_methods_error_becomes_the_contracts_error() -> None:
    bad_input = failure(Infeasible("the budget -1 is negative", "Give a budget of zero or more.", "budget"))
    assert (bad_input.error_type, bad_input.kind) == ("infeasible_constraints", ErrorKind.VALIDATION)
    assert bad_input.message == "the budget -1 is negative" and bad_input.suggestion == "Give a budget of zero or more."
    assert bad_input.details == {"constraint": "budget"}
    no_root = failure(NoSolution("no solution", "Ask for a larger effect."))
    assert (no_root.error_type, no_root.kind) == ("no_solution", ErrorKind.ERROR)
    named = failure(MethodError("too few clusters", "Give the ICC.", error_type="too_few_clusters", clusters=1))
    assert (named.error_type, named.details) == ("too_few_clusters", {"clusters": 1})
    with pytest.raises(ValueError):  # methods' callers that catch ValueError keep working
        raise Infeasible("x", "y", "budget")


def test_no_function_in_the_pack_runs_over_80_lines() -> None:
    long = []
    for path in sorted(PACK.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACK)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
