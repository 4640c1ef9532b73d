"""resource_optimizer on the built-in spend data: the optimum against the one computed on the
planted response curves, never below the current allocation, equal marginal returns,
locks and bounds honoured, each infeasible constraint named, and bad input."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.packs.commercial.base import data
from concerto.packs.commercial.methods import response_curves
from concerto.packs.commercial.resource_optimizer.agent import ResourceOptimizerAgent
from concerto.packs.commercial.resource_optimizer.reading import money, read_request

QUESTION = "How should we allocate the promotion budget across channels?"


@cache
def cells() -> pd.DataFrame:
    """Per territory × channel: the planted a and b and the current spend (mean of the latest
    12 months, the agent's stated definition of the current allocation)."""
    made = data.generate()
    spend = made.spend.to_pandas()
    recent = sorted(spend["month"].unique())[-12:]
    current = spend[spend["month"].isin(recent)].groupby(["territory", "channel"])["spend"].mean()
    rows = [
        {"territory": t, "channel": c, "current": x, **made.truth.response[f"{t}/{c}"]} for (t, c), x in current.items()
    ]
    return pd.DataFrame(rows)


def true_value(allocation: dict[str, float], by: list[str]) -> float:
    """Expected new Rx per month on the planted curves when each unit's budget is spread over
    its cells in the shares of their current spend."""
    df = cells().copy()
    df["unit"] = df[by].astype(str).agg("/".join, axis=1)
    share = df["current"] / df.groupby("unit")["current"].transform("sum")
    x = share * df["unit"].map(allocation)
    return float((df["a"] * (1 - np.exp(-x / df["b"]))).sum())


def true_optimum(budget: float, by: list[str]) -> tuple[float, dict[str, float]]:
    """The best allocation on the planted curves (SLSQP with the analytic gradient)."""
    df = cells().copy()
    df["unit"] = df[by].astype(str).agg("/".join, axis=1)
    units = sorted(df["unit"].unique())
    idx = df["unit"].map({u: i for i, u in enumerate(units)}).to_numpy()
    share = (df["current"] / df.groupby("unit")["current"].transform("sum")).to_numpy()
    a, b = df["a"].to_numpy(), df["b"].to_numpy()
    x0 = np.bincount(idx, weights=df["current"].to_numpy())
    x0 = x0 * budget / x0.sum()

    def negative(z: np.ndarray) -> float:
        return -float((a * (1 - np.exp(-share * z[idx] / b))).sum())

    def gradient(z: np.ndarray) -> np.ndarray:
        return -np.bincount(idx, weights=share * a / b * np.exp(-share * z[idx] / b), minlength=len(units))

    with threadpool_limits(1):  # SLSQP's small LAPACK calls crawl with threads on a busy machine
        res = minimize(
            negative,
            x0,
            jac=gradient,
            method="SLSQP",
            bounds=[(0, budget)] * len(units),
            constraints=[{"type": "eq", "fun": lambda z: z.sum() - budget, "jac": lambda z: np.ones_like(z)}],
            options={"ftol": 1e-12, "maxiter": 2000},
        )
    return -float(res.fun), dict(zip(units, res.x, strict=True))


def allocation_of(out: dict[str, Any], key: str = "optimal_spend") -> dict[str, float]:
    return {r["unit"]: r[key] for r in out["allocation"]}


@pytest.mark.parametrize("by", [["channel"], ["territory"], ["territory", "channel"]])
async def test_optimum_matches_the_planted_curves(run_agent: Any, by: list[str]) -> None:
    result = await run_agent(ResourceOptimizerAgent, QUESTION, by=by)
    out = result.output
    assert out["by"] == by
    budget = out["budget"]
    assert budget == pytest.approx(cells()["current"].sum(), abs=0.01)
    best, _ = true_optimum(budget, by)
    found = allocation_of(out)
    assert sum(found.values()) == pytest.approx(budget, abs=0.01 * len(found))
    # the plan is (nearly) as good as the true optimum on the true curves, and so is its forecast
    assert true_value(found, by) >= 0.99 * best
    assert out["expected_outcome_optimal"] == pytest.approx(best, rel=0.02)
    # better than the current allocation, on the fitted and on the true curves, beyond the interval
    current = allocation_of(out, "current_spend")
    assert out["expected_outcome_optimal"] > out["expected_outcome_current"]
    assert true_value(found, by) > true_value(current, by)
    lo, hi = out["expected_lift_interval"]
    assert lo <= out["expected_lift"] <= hi
    assert lo <= true_value(found, by) - true_value(current, by) <= hi  # the planted lift is inside
    assert out["expected_lift_on_fitted_curves"] - out["optimism_correction"] == pytest.approx(out["expected_lift"])
    if by == ["channel"]:
        assert lo > 0  # reallocating across channels helps beyond doubt
    assert out["kkt"]["satisfied"] and not out["fallback_to_current"]


async def test_equal_marginal_returns_and_no_equal_split(run_agent: Any) -> None:
    result = await run_agent(ResourceOptimizerAgent, QUESTION)
    out = result.output
    rows = out["allocation"]
    free = [r for r in rows if r["status"] == "free"]
    assert len(free) == 4
    margins = [r["marginal_return_optimal_per_1k"] for r in free]
    assert max(margins) - min(margins) <= 1e-3 * max(margins)
    assert all(
        r["marginal_return_optimal_per_1k"] == pytest.approx(out["marginal_return_per_1k"], rel=1e-3) for r in free
    )
    current = [r["marginal_return_current_per_1k"] for r in rows]
    assert max(current) > 2 * min(current)  # the channels differ in return today ...
    spends = [r["optimal_spend"] for r in rows]
    assert max(spends) > 2 * min(spends)  # ... so no equal split
    ordered = sorted(rows, key=lambda r: -r["marginal_return_current_per_1k"])
    assert ordered[0]["change"] > 0 and ordered[-1]["change"] < 0  # money moves from low to high returns
    _, truth = true_optimum(out["budget"], ["channel"])
    for r in rows:
        assert r["optimal_spend"] == pytest.approx(truth[r["unit"]], rel=0.15)
    assert any("per extra $1,000" in f for f in result.key_findings)
    assert {t["chart"]["type"] for t in out["results"]} >= {"bar"}


async def test_lock_from_the_question_and_the_payload(run_agent: Any) -> None:
    result = await run_agent(
        ResourceOptimizerAgent, "Keep the speaker event budget at current level and optimise the other channels"
    )
    rows = {r["unit"]: r for r in result.output["allocation"]}
    assert rows["speaker_events"]["optimal_spend"] == pytest.approx(rows["speaker_events"]["current_spend"])
    assert rows["speaker_events"]["status"] == "locked"
    assert {"unit": "speaker_events", "constraint": "locked"}.items() <= next(
        b for b in result.output["binding_constraints"] if b.get("unit") == "speaker_events"
    ).items()
    free = [r["marginal_return_optimal_per_1k"] for r in rows.values() if r["status"] == "free"]
    assert max(free) - min(free) <= 1e-3 * max(free)
    fixed = await run_agent(ResourceOptimizerAgent, QUESTION, locked={"calls": 200000})
    assert allocation_of(fixed.output)["calls"] == pytest.approx(200000)
    assert sum(allocation_of(fixed.output).values()) == pytest.approx(fixed.output["budget"])


async def test_bounds_per_territory(run_agent: Any) -> None:
    result = await run_agent(
        ResourceOptimizerAgent,
        "Reallocate spend across territories with at least $20k per territory and no more than $30k per territory",
    )
    out = result.output
    assert out["by"] == ["territory"]
    spends = allocation_of(out)
    assert all(20000 - 1e-6 <= s <= 30000 + 1e-6 for s in spends.values())
    kinds = {b["constraint"] for b in out["binding_constraints"]}
    assert {"minimum", "maximum"} <= kinds
    lam = out["marginal_return_per_1k"]
    for r in out["allocation"]:  # KKT: a unit held at its minimum would return less, one at its maximum more
        if r["status"] == "at_minimum":
            assert r["marginal_return_optimal_per_1k"] <= lam * (1 + 1e-6)
        if r["status"] == "at_maximum":
            assert r["marginal_return_optimal_per_1k"] >= lam * (1 - 1e-6)
    assert out["kkt"]["satisfied"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where should we spend a $700k monthly budget by territory?", 700_000.0),
        ("We have an annual budget of $6M: how should it be split across channels?", 500_000.0),
        ("If we increase the budget by 10%, where should the extra money go?", 1.1),
        ("Cut the budget by 5% while losing as few prescriptions as possible", 0.95),
    ],
)
async def test_budget_from_the_question(run_agent: Any, question: str, expected: float) -> None:
    out = (await run_agent(ResourceOptimizerAgent, question)).output
    target = expected * out["current_total_spend"] if expected < 2 else expected
    assert out["budget"] == pytest.approx(target, rel=1e-6)
    assert sum(allocation_of(out).values()) == pytest.approx(target, abs=0.01 * len(out["allocation"]))
    assert out["expected_outcome_optimal"] >= out["expected_outcome_same_mix"]


