"""Router cascade: structured formats first, then semantic matching (real local model), then the LLM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from concerto.agents.base import Agent, AgentContext, AgentInfo, AgentResult
from concerto.agents.registry import AgentRegistry
from concerto.agents.task import TaskInput
from concerto.llm.base import LLMError
from concerto.nlp.embeddings import LocalEmbedder
from concerto.orchestrator.router import Router
from concerto.orchestrator.semantic import SemanticIndex, clauses
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import ScriptedLLM


def declared(name: str, description: str, examples: list[str], structured_prefix: str | None = None) -> type[Agent]:
    class _A(Agent):
        info = AgentInfo(name=name, description=description, examples=examples)

        def match_structured(self, text: str) -> dict[str, Any] | None:
            if structured_prefix and text.startswith(structured_prefix):
                return {"raw": text}
            return None

        async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
            return AgentResult()

    return _A


AGENTS = [
    declared(
        "weather",
        "Current temperature and weather conditions in a US city",
        ["what's the temperature in Denver?", "is it raining in Boston?"],
    ),
    declared(
        "clock",
        "Current local date and time in a US city, with its timezone",
        ["what time is it in Chicago?", "what's the date in Honolulu right now?"],
    ),
    declared(
        "kpis",
        "Business KPIs such as attrition rate by department and month",
        ["home-loan attrition rate last month"],
        structured_prefix="kpi-",
    ),
]

_EMBEDDER = LocalEmbedder()


def router(llm: Any = None) -> Router:
    reg = AgentRegistry(AGENTS)
    settings = Settings()
    agents = {n: reg.get(n)(settings, Resources(settings)) for n in reg.names()}
    index = SemanticIndex(Router.targets(reg.infos(), {}), _EMBEDDER)
    return Router(agents, {}, index, threshold=0.35, llm=llm)


async def test_structured_format_wins_with_method_pattern() -> None:
    d = await router().route("kpi-attrition-rate department-home-loan month-2025-05-01")
    c = d.classification
    assert (c.classification_method, c.confidence, c.agents) == ("pattern", 1.0, ["kpis"])
    assert d.structured["kpis"] == {"raw": "kpi-attrition-rate department-home-loan month-2025-05-01"}


@pytest.mark.parametrize(
    ("question", "agent"),
    [
        ("how warm is it in Seattle today?", "weather"),
        ("what's the local time in Phoenix", "clock"),
        ("employee attrition for the mortgage team in March", "kpis"),
    ],
)
async def test_semantic_routes_by_meaning(question: str, agent: str) -> None:
    c = (await router().route(question)).classification
    assert c.classification_method == "semantic"
    assert c.agents == [agent]
    assert 0.35 <= c.confidence <= 1
    assert c.classification_latency_ms > 0


async def test_two_part_question_selects_both_agents() -> None:
    c = (await router().route("what's the weather and the time in Seattle?")).classification
    assert set(c.agents) == {"weather", "clock"}


async def test_nothing_fits() -> None:
    c = (await router().route("compose a sonnet about cheese")).classification
    assert c.agents == [] and c.primary_intent == "none"


async def test_llm_is_asked_only_when_semantic_is_not_confident() -> None:
    llm = ScriptedLLM([json.dumps({"agents": ["weather"], "confidence": 0.8, "reasoning": "umbrella"})])
    d = await router(llm).route("compose a sonnet about cheese")
    assert d.classification.classification_method == "llm" and d.classification.agents == ["weather"]
    confident = ScriptedLLM([])
    d = await router(confident).route("what time is it in Chicago?")
    assert d.classification.classification_method == "semantic" and confident.calls == []


@pytest.mark.parametrize("reply", ["{not json", json.dumps({"agents": ["ghost"]}), LLMError("down", kind="timeout")])
async def test_llm_failure_falls_back_to_semantic_and_says_so(reply: object) -> None:
    llm = ScriptedLLM([reply, reply])  # type: ignore[list-item]
    d = await router(llm).route("compose a sonnet about cheese")
    assert d.classification.classification_method == "semantic"
    assert any("LLM routing" in n for n in d.notes)


def test_clauses() -> None:
    assert clauses("what's the weather and the time in Seattle?") == ["what's the weather", "the time in Seattle?"]
    assert clauses("CPU usage") == ["CPU usage"]
