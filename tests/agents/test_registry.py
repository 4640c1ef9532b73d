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


def test_third_party_plugin_is_found_through_its_entry_point(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A package installed beside Concerto adds an agent by declaring `concerto.agents`."""
    pkg = tmp_path / "acme_agents"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from concerto import Agent, AgentInfo, AgentResult, register_agent\n"
        "@register_agent\n"
        "class Weatherish(Agent):\n"
        "    info = AgentInfo(name='acme_forecast', description='Forecasts', pack='acme')\n"
        "    async def run(self, context, payload):\n"
        "        return AgentResult(summary='sunny')\n"
    )
    dist = tmp_path / "acme_agents-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-agents\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[concerto.agents]\nacme = acme_agents\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from concerto.agents import registry as module

    monkeypatch.setattr(module._default, "_agents", dict(module._default._agents))  # undone after the test
    assert load_registry("acme").names() == ["acme_forecast"]
    assert "acme_forecast" in load_registry().names()
    assert "acme_forecast" not in load_registry("city").names()
