"""Every analytics agent on the demo source, on DuckDB and PostgreSQL: the spec's response
structure and events, and the patterns the demo generator planted, found with their numbers."""

from __future__ import annotations

import re

import pytest

from _helpers.analytics import ask, output, rows
from concerto.contracts.events import EventType
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.data.demo import planted
from concerto.orchestrator.engine import Orchestrator
from concerto.orchestrator.events import EventStream

FACTS = planted()

EXAMPLES = [
    ("sql_analytics", "total sales by region"),
    ("segmentation", "segment our customers by sales tier"),
    ("pattern_recognition", "are sales trending up or down?"),
    ("opportunity", "which customers are upsell candidates?"),
    ("business_impact", "what would happen if we lost our top 5 customers?"),
    ("risk", "which customers are at risk?"),
    ("benchmark", "which regions are above average in sales?"),
    ("semantic_text", "show me all semiconductor companies"),
    ("semantic_search", "show me records about supply chain issues"),
    ("data_discovery", "what data do we have?"),
]


@pytest.mark.parametrize(("agent", "question"), EXAMPLES, ids=[a for a, _ in EXAMPLES])
async def test_each_agent_answers_in_the_specs_structure(orchestrator: Orchestrator, agent: str, question: str) -> None:
    answer = await ask(orchestrator, question)
    assert answer.agents_invoked == [agent]
    out = output(answer, agent)
    assert {"results", "insights", "queries_executed", "visualization_hint", "metadata"} <= set(out)
    assert set(out["insights"]) == {"summary", "findings", "insights", "visualization_hint"}
    assert out["insights"]["summary"] and out["insights"]["visualization_hint"] in ("bar", "line", "pie", "table")
    for result in out["results"]:
        assert {"purpose", "data", "row_count"} <= set(result)
    assert {"duration_ms", "queries_run", "total_rows"} == set(out["metadata"]) and out["metadata"]["queries_run"] >= 1
    for query in out["queries_executed"]:
        assert query["sql"].lstrip("( ").upper().startswith(("SELECT", "WITH")) and query["purpose"]


async def test_the_six_transparency_events_in_order(duck: Orchestrator) -> None:
    stream = EventStream("q")
    await duck.ask("total sales by region", events=stream)
    # The agent's own events (the executor adds "sql_analytics answered" under the agent's name too).
    mine = [e for e in stream.events if e.source == "sql_analytics" and not e.title.endswith("answered")]
    assert [e.type for e in mine] == [
        EventType.RECEIVED, EventType.THINKING, EventType.THINKING, EventType.ACTION, EventType.THINKING,
        EventType.RESULT,
    ]  # fmt: skip
    assert [e.title for e in mine][:3] == ["Received request", "Loading data context", "Analyzing and planning"]


async def test_sql_analytics_totals_match_an_independent_sum(orchestrator: Orchestrator) -> None:
    table = __import__("concerto.data.demo", fromlist=["demo_table"]).demo_table().to_pandas()
    expected = table.groupby("region")["sales"].sum().round(2).to_dict()
    out = output(await ask(orchestrator, "total sales by region"), "sql_analytics")
    got = {r["region"]: r["total_sales"] for r in rows(out)}
    assert got == pytest.approx(expected, rel=1e-9)
    assert rows(out)[0]["region"] == "West"  # ordered, largest first


async def test_segmentation_tiers_and_where_high_value_customers_are(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "segment our customers by sales tier"), "segmentation")
    tiers = {r["tier"]: r for r in rows(out, "value tiers of sales")}
    assert [tiers[t]["entities"] for t in ("High", "Medium", "Low")] == [60, 180, 60]
    assert out["segments"]["high_bound"] == tiers["High"]["high_bound"]
    out = output(await ask(orchestrator, "which region has the most high value customers?"), "segmentation")
    assert "West" in out["insights"]["summary"] and "High Value" in out["insights"]["summary"]


async def test_pattern_recognition_finds_the_growth_skew_and_the_planted_spikes(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "are sales trending up or down?"), "pattern_recognition")
    assert "upward trend" in out["insights"]["summary"]
    out = output(await ask(orchestrator, "how are sales distributed across customers?"), "pattern_recognition")
    assert re.search(
        r"right-skewed: median [\d,.]+ below mean [\d,.]+ \(skewness [\d.]+, n = 300\)", out["insights"]["summary"]
    )
    out = output(await ask(orchestrator, "find anomalies in monthly sales"), "pattern_recognition")
    found = {r["customer_id"] for r in rows(out, "outliers")}
    assert set(FACTS["anomaly_customer_ids"]) <= found


async def test_opportunity_finds_the_upsell_candidates_and_the_underserved_south(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "which customers are upsell candidates?"), "opportunity")
    found = {r["entity"] for r in rows(out, "upsell candidates")}
    planted_ids = set(FACTS["upsell_customer_ids"])
    assert len(found & planted_ids) / len(planted_ids) >= 0.8  # recall
    assert len(found & planted_ids) / len(found) >= 0.6  # precision
    out = output(await ask(orchestrator, "which region is underserved?"), "opportunity")
    assert out["insights"]["summary"].startswith(f"{FACTS['underserved_region']} is underserved")


