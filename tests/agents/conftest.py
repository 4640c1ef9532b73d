"""Installing a throwaway plugin: a module and a dist-info with its entry points on sys.path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """`install_plugin(module, source, entry_points)` makes `module` importable and declares its
    entry points (`{"concerto.agents": {"name": "module:pack"}}`), as pip would; undone after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(module: str, source: str, entry_points: dict[str, dict[str, str]]) -> None:
        (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
        dist = tmp_path / f"{module}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
        lines = [
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in entry_points.items()
        ]
        (dist / "entry_points.txt").write_text("\n".join(lines))

    return install
