"""Step 4 and the answer: series to `MetricsQueryResult`, statistics, and one sentence.

Pure Python on purpose: a range query returns at most a few hundred points, for which
sorting a list is faster than importing numpy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from concerto.packs.metrics.models import (
    QUANTILES,
    AggregationStats,
    Combined,
    DataPoint,
    MetricsQuery,
    MetricsQueryResult,
    MissingPart,
    PlannedQuery,
    RunQuery,
    SeriesComparison,
    SeriesResult,
    TimeRange,
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


def headline(
    query: MetricsQuery, values: Sequence[float], stats: AggregationStats | None, duration_s: float | None = None
) -> float | None:
    """The number the question asks for: the statistic its aggregation names.

    `duration_s` is the length of the window the values cover (default the query's current
    window): a total of a rate is its mean times that length, so February's total is taken
    over February's 28 days, not March's 31.
    """
    if stats is None:
        return None
    agg = query.aggregation
    if agg == "sum" and query.unit.endswith("/s"):
        length = query.time_range.duration_seconds if duration_s is None else duration_s
        return stats.mean * length  # a rate summed over time is a total
    if agg in QUANTILES and "histogram_quantile" not in query.promql:
        return percentile(sorted(values), QUANTILES[agg])
    return {"min": stats.min, "max": stats.max, "sum": stats.sum, "last": stats.last}.get(agg or "", stats.mean)


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the server says about the data it holds, asked when a window comes back empty or
    starts late: the earliest sample (`data_start`) and how long data is kept (`retention`)."""

    data_start: datetime | None = None
    retention: str | None = None
    known_values: dict[str, list[str]] = field(default_factory=dict)


def _labels(series: Series) -> dict[str, str]:
    return {k: v for k, v in series.labels.items() if k != "__name__"}


def _series_result(part: MetricsQuery, planned: PlannedQuery, series: Series) -> SeriesResult:
    samples = [(t, v) for t, v in series.samples if math.isfinite(v)]
    if planned.role == "baseline" and part.comparison is not None and part.comparison.offset_seconds:
        # run with `offset` over the current window: the values are from the baseline window,
        # their timestamps are the current window's; put them back where they were measured
        samples = [(t - part.comparison.offset_seconds, v) for t, v in samples]
    values = [v for _, v in samples]
    stats = statistics(values)
    return SeriesResult(
        metric_name=part.metric_name,
        label=part.label,
        unit=part.unit,
        labels=_labels(series),
        role=planned.role,
        window=planned.time_range.expression if planned.role == "current" else _baseline_window(part),
        promql=planned.promql,
        datapoints=[DataPoint(timestamp=datetime.fromtimestamp(t, UTC), value=v) for t, v in samples],
        datapoint_count=len(samples),
        statistics=stats,
        value=headline(part, values, stats, _measured_window(part, planned).duration_seconds),
        is_empty=not samples,
    )


def _measured_window(part: MetricsQuery, planned: PlannedQuery) -> TimeRange:
    """The window a planned query's values were measured over (the baseline's own window)."""
    if planned.role == "baseline" and part.comparison is not None:
        return part.comparison.baseline
    return planned.time_range


def _baseline_window(part: MetricsQuery) -> str:
    return part.comparison.baseline.expression if part.comparison is not None else ""


def _ordered(part: MetricsQuery, results: list[SeriesResult]) -> list[SeriesResult]:
    """Series of a breakdown by their value, highest first (lowest first for a bottom-N ranking)."""
    if not part.group_by:
        return results
    bottom = part.ranking is not None and part.ranking.order == "bottom"
    ranked = sorted(
        results,
        key=lambda r: (r.value is None, (r.value or 0.0) if bottom else -(r.value or 0.0), sorted(r.labels.items())),
    )
    return ranked[: part.ranking.n] if part.ranking is not None else ranked


