"""Step 1 without an LLM: a deterministic reading of the common metrics questions.

The question is read in layers: what it asks to do (a query, or an anomaly search
or forecast, which are not supported), the window, the statistic, the label filters,
and what remains names the metric, matched by exact name or by meaning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from concerto.packs.metrics.models import (
    Aggregation,
    MetricsQuery,
    MetricsQueryFailure,
    Operation,
    TimeRange,
)
from concerto.packs.metrics.promql import CONCEPTS_BY_KEY, build_concept, build_metric
from concerto.packs.metrics.timeparse import (
    DEFAULT_WINDOW,
    TimeParseError,
    make_range,
    parse_time_range,
)

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.metrics.backend import MetricInfo
    from concerto.packs.metrics.match import TextEmbedder

EXAMPLES = (
    '"Show CPU usage for the last hour", "Memory used on host 127.0.0.1:9100 yesterday", '
    '"p95 request latency over the past 30 minutes", "Network throughput since 2 hours ago"'
)

_OPERATIONS: tuple[tuple[Operation, re.Pattern[str]], ...] = (
    (
        "anomaly_detection",
        re.compile(r"\b(?:anomal\w*|outliers?|unusual|abnormal\w*|spikes?\s+detect\w*)\b", re.I),
    ),
    (
        "forecast",
        re.compile(
            r"\b(?:forecast\w*|predict\w*|projection|extrapolat\w*|will\s+(?:be|reach|run)|"
            r"next\s+(?:hour|day|week|month|year)|tomorrow)\b",
            re.I,
        ),
    ),
)
_AGGREGATIONS: tuple[tuple[Aggregation, re.Pattern[str]], ...] = (
    ("p99", re.compile(r"\bp99\b|\b99(?:th)?[\s-]*percentile\b", re.I)),
    ("p95", re.compile(r"\bp95\b|\b95(?:th)?[\s-]*percentile\b", re.I)),
    ("p90", re.compile(r"\bp90\b|\b90(?:th)?[\s-]*percentile\b", re.I)),
    ("p50", re.compile(r"\bp50\b|\b50(?:th)?[\s-]*percentile\b|\bmedian\b", re.I)),
    ("avg", re.compile(r"\b(?:average|avg|mean)\b", re.I)),
    ("max", re.compile(r"\b(?:max|maximum|peak|highest|top)\b", re.I)),
    ("min", re.compile(r"\b(?:min|minimum|lowest)\b", re.I)),
    ("sum", re.compile(r"\b(?:total|sum)\b(?!\s+(?:memory|ram|disk\s+space))", re.I)),
    ("rate", re.compile(r"\brate\s+of\s+change\b|\bper\s+second\b", re.I)),
    ("last", re.compile(r"\b(?:current|currently|right\s+now|latest|at\s+the\s+moment)\b", re.I)),
)
# A label value: quoted (spaces allowed), or one token that is not an ordinary word
# ("CPU on the server for the last hour" names no server).
_NOT_A_VALUE = (
    r"(?:for|in|over|during|since|today|yesterday|last|past|the|and|with|from|to|at|on|of|"
    r"this|that|now|right|exporter|is|was|are)\b"
)
_VALUE = r"""(?:["'](?P<q>[^"']+)["']|(?!""" + _NOT_A_VALUE + r""")(?P<v>[\w.:\-/]+?)(?=[\s,?!;]|$|\.(?:\s|$)))"""
_FILTERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instance",
        re.compile(
            rf"\b(?:on|for|from|of|at)\s+(?:the\s+)?(?:host|hostname|server|node|machine|instance)\s+{_VALUE}",
            re.I,
        ),
    ),
    ("job", re.compile(rf"\b(?:on|for|from|of|in)\s+(?:the\s+)?job\s+{_VALUE}", re.I)),
    (
        "device",
        re.compile(rf"\b(?:on|for|of|from)\s+(?:the\s+)?(?:device|interface|nic|disk)\s+{_VALUE}", re.I),
    ),
    ("mountpoint", re.compile(rf"\b(?:on|for|of)\s+(?:the\s+)?mount\s*point\s+{_VALUE}", re.I)),
    (
        "instance",
        re.compile(
            r"\bon\s+(?P<v>(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?|localhost(?::\d+)?|[\w\-]+(?:\.[\w\-]+)*:\d+)\b",
            re.I,
        ),
    ),
)
_DANGLING = re.compile(r"(?:\s+\b(?:for|in|over|during|since|from|on|of|at)(?:\s+the)?)+\s*[?.!]*$", re.I)
_EXPLICIT_LABEL = re.compile(r"\b(?P<k>[a-zA-Z_]\w*)\s*(?P<op>=~|=)\s*[\"'](?P<v>[^\"']*)[\"']")


@dataclass(slots=True)
class TextParts:
    """What the text alone says, before the metric is matched against the server."""

    operation: Operation
    time_range: TimeRange
    aggregation: Aggregation | None
    filters: dict[str, str]
    remainder: str
    time_error: str | None = None


def read_text(question: str, now: datetime) -> TextParts:
    """Operation, window, statistic and filters; the rest of the text is the metric phrase.

    A window that cannot be used is kept as `time_error` (with the default window)
    so that an unsupported operation still wins as the reported error.
    """
    operation: Operation = "query"
    for op, pattern in _OPERATIONS:
        if pattern.search(question):
            operation = op
            break
    spans: list[tuple[int, int]] = []
    time_error = None
    try:
        window = parse_time_range(question, now)
        time_range = window.time_range
        if window.span:
            spans.append(window.span)
    except TimeParseError as exc:
        time_error = str(exc)
        time_range = make_range(now - DEFAULT_WINDOW, now, "the last hour")
    aggregation: Aggregation | None = None
    for agg, pattern in _AGGREGATIONS:
        if pattern.search(question):
            aggregation = agg
            break
    filters: dict[str, str] = {}
    for m in _EXPLICIT_LABEL.finditer(question):
        filters[m.group("k")] = ("~" if m.group("op") == "=~" else "") + m.group("v")
        spans.append(m.span())
    for label, pattern in _FILTERS:
        found = pattern.search(question)
        if found is not None and label not in filters:
            filters[label] = (found.groupdict().get("q") or found.group("v")).rstrip(".")
            spans.append(found.span())
    remainder = question
    for start, end in sorted(spans, reverse=True):
        remainder = remainder[:start] + " " + remainder[end:]
    remainder = _DANGLING.sub("", " ".join(remainder.split())).strip()
    return TextParts(operation, time_range, aggregation, filters, remainder, time_error)


def parse_question(
    question: str,
    now: datetime,
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
) -> MetricsQuery:
    """Translate a question into a `MetricsQuery` against the metrics this server has.

    Raises `MetricsQueryFailure` (`parsing_error`, `metric_not_found`,
    `invalid_time_range`) when the question cannot be answered as asked.
    """
    from concerto.packs.metrics.match import closest_names, explicit_metric, rank

    if not question or not question.strip():
        raise MetricsQueryFailure(
            "parsing_error",
            "Could not understand your query: it is empty.",
            suggestion=f"Ask for example {EXAMPLES}.",
        )
    parts = read_text(question, now)
    if parts.time_error and parts.operation == "query":
        raise MetricsQueryFailure(
            "invalid_time_range",
            f"The time range is not valid: {parts.time_error}.",
            suggestion='Ask about a past window, e.g. "for the last hour" or "from 10:00 to 11:00".',
        )
    # Filters and the window are cut out first: a host named `web_1` is not a metric.
    metric, unknown = explicit_metric(parts.remainder, catalog)
    if metric is None and unknown is not None and parts.operation == "query":
        near = closest_names(unknown, list(catalog))
        raise MetricsQueryFailure(
            "metric_not_found",
            f"There is no metric named '{unknown}'.",
            suggestion=f"Did you mean {', '.join(near)}?"
            if near
            else 'Describe the quantity instead, e.g. "CPU usage" or "memory used".',
            details={"metric": unknown, "closest": near},
        )
    step = parts.time_range.step_seconds
    if metric is not None:
        info = catalog[metric]
        built = build_metric(metric, info.type, catalog, parts.filters, step, parts.aggregation, info.unit)
        return _query(metric, parts, built.promql, built.metrics, built.unit, built.label)
    phrase = parts.remainder or question
    ranked = rank(phrase, catalog, embedder, candidates=candidates)
    if not ranked or ranked[0].score < _min_score():
        if parts.operation != "query":
            return _query("unknown", parts, "", ["unknown"], "", "the metric")
        if max((c.similarity for c in ranked), default=0.0) < _unrelated_score():
            raise MetricsQueryFailure(
                "parsing_error",
                "Could not understand your query as a question about metrics.",
                suggestion=f"Ask for example {EXAMPLES}.",
                details={"phrase": phrase, "candidates": [(c.name, round(c.score, 3)) for c in ranked]},
            )
        near = [c.name for c in ranked[:3]]
        raise MetricsQueryFailure(
            "metric_not_found",
            f"No metric on this server matches '{phrase}'.",
            suggestion=(
                f"The closest are {', '.join(near)}; name one of them."
                if near
                else f"Ask about a metric this server collects, e.g. {EXAMPLES}."
            ),
            details={
                "phrase": phrase,
                "candidates": [(c.name, round(c.score, 3)) for c in ranked],
            },
        )
    best = ranked[0]
    if best.concept is not None:
        concept = CONCEPTS_BY_KEY[best.name]
        parts.aggregation = parts.aggregation or concept.default_aggregation
        concept_built = build_concept(concept, catalog, parts.filters, step, parts.aggregation)
        if concept_built is not None:
            return _query(
                best.name,
                parts,
                concept_built.promql,
                concept_built.metrics,
                concept_built.unit,
                concept_built.label,
            )
    info = catalog[best.name]
    built = build_metric(best.name, info.type, catalog, parts.filters, step, parts.aggregation, info.unit)
    return _query(best.name, parts, built.promql, built.metrics, built.unit, built.label)


def _min_score() -> float:
    from concerto.packs.metrics.match import MIN_SIMILARITY

    return MIN_SIMILARITY


def _unrelated_score() -> float:
    from concerto.packs.metrics.match import UNRELATED_SIMILARITY

    return UNRELATED_SIMILARITY


def _query(name: str, parts: TextParts, promql: str, metrics: list[str], unit: str, label: str) -> MetricsQuery:
    return MetricsQuery(
        metric_name=name,
        time_range=parts.time_range,
        aggregation=parts.aggregation,
        filters=parts.filters,
        operation=parts.operation,
        promql=promql,
        metrics=metrics,
        unit=unit,
        label=label,
    )
