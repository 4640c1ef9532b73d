"""The commercial questions through the whole orchestrator with every pack loaded: the
router picks the seed's intents (or the agents), the intent table's plans run as the seed
says, and the seed's example question is answered right without an LLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from _helpers.commercial import NOW
from concerto.contracts.handoff import AgentToOrchestrator, result_yaml
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.nlp.embeddings import default_embedder
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.commercial.base.data import truth
from concerto.resources import Resources
from concerto.settings import Settings


@pytest.fixture(scope="module")
def orchestrator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Orchestrator]:
    settings = Settings(data_dir=Path(tmp_path_factory.mktemp("orchestrated")), store_events=False)
    resources = Resources(settings)
    resources.put("embedder", default_embedder())
    yield Orchestrator(settings, resources=resources)


async def ask(orchestrator: Orchestrator, question: str, **fields: Any) -> OrchestratorOutput:
    result = await orchestrator.ask({"query": question, **fields}, now=NOW)
    assert isinstance(result, OrchestratorOutput), result
    return result


def output_of(result: OrchestratorOutput, agent: str) -> dict[str, Any]:
    return next(r.output for r in result.agent_results if r.agent == agent)


async def test_the_seeds_example_question_is_answered_right(orchestrator: Orchestrator) -> None:
    result = await ask(orchestrator, "What's the impact of increased sampling on Kisqali prescriptions?")
    assert result.agents_invoked == ["causal_impact"]
    out = output_of(result, "causal_impact")
    low, high = out["confidence_interval"]
    assert low <= truth().ate["Kisqali"] <= high
    assert out["brand"] == "Kisqali" and out["treatment"] == "increased_sampling" and out["outcome"] == "new_rx"
    assert out["robustness_passed"] is True
    document = AgentToOrchestrator.from_yaml(result_yaml(result, start_time="2026-11-15T12:00:00Z"))
    assert document.source_agent == "causal_impact" and document.payload["ate"] == out["ate"]
    assert document.key_findings and document.recommendations


@pytest.mark.parametrize(
    ("question", "agents"),
    [
        ("which specialties respond best to sampling for Kisqali?", {"heterogeneous_optimizer"}),
        ("which territories are furthest below their potential?", {"gap_analyzer"}),
        ("How many HCPs do we need to detect a 10% lift in new Rx with 80% power?", {"experiment_designer"}),
        ("forecast Kisqali new prescriptions for the next 6 months", {"prediction_synthesizer"}),
        ("how should we allocate the promotion budget across channels?", {"resource_optimizer"}),
        ("has the distribution of any feature drifted between the baseline and recent period?", {"drift_monitor"}),
        ("how healthy are our data and models?", {"health_score", "drift_monitor"}),
    ],
)
async def test_questions_reach_their_agents(orchestrator: Orchestrator, question: str, agents: set[str]) -> None:
    result = await ask(orchestrator, question)
    assert set(result.agents_invoked) == agents, (question, result.intent_classification)
    assert all(r.status.value == "completed" for r in result.agent_results), [r.errors for r in result.agent_results]


async def test_comprehensive_analysis_runs_two_in_parallel_then_the_explainer(orchestrator: Orchestrator) -> None:
    result = await ask(orchestrator, "comprehensive analysis of Kisqali", user_expertise="executive")
    assert result.intent_classification.primary_intent == "comprehensive_analysis"
    assert result.agents_invoked == ["causal_impact", "gap_analyzer", "explainer"]
    assert result.response_type == "explanation"
    assert result.response == output_of(result, "explainer")["narrative"]  # the explainer's text is the answer
    explained = output_of(result, "explainer")
    assert explained["synthesis_request"]["source_agents"] == ["causal_impact", "gap_analyzer"]
    assert explained["user_expertise"] == "executive"
    documents = list(yaml.safe_load_all(result_yaml(result, start_time="2026-11-15T12:00:00Z")))
    assert [d["agent_to_orchestrator"]["source_agent"] for d in documents] == result.agents_invoked


async def test_an_unknown_brand_is_refused_with_the_brands(orchestrator: Orchestrator) -> None:
    result = await orchestrator.ask(
        {"query": "What's the impact of increased sampling on prescriptions?", "brand": "Atlantis"}, now=NOW
    )
    assert isinstance(result, OrchestratorErrorResponse)
    assert "Atlantis" in result.error_message
    errors = [e for r in result.partial_results or [] for e in r.errors]
    assert errors and "Kisqali" in (errors[0].suggestion or "")