def _compare(part: MetricsQuery, current: list[SeriesResult], baseline: list[SeriesResult]) -> list[SeriesComparison]:
    by_labels = {tuple(sorted(b.labels.items())): b for b in baseline}
    out = []
    for cur in current:
        base = by_labels.get(tuple(sorted(cur.labels.items())))
        base_value = base.value if base is not None else None
        difference = change = None
        if cur.value is not None and base_value is not None:
            difference = cur.value - base_value
            change = difference / abs(base_value) * 100 if base_value else None
        out.append(
            SeriesComparison(
                metric_name=part.metric_name,
                label=part.label,
                unit=part.unit,
                labels=cur.labels,
                current=cur.value,
                baseline=base_value,
                difference=difference,
                change_percent=change,
                current_window=part.time_range.expression,
                baseline_window=_baseline_window(part),
            )
        )
    return out


def _value_matches(label: str, value: str, found: str) -> bool:
    """Whether a named value is the series' value (a host without a port matches any port)."""
    return found == value or (label == "instance" and ":" not in value and found.startswith(value + ":"))


def _runtime_missing(
    part: MetricsQuery, current: list[SeriesResult], baseline: list[SeriesResult], coverage: Coverage
) -> list[MissingPart]:
    """Parts of the question the data leaves unanswered: named label values no series has, a
    comparison's baseline without data."""
    out = []
    window = part.time_range.expression
    for label, values in part.named_values.items():
        for value in values:
            if any(_value_matches(label, value, r.labels.get(label, "")) for r in current if not r.is_empty):
                continue
            if not part.group_by and current and any(not r.is_empty for r in current):
                continue  # one merged series: it has data, so the filter matched
            known = coverage.known_values.get(label, [])
            out.append(
                MissingPart(
                    part=f"{part.label} for {_LABEL_NAMES.get(label, label)} {value}",
                    reason=f"no series has {label}={value} {_over(window)}"
                    + (f" ({label} takes the values {', '.join(known[:8])})" if known else ""),
                    error_type="unanswered_part",
                    suggestion=f"Ask for one of the values {label} takes: {', '.join(known[:8])}." if known else None,
                )
            )
    if part.comparison is not None and current and not any(not b.is_empty for b in baseline):
        base = part.comparison.baseline
        reason = f"there is no data for {base.expression} to compare with"
        if coverage.data_start is not None and base.end_time <= coverage.data_start:
            reason += f": this server holds data only from {_when(coverage.data_start)}"
        elif coverage.retention:
            reason += f" (this server keeps {coverage.retention} of data)"
        out.append(MissingPart(part=f"{part.label} {base.expression}", reason=reason, error_type="unanswered_part"))
    return out


def build_result(
    query: MetricsQuery,
    runs: Sequence[tuple[PlannedQuery, Sequence[Series]]],
    source: str = "prometheus",
    coverage: Coverage | None = None,
) -> MetricsQueryResult:
    """Wrap what the range queries returned in a validated `MetricsQueryResult`.

    The top-level fields describe the first metric's current window as one series (several
    merged, as the single-series answer always did); `series` keeps every series with its
    labels, `comparisons` the current against the baseline value of each, and `missing`
    the parts of the question the data leaves unanswered.
    """
    coverage = coverage or Coverage()
    all_series: list[SeriesResult] = []
    comparisons: list[SeriesComparison] = []
    missing = list(query.missing)
    queries: list[RunQuery] = []
    primary: Sequence[Series] = []
    for planned, returned in runs:
        tr = planned.time_range
        queries.append(
            RunQuery(
                metric_name=planned.metric_name,
                promql=planned.promql,
                start=tr.start_time,
                end=tr.end_time,
                step_seconds=tr.step_seconds,
                role=planned.role,
                series_count=len(returned),
            )
        )
    for part in query.parts():
        mine = [(p, r) for p, r in runs if p.metric_name == part.metric_name]
        current = [_series_result(part, p, s) for p, r in mine if p.role == "current" for s in r]
        current = _ordered(part, current)
        kept = {tuple(sorted(c.labels.items())) for c in current}
        baseline = [
            b
            for b in (_series_result(part, p, s) for p, r in mine if p.role == "baseline" for s in r)
            if not part.group_by or tuple(sorted(b.labels.items())) in kept
        ]
        all_series += current + baseline
        if part.comparison is not None:
            comparisons += _compare(part, current, baseline)
        missing += _runtime_missing(part, current, baseline, coverage)
        if part is query:
            primary = [s for p, r in mine if p.role == "current" for s in r]
            if part.ranking is not None:
                primary = [s for s in primary if tuple(sorted(_labels(s).items())) in kept]
    combined = combination(query, len(primary))
    samples = merge_series(primary, "sum" if combined == "sum" else "avg") if primary else []
    points = [DataPoint(timestamp=datetime.fromtimestamp(t, UTC), value=v) for t, v in samples]
    values = [v for _, v in samples]
    stats = statistics(values)
    value = headline(query, values, stats) if combined != "mean" else None
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
        series_count=len(primary),
        statistics=stats,
        is_empty=not points,
        value=value,
        combined=combined,
        source="grafana" if source == "grafana" else "prometheus",
        group_by=query.group_by,
        ranking=query.ranking,
        series=all_series,
        comparisons=comparisons,
        queries=queries,
        missing=_unique(missing),
        data_start=coverage.data_start,
    )


