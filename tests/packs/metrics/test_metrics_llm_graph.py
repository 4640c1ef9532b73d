"""Step 1 with a (scripted) LLM, and the node inside a LangGraph `StateGraph`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers.metrics import context_for
from _services.prometheus import LocalPrometheus
from concerto.agents.base import AgentContext, AgentFailure
from concerto.llm.base import LLMError
from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.agent import MetricsAgent
from concerto.packs.metrics.models import (
    MetricsQuery,
    MetricsQueryResult,
    QueryError,
    initial_state,
)
from concerto.packs.metrics.node import NodeDeps
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import ScriptedLLM, run_agent

pytestmark = pytest.mark.prometheus


def _context(settings: Settings, embedder: Embedder, llm: ScriptedLLM) -> AgentContext:
    return context_for(settings, embedder, llm=llm)


async def _run(ctx: AgentContext, question: str) -> dict[str, object]:
    try:
        out = await run_agent(MetricsAgent(ctx.settings, ctx.resources), ctx, question)
        return out.output | {"summary": out.summary}
    finally:
        await ctx.resources.aclose()


async def test_llm_reply_is_validated_and_built_into_promql(prom_settings: Settings, shared_embedder: Embedder) -> None:
    reply = {
        "metric": "cpu_usage",
        "window": "last 30 minutes",
        "aggregation": "max",
        "filters": {},
        "operation": "query",
    }
    llm = ScriptedLLM([json.dumps(reply)])
    out = await _run(_context(prom_settings, shared_embedder, llm), "How busy were the CPUs lately?")
    assert out["metric_name"] == "cpu_usage"
    assert out["aggregation"] == "max"
    assert out["promql"] == '100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[60s])))'
    assert out["time_range"]["expression"] == "the last 30 minutes"  # type: ignore[index]
    assert str(out["summary"]).startswith("CPU usage peaked at ")
    prompt = llm.calls[0][-1].content
    assert "cpu_usage:" in prompt and "Current time:" in prompt
    assert "How busy were the CPUs lately?" in prompt


async def test_the_models_metric_must_measure_every_word(prom_settings: Settings, shared_embedder: Embedder) -> None:
    """The model's choice is held to the reader's rule: "how hot" is a temperature, which CPU
    usage does not measure, so the answer is metric_not_found, not CPU usage."""
    reply = {"metrics": ["cpu_usage"], "window": "last 30 minutes"}
    with pytest.raises(AgentFailure) as info:
        await _run(_context(prom_settings, shared_embedder, ScriptedLLM([json.dumps(reply)])), "How hot is the CPU?")
    assert info.value.error_type == "metric_not_found" and "hot" in str(info.value)


async def test_every_metric_the_model_names_is_answered(prom_settings: Settings, shared_embedder: Embedder) -> None:
    reply = {"metrics": ["cpu_usage", "memory_used"], "window": "last 10 minutes"}
    llm = ScriptedLLM([json.dumps(reply)])
    out = await _run(_context(prom_settings, shared_embedder, llm), "CPU and memory used")
    assert out["metric_name"] == "cpu_usage"
    assert [q["metric_name"] for q in out["queries"]] == ["cpu_usage", "memory_used"]  # type: ignore[index]
    assert out["time_range"]["expression"] == "the last 10 minutes"  # type: ignore[index]


async def test_a_model_choosing_one_metric_of_two_still_answers_both(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    """A model that returns CPU alone for "CPU and memory used": memory used is matched by
    the reader, not silently dropped."""
    reply = {"metrics": ["cpu_usage"]}
    out = await _run(_context(prom_settings, shared_embedder, ScriptedLLM([json.dumps(reply)])), "CPU and memory used")
    assert [q["metric_name"] for q in out["queries"]] == ["cpu_usage", "memory_used"]  # type: ignore[index]


@pytest.mark.parametrize("window", ["the blue moon", "last Tuesday"])
async def test_an_unreadable_model_window_is_invalid_time_range(
    prom_settings: Settings, shared_embedder: Embedder, window: str
) -> None:
    reply = {"metrics": ["cpu_usage"], "window": window}
    with pytest.raises(AgentFailure) as info:
        await _run(_context(prom_settings, shared_embedder, ScriptedLLM([json.dumps(reply)])), "CPU usage")
    assert info.value.error_type == "invalid_time_range"


async def test_llm_reply_in_code_fences_with_a_raw_metric(prom_settings: Settings, shared_embedder: Embedder) -> None:
    reply = '```json\n{"metric": "node_load1", "window": "last 10 minutes"}\n```'
    out = await _run(_context(prom_settings, shared_embedder, ScriptedLLM([reply])), "load?")
    assert out["metric_name"] == "node_load1" and out["promql"] == "avg(node_load1)"


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! CPU usage was fine.",
        '{"metric": "cpu_usage", "aggregation": "median"}',
        '{"window": "last hour"}',
        '{"metric": "cpu_usage", "colour": "blue"}',
    ],
)
async def test_invalid_llm_replies_are_parsing_errors(
    prom_settings: Settings, shared_embedder: Embedder, reply: str
) -> None:
    with pytest.raises(AgentFailure) as info:
        await _run(_context(prom_settings, shared_embedder, ScriptedLLM([reply])), "CPU usage")
    assert info.value.error_type == "parsing_error"
    assert info.value.message == "Could not understand your query."
    assert info.value.details["llm_reply"] == reply  # kept for logs


async def test_llm_host_filter_means_the_instance_label(
    prom_settings: Settings, shared_embedder: Embedder, prometheus: LocalPrometheus
) -> None:
    reply = json.dumps({"metric": "memory_used", "filters": {"host": prometheus.exporter_target}})
    out = await _run(_context(prom_settings, shared_embedder, ScriptedLLM([reply])), "memory?")
    assert out["filters"] == {"instance": prometheus.exporter_target}
    assert out["is_empty"] is False


async def test_the_llm_picks_the_metric_and_the_question_keeps_its_breakdown(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    reply = json.dumps({"metric": "cpu_usage", "window": "last 1 hour"})
    out = await _run(
        _context(prom_settings, shared_embedder, ScriptedLLM([reply])),
        "which CPU is the busiest over the last 5 minutes?",
    )
    assert out["group_by"] == ["cpu"] and out["ranking"] == {"n": 1, "order": "top"}
    assert out["time_range"]["expression"] == "the last 5 minutes"  # type: ignore[index]
    assert "topk(1, " in str(out["promql"])
    assert len([s for s in out["series"] if s["role"] == "current"]) == 1  # type: ignore[attr-defined]


async def test_anomalies_stay_unsupported_when_the_llm_misses_them(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    reply = '{"metric": "cpu_usage", "window": "last hour", "operation": "query"}'
    with pytest.raises(AgentFailure) as info:
        await _run(
            _context(prom_settings, shared_embedder, ScriptedLLM([reply])),
            "Show anomalies in CPU usage",
        )
    assert info.value.error_type == "unsupported_operation"


async def test_llm_naming_an_unknown_metric(prom_settings: Settings, shared_embedder: Embedder) -> None:
    reply = '{"metrics": ["node_cpu_seconds"], "window": "last hour"}'
    with pytest.raises(AgentFailure) as info:
        await _run(_context(prom_settings, shared_embedder, ScriptedLLM([reply])), "node_cpu_seconds")
    assert info.value.error_type == "metric_not_found"
    assert info.value.suggestion is not None and "node_cpu_seconds_total" in info.value.suggestion


async def test_a_made_up_name_gives_way_to_the_readers_match(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    reply = '{"metric": "node_cpu_seconds", "window": "last hour"}'  # the old one-metric reply still reads
    out = await _run(_context(prom_settings, shared_embedder, ScriptedLLM([reply])), "cpu seconds")
    assert str(out["metric_name"]).endswith("cpu_seconds_total") and not out["missing"]


async def test_llm_unavailable_falls_back_to_the_deterministic_parser(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    llm = ScriptedLLM([LLMError("connection refused", kind="unavailable")])
    out = await _run(_context(prom_settings, shared_embedder, llm), "Show CPU usage for the last hour")
    assert out["metric_name"] == "cpu_usage" and len(llm.calls) == 1


async def test_langgraph_metrics_agent_to_end(prom_settings: Settings, shared_embedder: Embedder) -> None:
    pytest.importorskip("langgraph")
    from concerto.packs.metrics.graph import build_graph

    resources = Resources(prom_settings)
    resources.put("embedder", shared_embedder)
    graph = build_graph(NodeDeps(settings=prom_settings, resources=resources))
    try:
        assert set(graph.get_graph().nodes) == {"__start__", "metrics_agent", "__end__"}
        ok = await graph.ainvoke(initial_state("Show CPU usage for the last hour"))
        bad = await graph.ainvoke(initial_state("Show anomalies in CPU usage"))
    finally:
        await resources.aclose()
    assert isinstance(ok["parsed_query"], MetricsQuery)
    assert isinstance(ok["result"], MetricsQueryResult) and ok["error"] is None
    assert ok["result"].datapoint_count > 0 and ok["processing_time_ms"] > 0
    assert isinstance(bad["error"], QueryError) and bad["result"] is None
    assert bad["error"].error_type == "unsupported_operation"


async def test_langgraph_without_a_backend(tmp_path: Path, shared_embedder: Embedder) -> None:
    pytest.importorskip("langgraph")
    from concerto.packs.metrics.graph import build_graph

    settings = Settings(data_dir=tmp_path)
    resources = Resources(settings)
    resources.put("embedder", shared_embedder)
    state = await build_graph(NodeDeps(settings=settings, resources=resources)).ainvoke(initial_state("CPU usage"))
    await resources.aclose()
    assert state["result"] is None and state["error"].error_type == "grafana_unavailable"
