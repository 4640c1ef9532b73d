"""Agent registry: built-in packs and third-party plugins register the same way.

A pack is a module named by an entry point in the group `concerto.agents`; importing it
runs its `@register_agent` decorators. `CONCERTO_AGENTS` (comma-separated agent or pack
names) limits what loads.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from importlib.metadata import entry_points
from typing import TypeVar

from concerto.agents.base import Agent, AgentInfo

ENTRY_POINT_GROUP = "concerto.agents"

A = TypeVar("A", bound=type[Agent])


class RegistryError(ValueError):
    """An agent that cannot be registered (no info, a duplicate name, a bad plugin)."""


class AgentRegistry:
    """Agent classes by name, in registration order."""

    def __init__(self, agents: Iterable[type[Agent]] = ()) -> None:
        self._agents: dict[str, type[Agent]] = {}
        for cls in agents:
            self.register(cls)

    def register(self, cls: A) -> A:
        """Add an agent class; its `info` must be an `AgentInfo` with a unique name."""
        info = getattr(cls, "info", None)
        if not isinstance(info, AgentInfo):
            raise RegistryError(f"{cls.__qualname__} has no `info: AgentInfo`")
        existing = self._agents.get(info.name)
        if existing is not None and existing is not cls:
            raise RegistryError(f"agent name '{info.name}' is taken by {existing.__module__}.{existing.__qualname__}")
        self._agents[info.name] = cls
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._agents

    def __len__(self) -> int:
        return len(self._agents)

    def names(self) -> list[str]:
        return list(self._agents)

    def get(self, name: str) -> type[Agent]:
        try:
            return self._agents[name]
        except KeyError:
            raise RegistryError(f"unknown agent '{name}'; known agents: {', '.join(sorted(self._agents))}") from None

    def infos(self) -> list[AgentInfo]:
        return [cls.info for cls in self._agents.values()]

    def subset(self, allowed: set[str]) -> AgentRegistry:
        """Agents whose name or pack is in `allowed`."""
        return AgentRegistry(cls for cls in self._agents.values() if {cls.info.name, cls.info.pack} & allowed)


_default = AgentRegistry()


def register_agent(cls: A) -> A:
    """Class decorator: register an agent in the default registry (004_*.txt pattern)."""
    return _default.register(cls)


def load_registry(allowed: str | None = None) -> AgentRegistry:
    """Import every pack named in the `concerto.agents` entry points and return the agents.

    `allowed` is the `CONCERTO_AGENTS` value: comma-separated agent or pack names.
    A plugin that fails to import is reported with its name, not a stack trace.
    """
    wanted = {p.strip() for p in allowed.split(",") if p.strip()} if allowed else None
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if wanted is not None and ep.name not in wanted and _only_packs(wanted):
            continue
        try:
            import_module(ep.value.split(":")[0])
        except Exception as exc:
            raise RegistryError(f"agent plugin '{ep.name}' ({ep.value}) failed to load: {exc}") from exc
    return _default.subset(wanted) if wanted is not None else AgentRegistry(_default._agents.values())


def _only_packs(wanted: set[str]) -> bool:
    """True when every wanted name is an entry-point (pack) name, so others can be skipped."""
    packs = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return wanted <= packs
