"""The forecasts behind `prediction_synthesizer`: three forecasting models with prediction
intervals, a rolling-origin backtest of each, and their combination.

Models (statsmodels), each fitted on the log of the series when every value is positive (so
trend and season act multiplicatively, as sales do; intervals are back-transformed quantiles,
and the point forecast is the median):

- `ets` — exponential smoothing (ETSModel: additive error, damped additive trend). With at
  least two full seasons it has its own seasonal component (Holt-Winters); with less, when
  the series has a significant season, it smooths the series with the harmonic season
  (estimated by the regression below) taken out, and adds it back (as STL + ETS does).
- `arima` — ARIMA(p,1,q) with drift, the order chosen by AIC among (0,1,0), (1,1,0) and
  (0,1,1), with the harmonic season as regressors when the series has one.
- `trend_regression` — ordinary least squares on a linear trend (plus the harmonic season),
  with the textbook prediction interval of a new observation.

Seasonality: a monthly series has a season of 12 periods, a quarterly one of 4. It is modelled
with sine/cosine pairs (one pair; two for monthly data with two full seasons) when the series
is longer than one season and an F-test of the pairs in the trend regression gives p < 0.05.

Backtest: rolling origin — the models are refitted on the first `o` periods for each of the
last `ORIGINS` origins and forecast the periods after `o` (up to the horizon) that are known;
MAPE and RMSE are pooled over every forecast point. Combination: weights inverse to each
model's backtest mean squared error (Bates & Granger); the combined point is the weighted mean
of the points, and the combined interval the weighted mean of the models' interval bounds
(quantile averaging, Lichtendahl, Grushka-Cockayne & Winkler 2013), which keeps the intended
level better than a mixture when the models agree and is narrower than the widest model.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from concerto.packs.commercial.methods.errors import FitError

if TYPE_CHECKING:
    import pandas as pd

MIN_HISTORY = 6  # periods: fewer cannot show a trend, let alone test a forecast
ORIGINS = 5  # rolling-origin backtest: the last five origins
MODELS = ("ets", "arima", "trend_regression")
SEASON = {"M": 12, "Q": 4, "Y": 0}


@dataclass
class Setup:
    """How every model treats the series: the season length, the harmonic pairs, the log."""

    season: int
    harmonics: int
    log: bool
    alpha: float  # 1 − interval level
    season_p_value: float | None = None


@dataclass
class Forecast:
    """One model's (or the combination's) forecast on the original scale."""

    model: str
    point: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    detail: str = ""


@dataclass
class BacktestError:
    model: str
    mape: float | None  # percent; None when the actuals hold zeros
    rmse: float
    points: int


@dataclass
class Synthesis:
    """Everything the agent reports: each model's forecast, the combination, the backtest."""

    setup: Setup
    forecasts: list[Forecast]
    combined: Forecast
    weights: dict[str, float]
    backtest: list[BacktestError]
    failed: dict[str, str] = field(default_factory=dict)  # model → why it could not be fitted


def period_series(
    when: pd.Series, values: pd.Series, aggregate: str, now: pd.Timestamp
) -> tuple[pd.Series, str, list[str]]:
    """`values` summed (or averaged) per period of `when` (naive timestamps), the frequency (M,
    Q or Y, from the spacing of the distinct dates), and notes on what was changed: periods
    without rows are interpolated, the period containing `now` and later ones (incomplete)
    are left out."""
    import pandas as pd

    notes: list[str] = []
    distinct = pd.Series(when.dropna().unique()).sort_values()
    spacing = float(distinct.diff().dt.days.median()) if len(distinct) > 1 else 30.0
    freq = "Y" if spacing >= 300 else "Q" if spacing >= 80 else "M"
    grouped = values.groupby(when.dt.to_period(freq))
    series = grouped.sum() if aggregate == "sum" else grouped.mean()
    full = pd.period_range(series.index.min(), series.index.max(), freq=freq)
    gaps = len(full) - len(series)
    if gaps:
        series = series.reindex(full).interpolate()
        notes.append(f"{gaps} period(s) without rows were filled by linear interpolation")
    current = now.to_period(freq)
    if len(series) and series.index[-1] >= current:
        dropped = int((series.index >= current).sum())
        series = series[series.index < current]
        notes.append(f"{dropped} period(s) from {current} on are not complete yet and were left out")
    return series.astype(float), freq, notes


def _fourier(t: np.ndarray, season: int, harmonics: int) -> np.ndarray:
    return np.column_stack([f(2 * np.pi * k * t / season) for k in range(1, harmonics + 1) for f in (np.sin, np.cos)])