async def test_risk_flags_the_planted_at_risk_customers_mostly_in_the_east(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "which customers are at risk?"), "risk")
    found = {r["entity"] for r in rows(out, "risk score")}
    planted_ids = set(FACTS["at_risk_customer_ids"])
    assert len(found & planted_ids) / len(planted_ids) >= 0.9
    assert len(found & planted_ids) / len(found) >= 0.8
    assert any(f"in the {FACTS['at_risk_region']} region" in f for f in out["insights"]["findings"])


async def test_benchmark_keeps_the_population_whole_around_a_named_customer(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "how does Acme Energy compare to the average customer?"), "benchmark")
    (row,) = rows(out, "against the average")
    assert row["company_name"] == "Acme Energy" and row["n"] == 300 and row["grp"] == "Energy"
    assert out["insights"]["summary"].startswith("Acme Energy is ")


async def test_business_impact_scenarios_add_up(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "what would happen if we lost our top 5 customers?"), "business_impact")
    (row,) = rows(out, "losing the top 5")
    share = 100 * row["affected"] / row["total"]
    assert f"{share:.1f}%" in out["insights"]["summary"]
    out = output(await ask(orchestrator, "what is the revenue impact of a 20% drop in the West?"), "business_impact")
    (row,) = rows(out, "affected by the change")
    assert row["affected"] < row["total"]
    assert "-20%" in out["insights"]["summary"]


async def test_semantic_text_matches_by_meaning_and_uses_in(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "show me all semiconductor companies"), "semantic_text")
    names = {r["company_name"] for r in rows(out, "matches")}
    assert names == set(FACTS["semiconductor_companies"])
    final = out["queries_executed"][-1]["sql"]
    assert " IN (" in final and "LIKE" not in final.upper() and "REGEXP" not in final.upper()
    assert any("no LLM" in n for n in out["reading"]["notes"])


async def test_semantic_search_finds_supply_chain_trouble(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "show me records about supply chain issues"), "semantic_search")
    found = rows(out, "customers nearest to")
    assert found and sum("supply chain" in r["description"] for r in found) >= 0.8 * len(found)
    assert [r["similarity"] for r in found] == sorted((r["similarity"] for r in found), reverse=True)


async def test_data_discovery_describes_every_column(orchestrator: Orchestrator) -> None:
    out = output(await ask(orchestrator, "describe the columns of the demo data"), "data_discovery")
    columns = rows(out, "columns of demo")
    assert [c["column"] for c in columns][:3] == ["customer_id", "company_name", "description"]
    assert out["insights"]["summary"].startswith("'demo' (demo_customers.parquet) holds 7,200 rows")


async def test_same_question_same_sql_and_answer_on_every_run_and_store(duck: Orchestrator, pg: Orchestrator) -> None:
    for question in ("segment our customers by sales tier", "which customers are at risk?", "total sales by region"):
        first, again, other = [await ask(o, question) for o in (duck, duck, pg)]
        assert first.response == again.response == other.response
        sql = [[q["sql"] for q in a.agent_results[0].output["queries_executed"]] for a in (first, again)]
        assert sql[0] == sql[1]


async def test_answer_values_give_a_one_cell_answer_and_a_ranking_s_names(orchestrator: Orchestrator) -> None:
    """`answer_values` (issue 28): a total as a number; "which N" as the names, in order; a
    breakdown by a category is an analysis (null)."""
    from concerto.data.demo import demo_table

    table = demo_table().to_pandas()
    total = await ask(orchestrator, "what is the total sales?")
    assert total.answer_values == [pytest.approx(round(float(table["sales"].sum()), 2))]
    by_region = table.groupby("region")["sales"].sum().sort_values(ascending=False)
    # asked of the agent itself: which agent a ranking reaches is routing's business (issue 28, item 4)
    top = await orchestrator.ask("which 2 regions have the highest total sales?", agent="sql_analytics")
    assert isinstance(top, OrchestratorOutput) and top.answer_values == list(by_region.index[:2])
    assert (await ask(orchestrator, "total sales by region")).answer_values is None


async def test_who_had_the_most_names_the_entity_not_its_number(orchestrator: Orchestrator) -> None:
    """ "who/which ... the most X" is the row with the highest X, answered with its name (a label
    column whose values are words), not the sum of X (WikiTableQuestions' commonest shape)."""
    from concerto.data.demo import demo_table

    table = demo_table().to_pandas()
    answer = await orchestrator.ask("which customer had the most sales?", agent="sql_analytics")
    assert isinstance(answer, OrchestratorOutput)
    best = table.groupby("customer_id")["sales"].sum().idxmax()
    names = set(table.loc[table["customer_id"] == best, "company_name"])
    assert answer.answer_values is not None and len(answer.answer_values) == 1
    assert answer.answer_values[0] in names
