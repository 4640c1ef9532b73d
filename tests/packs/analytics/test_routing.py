"""Which agent a question reaches, with every built-in pack loaded: the analytics agents by what
they declare (no keyword lists), and data-aware routing by what agents hold (a loaded
table's columns, the KPI store's names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers.analytics import make_orchestrator
from concerto.data.sources import store_for
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.engine import Orchestrator

ROUTES = [
    ("what were total sales in each region?", "sql_analytics"),
    ("average engagement score by segment", "sql_analytics"),
    ("top 10 customers by sales", "sql_analytics"),
    ("group our customers into value tiers", "segmentation"),
    ("split customers into high, medium and low value groups", "segmentation"),
    ("are sales going up or down over time?", "pattern_recognition"),
    ("are there any unusual spikes in sales?", "pattern_recognition"),
    ("where could we grow revenue?", "opportunity"),
    ("which accounts are good cross-sell targets?", "opportunity"),
    ("what happens to revenue if prices rise 5%?", "business_impact"),
    ("forecast sales for the next quarter", "business_impact"),
    ("which customers might churn?", "risk"),
    ("show red flags in our customer base", "risk"),
    ("how does Acme Energy stack up against its peers?", "benchmark"),
    ("best performing customer in each region", "benchmark"),
    ("find the chip makers among our customers", "semantic_text"),
    ("customers with descriptions similar to Zenith Labs", "semantic_search"),
    ("what columns does the demo table have?", "data_discovery"),
    ("load sales.csv as sales", "data_ingestion"),
]
ELSEWHERE = [
    ("what's the weather in Seattle?", "temperature"),
    ("what time is it in Chicago?", "datetime"),
    ("home-loan attrition rate previous 4 months", "kpi"),
]


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Orchestrator:
    """Every built-in pack, as a user has them."""
    return make_orchestrator(tmp_path_factory.mktemp("routing"), embedder, agents=None)


@pytest.mark.parametrize(("question", "agent"), ROUTES + ELSEWHERE)
async def test_questions_reach_the_agent_that_answers_them(everything: Orchestrator, question: str, agent: str) -> None:
    decision = await everything.router.route(question)
    assert decision.classification.agents[:1] == [agent], decision.classification.reasoning


async def test_cpu_usage_does_not_reach_the_table_agents(everything: Orchestrator) -> None:
    decision = await everything.router.route("show CPU usage for the last hour")
    assert decision.classification.agents[:1] == ["metrics_agent"]


async def test_a_step_after_another_is_planned_after_it(everything: Orchestrator) -> None:
    question = "segment customers by sales value, then show the sales trend of each segment"
    decision = await everything.router.route(question)
    assert [agent for agent, _ in decision.steps] == ["segmentation", "pattern_recognition"]
    plan, _ = await everything._planner.plan(question, decision)
    assert [t.depends_on for t in plan.tasks] == [[], [plan.tasks[0].task_id]]
    answer = await everything.ask(question)
    trend = answer.agent_results[1].output  # type: ignore[union-attr]
    assert trend["results"][0]["chart"] == {"type": "line", "x": "period", "y": ["value"], "series": "grp"}
    assert {r["grp"] for r in trend["results"][0]["data"]} == {"High", "Medium", "Low"}


async def test_a_column_of_the_users_own_table_reaches_the_analytics_agents(tmp_path: Path, embedder: Embedder) -> None:
    orchestrator = make_orchestrator(tmp_path / "data", embedder, agents=None)
    question = "median widget yield per plant"
    before = await orchestrator.router.route(question)
    csv = tmp_path / "factory.csv"
    csv.write_text("plant,widget_yield,day\nA,0.91,2025-01-01\nB,0.87,2025-01-01\nA,0.93,2025-01-02\n")
    store_for(orchestrator.settings, orchestrator.resources).load(csv, "factory")
    after = await orchestrator.router.route(question)
    assert after.classification.agents[:1] == ["sql_analytics"]
    assert before.classification.agents[:1] != ["sql_analytics"] or before.classification.confidence < (
        after.classification.confidence
    )
    answer = await orchestrator.ask(question)
    assert "A" in answer.response and "0.92" in answer.response  # type: ignore[union-attr]


async def test_a_kpi_the_user_loaded_reaches_the_kpi_agent(tmp_path: Path, embedder: Embedder) -> None:
    from concerto.packs.kpi.held import write_names

    orchestrator = make_orchestrator(tmp_path / "data", embedder, agents=None)
    write_names(tmp_path / "data", ["probe-yield"], ["probe-desk"])  # what `concerto kpi load` records
    decision = await orchestrator.router.route("probe-yield for probe-desk last 2 months")
    assert decision.classification.agents[:1] == ["kpi"]
