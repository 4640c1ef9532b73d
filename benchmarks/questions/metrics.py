"""The metrics agent's question → query step, offline, for the question set beside this file.

`plan(question, now)` runs what the metrics agent does before it queries Prometheus: it
reads the question (windows, breakdown, ranking, comparison, filters, the metrics asked),
matches the metrics against a catalog, checks the operation, window and labels, and
returns the PromQL it would run with the window, or the error type it would answer with:

    {"promql": [...], "start": "2025-06-15T11:00:00Z", "end": "2025-06-15T12:00:00Z"}
    {"promql": [...], "start": ..., "end": ..., "missing": ["CPU usage by datacenter"]}
    {"error_type": "unsupported_operation"}

The catalog (metric names, types, help texts and label names) is the one a Prometheus
scraping a node exporter and itself has; it is recorded in `metrics_catalog.json` so the
scoring needs no Prometheus. Record it again from a running server with

    .venv/bin/python -m benchmarks.questions.metrics --record http://127.0.0.1:9090

Scoring the set: `tests/packs/metrics/test_question_set.py`, and the harness
`benchmarks/bench_questions.py`, which calls `plan` for every question of `metrics.yaml`.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CATALOG = HERE / "metrics_catalog.json"
QUESTIONS = HERE / "metrics.yaml"
DEFAULT_NOW = "2025-06-15T12:00:00Z"


def iso(moment: datetime) -> str:
    """An ISO timestamp in UTC with a `Z`, as the question set writes them."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=4)
def _recorded(path: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    from concerto.packs.metrics.backend import MetricInfo

    data = json.loads(Path(path).read_text())
    catalog = {
        name: MetricInfo(name=name, type=m.get("type") or "unknown", help=m.get("help") or "", unit=m.get("unit") or "")
        for name, m in data["metrics"].items()
    }
    labels = {name: list(m["labels"]) for name, m in data["metrics"].items() if m.get("labels") is not None}
    return catalog, labels


def _catalog(metrics: Iterable[str] | str | Path | None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The catalog to match against: the recorded file, another recorded file, or bare names
    (typed by their suffix, without labels or help text)."""
    from concerto.packs.metrics.backend import MetricInfo

    if metrics is None:
        return _recorded(str(CATALOG))
    if isinstance(metrics, str | Path):
        return _recorded(str(metrics))
    catalog = {
        name: MetricInfo(name=name, type="counter" if name.endswith("_total") else "unknown") for name in metrics
    }
    return catalog, {}


@lru_cache(maxsize=1)
def _embedder() -> Any:
    from concerto.nlp.embeddings import default_embedder

    return default_embedder()


def plan(question: str, now: datetime, metrics: Iterable[str] | str | Path | None = None) -> dict[str, Any]:
    """What the metrics agent would run for `question` at `now`, without a server.

    `metrics`: the recorded catalog (default), the path of another recorded catalog, or a
    list of metric names. Returns `{"promql": [...], "start": iso, "end": iso}` (plus
    `"missing": [...]`, the parts of the question left unanswered, when there are any) or
    `{"error_type": ...}` with the error type of 003_*.txt the agent would answer with.
    """
    from concerto.packs.metrics.labels import check_labels
    from concerto.packs.metrics.models import MetricsQueryFailure
    from concerto.packs.metrics.node import validate
    from concerto.packs.metrics.parser import parse_question

    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    catalog, labels = _catalog(metrics)
    try:
        query = parse_question(question, now, catalog, _embedder())
        validate(query, catalog, now)
    except MetricsQueryFailure as failure:
        return {"error_type": failure.error.error_type}
    query = check_labels(query, labels, catalog)
    out: dict[str, Any] = {
        "promql": [q.promql for q in query.planned()],
        "start": iso(query.time_range.start_time),
        "end": iso(query.time_range.end_time),
    }
    if query.missing:
        out["missing"] = [m.sentence for m in query.missing]
    return out


def record(url: str, path: Path = CATALOG) -> int:
    """Write the catalog of the Prometheus at `url` (names, type, help, unit, labels) to `path`."""

    def get(endpoint: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{url.rstrip('/')}{endpoint}{query}", timeout=30) as resp:
            return json.load(resp)["data"]

    names = get("/api/v1/label/__name__/values")
    metadata = get("/api/v1/metadata")
    metrics: dict[str, Any] = {}
    for name in names:
        meta = (metadata.get(name) or [{}])[0]
        labels = sorted(n for n in get("/api/v1/labels", **{"match[]": name}) if n != "__name__")
        metrics[name] = {
            "type": meta.get("type", "unknown"),
            "help": meta.get("help", ""),
            "unit": meta.get("unit", ""),
            "labels": labels,
        }
    for name, entries in metadata.items():  # histogram and summary families by their base name
        if name not in metrics and any(f"{name}{s}" in metrics for s in ("_bucket", "_count", "_sum")):
            meta = entries[0]
            metrics[name] = {"type": meta.get("type"), "help": meta.get("help", ""), "unit": meta.get("unit", "")}
            metrics[name]["labels"] = None
    body = {
        "recorded_from": "Prometheus scraping prometheus-node-exporter (job node) and itself (job prometheus)",
        "metrics": dict(sorted(metrics.items())),
    }
    path.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")
    return len(metrics)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", metavar="URL", help="record the catalog of the Prometheus at URL")
    parser.add_argument("question", nargs="*", help="questions to plan (with --now)")
    parser.add_argument("--now", default=DEFAULT_NOW)
    args = parser.parse_args(argv)
    if args.record:
        print(f"{record(args.record)} metrics written to {CATALOG}")
        return 0
    now = datetime.fromisoformat(args.now.replace("Z", "+00:00"))
    for question in args.question:
        print(json.dumps({"question": question, **plan(question, now)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
