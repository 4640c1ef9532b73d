"""gap_analyzer on the built-in data (planted gap territories) and on small user files:
the top gaps and their intervals against the truth, the exact volume / mix / rate split,
the brand filter, and bad input."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.packs.commercial.base import data
from concerto.packs.commercial.gap_analyzer.agent import GapAnalyzerAgent
from concerto.packs.commercial.methods.decompose import shapley3, split_change


@cache
def generated() -> data.Generated:
    return data.generate()


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


async def test_top_three_gap_territories_are_the_planted_ones(run_agent: Any) -> None:
    truth = generated().truth
    result = await run_agent(GapAnalyzerAgent, "Which territories have the biggest gap vs potential?")
    out = result.output
    assert out["analysis_type"] == "gap"
    assert (out["segment_column"], out["actual_column"], out["potential_column"]) == (
        "territory",
        "total_rx",
        "rx_potential",
    )
    by_share = [r["territory"] for r in out["largest_relative_gaps"]]
    by_size = [r["territory"] for r in out["largest_gaps"]]
    assert set(by_share) == set(truth.gap_territories)
    assert set(by_size) == set(truth.gap_territories)
    for row in out["gaps"]:  # every territory's interval covers the planted share, and is informative
        lo, hi = row["gap_share_ci"]
        assert lo <= truth.gap_share[row["territory"]] <= hi
        assert hi - lo < 0.05
    top = out["top_segments"]
    assert set(top["segments"]) == set(truth.gap_territories)
    assert 0.40 < top["gap_share"] < 0.50  # planted: about 45 % below potential
    assert top["gap_share_ci"][0] < top["gap_share"] < top["gap_share_ci"][1]
    assert top["share_of_total_gap_ci"][0] < top["share_of_total_gap"] < top["share_of_total_gap_ci"][1]
    assert top["ranking_stability"] > 0.95
    assert out["total_gap"] == pytest.approx(out["total_potential"] - out["total_actual"])
    assert sum(r["share_of_total_gap"] for r in out["gaps"]) == pytest.approx(1.0, abs=1e-3)
    assert result.key_findings[0].startswith("Top 3 territories")
    assert "below potential" in result.key_findings[0] and "95% CI" in result.key_findings[0]
    assert out["results"][0]["chart"]["type"] == "bar"


async def test_brand_filter(run_agent: Any) -> None:
    panel = generated().panel.to_pandas()
    kisqali = panel[panel["brand"] == "Kisqali"]
    result = await run_agent(GapAnalyzerAgent, "Where is Kisqali furthest below its Rx potential?")
    out = result.output
    assert out["brand"] == "Kisqali"
    assert out["total_actual"] == pytest.approx(kisqali["total_rx"].sum())
    assert out["total_potential"] == pytest.approx(kisqali["rx_potential"].sum(), rel=1e-9)
    assert set(out["top_segments"]["segments"]) == set(generated().truth.gap_territories)
    other = await run_agent(GapAnalyzerAgent, "gap vs potential by territory", query_fields={"brand": "Fabhalta"})
    assert other.output["total_actual"] != out["total_actual"]


async def test_segment_from_question_and_payload(run_agent: Any) -> None:
    result = await run_agent(GapAnalyzerAgent, "Show potential vs actual new Rx by specialty for Fabhalta")
    out = result.output
    assert out["segment_column"] == "specialty" and out["actual_column"] == "new_rx"
    assert {r["specialty"] for r in out["gaps"]} == {"Hematology", "Nephrology"}
    assert out["top_segments"]["segments"] and len(out["top_segments"]["segments"]) == 1  # two segments: top 1
    payload = await run_agent(GapAnalyzerAgent, "where are the gaps?", segment="region", actual="new_rx")
    assert payload.output["segment_column"] == "region" and payload.output["actual_column"] == "new_rx"


async def test_change_on_built_in_data_adds_up_exactly(run_agent: Any) -> None:
    panel = generated().panel.to_pandas()
    result = await run_agent(
        GapAnalyzerAgent, "Why did total Rx change between baseline and recent? Split it into volume, mix and rate"
    )
    change = result.output["change"]
    assert result.output["analysis_type"] == "change"
    assert change["periods"] == ["baseline", "recent"] and change["months"] == [12, 10]
    before = panel[panel["period"] == "baseline"]["total_rx"].sum() / 12
    after = panel[panel["period"] == "recent"]["total_rx"].sum() / 10
    assert close(change["before"], before, 1e-6) and close(change["after"], after, 1e-6)
    effects = change["volume_effect"] + change["mix_effect"] + change["rate_effect"]
    assert close(effects, change["total_change"])
    assert close(change["total_change"], after - before, 1e-9)
    assert change["total_change"] > 0  # the planted trend
    lo, hi = change["confidence_intervals"]["total"]
    assert lo < change["total_change"] < hi
    for row in change["by_segment"]:
        assert close(row["volume_effect"] + row["mix_effect"] + row["rate_effect"], row["change"], 1e-6)


async def test_change_between_years_with_brand(run_agent: Any) -> None:
    result = await run_agent(
        GapAnalyzerAgent, "Decompose the change in Kisqali new prescriptions from 2025 to 2026 by specialty"
    )
    change = result.output["change"]
    assert change["periods"] == ["2025", "2026"] and change["outcome"] == "new_rx"
    assert result.output["segment_column"] == "specialty"
    assert {r["specialty"] for r in change["by_segment"]} == {"Oncology", "Hematology-Oncology"}
    assert close(change["volume_effect"] + change["mix_effect"] + change["rate_effect"], change["total_change"])


def _shifting_panel(path: Path) -> None:
    """Two periods where volume, mix and rate all move, one segment appears and one vanishes."""
    rng = np.random.default_rng(3)
    rows = []
    plan = {
        "baseline": {"A": (40, 2.0), "B": (30, 5.0), "OLD": (10, 1.0)},
        "recent": {"A": (70, 2.5), "B": (20, 4.0), "NEW": (15, 7.0)},
    }
    for period, segments in plan.items():
        for seg, (n, rate) in segments.items():
            for _ in range(n):
                rows.append(
                    {"rep": len(rows) + 1, "segment": seg, "period": period, "sales": rng.poisson(rate), "quota": 8.0}
                )
    pd.DataFrame(rows).to_csv(path, index=False)


async def test_change_with_new_and_vanished_segments(run_agent: Any, store: Any, tmp_path: Path) -> None:
    path = tmp_path / "shifting.csv"
    _shifting_panel(path)
    load_table(store, path, "shifting")
    frame = pd.read_csv(path)
    result = await run_agent(
        GapAnalyzerAgent,
        "How did sales change between baseline and recent by segment?",
        source="shifting",
        actual="sales",
    )
    change = result.output["change"]
    assert change["per_month"] is False
    assert change["new_segments"] == ["NEW"] and change["vanished_segments"] == ["OLD"]
    total = frame[frame.period == "recent"].sales.sum() - frame[frame.period == "baseline"].sales.sum()
    assert close(change["total_change"], total)
    assert close(change["volume_effect"] + change["mix_effect"] + change["rate_effect"], total)
    rows = {r["segment"]: r for r in change["by_segment"]}
    assert rows["NEW"]["rate_effect"] == 0 and rows["OLD"]["rate_effect"] == 0  # the stated convention
    assert change["volume_effect"] > 0  # 80 → 105 reps
    assert abs(change["mix_effect"]) > 0 and abs(change["rate_effect"]) > 0


def test_shapley_split_is_exact_and_symmetric() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        y0, y1 = rng.gamma(2, 50, 6), rng.gamma(2, 50, 6)
        n0, n1 = rng.integers(0, 40, 6).astype(float), rng.integers(0, 40, 6).astype(float)
        n0[rng.integers(0, 6)] = 0  # a segment new in period 1
        n1[rng.integers(0, 6)] = 0  # a segment gone in period 1
        y0, y1 = np.where(n0 > 0, y0, 0), np.where(n1 > 0, y1, 0)
        volume, mix, rate = split_change(y0, n0, y1, n1)
        total = y1.sum() - y0.sum()
        assert abs((volume + mix + rate).sum() - total) <= 1e-9 * max(abs(total), 1)
        assert np.allclose(volume + mix + rate, y1 - y0, rtol=1e-9, atol=1e-9)
        # swapping the periods flips every effect (symmetric, no order dependence)
        back = split_change(y1, n1, y0, n0)
        assert np.allclose(back[0], -volume) and np.allclose(back[1], -mix) and np.allclose(back[2], -rate)
    ex, ey, ez = shapley3(*(np.array([v]) for v in (2.0, 3.0, 5.0, 4.0, 3.0, 5.0)))
    assert ex[0] == pytest.approx(30.0) and ey[0] == 0 and ez[0] == 0  # only x moved: all of it is x's


async def test_segments_asked_for(run_agent: Any) -> None:
    result = await run_agent(
        GapAnalyzerAgent, "How big is the gap to potential in T05 and T99?", segments=["T05", "T99"]
    )
    assert [r["territory"] for r in result.output["requested_segments"]] == ["T05"]
    assert [u.part for u in result.unanswered] == ["territory 'T99'"]
    with pytest.raises(AgentFailure) as err:
        await run_agent(GapAnalyzerAgent, "gap to potential", segments=["T99"])
    assert err.value.error_type == "segment_not_found"
    with pytest.raises(AgentFailure) as err:  # a segment with no rows for the brand
        await run_agent(GapAnalyzerAgent, "Kisqali gap to potential for Dermatology by specialty")
    assert err.value.error_type == "segment_not_found" and "Kisqali" in err.value.message


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [
        ({"potential": "market_size"}, "unknown_column"),
        ({"potential": "specialty"}, "invalid_column"),
        ({"actual": "region"}, "invalid_column"),
        ({"segment": "zone"}, "unknown_column"),
        ({"analysis_type": "change", "period_column": "period", "periods": ["baseline", "baseline"]}, "single_period"),
        ({"analysis_type": "change", "period_column": "period", "periods": ["baseline", "2027"]}, "unknown_period"),
    ],
)
async def test_bad_input(run_agent: Any, payload: dict[str, Any], error_type: str) -> None:
    with pytest.raises(AgentFailure) as err:
        await run_agent(GapAnalyzerAgent, "where are the gaps vs potential?", **payload)
    assert err.value.error_type == error_type
    assert err.value.suggestion


async def test_bad_user_files(run_agent: Any, store: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    no_potential = pd.DataFrame({"region": rng.choice(["N", "S"], 40), "sales": rng.poisson(5, 40)})
    no_potential.to_csv(tmp_path / "nopot.csv", index=False)
    load_table(store, tmp_path / "nopot.csv", "nopot")
    with pytest.raises(AgentFailure) as err:
        await run_agent(GapAnalyzerAgent, "gap to potential by region", source="nopot", actual="sales")
    assert err.value.error_type == "missing_column"

    one_period = no_potential.assign(period="2025", target=8.0)
    one_period.to_csv(tmp_path / "oneperiod.csv", index=False)
    load_table(store, tmp_path / "oneperiod.csv", "oneperiod")
    with pytest.raises(AgentFailure) as err:
        await run_agent(
            GapAnalyzerAgent,
            "how did sales change by region?",
            source="oneperiod",
            actual="sales",
            period_column="period",
        )
    assert err.value.error_type == "single_period"

    tiny = one_period.head(5)
    tiny.to_csv(tmp_path / "tiny.csv", index=False)
    load_table(store, tmp_path / "tiny.csv", "tiny")
    with pytest.raises(AgentFailure) as err:
        await run_agent(GapAnalyzerAgent, "gap vs potential", source="tiny", actual="sales", potential="target")
    assert err.value.error_type == "too_few_rows"

    holes = one_period.astype({"sales": float})
    holes.loc[:4, "sales"] = np.nan
    holes.to_csv(tmp_path / "holes.csv", index=False)
    load_table(store, tmp_path / "holes.csv", "holes")
    result = await run_agent(
        GapAnalyzerAgent, "gap vs potential by region", source="holes", actual="sales", potential="target"
    )
    assert any("missing value" in n for n in result.output["notes"])
    assert result.output["total_potential"] == pytest.approx(8.0 * 35)

    with pytest.raises(AgentFailure) as err:
        await run_agent(GapAnalyzerAgent, "gap vs potential", query_fields={"brand": "Aspirin"})
    assert err.value.error_type == "unknown_brand"
