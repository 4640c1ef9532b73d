"""Real questions against the real series of a local Prometheus and node exporter."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from _services.prometheus import LocalPrometheus
from concerto.agents.base import AgentContext, AgentFailure, AgentResult
from concerto.packs.metrics.agent import MetricsAgent
from concerto.packs.metrics.backend import get_backend
from concerto.packs.metrics.models import (
    MetricsQuery,
    MetricsQueryFailure,
    MetricsQueryResult,
    initial_state,
)
from concerto.packs.metrics.node import NodeDeps, process
from concerto.testing import run_agent

pytestmark = pytest.mark.prometheus


async def ask(ctx: AgentContext, question: str) -> AgentResult:
    agent = MetricsAgent(ctx.settings, ctx.resources)
    return await run_agent(agent, ctx, question)


async def fail(ctx: AgentContext, question: str) -> AgentFailure:
    with pytest.raises(AgentFailure) as info:
        await ask(ctx, question)
    return info.value


def _result(out: AgentResult) -> MetricsQueryResult:
    return MetricsQueryResult.model_validate(
        {k: v for k, v in out.output.items() if k in MetricsQueryResult.model_fields}
    )


async def test_cpu_usage_for_the_last_hour(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "Show CPU usage for the last hour")
    result = _result(out)
    assert result.metric_name == "cpu_usage"
    assert result.promql == '100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[60s])))'
    assert result.unit == "%"
    assert not result.is_empty and result.datapoint_count == len(result.datapoints) > 0
    stats = result.statistics
    assert stats is not None
    assert 0 <= stats.min <= stats.mean <= stats.max <= 100
    assert result.time_range.step_seconds == 15
    assert result.time_range.end_time - result.time_range.start_time == timedelta(hours=1)
    assert out.summary is not None
    assert re.fullmatch(
        r"CPU usage averaged [\d.]+% over the last hour "
        r"\(min [\d.]+%, max [\d.]+%, last [\d.]+%\)\.",
        out.summary,
    )
    assert out.output["parsed_query"]["promql"] == result.promql
    assert set(out.output["timings_ms"]) == {"parse", "validate", "query", "format"}


async def test_memory_used_on_the_exporter_host(prom_context: AgentContext, prometheus: LocalPrometheus) -> None:
    host = prometheus.exporter_target
    out = await ask(prom_context, f"How much memory is used on host {host}?")
    result = _result(out)
    assert result.metric_name == "memory_used"
    assert result.filters == {"instance": host}
    assert f'instance="{host}"' in result.promql
    assert result.unit == "bytes"
    assert result.statistics is not None and result.statistics.min > 0
    assert out.summary is not None and f"on {host}" in out.summary
    assert re.search(r"\d (KiB|MiB|GiB|TiB)", out.summary)


async def test_host_without_port_matches_any_port(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "memory used on host 127.0.0.1 in the last 10 minutes")
    assert not _result(out).is_empty


async def test_network_throughput_is_a_rate_in_bytes_per_second(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "What was the peak network throughput in the past 30 minutes?")
    result = _result(out)
    assert result.metric_name == "network_throughput"
    assert "rate(node_network_receive_bytes_total" in result.promql
    assert "rate(node_network_transmit_bytes_total" in result.promql
    assert result.unit == "bytes/s" and result.aggregation == "max"
    assert result.statistics is not None and result.value == result.statistics.max
    assert out.summary is not None and out.summary.startswith("Network throughput peaked at ")
    assert "/s" in out.summary


async def test_request_latency_percentile_from_a_histogram(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "p99 request latency over the past 30 minutes")
    result = _result(out)
    assert result.metric_name == "request_latency"
    assert result.promql.startswith("histogram_quantile(0.99, sum by (le) (rate(")
    assert "_bucket" in result.promql
    assert result.unit == "seconds"


async def test_a_metric_named_exactly(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "show node_load1 since 2 hours ago")
    result = _result(out)
    assert result.metric_name == "node_load1"
    assert result.promql == "avg(node_load1)"
    assert result.time_range.expression == "the last 2 hours"


async def test_a_label_that_matches_nothing_gives_an_empty_result(
    prom_context: AgentContext,
) -> None:
    out = await ask(prom_context, "CPU usage on host no-such-host for the last hour")
    result = _result(out)
    assert result.is_empty and result.datapoint_count == 0 and result.statistics is None
    assert out.summary == "No data for CPU usage on no-such-host over the last hour."
    assert any("instance takes the values 127.0.0.1:" in f for f in out.key_findings)


async def test_an_empty_window_before_any_data(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "memory used yesterday")
    result = _result(out)
    assert result.is_empty and result.value is None
    # Not zero: the answer says the window lies before the first sample this server holds.
    assert out.summary is not None
    assert re.fullmatch(
        r"No data for memory used yesterday: this server holds data only from "
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC, after the window ends\.",
        out.summary,
    )
    assert out.output["data_start"] is not None


async def test_a_thirty_day_range_adapts_the_step(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU usage over the last 30 days")
    result = _result(out)
    assert result.time_range.step_seconds == 10800
    assert "[10800s]" in result.promql
    assert 1 <= result.datapoint_count <= 250


async def test_metric_not_found_suggests_the_closest_names(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "show node_memory_Foo_bytes for the last hour")
    assert failure.error_type == "metric_not_found"
    assert failure.suggestion is not None and "node_memory_" in failure.suggestion


@pytest.mark.parametrize("question", ["What is the weather in Paris?", "asdf qwer zxcv"])
async def test_a_question_about_no_metric_is_not_understood(prom_context: AgentContext, question: str) -> None:
    failure = await fail(prom_context, question)
    assert failure.error_type == "parsing_error"
    assert failure.suggestion is not None and "Show CPU usage for the last hour" in failure.suggestion


async def test_a_host_name_with_an_underscore_is_a_filter_not_a_metric(
    prom_context: AgentContext,
) -> None:
    out = await ask(prom_context, "CPU usage on host web_1")
    assert _result(out).filters == {"instance": "web_1"} and _result(out).is_empty


async def test_a_very_small_range(prom_context: AgentContext) -> None:
    out = await ask(prom_context, "CPU usage over the last 30 seconds")
    result = _result(out)
    assert result.time_range.step_seconds == 1
    assert 1 <= result.datapoint_count <= 31


async def test_anomalies_are_unsupported(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "Show anomalies in CPU usage")
    assert failure.error_type == "unsupported_operation"
    assert failure.message == "Anomaly detection is not supported."
    assert failure.suggestion is not None and "raw metric data" in failure.suggestion
    assert failure.output["parsed_query"]["operation"] == "anomaly_detection"


async def test_forecasts_are_unsupported(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "Forecast memory usage for next week")
    assert failure.error_type == "unsupported_operation"


async def test_a_reversed_window_is_invalid(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "CPU usage from 11:00 to 10:00")
    assert failure.error_type == "invalid_time_range"


async def test_a_range_over_400_days_is_invalid(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "CPU usage over the last 500 days")
    assert failure.error_type == "invalid_time_range"
    assert failure.message == "The time range is longer than 400 days."


async def test_an_empty_question_is_a_parsing_error(prom_context: AgentContext) -> None:
    failure = await fail(prom_context, "   ")
    assert failure.error_type == "parsing_error"


async def test_bad_promql_is_an_invalid_query(prom_context: AgentContext) -> None:
    backend = await get_backend(prom_context.settings, prom_context.resources)
    now = prom_context.now
    with pytest.raises(MetricsQueryFailure) as info:
        await backend.query_range("sum(rate(node_cpu_seconds_total[", now - timedelta(hours=1), now, 15)
    assert info.value.error.error_type == "invalid_query"
    assert "parse error" in info.value.error.message
    assert info.value.error.details["status"] == 400


async def test_catalog_is_cached_and_has_help_text(prom_context: AgentContext) -> None:
    backend = await get_backend(prom_context.settings, prom_context.resources)
    first = await backend.catalog()
    assert first["node_cpu_seconds_total"].type == "counter"
    assert "CPU" in first["node_cpu_seconds_total"].help
    assert backend._catalog is not None
    loaded_at = backend._catalog.loaded_at
    await ask(prom_context, "Show CPU usage for the last hour")
    await ask(prom_context, "memory used for the last hour")
    assert backend._catalog.loaded_at == loaded_at
    assert await get_backend(prom_context.settings, prom_context.resources) is backend


async def test_state_guarantees_hold_on_success_and_failure(prom_context: AgentContext) -> None:
    deps = NodeDeps(settings=prom_context.settings, resources=prom_context.resources, now=prom_context.now)
    ok = (await process(initial_state("Show CPU usage for the last hour"), deps)).state
    assert isinstance(ok["parsed_query"], MetricsQuery) and ok["result"] is not None
    assert ok["error"] is None and ok["processing_time_ms"] > 0
    bad = (await process(initial_state("Show anomalies in CPU usage"), deps)).state
    assert bad["error"] is not None and bad["result"] is None
    assert bad["user_query"] == "Show anomalies in CPU usage"
