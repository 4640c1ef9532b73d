"""Step 1 with an LLM: the question to JSON, validated by pydantic (003_*.txt).

The model picks among the metrics this server really has (the concepts and the best
matches by meaning are listed in the prompt) and says the window in words; the
deterministic code then builds the PromQL and the absolute window, so a model never
has to do date arithmetic or write PromQL to be right.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from concerto.packs.metrics.models import Aggregation, MetricsQuery, MetricsQueryFailure, Operation
from concerto.packs.metrics.parser import EXAMPLES
from concerto.packs.metrics.promql import (
    CONCEPTS,
    CONCEPTS_BY_KEY,
    HOST_WORDS,
    build_concept,
    build_metric,
)
from concerto.packs.metrics.timeparse import TimeParseError, parse_time_range

if TYPE_CHECKING:
    from concerto.llm.base import LLMClient
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.metrics.backend import MetricInfo
    from concerto.packs.metrics.match import TextEmbedder


class LLMQuery(BaseModel):
    """What the model must return."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(..., min_length=1, description="A concept key or a metric name from the list")
    window: str = Field("last 1 hour", description='e.g. "last 1 hour", "yesterday", "from 10:00 to 11:00"')
    aggregation: Aggregation | None = None
    filters: dict[str, str] = Field(default_factory=dict, description="label -> exact value")
    operation: Operation = "query"


_SYSTEM = (
    "You translate questions about monitoring metrics into JSON. Reply with one JSON object only, "
    "with the keys: metric (one name from the list), window (the time window in words, e.g. "
    '"last 1 hour", "last 30 minutes", "since 2 hours ago", "yesterday", "from 2026-01-05T10:00Z '
    'to 2026-01-05T12:00Z"), aggregation (one of avg, min, max, sum, rate, last, '
    "p50, p90, p95, p99, "
    "or null), filters (an object of Prometheus label -> value; a host is the label instance), and "
    "operation (query, or anomaly_detection / forecast when the question asks for those)."
)


def build_prompt(question: str, now: datetime, candidates: list[tuple[str, str]]) -> str:
    """The user message: the clock, the metrics to choose from, and the question."""
    listed = "\n".join(f"- {name}: {text}" for name, text in candidates)
    return f"Current time: {now.isoformat()}\nMetrics available:\n{listed}\n\nQuestion: {question}"


async def llm_parse(
    question: str,
    now: datetime,
    llm: LLMClient,
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
) -> MetricsQuery:
    """Ask the model for an `LLMQuery`, validate it, and turn it into a `MetricsQuery`.

    Invalid JSON or a reply that fails validation is a `parsing_error`; `LLMError`
    propagates so the caller can fall back to the deterministic parser.
    """
    from concerto.llm.base import Message
    from concerto.packs.metrics.match import closest_names, describe_metric, rank

    if not question.strip():
        raise MetricsQueryFailure(
            "parsing_error",
            "Could not understand your query: it is empty.",
            suggestion=f"Ask for example {EXAMPLES}.",
        )
    concepts = [(c.key, c.description) for c in CONCEPTS if c.resolve(catalog) is not None]
    ranked = [c.name for c in rank(question, catalog, embedder, limit=10, candidates=candidates) if c.concept is None]
    listed = concepts + [(n, describe_metric(catalog[n])) for n in ranked]
    reply = await llm.complete(
        [
            Message(role="system", content=_SYSTEM),
            Message(role="user", content=build_prompt(question, now, listed)),
        ],
        json_schema=LLMQuery.model_json_schema(),
        max_tokens=300,
    )
    try:
        parsed = LLMQuery.model_validate(json.loads(_strip_fences(reply.text)))
    except (ValueError, ValidationError) as exc:
        raise MetricsQueryFailure(
            "parsing_error",
            "Could not understand your query.",
            suggestion=f"Ask for example {EXAMPLES}.",
            details={"llm_reply": reply.text[:1000], "error": str(exc)[:1000]},
        ) from exc
    try:
        window = parse_time_range(parsed.window, now).time_range
    except TimeParseError as exc:
        if parsed.operation == "query":
            raise MetricsQueryFailure(
                "invalid_time_range",
                f"The time range is not valid: {exc}.",
                suggestion='Ask about a past window, e.g. "for the last hour".',
                details={"window": parsed.window},
            ) from exc
        window = parse_time_range("last 1 hour", now).time_range
    step = window.step_seconds
    # The prompt says a host is `instance`; a model that writes "host" means the same.
    filters = {("instance" if k in HOST_WORDS else k): v for k, v in parsed.filters.items()}
    common = {
        "time_range": window,
        "aggregation": parsed.aggregation,
        "filters": filters,
        "operation": parsed.operation,
    }
    concept = CONCEPTS_BY_KEY.get(parsed.metric)
    if concept is not None:
        common["aggregation"] = parsed.aggregation or concept.default_aggregation
        built = build_concept(concept, catalog, filters, step, parsed.aggregation)
        if built is not None:
            return MetricsQuery(
                metric_name=concept.key,
                promql=built.promql,
                metrics=built.metrics,
                unit=built.unit,
                label=built.label,
                **common,
            )
    info = catalog.get(parsed.metric)
    if info is None:
        if parsed.operation != "query":
            return MetricsQuery(metric_name=parsed.metric, **common)
        near = closest_names(parsed.metric, list(catalog))
        raise MetricsQueryFailure(
            "metric_not_found",
            f"There is no metric named '{parsed.metric}'.",
            suggestion=f"Did you mean {', '.join(near)}?" if near else f"Ask for example {EXAMPLES}.",
            details={"metric": parsed.metric, "closest": near},
        )
    built = build_metric(info.name, info.type, catalog, filters, step, parsed.aggregation, info.unit)
    return MetricsQuery(
        metric_name=info.name,
        promql=built.promql,
        metrics=built.metrics,
        unit=built.unit,
        label=built.label,
        **common,
    )


def _strip_fences(text: str) -> str:
    """Models often wrap JSON in ``` fences even when asked not to."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text[3:]
        text = text.rsplit("```", 1)[0]
    return text.strip()
