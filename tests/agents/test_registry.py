"""Registry: decorator registration, entry-point packs, the CONCERTO_AGENTS filter."""

from __future__ import annotations

import pytest

from concerto.agents.base import Agent, AgentInfo
from concerto.agents.registry import AgentRegistry, RegistryError, load_registry
from concerto.testing import fake_agent


def test_builtin_packs_load_through_entry_points() -> None:
    names = load_registry().names()
    assert "echo" in names


def test_filter_by_agent_or_pack_name() -> None:
    assert load_registry("echo").names() == ["echo"]
    assert "echo" in load_registry("city").names()
    assert load_registry("no-such-agent").names() == []


def test_duplicate_names_and_missing_info_are_refused() -> None:
    reg = AgentRegistry([fake_agent("a")])
    with pytest.raises(RegistryError, match="taken"):
        reg.register(fake_agent("a"))

    class NoInfo(Agent):  # type: ignore[misc]
        async def run(self, context, payload):  # type: ignore[no-untyped-def]
            raise AssertionError

    with pytest.raises(RegistryError, match="no `info"):
        reg.register(NoInfo)
    with pytest.raises(RegistryError, match="unknown agent 'zzz'"):
        reg.get("zzz")


def test_agent_names_are_identifiers() -> None:
    with pytest.raises(ValueError):
        AgentInfo(name="Bad Name", description="x")
