"""The server names no pack and no protocol reaches into it: no module of the server, the
core's declaration or its commands imports a pack (`concerto.packs`, `mcp`, `data`,
`protocols`), deferred imports included (the app warmed the MCP client with one); no protocol
imports the server's app or its routes (OpenAI's options took `Now` from `server.app`)."""

from __future__ import annotations

import ast
from pathlib import Path

import concerto

SRC = Path(concerto.__file__).parent
PACKS = ("concerto.packs", "concerto.mcp", "concerto.data", "concerto.protocols")


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, wherever the import statement is (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def _under(*parts: str) -> list[Path]:
    return sorted(p for part in parts for p in (SRC / part).rglob("*.py") if p.is_file()) + sorted(
        SRC / part for part in parts if (SRC / part).is_file()
    )


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_the_server_and_the_core_commands_import_no_pack() -> None:
    modules = _under("server", "commands", "core.py", "cli.py", "cli_input.py", "cli_render.py")
    assert len(modules) > 10
    named = {str(p.relative_to(SRC)): sorted(m for m in _imports(p) if _within(m, PACKS)) for p in modules}
    assert {path: names for path, names in named.items() if names} == {}


def test_no_protocol_imports_the_servers_app_or_routes() -> None:
    reaching = ("concerto.server.app", "concerto.server.routes", "concerto.server.handlers", "concerto.server.startup")
    named = {
        str(p.relative_to(SRC)): sorted(m for m in _imports(p) if _within(m, reaching)) for p in _under("protocols")
    }
    assert {path: names for path, names in named.items() if names} == {}
