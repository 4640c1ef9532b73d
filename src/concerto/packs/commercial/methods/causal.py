"""The estimators behind `causal_impact`: the average treatment effect (ATE) of a binary
treatment on a numeric outcome, adjusted for covariates, by three methods that rest on
different models so that their agreement means something:

- regression adjustment: OLS of the outcome on the treatment, the centred covariates and
  their interactions with the treatment (the treatment's coefficient is then the ATE, not
  a variance-weighted average of the effects); heteroskedasticity-robust (HC3) errors from
  statsmodels;
- inverse-propensity weighting: a logistic propensity model, normalised (Hajek) weights, the
  standard error from the estimator's influence function;
- doubly robust (AIPW, augmented IPW): the outcome model's prediction corrected by the
  weighted residuals; consistent when either model is right; the standard error from its
  influence function. This is the headline estimate.

Overlap: rows whose propensity lies outside [trim, 1 − trim] (0.05 by default) have no
comparable rows in the other arm; all adjusted estimates leave them out (Crump, Hotz, Imbens
and Mitnik 2009), so they estimate the average effect over the rows with overlap, which is
the whole sample when overlap is good. For the effect on the treated only rows above
1 − trim are left out: untreated rows unlike every treated one get almost no weight anyway.

Estimand: the ATE (averaged over all rows) or the ATT (averaged over the treated rows). With
`auto`, the ATE unless overlap is poor because of a large comparison pool unlike the treated
(Lalonde's NSW trainees against PSID households): then the average effect over everyone is
not estimable and the effect on the treated, which needs a counterpart only for each treated
row, is what the data can tell (as Dehejia and Wahba 1999 and Imbens 2015 do on these data).

The propensity model is fitted by Newton-Raphson (iteratively reweighted least squares) on
standardised covariates with a very small ridge penalty: the same fit as an unpenalised
logistic regression when the data allow one, finite when a category level is all treated or
all untreated (quasi-separation), and cheap enough to refit dozens of times for the
refutations. Complete separation (a covariate that predicts the treatment exactly) is an
error: no treated row has an untreated counterpart, so no adjustment can estimate the effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.methods.errors import GraphError, OverlapError, SeparationError, TreatmentError

if TYPE_CHECKING:
    import pandas as pd

Z95 = 1.959963984540054
TRIM = 0.05  # default overlap bounds [TRIM, 1 − TRIM] (Crump et al. 2009 use 0.1 as a rule of thumb)
RIDGE = 1e-4  # penalty on standardised propensity coefficients, per row: negligible unless separated
MAX_CATEGORY_LEVELS = 50


@dataclass
class Estimate:
    """One estimator's ATE with its 95 % interval and two-sided p-value."""

    method: str
    label: str
    ate: float
    std_error: float
    n_rows: int
    p_value: float = float("nan")
    confidence_interval: tuple[float, float] = (float("nan"), float("nan"))
    note: str = ""

    def __post_init__(self) -> None:
        if math.isnan(self.p_value):
            self.p_value = _p_normal(self.ate, self.std_error)
        if math.isnan(self.confidence_interval[0]):
            self.confidence_interval = (self.ate - Z95 * self.std_error, self.ate + Z95 * self.std_error)

    def as_dict(self, digits: int = 4) -> dict[str, Any]:
        return {
            "method": self.method,
            "label": self.label,
            "ate": round(self.ate, digits),
            "std_error": round(self.std_error, digits),
            "confidence_interval": [
                round(self.confidence_interval[0], digits),
                round(self.confidence_interval[1], digits),
            ],
            "p_value": round_p(self.p_value),
            "n_rows": self.n_rows,
            **({"note": self.note} if self.note else {}),
        }


@dataclass
class Design:
    """The covariates as a numeric matrix: numbers as they are, categories one-hot encoded
    (first level dropped); constant columns, and columns that are linear combinations of
    others, left out."""

    matrix: np.ndarray
    names: list[str]  # encoded column names ("specialty=Oncology")
    source_of: dict[str, str]  # encoded name → covariate it came from
    dropped: list[str] = field(default_factory=list)  # constant or redundant columns left out


