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
from concerto.packs.metrics.parser import EXAMPLES, compile_query, read_text
from concerto.packs.metrics.promql import CONCEPTS, CONCEPTS_BY_KEY, HOST_WORDS
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
    group_by: list[str] = Field(default_factory=list, description="labels to break the answer down by")


_SYSTEM = (
    "You translate questions about monitoring metrics into JSON. Reply with one JSON object only, "
    "with the keys: metric (one name from the list), window (the time window in words, e.g. "
    '"last 1 hour", "last 30 minutes", "since 2 hours ago", "yesterday", "from 2026-01-05T10:00Z '
    'to 2026-01-05T12:00Z"), aggregation (one of avg, min, max, sum, rate, last, '
    "p50, p90, p95, p99, "
    "or null), filters (an object of Prometheus label -> value; a host is the label instance), "
    'group_by (labels to break the answer down by, e.g. ["instance"] for "by host"; [] for one series), and '
    "operation (query, or anomaly_detection / forecast / correlation when the question asks for those)."
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
    # The words the deterministic reader knows (breakdowns, rankings, comparisons, calendar
    # periods) are read from the question itself; the model's choice of metric and filters
    # completes them, and its window is used when the question names none the reader knows.
    parts = read_text(question, now)
    parts.operation = parsed.operation
    parts.aggregation = parsed.aggregation or parts.aggregation
    if parts.window_kind == "default" and parts.comparison is None:
        try:
            parts.time_range = parse_time_range(parsed.window, now).time_range
        except TimeParseError as exc:
            if parsed.operation == "query":
                raise MetricsQueryFailure(
                    "invalid_time_range",
                    f"The time range is not valid: {exc}.",
                    suggestion='Ask about a past window, e.g. "for the last hour".',
                    details={"window": parsed.window},
                ) from exc
    elif parts.time_error and parsed.operation == "query":
        raise MetricsQueryFailure(
            "invalid_time_range",
            f"The time range is not valid: {parts.time_error}.",
            suggestion='Ask about a past window, e.g. "for the last hour".',
        )
    # The prompt says a host is `instance`; a model that writes "host" means the same.
    filters = {("instance" if k in HOST_WORDS else k): v for k, v in parsed.filters.items()}
    if filters:
        parts.filters = filters
        parts.named_values = {k: [v] for k, v in filters.items() if not v.startswith("~")}
    if not parts.group_by:
        parts.group_by = [("instance" if g in HOST_WORDS else g) for g in parsed.group_by]
    concept = CONCEPTS_BY_KEY.get(parsed.metric)
    if concept is not None and concept.resolve(catalog) is not None:
        return compile_query(concept.key, parts, catalog)
    info = catalog.get(parsed.metric)
    if info is None:
        if parsed.operation != "query":
            return MetricsQuery(
                metric_name=parsed.metric,
                time_range=parts.time_range,
                aggregation=parts.aggregation,
                filters=parts.filters,
                operation=parsed.operation,
            )
        near = closest_names(parsed.metric, list(catalog))
        raise MetricsQueryFailure(
            "metric_not_found",
            f"There is no metric named '{parsed.metric}'.",
            suggestion=f"Did you mean {', '.join(near)}?" if near else f"Ask for example {EXAMPLES}.",
            details={"metric": parsed.metric, "closest": near},
        )
    return compile_query(info.name, parts, catalog)


def _strip_fences(text: str) -> str:
    """Models often wrap JSON in ``` fences even when asked not to."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text[3:]
        text = text.rsplit("```", 1)[0]
    return text.strip()
