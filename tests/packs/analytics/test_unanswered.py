"""Never half an answer: a breakdown or a place the source cannot explain is named in the
answer (an error entry and a finding) while the rest is answered, on both stores."""

from __future__ import annotations

import pytest

from _helpers.analytics import ask
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator

LEFT_OUT = [
    ("average sales by region and by planet", "sql_analytics", "'by planet'"),
    ("segment customers by sales and by zodiac sign", "segmentation", "'by zodiac'"),
    ("total sales in the Atlantis region", "sql_analytics", "'atlantis region'"),
]


@pytest.mark.parametrize(("question", "agent", "part"), LEFT_OUT)
async def test_a_part_the_source_cannot_answer_is_named(
    orchestrator: Orchestrator, question: str, agent: str, part: str
) -> None:
    answer = await ask(orchestrator, question)
    (result,) = [r for r in answer.agent_results if r.agent == agent]
    assert result.status == "completed" and result.summary
    assert [e.details.get("part") for e in result.errors] == [part]
    assert result.errors[0].error_type == "unknown_term"
    assert any(f.startswith(f"Not answered: {part}") for f in answer.key_findings)
    assert f"Not answered: {part}" in answer.response


@pytest.mark.parametrize("question", ["total sales by region", "average engagement score by segment"])
async def test_a_question_the_source_explains_has_no_unanswered_part(orchestrator: Orchestrator, question: str) -> None:
    answer = await ask(orchestrator, question)
    assert all(not r.errors for r in answer.agent_results), [r.errors for r in answer.agent_results]
    assert "Not answered" not in answer.response


async def test_a_condition_on_a_number_is_named_as_not_applied(orchestrator: Orchestrator) -> None:
    """ "over 20,000" is not read yet (issue 28): the answer says so, and gives no values that
    would look like the condition's answer."""
    answer = await orchestrator.ask("how many customers have sales over 20,000?", agent="sql_analytics")
    assert isinstance(answer, OrchestratorOutput)
    assert "Not answered: 'over 20,000': not applied" in answer.response
    assert answer.answer_values is None