def additive(unit: str) -> bool:
    """Whether values in `unit` add up across series (bytes, rates, counts), unlike a share
    in %, a latency or a load average."""
    return unit in ("bytes", "count") or unit.endswith("/s")


def combination(query: MetricsQuery, series: int) -> Combined:
    """How the top-level series of an answer combines the series returned: `single` (one),
    `sum` (a breakdown of an additive quantity, or a total asked for) or `mean` (a breakdown of
    a share or level: the mean is only a shape, so the top-level `value` is left unset)."""
    if series <= 1:
        return "single"
    if query.aggregation == "sum" or additive(query.unit):
        return "sum"
    return "mean" if query.group_by else "single"


def _unique(parts: list[MissingPart]) -> list[MissingPart]:
    seen: set[str] = set()
    out = []
    for part in parts:
        if part.sentence not in seen:
            seen.add(part.sentence)
            out.append(part)
    return out


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


_LABEL_NAMES = {"instance": "host", "cpu": "CPU", "device": "device", "mountpoint": "mount point"}
_STAT_NAMES = {
    "max": "peak",
    "min": "minimum",
    "last": "latest",
    "sum": "total",
    "p50": "median",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
}


def _where(query: MetricsQuery) -> str:
    parts = []
    for label, value in query.filters.items():
        if label in query.named_values and len(query.named_values[label]) > 1:
            shown = " and ".join(query.named_values[label])
        else:
            shown = value.lstrip("~")
        parts.append(f"on {shown}" if label == "instance" else f"for {label} {shown}")
    return (" " + " ".join(parts)) if parts else ""


def _over(expression: str) -> str:
    """'over the last hour', 'in H2 (...)', but 'yesterday', 'this year' and 'since 9am' as they are."""
    if expression.startswith("the "):
        return f"over {expression}"
    if expression.endswith(" ago"):
        return expression
    first = expression.split(" ", 1)[0].lower()
    if first in {"yesterday", "today", "this", "last", "since", "from", "between", "in", "during", "year"}:
        return expression
    return f"in {expression}"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _what(result_label: str, query: MetricsQuery) -> str:
    # A metric name keeps its spelling; a phrase starts the sentence with a capital.
    first = result_label.split(" ")[0]
    return (result_label if "_" in first else result_label[:1].upper() + result_label[1:]) + _where(query)


def _lower(what: str) -> str:
    return what if what[1:2].isupper() or "_" in what.split(" ")[0] else what[:1].lower() + what[1:]


def series_name(labels: dict[str, str], group_by: Sequence[str]) -> str:
    """How one series of a breakdown is named: "127.0.0.1:9100", "CPU 1", "mode user"."""
    shown = [label for label in group_by if label in labels] or sorted(labels)
    if len(shown) == 1:
        label = shown[0]
        value = labels[label]
        return value if label == "instance" else f"{_LABEL_NAMES.get(label, label)} {value}"
    return ", ".join(f"{label}={labels[label]}" for label in shown) or "all series"


def _stat(query: MetricsQuery) -> str:
    return _STAT_NAMES.get(query.aggregation or "", "average")


def _signed(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:+.1f} percentage points"
    text = format_value(abs(value), unit)
    return ("+" if value >= 0 else "-") + text


