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

Operation = Literal["query", "anomaly_detection", "forecast"]
"""What the question asks to do; only `query` is supported (the others are future nodes)."""

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

    @model_validator(mode="after")
    def _defaults(self) -> MetricsQuery:
        if not self.metrics:
            self.metrics = [self.metric_name]
        if not self.label:
            self.label = self.metric_name
        return self


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
    value: float | None = Field(None, description="The number the question asks for (the headline)")
    source: Literal["prometheus", "grafana"] = "prometheus"

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
