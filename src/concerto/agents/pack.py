"""The `Pack`: everything one pack contributes, declared in one small object.

A pack is found through the `concerto.agents` entry-point group, whose value names a
`Pack` (`city = "concerto.packs.city.pack:pack"`). Built-in packs and third-party ones
are declared and loaded the same way.

Every reference in a pack may be the object itself or its import path,
`"module:attribute"`; paths are imported only when the reference is first needed, so
declaring a pack costs nothing (`concerto --help` lists pack commands without
importing their code, the CLI does not import FastAPI, a server does not import click
commands). This module imports nothing beyond the standard library for the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concerto.agents.base import Agent
    from concerto.settings import PackSettings

NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

# A reference: the object, or "module:attribute" imported on first use.
Ref = Any


class PackError(ValueError):
    """A pack declaration or one of its references that cannot be used."""


@dataclass(frozen=True, kw_only=True)
class Pack:
    """What one pack adds to Concerto. Only `name` is required.

    - `agents`: agent classes (or their paths).
    - `settings`: a `PackSettings` subclass; its fields are read from the same `CONCERTO_*`
      environment variables and settings file as the core settings.
    - `intents`: YAML intent tables (paths to files) for the planner.
    - `discover`: `(settings) -> agent classes`, sync or async, for agents found at run
      time (e.g. the tools of external MCP servers); called once per orchestrator.
    - `commands`: `concerto` sub-commands, name → a click command (or its path).
    - `routes`: FastAPI `APIRouter`s (or functions returning one) mounted on `concerto serve`.
    - `static`: URL path → directory served as static files by `concerto serve`.
    - `mcp_servers`: name → a function `(host, port) -> FastMCP` that `concerto mcp serve
      NAME` runs.
    - `warm_up`: a function of no arguments, sync or async, that `concerto serve` runs in the
      background as it starts when one of the pack's agents is loaded: imports its agents'
      first question would otherwise make while its events stream (the city pack's: the MCP
      SDK). Only a head start: a failure is logged.
    - `reader`: a function `(settings, resources, query) -> TableReading | None`, sync, that
      reads a question against the table it names (`query.source`), once per question and
      before routing: the router sends a confident reading to the agent it names
      (`TableReading.answered_by`), and every task of the plan gets it as `TaskInput.reading`.
    """

    name: str
    description: str = ""
    agents: Sequence[Ref] = ()
    settings: Ref | None = None
    intents: Sequence[Path] = ()
    discover: Ref | None = None
    commands: Mapping[str, Ref] = field(default_factory=dict)
    routes: Sequence[Ref] = ()
    static: Mapping[str, Path] = field(default_factory=dict)
    mcp_servers: Mapping[str, Ref] = field(default_factory=dict)
    warm_up: Ref | None = None
    reader: Ref | None = None

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise PackError(f"pack name '{self.name}' must be lower case letters, digits, '_' or '-'")
        for url in self.static:
            if not url.startswith("/"):
                raise PackError(f"pack {self.name}: static path '{url}' must start with '/'")

    def agent_classes(self) -> list[type[Agent]]:
        """The pack's agent classes, imported now if given as paths."""
        return [resolve(ref, f"agent of pack {self.name}") for ref in self.agents]

    def settings_class(self) -> type[PackSettings] | None:
        return None if self.settings is None else resolve(self.settings, f"settings of pack {self.name}")


def resolve(ref: Ref, what: str = "reference") -> Any:
    """The object `ref` names: itself, or the attribute a `"module:attribute"` path names."""
    if not isinstance(ref, str):
        return ref
    module, sep, attribute = ref.partition(":")
    if not sep or not module or not attribute:
        raise PackError(f"{what}: '{ref}' is not of the form 'module:attribute'")
    try:
        value: Any = import_module(module)
    except ImportError as exc:
        raise PackError(f"{what}: cannot import {module}: {exc}") from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise PackError(f"{what}: {module} has no attribute '{attribute}'") from None
    return value
