"""Refutations of a doubly robust estimate (`causal_impact`'s): three ways an estimate that
means what it says behaves, each checked by refitting the doubly robust estimator (both its
models, the propensity included) on changed data a modest number of times (30 by default):

- placebo treatment: the treatment shuffled among the rows, so it can cause nothing; the
  estimates must centre on zero (their mean within three of its standard errors, i.e.
  `sd / √runs`, of zero). A pipeline that leaks the real treatment (DoWhy 0.14 reuses a stale
  propensity column, py-why/dowhy #1728) fails it;
- random common cause: an independent random covariate added to the adjustment set; a sound
  estimate barely moves (the mean change at most a tenth of its standard error);
- data subset: random 80 % subsets; the estimate must stay where it was (the subsets' mean
  within three of its standard errors of the full estimate, or a tenth of the estimate's
  standard error when that is wider, and their spread no more than the estimate's standard
  error, where about half of it is expected).

The runs reuse one vectorised Newton fit of the propensity and two least-squares outcome fits
each (`causal.dr_point`), so the three together take under half a second at 10,000
rows; past 50,000 rows they run on a random sample of 50,000 (against the estimate on that
sample), which keeps them to a few seconds at any size. Seeds are fixed, so a verdict is the
same on every run over the same data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from concerto.packs.commercial.methods.causal import dr_fit, dr_point

SIMULATIONS = 30
SEED = 20260101
SUBSET = 0.8
MAX_ROWS = 50_000  # refutations past this run on a sample: their verdicts need no more


@dataclass
class Refutation:
    """One refuter's runs and verdict."""

    name: str
    label: str
    simulations: int
    original: float
    mean_effect: float
    sd_effect: float
    passed: bool
    verdict: str
    rows: int = 0  # rows the runs used (a sample past MAX_ROWS)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "refuter": self.name,
            "label": self.label,
            "simulations": self.simulations,
            "original_effect": round(self.original, 4),
            "mean_new_effect": round(self.mean_effect, 4),
            "sd_new_effect": round(self.sd_effect, 4),
            "passed": self.passed,
            "verdict": self.verdict,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class RefuterInputs:
    """What every refuter works on: the data the estimate came from (covariates `x`, 0/1
    treatment `t`, outcome `y`), the doubly robust estimate it checks with its standard
    error, how that estimate was made (overlap `trim`, `estimand`), and how many runs."""

    x: np.ndarray
    t: np.ndarray
    y: np.ndarray
    estimate: float
    std_error: float
    trim: float
    estimand: str
    simulations: int = SIMULATIONS


def refute(inputs: RefuterInputs, seed: int = SEED) -> list[Refutation]:
    """The three refutations of `inputs.estimate` (the doubly robust estimate on x, t, y). Past
    `MAX_ROWS` rows they run on a random sample of that many, against the estimate on it."""
    rng = np.random.default_rng(seed)
    if len(inputs.t) > MAX_ROWS:
        rows = np.sort(rng.choice(len(inputs.t), size=MAX_ROWS, replace=False))
        x, t, y = inputs.x[rows], inputs.t[rows], inputs.y[rows]
        estimate, std_error = dr_fit(x, t, y, inputs.trim, inputs.estimand)
        inputs = replace(inputs, x=x, t=t, y=y, estimate=estimate, std_error=std_error)
    refuters: list[Callable[[RefuterInputs, Any], Refutation]] = [_placebo, _random_common_cause, _subset]
    found = []
    for refuter in refuters:
        started = time.perf_counter()
        refutation = refuter(inputs, rng)
        refutation.rows, refutation.seconds = len(inputs.t), time.perf_counter() - started
        found.append(refutation)
    return found


def _runs(values: list[float]) -> np.ndarray:
    found = np.array(values, dtype=float)
    return found[np.isfinite(found)]


def _placebo(inputs: RefuterInputs, rng: Any) -> Refutation:
    x, t, y, estimate = inputs.x, inputs.t, inputs.y, inputs.estimate
    runs = inputs.simulations
    effects = _runs([dr_point(x, rng.permutation(t), y, inputs.trim, inputs.estimand) for _ in range(runs)])
    mean, sd = _summary(effects)
    bound = 3 * sd / math.sqrt(max(len(effects), 1))
    passed = len(effects) >= runs // 2 and abs(mean) <= bound
    verdict = (
        f"passed: with the treatment shuffled the estimate averages {mean:.3g} (within {bound:.2g} of zero), "
        f"against {estimate:.3g} with the real treatment"
        if passed
        else f"failed: with the treatment shuffled the estimate still averages {mean:.3g}, not zero "
        f"(more than {bound:.2g} away): the estimate picks up something besides the treatment"
    )
    return Refutation(
        "placebo_treatment", "Placebo treatment (shuffled)", len(effects), estimate, mean, sd, passed, verdict
    )


def _random_common_cause(inputs: RefuterInputs, rng: Any) -> Refutation:
    x, t, y, estimate, std_error = inputs.x, inputs.t, inputs.y, inputs.estimate, inputs.std_error
    runs = inputs.simulations
    effects = _runs(
        [
            dr_point(np.column_stack([x, rng.standard_normal(len(t))]), t, y, inputs.trim, inputs.estimand)
            for _ in range(runs)
        ]
    )
    mean, sd = _summary(effects)
    shift = abs(mean - estimate)
    passed = len(effects) >= runs // 2 and shift <= 0.1 * std_error
    verdict = (
        f"passed: adding a random covariate moves the estimate by {shift:.2g} on average "
        f"(at most a tenth of its standard error, {std_error:.2g})"
        if passed
        else f"failed: adding a random covariate moves the estimate by {shift:.2g} on average, more than a "
        f"tenth of its standard error ({std_error:.2g}): the estimate is fragile to the adjustment set"
    )
    return Refutation("random_common_cause", "Random common cause", len(effects), estimate, mean, sd, passed, verdict)


def _subset(inputs: RefuterInputs, rng: Any) -> Refutation:
    x, t, y, estimate, std_error = inputs.x, inputs.t, inputs.y, inputs.estimate, inputs.std_error
    runs = inputs.simulations
    n = len(t)
    size = round(SUBSET * n)
    effects: list[float] = []
    for _ in range(runs):
        rows = rng.choice(n, size=size, replace=False)
        effects.append(dr_point(x[rows], t[rows], y[rows], inputs.trim, inputs.estimand))
    found = _runs(effects)
    mean, sd = _summary(found)
    shift = abs(mean - estimate)
    bound = max(3 * sd / math.sqrt(max(len(found), 1)), 0.1 * std_error)
    passed = len(found) >= runs // 2 and shift <= bound and sd <= std_error
    verdict = (
        f"passed: on random 80% subsets the estimate averages {mean:.3g} (spread {sd:.2g}), close to {estimate:.3g}"
        if passed
        else f"failed: on random 80% subsets the estimate averages {mean:.3g} with spread {sd:.2g}, against "
        f"{estimate:.3g} (standard error {std_error:.2g}): it rests on a few rows"
    )
    return Refutation("data_subset", "Data subset (80%)", len(found), estimate, mean, sd, passed, verdict)


def _summary(values: np.ndarray) -> tuple[float, float]:
    if not len(values):
        return float("nan"), float("nan")
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0
