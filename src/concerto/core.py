"""Concerto's own commands, HTTP routes and page, declared as a `Pack` like any pack's.

The core is not an entry point (it is not a plugin, cannot be left out, and has no agents),
but it contributes through the same fields and is used by the same code: `concerto` resolves
its commands as it resolves a pack's (`cli.py`), consulting the core's first so no pack can
take `ask` or `serve`; `create_app` mounts its routers and static directory as it mounts a
pack's (`server/app.py`), before every pack's. Every reference is an import path, so
declaring it costs nothing: `concerto --help` imports no FastAPI, a server no click command.
"""

from __future__ import annotations

from pathlib import Path

from concerto.agents.pack import Pack

_COMMANDS = "concerto.commands"
_ROUTES = "concerto.server.routes"

pack = Pack(
    name="core",
    description="Concerto's own commands, HTTP API and page.",
    commands={
        "agents": f"{_COMMANDS}.agents:agents",
        "ask": f"{_COMMANDS}.ask:ask",
        "config": f"{_COMMANDS}.config:config",
        "events": f"{_COMMANDS}.events:events",
        "serve": f"{_COMMANDS}.serve:serve",
    },
    routes=[  # in this order: the OpenAPI document lists the paths in the order of the routes
        f"{_ROUTES}.ask:router",
        f"{_ROUTES}.runs:router",
        f"{_ROUTES}.conversations:router",
        f"{_ROUTES}.agents:router",
        f"{_ROUTES}.health:router",
        f"{_ROUTES}.page:router",
    ],
    static={"/static": Path(__file__).parent / "server" / "static"},
)
