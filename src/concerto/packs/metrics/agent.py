"""`metrics_agent` as a Concerto agent: the node's state mapped to `AgentResult`.

This module is imported on every CLI start, so it imports only the agent base; the
node, httpx and the embedder load on the first metrics question.
"""

from __future__ import annotations

from typing import Any

from concerto.agents.base import Agent, AgentContext, AgentFailure, AgentInfo, AgentResult, Unanswered
from concerto.agents.task import TaskInput
from concerto.contracts.common import ErrorKind
from concerto.contracts.events import EventType

_KINDS = {
    "parsing_error": ErrorKind.VALIDATION,
    "metric_not_found": ErrorKind.NOT_FOUND,
    "invalid_time_range": ErrorKind.VALIDATION,
    "unsupported_operation": ErrorKind.VALIDATION,
    "grafana_unavailable": ErrorKind.UNAVAILABLE,
    "invalid_query": ErrorKind.ERROR,
}
# A part left unanswered: a metric or label value that is not there, or a label the metric lacks.
_GAP_KINDS = {"invalid_query": ErrorKind.VALIDATION}


class MetricsAgent(Agent):
    """Answers questions about infrastructure and service metrics from Prometheus or Grafana."""

    info = AgentInfo(
        name="metrics_agent",
        pack="metrics",
        description=(
            "Answers questions about infrastructure and application monitoring metrics (CPU usage, "
            "memory, disk and network throughput, load, request rate, latency percentiles) "
            "by querying Prometheus time series directly or through Grafana, over a time window: "
            "one value, a breakdown by host, CPU, mode or any label, the top or bottom hosts, and "
            "comparisons with an earlier window. Says clearly when a monitoring request (a forecast, "
            "anomaly detection, a correlation, a metric the server does not collect) cannot be answered."
        ),
        capabilities=[
            "CPU usage, memory used, disk and network throughput of servers over a time range",
            "Request rate, error rate and latency percentiles (p50, p95, p99) of services",
            "Average, minimum, maximum, total or percentile of any Prometheus metric",
            "Process metrics: goroutines, threads, open file descriptors, garbage collection",
            "Scrape duration and health of monitored targets, uptime of servers",
            "Filter monitoring data by host, instance, job or device",
            "Break server metrics down by instance, job, CPU core, CPU mode, device or any label",
            "Rank servers and hosts: top or bottom N instances by CPU or memory, which host is busiest",
            "Compare server metrics with an earlier window: CPU now vs the same hour yesterday, "
            "this week compared to last week, with the change in percent",
            "Time windows such as the last hour, since 2 hours ago, yesterday, this quarter, year to date, "
            "the first half of 2024",
            "Monitoring requests it cannot do, answered with what it can do instead: forecasting server "
            "metrics, anomaly detection on CPU or network traffic, correlating metrics",
            "Hardware and host sensors when the exporter collects them: CPU temperature, fan speed, "
            "GPU utilisation; says so when the metric does not exist",
        ],
        inputs={"request": "A question about monitoring metrics, in plain language"},
        outputs={
            "metric_name": "Metric or concept answered (e.g. cpu_usage)",
            "promql": "The PromQL expression that was run (the first metric's current window)",
            "datapoints": "Time series points (timestamp, value) of the first metric, merged into one series",
            "statistics": "min, max, mean, last, sum, p50, p95 of the points",
            "value": "The number the question asks for, in `unit`",
            "is_empty": "True when the query matched no data",
            "series": "Every series: its labels, window, points and statistics (one per label value)",
            "comparisons": "Current against baseline value per series, the difference and the change in %",
            "queries": "Every range query run, with its window, step and series count",
            "missing": "Parts of the question the answer does not cover, and why",
        },
        examples=[
            "Show CPU usage for the last hour",
            "How much memory is used on host web-1?",
            "What was the peak network throughput yesterday?",
            "p95 request latency over the past 30 minutes",
            "Disk write throughput since 2 hours ago",
            "What is the request rate for job api?",
            "Average system load on the server today",
            "Are all scrape targets up?",
            "CPU usage by instance",
            "Top 3 hosts by memory used",
            "Which instance has the highest CPU usage?",
            "CPU now vs the same hour yesterday",
            "Memory used on the servers this week compared to last week",
            "Forecast CPU usage for next week",
            "Detect anomalies in CPU usage of the servers",
            "Are there any anomalies in network traffic on the hosts?",
            "What is the temperature of the CPU?",
        ],
        default_timeout_ms=15000,
    )

    def availability(self) -> str | None:
        """Without Prometheus or Grafana configured it can only say so."""
        from concerto.packs.metrics.settings import MetricsSettings

        configured = MetricsSettings.of(self.settings)
        if configured.prometheus_url or configured.grafana_url:
            return None
        return "no Prometheus or Grafana configured: set CONCERTO_PROMETHEUS_URL (or run `concerto metrics local`)"

    async def run(self, context: AgentContext, task: TaskInput) -> AgentResult:
        from concerto.packs.metrics.format import key_findings, summarize
        from concerto.packs.metrics.models import initial_state
        from concerto.packs.metrics.node import NodeDeps, process

        question = task.question

        async def emit(title: str, _question: str, details: dict[str, Any]) -> None:
            await context.emit(EventType.ACTION, title, details, step=2)

        deps = NodeDeps(
            settings=context.settings,
            resources=context.resources,
            llm=context.llm,
            now=context.now,
            emit=emit,
        )
        run = await process(initial_state(question), deps)
        state = run.state
        parsed = state["parsed_query"]
        meta = {
            "parsed_query": parsed.model_dump(mode="json") if parsed else None,
            "processing_time_ms": state["processing_time_ms"],
            "timings_ms": run.timings_ms,
        }
        error, result = state["error"], state["result"]
        if error is not None or result is None or parsed is None:
            assert error is not None  # the node guarantees one of result or error
            raise AgentFailure(
                error.message,
                error_type=error.error_type,
                kind=_KINDS[error.error_type],
                suggestion=error.suggestion,
                details=error.details,
                output=meta | {"error_type": error.error_type},
            )
        summary = summarize(result, parsed)
        findings = key_findings(result, parsed)
        if result.is_empty and parsed.filters and not result.missing:
            findings.append(await _known_values_hint(deps, parsed.filters, parsed.metrics))
        return AgentResult(
            output=result.model_dump(mode="json") | meta,
            summary=summary,
            key_findings=list(dict.fromkeys(f for f in findings if f)),
            follow_up_questions=_follow_ups(parsed.label, result.time_range.expression, parsed),
            entities={"metric_name": result.metric_name, "time_range": result.time_range.expression}
            | ({"metrics": [p.metric_name for p in parsed.parts()]} if parsed.also else {})
            | ({"group_by": parsed.group_by} if parsed.group_by else {}),
            unanswered=[
                Unanswered(
                    part=m.part,
                    reason=m.reason,
                    error_type=m.error_type,
                    kind=_GAP_KINDS.get(m.error_type, ErrorKind.NOT_FOUND),
                    suggestion=m.suggestion,
                )
                for m in result.missing
            ],
        )


async def _known_values_hint(deps: Any, filters: dict[str, str], metrics: list[str]) -> str:
    """For an empty answer: the values the filtered labels do take (a likely typo)."""
    from concerto.packs.metrics.backend import get_backend
    from concerto.packs.metrics.models import MetricsQueryFailure

    try:
        backend = await get_backend(deps.settings, deps.resources)
        hints = []
        for label in filters:
            values = await backend.label_values(label, match=metrics[0] if metrics else None)
            if values:
                hints.append(f"{label} takes the values {', '.join(values[:8])}")
        return ("No data matched the filters; " + "; ".join(hints) + ".") if hints else ""
    except MetricsQueryFailure:
        return ""


def _follow_ups(label: str, window: str, query: Any = None) -> list[str]:
    what = label.lower() if label[:1].isupper() and label[1:2].islower() else label
    out = [
        f"What was the peak {what} over {window}?",
        f"Show {what} for yesterday",
    ]
    if query is not None and not query.group_by:
        out.append(f"{label} by instance over {window}")
    if query is not None and query.comparison is None:
        out.append(f"{label} now vs the same hour yesterday")
    return out
