"""experiment_designer: sample size, MDE and power against statsmodels, the baseline read from
the data, cluster designs, the design document, and bad input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from statsmodels.stats.proportion import proportion_effectsize

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.packs.commercial.base.data import generate
from concerto.packs.commercial.experiment_designer.agent import ExperimentDesignerAgent

Agent = ExperimentDesignerAgent


@pytest.fixture(scope="module")
def kisqali_baseline() -> tuple[float, float]:
    """new Rx per Kisqali HCP-month over the data's latest three months, computed independently."""
    panel = generate().panel.to_pandas()
    rows = panel[(panel["brand"] == "Kisqali") & panel["month"].isin(sorted(panel["month"].unique())[-3:])]
    return float(rows["new_rx"].mean()), float(rows["new_rx"].std())


async def test_sample_size_matches_statsmodels(run_agent: Any) -> None:
    result = await run_agent(Agent, "Sample size for an effect size of 0.2 at alpha 0.05 and 80% power")
    out = result.output
    assert out["solved_for"] == "sample_size"
    assert out["n_per_arm"] == 394 == math.ceil(TTestIndPower().solve_power(0.2, alpha=0.05, power=0.8))
    assert (out["alpha"], out["power"], out["effect_size"]) == (0.05, 0.8, 0.2)
    assert "TTestIndPower" in out["test"]


async def test_ten_percent_lift_in_kisqali_new_rx(run_agent: Any, kisqali_baseline: tuple[float, float]) -> None:
    result = await run_agent(Agent, "How many HCPs do we need to detect a 10% lift in Kisqali new Rx with 80% power?")
    out = result.output
    mean, sd = kisqali_baseline
    assert out["brand"] == "Kisqali" and out["baseline"]["outcome"] == "new_rx"
    assert out["baseline"]["mean"] == pytest.approx(mean, abs=1e-4)
    assert out["baseline"]["sd"] == pytest.approx(sd, abs=1e-4)
    expected = math.ceil(TTestIndPower().solve_power(0.1 * mean / sd, alpha=0.05, power=0.8))
    assert out["n_per_arm"] == expected
    assert out["minimum_detectable_effect_relative"] == pytest.approx(0.1)
    # 600 Kisqali HCPs are fewer than both arms need: measuring each over several months is the way out
    assert out["baseline"]["units"] == 600 and out["feasible"] is False
    assert out["duration_basis"] == "repeated_measures" and out["duration_months"] > 1
    assert out["with_available_units"]["n_per_arm"] == 300
    assert "decile" in out["stratification"]["columns"]
    assert out["stratification"]["n_per_arm_adjusted"] < out["n_per_arm"]
    assert result.output["results"][0]["chart"]["type"] == "bar"


async def test_mde_round_trip(run_agent: Any) -> None:
    sized = await run_agent(Agent, "how many HCPs per arm?", effect_size=0.25, power=0.9)
    n = sized.output["n_per_arm"]
    back = await run_agent(Agent, f"what is the minimum detectable effect with {n} HCPs per arm at 90% power?")
    assert back.output["solved_for"] == "minimum_detectable_effect"
    assert back.output["n_per_arm"] == n
    assert back.output["effect_size"] == pytest.approx(0.25, abs=0.002)
    assert back.output["effect_size"] <= 0.25  # rounding n up can only make the detectable effect smaller
    sd = back.output["baseline"]["sd"]
    assert back.output["minimum_detectable_effect"] == pytest.approx(back.output["effect_size"] * sd, rel=1e-3)


async def test_power_of_a_given_design(run_agent: Any) -> None:
    result = await run_agent(Agent, "What power do we have with 300 HCPs per arm for an effect size of 0.25?")
    assert result.output["solved_for"] == "power"
    assert result.output["power"] == pytest.approx(TTestIndPower().power(0.25, 300, 0.05), abs=1e-4)


async def test_mde_with_400_hcps_per_arm(run_agent: Any) -> None:
    result = await run_agent(Agent, "what is the minimum detectable effect with 400 HCPs per arm?")
    out = result.output
    assert out["n_per_arm"] == 400
    assert out["effect_size"] == pytest.approx(TTestIndPower().solve_power(None, 400, 0.05, 0.8), abs=1e-4)


async def test_rates_use_normal_ind_power(run_agent: Any) -> None:
    question = "Our conversion rate is 12%: how many HCPs per arm to detect a lift from 12% to 14%?"
    result = await run_agent(Agent, question)
    h = proportion_effectsize(0.14, 0.12)
    assert result.output["n_per_arm"] == math.ceil(NormalIndPower().solve_power(h, alpha=0.05, power=0.8))
    assert "NormalIndPower" in result.output["test"]


