"""Validation rules of the orchestrator contracts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from concerto.contracts import AgentDispatchRequest, IntentClassification, OrchestratorInput


def test_query_limits() -> None:
    assert OrchestratorInput(query="  hi  ").query == "hi"
    assert len(OrchestratorInput(query="x" * 499).query) == 499
    for bad in ("", " \n ", "x" * 500):
        with pytest.raises(ValidationError):
            OrchestratorInput(query=bad)


def test_unknown_fields_and_bad_choices_are_refused() -> None:
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", output_format="poem")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", surprise=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", max_latency_ms=0)


def test_dispatch_request_defaults_match_the_spec() -> None:
    req = AgentDispatchRequest(agent="echo")
    assert (req.priority, req.timeout_ms, req.wait_for_group) == (5, 30000, True)
    assert [k.value for k in req.fallback_on] == ["timeout", "error"]
    with pytest.raises(ValidationError):
        AgentDispatchRequest(agent="echo", priority=11)


def test_confidence_bounds() -> None:
    with pytest.raises(ValidationError):
        IntentClassification(primary_intent="x", confidence=1.5)


def test_the_input_takes_exactly_its_json_types() -> None:
    """Strict: text for text, numbers for numbers (the API's OpenAPI document says so)."""
    for bad in ({"max_latency_ms": "5000"}, {"max_latency_ms": True}, {"brand": 3}, {"query_id": 12}):
        with pytest.raises(ValidationError):
            OrchestratorInput.model_validate({"query": "q", **bad})
    assert OrchestratorInput.model_validate({"query": "q", "max_latency_ms": 662.0}).max_latency_ms == 662


def test_per_question_parameters() -> None:
    plain = OrchestratorInput(query="q")
    assert plain.payload_parameters() == {}
    full = OrchestratorInput(query="q", source="sales", context="Q3", parameters={"treatment": "samples", "k": 3})
    assert full.payload_parameters() == {"treatment": "samples", "k": 3, "source": "sales", "context": "Q3"}
    for bad in ({"request": "x"}, {"previous_results": []}, {"9lives": 1}, {"has space": 1}):
        with pytest.raises(ValidationError):
            OrchestratorInput(query="q", parameters=bad)
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", parameters={f"p{i}": i for i in range(33)})
    with pytest.raises(ValidationError):
        OrchestratorInput(query="q", context="x" * 4001)
