"""Agent registry: the agent classes one orchestrator can run, by name.

Packs (built-in and third-party alike) declare their agents in a `Pack`, which
`concerto.agents.loader` finds through the `concerto.agents` entry points and turns into
a registry, with `CONCERTO_AGENTS` applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from concerto.agents.base import Agent, AgentInfo

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


_registered: list[type[Agent]] = []


def register_agent(cls: A) -> A:
    """Class decorator (004_*.txt): mark an agent class as registered.

    A pack lists its agents in its `Pack`; an entry point that names a plain module
    instead gets the agents this decorator registered in that module (and below).
    """
    info = getattr(cls, "info", None)
    if not isinstance(info, AgentInfo):
        raise RegistryError(f"{cls.__qualname__} has no `info: AgentInfo`")
    if cls not in _registered:
        _registered.append(cls)
    return cls


def registered_in(module: str) -> list[type[Agent]]:
    """Agent classes registered with `@register_agent` in `module` or a module below it."""
    return [c for c in _registered if c.__module__ == module or c.__module__.startswith(module + ".")]