async def test_cluster_design_by_territory(run_agent: Any) -> None:
    result = await run_agent(
        Agent, "How many territories do we need for a cluster randomised trial to detect a 10% lift in Kisqali new Rx?"
    )
    out = result.output
    cluster = out["cluster"]
    assert out["randomisation_unit"] == "territory"
    assert cluster["clusters"] == 24 and cluster["cluster_size"] == 25
    low, high = cluster["icc_interval"]
    assert low <= max(cluster["icc_estimate"], 0) <= high
    assert cluster["design_effect"] == pytest.approx(1 + (cluster["cluster_size"] - 1) * cluster["icc_used"], abs=1e-3)
    assert cluster["design_effect"] > 1
    individual = TTestIndPower().solve_power(out["effect_size"], alpha=0.05, power=0.8)
    assert out["n_per_arm"] == math.ceil(individual * cluster["design_effect"])
    assert cluster["clusters_per_arm"] == math.ceil(individual * cluster["design_effect"] / cluster["cluster_size"])
    assert out["feasible"] is False and out["with_available_units"]["effect_size"] > out["effect_size"]


async def test_design_document_for_an_email_campaign(run_agent: Any) -> None:
    result = await run_agent(Agent, "design an A/B test of a new email campaign for Fabhalta")
    out = result.output
    assert out["solved_for"] == "minimum_detectable_effect"  # no effect named: what the HCPs available detect
    assert out["n_per_arm"] == 300 and out["duration_months"] == 1
    document = out["design_document"]
    for section in ("Hypothesis", "Randomisation unit", "Arms", "Sample size", "Stratification", "Duration"):
        assert f"**{section}.**" in document
    for section in ("Primary metric", "Analysis plan", "Risks"):
        assert f"**{section}.**" in document
    assert "a new email campaign" in document and "Fabhalta" in document


async def test_answers_from_the_question_alone_without_an_outcome(run_agent: Any, store: Any, tmp_path: Path) -> None:
    path = tmp_path / "ed_names.csv"
    pd.DataFrame({"name": [f"n{i}" for i in range(50)], "group": ["a", "b"] * 25}).to_csv(path, index=False)
    load_table(store, path, "ed_names")
    result = await run_agent(Agent, "sample size for effect size 0.3 with 90% power", source="ed_names")
    assert result.output["n_per_arm"] == math.ceil(TTestIndPower().solve_power(0.3, alpha=0.05, power=0.9))
    assert result.output["baseline"] is None
    assert [u.part for u in result.unanswered] == ["how long the test must run"]


async def test_missing_values_in_the_outcome_are_dropped(run_agent: Any) -> None:
    result = await run_agent(Agent, "minimum detectable effect with 200 HCPs per arm", outcome="speaker_events")
    assert result.output["baseline"]["outcome"] == "speaker_events"
    assert result.output["baseline"]["mean"] == pytest.approx(0.3, abs=0.05)


# Bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "payload", "error_type"),
    [
        ("how many HCPs for a 10% lift?", {"power": 1.2}, "invalid_power"),
        ("how many HCPs with 120% power for a 10% lift?", {}, "invalid_power"),
        ("how many HCPs for a 10% lift?", {"power": 0}, "invalid_power"),
        ("how many HCPs for a 10% lift at alpha 1.5?", {}, "invalid_alpha"),
        ("how many HCPs for a 10% lift?", {"alpha": 0}, "invalid_alpha"),
        ("sample size for effect size 0 at 80% power", {}, "invalid_effect_size"),
        ("sample size?", {"effect_size": -0.2}, "invalid_effect_size"),
        ("minimum detectable effect with 1 HCP per arm", {}, "too_few_units"),
        ("design a test", {"unit": "postcode"}, "unknown_column"),
        ("design a test", {"outcome": "specialty"}, "invalid_column"),
    ],
)
async def test_bad_input_gets_a_clear_error(
    run_agent: Any, question: str, payload: dict[str, Any], error_type: str
) -> None:
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, question, **payload)
    assert caught.value.error_type == error_type
    assert caught.value.suggestion


async def test_an_effect_in_outcome_units_needs_a_baseline(run_agent: Any, store: Any, tmp_path: Path) -> None:
    path = tmp_path / "ed_plain.csv"
    pd.DataFrame({"name": [f"n{i}" for i in range(50)], "group": ["a", "b"] * 25}).to_csv(path, index=False)
    load_table(store, path, "ed_plain")
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "how many HCPs to detect a 10% lift?", source="ed_plain")
    assert caught.value.error_type == "missing_baseline"
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "design an experiment", source="ed_plain")
    assert caught.value.error_type == "missing_effect"


async def test_too_few_rows_for_a_baseline(run_agent: Any, store: Any, tmp_path: Path) -> None:
    path = tmp_path / "ed_tiny.csv"
    pd.DataFrame({"sales": [1.0, 2.0, 3.0]}).to_csv(path, index=False)
    load_table(store, path, "ed_tiny")
    with pytest.raises(AgentFailure) as caught:
        await run_agent(Agent, "how many units to detect a 10% lift in sales?", source="ed_tiny", outcome="sales")
    assert caught.value.error_type == "too_few_rows"
