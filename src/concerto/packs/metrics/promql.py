"""PromQL building: label selectors from filters, everyday concepts, and raw metrics.

People ask for "CPU usage", not for `node_cpu_seconds_total`; a concept is the correct
expression for such a phrase (a busy fraction by rate, used = total - available, a
histogram quantile). A metric with no concept gets the expression its type calls
for: a rate for counters, an aggregate for gauges, a quantile for histograms.

Every expression is built through a `Shape`: the user's label filters, the `rate()`
window, the labels to break the answer down by (`avg by (instance) (...)`: one series
per value; none: one series) and an optional `offset` (the same expression a day or a
week earlier, for comparisons). `ranked` keeps the top or bottom N series of an
expression over the whole window.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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


@dataclass(frozen=True, slots=True)
class Shape:
    """How an expression is shaped beyond its metric: filters, rate window, breakdown, offset.

    `vec` and `rng` write a selector (a range for `rng`) with the user's filters over the
    concept's defaults and the offset; `agg` writes an aggregation that keeps the breakdown
    labels (`sum by (instance) (...)`), so every concept breaks down the same way.
    """

    filters: Mapping[str, str] = field(default_factory=dict)
    window: str = "60s"
    by: tuple[str, ...] = ()
    offset: str = ""

    def vec(self, metric: str, defaults: Matchers | None = None) -> str:
        """An instant selector: `metric{...}` (with ` offset D` when shifted)."""
        sel = selector(metric, self.filters, defaults)
        return f"{sel} offset {self.offset}" if self.offset else sel

    def rng(self, metric: str, defaults: Matchers | None = None) -> str:
        """A range selector for `rate()` and friends: `metric{...}[w]` (with ` offset D`)."""
        sel = f"{selector(metric, self.filters, defaults)}[{self.window}]"
        return f"{sel} offset {self.offset}" if self.offset else sel

    def agg(self, op: str, inner: str, keep: tuple[str, ...] = ()) -> str:
        """`op(inner)`, or `op by (keep, breakdown labels) (inner)`."""
        labels = tuple(dict.fromkeys((*keep, *self.by)))
        return f"{op} by ({', '.join(labels)}) ({inner})" if labels else f"{op}({inner})"


def mean_of_histogram(name: str, filters: Mapping[str, str] | Shape, w: str = "60s") -> str:
    """Mean of a histogram or summary: rate of its sum over rate of its count."""
    shape = filters if isinstance(filters, Shape) else Shape(filters, w)
    total = shape.agg("sum", f"rate({shape.rng(name + '_sum')})")
    count = shape.agg("sum", f"rate({shape.rng(name + '_count')})")
    return f"{total} / {count}"


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
    build: Callable[[list[str], Shape, Aggregation | None], str]
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


def _cpu(m: list[str], s: Shape, a: Aggregation | None) -> str:
    if "mode" in s.by or "mode" in s.filters:  # the share of time in each mode asked for
        return f"100 * {s.agg('avg', f'rate({s.rng(m[0])})')}"
    idle = s.rng(m[0], {"mode": ("=", "idle")})
    return f"100 * (1 - {s.agg('avg', f'rate({idle})')})"


def _mem_used(m: list[str], s: Shape, a: Aggregation | None) -> str:
    return s.agg("sum", f"{s.vec(m[0])} - {s.vec(m[1])}")


def _mem_pct(m: list[str], s: Shape, a: Aggregation | None) -> str:
    return f"100 * (1 - {s.agg('sum', s.vec(m[1]))} / {s.agg('sum', s.vec(m[0]))})"


def _sum_rate(
    defaults: Matchers | None = None,
) -> Callable[[list[str], Shape, Aggregation | None], str]:
    def build(m: list[str], s: Shape, a: Aggregation | None) -> str:
        return " + ".join(s.agg("sum", f"rate({s.rng(name, defaults)})") for name in m)

    return build


_REAL_FS: Matchers = {"fstype": ("!~", "tmpfs|overlay|squashfs|ramfs|devtmpfs|nsfs")}


def _disk_pct(m: list[str], s: Shape, a: Aggregation | None) -> str:
    return f"100 * (1 - {s.agg('sum', s.vec(m[1], _REAL_FS))} / {s.agg('sum', s.vec(m[0], _REAL_FS))})"


def _disk_free(m: list[str], s: Shape, a: Aggregation | None) -> str:
    return s.agg("sum", s.vec(m[0], _REAL_FS))


def _gauge(kind: str) -> Callable[[list[str], Shape, Aggregation | None], str]:
    def build(m: list[str], s: Shape, a: Aggregation | None) -> str:
        return s.agg(kind, s.vec(m[0]))

    return build


def _latency(m: list[str], s: Shape, a: Aggregation | None) -> str:
    if a == "avg":
        return mean_of_histogram(m[0], s)
    return histogram_quantile(m[0], s, a)


def histogram_quantile(name: str, s: Shape, a: Aggregation | None) -> str:
    """The quantile `a` (p95 by default) of histogram `name`'s buckets."""
    q = QUANTILES.get(a or "p95", 0.95)
    buckets = s.agg("sum", f"rate({s.rng(name + '_bucket')})", keep=("le",))
    return f"histogram_quantile({q}, {buckets})"


