"""The core's commands and routes are contributed as a pack's are (`concerto/core.py`): the
`concerto` group resolves them like a pack's commands, and `create_app` mounts them like a
pack's routes, first; unlike a pack's, a core part that cannot be used is an error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest

from concerto.agents.pack import PackError, resolve
from concerto.cli import _Cli, main
from concerto.core import pack as core
from concerto.server import app as server_app
from concerto.server.app import create_app
from concerto.server.lookup import every_route
from concerto.settings import Settings


def test_the_core_commands_are_the_core_packs() -> None:
    ctx = click.Context(main)
    assert set(core.commands) <= set(main.list_commands(ctx))
    for name, ref in core.commands.items():
        command = main.get_command(ctx, name)
        assert command is resolve(ref) and command.name == name


def test_a_pack_cannot_take_a_core_command(monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = click.Command("ask", callback=lambda: None)
    monkeypatch.setattr(_Cli, "_pack_commands", {"ask": ("thief", theirs), "extra": ("thief", theirs)})
    ctx = click.Context(main)
    assert main.get_command(ctx, "ask") is resolve(core.commands["ask"])
    assert main.get_command(ctx, "extra") is theirs
    assert main.list_commands(ctx) == sorted({*core.commands, "extra"})


def test_the_core_routes_come_first_then_the_docs_then_the_packs(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path))
    served = [(getattr(r, "path", None), getattr(r, "methods", None)) for r in every_route(app)]
    declared = [(r.path, r.methods) for ref in core.routes for r in resolve(ref).routes]
    assert served[0][0] == "/openapi.json"  # FastAPI's own
    assert served[1 : 1 + len(declared)] == declared
    assert [path for path, _ in served[1 + len(declared) :][:3]] == ["/static", "/docs/assets", "/docs"]


def test_a_core_route_that_cannot_be_mounted_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = dataclasses.replace(core, routes=[*core.routes, "concerto.server.routes.nowhere:router"])
    monkeypatch.setattr(server_app, "core", broken)
    with pytest.raises(PackError, match=r"cannot import concerto\.server\.routes\.nowhere"):
        create_app(Settings(data_dir=tmp_path))
