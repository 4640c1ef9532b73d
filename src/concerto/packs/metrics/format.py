"""Step 4 and the answer: series to `MetricsQueryResult`, statistics, and one sentence.

Pure Python on purpose: a range query returns at most a few hundred points, for which
sorting a list is faster than importing numpy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from concerto.packs.metrics.models import (
    QUANTILES,
    AggregationStats,
    DataPoint,
    MetricsQuery,
    MetricsQueryResult,
)

if TYPE_CHECKING:
    from concerto.packs.metrics.backend import Series


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values (q in 0..1)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def statistics(values: Sequence[float]) -> AggregationStats | None:
    """min, max, mean, last, sum, p50, p95 of the values in time order; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    total = math.fsum(values)
    return AggregationStats(
        min=ordered[0],
        max=ordered[-1],
        mean=total / len(values),
        last=values[-1],
        sum=total,
        p50=percentile(ordered, 0.5),
        p95=percentile(ordered, 0.95),
        count=len(values),
    )


def merge_series(series: Sequence[Series], combine: str = "avg") -> list[tuple[float, float]]:
    """One series out of several (same timestamps): their mean, or sum when asked."""
    if len(series) == 1:
        samples = series[0].samples
    else:
        by_time: dict[float, list[float]] = defaultdict(list)
        for s in series:
            for t, v in s.samples:
                by_time[t].append(v)
        samples = [
            (t, math.fsum(vs) if combine == "sum" else math.fsum(vs) / len(vs)) for t, vs in sorted(by_time.items())
        ]
    return [(t, v) for t, v in samples if math.isfinite(v)]


def headline(query: MetricsQuery, values: Sequence[float], stats: AggregationStats | None) -> float | None:
    """The number the question asks for: the statistic its aggregation names."""
    if stats is None:
        return None
    agg = query.aggregation
    if agg == "sum" and query.unit.endswith("/s"):
        return stats.mean * query.time_range.duration_seconds  # a rate summed over time is a total
    if agg in QUANTILES and "histogram_quantile" not in query.promql:
        return percentile(sorted(values), QUANTILES[agg])
    return {"min": stats.min, "max": stats.max, "sum": stats.sum, "last": stats.last}.get(agg or "", stats.mean)


def build_result(query: MetricsQuery, series: Sequence[Series], source: str = "prometheus") -> MetricsQueryResult:
    """Wrap the returned series in a validated `MetricsQueryResult`."""
    samples = merge_series(series, "sum" if query.aggregation == "sum" else "avg") if series else []
    points = [DataPoint(timestamp=datetime.fromtimestamp(t, UTC), value=v) for t, v in samples]
    values = [v for _, v in samples]
    stats = statistics(values)
    return MetricsQueryResult(
        metric_name=query.metric_name,
        label=query.label,
        unit=query.unit,
        promql=query.promql,
        time_range=query.time_range,
        aggregation=query.aggregation,
        filters=query.filters,
        datapoints=points,
        datapoint_count=len(points),
        series_count=len(series),
        statistics=stats,
        is_empty=not points,
        value=headline(query, values, stats),
        source="grafana" if source == "grafana" else "prometheus",
    )


_BINARY = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def format_value(value: float, unit: str) -> str:
    """A value with its unit, as a person reads it (3.2%, 1.5 GiB, 12 ms, 4.10 req/s)."""
    if unit == "%":
        return f"{value:.1f}%"
    if unit in ("bytes", "bytes/s"):
        suffix = "/s" if unit == "bytes/s" else ""
        for name, size in _BINARY:
            if abs(value) >= size:
                return f"{value / size:.1f} {name}{suffix}"
        return f"{value:.0f} B{suffix}"
    if unit == "seconds":
        if abs(value) < 1:
            return f"{value * 1000:.1f} ms"
        if abs(value) < 120:
            return f"{value:.2f} s"
        if abs(value) < 7200:
            return f"{value / 60:.1f} min"
        if abs(value) < 172800:
            return f"{value / 3600:.1f} h"
        return f"{value / 86400:.1f} days"
    number = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if not unit:
        return number
    if unit.startswith("/"):
        return f"{number}{unit}"
    return f"{number} {unit}"


def _where(query: MetricsQuery) -> str:
    parts = []
    for label, value in query.filters.items():
        shown = value.lstrip("~")
        parts.append(f"on {shown}" if label == "instance" else f"for {label} {shown}")
    return (" " + " ".join(parts)) if parts else ""


def _over(expression: str) -> str:
    """'over the last hour', but 'yesterday' and 'from 10:00 to 11:00' as they are."""
    return f"over {expression}" if expression.startswith("the ") else expression


def summarize(result: MetricsQueryResult, query: MetricsQuery) -> str:
    """One sentence saying what the numbers mean, with the unit."""
    label = result.label
    # A metric name keeps its spelling; a phrase starts the sentence with a capital.
    what = (label if "_" in label.split(" ")[0] else label[:1].upper() + label[1:]) + _where(query)
    expression = result.time_range.expression
    stats = result.statistics
    if stats is None or result.value is None:
        lowered = what if what[1:2].isupper() or "_" in what.split(" ")[0] else what[:1].lower() + what[1:]
        return f"No data for {lowered} {_over(expression)}."
    u = result.unit

    def f(v: float) -> str:
        return format_value(v, u)

    agg = result.aggregation
    if agg == "max":
        return f"{what} peaked at {f(stats.max)} {_over(expression)} (average {f(stats.mean)}, last {f(stats.last)})."
    if agg == "min":
        return f"{what} was lowest at {f(stats.min)} {_over(expression)} (average {f(stats.mean)}, max {f(stats.max)})."
    if agg == "sum" and u.endswith("/s"):
        total = format_value(result.value, u.removesuffix("/s") or "")
        return f"{what} totalled {total} {_over(expression)} (average {f(stats.mean)})."
    if agg == "last":
        return f"{what} is {f(stats.last)} now (average {f(stats.mean)} {_over(expression)})."
    if agg in QUANTILES and "histogram_quantile" not in result.promql:
        return (
            f"{what} had a {agg} of {f(result.value)} {_over(expression)} "
            f"(average {f(stats.mean)}, max {f(stats.max)})."
        )
    return (
        f"{what} averaged {f(stats.mean)} {_over(expression)} "
        f"(min {f(stats.min)}, max {f(stats.max)}, last {f(stats.last)})."
    )


def key_findings(result: MetricsQueryResult) -> list[str]:
    """Facts for the synthesizer: the number asked for first (it restates the summary),
    then the spread, then what backs it (points, step, the PromQL run)."""
    stats = result.statistics
    if stats is None or result.value is None:
        return []
    u = result.unit
    return [
        f"{result.label}: {format_value(result.value, u)}",
        f"median {format_value(stats.p50, u)}, p95 {format_value(stats.p95, u)}",
        f"{result.datapoint_count} points every {result.time_range.step_seconds} s from {result.promql}",
    ]
