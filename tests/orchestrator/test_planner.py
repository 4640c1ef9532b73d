"""Planner: intent table, validation (unknown agents, cycles, timeouts), LLM plans with fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concerto.agents.base import AgentInfo
from concerto.contracts.orchestrator import IntentClassification
from concerto.contracts.plan import AgentTask, OrchestrationPlan
from concerto.llm.base import LLMError
from concerto.orchestrator.intents import IntentTableError, load_intent_file, load_intents
from concerto.orchestrator.planner import PlanError, Planner, validate_plan
from concerto.orchestrator.router import RouteDecision
from concerto.packs.commercial.pack import pack as commercial
from concerto.testing import ScriptedLLM

COMMERCIAL = [
    "causal_impact",
    "heterogeneous_optimizer",
    "gap_analyzer",
    "experiment_designer",
    "prediction_synthesizer",
    "resource_optimizer",
    "health_score",
    "drift_monitor",
    "explainer",
]
COMMERCIAL_TABLE = commercial.intents  # 001's INTENT_TO_AGENTS, shipped by the commercial pack


def infos(*names: str) -> dict[str, AgentInfo]:
    return {n: AgentInfo(name=n, description=f"agent {n}", default_timeout_ms=1000) for n in names}


def decision(*agents: str, intent: str | None = None) -> RouteDecision:
    return RouteDecision(IntentClassification(primary_intent=intent or agents[0], confidence=0.9, agents=list(agents)))


def test_validate_rejects_unknown_agent() -> None:
    plan = OrchestrationPlan(tasks=[AgentTask(task_id="a", agent="nope")])
    with pytest.raises(PlanError, match="unknown agent 'nope'"):
        validate_plan(plan, {"echo"})


def test_validate_rejects_cycle_and_names_it() -> None:
    plan = OrchestrationPlan(
        tasks=[
            AgentTask(task_id="a", agent="echo", depends_on=["b"]),
            AgentTask(task_id="b", agent="echo", depends_on=["a"]),
        ]
    )
    with pytest.raises(PlanError, match=r"cycle: a -> b -> a"):
        validate_plan(plan, {"echo"})


def test_validate_rejects_unknown_dependency_and_duplicates() -> None:
    with pytest.raises(PlanError, match="unknown task"):
        validate_plan(OrchestrationPlan(tasks=[AgentTask(task_id="a", agent="echo", depends_on=["z"])]), {"echo"})
    with pytest.raises(PlanError, match="duplicate"):
        validate_plan(
            OrchestrationPlan(tasks=[AgentTask(task_id="a", agent="echo"), AgentTask(task_id="a", agent="echo")]),
            {"echo"},
        )


def test_timeouts_out_of_bounds_are_refused_by_the_contract() -> None:
    with pytest.raises(ValueError):
        AgentTask(task_id="a", agent="echo", timeout_ms=0)
    with pytest.raises(ValueError):
        AgentTask(task_id="a", agent="echo", timeout_ms=10**9)


def test_commercial_table_is_the_spec_table_with_group_semantics() -> None:
    table = load_intents(set(COMMERCIAL), COMMERCIAL_TABLE)
    assert set(table) == {
        "causal_effect",
        "segment_optimization",
        "opportunity_analysis",
        "experiment_design",
        "prediction",
        "resource_allocation",
        "system_health",
        "explanation",
        "comprehensive_analysis",
    }
    comp = {t.agent: t for t in table["comprehensive_analysis"].to_tasks("q")}
    assert comp["explainer"].depends_on == [comp["causal_impact"].task_id, comp["gap_analyzer"].task_id]
    assert comp["causal_impact"].depends_on == [] and comp["gap_analyzer"].depends_on == []
    health = table["system_health"].to_tasks("q")
    assert all(t.depends_on == [] for t in health)
    assert table["causal_effect"].tasks[0].input_payload == {"analysis_type": "effect_estimation"}


def test_intents_with_missing_agents_are_inactive() -> None:
    assert load_intents({"echo"}, COMMERCIAL_TABLE) == {}


def test_bad_intent_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("intents: {x: {tasks: []}}")
    with pytest.raises(IntentTableError, match="intent 'x' is invalid"):
        load_intent_file(bad)
    bad.write_text(": : :")
    with pytest.raises(IntentTableError):
        load_intent_file(bad)


async def test_table_plan_for_named_intent() -> None:
    planner = Planner(infos(*COMMERCIAL), load_intents(set(COMMERCIAL), COMMERCIAL_TABLE))
    plan, notes = await planner.plan(
        "q", decision("causal_impact", "gap_analyzer", "explainer", intent="comprehensive_analysis")
    )
    assert plan.source == "table" and plan.strategy.value == "sequential" and not notes
    assert [t.agent for t in plan.tasks] == ["causal_impact", "gap_analyzer", "explainer"]


async def test_default_plan_is_parallel_with_agent_timeouts() -> None:
    planner = Planner(infos("a", "b"), {})
    plan, _ = await planner.plan("q", decision("a", "b"))
    assert plan.strategy.value == "parallel" and [t.timeout_ms for t in plan.tasks] == [1000, 1000]


async def test_llm_plan_is_used_when_valid() -> None:
    reply = json.dumps(
        {
            "strategy": "sequential",
            "reasoning": "b needs a",
            "tasks": [
                {"task_id": "1", "agent": "a", "request": "part a"},
                {"task_id": "2", "agent": "b", "request": "part b", "depends_on": ["1"]},
            ],
        }
    )
    planner = Planner(infos("a", "b"), {}, llm=ScriptedLLM([reply]))
    plan, notes = await planner.plan("q", decision("a", "b"))
    assert plan.source == "llm" and plan.reasoning == "b needs a" and not notes
    assert plan.tasks[1].depends_on == ["1"] and plan.tasks[1].request == "part b"


@pytest.mark.parametrize(
    "replies",
    [
        ["not json", "still not json"],
        [json.dumps({"reasoning": "x", "tasks": [{"task_id": "1", "agent": "ghost"}]})],
        [
            json.dumps(
                {
                    "reasoning": "x",
                    "tasks": [
                        {"task_id": "1", "agent": "a", "depends_on": ["2"]},
                        {"task_id": "2", "agent": "b", "depends_on": ["1"]},
                    ],
                }
            )
        ],
        [LLMError("timed out", kind="timeout")],
    ],
)
async def test_llm_plan_falls_back_to_deterministic_and_says_so(replies: list[object]) -> None:
    planner = Planner(infos("a", "b"), {}, llm=ScriptedLLM(replies), llm_retries=1)  # type: ignore[arg-type]
    plan, notes = await planner.plan("q", decision("a", "b"))
    assert plan.source == "default" and len(plan.tasks) == 2
    assert notes and "LLM plan rejected" in notes[0]


async def test_max_concurrency_comes_from_agent_declarations() -> None:
    declared = infos("a", "b") | {"c": AgentInfo(name="c", description="c", max_concurrency=2)}
    plan, _ = await Planner(declared, {}).plan("q", decision("a", "c"))
    assert plan.max_concurrency == 2


async def test_agents_without_their_own_timeout_get_the_configured_default() -> None:
    """`CONCERTO_DEFAULT_TIMEOUT_MS` reaches the plan (the planner hard-coded 30 s before)."""
    own = AgentInfo(name="own", description="has a timeout", default_timeout_ms=1000)
    plain = AgentInfo(name="plain", description="declares none")
    planner = Planner({"own": own, "plain": plain}, {}, default_timeout_ms=1234)
    plan, _ = await planner.plan("q", decision("own", "plain"))
    assert [t.timeout_ms for t in plan.tasks] == [1000, 1234]
