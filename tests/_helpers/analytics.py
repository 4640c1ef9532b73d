"""Helpers of the analytics pack's tests: an orchestrator over the analytics agents, asking it,
and reading an agent's output and rows from the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.engine import Orchestrator
from concerto.resources import Resources
from concerto.settings import Settings

ANALYTICS = (
    "sql_analytics,segmentation,pattern_recognition,opportunity,business_impact,risk,benchmark,"
    "semantic_text,semantic_search,data_ingestion,data_discovery"
)


def make_orchestrator(data_dir: Path, embedder: Embedder, database_url: str | None = None, **core: Any) -> Orchestrator:
    agents = core.pop("agents", ANALYTICS)
    settings = Settings(data_dir=data_dir, agents=agents, store_events=False, database_url=database_url, **core)
    resources = Resources(settings)
    resources.put("embedder", embedder)
    return Orchestrator(settings, resources=resources)


def close_stores(orchestrator: Orchestrator) -> None:
    from concerto.data.sources import store_for

    store_for(orchestrator.settings, orchestrator.resources).close()


async def ask(orchestrator: Orchestrator, question: str, **fields: Any) -> OrchestratorOutput:
    """The answer, failing the test with the error message when there is none."""
    result = await orchestrator.ask({"query": question, **fields})
    assert not isinstance(result, OrchestratorErrorResponse), result.error_message
    return result


def output(answer: OrchestratorOutput, agent: str) -> dict[str, Any]:
    """The output of `agent` in the answer (the test fails if it did not answer)."""
    found = [r for r in answer.agent_results if r.agent == agent]
    assert found, f"{agent} did not answer; agents: {answer.agents_invoked}"
    assert not found[0].errors, found[0].errors
    return found[0].output


def rows(out: dict[str, Any], purpose: str = "") -> list[dict[str, Any]]:
    """The rows of the first result whose purpose contains `purpose`."""
    for result in out["results"]:
        if purpose in result["purpose"]:
            return result["data"]  # type: ignore[no-any-return]
    raise AssertionError(f"no result about '{purpose}' in {[r['purpose'] for r in out['results']]}")
