"""The accuracy benchmark's question set (benchmarks/accuracy/questions.yaml) is sound, and a
sample of it, one question per agent, is answered right on DuckDB without an LLM.

The whole set runs with `python -m benchmarks.bench_accuracy` (both stores, a few minutes);
this keeps the set and its checker honest in the test suite.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchmarks import bench_accuracy

datasets = bench_accuracy.ds  # benchmarks/accuracy/datasets.py

# One question per agent (two for sql_analytics), over five data sets; each is answered right today.
SAMPLE = [
    "sql-02",  # sql_analytics: counts by a category (penguins)
    "sql-36",  # sql_analytics: an average by a category (wage1)
    "seg-03",  # segmentation: value tiers of a panel's entities (Grunfeld)
    "pat-07",  # pattern_recognition: outliers beyond two standard deviations (penguins)
    "bm-11",  # benchmark: each group against the overall average (penguins)
    "op-02",  # opportunity: the fastest growing entity (Grunfeld)
    "rk-05",  # risk: the entity whose value fell (Grunfeld)
    "bi-09",  # business_impact: losing one entity (Grunfeld)
    "st-01",  # semantic_text: a category matched by meaning, "Japanese" -> Japan (cars)
    "ss-01",  # semantic_search: the nearest names to a named car (cars)
    "dd-02",  # data_discovery: a source's columns and rows (cars)
    "di-01",  # data_ingestion: a file from the uploads folder (wheat)
]


@pytest.fixture(scope="module")
def questions() -> list[dict[str, Any]]:
    return datasets.load_questions()


def test_the_set_is_large_well_formed_and_covers_every_agent(questions: list[dict[str, Any]]) -> None:
    assert len(questions) >= 150
    assert bench_accuracy.validate(questions) == []
    per_agent = Counter(q["agent"] for q in questions)
    assert set(per_agent) == set(bench_accuracy.AGENTS)
    assert min(per_agent.values()) >= 8, per_agent
    assert len({q["dataset"] for q in questions if not datasets.DATASETS[q["dataset"]].upload_only}) >= 5


def test_a_malformed_check_is_reported() -> None:
    bad = [
        {"id": "x", "dataset": "penguins", "question": "q", "agent": "sql_analytics", "expect": {"kind": "value"}},
        {"id": "x", "dataset": "nope", "question": "q", "agent": "oracle", "expect": {"kind": "guess", "value": 1}},
    ]
    problems = bench_accuracy.validate(bad)
    assert "x: value check without value" in problems
    assert "duplicate id x" in problems
    assert any("unknown dataset" in p for p in problems) and any("unknown agent" in p for p in problems)
    assert any("unknown check kind" in p for p in problems)


@pytest.mark.parametrize("name", sorted(datasets.DATASETS))
def test_every_data_set_loads_offline(name: str) -> None:
    if not datasets.available(name):
        pytest.skip(f"{datasets.DATASETS[name].package} is not installed")
    frame = datasets.frame(name)
    assert len(frame) > 0 and len(frame.columns) >= 2


def test_the_stored_expectations_are_what_pandas_computes() -> None:
    """questions.yaml holds the values its `pandas:` expressions give (datasets.py --write-expected)."""
    assert datasets.stale() == []


def test_the_checker_tells_right_from_wrong() -> None:
    """The checks on hand-made answers: the right numbers pass, near misses do not."""
    right = bench_accuracy.Answer(
        "sql_analytics",
        "completed",
        {
            "results": [
                {
                    "purpose": "average body_mass_g by species",
                    "columns": ["species", "average_body_mass_g"],
                    "data": [
                        {"species": "Gentoo", "average_body_mass_g": 5076.02},
                        {"species": "Chinstrap", "average_body_mass_g": 3733.09},
                        {"species": "Adelie", "average_body_mass_g": 3700.66},
                    ],
                }
            ]
        },
        summary="Average body mass g by species: Gentoo leads with 5,076.",
    )
    mapping = {"kind": "group_values", "measure": "body_mass", "mapping": {"Adelie": 3700.66, "Gentoo": 5076.02}}
    assert bench_accuracy.check(right, mapping, "penguins") is None
    assert bench_accuracy.check(right, {**mapping, "mapping": {"Adelie": 3800.0}}, "penguins") is not None
    assert bench_accuracy.check(right, {**mapping, "measure": "flipper"}, "penguins") is not None
    assert bench_accuracy.check(right, {"kind": "top_label", "value": "Gentoo"}, "penguins") is None
    assert bench_accuracy.check(right, {"kind": "top_label", "value": "Adelie"}, "penguins") is not None
    assert bench_accuracy.check(right, {"kind": "value", "value": 5076, "in_text": True}, "penguins") is None
    overlap = {"kind": "set_overlap", "universe": "species", "values": ["Gentoo"], "min_precision": 1.0}
    assert bench_accuracy.check(right, overlap, "penguins") is not None  # three species returned, one wanted
    either = {"any_of": [{"kind": "value", "value": 1.0}, {"kind": "value", "value": 3733.09}]}
    assert bench_accuracy.check(right, either, "penguins") is None


def test_a_sample_is_answered_right_without_an_llm(questions: list[dict[str, Any]]) -> None:
    """One question per agent through `concerto.Orchestrator` on DuckDB, every check passing."""
    chosen = [q for q in questions if q["id"] in SAMPLE]
    assert {q["agent"] for q in chosen} == set(bench_accuracy.AGENTS)
    missing = [q["dataset"] for q in chosen if not datasets.available(q["dataset"])]
    if missing:
        pytest.skip(f"data sets not installed: {missing}")
    outcomes = bench_accuracy.run_backend(chosen, "duckdb", progress=False)
    wrong = [f"{o.id} ({o.cause}): {o.error or '; '.join(o.reasons)}" for o in outcomes if not o.right]
    assert not wrong, "\n".join(wrong)