def _design(t: np.ndarray, setup: Setup) -> np.ndarray:
    columns = [np.ones(len(t)), t.astype(float)]
    if setup.harmonics:
        columns.append(_fourier(t, setup.season, setup.harmonics))
    return np.column_stack(columns)


def choose_setup(y: np.ndarray, freq: str, level: float) -> Setup:
    """The log and season decisions for series `y` of frequency `freq` (M, Q or Y)."""
    import statsmodels.api as sm

    season = SEASON.get(freq, 0)
    setup = Setup(season=season, harmonics=0, log=bool(np.all(y > 0)), alpha=1 - level)
    if season < 4 or len(y) <= season:
        return setup
    z = np.log(y) if setup.log else y
    t = np.arange(len(y))
    most = 2 if season == 12 and len(y) >= 2 * season else 1
    base = sm.OLS(z, _design(t, setup)).fit()
    for k in range(1, most + 1):
        trial = Setup(season, k, setup.log, setup.alpha)
        fitted = sm.OLS(z, _design(t, trial)).fit()
        _, p_value, _ = fitted.compare_f_test(base)
        if not p_value < 0.05:
            break
        setup.harmonics, setup.season_p_value, base = k, float(p_value), fitted
    return setup


def _trend_regression(z: np.ndarray, h: int, setup: Setup) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import statsmodels.api as sm

    t = np.arange(len(z))
    future = np.arange(len(z), len(z) + h)
    frame = sm.OLS(z, _design(t, setup)).fit().get_prediction(_design(future, setup)).summary_frame(alpha=setup.alpha)
    return frame["mean"].to_numpy(), frame["obs_ci_lower"].to_numpy(), frame["obs_ci_upper"].to_numpy()