@dataclass
class Analysis:
    """Everything estimated on one data set."""

    naive: Estimate
    regression: Estimate
    ipw: Estimate
    doubly_robust: Estimate
    propensity: np.ndarray  # every row's fitted propensity
    kept: np.ndarray  # rows within the overlap bounds
    trim: float
    estimand: str = "ate"  # "ate" (all rows with overlap) or "att" (the treated rows with overlap)
    estimand_reason: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def estimators(self) -> list[Estimate]:
        return [self.regression, self.ipw, self.doubly_robust]

    @property
    def outside_share(self) -> float:
        """Share of rows with a propensity outside [0.05, 0.95] (the overlap diagnostic)."""
        return float(np.mean((self.propensity < 0.05) | (self.propensity > 0.95)))


def design(df: pd.DataFrame, numbers: list[str], categories: list[str]) -> Design:
    """The covariate matrix of `df`: `numbers` as floats, `categories` one-hot encoded."""
    import pandas as pd

    parts: list[np.ndarray] = []
    names: list[str] = []
    source_of: dict[str, str] = {}
    dropped: list[str] = []
    for column in numbers:
        values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
        if np.nanstd(values) == 0:
            dropped.append(column)
            continue
        parts.append(values[:, None])
        names.append(column)
        source_of[column] = column
    for column in categories:
        levels = sorted(df[column].astype(str).unique())
        if len(levels) < 2:
            dropped.append(column)
            continue
        codes = df[column].astype(str).to_numpy()
        for level in levels[1:]:
            name = f"{column}={level}"
            parts.append((codes == level).astype(float)[:, None])
            names.append(name)
            source_of[name] = column
    matrix = np.hstack(parts) if parts else np.zeros((len(df), 0))
    if matrix.shape[1]:
        # Columns that repeat others (a specialty that implies its brand) carry nothing new.
        kept = independent(np.column_stack([np.ones(len(df)), matrix]), keep=1)[1:] - 1
        dropped += [n for j, n in enumerate(names) if j not in set(kept.tolist())]
        matrix, names = matrix[:, kept], [names[j] for j in kept]
    return Design(matrix=matrix, names=names, source_of=source_of, dropped=dropped)


def check_separation(x: np.ndarray, t: np.ndarray, names: list[str]) -> None:
    """Raise `SeparationError` when one covariate alone splits the arms (every treated row on
    one side of a value, every untreated row on the other)."""
    treated, control = x[t == 1], x[t == 0]
    if not len(treated) or not len(control):
        return
    lo1, hi1 = treated.min(axis=0), treated.max(axis=0)
    lo0, hi0 = control.min(axis=0), control.max(axis=0)
    split = (hi0 < lo1) | (hi1 < lo0)
    if split.any():
        name = names[int(np.argmax(split))]
        raise SeparationError(f"'{name}' predicts the treatment exactly: no treated row has an untreated match", name)