def _errors(m: list[str], s: Shape, a: Aggregation | None) -> str:
    rate = s.agg("sum", f"rate({s.rng(m[0], {'code': ('=~', '5..')})})")
    # No 5xx series where requests were served is no errors: zero, but only there. Where no
    # request series exists at all (a job that does not exist, a window before the server
    # started) the answer stays empty, "no data", never a zero (`or vector(0)` would be one).
    total = s.agg("sum", f"rate({s.rng(m[0])})")
    return f"{rate} or 0 * {total}"


def _uptime(m: list[str], s: Shape, a: Aggregation | None) -> str:
    return s.agg("min", f"time() - {s.vec(m[0])}")


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
        "disk_space_available",
        "Free disk space",
        "Free disk space: bytes still available on filesystems, how much disk space is left",
        "bytes",
        ("node_filesystem_avail_bytes",),
        _disk_free,
    ),
    Concept(
        "network_receive_throughput",
        "Network received",
        "Network received: bytes received per second on network interfaces, inbound, download",
        "bytes/s",
        ("node_network_receive_bytes_total",),
        _sum_rate(_NET),
    ),
    Concept(
        "network_transmit_throughput",
        "Network sent",
        "Network sent: bytes sent or transmitted per second on network interfaces, outbound, upload",
        "bytes/s",
        ("node_network_transmit_bytes_total",),
        _sum_rate(_NET),
    ),
    Concept(
        "network_throughput",
        "Network throughput",
        "Network traffic: network throughput, total traffic on network interfaces, bytes per second sent and received",
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
        "Network errors: network packet errors per second on network interfaces, receive and transmit errors",
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
    *,
    by: tuple[str, ...] = (),
    offset: str = "",
) -> Built | None:
    """The concept's expression over the metrics in `names`; None when one is missing."""
    metrics = concept.resolve(names)
    if metrics is None:
        return None
    label = concept.label
    if concept.key == "request_latency":
        label = "Average request latency" if aggregation == "avg" else (f"{quantile_name(aggregation)} request latency")
    if concept.key == "cpu_usage" and ("mode" in by or "mode" in filters):
        label = "CPU time"  # the share of time spent in each mode, not the busy share
    shape = Shape(filters, rate_window(step), by, offset)
    promql = concept.build(metrics, shape, aggregation)
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
    *,
    by: tuple[str, ...] = (),
    offset: str = "",
) -> Built:
    """The expression a raw metric's type calls for: one series, or one per breakdown value."""
    s = Shape(filters, rate_window(step), by, offset)
    label = name
    if mtype == "histogram" or (f"{name}_bucket" in names and mtype != "summary"):
        if aggregation == "avg":
            promql = mean_of_histogram(name, s)
            label = f"average {name}"
        else:
            promql = histogram_quantile(name, s, aggregation)
            label = f"{quantile_name(aggregation)} of {name}"
        return Built(promql, [name], unit_of(name, meta_unit), label)
    if mtype == "summary" or (f"{name}_count" in names and f"{name}_sum" in names):
        if aggregation in QUANTILES and name in names:
            q = QUANTILES[aggregation or "p50"]
            promql = s.agg("max", s.vec(name, {"quantile": ("=", str(q))}))
            label = f"{aggregation} {name}"
        else:
            promql = mean_of_histogram(name, s)
            label = f"average {name}"
        return Built(promql, [name], unit_of(name, meta_unit), label)
    if mtype == "counter" or name.endswith("_total"):
        return Built(
            s.agg("sum", f"rate({s.rng(name)})"),
            [name],
            unit_of(name, meta_unit, rated=True),
            name,
        )
    if aggregation == "rate":
        return Built(
            s.agg("sum", f"deriv({s.rng(name)})"),
            [name],
            unit_of(name, meta_unit, rated=True),
            f"change of {name}",
        )
    outer = {"sum": "sum", "max": "max", "min": "min", "count": "count"}.get(aggregation or "", "avg")
    return Built(s.agg(outer, s.vec(name)), [name], unit_of(name, meta_unit), name)


_OVER_TIME = {"max": "max_over_time", "min": "min_over_time", "last": "last_over_time", "sum": "sum_over_time"}


def ranked(promql: str, n: int, order: str, duration_s: float, step: int, aggregation: Aggregation | None) -> str:
    """Only the `n` series of `promql` with the highest (`top`) or lowest value over the whole
    window: ranked once, on the statistic asked for (the average by default) over the window
    that ends where the range query ends (`@ end()`), so every step keeps the same series.

    (`topk` alone in a range query ranks each step anew and returns more than n series.)
    """
    window = f"[{round(duration_s)}s:{step}s] @ end()"
    if aggregation in QUANTILES:
        stat = f"quantile_over_time({QUANTILES[aggregation or 'p50']}, ({promql}){window})"
    else:
        stat = f"{_OVER_TIME.get(aggregation or '', 'avg_over_time')}(({promql}){window})"
    k = "topk" if order == "top" else "bottomk"
    return f"{promql} and {k}({n}, {stat})"


METRIC_TOKEN = re.compile(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*_[a-zA-Z0-9_:]+\b")
"""A word that looks like a metric name (it has an underscore)."""