def _arima_order(z: np.ndarray, setup: Setup) -> tuple[int, int, int]:
    """The (p,1,q) of lowest AIC among three small orders, on the full series."""
    best: tuple[float, tuple[int, int, int]] = (math.inf, (0, 1, 0))
    for order in ((0, 1, 0), (1, 1, 0), (0, 1, 1)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                aic = float(_arima_fit(z, order, setup).aic)
        except (ValueError, np.linalg.LinAlgError):
            continue
        if aic < best[0]:
            best = (aic, order)
    return best[1]


def _arima_fit(z: np.ndarray, order: tuple[int, int, int], setup: Setup):  # type: ignore[no-untyped-def]
    from statsmodels.tsa.arima.model import ARIMA

    t = np.arange(len(z))
    exog = _fourier(t, setup.season, setup.harmonics) if setup.harmonics else None
    return ARIMA(z, exog=exog, order=order, trend="t").fit()


def _arima(
    z: np.ndarray, h: int, setup: Setup, order: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    fitted = _arima_fit(z, order, setup)
    future = np.arange(len(z), len(z) + h)
    exog = _fourier(future, setup.season, setup.harmonics) if setup.harmonics else None
    forecast = fitted.get_forecast(h, exog=exog)
    bounds = np.asarray(forecast.conf_int(alpha=setup.alpha))
    return np.asarray(forecast.predicted_mean), bounds[:, 0], bounds[:, 1]


def _ets(z: np.ndarray, h: int, setup: Setup) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    n = len(z)
    own_season = setup.harmonics > 0 and n >= 2 * setup.season
    removed, added = np.zeros(n), np.zeros(h)
    if setup.harmonics and not own_season:
        t, future = np.arange(n), np.arange(n, n + h)
        beta = sm.OLS(z, _design(t, setup)).fit().params[2:]
        removed = _fourier(t, setup.season, setup.harmonics) @ beta
        added = _fourier(future, setup.season, setup.harmonics) @ beta
    model = ETSModel(
        pd.Series(z - removed),
        error="add",
        trend="add",
        damped_trend=True,
        seasonal="add" if own_season else None,
        seasonal_periods=setup.season if own_season else None,
    )
    fitted = model.fit(disp=False)
    frame = fitted.get_prediction(n, n + h - 1).summary_frame(alpha=setup.alpha)
    return (
        frame["mean"].to_numpy() + added,
        frame["pi_lower"].to_numpy() + added,
        frame["pi_upper"].to_numpy() + added,
    )


Fitter = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _fitters(z: np.ndarray, setup: Setup) -> dict[str, tuple[Fitter, str]]:
    order = _arima_order(z, setup)
    season = f" + {setup.harmonics} harmonic season pair(s)" if setup.harmonics else ""
    if setup.harmonics and len(z) >= 2 * setup.season:
        ets = "ETS(A,Ad,A): damped trend with a seasonal component"
    elif setup.harmonics:
        ets = "ETS(A,Ad,N): damped trend on the deseasonalised series, harmonic season added back"
    else:
        ets = "ETS(A,Ad,N): damped trend"
    return {
        "ets": (lambda s, h: _ets(s, h, setup), ets),
        "arima": (lambda s, h: _arima(s, h, setup, order), f"ARIMA{order} with drift{season}"),
        "trend_regression": (lambda s, h: _trend_regression(s, h, setup), f"OLS linear trend{season}"),
    }


def _run(fit: Fitter, z: np.ndarray, h: int, log: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point, lower, upper = (np.asarray(a, dtype=float) for a in fit(z, h))
    if not (np.all(np.isfinite(point)) and np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("the fit gave non-finite forecasts")
    if log:
        return np.exp(point), np.exp(lower), np.exp(upper)
    return point, lower, upper


def _errors(model: str, actual: list[float], predicted: list[float]) -> BacktestError:
    a, p = np.asarray(actual), np.asarray(predicted)
    mape = float(np.mean(np.abs(p - a) / np.abs(a)) * 100) if len(a) and np.all(a != 0) else None
    return BacktestError(model, mape, float(np.sqrt(np.mean((p - a) ** 2))), len(a))


def synthesise(y: np.ndarray, freq: str, horizon: int, level: float = 0.95) -> Synthesis:
    """Forecast `horizon` periods of `y` with every model, backtest them, and combine.

    With one BLAS thread: the matrices are tiny, and on a busy 2-core machine several BLAS
    threads made the 20-odd fits take 6-40 s instead of 0.5 s (measured)."""
    from threadpoolctl import ThreadpoolController

    with ThreadpoolController().limit(limits=1, user_api="blas"):
        return _synthesise(y, freq, horizon, level)


def _synthesise(y: np.ndarray, freq: str, horizon: int, level: float) -> Synthesis:
    setup = choose_setup(y, freq, level)
    z = np.log(y) if setup.log else y.astype(float)
    n = len(y)
    fitters = _fitters(z, setup)
    forecasts: dict[str, Forecast] = {}
    failed: dict[str, str] = {}
    for name, (fit, detail) in fitters.items():
        try:
            forecasts[name] = Forecast(name, *_run(fit, z, horizon, setup.log), detail=detail)
        except (ValueError, np.linalg.LinAlgError) as exc:
            failed[name] = str(exc)
    if not forecasts:
        raise FitError("no model could be fitted: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))

    # Rolling-origin backtest: refit on y[:o], forecast what is known after o (≤ horizon).
    smallest = max(MIN_HISTORY - 1, math.ceil(0.6 * n), 2 * setup.harmonics + 4)
    origins = [o for o in range(max(smallest, n - ORIGINS), n)]
    actual: list[float] = []
    predicted: dict[str, list[float]] = {name: [] for name in forecasts}
    for o in origins:
        steps = min(horizon, n - o)
        runs: dict[str, np.ndarray] = {}
        for name in forecasts:
            try:
                runs[name] = _run(fitters[name][0], z[:o], steps, setup.log)[0]
            except (ValueError, np.linalg.LinAlgError):
                break
        if len(runs) < len(forecasts):
            continue  # keep the pooled points comparable across models
        actual.extend(y[o : o + steps].tolist())
        for name, point in runs.items():
            predicted[name].extend(point.tolist())
    backtest = [_errors(name, actual, predicted[name]) for name in forecasts] if actual else []

    inverse = {b.model: 1 / max(b.rmse**2, 1e-12) for b in backtest} or dict.fromkeys(forecasts, 1.0)
    total = sum(inverse.values())
    weights = {name: inverse[name] / total for name in forecasts}

    def blend(part: Callable[[Forecast], np.ndarray]) -> np.ndarray:
        return np.asarray(np.sum([weights[k] * part(f) for k, f in forecasts.items()], axis=0), dtype=float)

    combined = Forecast(
        "combined",
        blend(lambda f: f.point),
        blend(lambda f: f.lower),
        blend(lambda f: f.upper),
        detail="weights inverse to backtest MSE; interval: weighted mean of the models' bounds",
    )
    if actual:
        mixed = [sum(weights[k] * predicted[k][i] for k in forecasts) for i in range(len(actual))]
        backtest.append(_errors("combined", actual, mixed))
    return Synthesis(setup, list(forecasts.values()), combined, weights, backtest, failed)
