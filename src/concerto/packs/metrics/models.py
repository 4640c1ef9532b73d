"""The metrics node contract of 003_*.txt: the LangGraph state and its pydantic models.

`MetricsQueryState` is a TypedDict because LangGraph merges node outputs into a dict
state; every value inside it is a validated pydantic model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Aggregation = Literal["avg", "min", "max", "sum", "count", "rate", "last", "p50", "p90", "p95", "p99"]
"""Which statistic the question asks for; None means "describe the series"."""

Operation = Literal["query", "anomaly_detection", "forecast", "correlation"]
"""What the question asks to do; only `query` is supported (the others are future nodes)."""

Combined = Literal["single", "sum", "mean"]
"""How an answer's top-level series combines the series returned (see `MetricsQueryResult.combined`)."""

Role = Literal["current", "baseline"]
"""Which window of a comparison a series belongs to; a plain question has only `current`."""

ErrorType = Literal[
    "parsing_error",
    "metric_not_found",
    "invalid_time_range",
    "unsupported_operation",
    "grafana_unavailable",
    "invalid_query",
]

QUANTILES: dict[str, float] = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


class TimeRange(BaseModel):
    """An absolute window, the expression it came from, and the query resolution."""

    model_config = ConfigDict(extra="forbid")

    start_time: datetime
    end_time: datetime
    step_seconds: int = Field(60, ge=1, description="Resolution of the range query")
    expression: str = Field("the last hour", description="How the window is said in an answer")

    @field_validator("start_time", "end_time")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("timestamps must carry a time zone")
        return value

    @property
    def duration_seconds(self) -> float:
        return (self.end_time - self.start_time).total_seconds()


