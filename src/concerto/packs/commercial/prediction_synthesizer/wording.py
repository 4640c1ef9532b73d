"""How `prediction_synthesizer` words its answer: the combined forecast per period with its
interval, each model's forecast and weight, the backtest error, the seasonality found, and
the tables (history and forecast, backtest error by model, forecast by model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from concerto.packs.commercial.base.agent import Answer, Table, Work

if TYPE_CHECKING:
    import pandas as pd

    from concerto.packs.commercial.methods.forecast import Synthesis

FREQ_WORD = {"M": "monthly", "Q": "quarterly", "Y": "yearly"}


@dataclass
class Forecasted:
    """What was forecast: the outcome along its time column, for a segment or all rows, how
    many months ahead, and the history it was fitted on (`series`, of frequency `freq`)."""

    outcome: str
    time_column: str
    segment: tuple[str, str] | None
    months: int
    series: pd.Series
    freq: str


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def answer(work: Work, asked: Forecasted, result: Synthesis) -> Answer:
    """The answer for the forecast `result` of `asked`."""
    outcome, freq = asked.outcome, asked.freq
    last = asked.series.index[-1]
    future = [str(last + i) for i in range(1, len(result.combined.point) + 1)]
    level = 1 - result.setup.alpha
    pct = f"{level:.0%}"
    combined = result.combined
    forecast = [
        {"period": p, "point": round(float(c), 1), "lower": round(float(lo), 1), "upper": round(float(hi), 1)}
        for p, c, lo, hi in zip(future, combined.point, combined.lower, combined.upper, strict=True)
    ]
    backtest = {
        b.model: {"mape": _round(b.mape), "rmse": round(b.rmse, 2), "points": b.points} for b in result.backtest
    }
    total = float(combined.point.sum())
    scope = f" for {asked.segment[0]} = {asked.segment[1]}" if asked.segment else ""
    what = f"{work.brand + ' ' if work.brand else ''}{outcome}{scope}"
    comb = {b.model: b for b in result.backtest}.get("combined")
    summary = (
        f"Forecast of {what} for {future[0]} to {future[-1]}: {total:,.0f} in total "
        f"({combined.point[0]:,.0f} in {future[0]}, {combined.point[-1]:,.0f} in {future[-1]}; "
        f"{pct} intervals per period), combining {len(result.forecasts)} models"
        + (f"; backtest MAPE {comb.mape:.1f} %." if comb and comb.mape is not None else ".")
    )
    interpretation = (
        f"{what.capitalize()} is expected to total about {total:,.0f} over the next {len(forecast)} "
        f"{FREQ_WORD[freq][:-2] if freq != 'M' else 'month'}(s); each period's {pct} interval is where the "
        "value should fall 19 times out of 20 if the past pattern holds."
    )
    return Answer(
        payload=_payload(asked, result, forecast, backtest, interpretation),
        summary=summary,
        key_findings=_findings(result, forecast, pct),
        recommendations=[
            "Plan against the interval, not only the point: the lower bound is a prudent target.",
            "Re-run the forecast when a new month of data arrives; the backtest shows how far to trust it.",
        ],
        follow_ups=[
            f"What drives {outcome}?",
            f"Forecast {outcome} for one specialty or region",
            "Has the data drifted recently?",
        ],
        requires_further_analysis=bool(comb and comb.mape is not None and comb.mape > 15),
        tables=_tables(asked, result, future, forecast, backtest, pct),
        entities={"outcome": outcome, "horizon_months": asked.months},
    )


def _payload(
    asked: Forecasted,
    result: Synthesis,
    forecast: list[dict[str, Any]],
    backtest: dict[str, dict[str, Any]],
    interpretation: str,
) -> dict[str, Any]:
    """The payload: the forecast, its total, each model, the weights, the backtest, the season."""
    combined = result.combined
    errors = {b.model: b for b in result.backtest}
    models = [
        {
            "model": f.model,
            "method": f.detail,
            "weight": round(result.weights[f.model], 4),
            "backtest_mape": _round(errors[f.model].mape) if f.model in errors else None,
            "backtest_rmse": round(errors[f.model].rmse, 2) if f.model in errors else None,
            "forecast": [round(float(v), 1) for v in f.point],
            "lower": [round(float(v), 1) for v in f.lower],
            "upper": [round(float(v), 1) for v in f.upper],
        }
        for f in result.forecasts
    ]
    season = result.setup
    segment = asked.segment
    return {
        "outcome": asked.outcome,
        "time_column": asked.time_column,
        "segment": {"column": segment[0], "value": segment[1]} if segment else None,
        "frequency": FREQ_WORD[asked.freq],
        "horizon_months": asked.months,
        "history_periods": len(asked.series),
        "interval_level": 1 - result.setup.alpha,
        "forecast": forecast,
        "total_forecast": {
            "point": round(float(combined.point.sum()), 1),
            "lower_conservative": round(float(combined.lower.sum()), 1),
            "upper_conservative": round(float(combined.upper.sum()), 1),
            "note": "sum of the per-period bounds: conservative (exact only if errors move together)",
        },
        "models": models,
        "weights": {k: round(v, 4) for k, v in result.weights.items()},
        "combination_method": (
            "weights inverse to each model's backtest mean squared error; the combined interval is the "
            "weighted mean of the models' lower and upper bounds (quantile averaging)"
        ),
        "backtest": backtest,
        "backtest_method": (
            "rolling origin: each model refitted on the history up to each of the last origins and "
            "scored on the following known periods (up to the horizon); errors pooled"
        ),
        "seasonality": {
            "season_length": season.season,
            "harmonics": season.harmonics,
            "p_value": season.season_p_value,
            "log_scale": season.log,
        },
        "best_backtest_model": (
            min(result.backtest[:-1], key=lambda b: b.rmse).model if len(result.backtest) > 1 else None
        ),
        "interpretation": interpretation,
    }


def _findings(result: Synthesis, forecast: list[dict[str, Any]], pct: str) -> list[str]:
    """Each period's forecast (the first twelve), the backtest, the season, the models left out."""
    findings = [
        f"{p['period']}: {p['point']:,.0f} ({pct} interval {p['lower']:,.0f} to {p['upper']:,.0f})"
        for p in forecast[:12]
    ]
    comb = {b.model: b for b in result.backtest}.get("combined")
    if comb is not None:
        findings.append(
            f"Rolling-origin backtest over {comb.points} forecast points: combined MAPE "
            + (f"{comb.mape:.1f} %" if comb.mape is not None else "n/a")
            + f", RMSE {comb.rmse:,.0f}"
            + "; by model: "
            + ", ".join(
                f"{b.model} {b.mape:.1f} %" if b.mape is not None else f"{b.model} RMSE {b.rmse:,.0f}"
                for b in result.backtest[:-1]
            )
        )
    else:
        findings.append("The history is too short for a backtest: the models are weighted equally.")
    season = result.setup
    findings.append(
        "Seasonality: "
        + (
            f"a {season.season}-period season ({season.harmonics} harmonic pair(s), F-test p = "
            f"{season.season_p_value:.2g})"
            if season.harmonics and season.season_p_value is not None
            else "none detected (or too little history to tell)"
        )
        + (" ; models fitted on the log scale." if season.log else "; models fitted on the original scale.")
    )
    for name, why in result.failed.items():
        findings.append(f"The {name} model could not be fitted ({why}) and was left out.")
    return findings


