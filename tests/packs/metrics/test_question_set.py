"""The metrics question set (benchmarks/questions/metrics.yaml) scored through its runner's `plan`,
offline against the recorded catalog: every question must read into the PromQL and window (or the
error type, or the missing parts) it lists. benchmarks/bench_questions.py reports the same set per
category."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks import bench_questions

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def test_every_question_of_the_set_is_planned_as_expected() -> None:
    scored = bench_questions.score("metrics")
    failures = [f"{s.item['id']} {s.item['question']!r}: {'; '.join(s.problems)}" for s in scored if not s.right]
    assert not failures, "\n".join(failures)


def test_the_set_covers_what_people_ask() -> None:
    import yaml

    items = yaml.safe_load((BENCHMARKS / "questions" / "metrics.yaml").read_text())
    assert len(items) >= 35 and len({i["id"] for i in items}) == len(items)
    categories = Counter(i["category"] for i in items)
    for category in (
        "single",
        "breakdown",
        "topk",
        "comparison",
        "time_words",
        "unsupported",
        "unknown_metric",
        "partial",
    ):
        assert categories[category] >= 3, category
    years = {str(i.get("now", ""))[:10] for i in items}
    assert {"2025-01-01", "2024-03-01"} <= years  # a year boundary and the day after a leap day