def _change(comparison: SeriesComparison) -> str:
    if comparison.difference is None:
        return "no baseline"
    pct = f", {comparison.change_percent:+.1f}%" if comparison.change_percent is not None else ""
    return f"{_signed(comparison.difference, comparison.unit)}{pct}"


def _coverage_note(result: MetricsQueryResult) -> str:
    """Why a window has no data when it lies before the server's first sample."""
    start = result.data_start
    if start is not None and result.time_range.end_time <= start:
        return f": this server holds data only from {_when(start)}, after the window ends"
    return ""


def _single(result: MetricsQueryResult, query: MetricsQuery) -> str:
    """The sentence for one metric answered as one series (the answer before breakdowns)."""
    what = _what(result.label, query)
    expression = result.time_range.expression
    stats = result.statistics
    if stats is None or result.value is None:
        return f"No data for {_lower(what)} {_over(expression)}{_coverage_note(result)}."
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


def _part_sentence(result: MetricsQueryResult, part: MetricsQuery) -> str:
    """One sentence for one metric of the answer: a breakdown, a ranking, a comparison or a value."""
    current = [s for s in result.series if s.metric_name == part.metric_name and s.role == "current"]
    data = [s for s in current if s.value is not None]
    comps = [c for c in result.comparisons if c.metric_name == part.metric_name]
    u = part.unit
    what = _what(part.label, part)
    over = _over(part.time_range.expression)
    if not data:
        return f"No data for {_lower(what)} {over}{_coverage_note(result)}."
    if part.comparison is not None and not part.group_by:
        cur = data[0]
        comp = comps[0] if comps else None
        base_window = part.comparison.baseline.expression
        stat = _stat(part)
        verb = "averaged" if stat == "average" else f"had a {stat} of"
        if comp is None or comp.baseline is None:
            return (
                f"{what} {verb} {format_value(cur.value or 0.0, u)} {over}; {base_window} has no data to compare with."
            )
        return (
            f"{what} {verb} {format_value(cur.value or 0.0, u)} {over} against "
            f"{format_value(comp.baseline, u)} {base_window}: {_change(comp)}."
        )
    if part.ranking is not None:
        order = "highest" if part.ranking.order == "top" else "lowest"
        noun = _LABEL_NAMES.get(part.group_by[0], part.group_by[0]) if part.group_by else "series"
        if part.ranking.n == 1:
            best = data[0]
            return (
                f"{series_name(best.labels, part.group_by)} has the {order} {_lower(part.label)}{_where(part)} "
                f"{over}: {format_value(best.value or 0.0, u)} ({_stat(part)})."
            )
        listed = ", ".join(f"{series_name(s.labels, part.group_by)} ({format_value(s.value or 0.0, u)})" for s in data)
        head = "Top" if part.ranking.order == "top" else "Bottom"
        only = (
            f" Only {len(data)} {noun}{'s' if len(data) != 1 else ''} had data." if len(data) < part.ranking.n else ""
        )
        by = f"{_lower(part.label)}{_where(part)}"
        return f"{head} {part.ranking.n} {noun}s by {by} {over} ({_stat(part)}): {listed}.{only}"
    if not part.group_by:  # another metric of the same question, as one series
        single = data[0]
        stats = single.statistics
        assert stats is not None
        return (
            f"{what} {'averaged' if _stat(part) == 'average' else f'had a {_stat(part)} of'} "
            f"{format_value(single.value or 0.0, u)} {over} (min {format_value(stats.min, u)}, "
            f"max {format_value(stats.max, u)}, last {format_value(stats.last, u)})."
        )
    if part.group_by:
        by = " and ".join(_LABEL_NAMES.get(label, label) for label in part.group_by)
        if part.comparison is not None and comps:
            with_change = [c for c in comps if c.difference is not None]
            if len(with_change) == 1:
                one = with_change[0]
                return (
                    f"{what} by {by} {over}: {series_name(one.labels, part.group_by)} at "
                    f"{format_value(one.current or 0.0, u)} against {format_value(one.baseline or 0.0, u)} "
                    f"{part.comparison.baseline.expression} ({_change(one)})."
                )
            if with_change:
                up = max(with_change, key=lambda c: c.difference or 0.0)
                down = min(with_change, key=lambda c: c.difference or 0.0)
                return (
                    f"{what} by {by} {over} against {part.comparison.baseline.expression}: largest rise "
                    f"{series_name(up.labels, part.group_by)} ({_change(up)}), largest fall "
                    f"{series_name(down.labels, part.group_by)} ({_change(down)})."
                )
        if len(data) == 1:
            single = data[0]
            return (
                f"{what} by {by} {over}: one series, {series_name(single.labels, part.group_by)} at "
                f"{format_value(single.value or 0.0, u)} ({_stat(part)})."
            )
        high, low = data[0], data[-1]
        return (
            f"{what} by {by} {over}: highest {series_name(high.labels, part.group_by)} at "
            f"{format_value(high.value or 0.0, u)}, lowest {series_name(low.labels, part.group_by)} at "
            f"{format_value(low.value or 0.0, u)} ({_stat(part)} of each of {len(data)} series)."
        )
    return ""


