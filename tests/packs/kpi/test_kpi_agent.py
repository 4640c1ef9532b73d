"""The `kpi` agent on the demo data: every spec example, meaning-based names, errors."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers.kpi import NOW, ask, failure
from concerto.agents.base import AgentContext, AgentFailure
from concerto.agents.loader import load_registry
from concerto.packs.kpi.agent import NO_DATA, KPIAgent
from concerto.packs.kpi.formats import KPIQuery
from concerto.packs.kpi.interpret import read_request
from concerto.packs.kpi.store import KPIStore
from concerto.testing import run_agent

SINGLE = "kpi-attrition-rate department-home-loan month-2025-05-01"
RANGE = "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31"
RANGE_N = "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31"
SPEC = {
    SINGLE: SINGLE,
    RANGE: RANGE,
    "home-loan attrition rate last month": SINGLE,
    "home-loan attrition rate previous 4 months": RANGE_N,
    RANGE_N: RANGE_N,
    # the spec's `last|previous \d+ months?` pattern, read by the agent itself
    "kpi-attrition-rate department-home-loan previous 4 months": RANGE_N,
    "kpi-attrition-rate department-home-loan last month": SINGLE,
}


def test_registered_with_the_fixed_name() -> None:
    registry = load_registry("kpi")
    assert registry.get("kpi") is KPIAgent
    assert KPIAgent.info.pack == "kpi" and KPIAgent.info.examples


@pytest.mark.parametrize(("question", "expected"), list(SPEC.items()))
async def test_spec_testing_formats(agent: KPIAgent, context: AgentContext, question: str, expected: str) -> None:
    result = await ask(agent, context, question)
    assert result.output["structured_query"] == expected
    assert result.output["records"]
    assert all(r["kpi"] == "attrition-rate" and r["department"] == "home-loan" for r in result.output["records"])


async def test_single_month_answer(agent: KPIAgent, context: AgentContext, store: KPIStore) -> None:
    result = await ask(agent, context, SINGLE)
    (record,) = result.output["records"]
    assert record["month"] == "2025-05-01" and record["unit"] == "%"
    assert "statistics" not in result.output
    assert re.fullmatch(r"Home-loan attrition rate was \d+\.\d+% in May 2025\.", result.summary or "")


async def test_range_answer_has_change_min_max_trend(agent: KPIAgent, context: AgentContext) -> None:
    result = await ask(agent, context, "home-loan attrition rate previous 4 months")
    records = result.output["records"]
    assert [r["month"] for r in records] == ["2025-02-01", "2025-03-01", "2025-04-01", "2025-05-01"]
    stats = result.output["statistics"]
    values = [r["value"] for r in records]
    assert stats["min"] == min(values) and stats["max"] == max(values)
    assert stats["change"] == pytest.approx(values[-1] - values[0])
    assert stats["trend"] in {"rising", "falling", "stable"}
    assert re.fullmatch(
        r"Home-loan attrition rate (rose from|fell from|was unchanged at) .* between February and "
        r"May 2025 \(min .*%, max .*%, trend (rising|falling|stable)\)\.",
        result.summary or "",
    )


@pytest.mark.parametrize(
    ("question", "kpi", "department"),
    [
        ("What was the employee turnover in the home loan team for March 2025?", "attrition-rate", "home-loan"),
        ("attrition for home loans last month", "attrition-rate", "home-loan"),
        ("staff turnover in mortgages previous 3 months", "attrition-rate", "home-loan"),
        ("credit card customer satisfaction from February to May 2025", "customer-satisfaction", "credit-card"),
        ("call centre handling time last month", "average-handling-time", "customer-service"),
        ("revenue of wealth management this year so far", "revenue", "wealth-management"),
        ("How many people work in wealth management?", "headcount", "wealth-management"),
        ("sick leave in customer service in May 2025", "absenteeism-rate", "customer-service"),
        ("what did the mortgage team earn last year", "revenue", "home-loan"),
    ],
)
async def test_names_matched_by_meaning(
    agent: KPIAgent, context: AgentContext, question: str, kpi: str, department: str
) -> None:
    result = await ask(agent, context, question)
    assert (result.output["kpi"], result.output["department"]) == (kpi, department)
    assert result.output["structured_query"].startswith(f"kpi-{kpi} department-{department} ")


async def test_no_data(agent: KPIAgent, context: AgentContext) -> None:
    err = await failure(agent, context, "kpi-attrition-rate department-home-loan month-2030-05-01")
    assert err.message.startswith(NO_DATA) and err.error_type == "no_data"
    assert "in May 2030" in err.message and "from January 2023 to December 2026" in err.message
    assert err.output["structured_query"].endswith("month-2030-05-01")
    assert "2023-01" in (err.suggestion or "")


@pytest.mark.parametrize(
    ("question", "error_type", "named"),
    [
        ("kpi-attrition department-home-loan month-2025-05-01", "unknown_kpi", "attrition-rate"),
        ("kpi-attrition-rate department-home-loans month-2025-05-01", "unknown_department", "home-loan"),
        ("attrition rate of the zebra department last month", "unknown_department", "home-loan"),
        ("attrition rate last month", "missing_department", "home-loan"),
    ],
)
async def test_unknown_names_get_suggestions(
    agent: KPIAgent, context: AgentContext, question: str, error_type: str, named: str
) -> None:
    err = await failure(agent, context, question)
    assert err.error_type == error_type
    assert named in err.message


@pytest.mark.parametrize(
    ("question", "error_type"),
    [
        ("kpi-attrition-rate department-home-loan month-2025-13-01", "invalid_date"),
        ("kpi-attrition-rate department-home-loan month-2025-05-32", "invalid_date"),
        ("kpi-attrition-rate department-home-loan start-2025-05-01 end-2025-02-28", "invalid_format"),
        ("kpi-attrition-rate month-2025-05-01", "invalid_format"),
        ("home-loan attrition rate for 2025-13", "invalid_date"),
        ("home-loan attrition rate " + "x" * 10_000, "invalid_input"),
        ("x" * 10_000, "invalid_input"),
    ],
)
async def test_bad_input(agent: KPIAgent, context: AgentContext, question: str, error_type: str) -> None:
    err = await failure(agent, context, question)
    assert err.error_type == error_type
    assert len(err.message) < 1500


def test_match_structured_claims_only_the_format(agent: KPIAgent) -> None:
    assert agent.match_structured(SINGLE) == {"query": SINGLE}
    assert agent.match_structured("kpi-attrition-rate month-2025-05-01") is not None
    assert agent.match_structured("home-loan attrition rate last month") is None
    assert agent.match_structured("what is a kpi?") is None


async def test_prepare_returns_the_agreed_format(agent: KPIAgent, context: AgentContext) -> None:
    inputs: dict[str, Any] = await agent.prepare("home-loan attrition rate last month", context)
    assert inputs["query"] == "kpi-attrition-rate department-home-loan month-2025-05-01"
    assert inputs["interpretation"]["department"]["method"] == "exact"


async def test_run_accepts_plain_language_without_prepare(agent: KPIAgent, context: AgentContext) -> None:
    result = await run_agent(agent, context, "home-loan attrition rate last month", inputs={})
    assert result.output["structured_query"].endswith("month-2025-05-01")


async def test_output_shows_the_metadata_filter(agent: KPIAgent, context: AgentContext) -> None:
    result = await ask(agent, context, "kpi-attrition-rate department-home-loan start-2024-11-01 end-2025-02-28")
    store = result.output["store"]
    assert store["where"] == {"block": {"$in": ["attrition-rate|home-loan|2024", "attrition-rate|home-loan|2025"]}}
    assert store["months"] == [202411, 202502]
    assert [r["month"] for r in result.output["records"]] == ["2024-11-01", "2024-12-01", "2025-01-01", "2025-02-01"]


def test_importing_the_pack_loads_neither_chromadb_nor_numpy() -> None:
    code = (
        "import sys, concerto.packs.kpi, concerto.packs.kpi.cli; "
        "print([m for m in ('chromadb', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "home loan",
                    "attrition",
                    "last",
                    "month",
                    "months",
                    "from",
                    "to",
                    "May",
                    "2025",
                    "2025-13",
                    "previous",
                    "12",
                    "since",
                    "Q5",
                    "kpi",
                    "-",
                    "turnover",
                    "team",
                ]
            ),
            st.text(max_size=12),
        ),
        max_size=10,
    )
)
def test_any_question_is_a_query_or_an_agent_failure(store: KPIStore, words: list[str]) -> None:
    question = " ".join(words)
    try:
        asked = read_request(question, NOW.date(), store.catalog(), store.embedder)
    except AgentFailure as failure:
        assert failure.error_type in {
            "invalid_date",
            "invalid_input",
            "unknown_kpi",
            "unknown_department",
            "missing_kpi",
            "missing_department",
        }
    else:
        assert asked.queries
        for query in asked.queries:
            assert KPIQuery.parse(query.to_text()) == query
        if len(asked.queries) == 1 and isinstance(asked.interpretation["kpi"], dict):
            assert asked.interpretation["kpi"]["name"] == asked.queries[0].kpi
