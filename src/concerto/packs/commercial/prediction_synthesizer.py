"""prediction_synthesizer: forecasts an outcome's total per period with prediction intervals
from three models (exponential smoothing, ARIMA with drift, a linear trend regression; see
`forecast_models`), combined with weights inverse to their rolling-origin backtest error, and
reports that backtest error (MAPE and RMSE per model and for the combination).

The outcome is summed per month of the time column (per quarter or year when the data come
that coarsely); the horizon is given in months (payload `horizon`, or the question: "next
quarter" = 3, "next 6 months", "rest of the year"; default 6). A horizon is at most 36 months
and never longer than the history it is fitted on.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from concerto.agents.base import AgentInfo
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid
from concerto.packs.commercial.forecast_models import MIN_HISTORY, period_series, synthesise

if TYPE_CHECKING:
    import pandas as pd

    from concerto.packs.commercial.forecast_models import Synthesis

DEFAULT_HORIZON = 6  # months
MAX_HORIZON = 36  # months; also never more periods than the history holds
DEFAULT_OUTCOME = "new_rx"
MONTHS_PER = {"M": 1, "Q": 3, "Y": 12}
FREQ_WORD = {"M": "monthly", "Q": "quarterly", "Y": "yearly"}
_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "eighteen": 18, "twenty-four": 24, "a": 1, "an": 1,
}  # fmt: skip
_UNIT_MONTHS = {"month": 1, "quarter": 3, "year": 12, "week": 12 / 52}
_NEXT = re.compile(
    r"\b(?:next|coming|upcoming|following)\s+(?:(?P<n>\d+|[a-z-]+)\s+)?(?P<unit>month|quarter|year|week)s?\b",
    re.IGNORECASE,
)
_COUNTED = re.compile(
    r"(?<!last )(?<!past )(?<!previous )\b(?P<n>\d+|[a-z]+)[- ](?P<unit>month|quarter|year|week)s?\b", re.IGNORECASE
)
_HALF = re.compile(r"\b(?:next|coming)\s+half[- ]year\b|\bnext\s+six\s+months\b", re.IGNORECASE)
_REST = re.compile(r"\b(?:rest|remainder|end)\s+of\s+(?:the\s+|this\s+)?year\b|\byear[- ]end\b", re.IGNORECASE)
_OUTCOME = re.compile(
    r"\b(?:forecast|predict|project|projection of|outlook for|expect)\w*\s+(?:the\s+|our\s+)?(?P<y>.+?)"
    r"(?:\s+(?:for|over|in|during|through|next|until|by|will)\b|[?.!,]|$)",
    re.IGNORECASE,
)


def horizon_from_question(text: str) -> int | str | None:
    """Months asked for ("next quarter" → 3), "rest" for the rest of the year, or None."""
    if _REST.search(text):
        return "rest"
    if _HALF.search(text):
        return 6
    for m in (*_COUNTED.finditer(text), *_NEXT.finditer(text)):
        count = m.group("n")
        n = 1 if count is None else int(count) if count.isdigit() else _NUMBERS.get(count.lower())
        if n is not None:
            return max(1, math.ceil(n * _UNIT_MONTHS[m.group("unit").lower()]))
    return None


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
        months = self._horizon(work)
        time_column = self._time_column(work)
        outcome = self._outcome(work, time_column)
        level = self._level(work)
        segment = self._segment(work)
        aggregate = str(work.given("aggregate") or "sum").lower()
        if aggregate not in ("sum", "mean"):
            raise invalid(f"unknown aggregate '{aggregate}'", "Use aggregate 'sum' (totals) or 'mean'.")

        wanted = [time_column, outcome] + ([segment[0]] if segment else [])
        frame = work.frame(wanted)
        if segment:
            frame = frame[frame[segment[0]].astype(str).str.lower() == segment[1].lower()]
        series, freq = self._series(work, frame, time_column, outcome, aggregate)
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
        try:
            result = synthesise(y, freq, periods, level)
        except ValueError as exc:
            raise invalid(
                f"the forecasting models could not be fitted to {outcome}: {exc}",
                "Check the series for gaps or extreme values, or choose another outcome.",
                error_type="model_failed",
            ) from None
        return self._answer(work, outcome, time_column, series, freq, int(months), result, segment)

    # --- reading the question -------------------------------------------------------------

    def _horizon(self, work: Work) -> int | str:
        given = work.given("horizon")
        if given is None:
            asked = horizon_from_question(work.request)
            return DEFAULT_HORIZON if asked is None else asked
        try:
            months = float(given)
        except (TypeError, ValueError):
            raise invalid(
                f"the horizon '{given}' is not a number of months",
                f"Give the horizon as a whole number of months, 1 to {MAX_HORIZON}.",
                error_type="invalid_horizon",
            ) from None
        if not months >= 1 or (math.isfinite(months) and months != int(months)):
            raise invalid(
                f"the horizon must be a whole number of months of at least 1, not {given}",
                f"Ask for 1 to {MAX_HORIZON} months ahead, e.g. horizon 6.",
                error_type="invalid_horizon",
                horizon=given,
            )
        if months > MAX_HORIZON:
            raise invalid(
                f"a horizon of {months:,.0f} months is too far: forecasts here go at most {MAX_HORIZON} months "
                "ahead (and no further than the history they are fitted on)",
                f"Ask for {MAX_HORIZON} months or fewer.",
                error_type="invalid_horizon",
                horizon=str(given),
                max_horizon=MAX_HORIZON,
            )
        return int(months)

    def _time_column(self, work: Work) -> str:
        source = work.source
        if work.given("time_column") is not None:
            column = cols.resolve(source, str(work.given("time_column")), "time column")
        else:
            times = source.columns_with("time")
            column = source.semantic_profile.time_column or (times[0] if times else None)  # type: ignore[assignment]
        if column is not None and source.detected_types[column].role != "time":
            kind = source.detected_types[column].type.upper()
            if not any(t in kind for t in ("DATE", "TIME", "CHAR", "TEXT", "STRING")):
                raise invalid(
                    f"the time column {column} holds {kind.lower()} values, not dates",
                    "Name a date column with time_column.",
                    error_type="no_time_column",
                )
        if column is None:
            raise invalid(
                f"the source {source.name} has no date column to forecast along",
                "Name a date column with time_column, or load a source with one (e.g. a month column).",
                error_type="no_time_column",
            )
        return column

    def _outcome(self, work: Work, time_column: str) -> str:
        source = work.source
        numeric = [
            c for c in cols.numeric_columns(source) if c != time_column and source.detected_types[c].role != "id"
        ]
        if work.given("outcome") is not None:
            column = cols.resolve(source, str(work.given("outcome")), "outcome")
            return cols.numeric(source, column, "outcome")
        m = _OUTCOME.search(work.request)
        found = cols.match_phrase(source, m.group("y"), numeric) if m else None
        found = found or cols.match_phrase(source, work.request, numeric)
        if found is None and DEFAULT_OUTCOME in numeric:
            found = DEFAULT_OUTCOME
        if found is None and len(numeric) == 1:
            found = numeric[0]
        if found is None:
            raise invalid(
                f"which column of {source.name} to forecast is not clear from the question",
                f"Name it with outcome: one of {', '.join(numeric) or 'none (the source has no numeric column)'}.",
                error_type="missing_outcome",
            )
        return found

    def _level(self, work: Work) -> float:
        given = work.given("interval_level")
        try:
            level = float(given) if given is not None else 0.95
        except (TypeError, ValueError):
            level = -1.0
        if level > 1:
            level /= 100  # "95" means 95 %
        if not 0.5 <= level < 1:
            raise invalid(
                f"the interval level {given} is not between 50 % and 99.9 %",
                "Give interval_level as e.g. 0.8, 0.9 or 0.95.",
                error_type="invalid_level",
            )
        return level

    def _segment(self, work: Work) -> tuple[str, str] | None:
        """(column, value) from `segment` ("specialty=Oncology", {"specialty": "Oncology"} or a
        value of a category column, "Oncology"), else a category value the question names
        ("oncology new Rx", "in the Northeast region"; the brand is the base's filter)."""
        given = work.given("segment")
        source = work.source
        if given is None:
            named = [
                (len(str(v)), c, str(v))
                for c in cols.category_columns(source)
                if c != "brand"
                for v in source.detected_types[c].categories
                if len(str(v)) >= 3
                and not str(v).isdigit()
                and re.search(rf"(?<![\w-]){re.escape(str(v))}(?![\w-])", work.request, re.IGNORECASE)
            ]
            if not named:
                return None
            _, column, value = max(named)
            work.notes.append(f"forecast for {column} = {value}, as the question names it")
            return column, value
        if isinstance(given, dict) and len(given) == 1:
            column, value = next(iter(given.items()))
        elif isinstance(given, str) and "=" in given:
            column, value = (p.strip() for p in given.split("=", 1))
        else:
            value = str(given).strip()
            owners = [
                c for c in source.columns
                if any(str(v).lower() == value.lower() for v in source.detected_types[c].categories)
            ]  # fmt: skip
            if not owners:
                raise invalid(
                    f"no category column of {source.name} has the value '{value}'",
                    "Give the segment as column=value, e.g. specialty=Oncology.",
                    error_type="unknown_segment",
                )
            column = owners[0]
        column = cols.resolve(source, str(column), "segment")
        known = source.detected_types[column].categories
        if known and not any(str(v).lower() == str(value).lower() for v in known):
            raise invalid(
                f"'{value}' is not a value of {column}",
                f"Values of {column}: {', '.join(map(str, known[:20]))}",
                error_type="unknown_segment",
            )
        return column, str(value)

    # --- the series -------------------------------------------------------------------------

    def _series(
        self, work: Work, frame: pd.DataFrame, time_column: str, outcome: str, aggregate: str
    ) -> tuple[pd.Series, str]:
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

    # --- the answer -------------------------------------------------------------------------

    def _answer(
        self,
        work: Work,
        outcome: str,
        time_column: str,
        series: pd.Series,
        freq: str,
        months: int,
        result: Synthesis,
        segment: tuple[str, str] | None,
    ) -> Answer:
        last = series.index[-1]
        future = [str(last + i) for i in range(1, len(result.combined.point) + 1)]
        level = 1 - result.setup.alpha
        pct = f"{level:.0%}"
        combined = result.combined
        forecast = [
            {"period": p, "point": round(float(c), 1), "lower": round(float(lo), 1), "upper": round(float(hi), 1)}
            for p, c, lo, hi in zip(future, combined.point, combined.lower, combined.upper, strict=True)
        ]
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
        backtest = {
            b.model: {"mape": _round(b.mape), "rmse": round(b.rmse, 2), "points": b.points} for b in result.backtest
        }
        total = float(combined.point.sum())
        scope = f" for {segment[0]} = {segment[1]}" if segment else ""
        brand = f"{work.brand} " if work.brand else ""
        what = f"{brand}{outcome}{scope}"
        best = min(result.backtest[:-1], key=lambda b: b.rmse).model if len(result.backtest) > 1 else None
        comb = errors.get("combined")
        summary = (
            f"Forecast of {what} for {future[0]} to {future[-1]}: {total:,.0f} in total "
            f"({combined.point[0]:,.0f} in {future[0]}, {combined.point[-1]:,.0f} in {future[-1]}; "
            f"{pct} intervals per period), combining {len(result.forecasts)} models"
            + (f"; backtest MAPE {comb.mape:.1f} %." if comb and comb.mape is not None else ".")
        )
        findings = [
            f"{p['period']}: {p['point']:,.0f} ({pct} interval {p['lower']:,.0f} to {p['upper']:,.0f})"
            for p in forecast[:12]
        ]
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
        history = [{"period": str(p), "actual": round(float(v), 1)} for p, v in series.items()]
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
        interpretation = (
            f"{what.capitalize()} is expected to total about {total:,.0f} over the next {len(forecast)} "
            f"{FREQ_WORD[freq][:-2] if freq != 'M' else 'month'}(s); each period's {pct} interval is where the "
            "value should fall 19 times out of 20 if the past pattern holds."
        )
        return Answer(
            payload={
                "outcome": outcome,
                "time_column": time_column,
                "segment": {"column": segment[0], "value": segment[1]} if segment else None,
                "frequency": FREQ_WORD[freq],
                "horizon_months": months,
                "history_periods": len(series),
                "interval_level": level,
                "forecast": forecast,
                "total_forecast": {
                    "point": round(total, 1),
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
                "best_backtest_model": best,
                "interpretation": interpretation,
            },
            summary=summary,
            key_findings=findings,
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
            tables=[
                Table(
                    f"{outcome} history and {pct} forecast",
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
            ],
            entities={"outcome": outcome, "horizon_months": months},
        )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