async def test_never_below_the_current_allocation(run_agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A solver returning a poor plan (here: everything in emails) is caught and the current kept."""
    real = response_curves.allocate

    def broken(units: Any, budget: float, lower: Any, upper: Any, locked: Any) -> response_curves.Plan:
        plan = real(units, budget, lower, upper, locked)
        bad = np.zeros_like(plan.spend)
        bad[units.names.index("emails")] = budget
        return response_curves.Plan(bad, plan.marginal_return, plan.status, True, 0.0)

    monkeypatch.setattr(response_curves, "allocate", broken)
    result = await run_agent(ResourceOptimizerAgent, QUESTION)
    out = result.output
    assert out["fallback_to_current"] is True
    assert allocation_of(out) == allocation_of(out, "current_spend")
    assert out["expected_outcome_optimal"] == out["expected_outcome_current"]
    assert result.summary.startswith("Keeping the current allocation")
    assert any("kept the current" in n for n in out["notes"])


@pytest.mark.parametrize(
    ("payload", "constraint"),
    [
        ({"budget": -1000}, "budget"),
        ({"min": {"calls": 400000, "samples": 300000}}, "sum_of_minimums"),
        ({"min": {"calls": 100000}, "max": {"calls": 50000}}, "max_below_min"),
        ({"max": 100000}, "sum_of_maximums"),
        ({"locked": {"calls": 500000, "samples": 200000}}, "locked_exceed_budget"),
        ({"locked": {"calls": 50000}, "min": {"calls": 60000}}, "locked_outside_bounds"),
        ({"min": -5}, "negative_minimum"),
    ],
)
async def test_infeasible_constraints(run_agent: Any, payload: dict[str, Any], constraint: str) -> None:
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, QUESTION, **payload)
    assert err.value.error_type == "infeasible_constraints"
    assert err.value.details["constraint"] == constraint
    assert err.value.suggestion


async def test_infeasible_from_the_question(run_agent: Any) -> None:
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, "Allocate a $300k budget by territory with at least $20k per territory")
    assert err.value.details["constraint"] == "sum_of_minimums"
    assert "minimums (480,000)" in err.value.message and "300,000" in err.value.message


async def test_constraints_it_cannot_apply_are_unanswered(run_agent: Any) -> None:
    result = await run_agent(
        ResourceOptimizerAgent, "Allocate budget by territory and channel with no more than $20k on emails"
    )
    assert result.output["by"] == ["territory", "channel"]
    assert [u.error_type for u in result.unanswered] == ["unsupported_constraint"]
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, QUESTION, locked={"radio": 1000})
    assert err.value.error_type == "unknown_unit"


def test_curve_fit_falls_back_to_the_log_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(1000, 9000, 22)
    y = 40 * (1 - np.exp(-x / 5000)) + rng.normal(0, 1, 22)
    curve = response_curves.fit_curve(x, y)
    assert curve is not None and curve.kind == response_curves.EXPONENTIAL
    assert curve.a == pytest.approx(40, rel=0.35) and curve.se[0] > 0
    monkeypatch.setattr(response_curves, "_exp", lambda x, a, b: np.full_like(x, np.nan))
    fallback = response_curves.fit_curve(x, y)
    assert fallback is not None and fallback.kind == response_curves.LOG
    assert "exponential" in fallback.note
    assert response_curves.fit_curve(x, x**2) is None  # increasing returns: no concave curve fits
    assert response_curves.fit_curve(np.full(10, 5.0), rng.normal(size=10)) is None  # spend never varies


def test_money_and_request_phrases() -> None:
    assert money("$2M") == 2e6 and money("500k") == 5e5 and money("$250,000") == 250000
    assert money("1.5 million") == 1.5e6


def _spend_file(path: Path, *, constant: bool = False, rows: int | None = None, holes: bool = False) -> None:
    rng = np.random.default_rng(9)
    records = []
    for channel, (a, b) in {"tv": (100.0, 20000.0), "web": (40.0, 4000.0)}.items():
        for month in pd.date_range("2024-01-01", periods=18, freq="MS"):
            spend = 10000.0 if constant else float(rng.uniform(2000, 30000))
            records.append(
                {"channel": channel, "month": month.date(), "spend": spend, "sales": a * (1 - np.exp(-spend / b))}
            )
    frame = pd.DataFrame(records).head(rows) if rows else pd.DataFrame(records)
    if holes:
        frame.loc[[0, 5], "spend"] = np.nan
    frame.to_csv(path, index=False)


async def test_user_files(run_agent: Any, store: Any, tmp_path: Path) -> None:
    _spend_file(tmp_path / "mix.csv", holes=True)
    load_table(store, tmp_path / "mix.csv", "mix")
    result = await run_agent(ResourceOptimizerAgent, "allocate across channels", source="mix", outcome="sales")
    out = result.output
    assert out["by"] == ["channel"] and out["spend_column"] == "spend"
    assert any("missing value" in n for n in out["notes"])
    assert out["expected_outcome_optimal"] >= out["expected_outcome_current"]

    _spend_file(tmp_path / "flat.csv", constant=True)
    load_table(store, tmp_path / "flat.csv", "flat")
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, "allocate across channels", source="flat", outcome="sales")
    assert err.value.error_type == "no_variation"

    _spend_file(tmp_path / "few.csv", rows=5)
    load_table(store, tmp_path / "few.csv", "few")
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, "allocate across channels", source="few", outcome="sales")
    assert err.value.error_type == "too_few_rows"


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [
        ({"spend": "dollars"}, "unknown_column"),
        ({"outcome": "region"}, "invalid_column"),
        ({"by": "zone"}, "unknown_column"),
    ],
)
async def test_bad_columns(run_agent: Any, payload: dict[str, Any], error_type: str) -> None:
    with pytest.raises(AgentFailure) as err:
        await run_agent(ResourceOptimizerAgent, QUESTION, **payload)
    assert err.value.error_type == error_type


def test_read_request_phrases() -> None:
    class FakeWork:
        def __init__(self, text: str) -> None:
            from concerto.packs.commercial.base.data import PROFILES

            self.request = text
            self.inputs: dict[str, Any] = {}
            self.source = type(
                "S", (), {"columns": list(PROFILES[data.SPEND]["field_descriptions"]), "detected_types": {}}
            )()

        def given(self, key: str) -> Any:
            return None

    work: Any = FakeWork(
        "Across territories, at least $15k per territory, no more than $40k per territory, keep T05 at $30k"
    )
    request = read_request(work)
    assert request.by == ["territory"]
    assert request.minimum == {"*": 15000.0} and request.maximum == {"*": 40000.0}
    assert request.locked == {"T05": 30000.0}


async def test_brand_and_total_budget_phrases(run_agent: Any) -> None:
    result = await run_agent(ResourceOptimizerAgent, "Optimise the Kisqali marketing mix; keep total spend at $500k")
    out = result.output
    assert out["budget"] == pytest.approx(500_000) and out["by"] == ["channel"]
    assert [u.part for u in result.unanswered] == ["brand Kisqali"]  # the spend data are not by brand
    assert "for Kisqali" not in result.summary
