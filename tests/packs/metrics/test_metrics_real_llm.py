"""Step 1 with a real LLM server (llama.cpp + SmolLM2-135M) against the real Prometheus.

A 135M model chooses poorly, so the test holds the node to its contract rather than to
the model's judgement: the reply is grammar-constrained JSON that pydantic validates,
and the state ends with exactly one of a result or one of the spec's error types.
"""

from __future__ import annotations

from typing import Any

import pytest

from _helpers.metrics import context_for
from _services.llama import LlamaServer
from concerto.agents.base import AgentFailure
from concerto.llm.openai_compat import llm_from_settings
from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.agent import MetricsAgent
from concerto.packs.metrics.models import MetricsQueryResult
from concerto.settings import Settings
from concerto.testing import run_agent

pytestmark = [pytest.mark.llm, pytest.mark.prometheus]


async def test_real_llm_parses_into_a_valid_state(
    prom_settings: Settings, llama_server: LlamaServer, shared_embedder: Embedder
) -> None:
    settings = prom_settings.model_copy(update={"llm_base_url": llama_server.base_url, "llm_model": llama_server.model})
    llm = llm_from_settings(settings)
    assert llm is not None
    ctx = context_for(settings, shared_embedder, llm=llm)
    outcome: Any
    try:
        outcome = await run_agent(MetricsAgent(settings, ctx.resources), ctx, "Show CPU usage for the last hour")
    except AgentFailure as failure:
        outcome = failure
    finally:
        await ctx.resources.aclose()
        await llm.aclose()
    if isinstance(outcome, AgentFailure):
        assert outcome.error_type in {"parsing_error", "metric_not_found", "invalid_time_range"}
        assert outcome.output["processing_time_ms"] > 0
    else:
        result = MetricsQueryResult.model_validate(
            {k: v for k, v in outcome.output.items() if k in MetricsQueryResult.model_fields}
        )
        assert result.promql and outcome.summary
