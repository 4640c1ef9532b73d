"""KPI questions through the whole engine, with every built-in agent loaded (routing included)."""

from __future__ import annotations

import pytest

from _helpers.kpi import NOW
from concerto.agents.loader import load_registry
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.resources import Resources

RANGE_N = "kpi-attrition-rate department-home-loan range-4-months start-2025-02-01 end-2025-05-31"


@pytest.mark.parametrize(
    ("question", "structured"),
    [
        (
            "kpi-attrition-rate department-home-loan month-2025-05-01",
            "kpi-attrition-rate department-home-loan month-2025-05-01",
        ),
        (
            "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31",
            "kpi-attrition-rate department-home-loan start-2025-02-01 end-2025-05-31",
        ),
        ("home-loan attrition rate last month", "kpi-attrition-rate department-home-loan month-2025-05-01"),
        ("home-loan attrition rate previous 4 months", RANGE_N),
        (RANGE_N, RANGE_N),
        (
            "What was the employee turnover in the home loan team for March 2025?",
            "kpi-attrition-rate department-home-loan month-2025-03-01",
        ),
    ],
)
async def test_spec_questions_route_to_kpi(kpi_resources: Resources, question: str, structured: str) -> None:
    async with Orchestrator(kpi_resources.settings, registry=load_registry(), resources=kpi_resources) as orch:
        result = await orch.ask(question, now=NOW)
    assert isinstance(result, OrchestratorOutput), result
    assert result.agents_invoked == ["kpi"]
    output = result.agent_results[0].output
    assert output["structured_query"] == structured
    assert "Home-loan attrition rate" in result.response


async def test_invalid_format_fails_with_the_proper_format(kpi_resources: Resources) -> None:
    async with Orchestrator(kpi_resources.settings, registry=load_registry(), resources=kpi_resources) as orch:
        result = await orch.ask("kpi-attrition-rate month-2025-05-01", now=NOW)
    assert isinstance(result, OrchestratorErrorResponse)
    assert "kpi-{kpi_name} department-{department} month-{YYYY-MM-DD}" in result.error_message
    assert "Example: kpi-attrition-rate department-home-loan month-2025-05-01" in result.error_message