def summarize(result: MetricsQueryResult, query: MetricsQuery) -> str:
    """The answer in a sentence per metric asked, with the unit."""
    sentences = []
    for part in query.parts():
        plain = not part.group_by and part.comparison is None
        if plain and part is query:
            sentences.append(_single(result, query))
        else:
            sentences.append(_part_sentence(result, part) or _single(result, query))
    return " ".join(s for s in sentences if s)


def key_findings(result: MetricsQueryResult, query: MetricsQuery | None = None) -> list[str]:
    """Facts for the synthesizer: the number asked for first (it restates the summary), then
    the spread or one line per series of a breakdown, the comparisons, what backs them (points,
    step, the PromQL run), where the data starts when a window reaches before it, and the
    parts of the question left unanswered."""
    out: list[str] = []
    stats = result.statistics
    u = result.unit
    parts = query.parts() if query is not None else []
    simple = query is None or (not query.group_by and query.comparison is None and not query.also)
    if simple and stats is not None and result.value is not None:
        out += [
            f"{result.label}: {format_value(result.value, u)}",
            f"median {format_value(stats.p50, u)}, p95 {format_value(stats.p95, u)}",
            f"{result.datapoint_count} point{'' if result.datapoint_count == 1 else 's'} every "
            f"{result.time_range.step_seconds} s from {result.promql}",
        ]
    elif query is not None:
        for part in parts:
            current = [s for s in result.series if s.metric_name == part.metric_name and s.role == "current"]
            if part.comparison is not None:
                for c in [c for c in result.comparisons if c.metric_name == part.metric_name][:10]:
                    who = series_name(c.labels, part.group_by) + ": " if part.group_by else ""
                    cur = format_value(c.current, part.unit) if c.current is not None else "no data"
                    base = format_value(c.baseline, part.unit) if c.baseline is not None else "no data"
                    now_over = _over(c.current_window)
                    out.append(f"{who}{part.label} {cur} {now_over} vs {base} {c.baseline_window} ({_change(c)})")
            elif part.group_by:
                for s in current[:10]:
                    if s.statistics is None or s.value is None:
                        continue
                    out.append(
                        f"{series_name(s.labels, part.group_by)}: {part.label} {format_value(s.value, part.unit)} "
                        f"({_stat(part)}; min {format_value(s.statistics.min, part.unit)}, "
                        f"max {format_value(s.statistics.max, part.unit)})"
                    )
                if len(current) > 10:
                    out.append(f"... and {len(current) - 10} more series")
            elif current and current[0].value is not None:
                out.append(f"{part.label}: {format_value(current[0].value, part.unit)} ({_stat(part)})")
        for run in result.queries:
            window = f"{_when(run.start)} to {_when(run.end)}"
            out.append(f"{run.series_count} series every {run.step_seconds} s, {window}, from {run.promql}")
    if result.data_start is not None and result.time_range.start_time < result.data_start < result.time_range.end_time:
        out.append(
            f"Data starts at {_when(result.data_start)}, inside the window: the part of "
            f"{result.time_range.expression} before it has no data (not zero)"
        )
    out += [part.sentence for part in result.missing]
    return out
