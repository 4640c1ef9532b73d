"""The error contract's safety net: an agent error or an orchestrator error built from a URL with
its password (by an agent someone forgot to fix, or a library's message) does not show it."""

from __future__ import annotations

from concerto.contracts import AgentDispatchResponse, AgentError, ExecutionStatus, OrchestratorErrorResponse
from concerto.contracts.orchestrator import IntentClassification, OrchestratorOutput

PASSWORD = "s3cret-PASSWORD"
URL = f"http://user:{PASSWORD}@127.0.0.1:9"


def test_agent_errors_are_scrubbed() -> None:
    error = AgentError(
        agent="a",
        message=f"cannot reach {URL}",
        suggestion=f"check {URL}",
        details={"url": URL, "password": PASSWORD, "n": 3},
    )
    assert PASSWORD not in error.model_dump_json()
    assert error.message == "cannot reach http://user:***@127.0.0.1:9"
    assert error.details == {"url": "http://user:***@127.0.0.1:9", "password": "***", "n": 3}


def test_orchestrator_errors_and_notes_are_scrubbed() -> None:
    partial = AgentDispatchResponse(
        agent="a", status=ExecutionStatus.FAILED, errors=[AgentError(agent="a", message=f"down: {URL}")]
    )
    error = OrchestratorErrorResponse(
        error_message=f"a could not answer: {URL}",
        error_category="all_agents_failed",
        partial_results=[partial],
        alternative_queries=[f"check {URL}"],
    )
    assert PASSWORD not in error.model_dump_json()
    output = OrchestratorOutput(
        response="ok",
        response_type="direct",
        agents_invoked=[],
        agent_results=[],
        total_latency_ms=1,
        intent_classification=IntentClassification(primary_intent="x", confidence=1),
        notes=[f"LLM endpoint {URL}/v1/chat/completions is unreachable"],
    )
    assert output.notes == ["LLM endpoint http://user:***@127.0.0.1:9/v1/chat/completions is unreachable"]