def propensity(x: np.ndarray, t: np.ndarray, ridge: float = RIDGE, max_iter: int = 50) -> np.ndarray:
    """P(treated | covariates) by a logistic regression (Newton-Raphson on standardised
    columns, a tiny ridge on the slopes). Raises `SeparationError` when the fit classifies
    every row exactly (a combination of covariates separates the arms)."""
    n = len(t)
    if x.shape[1]:
        sd = x.std(axis=0)
        sd[sd == 0] = 1.0
        z = np.column_stack([np.ones(n), (x - x.mean(axis=0)) / sd])
    else:
        z = np.ones((n, 1))
    k = z.shape[1]
    penalty = np.full(k, ridge * n)
    penalty[0] = 0.0
    share = float(np.clip(t.mean(), 1e-6, 1 - 1e-6))
    beta = np.zeros(k)
    beta[0] = math.log(share / (1 - share))
    for _ in range(max_iter):
        eta = np.clip(z @ beta, -35, 35)
        p = 1 / (1 + np.exp(-eta))
        w = np.maximum(p * (1 - p), 1e-10)
        gradient = z.T @ (t - p) - penalty * beta
        hessian = (z * w[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    p = 1 / (1 + np.exp(-np.clip(z @ beta, -35, 35)))
    if np.max(np.abs(t - p)) < 0.01:
        raise SeparationError("the covariates together predict the treatment exactly: no treated row has a match")
    return p


def independent(z: np.ndarray, keep: int = 0, tol: float = 1e-9) -> np.ndarray:
    """Indices of the columns of `z` that are not linear combinations of earlier ones (the
    first `keep` are always kept), from the Gram matrix, so cheap on many rows."""
    gram = z.T @ z
    chosen: list[int] = []
    for j in range(z.shape[1]):
        if j < keep or not chosen:
            chosen.append(j)
            continue
        g = gram[np.ix_(chosen, chosen)]
        b = gram[chosen, j]
        residual = gram[j, j] - b @ np.linalg.lstsq(g, b, rcond=None)[0]
        if residual > tol * max(gram[j, j], 1e-300):
            chosen.append(j)
    return np.array(chosen, dtype=int)


def _ols_predict(x: np.ndarray, y: np.ndarray, rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """OLS of y on x (with an intercept) over `rows`, predicted at every row of `at`."""
    xr = x[rows]
    centre = xr.mean(axis=0)
    xc = xr - centre  # centred, so the normal equations stay well conditioned
    coef, *_ = np.linalg.lstsq(xc.T @ xc, xc.T @ (y[rows] - y[rows].mean()), rcond=None)
    return y[rows].mean() + (at - centre) @ coef


def outcome_models(x: np.ndarray, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's predicted outcome untreated and treated: OLS fitted in each arm separately
    (the same fit as one regression with treatment × covariate interactions)."""
    return _ols_predict(x, y, t == 0, x), _ols_predict(x, y, t == 1, x)


def overlap_mask(p: np.ndarray, trim: float, estimand: str = "ate") -> np.ndarray:
    """Rows with a comparable counterpart: a propensity within [trim, 1 − trim] for the ATE;
    for the ATT only the upper bound (a treated row that nearly everyone like it shares has no
    untreated match, while an untreated row unlike the treated just weighs little); every row
    when trim is 0."""
    if trim <= 0:
        return np.ones(len(p), bool)
    return p <= 1 - trim if estimand == "att" else (p >= trim) & (p <= 1 - trim)


def _dr_terms(
    t: np.ndarray, y: np.ndarray, p: np.ndarray, mu0: np.ndarray, mu1: np.ndarray, estimand: str
) -> tuple[float, np.ndarray]:
    """The doubly robust estimate and its influence-function terms (mean zero)."""
    if estimand == "att":
        # Effect on the treated: the treated's outcome minus their predicted untreated outcome,
        # corrected by the untreated residuals weighted by the propensity odds (normalised).
        r = y - mu0
        w0 = (1 - t) * p / (1 - p)
        a = float(np.sum(t * r) / np.sum(t))
        b = float(np.sum(w0 * r) / np.sum(w0))
        return a - b, t * (r - a) / t.mean() - w0 * (r - b) / w0.mean()
    terms = mu1 - mu0 + t * (y - mu1) / p - (1 - t) * (y - mu0) / (1 - p)
    ate = float(terms.mean())
    return ate, terms - ate


def dr_fit(
    x: np.ndarray, t: np.ndarray, y: np.ndarray, trim: float = TRIM, estimand: str = "ate"
) -> tuple[float, float]:
    """The doubly robust estimate and its standard error, refitting both models; NaN when the
    overlap bounds leave almost nobody in an arm."""
    p = propensity(x, t)
    keep = overlap_mask(p, trim, estimand)
    x, t, y, p = x[keep], t[keep], y[keep], p[keep]
    if t.sum() < 2 or (1 - t).sum() < 2:
        return float("nan"), float("nan")
    mu0, mu1 = outcome_models(x, t, y)
    estimate, terms = _dr_terms(t, y, p, mu0, mu1, estimand)
    return estimate, float(terms.std(ddof=1) / math.sqrt(len(t)))


def dr_point(x: np.ndarray, t: np.ndarray, y: np.ndarray, trim: float = TRIM, estimand: str = "ate") -> float:
    """The doubly robust estimate alone (what the refutations repeat)."""
    return dr_fit(x, t, y, trim, estimand)[0]


def naive_difference(t: np.ndarray, y: np.ndarray) -> Estimate:
    """Mean outcome of the treated minus the untreated, with Welch's interval (scipy)."""
    from scipy import stats

    y1, y0 = y[t == 1], y[t == 0]
    diff = float(y1.mean() - y0.mean())
    v1, v0 = y1.var(ddof=1) / len(y1), y0.var(ddof=1) / len(y0)
    se = math.sqrt(v1 + v0)
    if se > 0:
        dof = (v1 + v0) ** 2 / (v1**2 / (len(y1) - 1) + v0**2 / (len(y0) - 1))
        half = float(stats.t.ppf(0.975, dof)) * se
        p = float(stats.ttest_ind(y1, y0, equal_var=False).pvalue)
    else:
        half, p = 0.0, float("nan")
    return Estimate(
        "naive_difference",
        "Naive difference in means (no adjustment)",
        diff,
        se,
        len(y),
        p_value=p,
        confidence_interval=(diff - half, diff + half),
    )


def regression_adjustment(x: np.ndarray, t: np.ndarray, y: np.ndarray, estimand: str = "ate") -> Estimate:
    """OLS of y on t, the covariates and t × covariates (statsmodels, HC3 errors), the
    covariates centred at the mean of the rows the effect is averaged over (all rows for the
    ATE, the treated for the ATT), so the treatment's coefficient is that average effect."""
    import warnings

    import statsmodels.api as sm

    if x.shape[1]:
        centre = x[t == 1].mean(axis=0) if estimand == "att" else x.mean(axis=0)
        centred = x - centre
    else:
        centred = x
    z = np.column_stack([np.ones(len(t)), t, centred, t[:, None] * centred])
    z = z[:, independent(z, keep=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.OLS(y, z).fit(cov_type="HC3")
    lo, hi = fit.conf_int()[1]
    return Estimate(
        "regression_adjustment",
        "Regression adjustment (OLS with treatment × covariate interactions, HC3 errors)",
        float(fit.params[1]),
        float(fit.bse[1]),
        len(t),
        p_value=float(fit.pvalues[1]),
        confidence_interval=(float(lo), float(hi)),
    )


def ipw(t: np.ndarray, y: np.ndarray, p: np.ndarray, estimand: str = "ate") -> Estimate:
    """Inverse-propensity weighting with normalised (Hajek) weights (for the ATT: the treated
    as they are, the untreated weighted by the propensity odds); the standard error from the
    influence function, taking the propensities as known."""
    w1 = t / p if estimand == "ate" else t.astype(float)
    w0 = (1 - t) / (1 - p) if estimand == "ate" else (1 - t) * p / (1 - p)
    m1, m0 = float(np.sum(w1 * y) / np.sum(w1)), float(np.sum(w0 * y) / np.sum(w0))
    influence = w1 * (y - m1) / w1.mean() - w0 * (y - m0) / w0.mean()
    se = float(influence.std(ddof=1) / math.sqrt(len(t)))
    return Estimate("ipw", "Inverse-propensity weighting (logistic propensity, Hajek weights)", m1 - m0, se, len(t))


def aipw(
    t: np.ndarray, y: np.ndarray, p: np.ndarray, mu0: np.ndarray, mu1: np.ndarray, estimand: str = "ate"
) -> Estimate:
    """Augmented IPW: the outcome models' contrast corrected by weighted residuals; the
    standard error from the spread of its influence-function terms."""
    estimate, terms = _dr_terms(t, y, p, mu0, mu1, estimand)
    se = float(terms.std(ddof=1) / math.sqrt(len(t)))
    return Estimate(
        "doubly_robust",
        "Doubly robust (AIPW: OLS outcome models + logistic propensity)",
        estimate,
        se,
        len(t),
    )


def choose_estimand(p: np.ndarray, t: np.ndarray, limit: float = 0.10) -> tuple[str, str]:
    """`auto`: the ATE when overlap is good (at most `limit` of rows with a propensity outside
    [0.05, 0.95]); else, when it is the untreated rows that mostly lack a counterpart (a large
    comparison pool unlike the treated), the effect on the treated (ATT), which needs a
    comparable untreated row only for each treated one. Returns (estimand, why)."""
    outside = float(np.mean((p < 0.05) | (p > 0.95)))
    if outside <= limit:
        return "ate", f"overlap is good ({outside:.0%} of rows outside 0.05-0.95)"
    untreated_out = float(np.mean(p[t == 0] < 0.05))
    treated_out = float(np.mean(p[t == 1] > 0.95))
    if untreated_out > treated_out:
        return "att", (
            f"{outside:.0%} of rows have a propensity outside 0.05-0.95, mostly untreated rows unlike any "
            "treated one, so the average effect over everyone is not estimable: the answer is the effect "
            "on the treated"
        )
    return "ate", f"{outside:.0%} of rows have a propensity outside 0.05-0.95"


def analyse(
    x: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    trim: float = TRIM,
    names: list[str] | None = None,
    estimand: str = "auto",
    min_per_arm: int = 2,
) -> Analysis:
    """Every estimate on one data set: the naive difference on all rows, the adjusted ones on
    the rows within the overlap bounds."""
    names = names or [f"x{i}" for i in range(x.shape[1])]
    check_separation(x, t, names)
    warnings = _quasi_separation(x, t, names)
    p = propensity(x, t)
    why = "asked for"
    if estimand == "auto":
        estimand, why = choose_estimand(p, t)
    keep = overlap_mask(p, trim, estimand)
    xs, ts, ys, ps = x[keep], t[keep], y[keep], p[keep]
    if min(ts.sum(), (1 - ts).sum()) < min_per_arm:
        bounds = f"at most {1 - trim:g}" if estimand == "att" else f"within [{trim:g}, {1 - trim:g}]"
        raise OverlapError(
            f"too little overlap: only {int(ts.sum())} treated and {int((1 - ts).sum())} untreated rows have a "
            f"propensity {bounds} (at least {min_per_arm} of each are needed)"
        )
    mu0, mu1 = outcome_models(xs, ts, ys)
    return Analysis(
        naive=naive_difference(t, y),
        regression=regression_adjustment(xs, ts, ys, estimand),
        ipw=ipw(ts, ys, ps, estimand),
        doubly_robust=aipw(ts, ys, ps, mu0, mu1, estimand),
        propensity=p,
        kept=keep,
        trim=trim,
        estimand=estimand,
        estimand_reason=why,
        warnings=warnings,
    )


def _quasi_separation(x: np.ndarray, t: np.ndarray, names: list[str]) -> list[str]:
    """Category levels (0/1 columns) whose rows are all treated or all untreated."""
    found: list[str] = []
    for j, name in enumerate(names):
        column = x[:, j]
        if not np.isin(column, (0.0, 1.0)).all():
            continue
        inside = t[column == 1]
        if len(inside) and (inside.min() == inside.max()):
            arm = "treated" if inside[0] == 1 else "untreated"
            found.append(
                f"every row with {name} is {arm}: the propensity model is penalised to stay finite there, "
                "and those rows fall outside the overlap bounds"
            )
    return found


def _p_normal(estimate: float, se: float) -> float:
    if not se > 0:
        return float("nan")
    from scipy import stats

    return float(2 * stats.norm.sf(abs(estimate / se)))


def round_p(p: float) -> float:
    if math.isnan(p):
        return p
    return float(f"{p:.3g}")


_YES = frozenset({"1", "1.0", "true", "yes", "y", "t", "treated", "treatment", "on", "exposed"})


@dataclass
class Treatment:
    """The treatment as 0/1, which value counts as treated, and what was done to get there."""

    values: np.ndarray
    treated: str
    untreated: str
    note: str = ""


def binary_treatment(series: pd.Series, treated_value: Any = None) -> Treatment:
    """The treatment column as 0/1. Two values: 0/1 as they are; two other numbers: the higher
    is treated; two words: the one meaning yes (true, yes, treated ...) or `treated_value`,
    else the later alphabetically, said in `note`. More numbers: dichotomised at the median
    (above it is treated), said in `note`; more words: `treated_value` against all others.
    Raises `TreatmentError` (with what to change) when that leaves one value."""
    import pandas as pd

    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if treated_value is not None:
        wanted = str(treated_value).strip().lower()
        text = series.astype(str).str.strip().str.lower()
        if numeric:
            text = pd.Series([_number_text(v) for v in series], index=series.index)
            wanted = _number_text(treated_value)
        if wanted not in set(text):
            raise TreatmentError(f"the treated value '{treated_value}' does not occur in the treatment column")
        t = (text == wanted).to_numpy(dtype=float)
        _one_value(t)
        return Treatment(t, str(treated_value), "all other values", f"treated = {treated_value}, against all others")
    levels = sorted(series.unique().tolist(), key=lambda v: (str(type(v)), v))
    if len(levels) < 2:
        raise TreatmentError(f"the treatment never varies: every row has {levels[0] if levels else 'no value'}")
    if numeric and len(levels) == 2:
        lo, hi = float(levels[0]), float(levels[1])
        t = (series.to_numpy(dtype=float) == hi).astype(float)
        note = "" if (lo, hi) == (0.0, 1.0) else f"treated = {_number_text(hi)}, untreated = {_number_text(lo)}"
        return Treatment(t, _number_text(hi), _number_text(lo), note)
    if numeric:
        values = series.to_numpy(dtype=float)
        median = float(np.median(values))
        t = (values > median).astype(float)
        if t.min() == t.max():
            t = (values >= median).astype(float)
        _one_value(t)
        cut = _number_text(median)
        return Treatment(
            t,
            f"above {cut}" if t[values == median].max(initial=0) == 0 else f"{cut} or more",
            f"{cut} or less" if t[values == median].max(initial=0) == 0 else f"below {cut}",
            f"the treatment has {len(levels)} values, so it was split at its median ({cut}): "
            "rows above it count as treated",
        )
    if len(levels) == 2:
        words = [str(v) for v in levels]
        yes = [w for w in words if w.strip().lower() in _YES]
        treated = yes[0] if len(yes) == 1 else words[1]
        untreated = words[0] if treated == words[1] else words[1]
        t = (series.astype(str) == treated).to_numpy(dtype=float)
        return Treatment(t, treated, untreated, f"treated = '{treated}', untreated = '{untreated}'")
    raise TreatmentError(
        f"the treatment has {len(levels)} values ({', '.join(map(str, levels[:5]))}"
        f"{', ...' if len(levels) > 5 else ''}), not two"
    )


def _one_value(t: np.ndarray) -> None:
    if t.min() == t.max():
        raise TreatmentError("the treatment never varies once split into treated and untreated")


def _number_text(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value).strip().lower()
    return str(int(number)) if number.is_integer() else f"{number:g}"


def backdoor_set(graph: Any, treatment: str, outcome: str, resolve: Callable[[str], str]) -> list[str]:
    """The parents of `treatment` in `graph` ({node: [parents]} or [[cause, effect], ...] or
    ["cause -> effect", ...]), checked: the treatment must be in it and the graph acyclic.
    With no hidden variables the parents of the treatment block every backdoor path."""
    edges: list[tuple[str, str]] = []
    if isinstance(graph, dict):
        edges = [(str(p), str(child)) for child, parents in graph.items() for p in (parents or [])]
    elif isinstance(graph, list):
        for edge in graph:
            if isinstance(edge, str) and "->" in edge:
                a, b = edge.split("->", 1)
                edges.append((a.strip(), b.strip()))
            elif isinstance(edge, list | tuple) and len(edge) == 2:
                edges.append((str(edge[0]), str(edge[1])))
            else:
                raise GraphError(f"'{edge}' is not an edge")
    else:
        raise GraphError("the graph is neither a dict nor a list of edges")
    edges = [(resolve(a), resolve(b)) for a, b in edges]
    nodes = {n for e in edges for n in e} | ({resolve(str(k)) for k in graph} if isinstance(graph, dict) else set())
    if treatment not in nodes:
        raise GraphError(f"the treatment '{treatment}' is not in the graph")
    children: dict[str, list[str]] = {}
    for a, b in edges:
        children.setdefault(a, []).append(b)
    state: dict[str, int] = {}

    def cyclic(node: str) -> bool:
        state[node] = 1
        for nxt in children.get(node, []):
            if state.get(nxt) == 1 or (nxt not in state and cyclic(nxt)):
                return True
        state[node] = 2
        return False

    if any(n not in state and cyclic(n) for n in sorted(nodes)):
        raise GraphError("the graph has a cycle")
    parents = list(dict.fromkeys(a for a, b in edges if b == treatment))
    if outcome in parents:
        raise GraphError(f"the outcome '{outcome}' is drawn as a cause of the treatment")
    return parents
