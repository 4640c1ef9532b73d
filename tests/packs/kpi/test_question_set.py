"""The KPI question set (benchmarks/questions/kpi.yaml) is answered right, through the whole
orchestrator: routing, the agreed-format queries, comparisons, rankings, time words, the
parts an answer does not cover, and a user's own KPIs loaded with `concerto kpi load`.

`benchmarks/bench_questions.py` runs the same set and reports it per category.
"""

from __future__ import annotations

from benchmarks import bench_questions


def test_the_set_is_well_formed() -> None:
    items = bench_questions.load_set("kpi")
    assert len(items) >= 50
    assert len({i["id"] for i in items}) == len(items)
    for item in items:
        assert item["question"].strip() and item["category"] and item["expect"], item["id"]


def test_every_question_is_answered_right() -> None:
    scored = bench_questions.score("kpi")
    wrong = [f"{s.item['id']} {s.item['question']!r}: {'; '.join(s.problems)}" for s in scored if not s.right]
    assert not wrong, "\n".join(wrong)