def _tables(
    asked: Forecasted,
    result: Synthesis,
    future: list[str],
    forecast: list[dict[str, Any]],
    backtest: dict[str, dict[str, Any]],
    pct: str,
) -> list[Table]:
    """The history with the forecast and its interval, the backtest error by model, each model's forecast."""
    history = [{"period": str(p), "actual": round(float(v), 1)} for p, v in asked.series.items()]
    chart_rows: list[dict[str, Any]] = [{**h, "forecast": None, "lower": None, "upper": None} for h in history]
    chart_rows += [
        {"period": p["period"], "actual": None, "forecast": p["point"], "lower": p["lower"], "upper": p["upper"]}
        for p in forecast
    ]
    by_model = [
        {"model": f.model, "weight": round(result.weights[f.model], 4)}
        | {p: round(float(v), 1) for p, v in zip(future, f.point, strict=True)}
        for f in result.forecasts
    ]
    return [
        Table(
            f"{asked.outcome} history and {pct} forecast",
            chart_rows,
            "line",
            "period",
            ["actual", "forecast", "lower", "upper"],
        ),
        Table(
            "Backtest error by model",
            [{"model": k, **v} for k, v in backtest.items()],
            "bar",
            "model",
            ["mape", "rmse"],
        ),
        Table("Forecast by model", by_model),
    ]
