"""Step 1 with an LLM: the question to JSON, validated by pydantic (003_*.txt).

The model picks among the metrics this server really has (the concepts and the best
matches by meaning are listed in the prompt) and says the window in words; the
deterministic code then builds the PromQL and the absolute window, so a model never
has to do date arithmetic or write PromQL to be right.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from concerto.packs.metrics.models import (
    Aggregation,
    MetricsQuery,
    MetricsQueryFailure,
    MissingPart,
    Operation,
    TimeRange,
    time_failure,
)
from concerto.packs.metrics.parser import (
    EXAMPLES,
    _Resolved,
    assemble,
    metric_phrases,
    read_text,
    resolve_phrase,
)
from concerto.packs.metrics.promql import CONCEPTS, CONCEPTS_BY_KEY, HOST_WORDS
from concerto.packs.metrics.timeparse import TimeParseError, read_windows

if TYPE_CHECKING:
    from concerto.llm.base import LLMClient
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.metrics.backend import MetricInfo
    from concerto.packs.metrics.match import TextEmbedder


class LLMQuery(BaseModel):
    """What the model must return."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = Field(
        ...,
        min_length=1,
        description="Every metric the question asks about: concept keys or metric names from the list",
    )
    window: str = Field("last 1 hour", description='e.g. "last 1 hour", "yesterday", "from 10:00 to 11:00"')
    aggregation: Aggregation | None = None
    filters: dict[str, str] = Field(default_factory=dict, description="label -> exact value")
    operation: Operation = "query"
    group_by: list[str] = Field(default_factory=list, description="labels to break the answer down by")

    @model_validator(mode="before")
    @classmethod
    def _one_metric(cls, data: Any) -> Any:
        """A model that still writes one `metric` means a list of one."""
        if isinstance(data, dict) and "metric" in data and "metrics" not in data:
            data = {**data, "metrics": [data["metric"]]}
            del data["metric"]
        return data


_SYSTEM = (
    "You translate questions about monitoring metrics into JSON. Reply with one JSON object only, "
    "with the keys: metrics (a list of every metric the question asks about, each a name from the list), "
    "window (the time window in words, e.g. "
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
    from concerto.packs.metrics.match import describe_metric, rank

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
    # an analysis either reading sees is one this agent cannot do
    parts.operation = parsed.operation if parsed.operation != "query" else parts.operation
    parts.aggregation = parsed.aggregation or parts.aggregation
    asks = parts.operation == "query"
    if parts.window_kind == "default" and parts.comparison is None:
        # the question names no window the reader knows: the model's, when it can be read
        try:
            window = model_window(parsed.window, now)
        except TimeParseError as exc:
            if asks:
                raise time_failure(parts.time_error or str(exc), {"window": parsed.window}) from exc
        else:
            if window is not None:
                parts.time_range = window
            elif parts.time_error and asks:
                raise time_failure(parts.time_error, {"window": parsed.window})
    elif parts.time_error and asks:
        raise time_failure(parts.time_error)
    # The prompt says a host is `instance`; a model that writes "host" means the same.
    filters = {("instance" if k in HOST_WORDS else k): v for k, v in parsed.filters.items()}
    if filters:
        parts.filters = filters
        parts.named_values = {k: [v] for k, v in filters.items() if not v.startswith("~")}
    if not parts.group_by:
        parts.group_by = [("instance" if g in HOST_WORDS else g) for g in parsed.group_by]
    if parts.operation != "query":
        name = next((m for m in parsed.metrics if m in CONCEPTS_BY_KEY or m in catalog), parsed.metrics[0])
        return MetricsQuery(
            metric_name=name,
            time_range=parts.time_range,
            aggregation=parts.aggregation,
            filters=parts.filters,
            operation=parts.operation,
        )
    phrases = metric_phrases(parts.remainder or question)
    resolved = checked_choices(parsed.metrics, phrases, catalog, embedder, candidates)
    return assemble(parts, resolved, phrases, catalog)


def model_window(said: str, now: datetime) -> TimeRange | None:
    """The window the model wrote, read like a question's; None for the default ("last 1 hour"
    or nothing). Raises `TimeParseError` when the words name no window the reader knows: an
    unreadable window is an error, never silently the last hour."""
    if not said.strip() or said.strip().lower() in ("last 1 hour", "last hour", "the last hour"):
        return None
    windows = read_windows(said, now).windows
    if not windows:
        raise TimeParseError(f"the window '{said}' cannot be read")
    return windows[0].time_range


def checked_choices(
    chosen: Sequence[str],
    phrases: Sequence[str],
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
) -> list[_Resolved]:
    """The model's metrics held to the deterministic reader's rule: each metric phrase of the
    question is answered by a chosen metric that measures every word of it (`unexplained`),
    else by the reader's own match (`resolve_phrase`), else it is a missing part. A name the
    server does not have is `metric_not_found` when nothing else answers the question."""
    from concerto.packs.metrics.match import Candidate, closest_names, describe_metric, unexplained
    from concerto.packs.metrics.parser import LABEL_NOUN_WORDS

    real: list[Candidate] = []
    unknown: list[_Resolved] = []
    out: list[_Resolved] = []
    for name in dict.fromkeys(chosen):
        concept = CONCEPTS_BY_KEY.get(name)
        if concept is not None and concept.resolve(catalog) is not None:
            real.append(Candidate(concept.key, 1.0, concept, 1.0, concept.description))
        elif name in catalog:
            real.append(Candidate(name, 1.0, None, 1.0, describe_metric(catalog[name])))
        else:
            near = closest_names(name, list(catalog))
            unknown.append(
                _Resolved(
                    missing=MissingPart(
                        part=f"metric {name}",
                        reason=f"there is no metric named '{name}' on this server",
                        error_type="metric_not_found",
                        suggestion=f"Did you mean {', '.join(near)}?" if near else f"Ask for example {EXAMPLES}.",
                    ),
                    details={"metric": name, "closest": near},
                )
            )
    if not phrases or not any(p.strip() for p in phrases):
        return [_Resolved(name=c.name) for c in real] + unknown
    for phrase in phrases:
        fit = next((c for c in real if not unexplained(phrase, c, embedder, candidates, LABEL_NOUN_WORDS)), None)
        if fit is not None:
            out.append(_Resolved(name=fit.name, details={"phrase": phrase}))
            continue
        own = resolve_phrase(phrase, catalog, embedder, candidates)
        if own.name is not None or own.missing is not None:
            out.append(own)
    # a name the model made up is reported only when nothing else answers the question
    return out if any(r.name for r in out) else [*unknown, *out]


def _strip_fences(text: str) -> str:
    """Models often wrap JSON in ``` fences even when asked not to."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else text[3:]
        text = text.rsplit("```", 1)[0]
    return text.strip()
