"""prediction_synthesizer: combined forecasts against the planted future (truth.future_new_rx),
the backtest, the horizon read from the question, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _helpers.commercial import load_table
from concerto.agents.base import AgentFailure
from concerto.data.store import Store
from concerto.packs.commercial.base.data import truth
from concerto.packs.commercial.prediction_synthesizer.agent import PredictionSynthesizerAgent
from concerto.packs.commercial.prediction_synthesizer.reading import horizon_from_question


async def test_combined_interval_covers_the_planted_future(run_agent: Any) -> None:
    result = await run_agent(PredictionSynthesizerAgent, "Forecast new prescriptions for the next 6 months")
    out = result.output
    expected = truth().future_new_rx
    assert [p["period"] for p in out["forecast"]] == [m[:7] for m in expected]
    covered, errors = 0, []
    for p, want in zip(out["forecast"], expected.values(), strict=True):
        covered += p["lower"] <= want <= p["upper"]
        errors.append(abs(p["point"] - want) / want)
        print(f"{p['period']}: truth {want:,.0f} forecast {p['point']:,.0f} [{p['lower']:,.0f}, {p['upper']:,.0f}]")
    mape = 100 * sum(errors) / len(errors)
    print(f"covered {covered}/6, MAPE vs truth {mape:.2f} %, backtest {out['backtest']}")
    assert covered >= 5
    assert mape < 10
    assert out["interval_level"] == 0.95
    assert out["outcome"] == "new_rx" and out["frequency"] == "monthly"
    # More than one model, combined by backtest error; the backtest is reported for each and the blend.
    assert {m["model"] for m in out["models"]} == {"ets", "arima", "trend_regression"}
    assert sum(out["weights"].values()) == pytest.approx(1, abs=1e-3)
    assert set(out["backtest"]) == {"ets", "arima", "trend_regression", "combined"}
    for errors_of in out["backtest"].values():
        assert errors_of["points"] > 0 and errors_of["rmse"] > 0 and 0 < errors_of["mape"] < 20
    # The combined interval is the weighted mean of the models' bounds.
    first = out["forecast"][0]
    lower = sum(out["weights"][m["model"]] * m["lower"][0] for m in out["models"])
    assert first["lower"] == pytest.approx(lower, rel=1e-3)
    assert out["seasonality"]["harmonics"] >= 1  # the planted yearly season is found
    assert any("backtest" in f.lower() for f in result.key_findings)
    assert [t["chart"]["type"] for t in out["results"]][:2] == ["line", "bar"]


def test_horizon_read_from_the_question() -> None:
    assert horizon_from_question("What will new Rx be next quarter?") == 3
    assert horizon_from_question("Forecast the next 6 months") == 6
    assert horizon_from_question("forecast for the next two quarters") == 6
    assert horizon_from_question("Predict total Rx for the next year") == 12
    assert horizon_from_question("Predict total Rx for the rest of the year") == "rest"
    assert horizon_from_question("Give me a 3-month forecast of new Rx") == 3
    assert horizon_from_question("Where will prescriptions be in six months?") == 6
    assert horizon_from_question("Forecast new Rx after the last 4 months of decline") is None
    assert horizon_from_question("Forecast new Rx") is None


async def test_question_horizon_brand_and_segment(run_agent: Any) -> None:
    rest = await run_agent(PredictionSynthesizerAgent, "Predict Kisqali new Rx for the rest of the year")
    assert [p["period"] for p in rest.output["forecast"]] == ["2026-11", "2026-12"]  # data end 2026-10
    assert rest.output["brand"] == "Kisqali"
    quarter = await run_agent(
        PredictionSynthesizerAgent, "What will total Rx be next quarter?", segment="specialty=Oncology"
    )
    assert quarter.output["outcome"] == "total_rx"
    assert quarter.output["horizon_months"] == 3 and len(quarter.output["forecast"]) == 3
    assert quarter.output["segment"] == {"column": "specialty", "value": "Oncology"}
    northeast = await run_agent(PredictionSynthesizerAgent, "Forecast monthly new Rx in the Northeast region")
    assert northeast.output["segment"] == {"column": "region", "value": "Northeast"}
    everyone = await run_agent(PredictionSynthesizerAgent, "Forecast total Rx", horizon=3)
    assert quarter.output["forecast"][0]["point"] < 0.5 * everyone.output["forecast"][0]["point"]


@pytest.mark.parametrize("horizon", [0, -3, 10_000, "soon", 30, 2.5, "inf", "nan"])
async def test_bad_horizon(run_agent: Any, horizon: Any) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(PredictionSynthesizerAgent, "Forecast new Rx", horizon=horizon)
    assert failure.value.error_type == "invalid_horizon"
    assert failure.value.suggestion
    if horizon == 10_000:
        assert "36" in failure.value.message
    if horizon == 30:  # longer than the 22 months of history
        assert "22" in failure.value.message


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [
        ({"outcome": "specialty"}, "invalid_column"),
        ({"outcome": "revenue_usd"}, "unknown_column"),
        ({"segment": "specialty=Cardiology"}, "unknown_segment"),
        ({"time_column": "calls"}, "no_time_column"),
    ],
)
async def test_bad_columns(run_agent: Any, payload: dict[str, Any], error_type: str) -> None:
    with pytest.raises(AgentFailure) as failure:
        await run_agent(PredictionSynthesizerAgent, "Forecast the next 6 months", **payload)
    assert failure.value.error_type == error_type
    assert failure.value.suggestion


async def test_missing_values_are_left_out_and_said(run_agent: Any) -> None:
    result = await run_agent(PredictionSynthesizerAgent, "Forecast speaker events", outcome="speaker_events")
    assert any("missing value" in n for n in result.output["notes"])
    assert len(result.output["forecast"]) == 6


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


async def test_short_constant_and_undated_sources(run_agent: Any, store: Store, tmp_path: Path) -> None:
    short = [f"2026-0{m}-01,{100 + m}" for m in range(1, 6)]
    load_table(store, _write(tmp_path / "ps_short.csv", "month,sales", short), "ps_short")
    with pytest.raises(AgentFailure) as failure:
        await run_agent(PredictionSynthesizerAgent, "Forecast sales", source="ps_short", outcome="sales")
    assert failure.value.error_type == "insufficient_data"
    assert "6" in failure.value.message

    flat = [f"2025-{m:02d}-01,50" for m in range(1, 13)]
    load_table(store, _write(tmp_path / "ps_flat.csv", "month,sales", flat), "ps_flat")
    with pytest.raises(AgentFailure) as failure:
        await run_agent(PredictionSynthesizerAgent, "Forecast sales", source="ps_flat")
    assert failure.value.error_type == "constant_outcome"

    undated = [f"S{i},{i * 3}" for i in range(20)]
    load_table(store, _write(tmp_path / "ps_undated.csv", "store,sales", undated), "ps_undated")
    with pytest.raises(AgentFailure) as failure:
        await run_agent(PredictionSynthesizerAgent, "Forecast sales", source="ps_undated")
    assert failure.value.error_type == "no_time_column"


async def test_user_source_with_a_trend(run_agent: Any, store: Store, tmp_path: Path) -> None:
    """A plain monthly series (two and a half years, trend plus noise) loaded by a user."""
    import numpy as np

    rng = np.random.default_rng(7)
    values = 200 + 5 * np.arange(30) + rng.normal(0, 4, 30)
    rows = [f"{2023 + k // 12}-{k % 12 + 1:02d}-15,{v:.1f}" for k, v in enumerate(values)]
    load_table(store, _write(tmp_path / "ps_trend.csv", "date,revenue", rows), "ps_trend")
    result = await run_agent(PredictionSynthesizerAgent, "Forecast revenue for the next 3 months", source="ps_trend")
    out = result.output
    assert out["outcome"] == "revenue" and len(out["forecast"]) == 3
    for k, p in enumerate(out["forecast"]):
        want = 200 + 5 * (30 + k)
        assert p["lower"] <= want <= p["upper"]
    assert out["backtest"]["combined"]["mape"] < 5
