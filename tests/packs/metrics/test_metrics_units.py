"""The pieces that need no server: models, windows and steps, PromQL, formatting."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from concerto.packs.metrics.format import format_value, percentile, statistics
from concerto.packs.metrics.models import (
    MetricsQuery,
    MetricsQueryResult,
    QueryError,
    TimeRange,
    initial_state,
)
from concerto.packs.metrics.parser import read_text
from concerto.packs.metrics.promql import (
    CONCEPTS_BY_KEY,
    build_concept,
    build_metric,
    escape,
    selector,
    unit_of,
)
from concerto.packs.metrics.timeparse import TimeParseError, choose_step, parse_time_range

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _range(hours: float = 1) -> TimeRange:
    return TimeRange(start_time=NOW - timedelta(hours=hours), end_time=NOW, step_seconds=15)


# --- models -----------------------------------------------------------------------------


def test_initial_state_matches_the_spec_example() -> None:
    assert initial_state("Show CPU usage for the last hour") == {
        "user_query": "Show CPU usage for the last hour",
        "parsed_query": None,
        "result": None,
        "error": None,
        "processing_time_ms": 0.0,
    }


def test_query_error_types_are_exactly_the_specs() -> None:
    for kind in (
        "parsing_error",
        "metric_not_found",
        "invalid_time_range",
        "unsupported_operation",
        "grafana_unavailable",
        "invalid_query",
    ):
        assert QueryError(error_type=kind, message="m").error_type == kind
    with pytest.raises(ValidationError):
        QueryError(error_type="timeout", message="m")  # type: ignore[arg-type]


def test_result_must_be_consistent() -> None:
    common = {"metric_name": "m", "label": "m", "unit": "", "promql": "m", "time_range": _range()}
    empty = MetricsQueryResult(**common, datapoints=[], datapoint_count=0, is_empty=True)
    assert empty.statistics is None
    with pytest.raises(ValidationError):
        MetricsQueryResult(**common, datapoints=[], datapoint_count=1, is_empty=True)
    with pytest.raises(ValidationError):
        MetricsQueryResult(**common, datapoints=[], datapoint_count=0, is_empty=False)


def test_time_range_requires_time_zones() -> None:
    with pytest.raises(ValidationError):
        TimeRange(start_time=datetime(2026, 1, 1), end_time=datetime(2026, 1, 2))


def test_metrics_query_defaults_metrics_to_its_name() -> None:
    query = MetricsQuery(metric_name="node_load1", time_range=_range())
    assert query.metrics == ["node_load1"]
    assert query.label == "node_load1"


# --- windows and steps ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end", "expression"),
    [
        ("Show CPU usage for the last hour", NOW - timedelta(hours=1), NOW, "the last hour"),
        (
            "memory over the past 30 minutes",
            NOW - timedelta(minutes=30),
            NOW,
            "the last 30 minutes",
        ),
        ("load since 2 hours ago", NOW - timedelta(hours=2), NOW, "the last 2 hours"),
        (
            "cpu yesterday",
            datetime(2026, 11, 22, tzinfo=UTC),
            datetime(2026, 11, 23, tzinfo=UTC),
            "yesterday",
        ),
        ("cpu today", datetime(2026, 11, 23, tzinfo=UTC), NOW, "today"),
        ("cpu in the last 24h", NOW - timedelta(days=1), NOW, "the last 24 hours"),
        ("cpu for the last two weeks", NOW - timedelta(weeks=2), NOW, "the last 2 weeks"),
        (
            "cpu between 10:00 and 11:00",
            NOW - timedelta(hours=2),
            NOW - timedelta(hours=1),
            "from 10:00 to 11:00",
        ),
        (
            "cpu from 2026-11-20 10:00 to 2026-11-21T10:00Z",
            datetime(2026, 11, 20, 10, tzinfo=UTC),
            datetime(2026, 11, 21, 10, tzinfo=UTC),
            "from 2026-11-20 10:00 to 2026-11-21T10:00Z",
        ),
        ("cpu since 9am", NOW - timedelta(hours=3), NOW, "since 9am"),
        ("cpu usage", NOW - timedelta(hours=1), NOW, "the last hour"),
    ],
)
def test_windows_are_relative_to_the_given_clock(text: str, start: datetime, end: datetime, expression: str) -> None:
    window = parse_time_range(text, NOW).time_range
    assert (window.start_time, window.end_time, window.expression) == (start, end, expression)


def test_latency_in_seconds_is_not_a_window() -> None:
    assert parse_time_range("latency in seconds", NOW).time_range.expression == "the last hour"


@pytest.mark.parametrize("text", ["cpu from 11:00 to 10:00", "cpu next week", "cpu tomorrow"])
def test_unusable_windows_raise(text: str) -> None:
    with pytest.raises(TimeParseError):
        parse_time_range(text, NOW)


@pytest.mark.parametrize("duration", [60, 300, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400])
def test_step_gives_a_readable_number_of_points(duration: int) -> None:
    points = duration / choose_step(duration)
    assert points <= 250
    if duration >= 3600:
        assert points >= 60


def test_hour_and_thirty_days_steps() -> None:
    assert choose_step(3600) == 15
    assert choose_step(30 * 86400) == 10800  # 3 h: 240 points


# --- reading the question ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "aggregation"),
    [
        ("average cpu", "avg"),
        ("peak memory used", "max"),
        ("lowest free memory", "min"),
        ("total network traffic", "sum"),
        ("p95 latency", "p95"),
        ("99th percentile latency", "p99"),
        ("median latency", "p50"),
        ("current load", "last"),
        ("cpu usage", None),
    ],
)
def test_aggregation_words(text: str, aggregation: str | None) -> None:
    assert read_text(text, NOW).aggregation == aggregation


@pytest.mark.parametrize(
    ("text", "filters"),
    [
        ("cpu on host web-1", {"instance": "web-1"}),
        ("cpu on 10.0.0.5:9100 today", {"instance": "10.0.0.5:9100"}),
        ("request rate for job api", {"job": "api"}),
        ("network on interface eth0", {"device": "eth0"}),
        ('cpu where mode="user"', {"mode": "user"}),
        ('cpu on host "web 1"', {"instance": "web 1"}),
        ("CPU usage on the server for the last hour", {}),
        ("memory on the machine today", {}),
        ("requests for the job today", {}),
        ("CPU usage in mode user", {"mode": "user"}),
    ],
)
def test_label_filters(text: str, filters: dict[str, str]) -> None:
    assert read_text(text, NOW).filters == filters


@pytest.mark.parametrize(
    ("text", "operation"),
    [
        ("Show anomalies in CPU usage", "anomaly_detection"),
        ("forecast memory usage for next week", "forecast"),
        ("predict disk usage", "forecast"),
        ("Show CPU usage", "query"),
    ],
)
def test_unsupported_operations_are_recognised(text: str, operation: str) -> None:
    assert read_text(text, NOW).operation == operation


# --- PromQL -----------------------------------------------------------------------------


def test_selector_escapes_and_lets_filters_override_defaults() -> None:
    assert escape('a"b\\c') == 'a\\"b\\\\c'
    assert selector("m", {"device": "lo"}, {"device": ("!~", "lo")}) == 'm{device="lo"}'
    # re.escape's backslash is itself escaped inside the PromQL string literal.
    assert selector("m", {"instance": "web-1"}) == 'm{instance=~"web\\\\-1(:[0-9]+)?"}'
    assert selector("m", {"instance": "web-1:9100"}) == 'm{instance="web-1:9100"}'


def test_cpu_usage_is_the_busy_fraction_by_rate() -> None:
    names = {"node_cpu_seconds_total": None}
    built = build_concept(CONCEPTS_BY_KEY["cpu_usage"], names, {}, 15, None)
    assert built is not None
    assert built.promql == '100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[60s])))'
    assert built.unit == "%"


def test_latency_uses_histogram_quantile_of_the_bucket_rates() -> None:
    names = {"http_request_duration_seconds_bucket": None, "http_request_duration_seconds": None}
    built = build_concept(CONCEPTS_BY_KEY["request_latency"], names, {"job": "api"}, 15, "p99")
    assert built is not None
    assert built.promql == (
        'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="api"}[60s])))'
    )


def test_concept_missing_its_metric_is_not_built() -> None:
    assert build_concept(CONCEPTS_BY_KEY["cpu_usage"], {}, {}, 15, None) is None


def test_raw_metrics_follow_their_type() -> None:
    counter = build_metric("http_requests_total", "counter", {}, {}, 15, None)
    assert counter.promql == "sum(rate(http_requests_total[60s]))"
    assert counter.unit == "/s"
    gauge = build_metric("node_memory_Active_bytes", "gauge", {}, {}, 15, "max")
    assert gauge.promql == "max(node_memory_Active_bytes)"
    assert gauge.unit == "bytes"
    assert unit_of("node_network_receive_bytes_total", rated=True) == "bytes/s"


def test_rate_window_grows_with_the_step() -> None:
    built = build_concept(CONCEPTS_BY_KEY["cpu_usage"], {"node_cpu_seconds_total": None}, {}, 21600, None)
    assert built is not None and "[21600s]" in built.promql


# --- formatting -------------------------------------------------------------------------


def test_statistics_and_percentiles() -> None:
    stats = statistics([1.0, 2.0, 3.0, 4.0])
    assert stats is not None
    assert (stats.min, stats.max, stats.mean, stats.last, stats.sum) == (1, 4, 2.5, 4, 10)
    assert stats.p50 == 2.5
    assert percentile([1.0, 2.0], 0.95) == pytest.approx(1.95)
    assert statistics([]) is None


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (3.21, "%", "3.2%"),
        (1.5 * 2**30, "bytes", "1.5 GiB"),
        (2048, "bytes/s", "2.0 KiB/s"),
        (0.0123, "seconds", "12.3 ms"),
        (4.1, "req/s", "4.1 req/s"),
        (2.5, "", "2.5"),
    ],
)
def test_values_read_with_their_unit(value: float, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def test_importing_the_pack_stays_light() -> None:
    """The pack is imported on every CLI start: no httpx, numpy or embedder at import."""
    code = (
        "import sys, concerto.agents.base, concerto.agents.registry\n"
        "before = set(sys.modules)\n"
        "import concerto.packs.metrics\n"
        "new = set(sys.modules) - before\n"
        "heavy = sorted(m for m in new if m.split('.')[0] in {'httpx', 'numpy', 'langgraph'}"
        " or m.startswith('concerto.nlp') or m == 'concerto.packs.metrics.backend')\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_metrics_agent_registers_through_the_entry_point() -> None:
    from concerto.agents.loader import load_registry

    registry = load_registry("metrics")
    assert registry.names() == ["metrics_agent"]
    info = registry.get("metrics_agent").info
    assert info.pack == "metrics" and "Show CPU usage for the last hour" in info.examples


def test_metric_vectors_persist_across_processes(tmp_path: Path) -> None:
    import numpy as np

    from concerto.packs.metrics.embed_cache import PersistentEmbeddings

    class Counting:
        dimension = 3

        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.texts += texts
            return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    path = tmp_path / "metrics" / "embeddings.npz"
    first = Counting()
    vectors = PersistentEmbeddings(first, path).embed(["cpu", "memory", "cpu"])
    assert first.texts == ["cpu", "memory"] and vectors.shape == (3, 3)
    second = Counting()
    again = PersistentEmbeddings(second, path).embed(["memory", "cpu"])
    assert second.texts == [] and again[0][0] == 6.0
