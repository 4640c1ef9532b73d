"""Loading packs: one pass over the entry points, failures reported and contained, CONCERTO_AGENTS once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from concerto.agents.loader import Selection, load_packs
from concerto.agents.pack import Pack, PackError, resolve
from concerto.orchestrator.engine import Orchestrator
from concerto.settings import Settings
from concerto.testing import fake_agent

AGENT = """
from concerto import Agent, AgentInfo, AgentResult

class Hello(Agent):
    info = AgentInfo(name="hello", description="Says hello to whoever asks for a greeting.")

    async def run(self, context, task):
        return AgentResult(summary="hello", entities={"who": "you"})
"""


def test_builtin_packs_are_declared_packs() -> None:
    packs = load_packs()
    assert {"city", "kpi", "metrics", "mcp", "commercial"} <= set(packs.names)
    assert packs.failures == []
    assert packs.commands()["kpi"][0] == "kpi" and packs.commands()["mcp"][0] == "mcp"
    assert set(packs.mcp_servers()) >= {"weather", "datetime", "echo"}
    assert any(p.name == "intents.yaml" for p in packs.intent_files())


def test_a_pack_that_fails_to_import_is_reported_and_the_others_load(install_plugin: Callable[..., None]) -> None:
    install_plugin(
        "broken_pack", "raise RuntimeError('boom at import')\n", {"concerto.agents": {"broken": "broken_pack:pack"}}
    )
    packs = load_packs()
    assert "echo" in packs.registry().names()
    [failure] = packs.failures
    assert (failure.pack, failure.part) == ("broken", "import")
    assert "RuntimeError: boom at import" in failure.error


def test_bad_declarations_are_reported_per_part(install_plugin: Callable[..., None]) -> None:
    install_plugin(
        "odd_pack",
        AGENT
        + "from concerto import Pack\n"
        + "pack = Pack(name='odd', agents=['odd_pack:Hello', 'odd_pack:Missing'], commands={'hi': 'odd_pack:nope'})\n"
        + "not_a_pack = 42\n",
        {"concerto.agents": {"odd": "odd_pack:pack", "number": "odd_pack:not_a_pack"}},
    )
    packs = load_packs()
    assert "hello" not in packs.registry()  # an agent list that does not resolve loads none of it
    failures = {(f.pack, f.part): f.error for f in packs.failures}
    assert "is a int, not a Pack" in failures[("number", "import")]
    assert "has no attribute 'Missing'" in failures[("odd", "agents")]
    assert "hi" in packs.commands()  # the pack's other parts still count


def test_two_packs_with_one_agent_name(install_plugin: Callable[..., None]) -> None:
    install_plugin(
        "twin_pack",
        AGENT + "from concerto import Pack\npack = Pack(name='twin', agents=[Hello])\n"
        "other = Pack(name='twin2', agents=[type('Hello2', (Hello,), {})])\n",
        {"concerto.agents": {"twin": "twin_pack:pack", "twin2": "twin_pack:other"}},
    )
    packs = load_packs()
    assert packs.registry().get("hello").info.pack == "twin"
    assert any(f.pack == "twin2" and "taken" in f.error for f in packs.failures)


def test_selection_is_read_once_and_means_names_packs_or_labels() -> None:
    info = fake_agent("notes_add_note").info.model_copy(update={"pack": "mcp:notes"})
    assert Selection(None).allows(info, "mcp") and Selection(" , ").allows(info, "mcp")
    assert Selection("mcp").allows(info, "mcp")
    assert Selection("mcp:notes").allows(info, "mcp")
    assert Selection("notes_add_note, echo").allows(info, "mcp")
    assert not Selection("city").allows(info, "mcp")
    assert Selection("city").discovers("city", {"city", "echo"})
    assert not Selection("city").discovers("mcp", {"city", "echo"})
    assert Selection("notes_add_note").discovers("mcp", {"city", "echo"})  # a name only discovery can explain


async def test_discovered_agents_join_the_orchestrator(install_plugin: Callable[..., None], tmp_path: Path) -> None:
    install_plugin(
        "found_pack",
        AGENT + "from concerto import Pack\n"
        "async def find(settings):\n    return [Hello]\n"
        "def fail(settings):\n    raise OSError('the catalogue is offline')\n"
        "pack = Pack(name='found', discover=find)\nbad = Pack(name='lost', discover=fail)\n",
        {"concerto.agents": {"found": "found_pack:pack", "lost": "found_pack:bad"}},
    )
    orch = Orchestrator(Settings(data_dir=tmp_path, store_events=False), packs=load_packs("found,echo"))
    assert "hello" not in orch.registry
    async with orch:
        assert orch.registry.names() == ["echo", "hello"]
        assert orch.registry.get("hello").info.pack == "found"
        result = await orch.ask("hello: give me a greeting")
    assert result.intent_classification is not None
    assert result.intent_classification.entities_extracted == {"who": "you"}  # reported by the agent
    assert not any(f.pack == "lost" for f in orch.packs.failures)  # not selected, not run
    async with Orchestrator(Settings(data_dir=tmp_path, store_events=False), packs=orch.packs) as again:
        assert again.registry.names() == ["echo", "hello"]  # one loaded set serves several orchestrators
    assert orch.packs.failures == []

    everything = Orchestrator(Settings(data_dir=tmp_path, store_events=False), packs=load_packs())
    await everything.start()
    assert any(f.pack == "lost" and "the catalogue is offline" in f.error for f in everything.packs.failures)
    await everything.aclose()


def test_settings_a_pack_redeclares_are_refused(install_plugin: Callable[..., None]) -> None:
    install_plugin(
        "greedy_pack",
        "from concerto import Pack, PackSettings\n"
        "class GreedySettings(PackSettings):\n    prometheus_url: str = 'mine'\n"
        "pack = Pack(name='greedy', settings=GreedySettings)\n",
        {"concerto.agents": {"greedy": "greedy_pack:pack"}},
    )
    packs = load_packs()
    owners = [owner for owner, _ in packs.settings_sections()]
    assert "greedy" not in owners and owners[0] == "core" and "metrics" in owners  # built-in packs come first
    assert any("CONCERTO_PROMETHEUS_URL (metrics)" in f.error for f in packs.failures if f.pack == "greedy")


def test_references_and_names_are_checked() -> None:
    with pytest.raises(PackError, match="not of the form"):
        resolve("no_colon_here")
    with pytest.raises(PackError, match="cannot import"):
        resolve("concerto.no_such_module:x")
    with pytest.raises(PackError, match="has no attribute 'nope'"):
        resolve("concerto.agents.pack:nope")
    assert resolve("concerto.agents.pack:Pack") is Pack
    with pytest.raises(PackError, match="lower case"):
        Pack(name="Bad Name")
    with pytest.raises(PackError, match="must start with '/'"):
        Pack(name="ok", static={"assets": Path(".")})


def test_cli_and_health_report_a_broken_pack_and_ask_still_answers(tmp_path: Path) -> None:
    """End to end, in new processes: the broken plugin is installed, the others answer."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "broken_pack.py").write_text("import no_such_dependency_at_all\n")
    dist = site / "broken_pack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-pack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[concerto.agents]\nbroken = broken_pack:pack\n")
    env = {**os.environ, "PYTHONPATH": str(site), "CONCERTO_DATA_DIR": str(tmp_path / "data")}

    def concerto(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "concerto.cli", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    listed = concerto("agents", "--json")
    assert listed.returncode == 0 and "echo" in [a["name"] for a in json.loads(listed.stdout)]
    assert "pack 'broken' (import)" in listed.stderr and "no_such_dependency_at_all" in listed.stderr
    answered = concerto("ask", "echo: still here", "--json")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["response"] == 'Echo: "still here"'
    assert "pack 'broken' (import)" in answered.stderr  # the log line


def test_a_bad_setting_names_the_variable_and_leaves_only_its_pack_out(tmp_path: Path) -> None:
    env = {**os.environ, "CONCERTO_DATA_DIR": str(tmp_path), "CONCERTO_METRICS_TIMEOUT_S": "abc"}

    def concerto(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "concerto.cli", *args]
        return subprocess.run(command, env={**env, **extra}, capture_output=True, text=True, timeout=120)

    listed = concerto("agents", "--json")
    names = [a["name"] for a in json.loads(listed.stdout)]
    assert "echo" in names and "metrics_agent" not in names
    assert "pack 'metrics' (settings)" in listed.stderr and "CONCERTO_METRICS_TIMEOUT_S='abc'" in listed.stderr
    asked = json.loads(concerto("ask", "show CPU usage for the last hour", "--json").stdout)
    assert "Not available: pack 'metrics' (settings)" in asked["error_message"]
    for args in (("config",), ("ask", "echo: hi")):
        core = concerto(*args, CONCERTO_MAX_CONCURRENCY="lots")
        assert core.returncode == 1 and "Traceback" not in core.stderr
        assert "invalid setting CONCERTO_MAX_CONCURRENCY='lots'" in core.stderr
