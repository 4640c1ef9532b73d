"""A task's timeout (`orchestrator/timeouts.py`): the user's settings can raise an agent's own
timeout, and the timeout error names the exact setting to raise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from concerto.agents.base import Agent, AgentInfo
from concerto.contracts.orchestrator import IntentClassification, OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.intents import load_intent_file
from concerto.orchestrator.planner import Planner
from concerto.orchestrator.router import RouteDecision
from concerto.orchestrator.timeouts import Timeouts, timeout_suggestion
from concerto.settings import Settings, SettingsError
from concerto.testing import fake_agent


def slow_agent(declared_ms: int = 100, delay_s: float = 0.5) -> type[Agent]:
    """An agent that needs `delay_s` and declares a shorter timeout of its own."""
    cls = fake_agent("slow", delay_s=delay_s, summary="done")
    cls.info = cls.info.model_copy(update={"default_timeout_ms": declared_ms})
    return cls


def test_the_order_the_settings_apply_in() -> None:
    timeouts = Timeouts(default_ms=30000, per_agent={"kpi": 500}, min_ms=20000)
    assert timeouts.of("kpi", 45000) == 500  # the user's value for the agent, as given
    assert timeouts.of("segmentation", 10000) == 20000  # the agent's own, raised to the minimum
    assert timeouts.of("segmentation", 60000) == 60000
    assert timeouts.of("plain") == 30000  # declares nothing: the default
    assert Timeouts(min_ms=900_000).of("x") == 600_000  # never beyond what a plan allows


def test_agent_timeouts_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONCERTO_AGENT_TIMEOUTS", "segmentation=60000, kpi=45000")
    monkeypatch.setenv("CONCERTO_MIN_TIMEOUT_MS", "25000")
    settings = Settings()
    assert settings.agent_timeouts == {"segmentation": 60000, "kpi": 45000}
    assert settings.min_timeout_ms == 25000
    monkeypatch.setenv("CONCERTO_AGENT_TIMEOUTS", '{"risk": 90000}')  # JSON also works
    assert Settings().agent_timeouts == {"risk": 90000}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("segmentation:60000", "agent=milliseconds"),
        ("segmentation=lots", "the timeout of segmentation must be 1..600000 ms, not 'lots'"),
        ("segmentation=0", "must be 1..600000 ms"),
        ("risk=900000", "must be 1..600000 ms"),
    ],
)
def test_a_bad_agent_timeout_names_the_setting(monkeypatch: pytest.MonkeyPatch, value: str, says: str) -> None:
    monkeypatch.setenv("CONCERTO_AGENT_TIMEOUTS", value)
    with pytest.raises(SettingsError, match="CONCERTO_AGENT_TIMEOUTS") as raised:
        Settings()
    assert says in str(raised.value)


async def test_the_timeout_error_names_the_setting_and_raising_it_works(
    make_orchestrator: Callable[..., Orchestrator],
) -> None:
    result = await make_orchestrator(slow_agent()).ask("q", agent="slow")
    assert isinstance(result, OrchestratorErrorResponse) and result.partial_results
    error = result.partial_results[0].errors[0]
    assert error.error_type == "timeout" and error.message == "slow did not answer within 100 ms"
    suggestion = error.suggestion or ""
    assert suggestion == timeout_suggestion("slow", 100)
    assert "CONCERTO_AGENT_TIMEOUTS=slow=1000 " in suggestion and "CONCERTO_MIN_TIMEOUT_MS=1000 " in suggestion
    # The default applies only to agents that declare nothing: the agent's own 100 ms still wins.
    result = await make_orchestrator(slow_agent(), default_timeout_ms=5000).ask("q", agent="slow")
    assert isinstance(result, OrchestratorErrorResponse)
    # What the error says to raise, raised: answered.
    for raised in ({"agent_timeouts": {"slow": 5000}}, {"min_timeout_ms": 5000}):
        result = await make_orchestrator(slow_agent(), **raised).ask("q", agent="slow")
        assert isinstance(result, OrchestratorOutput), (raised, result)
        assert result.agent_results[0].status.value == "completed"


async def test_intent_tables_give_way_to_the_users_setting(tmp_path: Path) -> None:
    table = tmp_path / "intents.yaml"
    table.write_text(
        "intents:\n  both:\n    tasks:\n      - {agent: a, timeout_ms: 20000}\n      - {agent: b}\n", encoding="utf-8"
    )
    specs = {s.name: s for s in load_intent_file(table)}
    infos = {n: AgentInfo(name=n, description=n, default_timeout_ms=7000) for n in ("a", "b")}
    decision = RouteDecision(IntentClassification(primary_intent="both", confidence=0.9, agents=["a", "b"]))
    plan, _ = await Planner(infos, specs).plan("q", decision)
    assert [t.timeout_ms for t in plan.tasks] == [20000, 7000]  # the table's, else the agent's own (not 30 s)
    planner = Planner(infos, specs, timeouts=Timeouts(per_agent={"a": 90000}, min_ms=8000))
    plan, _ = await planner.plan("q", decision)
    assert [t.timeout_ms for t in plan.tasks] == [90000, 8000]


def _with_fallback(tmp_path: Path, primary: str, fallback: str) -> Path:
    """An intent table that asks `primary` with `fallback` standing in for it on a timeout (an
    intent named after the agent is the plan of a question asked of it directly)."""
    table = tmp_path / "fallback.yaml"
    table.write_text(
        f"intents:\n  {primary}:\n    tasks:\n      - {{agent: {primary}, fallback_agent: {fallback}}}\n",
        encoding="utf-8",
    )
    return table


def backup_agent(declared_ms: int = 100, delay_s: float = 0.5) -> type[Agent]:
    """The fallback: as slow as `slow_agent`, declaring a timeout of its own."""
    cls = fake_agent("backup", delay_s=delay_s, summary="backup done")
    cls.info = cls.info.model_copy(update={"default_timeout_ms": declared_ms})
    return cls


async def test_a_fallback_runs_under_its_own_timeout_and_its_error_names_it(
    make_orchestrator: Callable[..., Orchestrator], tmp_path: Path
) -> None:
    table = _with_fallback(tmp_path, "slow", "backup")
    agents = (slow_agent(declared_ms=300), backup_agent(declared_ms=100))
    result = await make_orchestrator(*agents, intents_file=table).ask("q", agent="slow")
    assert isinstance(result, OrchestratorErrorResponse) and result.partial_results
    (response,) = result.partial_results
    assert response.used_fallback and response.agent == "backup"
    first, second = response.errors
    assert first.agent == "slow" and first.message == "slow did not answer within 300 ms"
    assert first.suggestion == timeout_suggestion("slow", 300)
    # The fallback had its own 100 ms (not slow's 300), and the error says to raise backup's.
    assert second.agent == "backup" and second.message == "backup did not answer within 100 ms"
    assert second.suggestion == timeout_suggestion("backup", 100)
    # The setting the error names, set for the fallback: it answers.
    orch = make_orchestrator(*agents, intents_file=table, agent_timeouts={"backup": 5000})
    result = await orch.ask("q", agent="slow")
    assert isinstance(result, OrchestratorOutput), result
    assert result.agent_results[0].agent == "backup" and result.response == "backup done"


def test_a_timeout_error_says_when_the_setting_misspells_the_agent() -> None:
    timeouts = Timeouts(per_agent={"segmentaton": 60000, "kpi": 45000})
    said = timeouts.suggestion("segmentation", 20000)
    assert (
        said
        == timeout_suggestion("segmentation", 20000) + " (CONCERTO_AGENT_TIMEOUTS sets segmentaton, not segmentation.)"
    )
    assert timeouts.suggestion("weather", 7500) == timeout_suggestion("weather", 7500)  # nothing like it
    assert Timeouts(per_agent={"kpi": 500}).suggestion("kpi", 500) == timeout_suggestion("kpi", 500)


def test_unknown_agent_names_are_warned_of_unless_installed_but_not_selected() -> None:
    timeouts = Timeouts(per_agent={"slow": 1, "slwo": 2, "kpi": 3, "zzz": 4})
    assert timeouts.unknown(loaded=["slow", "echo"], installed=["slow", "echo", "kpi"]) == [
        "CONCERTO_AGENT_TIMEOUTS names 'slwo', which is no agent here: its timeout is not used (did you mean slow?)",
        "CONCERTO_AGENT_TIMEOUTS names 'zzz', which is no agent here: its timeout is not used",
    ]


async def test_start_up_warns_of_agent_timeouts_for_no_agent(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """With the installed packs and `CONCERTO_AGENTS=echo`: the KPI agent is installed but not
    selected (no warning), `echoo` is no agent (a warning); start-up goes on."""
    settings = Settings(data_dir=tmp_path, store_events=False, agents="echo", agent_timeouts={"kpi": 1, "echoo": 2})
    async with Orchestrator(settings) as orch:
        assert orch.registry.names() == ["echo"]
    warned = [r.getMessage() for r in caplog.records if r.name == "concerto.orchestrator.engine"]
    assert warned == [
        "CONCERTO_AGENT_TIMEOUTS names 'echoo', which is no agent here: its timeout is not used (did you mean echo?)"
    ]
