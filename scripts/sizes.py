"""Module and function sizes of src/concerto: the biggest modules (lines), the longest functions
(name, lines), and a summary of those over the limits (modules over 400 lines, functions over 80).

    .venv/bin/python scripts/sizes.py                 # the tables and the summary
    .venv/bin/python scripts/sizes.py --summary       # the summary only (what docs/STATUS.md shows)
    .venv/bin/python scripts/sizes.py --top 40 --module-limit 300 --function-limit 60 [PATH]

A module's size is its number of lines; a function's (methods and nested functions included,
each on its own) runs from its `def` to its last line. Read with `ast`, nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Sized:
    name: str  # packs/kpi/store.py, or packs/kpi/store.py:KPIStore.query
    lines: int


def functions(tree: ast.Module, module: str) -> list[Sized]:
    """Every function and method of a module, named `module:Outer.inner`."""
    found: list[Sized] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append(Sized(f"{module}:{name}", (child.end_lineno or child.lineno) - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _biggest_first(sized: Sized) -> tuple[int, str]:
    return -sized.lines, sized.name


def measure(package: Path) -> tuple[list[Sized], list[Sized]]:
    """(modules, functions) of every .py file under `package`, biggest first."""
    modules: list[Sized] = []
    funcs: list[Sized] = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(package).as_posix()
        modules.append(Sized(name, len(text.splitlines())))
        funcs += functions(ast.parse(text, filename=str(path)), name)
    return sorted(modules, key=_biggest_first), sorted(funcs, key=_biggest_first)


def report(package: Path, top: int, module_limit: int, function_limit: int, summary_only: bool) -> str:
    modules, funcs = measure(package)
    big = [m for m in modules if m.lines > module_limit]
    long = [f for f in funcs if f.lines > function_limit]
    total = sum(m.lines for m in modules)
    out: list[str] = []
    if not summary_only:
        out.append(f"Modules of {package.name}/ by lines (top {top} of {len(modules)}):")
        out += [f"  {m.lines:6}  {m.name}" for m in modules[:top]]
        out.append("")
        out.append(f"Longest functions (top {top} of {len(funcs)}):")
        out += [f"  {f.lines:6}  {f.name}" for f in funcs[:top]]
        out.append("")
    out.append(
        f"Summary: {len(modules)} modules, {total} lines, {len(funcs)} functions; "
        f"{len(big)} modules over {module_limit} lines, {len(long)} functions over {function_limit} lines."
    )
    out.append(f"Modules over {module_limit} lines: " + (", ".join(f"{m.name} {m.lines}" for m in big) or "none"))
    out.append(f"Functions over {function_limit} lines: " + (", ".join(f"{f.name} {f.lines}" for f in long) or "none"))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", nargs="?", type=Path, default=ROOT / "src" / "concerto")
    parser.add_argument("--top", type=int, default=25, help="rows in each table (default 25)")
    parser.add_argument("--module-limit", type=int, default=400, help="lines a module may have (default 400)")
    parser.add_argument("--function-limit", type=int, default=80, help="lines a function may have (default 80)")
    parser.add_argument("--summary", action="store_true", help="print the summary only")
    args = parser.parse_args(argv)
    if not args.package.is_dir():
        parser.error(f"{args.package} is not a folder")
    print(report(args.package, args.top, args.module_limit, args.function_limit, args.summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
