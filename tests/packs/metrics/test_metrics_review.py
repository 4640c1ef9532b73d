"""What the review of the comparisons, windows, rankings and answers found, one test each:
calendar comparisons never overlap the current window, two windows compare only when the
question says so, ISO days, label nouns out of the metric phrase, no data never zero, totals
over their own window, baseline points at their own time, no silent truncation, the LLM held
to the reader's rules, and the shape of an aggregate (no server needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.backend import MetricInfo, Series
from concerto.packs.metrics.format import build_result
from concerto.packs.metrics.labels import check_labels
from concerto.packs.metrics.models import Comparison, MetricsQueryFailure
from concerto.packs.metrics.node import validate
from concerto.packs.metrics.parser import parse_question, read_text
from concerto.packs.metrics.timeparse import make_range

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
RECORDED = Path(__file__).resolve().parents[3] / "benchmarks" / "questions" / "metrics_catalog.json"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def recorded() -> tuple[dict[str, MetricInfo], dict[str, list[str]]]:
    data = json.loads(RECORDED.read_text())["metrics"]
    catalog = {n: MetricInfo(n, m["type"] or "unknown", m["help"] or "", m["unit"] or "") for n, m in data.items()}
    return catalog, {n: m["labels"] for n, m in data.items() if m["labels"] is not None}


def _plan(question: str, recorded: Any, embedder: Embedder, now: datetime = NOW) -> Any:
    catalog, labels = recorded
    query = parse_question(question, now, catalog, embedder)
    validate(query, catalog, now)
    return check_labels(query, labels, catalog)


# 1. calendar comparisons: both ends back on the calendar, never overlapping the current window
@pytest.mark.parametrize(
    ("text", "now", "current", "baseline", "offset"),
    [
        # month end: March so far against February to the 28th 12:00 (not 1 Feb - 3 Mar 12:00)
        (
            "CPU usage this month vs last month",
            t("2025-03-31T12:00"),
            ("2025-03-01", "2025-03-31T12:00"),
            ("2025-02-01", "2025-02-28T12:00"),
            None,
        ),
        # two whole months: April against all of March (not 1 Apr - 2 May)
        (
            "CPU usage last month vs the month before",
            t("2025-05-31T12:00"),
            ("2025-04-01", "2025-05-01"),
            ("2025-03-01", "2025-04-01"),
            None,
        ),
        # quarter end
        (
            "CPU usage this quarter vs last quarter",
            t("2025-06-30T12:00"),
            ("2025-04-01", "2025-06-30T12:00"),
            ("2025-01-01", "2025-03-30T12:00"),
            None,
        ),
        # year end of a leap year: 2023 to 31 December 12:00 (not into 2024)
        (
            "CPU usage this year vs last year",
            t("2024-12-31T12:00"),
            ("2024-01-01", "2024-12-31T12:00"),
            ("2023-01-01", "2023-12-31T12:00"),
            None,
        ),
        # the day after a leap day: 60 days of 2024 against 59 of 2023
        (
            "CPU usage this year vs last year",
            t("2024-03-01T00:30"),
            ("2024-01-01", "2024-03-01T00:30"),
            ("2023-01-01", "2023-03-01T00:30"),
            None,
        ),
        # equal lengths still line up with offset: 14.5 days of June and of May
        (
            "memory used this month compared to last month",
            NOW,
            ("2025-06-01", "2025-06-15T12:00"),
            ("2025-05-01", "2025-05-15T12:00"),
            31 * 86400,
        ),
        ("CPU in 2024 vs 2023", NOW, ("2024-01-01", "2025-01-01"), ("2023-01-01", "2024-01-01"), None),
        (
            "CPU usage over the last 48 hours vs the 48 hours before",
            NOW,
            ("2025-06-13T12:00", "2025-06-15T12:00"),
            ("2025-06-11T12:00", "2025-06-13T12:00"),
            2 * 86400,
        ),
    ],
)
def test_calendar_comparisons_do_not_overlap(
    text: str, now: datetime, current: tuple[str, str], baseline: tuple[str, str], offset: int | None
) -> None:
    parts = read_text(text, now)
    assert parts.comparison is not None, text
    base = parts.comparison.baseline
    assert (parts.time_range.start_time, parts.time_range.end_time) == (t(current[0]), t(current[1]))
    assert (base.start_time, base.end_time) == (t(baseline[0]), t(baseline[1]))
    assert parts.comparison.offset_seconds == offset
    assert base.end_time <= parts.time_range.start_time


def test_a_partial_baseline_says_where_it_ends() -> None:
    parts = read_text("CPU usage this month vs last month", t("2025-03-31T12:00"))
    assert parts.comparison is not None
    assert parts.comparison.baseline.expression.endswith("(2025-02-01 00:00 to 2025-02-28 12:00 UTC)")
    two = read_text("CPU usage this year vs 2023", t("2024-12-31T12:00"))
    assert two.comparison is not None
    assert two.comparison.baseline.expression == "the same part of 2023 (to 2023-12-31 12:00 UTC)"


def test_validation_refuses_a_baseline_that_overlaps(recorded: Any, shared_embedder: Embedder) -> None:
    catalog, _ = recorded
    query = parse_question("CPU usage this week vs last week", NOW, catalog, shared_embedder)
    bad = query.model_copy(
        update={"comparison": Comparison(baseline=make_range(t("2025-06-02"), t("2025-06-10"), "last week"))}
    )
    with pytest.raises(MetricsQueryFailure) as info:
        validate(bad, catalog, NOW)
    assert info.value.error.error_type == "invalid_time_range"


# 2. two windows compare only when a word says so; a day word dates a clock range
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("CPU usage from 10:00 to 11:00 today", "2025-06-15T10:00", "2025-06-15T11:00"),
        ("CPU usage yesterday from 10:00 to 11:00", "2025-06-14T10:00", "2025-06-14T11:00"),
        ("CPU usage from 10:00 to 11:00 on 2025-06-13", "2025-06-13T10:00", "2025-06-13T11:00"),
        ("CPU usage from 11:00 to 13:00", "2025-06-15T11:00", "2025-06-15T12:00"),  # cut at now
    ],
)
def test_a_day_word_dates_a_clock_range(text: str, start: str, end: str) -> None:
    parts = read_text(text, NOW)
    assert parts.comparison is None and not parts.missing and parts.time_error is None
    assert (parts.time_range.start_time, parts.time_range.end_time) == (t(start), t(end))


def test_two_windows_without_a_comparing_word_are_not_compared() -> None:
    parts = read_text("CPU usage this week and last month", NOW)
    assert parts.comparison is None
    assert parts.time_range.expression == "this week"
    assert [m.part for m in parts.missing] == ["last month"]


def test_a_clock_range_today_vs_yesterday_is_a_comparison() -> None:
    parts = read_text("CPU usage from 10:00 to 11:00 today vs yesterday", NOW)
    assert parts.comparison is not None and parts.comparison.offset_seconds == 86400
    assert parts.time_range.start_time == t("2025-06-15T10:00")


# 3. ISO days are that day
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("CPU usage on 2025-06-14", "2025-06-14", "2025-06-15"),
        ("CPU usage on 2025-06-15", "2025-06-15", "2025-06-15T12:00"),  # cut at now
        ("CPU usage on 2024-02-29", "2024-02-29", "2024-03-01"),
        ("CPU usage from 2025-06-10 to 2025-06-14", "2025-06-10", "2025-06-15"),  # the 14th included
        ("CPU usage since 2025-06-14", "2025-06-14", "2025-06-15T12:00"),
    ],
)
def test_iso_days(text: str, start: str, end: str) -> None:
    parts = read_text(text, NOW)
    assert parts.time_error is None
    assert (parts.time_range.start_time, parts.time_range.end_time) == (t(start), t(end))


# 4. label nouns do not pull the metric
@pytest.mark.parametrize("question", ["top 5 hosts by CPU", "which host has the highest CPU?", "the busiest host"])
def test_a_ranked_host_is_not_part_of_the_metric(question: str, recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan(question, recorded, shared_embedder)
    assert query.metric_name == "cpu_usage" and "guest" not in query.promql


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("network received", "network_receive_throughput"),
        ("network sent", "network_transmit_throughput"),
        ("network traffic", "network_throughput"),
        ("network errors", "network_errors"),
        ("top 5 network interfaces by traffic", "network_throughput"),
    ],
)
def test_network_directions(question: str, concept: str, recorded: Any, shared_embedder: Embedder) -> None:
    assert _plan(question, recorded, shared_embedder).metric_name == concept


# 5. no data is never zero
def test_the_error_rate_has_no_vector_zero(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("error rate for job web-9", recorded, shared_embedder)
    assert "vector(0)" not in query.promql
    empty = build_result(query, [(query.planned()[0], [])])
    assert empty.is_empty and empty.value is None
    assert any("web-9" in m.part for m in empty.missing)


def test_an_empty_baseline_is_missing_not_zero(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("error rate now vs the same hour yesterday", recorded, shared_embedder)
    assert all("vector(0)" not in q.promql for q in query.planned())
    current, baseline = query.planned()
    start = query.time_range.start_time.timestamp()
    result = build_result(query, [(current, [Series({}, [(start + 60, 0.5)])]), (baseline, [])])
    assert result.comparisons[0].baseline is None
    assert any("the same hour yesterday" in m.part for m in result.missing)


# 6. and 7. a baseline's total over its own window; its points at their own time
def test_februarys_total_uses_februarys_length(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("total network traffic in March vs February", recorded, shared_embedder)
    assert query.comparison is not None and query.comparison.offset_seconds is None
    current, baseline = query.planned()
    march, feb = query.time_range, query.comparison.baseline
    result = build_result(
        query,
        [
            (current, [Series({}, [(march.start_time.timestamp() + 3600, 10.0)])]),
            (baseline, [Series({}, [(feb.start_time.timestamp() + 3600, 10.0)])]),
        ],
    )
    by_role = {s.role: s.value for s in result.series}
    assert by_role["current"] == pytest.approx(10.0 * 31 * 86400)
    assert by_role["baseline"] == pytest.approx(10.0 * 28 * 86400)


def test_offset_baseline_points_carry_their_own_time(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("CPU now vs the same hour yesterday", recorded, shared_embedder)
    current, baseline = query.planned()
    stamp = NOW.timestamp() - 60
    result = build_result(query, [(current, [Series({}, [(stamp, 1.0)])]), (baseline, [Series({}, [(stamp, 2.0)])])])
    base = next(s for s in result.series if s.role == "baseline")
    assert base.datapoints[0].timestamp == NOW - timedelta(days=1, seconds=60)


# 8. nothing dropped in silence; time words not understood are invalid_time_range
def test_a_fifth_metric_is_a_missing_part(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan(
        "CPU usage, memory used, disk space used, network throughput and load average", recorded, shared_embedder
    )
    assert len(query.parts()) == 4
    assert any("load average" in m.part for m in query.missing)


def test_top_500_says_it_keeps_100(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("top 500 hosts by CPU", recorded, shared_embedder)
    assert query.ranking is not None and query.ranking.n == 100
    assert any("500" in m.part for m in query.missing)


@pytest.mark.parametrize("question", ["CPU usage last Tuesday", "CPU usage this morning", "CPU usage since 2024"])
def test_time_words_not_understood(question: str, recorded: Any, shared_embedder: Embedder) -> None:
    with pytest.raises(MetricsQueryFailure) as info:
        _plan(question, recorded, shared_embedder)
    assert info.value.error.error_type == "invalid_time_range" and info.value.error.suggestion


def test_a_comparison_that_cannot_be_read_is_a_missing_part() -> None:
    parts = read_text("CPU usage this week vs the week of the launch", NOW)
    assert parts.comparison is None
    assert any(m.part.startswith("the comparison") for m in parts.missing)


def test_metrics_side_by_side_are_not_a_missing_comparison() -> None:
    assert not read_text("CPU vs memory for the last hour", NOW).missing


# 10. the shape of an aggregate
def test_across_all_hosts_is_one_value(recorded: Any, shared_embedder: Embedder) -> None:
    query = _plan("average CPU usage across all hosts", recorded, shared_embedder)
    assert query.group_by == [] and " by (" not in query.promql


def test_a_breakdowns_value_adds_bytes_and_leaves_shares_unset(recorded: Any, shared_embedder: Embedder) -> None:
    stamp = NOW.timestamp() - 60
    two = [Series({"instance": "a:9100"}, [(stamp, 1.0)]), Series({"instance": "b:9100"}, [(stamp, 3.0)])]
    memory = _plan("memory used by instance", recorded, shared_embedder)
    result = build_result(memory, [(memory.planned()[0], two)])
    assert result.combined == "sum" and result.value == pytest.approx(4.0)
    cpu = _plan("CPU usage by instance", recorded, shared_embedder)
    result = build_result(cpu, [(cpu.planned()[0], two)])
    assert result.combined == "mean" and result.value is None
    assert sorted(s.value for s in result.series if s.value is not None) == [1.0, 3.0]


# 11c. `concerto metrics local --temp` removes its directory when start() fails
@pytest.mark.parametrize("failure", ["error", "interrupt"])
def test_local_temp_dir_is_removed_when_start_fails(
    failure: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal
    import tempfile

    from click.testing import CliRunner

    from concerto.packs.metrics import cli, local

    made = tmp_path / "concerto-prom-x"

    def mkdtemp(prefix: str = "") -> str:
        made.mkdir()
        return str(made)

    def start(self: Any, wait_for_data_s: float = 0.0) -> None:
        assert made.is_dir()
        if failure == "interrupt":
            raise KeyboardInterrupt
        raise local.LocalPrometheusError("the exporter did not start")

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(local, "missing_binaries", lambda: [])
    monkeypatch.setattr(local.LocalPrometheus, "start", start)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        CliRunner().invoke(cli.metrics, ["local", "--temp", "--port", "0"])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not made.exists()
