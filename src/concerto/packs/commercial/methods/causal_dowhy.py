"""The optional DoWhy path of `causal_impact` (`library: "dowhy"`): DoWhy's
CausalModel with the covariates as common causes, the backdoor estimand, the
`backdoor.linear_regression` estimator and DoWhy's placebo-treatment refuter.

Only the regression estimator is used with DoWhy's placebo refuter: in DoWhy 0.14 that
refuter reuses a stale propensity column with the propensity-score estimators and gives wrong
answers (DEPENDENCIES.md; py-why/dowhy #1728). The linear regression is y ~ t + covariates,
i.e. one effect for every row; DoWhy's interacted variant needs a bootstrap for its interval
(about 20 s at 13,000 rows), too slow for an answer.

DoWhy is the `causal` extra, not a core dependency: it is imported here, inside the function,
only when a question asks for it; `estimate` returns None when it is not installed and the
agent answers by its own estimators.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PLACEBO_RUNS = 20


@dataclass
class DowhyResult:
    """DoWhy's estimate and its placebo refutation."""

    ate: float
    confidence_interval: tuple[float, float]
    p_value: float
    placebo_effect: float
    placebo_p_value: float
    placebo_passed: bool
    simulations: int
    version: str


def available() -> bool:
    """Whether DoWhy can be imported (without importing it: that costs seconds)."""
    return importlib.util.find_spec("dowhy") is not None


def estimate(
    x: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    *,
    estimand: str = "ate",
    simulations: int = PLACEBO_RUNS,
    seed: int = 20260101,
) -> DowhyResult | None:
    """DoWhy's backdoor linear-regression estimate of the effect of t on y adjusting for the
    columns of x, with its placebo refutation; None when DoWhy is not installed."""
    if not available():
        return None
    import dowhy
    import pandas as pd
    from dowhy import CausalModel

    common = [f"w{i}" for i in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=common)
    frame["treatment"] = t.astype(bool)
    frame["outcome"] = y.astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CausalModel(data=frame, treatment="treatment", outcome="outcome", common_causes=common or None)
        identified = model.identify_effect(proceed_when_unidentifiable=True)
        found = model.estimate_effect(
            identified,
            method_name="backdoor.linear_regression",
            confidence_intervals=True,
            test_significance=True,
            target_units=estimand,
        )
        refuted = model.refute_estimate(
            identified,
            found,
            method_name="placebo_treatment_refuter",
            placebo_type="permute",
            num_simulations=simulations,
            random_seed=seed,
        )
    lo, hi = _interval(found.get_confidence_intervals())
    significance: Any = found.test_stat_significance() or {}
    result: Any = refuted.refutation_result or {}
    return DowhyResult(
        ate=float(found.value),
        confidence_interval=(lo, hi),
        p_value=_first(significance.get("p_value")),
        placebo_effect=float(refuted.new_effect),
        placebo_p_value=_first(result.get("p_value")),
        # DoWhy tests a zero effect against the placebo runs: not significant = placebo near zero.
        placebo_passed=not bool(result.get("is_statistically_significant", True)),
        simulations=simulations,
        version=str(getattr(dowhy, "__version__", "")),
    )


def _interval(value: Any) -> tuple[float, float]:
    import numpy as np

    flat = np.asarray(value, dtype=float).ravel()
    return (float(flat[0]), float(flat[1])) if len(flat) >= 2 else (math.nan, math.nan)


def _first(value: Any) -> float:
    import numpy as np

    if value is None:
        return math.nan
    return float(np.asarray(value, dtype=float).ravel()[0])
