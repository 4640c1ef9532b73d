"""health_score: the built-in data's components reflect what was planted (missing speaker
events, drifted emails, data ending 2026-10 with NOW = 2026-11-15); unmeasurable components
are unanswered parts; heavy nulls, stale data and a broken model score low; bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.data.store import Store
from concerto.packs.commercial.base.data import truth
from concerto.packs.commercial.health_score.agent import HealthScoreAgent
from concerto.packs.commercial.health_score.components import WEIGHTS


async def test_built_in_components_reflect_the_plant(run_agent: Any) -> None:
    result = await run_agent(HealthScoreAgent, "How healthy is our data?")
    out = result.output
    parts = out["components"]
    for name, part in parts.items():
        print(f"{name:>12} {part['score']:5.1f}  {part['reason']}")
    print("overall", out["health_score"], out["grade"])
    planted = truth()
    assert set(parts) == {"completeness", "freshness", "drift", "error"}
    assert not out["not_measured"] and not result.unanswered
    # Completeness: speaker_events misses about 2 % of its values, the rest is filled.
    assert parts["completeness"]["score"] < 100
    assert list(parts["completeness"]["worst_columns"]) == ["speaker_events"]
    assert parts["completeness"]["worst_columns"]["speaker_events"] == pytest.approx(
        planted.missing["speaker_events"], abs=0.003
    )
    # Freshness: monthly data up to 2026-10 is on time on 2026-11-15.
    fresh = parts["freshness"]
    assert (fresh["latest"], fresh["cadence"], fresh["state"]) == ("2026-10-01", "monthly", "fresh")
    assert fresh["score"] == 100
    # Drift: the planted drift in emails costs points, and only it.
    assert parts["drift"]["significant"] == planted.drifted
    assert 50 < parts["drift"]["score"] < 100
    assert "emails" in parts["drift"]["reason"]
    # Error: the ridge model of new Rx validated on 2025 holds on 2026.
    assert parts["error"]["outcome"] == "new_rx" and parts["error"]["cv_r2"] > 0.5
    assert parts["error"]["score"] > 50
    assert sum(WEIGHTS.values()) == pytest.approx(1)
    expected = sum(WEIGHTS[k] * v["score"] for k, v in parts.items())
    assert out["health_score"] == pytest.approx(expected, abs=0.1)
    assert out["grade"] == "healthy"
    assert out["results"][0]["chart"]["type"] == "bar"


async def test_no_time_column_freshness_not_measurable(run_agent: Any, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "hs_undated.csv"
    path.write_text("store,region,sales\n" + "\n".join(f"S{i},R{i % 3},{i * 2}" for i in range(50)) + "\n")
    load_table(store, path, "hs_undated")
    result = await run_agent(HealthScoreAgent, "How healthy is this data?", source="hs_undated")
    out = result.output
    parts = [u.part for u in result.unanswered]
    assert "freshness of the data" in parts
    assert "freshness of the data" in out["not_measured"]
    reason = next(u.reason for u in result.unanswered if u.part == "freshness of the data")
    assert "no date column" in reason
    assert "freshness" not in out["components"]
    assert out["components"]["completeness"]["score"] == 100
    assert out["health_score"] == 100  # only what was measured counts


async def test_heavy_nulls_and_stale_data_score_low(run_agent: Any, store: Store, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    rows = []
    for k in range(15):  # 2025-01 … 2026-03: more than four months behind on 2026-11-15
        for _ in range(40):
            cells = [f"{rng.poisson(5)}", f"{rng.normal(50, 5):.1f}", rng.choice(["a", "b"])]
            cells = [c if rng.random() > 0.45 else "" for c in cells]
            rows.append(f"{2025 + k // 12}-{k % 12 + 1:02d}-01," + ",".join(cells))
    path = tmp_path / "hs_nulls.csv"
    path.write_text("month,visits,score,tier\n" + "\n".join(rows) + "\n")
    load_table(store, path, "hs_nulls")
    result = await run_agent(HealthScoreAgent, "How healthy is this data?", source="hs_nulls", outcome="score")
    parts = result.output["components"]
    print({k: (v["score"], v["reason"]) for k, v in parts.items()})
    assert parts["completeness"]["score"] == 0
    assert parts["freshness"]["state"] == "stale" and parts["freshness"]["score"] == 0
    assert result.output["health_score"] < 40
    assert result.output["grade"] == "unhealthy"
    assert any("missing values" in r for r in result.output["recommendations"])


async def test_a_model_that_stopped_holding_scores_low(run_agent: Any, store: Store, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, 600)
    later = np.arange(600) >= 300
    y = np.where(later, -2 * x, 2 * x) + rng.normal(0, 0.3, 600)
    path = tmp_path / "hs_flip.csv"
    lines = [f"{'after' if b else 'before'},{a:.3f},{v:.3f}" for a, v, b in zip(x, y, later, strict=True)]
    path.write_text("period,x,y\n" + "\n".join(lines) + "\n")
    load_table(store, path, "hs_flip")
    result = await run_agent(HealthScoreAgent, "Can we still trust the model?", source="hs_flip", outcome="y")
    error = result.output["components"]["error"]
    assert error["ratio"] > 3 and error["score"] == 0
    assert result.output["grade"] == "unhealthy"  # capped at the failing component + 30
    assert "freshness of the data" in result.output["not_measured"]


async def test_too_few_rows_leave_parts_unanswered(run_agent: Any, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "hs_few.csv"
    path.write_text("month,calls\n" + "\n".join(f"2026-{m:02d}-01,{m}" for m in range(5, 11)) + "\n")
    load_table(store, path, "hs_few")
    result = await run_agent(HealthScoreAgent, "How healthy is this data?", source="hs_few", outcome="calls")
    assert set(result.output["components"]) == {"completeness", "freshness"}
    assert {u.part for u in result.unanswered} == {"drift of the data", "model error"}
    assert all(u.reason for u in result.unanswered)


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [({"outcome": "specialty"}, "invalid_column"), ({"outcome": "revenue_usd"}, "unknown_column")],
)
async def test_bad_outcome(run_agent: Any, payload: dict[str, Any], error_type: str) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(HealthScoreAgent, "Is the model healthy?", **payload)
    assert failure.value.error_type == error_type
    assert failure.value.suggestion


async def test_unknown_brand(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(HealthScoreAgent, "How healthy is the data?", query_fields={"brand": "Aspirin"})
    assert failure.value.error_type == "unknown_brand"
