"""Handoff YAML documents of 001_*.txt: the spec's own examples round-trip exactly."""

from __future__ import annotations

import pytest
import yaml

from concerto.contracts.handoff import AgentToOrchestrator, HandoffError, OrchestratorSynthesis, OrchestratorToAgent

REQUEST = """\
orchestrator_to_agent:
  source_agent: orchestrator
  target_agent: causal_impact
  handoff_type: request
  priority: 1
  timeout_ms: 30000

  payload:
    query: "What's the impact of increased sampling on Kisqali prescriptions?"
    brand: "Kisqali"
    treatment: "sampling_frequency"
    outcome: "new_rx"
    user_expertise: "analyst"

  metadata:
    execution_id: "abc123"
    start_time: "2025-01-15T10:30:00Z"
    intent: "causal_effect"
    confidence: 0.95
"""

RESPONSE = """\
agent_to_orchestrator:
  source_agent: causal_impact
  target_agent: orchestrator
  handoff_type: response

  payload:
    ate: 2.3
    confidence_interval: [1.8, 2.8]
    p_value: 0.001
    robustness_passed: true
    interpretation: "Increased sampling is associated with 2.3 additional prescriptions per HCP..."

  metadata:
    execution_id: "abc123"
    start_time: "2025-01-15T10:30:00Z"
    end_time: "2025-01-15T10:30:15Z"
    latency_ms: 15234
    model_used: "claude-sonnet-4-20250514"

  key_findings:
    - "Positive causal effect of 2.3 additional Rx per HCP"
    - "Effect is statistically significant (p < 0.001)"
    - "Robust to placebo and subset refutation tests"

  recommendations:
    - "Consider increasing sampling budget for high-potential HCPs"

  requires_further_analysis: false
"""

SYNTHESIS = """\
orchestrator_synthesis:
  source_agents:
    - causal_impact
    - gap_analyzer
  target_agent: explainer
  handoff_type: request

  payload:
    query: "Summarize the findings for executive presentation"
    analysis_results:
      - agent: causal_impact
        key_findings:
          - "2.3 additional Rx per HCP from sampling"
      - agent: gap_analyzer
        key_findings:
          - "Top 3 territories have 40% gap vs potential"
    user_expertise: "executive"
    output_format: "brief"
"""


@pytest.mark.parametrize(
    ("cls", "text"),
    [(OrchestratorToAgent, REQUEST), (AgentToOrchestrator, RESPONSE), (OrchestratorSynthesis, SYNTHESIS)],
)
def test_spec_examples_round_trip(cls, text: str) -> None:  # type: ignore[no-untyped-def]
    doc = cls.from_yaml(text)
    dumped = doc.to_yaml()
    assert yaml.safe_load(dumped) == yaml.safe_load(text)  # same document, field for field
    assert list(yaml.safe_load(dumped)[cls.root_key]) == list(yaml.safe_load(text)[cls.root_key])  # same order
    assert cls.from_yaml(dumped) == doc


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("orchestrator_to_agent: [unclosed", "not valid YAML"),
        ("just a string", "top-level key"),
        ("agent_to_orchestrator: {}", "expected a mapping with the top-level key 'orchestrator_to_agent'"),
        ("orchestrator_to_agent: {target_agent: x, payload: {}}", "metadata: Field required"),
        (
            "orchestrator_to_agent: {target_agent: x, payload: {}, priority: 99, "
            "metadata: {execution_id: a, start_time: b}}",
            "priority",
        ),
        (
            "orchestrator_to_agent: {target_agent: x, payload: {}, handoff_type: response, "
            "metadata: {execution_id: a, start_time: b}}",
            "handoff_type",
        ),
    ],
)
def test_malformed_documents_get_a_readable_error(text: str, reason: str) -> None:
    with pytest.raises(HandoffError, match=reason):
        OrchestratorToAgent.from_yaml(text)


def test_a_dispatch_response_becomes_the_agent_to_orchestrator_document() -> None:
    from concerto.contracts.common import AgentError, ErrorKind, ExecutionStatus
    from concerto.contracts.dispatch import AgentDispatchResponse
    from concerto.contracts.handoff import responses_yaml

    response = AgentDispatchResponse(
        agent="causal_impact",
        task_id="t1",
        status=ExecutionStatus.COMPLETED,
        total_latency_ms=15234.4,
        output={
            "ate": 2.3,
            "confidence_interval": [1.8, 2.8],
            "recommendations": ["Consider increasing sampling budget for high-potential HCPs"],
            "requires_further_analysis": True,
        },
        key_findings=["Positive causal effect of 2.3 additional Rx per HCP"],
        errors=[AgentError(agent="causal_impact", kind=ErrorKind.NOT_FOUND, error_type="unanswered_part", message="x")],
    )
    text = responses_yaml([response, response], execution_id="abc123", start_time="2025-01-15T10:30:00Z")
    first, second = list(yaml.safe_load_all(text))
    assert first == second
    document = AgentToOrchestrator.model_validate(first["agent_to_orchestrator"])
    assert document.payload["ate"] == 2.3 and "recommendations" not in document.payload
    assert document.recommendations == ["Consider increasing sampling budget for high-potential HCPs"]
    assert document.requires_further_analysis is True
    assert document.metadata.execution_id == "abc123:t1" and document.metadata.latency_ms == 15234
    assert document.payload["errors"][0]["error_type"] == "unanswered_part"
