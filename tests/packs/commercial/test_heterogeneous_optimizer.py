"""heterogeneous_optimizer: segment effects (CATE) recovered against the planted truth, the
heterogeneity test, where to focus, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.packs.commercial.base.data import BRANDS, truth
from concerto.packs.commercial.heterogeneous_optimizer.agent import HeterogeneousOptimizerAgent
from concerto.packs.commercial.methods import cate as cm

Agent = HeterogeneousOptimizerAgent


@pytest.fixture(scope="module")
def planted() -> Any:
    return truth()


def _by_segment(result: Any) -> dict[str, dict[str, Any]]:
    return {row["segment"]: row for row in result.output["segments"]}


@pytest.mark.parametrize("brand", list(BRANDS))
async def test_every_specialty_interval_covers_the_planted_effect(run_agent: Any, planted: Any, brand: str) -> None:
    result = await run_agent(Agent, f"Which specialties respond best to increased sampling for {brand}?")
    segments = _by_segment(result)
    assert set(segments) == set(BRANDS[brand])  # each brand has its own two specialties
    for specialty, row in segments.items():
        low, high = row["confidence_interval"]
        assert low <= planted.cate_by_specialty[specialty] <= high, (specialty, row)
        assert row["p_value"] < 0.001
    assert result.output["treatment"] == "increased_sampling"
    assert result.output["outcome"] == "new_rx"
    assert result.output["segment_by"] == "specialty"
    assert result.output["method_used"].startswith("DR-learner")
    assert result.output["clustered_by"] == "hcp_id"


async def test_kisqali_focus_is_oncology_and_segments_differ(run_agent: Any) -> None:
    result = await run_agent(Agent, "Where should we focus sampling for Kisqali?")
    out = result.output
    assert out["brand"] == "Kisqali"
    assert out["ranking"][0] == "Oncology"
    assert out["focus"][0] == "Oncology"
    assert out["heterogeneity_significant"] is True
    assert out["heterogeneity"]["p_value"] < 0.001 and out["heterogeneity"]["df"] == 1
    onc = _by_segment(result)["Oncology"]
    assert onc["expected_extra_outcome"] == pytest.approx(onc["cate"] * onc["untreated"], rel=1e-3)
    assert onc["untreated"] > 0 and 0 < onc["share"] < 1
    assert "Oncology" in out["recommendations"][0]
    chart = out["results"][0]
    assert chart["chart"]["type"] == "bar" and chart["row_count"] == 2


async def test_all_brands_six_specialties_and_the_ate(run_agent: Any, planted: Any) -> None:
    result = await run_agent(
        Agent, "How does the effect of increased sampling on new Rx differ by specialty?", covariates=["decile"]
    )
    segments = _by_segment(result)
    assert len(segments) == 6
    covered = sum(
        row["confidence_interval"][0] <= planted.cate_by_specialty[s] <= row["confidence_interval"][1]
        for s, row in segments.items()
    )
    assert covered >= 5  # six 95 % intervals: one miss is chance, more is a bias
    low, high = result.output["confidence_interval"]
    assert low <= planted.ate["all"] <= high
    assert result.output["heterogeneity"]["df"] == 5 and result.output["heterogeneity_significant"]
    assert result.output["ranking"][0] == "Oncology"


async def test_segment_from_the_question_by_decile(run_agent: Any) -> None:
    result = await run_agent(Agent, "effect of increased sampling on new Rx by decile for Fabhalta")
    assert result.output["segment_by"] == "decile"
    assert len(result.output["segments"]) == 10
    # the planted effect does not depend on decile: the test must not call it heterogeneous by a wide margin
    assert result.output["heterogeneity"]["p_value"] > 0.001


async def test_econml_requested_but_absent_falls_back_and_says_so(run_agent: Any) -> None:
    if cm.econml_available():
        pytest.skip("EconML is installed here")
    result = await run_agent(Agent, "Which specialties respond best to sampling for Kisqali?", method="econml")
    assert result.output["econml_used"] is False
    assert any("EconML is not installed" in n for n in result.output["notes"])


async def test_econml_path_agrees_with_the_core_path_when_installed(run_agent: Any, planted: Any) -> None:
    if not cm.econml_available():
        pytest.skip("EconML (the causal extra) is not installed")
    result = await run_agent(Agent, "Which specialties respond best to sampling for Kisqali?", method="econml")
    assert result.output["econml_used"] is True
    for specialty, row in _by_segment(result).items():
        assert row["confidence_interval"][0] <= planted.cate_by_specialty[specialty] <= row["confidence_interval"][1]


def test_core_path_recovers_a_known_effect_on_synthetic_data() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    seg = rng.integers(0, 2, n)
    w = rng.normal(size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-w))).astype(int)
    y = 2 * w + np.where(seg == 1, 3.0, 1.0) * t + rng.normal(size=n)
    x = np.column_stack([w, seg])
    result = cm.dr_learner(x, t, y, seg.astype(str))
    effects = {e.segment: e for e in result.segments}
    assert effects["1"].ci[0] <= 3.0 <= effects["1"].ci[1]
    assert effects["0"].ci[0] <= 1.0 <= effects["0"].ci[1]
    assert result.heterogeneity is not None and result.heterogeneity.p_value < 1e-6
    naive = y[(t == 1) & (seg == 1)].mean() - y[(t == 0) & (seg == 1)].mean()
    assert abs(naive - 3.0) > 0.5  # the confounding is real, so the adjustment is what recovers it


def test_poor_overlap_averages_the_comparable_rows_and_says_so() -> None:
    rng = np.random.default_rng(5)
    n = 6000
    w = rng.normal(size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-6 * w))).astype(int)  # most rows almost surely treated or not
    seg = rng.integers(0, 2, n)
    y = 3 * w + 2.0 * t + rng.normal(size=n)
    result = cm.dr_learner(w[:, None], t, y, seg.astype(str))
    assert result.overlap_outside is not None and result.overlap_outside > cm.TRIM_WHEN
    assert "comparable rows" in result.notes[0] and result.rows is not None and result.rows < n
    for e in result.segments:
        assert e.ci[0] <= 2.0 <= e.ci[1]


# Bad input ------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> Path:
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def _frame(n: int = 600, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    group = rng.choice(["north", "south"], n)
    z = rng.normal(size=n)
    t = (rng.random(n) < 0.4).astype(int)
    return pd.DataFrame({"group": group, "z": z, "treated": t, "sales": 5 + z + 2 * t + rng.normal(size=n)})


async def test_a_segment_with_too_few_treated_rows_is_skipped_and_said(
    run_agent: Any, store: Any, tmp_path: Path
) -> None:
    frame = _frame()
    rare = pd.DataFrame({"group": ["west"] * 30, "z": 0.0, "treated": [1] * 3 + [0] * 27, "sales": 5.0})
    load_table(store, _write(tmp_path, "ho_rare", pd.concat([frame, rare])), "ho_rare")
    result = await run_agent(
        Agent, "effect of treated on sales by group", source="ho_rare", treatment="treated", covariates=["z"]
    )
    assert set(_by_segment(result)) == {"north", "south"}
    assert "west" in result.output["skipped_segments"]
    assert [u.part for u in result.unanswered] == ["the effect in group 'west'"]
    for row in result.output["segments"]:  # the planted effect 2, within sampling error (4 standard errors)
        assert abs(row["cate"] - 2.0) < 4 * row["standard_error"]


async def test_unknown_segment_column(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "which segments respond best to sampling?", segment="payer_type")
    assert caught.value.error_type == "unknown_column"
    assert "segment" in caught.value.message and caught.value.suggestion


async def test_an_outcome_the_question_names_but_the_source_lacks(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "effect of sampling on revenue by specialty")
    assert caught.value.error_type == "unknown_column" and "revenue" in caught.value.message


async def test_treatment_that_never_varies(run_agent: Any, store: Any, tmp_path: Path) -> None:
    load_table(store, _write(tmp_path, "ho_const", _frame().assign(treated=1)), "ho_const")
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "effect of treated on sales by group", source="ho_const", treatment="treated")
    assert caught.value.error_type == "constant_treatment"
    assert "never varies" in caught.value.message


async def test_non_numeric_outcome(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "effect of sampling by decile", outcome="territory", segment="decile")
    assert caught.value.error_type == "invalid_column"
    assert "not numbers" in caught.value.message


async def test_too_few_rows(run_agent: Any, store: Any, tmp_path: Path) -> None:
    load_table(store, _write(tmp_path, "ho_small", _frame(n=30)), "ho_small")
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "effect of treated on sales by group", source="ho_small", treatment="treated")
    assert caught.value.error_type == "too_few_rows"


async def test_missing_values_are_dropped_and_noted(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(n=800)
    frame.loc[::10, "z"] = np.nan
    load_table(store, _write(tmp_path, "ho_missing", frame), "ho_missing")
    result = await run_agent(
        Agent, "effect of treated on sales by group", source="ho_missing", treatment="treated", covariates="z"
    )
    assert any("missing value" in n for n in result.output["notes"])
    assert result.output["rows"] == 720


async def test_perfect_separation(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame()
    frame["treated"] = (frame["z"] > 0).astype(int)  # z decides the treatment
    load_table(store, _write(tmp_path, "ho_separated", frame), "ho_separated")
    with pytest.raises(AgentFailure) as caught:
        await run_agent(
            Agent, "effect of treated on sales by group", source="ho_separated", treatment="treated", covariates=["z"]
        )
    assert caught.value.error_type == "perfect_separation"
    assert caught.value.suggestion


async def test_unknown_brand(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "which specialties respond best to sampling?", brand="Aspirin")
    assert caught.value.error_type == "unknown_brand"
