"""The WikiTableQuestions harness (`benchmarks/bench_wtq.py`): its sample, its source names, and
one small run end to end on a real table of the dataset (a real store and orchestrator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_wtq import WTQ, main, read_split, sample, table_name

pytestmark = pytest.mark.skipif(not (WTQ / "random-split-1-dev.tsv").is_file(), reason="the dataset is not here")


def test_sample_is_deterministic_and_seeded() -> None:
    rows = read_split(WTQ, "dev")
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    first = sample(rows, 10, 28, 0)
    assert [r["id"] for r in first] == [r["id"] for r in sample(rows, 10, 28, 0)]
    assert [r["id"] for r in first] != [r["id"] for r in sample(rows, 10, 29, 0)]
    assert [r["id"] for r in sample(rows, 5, 28, 5)] == [r["id"] for r in first[5:]]
    assert sample(rows, 3, -1, 0) == rows[:3]


def test_table_names_are_valid_source_names() -> None:
    from concerto.data.store import valid_name

    assert table_name("csv/204-csv/590.csv") == "t204_590"
    assert valid_name(table_name("csv/200-csv/1.csv")) == "t200_1"
    with pytest.raises(ValueError):
        table_name("../etc/passwd")


def test_a_small_run_writes_its_report_and_records(tmp_path: Path) -> None:
    report, records = tmp_path / "wtq.md", tmp_path / "wtq.jsonl"
    assert main(["--limit", "3", "--output", str(report), "--jsonl", str(records)]) == 0
    lines = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3
    for r in lines:
        assert r["status"] in {"answered", "failed", "partial", "timeout", "load_failed"}
        assert isinstance(r["correct"], bool) and isinstance(r["contains"], bool)
        assert r["gold"] and r["source"].startswith("t")
    text = report.read_text(encoding="utf-8")
    assert "accuracy (`answer_values`, official rules)" in text
    assert "tables that failed to load | 0 of" in text
