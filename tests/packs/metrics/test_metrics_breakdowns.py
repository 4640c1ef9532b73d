"""Breakdowns, top/bottom N, window comparisons and half answers against the real Prometheus and
node exporter (per-cpu and per-mode series), through the agent as a user asks."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import httpx
import pytest

from _services.prometheus import LocalPrometheus
from concerto.agents.base import AgentContext, AgentFailure, AgentResult
from concerto.agents.registry import AgentRegistry
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.nlp.embeddings import Embedder
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.metrics.agent import MetricsAgent
from concerto.packs.metrics.models import MetricsQueryResult
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import run_agent

pytestmark = pytest.mark.prometheus


async def ask(ctx: AgentContext, question: str) -> AgentResult:
    ctx.now = datetime.now(UTC)
    return await run_agent(MetricsAgent(ctx.settings, ctx.resources), ctx, question)


async def fail(ctx: AgentContext, question: str) -> AgentFailure:
    with pytest.raises(AgentFailure) as info:
        await ask(ctx, question)
    return info.value


def _current(out: AgentResult, metric: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    return [
        s for s in out.output["series"] if s["role"] == "current" and (metric is None or s["metric_name"] == metric)
    ]


async def _instant(prometheus: LocalPrometheus, promql: str) -> list[dict]:  # type: ignore[type-arg]
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{prometheus.url}/api/v1/query", params={"query": promql})
    return list(reply.json()["data"]["result"])


async def _wait_for_history(prometheus: LocalPrometheus, seconds: float) -> None:
    """Precondition of a comparison with real data in both windows: the server holds `seconds` of it."""
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        first = await _instant(prometheus, "min(prometheus_tsdb_lowest_timestamp_seconds)")
        if first and time.time() - float(first[0]["value"][1]) >= seconds:
            return
        await asyncio.sleep(1)
    pytest.fail(f"Prometheus did not collect {seconds} s of data")


# --- breakdowns ---------------------------------------------------------------------------


async def test_cpu_usage_per_cpu_keeps_one_series_per_cpu(
    prom_context: AgentContext, prometheus: LocalPrometheus
) -> None:
    cpus = {r["metric"]["cpu"] for r in await _instant(prometheus, "count by (cpu) (node_cpu_seconds_total)")}
    out = await ask(prom_context, "CPU usage per cpu over the last 5 minutes")
    series = _current(out)
    assert {s["labels"]["cpu"] for s in series} == cpus
    assert out.output["group_by"] == ["cpu"]
    assert out.output["promql"] == '100 * (1 - avg by (cpu) (rate(node_cpu_seconds_total{mode="idle"}[60s])))'
    for s in series:
        assert s["datapoint_count"] == len(s["datapoints"]) > 0
        assert 0 <= s["statistics"]["min"] <= s["statistics"]["max"] <= 100.0001
    values = [s["value"] for s in series]
    assert values == sorted(values, reverse=True)  # highest first
    assert out.summary is not None and out.summary.startswith("CPU usage by CPU over the last 5 minutes: ")
    if len(series) > 1:
        assert "highest CPU " in out.summary and "lowest CPU " in out.summary
    # the single-series fields still describe the whole (the CPUs merged)
    result = MetricsQueryResult.model_validate(
        {k: v for k, v in out.output.items() if k in MetricsQueryResult.model_fields}
    )
    assert not result.is_empty and result.series_count == len(series) and result.statistics is not None


async def test_cpu_time_per_mode_has_a_series_per_mode(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    modes = {r["metric"]["mode"] for r in await _instant(prometheus, "count by (mode) (node_cpu_seconds_total)")}
    out = await ask(prom_context, "CPU usage per mode over the last 5 minutes")
    series = _current(out)
    assert {s["labels"]["mode"] for s in series} == modes and len(modes) >= 4
    assert out.output["promql"] == "100 * avg by (mode) (rate(node_cpu_seconds_total[60s]))"
    # each is a share of the CPUs' time (sandboxed kernels may not account for all of it)
    assert all(0 <= s["statistics"]["min"] <= s["statistics"]["max"] <= 100.0001 for s in series)
    assert any(f.startswith("mode idle: CPU time ") for f in out.key_findings)


async def test_memory_used_by_instance(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    out = await ask(prom_context, "memory used for each host over the last 10 minutes")
    series = _current(out)
    assert [s["labels"] for s in series] == [{"instance": prometheus.exporter_target}]
    assert out.summary is not None and f"one series, {prometheus.exporter_target} at " in out.summary


# --- top and bottom N ----------------------------------------------------------------------


async def test_top_modes_keeps_exactly_n_series_over_the_whole_window(
    prom_context: AgentContext, prometheus: LocalPrometheus
) -> None:
    out = await ask(prom_context, "top 3 modes by CPU usage over the last 5 minutes")
    series = _current(out)
    assert len(series) == 3  # ranked once over the window, so no step brings in a fourth
    assert out.output["ranking"] == {"n": 3, "order": "top"}
    assert (
        "topk(3, avg_over_time((100 * avg by (mode) (rate(node_cpu_seconds_total[60s])))[300s:2s] @ end()))"
        in (out.output["promql"])
    )
    everything = await ask(prom_context, "CPU time per mode over the last 5 minutes")
    ranked_all = [s["labels"]["mode"] for s in _current(everything)]
    assert {s["labels"]["mode"] for s in series} <= set(ranked_all)
    assert out.summary is not None and out.summary.startswith("Top 3 modes by CPU time over the last 5 minutes")


async def test_the_least_busy_cpus(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    cpus = len(await _instant(prometheus, "count by (cpu) (node_cpu_seconds_total)"))
    out = await ask(prom_context, "the 2 least busy CPUs over the last 5 minutes")
    series = _current(out)
    assert len(series) == min(2, cpus)
    assert "bottomk(2, " in out.output["promql"]
    values = [s["value"] for s in series]
    assert values == sorted(values)  # lowest first for a bottom ranking


async def test_which_instance_has_the_highest_cpu(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    out = await ask(prom_context, "which instance has the highest CPU usage over the last 5 minutes?")
    series = _current(out)
    assert [s["labels"] for s in series] == [{"instance": prometheus.exporter_target}]
    assert out.summary is not None
    assert out.summary.startswith(f"{prometheus.exporter_target} has the highest CPU usage over the last 5 minutes: ")


async def test_top_n_with_fewer_series_says_so(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "top 3 hosts by memory used over the last 10 minutes")
    assert len(_current(out)) == 1
    assert out.summary is not None and out.summary.endswith("Only 1 host had data.")


# --- comparisons ---------------------------------------------------------------------------


async def test_a_comparison_with_data_in_both_windows(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    await _wait_for_history(prometheus, 12)
    out = await ask(prom_context, "memory used over the last 5 seconds compared to 5 seconds earlier")
    queries = out.output["queries"]
    assert [q["promql"] for q in queries] == [
        "sum(node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)",
        "sum(node_memory_MemTotal_bytes offset 5s - node_memory_MemAvailable_bytes offset 5s)",
    ]
    assert [q["role"] for q in queries] == ["current", "baseline"]
    (comparison,) = out.output["comparisons"]
    assert comparison["current"] > 0 and comparison["baseline"] > 0
    assert comparison["difference"] == pytest.approx(comparison["current"] - comparison["baseline"])
    assert comparison["change_percent"] == pytest.approx(comparison["difference"] / comparison["baseline"] * 100)
    assert out.summary is not None and " against " in out.summary and "%" in out.summary
    assert not out.unanswered


async def test_a_comparison_broken_down_by_cpu(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    await _wait_for_history(prometheus, 12)
    out = await ask(prom_context, "CPU usage per cpu over the last 5 seconds vs 5 seconds earlier")
    cpus = {s["labels"]["cpu"] for s in _current(out)}
    assert {c["labels"]["cpu"] for c in out.output["comparisons"]} == cpus
    assert all(c["baseline"] is not None for c in out.output["comparisons"])


async def test_now_vs_the_same_hour_yesterday_says_yesterday_has_no_data(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU now vs the same hour yesterday")
    queries = out.output["queries"]
    assert queries[1]["promql"] == '100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[60s] offset 1d)))'
    assert out.output["comparisons"][0]["baseline"] is None
    # not a zero: the answer says the baseline has no data, and why
    (gap,) = out.unanswered
    assert gap.part == "CPU usage the same hour yesterday"
    assert "this server holds data only from" in gap.reason
    assert gap.sentence in out.key_findings and out.output["missing"][0]["part"] == gap.part
    assert out.summary is not None and "the same hour yesterday has no data to compare with" in out.summary


# --- half answers -----------------------------------------------------------------------------


async def test_two_metrics_and_one_is_not_there(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU usage and GPU utilisation for the last 10 minutes")
    assert out.output["metric_name"] == "cpu_usage" and not out.output["is_empty"]
    (gap,) = out.unanswered
    assert gap.part == "GPU utilisation" and gap.error_type == "metric_not_found"
    assert "Not answered: GPU utilisation: no metric on this server measures 'gpu'." in out.key_findings


async def test_two_metrics_both_answered(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU and memory used for the last 10 minutes")
    assert {s["metric_name"] for s in _current(out)} == {"cpu_usage", "memory_used"}
    assert out.summary is not None and "CPU usage averaged" in out.summary and "Memory used averaged" in out.summary
    assert not out.unanswered


async def test_one_host_of_two_matches_nothing(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    out = await ask(prom_context, "memory used on hosts web-9 and 127.0.0.1 over the last 10 minutes")
    assert [s["labels"]["instance"] for s in _current(out)] == [prometheus.exporter_target]
    (gap,) = out.unanswered
    assert gap.part == "Memory used for host web-9"
    assert f"instance takes the values {prometheus.exporter_target}" in gap.reason


async def test_a_host_that_matches_nothing(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    out = await ask(prom_context, "CPU usage on host web-9 for the last hour")
    assert out.output["is_empty"]
    (gap,) = out.unanswered
    assert gap.part == "CPU usage for host web-9" and "no series has instance=web-9" in gap.reason


async def test_a_label_the_metric_does_not_have(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU usage by datacenter over the last 10 minutes")
    assert out.output["group_by"] == [] and not out.output["is_empty"]  # answered as one series
    (gap,) = out.unanswered
    assert gap.part == "CPU usage by datacenter" and gap.error_type == "invalid_query"
    assert gap.reason == "node_cpu_seconds_total has no label 'datacenter'; its labels are cpu, instance, job, mode"


async def test_partial_answers_reach_the_response_as_errors_and_findings(
    prom_settings: Settings, shared_embedder: Embedder
) -> None:
    """Through the orchestrator: the part not answered is an error entry and a key finding."""
    resources = Resources(prom_settings)
    resources.put("embedder", shared_embedder)
    orchestrator = Orchestrator(prom_settings, registry=AgentRegistry([MetricsAgent]), resources=resources)
    try:
        answer = await orchestrator.ask("CPU usage by datacenter over the last 10 minutes", now=datetime.now(UTC))
    finally:
        await resources.aclose()
    assert isinstance(answer, OrchestratorOutput)
    (response,) = answer.agent_results
    assert [e.error_type for e in response.errors] == ["invalid_query"]
    assert response.errors[0].message.startswith("CPU usage by datacenter: node_cpu_seconds_total has no label")
    assert any(f.startswith("Not answered: CPU usage by datacenter") for f in answer.key_findings)
    assert "Not answered: CPU usage by datacenter" in answer.response


# --- what it cannot do ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    ["forecast CPU usage for next week", "is CPU usage correlated with network traffic?", "will the disk fill up?"],
)
async def test_unsupported_operations_say_what_to_ask_instead(prom_context: AgentContext, question: str) -> None:
    failure = await fail(prom_context, question)
    assert failure.error_type == "unsupported_operation"
    assert failure.suggestion is not None and "instead" in failure.suggestion


@pytest.mark.parametrize("question", ["what is the temperature of the CPU?", "GPU utilisation for the last hour"])
async def test_a_metric_that_is_not_there(prom_context: AgentContext, question: str) -> None:
    failure = await fail(prom_context, question)
    assert failure.error_type == "metric_not_found"
    assert failure.suggestion is not None and "The closest metrics are " in failure.suggestion