class Ranking(BaseModel):
    """Keep only the `n` series with the highest (`top`) or lowest (`bottom`) value over the window."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(..., ge=1, le=100)
    order: Literal["top", "bottom"] = "top"


class Comparison(BaseModel):
    """The window a question compares the current one with.

    With `offset_seconds` the baseline is the current window shifted back by that much and
    runs as the same expression with PromQL's `offset` over the current window, so the two
    series line up point by point ("CPU now vs the same hour yesterday", "this week compared
    to last week": the same days of last week). Without it the baseline is a window of a
    different length ("March compared to February") and runs as its own range query.
    """

    model_config = ConfigDict(extra="forbid")

    baseline: TimeRange
    offset_seconds: int | None = Field(None, ge=1)


class MissingPart(BaseModel):
    """A part of the question the answer does not cover, and why (never half an answer)."""

    model_config = ConfigDict(extra="forbid")

    part: str = Field(..., min_length=1, description="What was asked, e.g. \"metric 'GPU utilisation'\"")
    reason: str = Field(..., min_length=1, description="Why it is not answered, in words a user can act on")
    error_type: str = Field("unanswered_part", description="003's error type when one fits (metric_not_found)")
    suggestion: str | None = None

    @property
    def sentence(self) -> str:
        """How the part reads in the findings: "Not answered: PART: REASON."."""
        return f"Not answered: {self.part}: {self.reason.rstrip('.')}."


class PlannedQuery(BaseModel):
    """One PromQL range query the answer runs: the expression, its window and its role."""

    model_config = ConfigDict(extra="forbid")

    metric_name: str
    promql: str
    time_range: TimeRange
    role: Role = "current"


class MetricsQuery(BaseModel):
    """A question translated into what to fetch: metric, window, statistic, label filters.

    `promql` is the exact expression run (built from the metric or an everyday concept
    such as CPU usage); `metrics` lists every metric it reads, so validation can check
    each exists.
    """

    model_config = ConfigDict(extra="forbid")

    metric_name: str = Field(..., min_length=1, description="Metric or concept answered, e.g. cpu_usage")
    time_range: TimeRange
    aggregation: Aggregation | None = None
    filters: dict[str, str] = Field(default_factory=dict, description="Label equality filters")
    operation: Operation = "query"
    promql: str = Field("", description="The PromQL expression that is run")
    metrics: list[str] = Field(default_factory=list, description="Metric names the PromQL reads")
    unit: str = ""
    label: str = Field("", description="Human name of what is measured, e.g. 'CPU usage'")
    group_by: list[str] = Field(default_factory=list, description="Labels to break down by: one series per value")
    ranking: Ranking | None = Field(None, description="Top or bottom N series (needs `group_by`)")
    comparison: Comparison | None = Field(None, description="The window the current one is compared with")
    baseline_promql: str = Field("", description="The expression run for the comparison's baseline")
    named_values: dict[str, list[str]] = Field(
        default_factory=dict, description="Label values the question names, to tell which matched no series"
    )
    alternatives: list[str] = Field(
        default_factory=list,
        description="Other concepts or metrics the words could mean, best first; one of them is used when it has "
        "the labels asked for and this one does not",
    )
    also: list[MetricsQuery] = Field(default_factory=list, description="Other metrics the same question asks for")
    missing: list[MissingPart] = Field(default_factory=list, description="Parts of the question left unanswered")

    @model_validator(mode="after")
    def _defaults(self) -> MetricsQuery:
        if not self.metrics:
            self.metrics = [self.metric_name]
        if not self.label:
            self.label = self.metric_name
        if self.ranking is not None and not self.group_by:
            raise ValueError("a ranking needs a label to rank the series of (group_by)")
        return self

    def parts(self) -> list[MetricsQuery]:
        """This query and the other metrics asked with it, in the order asked."""
        return [self, *self.also]

    def planned(self) -> list[PlannedQuery]:
        """Every range query the answer runs, in order: per metric, current then baseline."""
        out = []
        for part in self.parts():
            if not part.promql:
                continue
            out.append(PlannedQuery(metric_name=part.metric_name, promql=part.promql, time_range=part.time_range))
            if part.comparison is not None and part.baseline_promql:
                window = part.time_range if part.comparison.offset_seconds else part.comparison.baseline
                out.append(
                    PlannedQuery(
                        metric_name=part.metric_name,
                        promql=part.baseline_promql,
                        time_range=window,
                        role="baseline",
                    )
                )
        return out


class DataPoint(BaseModel):
    """One sample of the (aggregated) series."""

    timestamp: datetime
    value: float


class AggregationStats(BaseModel):
    """Statistics over the returned points."""

    min: float
    max: float
    mean: float
    last: float
    sum: float
    p50: float
    p95: float
    count: int = Field(..., ge=1)


class SeriesResult(BaseModel):
    """One series of an answer: which metric and label values, which window, its points and statistics."""

    metric_name: str
    label: str
    unit: str
    labels: dict[str, str] = Field(default_factory=dict, description="The label values this series stands for")
    role: Role = "current"
    window: str = Field("", description="How the series' window is said, e.g. 'the last hour'")
    promql: str
    datapoints: list[DataPoint]
    datapoint_count: int = Field(..., ge=0)
    statistics: AggregationStats | None = None
    value: float | None = None
    is_empty: bool


class SeriesComparison(BaseModel):
    """The current value of one series against its baseline: the difference and the change in %."""

    metric_name: str
    label: str
    unit: str
    labels: dict[str, str] = Field(default_factory=dict)
    current: float | None
    baseline: float | None
    difference: float | None = Field(None, description="current - baseline, in `unit`")
    change_percent: float | None = Field(None, description="difference / |baseline| * 100; None when baseline is 0")
    current_window: str = ""
    baseline_window: str = ""


class RunQuery(BaseModel):
    """A range query that was run, and how many series it returned."""

    metric_name: str
    promql: str
    start: datetime
    end: datetime
    step_seconds: int
    role: Role = "current"
    series_count: int = Field(0, ge=0)


class MetricsQueryResult(BaseModel):
    """The data behind an answer: points, statistics and the PromQL that produced them."""

    metric_name: str
    label: str
    unit: str
    promql: str
    time_range: TimeRange
    aggregation: Aggregation | None = None
    filters: dict[str, str] = Field(default_factory=dict)
    datapoints: list[DataPoint]
    datapoint_count: int = Field(..., ge=0)
    series_count: int = Field(0, ge=0, description="Series returned before aggregation into one")
    statistics: AggregationStats | None = None
    is_empty: bool
    value: float | None = Field(
        None,
        description="The number the question asks for (the headline); for a breakdown the total across its "
        "series when the quantity adds up (bytes, rates), unset otherwise (see `combined`)",
    )
    combined: Combined = Field(
        "single",
        description="How the top-level points combine the series: `single` (one series), `sum` (added up: "
        "a breakdown of bytes or rates), `mean` (the mean of a breakdown of shares or levels, a shape only: "
        "`value` is unset, each series has its own in `series`)",
    )
    source: Literal["prometheus", "grafana"] = "prometheus"
    group_by: list[str] = Field(default_factory=list, description="Labels the series are broken down by")
    ranking: Ranking | None = None
    series: list[SeriesResult] = Field(
        default_factory=list,
        description="Every series of the answer, one per label value, metric and window, each with its "
        "labels, points and statistics; the fields above describe the first metric's current window as one",
    )
    comparisons: list[SeriesComparison] = Field(
        default_factory=list, description="Current against baseline value, per metric and label set"
    )
    queries: list[RunQuery] = Field(default_factory=list, description="Every range query run")
    missing: list[MissingPart] = Field(default_factory=list, description="Parts of the question left unanswered")
    data_start: datetime | None = Field(
        None, description="The earliest sample the server holds, when a window reaches before it"
    )

    @model_validator(mode="after")
    def _consistent(self) -> MetricsQueryResult:
        if self.datapoint_count != len(self.datapoints):
            raise ValueError("datapoint_count must equal the number of data points")
        if self.is_empty != (not self.datapoints):
            raise ValueError("is_empty must be true exactly when there are no data points")
        if (self.statistics is None) != self.is_empty:
            raise ValueError("statistics are present exactly when there is data")
        return self


class QueryError(BaseModel):
    """A failure a user can act on; `details` is for logs and never shown to users."""

    error_type: ErrorType
    message: str
    suggestion: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class MetricsQueryState(TypedDict):
    """The LangGraph state of the metrics node (003_*.txt "Input State")."""

    user_query: str
    parsed_query: MetricsQuery | None
    result: MetricsQueryResult | None
    error: QueryError | None
    processing_time_ms: float


class MetricsQueryFailure(Exception):
    """Raised inside the node by a step that fails; the node turns it into `state["error"]`."""

    def __init__(
        self,
        error_type: ErrorType,
        message: str,
        *,
        suggestion: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.error = QueryError(error_type=error_type, message=message, suggestion=suggestion, details=details or {})


def initial_state(user_query: str) -> MetricsQueryState:
    """The state a caller passes in: only the question set (003_*.txt "Example Input")."""
    return MetricsQueryState(user_query=user_query, parsed_query=None, result=None, error=None, processing_time_ms=0.0)


TIME_SUGGESTION = (
    'Ask about a past window, e.g. "for the last hour", "yesterday", "from 10:00 to 11:00", '
    '"last week" or "since 2025-06-01".'
)


def time_failure(reason: str, details: dict[str, Any] | None = None) -> MetricsQueryFailure:
    """The `invalid_time_range` failure for a window the question names that cannot be used."""
    return MetricsQueryFailure(
        "invalid_time_range",
        f"The time range is not valid: {reason}.",
        suggestion=TIME_SUGGESTION,
        details=details or {},
    )
