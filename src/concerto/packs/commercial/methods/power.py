"""The power analysis behind `experiment_designer`: what is asked (`Ask`, checked), what the
data says about the outcome (`Baseline`: mean, SD, units per period, strata, the
intra-cluster correlation), and the power analysis that solves for the missing one of
effect, units per arm and power with statsmodels' power classes (`TTestIndPower` for a
mean, `NormalIndPower` with Cohen's h for a rate), sized up by the design effect
1 + (m − 1)·ICC for clusters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from concerto.packs.commercial.methods.errors import MethodError, NoSolution

if TYPE_CHECKING:
    import pandas as pd

LIFTS = (0.05, 0.10, 0.15, 0.20)  # relative lifts of the sample-size table
MIN_PER_ARM = 2  # a two-sample t-test needs a variance in each arm
FEW_CLUSTERS = 10  # clusters per arm below which a cluster design's power is optimistic


@dataclass
class Ask:
    """What the question (or the caller) gives (None: not given)."""

    effect_size: float | None = None
    lift: float | None = None
    mde: float | None = None
    alpha: float = 0.05
    power: float | None = None
    ratio: float = 1.0
    n_per_arm: float | None = None
    n_is_clusters: bool = False
    rates: tuple[float, float | None] | None = None  # baseline rate (and the target rate)
    mean: float | None = None
    sd: float | None = None
    one_sided: bool = False
    cluster: str | None = None
    icc: float | None = None
    outcome_phrase: str | None = None
    intervention: str = "the new program"


@dataclass
class Baseline:
    """What the data says about the outcome and the units (None when the source lacks it)."""

    outcome: str
    mean: float
    sd: float
    binary: bool
    units: int  # distinct units in the baseline window
    per_month: float | None  # eligible units per period
    window: str
    strata: list[tuple[str, float]] = field(default_factory=list)  # column, share of variance explained
    r2: float = 0.0  # variance the strata explain together
    cluster: dict[str, Any] | None = None
    between_share: float | None = None  # share of a unit-month's variance that is between units


def check(ask: Ask) -> None:
    """Refuse what no power analysis can use, saying what to change."""
    if ask.power is not None and not 0 < ask.power < 1:
        raise MethodError(
            f"power must be between 0 and 1 (exclusive); {ask.power:g} was given",
            "Ask for a power such as 0.8 (80%) or 0.9 (90%).",
            error_type="invalid_power",
        )
    if not 0 < ask.alpha < 1:
        raise MethodError(
            f"the significance level alpha must be between 0 and 1 (exclusive); {ask.alpha:g} was given",
            "Use alpha = 0.05 (5%) or 0.01 (1%).",
            error_type="invalid_alpha",
        )
    if ask.power is not None and ask.power <= ask.alpha:
        raise MethodError(
            f"power ({ask.power:g}) must be larger than alpha ({ask.alpha:g})",
            "Ask for a power such as 0.8 with alpha 0.05.",
            error_type="invalid_power",
        )
    for key in ("effect_size", "lift", "mde"):
        value = getattr(ask, key)
        if value is not None and value <= 0:
            raise MethodError(
                f"the {key.replace('_', ' ')} to detect must be positive; {value:g} was given",
                "Give the size of the change to detect as a positive number (a two-sided test detects either "
                "direction), e.g. effect size 0.2 or a 10% lift.",
                error_type="invalid_effect_size",
            )
    if ask.n_per_arm is not None and ask.n_per_arm < MIN_PER_ARM:
        raise MethodError(
            f"{ask.n_per_arm:g} units per arm is too few: each arm needs at least {MIN_PER_ARM} to estimate a variance",
            "Give more units per arm (tests with fewer than 20 per arm are rarely informative).",
            error_type="too_few_units",
        )
    if ask.ratio <= 0:
        raise MethodError(f"the allocation ratio must be positive; {ask.ratio:g} was given", "Use 1 for equal arms.")
    if ask.rates and not all(0 < r < 1 for r in ask.rates if r is not None):
        raise MethodError(
            "a baseline or target rate must be between 0% and 100%",
            "Give rates such as 'from 12% to 14%'.",
            error_type="invalid_rate",
        )
    if ask.icc is not None and not 0 <= ask.icc < 1:
        raise MethodError("the ICC must be in [0, 1)", "Give an ICC such as 0.05.", error_type="invalid_icc")


def describe(
    df: pd.DataFrame,
    outcome: str,
    *,
    entity: str | None,
    time: str | None,
    cluster: str | None,
    candidates: list[str],
    window: int = 3,
) -> Baseline:
    """The outcome's mean and SD per unit and period over the latest `window` periods, the units
    available and eligible per period, the strata (fixed attributes of the randomised unit that
    explain at least 1 % of the outcome's variance, the best two), the share of the variance
    that lies between units (for measuring each unit over several months) and, for a cluster
    design, the ICC of the latest period."""
    described = "all rows"
    latest: list[Any] = []
    if time:
        latest = sorted(df[time].dropna().unique())[-window:]
        df = df[df[time].isin(latest)]
        described = f"the latest {len(latest)} {time} values ({latest[0]} to {latest[-1]})"
    y = df[outcome].astype(float)
    unit = cluster or entity
    units = int(df[unit].nunique()) if unit else len(df)
    per_month = float(df.groupby(time)[unit].nunique().mean()) if time and unit else None
    if unit:  # strata are fixed attributes of the randomised unit, known before it is randomised
        candidates = [c for c in candidates if int(df.groupby(unit)[c].nunique().max()) <= 1]
    explained = sorted(((c, eta2(df, c, outcome)) for c in candidates), key=lambda p: p[1], reverse=True)
    strata = [(c, r) for c, r in explained if r >= 0.01][:2]
    base = Baseline(
        outcome=outcome,
        mean=float(y.mean()),
        sd=float(y.std(ddof=1)),
        binary=bool(set(y.unique()) <= {0.0, 1.0}),
        units=units,
        per_month=per_month,
        window=described,
        strata=strata,
        r2=eta2(df, [c for c, _ in strata], outcome) if strata else 0.0,
    )
    if entity and time and len(latest) > 1 and df[entity].nunique() > 1:
        share = anova_icc(y, df[entity])
        base.between_share = min(max(share[0], 0.0), 1.0)
    if cluster:
        last = df[df[time] == latest[-1]] if time else df
        base.cluster = icc(last, cluster, outcome, entity)
    return base


def eta2(df: pd.DataFrame, by: str | list[str], outcome: str) -> float:
    """Share of the outcome's variance the groups of `by` explain (one-way ANOVA's η²)."""
    y = df[outcome].astype(float)
    total = float(((y - y.mean()) ** 2).sum())
    fitted = df.groupby(by, dropna=False)[outcome].transform("mean").astype(float)
    return 0.0 if total == 0 else float(((fitted - y.mean()) ** 2).sum() / total)


def anova_icc(y: pd.Series, groups: pd.Series) -> tuple[float, float, int, float, float]:
    """One-way ANOVA ICC(1) of `y` by `groups`: (estimate, F, groups k, rows n, adjusted group size n₀)."""
    by = y.groupby(groups.to_numpy())
    n_i = by.size().to_numpy(dtype=float)
    k, n = len(n_i), float(n_i.sum())
    if k < 2 or n <= k:
        return float("nan"), float("nan"), k, n, float("nan")
    msb = float((n_i * (by.mean().to_numpy() - y.mean()) ** 2).sum() / (k - 1))
    msw = float(((y - by.transform("mean")) ** 2).sum() / (n - k))
    n0 = (n - float((n_i**2).sum()) / n) / (k - 1)
    if msw == 0:
        return float("nan"), float("nan"), k, n, n0
    return (msb - msw) / (msb + (n0 - 1) * msw), msb / msw, k, n, n0


def icc(df: pd.DataFrame, cluster: str, outcome: str, entity: str | None) -> dict[str, Any]:
    """Intra-cluster correlation of the outcome (one value per unit) by one-way ANOVA, its 95 %
    interval from the F distribution, and the mean number of units per cluster."""
    from scipy import stats

    estimate, f, k, n, n0 = anova_icc(df[outcome].astype(float), df[cluster])
    if not math.isfinite(estimate):
        raise MethodError(
            f"cannot estimate the intra-cluster correlation from {k} {cluster} value(s) and {n:g} rows",
            "Give the ICC yourself (icc), or randomise individual units.",
            error_type="too_few_clusters",
        )
    f_low = f / stats.f.ppf(0.975, k - 1, n - k)
    f_high = f * stats.f.ppf(0.975, n - k, k - 1)
    low, high = ((v - 1) / (v + n0 - 1) for v in (f_low, f_high))
    size = df.groupby(cluster)[entity].nunique() if entity else df.groupby(cluster).size()
    return {
        "column": cluster,
        "icc_estimate": round(float(estimate), 4),
        "icc_interval": [round(max(float(low), 0.0), 4), round(min(max(float(high), 0.0), 0.999), 4)],
        "clusters": k,
        "cluster_size": round(float(size.mean()), 1),
        "method": "one-way ANOVA ICC(1) on the latest period; 95% interval from the F distribution",
    }


@dataclass
class Design:
    """The solved design: effect (standardised and in outcome units), units per arm, power."""

    solved_for: str  # sample_size, minimum_detectable_effect or power
    test: str
    effect_size: float  # Cohen's d, or Cohen's h for a rate
    n_per_arm: float  # units in the control arm (the treatment arm has ratio × it), before rounding up
    power: float
    mde: float | None = None  # in outcome units (rate points for a rate)
    mde_relative: float | None = None
    design_effect: float = 1.0
    icc_used: float | None = None
    clusters_per_arm: int | None = None
    n_adjusted: float | None = None  # per arm, when the analysis adjusts for the strata
    table: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def solve_power(proportion: bool, one_sided: bool, **kw: Any) -> float:
    """statsmodels' `solve_power` for the one unknown of effect_size, nobs1 and power."""
    import warnings

    import numpy as np
    from statsmodels.stats.power import NormalIndPower, TTestIndPower

    solver = NormalIndPower() if proportion else TTestIndPower()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = solver.solve_power(alternative="larger" if one_sided else "two-sided", **kw)
            value = abs(float(np.asarray(found, dtype=float).ravel()[0]))  # two-sided roots come in ± pairs
        except (ValueError, ZeroDivisionError, FloatingPointError, TypeError) as exc:
            raise NoSolution(
                f"the power calculation has no solution for these inputs ({exc})",
                "Check the effect size, alpha, power and sample size.",
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise NoSolution(
            "the power calculation has no solution for these inputs",
            "Ask for a larger effect or more units per arm.",
        )
    return value


@dataclass
class _Scale:
    """How a standardised effect maps to the outcome: a mean with its SD, or a baseline rate."""

    proportion: bool
    mean: float | None
    sd: float | None
    p1: float | None

    def standardised(self, lift: float | None, mde: float | None, target: float | None = None) -> float | None:
        """Cohen's d (mean) or h (rate) of a relative `lift`, an absolute `mde` or a `target` rate."""
        from statsmodels.stats.proportion import proportion_effectsize

        if self.proportion and self.p1 is not None:
            p2 = target or (self.p1 + mde if mde else self.p1 * (1 + lift) if lift else None)
            if p2 is None:
                return None
            if not 0 < p2 < 1:
                raise MethodError(
                    f"the target rate {p2:.1%} is outside 0–100%",
                    "Ask for a smaller change.",
                    error_type="invalid_rate",
                )
            return abs(float(proportion_effectsize(p2, self.p1)))
        if mde is None and lift is None:
            return None
        if not self.sd or (mde is None and self.mean is None):
            raise MethodError(
                "an effect in outcome units needs the outcome's baseline mean and SD, which the source does not give",
                "Give a standardised effect size, or baseline_mean and baseline_sd, or choose a source with the "
                "outcome.",
                error_type="missing_baseline",
            )
        return (mde if mde is not None else float(lift or 0) * float(self.mean or 0)) / self.sd

    def in_units(self, d: float) -> tuple[float | None, float | None]:
        """(absolute, relative) change a standardised effect `d` means."""
        if self.proportion and self.p1 is not None:
            p2 = math.sin(math.asin(math.sqrt(self.p1)) + d / 2) ** 2
            return p2 - self.p1, (p2 - self.p1) / self.p1
        if not self.sd:
            return None, None
        return d * self.sd, (d * self.sd / self.mean if self.mean else None)


def solve(ask: Ask, base: Baseline | None) -> Design:
    """Solve for the one of effect, units per arm and power the ask leaves out (with neither
    effect nor units: the MDE with every unit the data has), inflated by the design effect for
    clusters; and the units a 5–20 % lift would need."""
    proportion = ask.rates is not None or bool(base and base.binary and ask.effect_size is None)
    mean = ask.mean if ask.mean is not None else (base.mean if base else None)
    scale = _Scale(
        proportion,
        mean,
        ask.sd if ask.sd is not None else (base.sd if base else None),
        ask.rates[0] if ask.rates else (mean if proportion else None),
    )
    test = (
        "two proportions, normal approximation (NormalIndPower, Cohen's h)"
        if proportion
        else "two-sample t-test (TTestIndPower, Cohen's d)"
    )
    cluster = base.cluster if base and ask.cluster else None
    icc_used = ask.icc if ask.icc is not None else (cluster["icc_interval"][1] if cluster else None)
    m = float(cluster["cluster_size"]) if cluster else 1.0
    de = 1 + (m - 1) * icc_used if ask.cluster and icc_used is not None else 1.0
    d = ask.effect_size
    if d is None:
        d = scale.standardised(ask.lift, ask.mde, ask.rates[1] if ask.rates else None)
    n = ask.n_per_arm * (m if ask.n_is_clusters else 1.0) if ask.n_per_arm else None
    kw: dict[str, Any] = {"alpha": ask.alpha, "ratio": ask.ratio}
    power = ask.power or 0.8
    notes: list[str] = []
    if d is not None and n is None:
        n = solve_power(proportion, ask.one_sided, effect_size=d, power=power, **kw) * de
        solved = "sample_size"
    elif d is None:
        if n is None:
            if base is None:
                raise MethodError(
                    "the question gives neither the effect to detect nor the number of units",
                    "Say e.g. 'to detect a 10% lift with 80% power', 'effect size 0.2', or '400 HCPs per arm'.",
                    error_type="missing_effect",
                )
            n = base.units * m / (1 + ask.ratio)
            notes.append(f"no effect given: the smallest effect detectable with all {base.units:,} units")
        d = solve_power(proportion, ask.one_sided, effect_size=None, nobs1=n / de, power=power, **kw)
        solved = "minimum_detectable_effect"
    elif n is not None:
        if ask.power is not None:
            notes.append("effect, units and power were all given: the power these units reach is reported")
        power = solve_power(proportion, ask.one_sided, effect_size=d, nobs1=n / de, power=None, **kw)
        solved = "power"
    assert n is not None  # every branch above sets it
    mde, relative = scale.in_units(d)
    design = Design(solved, test, d, n, power, mde, relative, de, icc_used if ask.cluster else None, notes=notes)
    if ask.cluster:
        design.clusters_per_arm = math.ceil(n / m)
        if design.clusters_per_arm < FEW_CLUSTERS:
            design.notes.append(
                f"only {design.clusters_per_arm} clusters per arm: with fewer than {FEW_CLUSTERS} the design effect's "
                "normal theory overstates the power (the analysis has few degrees of freedom); add clusters or "
                "randomise individuals"
            )
    if solved == "sample_size" and base and 0 < base.r2 < 1 and not proportion and not ask.cluster:
        adjusted = d / math.sqrt(1 - base.r2)
        design.n_adjusted = solve_power(False, ask.one_sided, effect_size=adjusted, power=power, **kw)
    if scale.p1 is not None or (scale.mean and scale.sd):
        for lift in LIFTS:
            dl = scale.standardised(lift, None)
            if dl:
                need = solve_power(proportion, ask.one_sided, effect_size=dl, power=power, **kw) * de
                design.table.append({"lift": f"{lift:.0%}", "effect_size": round(dl, 4), "n_per_arm": math.ceil(need)})
    return design


def mde_at(ask: Ask, base: Baseline | None, n_per_arm: float, power: float) -> Design:
    """The design's MDE with `n_per_arm` units (e.g. all the data has) at the same alpha and power."""
    target = replace(ask, effect_size=None, lift=None, mde=None, n_per_arm=n_per_arm, n_is_clusters=False, power=power)
    if ask.rates:
        target.rates = (ask.rates[0], None)
    return solve(target, base)


def months_of_measurement(ask: Ask, base: Baseline, design: Design, most: int = 24) -> int | None:
    """When the data has too few units: the months each unit must be measured (its monthly
    outcome averaged) so the units available detect the same effect. A D-month average has
    variance σ²·(ρ + (1 − ρ)/D), ρ the share of variance between units. None if `most` months
    do not suffice, or for a rate or cluster design."""
    if design.mde is None or base.between_share is None or ask.cluster or design.test.startswith("two proportions"):
        return None
    per_arm = base.units / (1 + ask.ratio)
    rho = base.between_share
    for months in range(1, most + 1):
        sd = base.sd * math.sqrt(rho + (1 - rho) / months)
        need = solve_power(
            False, ask.one_sided, effect_size=design.mde / sd, power=design.power, alpha=ask.alpha, ratio=ask.ratio
        )
        if need <= per_arm:
            return months
    return None


@dataclass
class Duration:
    """Whether the data has the units a design needs, and how long the test runs: the months to
    enrol them at the units eligible per month, or, when the data has too few, the months each
    unit must be measured (`repeated_measures`) and the design with every unit it has."""

    needed: int  # units (clusters for a cluster design) the design needs in both arms
    feasible: bool
    enrolment: int | None  # months to enrol `needed` at the eligible units per month
    months: int | None
    basis: str  # enrolment, repeated_measures or infeasible
    with_all: Design | None = None  # the MDE design with every unit the data has, when it has too few


def duration(ask: Ask, base: Baseline | None, design: Design) -> Duration:
    """How long `design` runs on the units of `base` (see `Duration`)."""
    control, treated = math.ceil(design.n_per_arm), math.ceil(design.n_per_arm * ask.ratio)
    clusters = (design.clusters_per_arm or 0) * 2 if ask.cluster else None
    needed = clusters if clusters is not None else control + treated
    feasible = base is None or needed <= base.units
    enrolment = math.ceil(needed / base.per_month) if base and base.per_month else None
    months, basis = (enrolment, "enrolment") if feasible else (None, "infeasible")
    with_all: Design | None = None
    if base and not feasible:
        measured = months_of_measurement(ask, base, design)
        if measured is not None:
            months, basis = measured, "repeated_measures"
        size = (base.cluster or {}).get("cluster_size", 1.0) if ask.cluster else 1.0
        with_all = mde_at(ask, base, base.units * size / (1 + ask.ratio), design.power)
    return Duration(needed, feasible, enrolment, months, basis, with_all)
