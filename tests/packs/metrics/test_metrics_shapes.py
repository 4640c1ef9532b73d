"""Breakdowns, rankings, comparisons, several metrics and missing parts, read from the question
into PromQL against a recorded catalog (no server: tests/packs/metrics/test_metrics_breakdowns.py
runs the same PromQL against the real Prometheus)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.backend import MetricInfo
from concerto.packs.metrics.labels import check_labels
from concerto.packs.metrics.models import MetricsQuery, MetricsQueryFailure
from concerto.packs.metrics.node import validate
from concerto.packs.metrics.parser import parse_question, read_text
from concerto.packs.metrics.promql import ranked

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
RECORDED = Path(__file__).resolve().parents[3] / "benchmarks" / "questions" / "metrics_catalog.json"
IDLE = 'node_cpu_seconds_total{mode="idle"}[60s]'


@pytest.fixture(scope="module")
def recorded() -> tuple[dict[str, MetricInfo], dict[str, list[str]]]:
    data = json.loads(RECORDED.read_text())["metrics"]
    catalog = {n: MetricInfo(n, m["type"] or "unknown", m["help"] or "", m["unit"] or "") for n, m in data.items()}
    return catalog, {n: m["labels"] for n, m in data.items() if m["labels"] is not None}


def _plan(question: str, recorded: Any, embedder: Embedder, now: datetime = NOW) -> MetricsQuery:
    catalog, labels = recorded
    query = parse_question(question, now, catalog, embedder)
    validate(query, catalog, now)
    return check_labels(query, labels, catalog)


def _error(question: str, recorded: Any, embedder: Embedder) -> MetricsQueryFailure:
    with pytest.raises(MetricsQueryFailure) as info:
        _plan(question, recorded, embedder)
    return info.value


# --- reading the shape of a question ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "group_by"),
    [
        ("CPU usage by instance", ["instance"]),
        ("CPU usage per cpu", ["cpu"]),
        ("CPU usage per core", ["cpu"]),
        ("CPU usage per mode", ["mode"]),
        ("memory used for each host", ["instance"]),
        ("network traffic by interface", ["device"]),
        ("request rate broken down by status code", ["code"]),
        ("disk space used per mount point", ["mountpoint"]),
        ("CPU usage by instance and mode", ["instance", "mode"]),
        ("CPU usage across all hosts", []),  # one value over all of them
        ("CPU usage across instances", ["instance"]),
        ("CPU usage by datacenter", ["datacenter"]),  # a label the user named; checked later
        ("requests per second", []),
        ("CPU usage by the hour", []),
        ("CPU usage", []),
    ],
)
def test_breakdown_words(text: str, group_by: list[str]) -> None:
    assert read_text(text, NOW).group_by == group_by


@pytest.mark.parametrize(
    ("text", "n", "order", "label", "remainder"),
    [
        ("top 3 hosts by memory used", 3, "top", "instance", "memory used"),
        ("which instance has the highest CPU", 1, "top", "instance", "CPU"),
        ("the 2 least busy CPUs", 2, "bottom", "cpu", "busy CPUs"),
        ("which CPU is the busiest", 1, "top", "cpu", "busy CPU"),
        ("the busiest host", 1, "top", "instance", "busy"),
        ("bottom 2 hosts by free memory", 2, "bottom", "instance", "free memory"),
        ("top hosts by CPU", 5, "top", "instance", "CPU"),
        ("top 5 by CPU", 5, "top", "instance", "CPU"),
        ("the three hosts with the lowest memory used", 3, "bottom", "instance", "memory used"),
        ("top 3 racks by CPU usage", 3, "top", "rack", "CPU usage"),
    ],
)
def test_ranking_words(text: str, n: int, order: str, label: str, remainder: str) -> None:
    parts = read_text(text, NOW)
    assert parts.ranking is not None
    assert (parts.ranking.n, parts.ranking.order, parts.group_by, parts.remainder) == (n, order, [label], remainder)
    assert parts.aggregation is None  # "highest" ranks; it does not ask for the peak


def test_several_values_of_one_label_break_the_answer_down() -> None:
    parts = read_text("memory used on hosts web-1 and web-2:9100", NOW)
    assert parts.group_by == ["instance"]
    assert parts.named_values == {"instance": ["web-1", "web-2:9100"]}
    assert parts.filters == {"instance": "~web\\-1(:[0-9]+)?|web\\-2:9100"}


# --- PromQL -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "promql"),
    [
        ("CPU usage by instance", [f"100 * (1 - avg by (instance) (rate({IDLE})))"]),
        ("CPU usage per cpu", [f"100 * (1 - avg by (cpu) (rate({IDLE})))"]),
        # per mode: the share of time in each mode, not the busy share with mode="idle"
        ("CPU usage per mode", ["100 * avg by (mode) (rate(node_cpu_seconds_total[60s]))"]),
        (
            "memory used for each host",
            ["sum by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)"],
        ),
        (
            "p99 request latency by handler",
            [
                "histogram_quantile(0.99, sum by (le, handler) "
                "(rate(prometheus_http_request_duration_seconds_bucket[60s])))"
            ],
        ),
        (
            "top 3 hosts by memory used",
            [
                "sum by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes) and topk(3, "
                "avg_over_time((sum by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes))"
                "[3600s:15s] @ end()))"
            ],
        ),
        (
            "the 2 least busy CPUs",
            [
                f"100 * (1 - avg by (cpu) (rate({IDLE}))) and bottomk(2, avg_over_time((100 * (1 - avg by (cpu) "
                f"(rate({IDLE}))))[3600s:15s] @ end()))"
            ],
        ),
        (
            "CPU now vs the same hour yesterday",
            [
                f"100 * (1 - avg(rate({IDLE})))",
                f"100 * (1 - avg(rate({IDLE} offset 1d)))",
            ],
        ),
        (
            "memory used this week compared to last week",
            [
                "sum(node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)",
                "sum(node_memory_MemTotal_bytes offset 7d - node_memory_MemAvailable_bytes offset 7d)",
            ],
        ),
        (
            "CPU and memory used for the last hour",
            [
                f"100 * (1 - avg(rate({IDLE})))",
                "sum(node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)",
            ],
        ),
    ],
)
def test_promql(question: str, promql: list[str], recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan(question, recorded, shared_embedder)
    assert [q.promql for q in query.planned()] == promql
    assert not query.missing


def test_a_ranking_uses_the_statistic_asked_for() -> None:
    assert ranked("m", 2, "top", 3600, 15, "max") == "m and topk(2, max_over_time((m)[3600s:15s] @ end()))"
    assert ranked("m", 1, "bottom", 600, 5, "p95") == (
        "m and bottomk(1, quantile_over_time(0.95, (m)[600s:5s] @ end()))"
    )


def test_two_windows_of_different_lengths_run_two_range_queries(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("CPU usage in March vs February", recorded, shared_embedder)
    current, baseline = query.planned()
    assert current.promql == baseline.promql
    assert (current.time_range.start_time, current.time_range.end_time) == (
        datetime(2025, 3, 1, tzinfo=UTC),
        datetime(2025, 4, 1, tzinfo=UTC),
    )
    assert (baseline.time_range.start_time, baseline.time_range.end_time) == (
        datetime(2025, 2, 1, tzinfo=UTC),
        datetime(2025, 3, 1, tzinfo=UTC),
    )
    assert baseline.role == "baseline"


# --- what the question names that the server does not have -------------------------------


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        ("CPU usage by datacenter", "CPU usage by datacenter"),
        ("top 3 racks by CPU usage", "CPU usage by rack"),
        ("CPU usage on interface eth0", "CPU usage for device eth0"),
    ],
)
def test_a_label_the_metric_does_not_have_is_a_missing_part(
    question: str, missing: str, recorded: Any, shared_embedder: Embedder
) -> None:
    query = _plan(question, recorded, shared_embedder)
    assert [q.promql for q in query.planned()] == [f"100 * (1 - avg(rate({IDLE})))"]
    assert [m.part for m in query.missing] == [missing]
    assert "its labels are cpu, instance, job, mode" in query.missing[0].reason
    assert query.missing[0].error_type == "invalid_query"


@pytest.mark.parametrize(
    ("question", "part", "word"),
    [
        ("CPU usage and GPU utilisation for the last hour", "GPU utilisation", "gpu"),
        ("memory used and battery level today", "battery level", "battery"),
        ("CPU usage and the temperature of the CPU", "temperature of the CPU", "temperature"),
    ],
)
def test_a_metric_the_server_lacks_beside_one_it_has(
    question: str, part: str, word: str, recorded: Any, shared_embedder: Embedder
) -> None:
    query = _plan(question, recorded, shared_embedder)
    assert len(query.planned()) == 1 and not query.also
    assert [m.part for m in query.missing] == [part]
    assert query.missing[0].error_type == "metric_not_found"
    assert f"'{word}'" in query.missing[0].reason
    assert query.missing[0].suggestion and "The closest metrics are" in query.missing[0].suggestion


@pytest.mark.parametrize(
    ("question", "closest"),
    [
        ("what is the temperature of the CPU?", "node_cpu_seconds_total"),
        ("GPU utilisation for the last hour", ""),
        ("fan speed of the server", ""),
        ("show node_memory_Foo_bytes for the last hour", "node_memory_"),
    ],
)
def test_a_metric_that_is_not_there_is_not_answered_with_a_neighbour(
    question: str, closest: str, recorded: Any, shared_embedder: Embedder
) -> None:
    failure = _error(question, recorded, shared_embedder)
    assert failure.error.error_type == "metric_not_found"
    assert failure.error.suggestion is not None and closest in failure.error.suggestion


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("forecast CPU usage for next week", "Forecasting is not supported"),
        ("predict memory usage for tomorrow", "Forecasting is not supported"),
        ("will the disk fill up next month?", "Forecasting is not supported"),
        ("detect anomalies in CPU usage", "Anomaly detection is not supported"),
        ("are there any anomalies in network traffic?", "Anomaly detection is not supported"),
        ("is CPU usage correlated with network traffic?", "Correlating metrics is not supported"),
    ],
)
def test_analyses_the_agent_cannot_do(question: str, message: str, recorded: Any, shared_embedder: Embedder) -> None:
    failure = _error(question, recorded, shared_embedder)
    assert failure.error.error_type == "unsupported_operation"
    assert failure.error.message.startswith(message)
    assert failure.error.suggestion  # what it can do instead


@pytest.mark.parametrize(
    "question",
    [
        "how busy are the processors lately",
        "CPU utilisation",
        "bytes did we send over the network",
        "free disk space",
        "Are all scrape targets up?",
        "Show CPU usage for the last hour, take 3",
    ],
)
def test_ordinary_wordings_still_find_their_metric(question: str, recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan(question, recorded, shared_embedder)
    assert query.promql and not query.missing and not query.also
