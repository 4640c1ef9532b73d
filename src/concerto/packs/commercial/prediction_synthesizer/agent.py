"""prediction_synthesizer: forecasts an outcome's total per period with prediction intervals
from three models (exponential smoothing, ARIMA with drift, a linear trend regression; see
`methods.forecast`), combined with weights inverse to their rolling-origin backtest error, and
reports that backtest error (MAPE and RMSE per model and for the combination).

The outcome is summed per month of the time column (per quarter or year when the data come
that coarsely); the horizon is given in months (`reading`). A horizon is at most 36 months
and never longer than the history it is fitted on. `wording` says the forecast.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from concerto.agents.base import AgentInfo
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods.forecast import MIN_HISTORY, period_series, synthesise
from concerto.packs.commercial.prediction_synthesizer.reading import (
    MAX_HORIZON,
    horizon_of,
    level_of,
    outcome_of,
    segment_of,
    time_column_of,
)
from concerto.packs.commercial.prediction_synthesizer.wording import FREQ_WORD, Forecasted, answer

if TYPE_CHECKING:
    import pandas as pd

MONTHS_PER = {"M": 1, "Q": 3, "Y": 12}


class PredictionSynthesizerAgent(CommercialAgent):
    """Forecasts with intervals from several models, combined, with their backtest error."""

    info = AgentInfo(
        name="prediction_synthesizer",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Forecasts a future outcome such as prescriptions per month, with prediction intervals from "
            "several time-series models (exponential smoothing, ARIMA, trend regression) combined by their "
            "backtest accuracy, and reports the backtest error."
        ),
        capabilities=[
            "Forecast monthly totals of an outcome (new Rx, total Rx, sales) for the coming months",
            "Prediction intervals (95 % by default) for every forecast month",
            "Combine ETS, ARIMA and linear trend forecasts weighted by rolling-origin backtest error",
            "Report backtest MAPE and RMSE of each model and of the combination",
            "Forecast one segment (a brand, a specialty, a region) or the whole market",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "outcome": "The column to forecast (default: new_rx on the built-in data)",
            "time_column": "The date column (default: the source's time column)",
            "horizon": "Months ahead, 1-36 (default 6; from the question: next quarter = 3)",
            "segment": "Optional filter, e.g. 'specialty=Oncology'",
            "interval_level": "Prediction interval level (default 0.95)",
        },
        outputs={
            "forecast": "Per period: the combined point forecast and its interval",
            "models": "Each model's forecast, interval and weight",
            "backtest": "Rolling-origin MAPE and RMSE per model and for the combination",
        },
        examples=[
            "Forecast Kisqali new prescriptions for the next 6 months",
            "What will new Rx look like next quarter?",
            "Predict Fabhalta total Rx for the rest of the year",
            "How many prescriptions should we expect over the next 12 months?",
            "Give me a 3-month forecast of Remibrutinib new Rx with confidence intervals",
            "Project oncology new Rx through next year",
            "What is the outlook for total prescriptions in the coming quarter?",
            "Forecast monthly new Rx in the Northeast region",
            "How accurate are our prescription forecasts? Show the backtest error",
            "Where will Kisqali prescriptions be in six months?",
        ],
        default_timeout_ms=15000,
    )

    def analyse(self, work: Work) -> Answer:
        months = horizon_of(work)
        time_column = time_column_of(work)
        outcome = outcome_of(work, time_column)
        level = level_of(work)
        segment = segment_of(work)
        aggregate = str(work.given("aggregate") or "sum").lower()
        if aggregate not in ("sum", "mean"):
            raise invalid(f"unknown aggregate '{aggregate}'", "Use aggregate 'sum' (totals) or 'mean'.")

        wanted = [time_column, outcome] + ([segment[0]] if segment else [])
        frame = work.frame(wanted)
        if segment:
            frame = frame[frame[segment[0]].astype(str).str.lower() == segment[1].lower()]
        series, freq = _series(work, frame, time_column, outcome, aggregate)
        n = len(series)
        if n < MIN_HISTORY:
            raise invalid(
                f"only {n} {FREQ_WORD[freq][:-2]}(s) of {outcome} to learn from; a forecast needs at least "
                f"{MIN_HISTORY} periods",
                "Choose a source (or a segment) with a longer history, or a finer time column.",
                error_type="insufficient_data",
                periods=n,
            )
        y = series.to_numpy(dtype=float)
        if float(y.max() - y.min()) == 0:
            raise invalid(
                f"{outcome} is {y[0]:g} in every period: there is no variation to model",
                "Choose an outcome that changes over time.",
                error_type="constant_outcome",
            )
        months, periods = _periods(work, months, series, freq)
        try:
            result = synthesise(y, freq, periods, level)
        except ValueError as exc:  # a FitError, or statsmodels refusing the series
            raise invalid(
                f"the forecasting models could not be fitted to {outcome}: {exc}",
                "Check the series for gaps or extreme values, or choose another outcome.",
                error_type="model_failed",
            ) from None
        return answer(work, Forecasted(outcome, time_column, segment, months, series, freq), result)


def _series(work: Work, frame: pd.DataFrame, time_column: str, outcome: str, aggregate: str) -> tuple[pd.Series, str]:
    """The outcome summed (or averaged) per period, the frequency (M, Q or Y), gaps filled."""
    import pandas as pd

    if frame.empty:
        raise invalid(
            "no rows to forecast from (after the brand and segment filters)",
            "Widen the filters or choose another source.",
            error_type="insufficient_data",
        )
    try:
        when = pd.to_datetime(frame[time_column])
    except (ValueError, TypeError):
        raise invalid(
            f"the time column {time_column} does not hold dates",
            "Name a date column with time_column.",
            error_type="no_time_column",
        ) from None
    if getattr(when.dt, "tz", None) is not None:
        when = when.dt.tz_localize(None)
    now = work.context.now.replace(tzinfo=None) if work.context.now.tzinfo else work.context.now
    values = pd.to_numeric(frame[outcome], errors="coerce")
    series, freq, notes = period_series(when, values, aggregate, pd.Timestamp(now))
    work.notes.extend(notes)
    return series, freq


def _periods(work: Work, months: int | str, series: pd.Series, freq: str) -> tuple[int, int]:
    """The horizon in months ("rest" of the year read from the last period) and in periods of
    the series, refused when longer than the history or `MAX_HORIZON`."""
    n = len(series)
    last = series.index[-1]
    if months == "rest":
        months = 12 - last.month if last.month < 12 else 12
        work.notes.append(f"'rest of the year' read as the {months} month(s) after {last}")
    step = MONTHS_PER[freq]
    periods = max(1, math.ceil(int(months) / step))
    limit = min(MAX_HORIZON // step, n)
    if periods > limit:
        raise invalid(
            f"a horizon of {months} months is too far: at most {limit * step} months here (a forecast goes "
            f"no further than the {n} {FREQ_WORD[freq]} periods of history it is fitted on, and never "
            f"beyond {MAX_HORIZON} months)",
            f"Ask for {limit * step} months or fewer.",
            error_type="invalid_horizon",
            horizon=months,
            max_horizon=limit * step,
        )
    return int(months), periods
