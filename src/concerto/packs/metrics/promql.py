"""PromQL building: label selectors from filters, everyday concepts, and raw metrics.

People ask for "CPU usage", not for `node_cpu_seconds_total`; a concept is the correct
expression for such a phrase (a busy fraction by rate, used = total - available, a
histogram quantile). A metric with no concept gets the expression its type calls
for: a rate for counters, an aggregate for gauges, a quantile for histograms.
Every expression returns one series, so one set of statistics describes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from concerto.packs.metrics.models import QUANTILES, Aggregation

Matchers = dict[str, tuple[str, str]]
"""Label -> (operator, value); the user's filters override a concept's defaults."""

HOST_WORDS = frozenset({"host", "hostname", "node", "server", "machine"})
"""What people (and models) call the `instance` label."""


def escape(value: str) -> str:
    """A PromQL string literal body: backslashes and double quotes escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def user_matchers(filters: Mapping[str, str]) -> Matchers:
    """Matchers for the user's label filters; a host without a port matches any port."""
    out: Matchers = {}
    for label, value in filters.items():
        if label == "instance" and ":" not in value and not value.startswith("~"):
            out[label] = ("=~", f"{re.escape(value)}(:[0-9]+)?")
        elif value.startswith("~"):
            out[label] = ("=~", value[1:])
        else:
            out[label] = ("=", value)
    return out


def selector(metric: str, filters: Mapping[str, str], defaults: Matchers | None = None) -> str:
    """`metric{...}` with the concept's default matchers, then the user's filters."""
    matchers: Matchers = dict(defaults or {})
    matchers.update(user_matchers(filters))
    if not matchers:
        return metric
    body = ",".join(f'{label}{op}"{escape(value)}"' for label, (op, value) in sorted(matchers.items()))
    return f"{metric}{{{body}}}"


def mean_of_histogram(name: str, filters: Mapping[str, str], w: str) -> str:
    """Mean of a histogram or summary: rate of its sum over rate of its count."""
    total = f"sum(rate({selector(name + '_sum', filters)}[{w}]))"
    return f"{total} / sum(rate({selector(name + '_count', filters)}[{w}]))"


def quantile_name(aggregation: Aggregation | None) -> str:
    """How a histogram quantile reads: 95th percentile unless p50/p90/p99 was asked."""
    if aggregation == "p50":
        return "Median"
    q = {"p90": 90, "p99": 99}.get(aggregation or "", 95)
    return f"{q}th percentile"


def rate_window(step_seconds: int) -> str:
    """Window of `rate()`: at least a minute (several scrapes), at least one step."""
    return f"{max(60, step_seconds)}s"


@dataclass(frozen=True, slots=True)
class Built:
    """An expression ready to run, with what it reads and how its values read."""

    promql: str
    metrics: list[str]
    unit: str
    label: str


@dataclass(frozen=True, slots=True)
class Concept:
    """An everyday quantity: how it is described (for matching) and how it is computed.

    `requires` are metric names (or regexes starting with `~`) that must exist; the
    first metric matching each is passed to `build` in that order.
    """

    key: str
    label: str
    description: str
    unit: str
    requires: tuple[str, ...]
    build: Callable[[list[str], Mapping[str, str], str, Aggregation | None], str]
    needs_bucket: bool = False
    default_aggregation: Aggregation | None = None  # e.g. uptime: the latest value matters

    def resolve(self, names: Mapping[str, object]) -> list[str] | None:
        """The metrics this concept would read from `names`, or None if one is missing."""
        found: list[str] = []
        for req in self.requires:
            if not req.startswith("~"):
                if req not in names:
                    return None
                found.append(req)
                continue
            pattern = re.compile(req[1:])
            matches = sorted(
                (n for n in names if pattern.search(n) and (not self.needs_bucket or f"{n}_bucket" in names)),
                key=lambda n: (len(n), n),
            )
            if not matches:
                return None
            found.append(matches[0])
        return found


