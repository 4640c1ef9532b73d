"""The `metrics_agent` node: the five steps of 003_*.txt over a `MetricsQueryState`.

1 parse (LLM when configured, else deterministic), 2 validate (metric exists, window,
operation), 3 execute (range query), 4 format (`MetricsQueryResult`), 5 return the
updated state. Whatever happens, the returned state holds exactly one of `result`
or `error` (the spec's "State Guarantees"); nothing is retried automatically.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from concerto.packs.metrics.models import (
    MetricsQuery,
    MetricsQueryFailure,
    MetricsQueryResult,
    MetricsQueryState,
    PlannedQuery,
    QueryError,
    TimeRange,
)

if TYPE_CHECKING:
    from concerto.llm.base import LLMClient
    from concerto.packs.metrics.backend import MetricInfo, PrometheusBackend, Series
    from concerto.packs.metrics.format import Coverage
    from concerto.resources import Resources
    from concerto.settings import Settings

log = logging.getLogger(__name__)

MAX_RANGE = timedelta(days=400)
STEPS = ("parse", "validate", "query", "format")
Emit = Callable[[str, str, dict[str, Any]], Awaitable[None]]


@dataclass
class NodeDeps:
    """What the node needs: settings, shared resources, the LLM if any, the clock.

    `now=None` reads the wall clock at each call (a LangGraph graph running for long);
    the Concerto agent passes the query's fixed clock.
    """

    settings: Settings
    resources: Resources
    llm: LLMClient | None = None
    now: datetime | None = None
    emit: Emit | None = None


@dataclass
class NodeRun:
    """The final state of one run with the time each step took."""

    state: MetricsQueryState
    timings_ms: dict[str, float] = field(default_factory=dict)
    source: str = "prometheus"


@contextmanager
def _timed(timings: dict[str, float], step: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[step] = round((time.perf_counter() - start) * 1000, 3)


async def _parse(
    question: str,
    now: datetime,
    deps: NodeDeps,
    backend: PrometheusBackend,
    catalog: Mapping[str, MetricInfo],
) -> MetricsQuery:
    from concerto.packs.metrics.embed_cache import PersistentEmbeddings
    from concerto.packs.metrics.parser import parse_question

    embedder = deps.resources.embedder
    path = deps.settings.data_dir / "metrics" / "embeddings.npz"
    cached = deps.resources.get(f"metrics.embeddings:{path}", lambda: PersistentEmbeddings(embedder, path))
    if deps.llm is not None:
        from concerto.llm.base import LLMError
        from concerto.packs.metrics.llm_parse import llm_parse

        try:
            parsed = await llm_parse(question, now, deps.llm, catalog, embedder, cached)
        except LLMError as exc:
            if exc.kind not in ("unavailable", "timeout"):
                raise MetricsQueryFailure(
                    "parsing_error",
                    "Could not understand your query.",
                    suggestion='Rephrase the question, e.g. "Show CPU usage for the last hour".',
                    details={"llm_error": str(exc), "kind": exc.kind},
                ) from exc
            log.warning("LLM unavailable (%s); parsing the metrics question deterministically", exc)
        else:
            # A small model may miss "anomalies" or "forecast"; the words alone decide that.
            from concerto.packs.metrics.parser import read_text

            operation = read_text(question, now).operation
            if operation != "query":
                parsed = parsed.model_copy(update={"operation": operation})
            return parsed
    return parse_question(question, now, catalog, embedder, cached)


def validate(query: MetricsQuery, catalog: Mapping[str, MetricInfo], now: datetime) -> None:
    """Step 2: the operation is supported, every metric exists, the window is usable."""
    from concerto.packs.metrics.match import closest_names

    label = query.label if query.metric_name != "unknown" else "CPU usage"
    if query.operation == "anomaly_detection":
        raise MetricsQueryFailure(
            "unsupported_operation",
            "Anomaly detection is not supported.",
            suggestion=f'Try asking for raw metric data instead, e.g. "Show {label} for the last hour", '
            f'"the peak {label} yesterday" or "{label} now vs the same hour yesterday".',
            details={"operation": query.operation},
        )
    if query.operation == "forecast":
        raise MetricsQueryFailure(
            "unsupported_operation",
            "Forecasting is not supported; only past data can be queried.",
            suggestion=f'Ask about a past window instead, e.g. "Show {label} for the last day" or '
            f'"{label} this week compared to last week".',
            details={"operation": query.operation},
        )
    if query.operation == "correlation":
        raise MetricsQueryFailure(
            "unsupported_operation",
            "Correlating metrics is not supported; each metric can be shown over the same window.",
            suggestion=f'Ask for the metrics side by side instead, e.g. "{label} and memory used for the last hour".',
            details={"operation": query.operation},
        )
    for part in query.parts():
        for metric in part.metrics:
            if metric not in catalog and f"{metric}_bucket" not in catalog:
                near = closest_names(metric, list(catalog))
                raise MetricsQueryFailure(
                    "metric_not_found",
                    f"The metric '{metric}' does not exist on this server.",
                    suggestion=f"Did you mean {', '.join(near)}?" if near else "Ask about another metric.",
                    details={"metric": metric, "closest": near},
                )
    if query.comparison is not None:
        base = query.comparison.baseline
        if base.end_time <= base.start_time:
            raise MetricsQueryFailure(
                "invalid_time_range",
                f"The window compared with ({base.expression}) is empty.",
                suggestion='Compare with a window of its own, e.g. "vs the same hour yesterday".',
                details={"start": base.start_time.isoformat(), "end": base.end_time.isoformat()},
            )
        if base.end_time > query.time_range.start_time:
            raise MetricsQueryFailure(
                "invalid_time_range",
                f"The window compared with ({base.expression}) overlaps {query.time_range.expression}.",
                suggestion='Compare with an earlier window, e.g. "this month vs last month".',
                details={"baseline_end": base.end_time.isoformat(), "start": query.time_range.start_time.isoformat()},
            )
        if base.end_time - base.start_time > MAX_RANGE:
            raise MetricsQueryFailure(
                "invalid_time_range",
                f"The window compared with is longer than {MAX_RANGE.days} days.",
                suggestion='Compare shorter windows, e.g. "this month compared to last month".',
                details={"days": (base.end_time - base.start_time).days},
            )
    tr = query.time_range
    if tr.end_time <= tr.start_time:
        raise MetricsQueryFailure(
            "invalid_time_range",
            "The time range ends before it starts.",
            suggestion='Give the earlier time first, e.g. "from 10:00 to 11:00".',
            details={"start": tr.start_time.isoformat(), "end": tr.end_time.isoformat()},
        )
    if tr.start_time >= now:
        raise MetricsQueryFailure(
            "invalid_time_range",
            "The time range lies in the future; only past data can be queried.",
            suggestion='Ask about a past window, e.g. "for the last hour".',
            details={"start": tr.start_time.isoformat(), "now": now.isoformat()},
        )
    if tr.end_time - tr.start_time > MAX_RANGE:
        raise MetricsQueryFailure(
            "invalid_time_range",
            f"The time range is longer than {MAX_RANGE.days} days.",
            suggestion='Ask about a shorter window, e.g. "for the last 30 days".',
            details={"days": (tr.end_time - tr.start_time).days},
        )
    if not query.promql:
        raise MetricsQueryFailure(
            "invalid_query",
            "No query could be built for this question.",
            suggestion='Name the metric, e.g. "node_load1 for the last hour".',
        )


def _unsupported_without_backend(question: str, now: datetime, failure: MetricsQueryFailure) -> None:
    """An anomaly, forecast or correlation question is unsupported whether or not a backend answers."""
    from concerto.packs.metrics.parser import read_text

    parts = read_text(question, now)
    if parts.operation != "query":
        validate(
            MetricsQuery(metric_name="unknown", time_range=parts.time_range, operation=parts.operation),
            {},
            now,
        )
    raise failure


def aligned_start(tr: TimeRange) -> datetime:
    """Where a range query over `tr` starts so that its last point falls on the window's end.

    Prometheus evaluates at start, start + step, ... up to the end; started a whole number of
    steps before the end, every point sums up the step that ends at it, and the newest data is
    in the answer even when the step is two days long ("CPU usage this year").
    """
    steps = int(tr.duration_seconds // tr.step_seconds)
    return tr.end_time - timedelta(seconds=steps * tr.step_seconds)


async def _coverage(
    backend: PrometheusBackend, query: MetricsQuery, runs: list[tuple[PlannedQuery, list[Series]]]
) -> Coverage:
    """What the server says about its data, asked only when an answer needs it: when a window
    came back empty or starts late (the earliest sample and the retention), and when a label
    value the question names matched nothing (the values that label takes)."""
    from concerto.packs.metrics.format import Coverage

    empty = any(not any(s.samples for s in series) for _, series in runs)
    late = False
    for planned, series in runs:
        firsts = [s.samples[0][0] for s in series if s.samples]
        tr = planned.time_range
        if firsts and min(firsts) > tr.start_time.timestamp() + 2 * tr.step_seconds:
            late = True
    data_start = retention = None
    if empty or late:
        data_start, retention = await asyncio.gather(backend.data_start(), backend.retention())
    known: dict[str, list[str]] = {}
    for part in query.parts():
        for label in part.named_values:
            if label in known:
                continue
            try:
                known[label] = await backend.label_values(label, match=part.metrics[0] if part.metrics else None)
            except MetricsQueryFailure:
                known[label] = []
    return Coverage(data_start=data_start, retention=retention, known_values=known)


async def process(state: MetricsQueryState, deps: NodeDeps) -> NodeRun:
    """Run the five steps on `state` and return the updated state with step timings."""
    from concerto.packs.metrics.backend import get_backend
    from concerto.packs.metrics.format import build_result
    from concerto.packs.metrics.labels import check_labels, label_checked_metrics

    started = time.perf_counter()
    now = deps.now or datetime.now(UTC)
    question = state.get("user_query") or ""
    timings: dict[str, float] = {}
    parsed: MetricsQuery | None = state.get("parsed_query")
    result: MetricsQueryResult | None = None
    error: QueryError | None = None
    source = "prometheus"

    async def emit(title: str, details: dict[str, Any]) -> None:
        if deps.emit is not None:
            await deps.emit(title, question, details)

    try:
        with _timed(timings, "parse"):
            try:
                backend = await get_backend(deps.settings, deps.resources)
                source = backend.source
                catalog = await backend.catalog()
            except MetricsQueryFailure as failure:
                _unsupported_without_backend(question, now, failure)
                raise
            parsed = await _parse(question, now, deps, backend, catalog)
        await emit(
            "Parsed the question",
            {
                "metric": parsed.metric_name,
                "promql": [q.promql for q in parsed.planned()],
                "window": parsed.time_range.expression,
            },
        )
        with _timed(timings, "validate"):
            catalog = await backend.catalog()  # cached for 5 minutes, so usually free
            validate(parsed, catalog, now)
            if any(part.group_by or part.filters for part in parsed.parts()):
                read = label_checked_metrics(parsed, catalog)
                parsed = check_labels(parsed, await backend.labels_of(read), catalog)
        with _timed(timings, "query"):
            planned = parsed.planned()
            returned = await asyncio.gather(
                *(
                    backend.query_range(
                        q.promql, aligned_start(q.time_range), q.time_range.end_time, q.time_range.step_seconds
                    )
                    for q in planned
                )
            )
            runs = list(zip(planned, returned, strict=True))
            coverage = await _coverage(backend, parsed, runs)
        await emit(
            "Queried Prometheus",
            {"queries": len(runs), "series": [len(r) for r in returned], "step_s": parsed.time_range.step_seconds},
        )
        with _timed(timings, "format"):
            try:
                result = build_result(parsed, runs, source, coverage)
            except (ValidationError, ValueError) as exc:
                raise MetricsQueryFailure(
                    "invalid_query",
                    "Could not format results.",
                    suggestion="Contact administrator.",
                    details={"error": str(exc)},
                ) from exc
    except MetricsQueryFailure as failure:
        error, result = failure.error, None
    except Exception as exc:  # the state must still say what went wrong (no suppressed errors)
        log.exception("metrics node failed unexpectedly")
        error, result = (
            QueryError(
                error_type="invalid_query",
                message="The metrics query failed unexpectedly.",
                suggestion="Try again; if it keeps failing, contact the administrator.",
                details={"exception": repr(exc)},
            ),
            None,
        )
    final: MetricsQueryState = {
        **state,
        "parsed_query": parsed,
        "result": result,
        "error": error,
        "processing_time_ms": round((time.perf_counter() - started) * 1000, 3),
    }
    return NodeRun(state=final, timings_ms=timings, source=source)


def make_node(deps: NodeDeps) -> Callable[[MetricsQueryState], Awaitable[MetricsQueryState]]:
    """The node as LangGraph calls it: an async function of the state."""

    async def metrics_agent(state: MetricsQueryState) -> MetricsQueryState:
        return (await process(state, deps)).state

    return metrics_agent
