"""A period is answered as asked or refused by name, never replaced by another (issue 26).

Not in the calendar ("Q5 2025", "February 30 2025"): the spec's structured date error,
naming it. Not in the store ("March 9999", "in 1850", next month with no data yet): 000's
"No data found for specified period", naming the period and the months the store holds.
No period at all: last month, and the answer says so in words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers.kpi import NOW, ask, failure
from concerto.agents.base import AgentContext
from concerto.agents.loader import load_registry
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.kpi.agent import NO_DATA, KPIAgent
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import KPIRecord
from concerto.packs.kpi.store import get_store
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context

HELD = "from January 2023 to December 2026"  # the demo data's months


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("home-loan attrition rate in March 9999", "in March 9999"),
        ("home-loan attrition rate in 1850", "December 1850"),
        ("home-loan attrition rate in Q1 2030", "between January and March 2030"),
        ("compare attrition of home-loan and credit-card in 1850", "December 1850"),
    ],
)
async def test_a_period_the_store_does_not_hold_is_named_with_what_it_holds(
    agent: KPIAgent, context: AgentContext, question: str, named: str
) -> None:
    err = await failure(agent, context, question)
    assert err.error_type == "no_data" and err.message.startswith(NO_DATA)
    assert named in err.message and HELD in err.message
    assert "May 2025" not in err.message and "March 2025" not in err.message
    assert err.details["held"][0]["first"] == "2023-01"


@pytest.mark.parametrize(
    ("question", "named", "reason"),
    [
        ("home-loan attrition rate in Q5 2025", "q5 2025", "Q1 to Q4"),
        ("home-loan attrition rate February 30 2025", "february 30 2025", "February 2025 has 28 days"),
        ("home-loan attrition rate in H3 2024", "h3 2024", "H1 to H2"),
        ("home-loan attrition rate in 2025-13", "2025-13", "1..12"),
        ("home-loan attrition rate next fortnight", "next", "names no month"),
        ("home-loan attrition rate 2024", "2024", "names no month"),
    ],
)
async def test_a_period_the_calendar_does_not_have_is_a_date_error_naming_it(
    agent: KPIAgent, context: AgentContext, question: str, named: str, reason: str
) -> None:
    err = await failure(agent, context, question)
    assert err.error_type == "invalid_date"
    assert f"'{named}'" in err.message and reason in err.message
    assert err.details["period"] == named


async def test_next_month_is_answered_when_the_store_holds_it(agent: KPIAgent, context: AgentContext) -> None:
    result = await ask(agent, context, "home-loan attrition rate next month")
    assert result.output["structured_query"].endswith("month-2025-07-01")


async def test_next_month_with_no_data_yet_is_no_data_not_last_month(tmp_path: Path, kpi_resources: Resources) -> None:
    settings = Settings(data_dir=tmp_path)
    resources = Resources(settings)
    resources.put("embedder", kpi_resources.embedder)
    get_store(settings, resources).add(
        [KPIRecord("attrition-rate", "home-loan", Month(2025, m), 3.0, "%") for m in range(1, 6)]
    )
    agent = KPIAgent(settings, resources)
    context = make_context(now=NOW, settings=settings, resources=resources, agent="kpi")
    err = await failure(agent, context, "home-loan attrition rate next month")
    assert err.error_type == "no_data"
    assert "in July 2025" in err.message and "from January 2025 to May 2025" in err.message


async def test_no_period_is_last_month_and_the_answer_says_so(agent: KPIAgent, context: AgentContext) -> None:
    result = await ask(agent, context, "home-loan attrition rate")
    assert result.output["structured_query"].endswith("month-2025-05-01")
    assert (result.summary or "").startswith("No period was named, so this is last month, May 2025.")
    assert result.key_findings[0] == "No period was named, so this is last month, May 2025."
    compared = await ask(agent, context, "compare attrition of home-loan and credit-card")
    assert (compared.summary or "").startswith("No period was named")
    named = await ask(agent, context, "home-loan attrition rate last month")
    assert "No period was named" not in (named.summary or "")


async def test_a_time_word_beside_a_read_period_is_an_unanswered_part(agent: KPIAgent, context: AgentContext) -> None:
    result = await ask(agent, context, "home-loan attrition rate in March 2025 and on mondays")
    assert result.output["structured_query"].endswith("month-2025-03-01")
    (part,) = result.unanswered
    assert part.part == "'mondays'" and part.error_type == "invalid_date"


async def test_through_the_orchestrator_the_words_reach_the_user(kpi_resources: Resources) -> None:
    async with Orchestrator(kpi_resources.settings, registry=load_registry(), resources=kpi_resources) as orch:
        assumed = await orch.ask("home-loan attrition rate", now=NOW)
        absent = await orch.ask("home-loan attrition rate in March 9999", now=NOW)
        impossible = await orch.ask("home-loan attrition rate in Q5 2025", now=NOW)
    assert isinstance(assumed, OrchestratorOutput), assumed
    assert "No period was named, so this is last month, May 2025." in assumed.response
    assert isinstance(absent, OrchestratorErrorResponse), absent
    assert "March 9999" in absent.error_message and HELD in absent.error_message
    assert isinstance(impossible, OrchestratorErrorResponse), impossible
    assert "q5 2025" in impossible.error_message and "Q1 to Q4" in impossible.error_message