def _cpu(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    idle = selector(m[0], f, {"mode": ("=", "idle")})
    return f"100 * (1 - avg(rate({idle}[{w}])))"


def _mem_used(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    return f"sum({selector(m[0], f)} - {selector(m[1], f)})"


def _mem_pct(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    return f"100 * (1 - sum({selector(m[1], f)}) / sum({selector(m[0], f)}))"


def _sum_rate(
    defaults: Matchers | None = None,
) -> Callable[[list[str], Mapping[str, str], str, Aggregation | None], str]:
    def build(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
        return " + ".join(f"sum(rate({selector(name, f, defaults)}[{w}]))" for name in m)

    return build


def _disk_pct(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    real = {"fstype": ("!~", "tmpfs|overlay|squashfs|ramfs|devtmpfs|nsfs")}
    return f"100 * (1 - sum({selector(m[1], f, real)}) / sum({selector(m[0], f, real)}))"


def _gauge(kind: str) -> Callable[[list[str], Mapping[str, str], str, Aggregation | None], str]:
    def build(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
        return f"{kind}({selector(m[0], f)})"

    return build


def _latency(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    if a == "avg":
        return mean_of_histogram(m[0], f, w)
    q = QUANTILES.get(a or "p95", 0.95)
    return f"histogram_quantile({q}, sum by (le) (rate({selector(m[0] + '_bucket', f)}[{w}])))"


def _errors(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    return f"sum(rate({selector(m[0], f, {'code': ('=~', '5..')})}[{w}])) or vector(0)"


def _uptime(m: list[str], f: Mapping[str, str], w: str, a: Aggregation | None) -> str:
    return f"min(time() - {selector(m[0], f)})"


_NET = {"device": ("!~", "lo|veth.*|docker.*|br-.*")}

CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "cpu_usage",
        "CPU usage",
        "CPU usage: percentage of time the processors are busy, CPU utilization and load",
        "%",
        ("node_cpu_seconds_total",),
        _cpu,
    ),
    Concept(
        "memory_used",
        "Memory used",
        "Memory used: bytes of RAM in use, how much memory is used",
        "bytes",
        ("node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes"),
        _mem_used,
    ),
    Concept(
        "memory_usage_percent",
        "Memory usage",
        "Memory usage percentage: share of RAM in use, memory utilization",
        "%",
        ("node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes"),
        _mem_pct,
    ),
    Concept(
        "memory_available",
        "Available memory",
        "Free memory: bytes of RAM still available",
        "bytes",
        ("node_memory_MemAvailable_bytes",),
        _gauge("sum"),
    ),
    Concept(
        "disk_read_throughput",
        "Disk read throughput",
        "Disk read throughput: bytes per second read from disks",
        "bytes/s",
        ("node_disk_read_bytes_total",),
        _sum_rate(),
    ),
    Concept(
        "disk_write_throughput",
        "Disk write throughput",
        "Disk write throughput: bytes per second written to disks",
        "bytes/s",
        ("node_disk_written_bytes_total",),
        _sum_rate(),
    ),
    Concept(
        "disk_throughput",
        "Disk throughput",
        "Disk I/O throughput: bytes per second read and written on disks, disk activity",
        "bytes/s",
        ("node_disk_read_bytes_total", "node_disk_written_bytes_total"),
        _sum_rate(),
    ),
    Concept(
        "disk_space_used_percent",
        "Disk space used",
        "Disk space usage: percentage of filesystem capacity used, how full the disk is",
        "%",
        ("node_filesystem_size_bytes", "node_filesystem_avail_bytes"),
        _disk_pct,
    ),
    Concept(
        "network_receive_throughput",
        "Network received",
        "Network traffic received: bytes received per second on network interfaces, inbound",
        "bytes/s",
        ("node_network_receive_bytes_total",),
        _sum_rate(_NET),
    ),
    Concept(
        "network_transmit_throughput",
        "Network sent",
        "Network traffic transmitted: bytes sent per second on network interfaces, outbound",
        "bytes/s",
        ("node_network_transmit_bytes_total",),
        _sum_rate(_NET),
    ),
    Concept(
        "network_throughput",
        "Network throughput",
        "Network throughput: total network traffic, bytes per second sent and received",
        "bytes/s",
        ("node_network_receive_bytes_total", "node_network_transmit_bytes_total"),
        _sum_rate(_NET),
    ),
    Concept(
        "load_average",
        "System load",
        "System load average: the load on the machine, runnable processes over a minute",
        "",
        ("node_load1",),
        _gauge("avg"),
    ),
    Concept(
        "request_rate",
        "Request rate",
        "HTTP request rate: requests per second served, request traffic",
        "req/s",
        (r"~(^|_)http_requests_total$",),
        _sum_rate(),
    ),
    Concept(
        "error_rate",
        "Error rate",
        "HTTP error rate: failed requests per second with 5xx status codes, server errors",
        "req/s",
        (r"~(^|_)http_requests_total$",),
        _errors,
    ),
    Concept(
        "request_latency",
        "Request latency",
        "HTTP request latency: response time and duration of requests, latency percentiles",
        "seconds",
        (r"~(^|_)(http_)?request_duration_seconds$",),
        _latency,
        needs_bucket=True,
    ),
    Concept(
        "targets_up",
        "Targets up",
        "Targets up: how many monitored scrape targets are up and healthy",
        "targets",
        ("up",),
        _gauge("sum"),
        default_aggregation="last",
    ),
    Concept(
        "uptime",
        "Uptime",
        "Uptime: how long the machine has been running since boot",
        "seconds",
        ("node_boot_time_seconds",),
        _uptime,
        default_aggregation="last",
    ),
    Concept(
        "network_errors",
        "Network errors",
        "Network errors: receive and transmit errors per second on network interfaces",
        "errors/s",
        ("node_network_receive_errs_total", "node_network_transmit_errs_total"),
        _sum_rate(_NET),
    ),
)
CONCEPTS_BY_KEY = {c.key: c for c in CONCEPTS}


def build_concept(
    concept: Concept,
    names: Mapping[str, object],
    filters: Mapping[str, str],
    step: int,
    aggregation: Aggregation | None,
) -> Built | None:
    """The concept's expression over the metrics in `names`; None when one is missing."""
    metrics = concept.resolve(names)
    if metrics is None:
        return None
    label = concept.label
    if concept.key == "request_latency":
        label = "Average request latency" if aggregation == "avg" else (f"{quantile_name(aggregation)} request latency")
    promql = concept.build(metrics, filters, rate_window(step), aggregation)
    return Built(promql=promql, metrics=metrics, unit=concept.unit, label=label)


def unit_of(name: str, meta_unit: str = "", rated: bool = False) -> str:
    """The unit a metric's values read in, from its metadata or naming convention."""
    base = name.removesuffix("_total")
    unit = meta_unit
    if not unit:
        for suffix, u in (
            ("_bytes", "bytes"),
            ("_seconds", "seconds"),
            ("_ratio", "ratio"),
            ("_percent", "%"),
            ("_celsius", "°C"),
            ("_joules", "joules"),
            ("_watts", "watts"),
        ):
            if base.endswith(suffix):
                unit = u
                break
    if rated:
        return f"{unit}/s" if unit else "/s"
    return unit


def build_metric(
    name: str,
    mtype: str,
    names: Mapping[str, object],
    filters: Mapping[str, str],
    step: int,
    aggregation: Aggregation | None,
    meta_unit: str = "",
) -> Built:
    """The expression a raw metric's type calls for, as one series."""
    w = rate_window(step)
    label = name
    if mtype == "histogram" or (f"{name}_bucket" in names and mtype != "summary"):
        if aggregation == "avg":
            promql = mean_of_histogram(name, filters, w)
            label = f"average {name}"
        else:
            q = QUANTILES.get(aggregation or "p95", 0.95)
            buckets = selector(name + "_bucket", filters)
            promql = f"histogram_quantile({q}, sum by (le) (rate({buckets}[{w}])))"
            label = f"{quantile_name(aggregation)} of {name}"
        return Built(promql, [name], unit_of(name, meta_unit), label)
    if mtype == "summary" or (f"{name}_count" in names and f"{name}_sum" in names):
        if aggregation in QUANTILES and name in names:
            q = QUANTILES[aggregation or "p50"]
            promql = f"max({selector(name, filters, {'quantile': ('=', str(q))})})"
            label = f"{aggregation} {name}"
        else:
            promql = mean_of_histogram(name, filters, w)
            label = f"average {name}"
        return Built(promql, [name], unit_of(name, meta_unit), label)
    if mtype == "counter" or name.endswith("_total"):
        return Built(
            f"sum(rate({selector(name, filters)}[{w}]))",
            [name],
            unit_of(name, meta_unit, rated=True),
            name,
        )
    if aggregation == "rate":
        return Built(
            f"sum(deriv({selector(name, filters)}[{w}]))",
            [name],
            unit_of(name, meta_unit, rated=True),
            f"change of {name}",
        )
    outer = {"sum": "sum", "max": "max", "min": "min", "count": "count"}.get(aggregation or "", "avg")
    return Built(f"{outer}({selector(name, filters)})", [name], unit_of(name, meta_unit), name)


METRIC_TOKEN = re.compile(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*_[a-zA-Z0-9_:]+\b")
"""A word that looks like a metric name (it has an underscore)."""
