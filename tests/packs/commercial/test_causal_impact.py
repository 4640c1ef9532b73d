"""causal_impact on the built-in data set: the doubly robust interval covers the planted
effect (per brand and over all brands) while the naive difference lies far outside it, the
refutations pass, and bad inputs get a clear error saying what to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.packs.commercial.base.data import truth
from concerto.packs.commercial.causal_impact.agent import CausalImpactAgent
from concerto.packs.commercial.methods import causal as causal_methods
from concerto.packs.commercial.methods import causal_dowhy, causal_refute

QUESTION = "What's the impact of increased sampling on Kisqali prescriptions?"


@pytest.fixture(scope="module")
def planted() -> Any:
    return truth()


async def test_kisqali_recovers_the_planted_effect(run_agent: Any, planted: Any) -> None:
    result = await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Kisqali"})
    out = result.output
    lo, hi = out["confidence_interval"]
    assert out["brand"] == "Kisqali"
    assert (out["treatment"], out["outcome"]) == ("increased_sampling", "new_rx")
    assert out["covariates"] == ["decile", "specialty"]
    assert lo <= planted.ate["Kisqali"] <= hi
    assert out["method"] == "doubly_robust" and out["estimand"] == "ate"
    naive = out["naive_difference"]["ate"]
    assert naive == pytest.approx(planted.naive_difference["Kisqali"], abs=1e-3)
    assert naive > hi + 5 * (hi - lo)  # far outside: confounding by decile
    assert out["p_value"] < 0.001
    assert out["robustness_passed"] is True
    assert {r["refuter"] for r in out["refutations"]} == {"placebo_treatment", "random_common_cause", "data_subset"}
    assert all(r["passed"] and r["simulations"] >= 20 for r in out["refutations"])
    placebo = next(r for r in out["refutations"] if r["refuter"] == "placebo_treatment")
    assert abs(placebo["mean_new_effect"]) < 0.2
    methods = {e["method"]: e for e in out["estimators"]}
    assert set(methods) == {"regression_adjustment", "ipw", "doubly_robust"}
    for e in methods.values():
        assert e["confidence_interval"][0] <= planted.ate["Kisqali"] <= e["confidence_interval"][1]
    assert out["assumptions"]["outside_overlap_share"] == 0.0
    assert "Increased sampling is associated with" in out["interpretation"]
    assert "per HCP-month" in out["interpretation"]
    assert result.key_findings[0].startswith("Positive causal effect of")
    assert "statistically significant (p < 0.001)" in result.key_findings[1]
    assert result.key_findings[2] == "Robust to placebo, random common cause and subset refutation tests"
    assert out["recommendations"]
    assert out["results"][0]["purpose"].startswith("Estimated effect by method")


async def test_all_brands(run_agent: Any, planted: Any) -> None:
    result = await run_agent(CausalImpactAgent, "What is the effect of increased sampling on new Rx?")
    out = result.output
    lo, hi = out["confidence_interval"]
    assert out["brand"] is None and out["n_rows"] == planted.rows
    assert lo <= planted.ate["all"] <= hi
    assert not lo <= planted.naive_difference["all"] <= hi
    assert out["robustness_passed"] is True


@pytest.mark.parametrize("brand", ["Fabhalta", "Remibrutinib"])
async def test_other_brands_named_in_the_question(run_agent: Any, planted: Any, brand: str) -> None:
    result = await run_agent(CausalImpactAgent, f"Does increased sampling drive new prescriptions for {brand}?")
    out = result.output
    assert out["brand"] == brand
    lo, hi = out["confidence_interval"]
    assert lo <= planted.ate[brand] <= hi < planted.naive_difference[brand]


async def test_covariates_named_in_the_question(run_agent: Any) -> None:
    result = await run_agent(
        CausalImpactAgent,
        "What is the effect of increased sampling on new Rx for Kisqali, adjusting for decile and the weather?",
    )
    out = result.output
    assert out["covariates"] == ["decile"]
    assert out["assumptions"]["adjustment_reason"] == "the covariates the question names"
    assert [u.part for u in result.unanswered] == ["adjusting for 'the weather'"]


async def test_declared_graph_gives_the_backdoor_set(run_agent: Any, planted: Any) -> None:
    graph = {
        "increased_sampling": ["decile", "specialty"],
        "new_rx": ["increased_sampling", "decile", "specialty"],
        "total_rx": ["new_rx"],
    }
    result = await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Kisqali"}, graph=graph)
    out = result.output
    assert out["covariates"] == ["decile", "specialty"]
    assert "backdoor" in out["assumptions"]["adjustment_reason"]
    lo, hi = out["confidence_interval"]
    assert lo <= planted.ate["Kisqali"] <= hi
    edges = [["decile", "increased_sampling"], "specialty -> increased_sampling", ["increased_sampling", "new_rx"]]
    again = await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Kisqali"}, graph=edges)
    assert again.output["ate"] == out["ate"]


async def test_graph_errors(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as cycle:
        await run_agent(
            CausalImpactAgent,
            QUESTION,
            graph=[["decile", "increased_sampling"], ["increased_sampling", "new_rx"], ["new_rx", "decile"]],
        )
    assert cycle.value.error_type == "invalid_graph" and "cycle" in cycle.value.message
    with pytest.raises(AgentFailure) as missing:
        await run_agent(CausalImpactAgent, QUESTION, graph={"new_rx": ["decile"]})
    assert "not in the graph" in missing.value.message
    with pytest.raises(AgentFailure) as unknown:
        await run_agent(CausalImpactAgent, QUESTION, graph={"increased_sampling": ["weather"]})
    assert unknown.value.error_type == "unknown_column"


async def test_effect_on_the_treated(run_agent: Any) -> None:
    result = await run_agent(CausalImpactAgent, "What is the effect of increased sampling on new Rx among the treated?")
    out = result.output
    assert out["estimand"] == "att"
    assert "among the treated" in out["interpretation"]


async def test_continuous_treatment_is_split_at_the_median(run_agent: Any) -> None:
    result = await run_agent(
        CausalImpactAgent, "effect of calls on new Rx", query_fields={"brand": "Kisqali"}, treatment="calls"
    )
    out = result.output
    assert out["treatment"] == "calls"
    assert "split at its median" in out["assumptions"]["treatment_coding"]
    assert any("split at its median" in s for s in out["assumptions"]["card"])


async def test_missing_values_are_dropped_and_said(run_agent: Any) -> None:
    result = await run_agent(
        CausalImpactAgent,
        QUESTION,
        query_fields={"brand": "Kisqali"},
        covariates=["decile", "specialty", "speaker_events"],
    )
    assert any("missing value" in n for n in result.output["notes"])
    assert result.output["n_rows"] < 13200


async def test_library_dowhy(run_agent: Any, planted: Any) -> None:
    result = await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Kisqali"}, library="dowhy")
    out = result.output
    if causal_dowhy.available():
        assert out["library"] == "dowhy" and out["method"] == "dowhy_linear_regression"
        assert "dowhy_placebo_treatment" in {r["refuter"] for r in out["refutations"]}
        lo, hi = out["confidence_interval"]
        assert lo - 0.1 <= planted.ate["Kisqali"] <= hi + 0.1  # one effect for all rows: near the ATE
    else:
        assert out["library"] == "core" and out["method"] == "doubly_robust"
        assert any("DoWhy is not installed" in n for n in out["notes"])


# Bad input: each gets a clear error that says what to change.


async def test_treatment_that_never_varies(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Kisqali"}, treatment="brand")
    assert failure.value.error_type == "constant_treatment"
    assert "never varies" in failure.value.message and failure.value.suggestion


async def test_treatment_with_many_categories(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(CausalImpactAgent, QUESTION, treatment="territory", covariates=["decile"])
    assert failure.value.error_type == "invalid_treatment"
    assert "treated_value" in (failure.value.suggestion or "")
    chosen = await run_agent(
        CausalImpactAgent, QUESTION, treatment="territory", treated_value="T05", covariates=["decile"]
    )
    assert chosen.output["treated_value"] == "T05"
    assert chosen.output["estimand"] == "att"  # 1 territory in 24: no row has a propensity of 0.05 or more
    with pytest.raises(AgentFailure) as overlap:
        await run_agent(
            CausalImpactAgent,
            QUESTION,
            treatment="territory",
            treated_value="T05",
            covariates=["decile"],
            estimand="ate",
        )
    assert overlap.value.error_type == "no_overlap" and "estimand=att" in (overlap.value.suggestion or "")


async def test_outcome_not_numeric(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(CausalImpactAgent, QUESTION, outcome="specialty")
    assert failure.value.error_type == "invalid_column"
    assert "new_rx" in (failure.value.suggestion or "")


async def test_unknown_columns(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as treatment:
        await run_agent(CausalImpactAgent, QUESTION, treatment="increased_samplng")
    assert treatment.value.error_type == "unknown_column"
    assert "increased_sampling" in treatment.value.message  # did you mean
    with pytest.raises(AgentFailure) as covariate:
        await run_agent(CausalImpactAgent, QUESTION, covariates=["decile", "weather"])
    assert covariate.value.error_type == "unknown_column"


async def test_unknown_brand(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(CausalImpactAgent, QUESTION, query_fields={"brand": "Aspirin"})
    assert failure.value.error_type == "unknown_brand"


async def test_bad_options(run_agent: Any) -> None:
    with pytest.raises(AgentFailure, match="estimand"):
        await run_agent(CausalImpactAgent, QUESTION, estimand="late")
    with pytest.raises(AgentFailure, match="trim"):
        await run_agent(CausalImpactAgent, QUESTION, trim=0.6)
    with pytest.raises(AgentFailure) as id_column:
        await run_agent(CausalImpactAgent, QUESTION, covariates=["hcp_id"])
    assert id_column.value.error_type == "invalid_covariate"


def _frame(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    group = rng.choice(["a", "b", "c"], size=n)
    t = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
    y = 1.0 + 2.0 * t + x + rng.normal(size=n)
    return pd.DataFrame({"id": np.arange(n), "x": x, "group": group, "treated": t, "y": y})


async def _run_csv(run_agent: Any, store: Any, tmp_path: Path, frame: pd.DataFrame, name: str, **payload: Any) -> Any:
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    load_table(store, path, name)
    return await run_agent(CausalImpactAgent, "what is the effect of treated on y?", source=name, **payload)


async def test_user_source_with_default_covariates(run_agent: Any, store: Any, tmp_path: Path) -> None:
    result = await _run_csv(run_agent, store, tmp_path, _frame(2000), "causal_plain")
    out = result.output
    assert (out["treatment"], out["outcome"]) == ("treated", "y")
    assert set(out["covariates"]) == {"x", "group"}  # not the id
    assert "none were named" in out["assumptions"]["adjustment_reason"]
    lo, hi = out["confidence_interval"]
    assert lo <= 2.0 <= hi
    assert out["robustness_passed"] is True


async def test_two_word_treatment(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(1000)
    frame["treated"] = np.where(frame["treated"] == 1, "treated", "control")
    result = await _run_csv(run_agent, store, tmp_path, frame, "causal_words", covariates=["x"])
    out = result.output
    assert out["treated_value"] == "treated"
    assert "treated = 'treated'" in out["assumptions"]["treatment_coding"]
    assert out["confidence_interval"][0] <= 2.0 <= out["confidence_interval"][1]


async def test_too_few_rows(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(200)
    frame["treated"] = (frame.index < 15).astype(int)
    with pytest.raises(AgentFailure) as failure:
        await _run_csv(run_agent, store, tmp_path, frame, "causal_few", covariates=["x"])
    assert failure.value.error_type == "too_few_rows"
    assert "15 treated" in failure.value.message


async def test_mostly_missing_outcome(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(300)
    frame.loc[frame.index[25:], "y"] = np.nan
    with pytest.raises(AgentFailure) as failure:
        await _run_csv(run_agent, store, tmp_path, frame, "causal_missing", covariates=["x"])
    assert failure.value.error_type == "too_few_rows"


async def test_perfect_separation_is_an_error(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(500)
    frame["score"] = frame["treated"] * 10 + np.random.default_rng(2).random(500)  # predicts treated exactly
    with pytest.raises(AgentFailure) as failure:
        await _run_csv(run_agent, store, tmp_path, frame, "causal_separated", covariates=["x", "score"])
    assert failure.value.error_type == "perfect_separation"
    assert "score" in failure.value.message and "Leave 'score' out" in (failure.value.suggestion or "")


async def test_quasi_separation_is_penalised_and_warned(run_agent: Any, store: Any, tmp_path: Path) -> None:
    frame = _frame(2000)
    frame.loc[frame["group"] == "c", "treated"] = 1  # every row of group c is treated
    result = await _run_csv(run_agent, store, tmp_path, frame, "causal_quasi", covariates=["x", "group"])
    card = result.output["assumptions"]
    assert any("group=c is treated" in w for w in card["warnings"])
    assert card["outside_overlap_share"] > 0.2 and card["rows_used"] < 2000
    lo, hi = result.output["confidence_interval"]
    assert lo <= 2.0 <= hi


# The statistics underneath.


def test_propensity_matches_statsmodels() -> None:
    import statsmodels.api as sm

    frame = _frame(3000)
    x = np.column_stack([frame["x"], frame["group"] == "b"]).astype(float)
    t = frame["treated"].to_numpy(float)
    reference = sm.Logit(t, sm.add_constant(x)).fit(disp=0).predict(sm.add_constant(x))
    assert np.max(np.abs(causal_methods.propensity(x, t) - reference)) < 1e-3


def test_binary_treatment_codings() -> None:
    coded = causal_methods.binary_treatment(pd.Series([3, 7, 7, 3]))
    assert coded.values.tolist() == [0, 1, 1, 0] and coded.treated == "7"
    words = causal_methods.binary_treatment(pd.Series(["control", "treated", "control"]))
    assert words.values.tolist() == [0, 1, 0] and words.treated == "treated"
    chosen = causal_methods.binary_treatment(pd.Series(["a", "b", "c"]), treated_value="b")
    assert chosen.values.tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="never varies"):
        causal_methods.binary_treatment(pd.Series([1, 1, 1]))
    with pytest.raises(ValueError, match="3 values"):
        causal_methods.binary_treatment(pd.Series(["a", "b", "c"]))


def test_placebo_refuter_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline that leaks the real treatment into the placebo runs fails the placebo test."""
    frame = _frame(2000)
    x, t, y = frame[["x"]].to_numpy(float), frame["treated"].to_numpy(float), frame["y"].to_numpy(float)
    real = causal_methods.dr_point(x, t, y)
    monkeypatch.setattr(causal_refute, "dr_point", lambda x_, t_, y_, trim, estimand: real + 0.01 * float(t_[0]))
    verdicts = {
        r.name: r.passed
        for r in causal_refute.refute(
            causal_refute.RefuterInputs(x, t, y, estimate=real, std_error=0.05, trim=0.05, estimand="ate")
        )
    }
    assert verdicts["placebo_treatment"] is False
