"""Registry: names are unique identifiers; `@register_agent` modules still load as packs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from concerto.agents.base import Agent, AgentInfo
from concerto.agents.loader import load_registry
from concerto.agents.registry import AgentRegistry, RegistryError
from concerto.testing import fake_agent


def test_builtin_packs_load_through_entry_points() -> None:
    names = load_registry().names()
    assert {"temperature", "datetime", "echo", "kpi", "metrics_agent"} <= set(names)


def test_filter_by_agent_or_pack_name() -> None:
    assert load_registry("echo").names() == ["echo"]
    assert load_registry("city").names() == ["temperature", "datetime", "echo"]
    assert load_registry("kpi, echo").names() == ["echo", "kpi"]
    assert load_registry("no-such-agent").names() == []


def test_duplicate_names_and_missing_info_are_refused() -> None:
    reg = AgentRegistry([fake_agent("a")])
    with pytest.raises(RegistryError, match="taken"):
        reg.register(fake_agent("a"))

    class NoInfo(Agent):  # type: ignore[misc]
        async def run(self, context, task):  # type: ignore[no-untyped-def]
            raise AssertionError

    with pytest.raises(RegistryError, match="no `info"):
        reg.register(NoInfo)
    with pytest.raises(RegistryError, match="unknown agent 'zzz'"):
        reg.get("zzz")


def test_agent_names_are_identifiers() -> None:
    with pytest.raises(ValueError):
        AgentInfo(name="Bad Name", description="x")


def test_a_module_of_register_agent_classes_is_a_pack(install_plugin: Callable[..., None]) -> None:
    """The older plugin form: the entry point names a module whose classes use `@register_agent`."""
    install_plugin(
        "acme_agents",
        "from concerto import Agent, AgentInfo, AgentResult, register_agent\n"
        "@register_agent\n"
        "class Weatherish(Agent):\n"
        "    info = AgentInfo(name='acme_forecast', description='Forecasts')\n"
        "    async def run(self, context, task):\n"
        "        return AgentResult(summary='sunny')\n",
        {"concerto.agents": {"acme": "acme_agents"}},
    )
    assert load_registry("acme").names() == ["acme_forecast"]
    assert load_registry("acme").get("acme_forecast").info.pack == "acme"  # the pack's name, given by the loader
    assert "acme_forecast" in load_registry().names()
    assert "acme_forecast" not in load_registry("city").names()
