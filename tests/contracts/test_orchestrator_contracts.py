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
