"""Conditional average treatment effects (CATE) by segment, for `heterogeneous_optimizer`.

The core path is the doubly robust DR-learner: for every row an augmented inverse-propensity
(AIPW) score

    φ = μ₁(x) − μ₀(x) + t·(y − μ₁(x)) / e(x) − (1 − t)·(y − μ₀(x)) / (1 − e(x))

with the propensity e(x) (logistic regression) and the outcome regressions μ₀, μ₁ (one per
arm) fitted on the other folds (cross-fitting, so a row's own outcome never enters the models
that score it). The mean of φ over a segment estimates the segment's effect and stays
consistent when either the propensity or the outcome model is right; its standard error is
the scores' spread over √n, clustered by entity (an HCP's months are not independent draws)
when the rows repeat an entity. The segments' effects are compared by a Wald test with the
joint covariance of their means.

When most rows lie outside the overlap band (propensity 0.05–0.95) the effects are averaged
over the comparable rows only (propensity 0.1–0.9) and the result says so; a propensity model
that separates the arms perfectly is reported by its AUC for the agent to refuse.

EconML's `LinearDRLearner` (the `causal` extra) is the optional path: the same estimand with
the segment dummies as the final model's features; imported lazily, and only on request.

Also here: the data preparation the estimators need (a 0/1 treatment, a numeric outcome,
segment labels), each refusing what it cannot use with a `MethodError` saying what to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.methods.errors import MethodError, TreatmentError

if TYPE_CHECKING:
    import pandas as pd

CLIP = 0.01  # propensities are clipped to [CLIP, 1 − CLIP] so no row's weight explodes
OVERLAP = (0.05, 0.95)  # the usual overlap band reported on the assumption card
TRIM_WHEN = 0.5  # share of rows outside OVERLAP from which only the comparable rows are averaged
TRIM = (0.1, 0.9)  # the comparable rows' propensity band (Crump, Hotz, Imbens and Mitnik 2009)
MAX_LEVELS = 50  # categorical covariate levels one-hot encoded; more is an id, not a covariate
DENSE_LIMIT = 50_000_000  # clusters × segments cells for the joint covariance of the segment means


@dataclass
class SegmentEffect:
    """One segment's effect: the mean of its DR scores, with its uncertainty and size."""

    segment: str
    cate: float
    se: float
    ci: tuple[float, float]
    p_value: float
    n: int
    n_treated: int
    n_control: int
    share: float  # of the rows analysed
    untreated: int  # rows of the segment without the treatment (where it could still be given)

    def as_dict(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "cate": round(self.cate, 4),
            "standard_error": round(self.se, 4),
            "confidence_interval": [round(self.ci[0], 4), round(self.ci[1], 4)],
            "p_value": float(f"{self.p_value:.4g}"),
            "n": self.n,
            "n_treated": self.n_treated,
            "n_control": self.n_control,
            "share": round(self.share, 4),
            "untreated": self.untreated,
        }


@dataclass
class Heterogeneity:
    """Wald test that all segment effects are equal (χ² with segments − 1 degrees of freedom)."""

    statistic: float
    df: int
    p_value: float
    method: str = "Wald chi-square test of equal segment effects"


@dataclass
class CateResult:
    segments: list[SegmentEffect]
    skipped: dict[str, str]  # segment → why it has no estimate
    ate: float
    ate_se: float
    heterogeneity: Heterogeneity | None
    method: str
    overlap_outside: float | None  # share of rows with a propensity outside OVERLAP
    clipped: int  # rows whose propensity was clipped
    clusters: int | None  # entities the standard errors are clustered by
    notes: list[str] = field(default_factory=list)
    propensity_auc: float | None = None  # 1.0: the covariates separate the arms perfectly
    rows: int | None = None  # rows the effects are averaged over


def design_matrix(df: pd.DataFrame, covariates: list[str]) -> np.ndarray:
    """Numeric covariates as they are and categorical ones as dummies (first level dropped),
    standardised so the logistic fit converges the same on any scale."""
    import pandas as pd

    parts: list[np.ndarray] = []
    for name in covariates:
        column = df[name]
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
            parts.append(column.to_numpy(dtype=float)[:, None])
        else:
            dummies = pd.get_dummies(column.astype(str), drop_first=True, dtype=float)
            if dummies.shape[1]:
                parts.append(dummies.to_numpy())
    if not parts:
        return np.zeros((len(df), 0))
    x = np.hstack(parts)
    sd = x.std(axis=0)
    keep = sd > 0
    return (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]


def binary_treatment(column: pd.Series, name: str, notes: list[str]) -> np.ndarray:
    """The treatment as 0/1, coded as causal_impact codes it (`causal.binary_treatment`: two
    values → the larger or the "yes" is treated; more numbers → above the median), with its
    failures said for a segment analysis and how it was coded in `notes`."""
    import numpy as np

    from concerto.packs.commercial.methods.causal import binary_treatment as coded

    values = column.dropna().unique()
    if len(values) < 2:
        raise MethodError(
            f"the treatment '{name}' never varies (every row is {values[0] if len(values) else 'empty'})",
            "Choose a treatment some rows received and others did not, or another brand or source.",
            error_type="constant_treatment",
        )
    try:
        treatment = coded(column)
    except TreatmentError as exc:
        raise MethodError(
            f"the treatment '{name}' cannot be read as treated/untreated: {exc}",
            "Choose a 0/1 treatment column.",
            error_type="invalid_column",
        ) from None
    if treatment.note:
        notes.append(f"'{name}': {treatment.note}")
    return treatment.values.astype(np.int64)


def numeric_outcome(column: pd.Series, name: str) -> np.ndarray:
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(column):
        raise MethodError(
            f"the outcome '{name}' is not numeric",
            "Choose a numeric outcome such as new_rx.",
            error_type="invalid_column",
        )
    return column.to_numpy(dtype=float)


def segment_labels(column: pd.Series, name: str, notes: list[str], *, bins: int = 5, most: int = 30) -> pd.Series:
    """Segment labels as text; a continuous number cut into quintiles; too many levels refused."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column) and column.nunique() > 12:
        labels = pd.qcut(column, bins, duplicates="drop").astype(str)
        notes.append(f"'{name}' is continuous: cut into {labels.nunique()} quantile bins")
        return labels
    labels = column.astype(str)
    if labels.nunique() > most:
        raise MethodError(
            f"the segment '{name}' has {labels.nunique():,} values; at most {most} segments can be compared",
            "Choose a coarser segment column such as specialty, decile or region.",
            error_type="too_many_segments",
        )
    return labels


def dr_scores(
    x: np.ndarray, t: np.ndarray, y: np.ndarray, *, folds: int = 5, seed: int = 0, learner: str = "linear"
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted AIPW scores and the (unclipped) out-of-fold propensities."""
    from sklearn.model_selection import StratifiedKFold

    n = len(t)
    e, mu0, mu1 = np.empty(n), np.empty(n), np.empty(n)
    k = int(max(2, min(folds, np.bincount(t.astype(int), minlength=2).min())))
    splits = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(n), t)
    for train, test in splits:
        if x.shape[1]:
            propensity = _learners(learner)[0]
            e[test] = propensity.fit(x[train], t[train]).predict_proba(x[test])[:, 1]
        else:
            e[test] = t[train].mean()
        for arm, target in ((1, mu1), (0, mu0)):
            rows = train[t[train] == arm]
            if x.shape[1]:
                target[test] = _learners(learner)[1].fit(x[rows], y[rows]).predict(x[test])
            else:
                target[test] = y[rows].mean()
    ec = np.clip(e, CLIP, 1 - CLIP)
    scores = mu1 - mu0 + t * (y - mu1) / ec - (1 - t) * (y - mu0) / (1 - ec)
    return scores, e


def _learners(kind: str) -> tuple[Any, Any]:
    """(propensity classifier, outcome regressor): linear by default, gradient boosting on request."""
    if kind == "boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        return HistGradientBoostingClassifier(random_state=0), HistGradientBoostingRegressor(random_state=0)
    from sklearn.linear_model import LogisticRegression, Ridge

    # Nearly unpenalised fits on standardised columns; Newton and Cholesky steps are fast when
    # rows far outnumber columns, and the tiny penalty keeps collinear dummies solvable.
    return LogisticRegression(C=1e4, solver="newton-cholesky", max_iter=200), Ridge(alpha=1e-3, solver="cholesky")


def segment_effects(
    scores: np.ndarray,
    t: np.ndarray,
    segments: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    min_per_arm: int = 20,
    level: float = 0.95,
) -> tuple[list[SegmentEffect], dict[str, str], np.ndarray | None]:
    """Each segment's mean score with a (cluster-robust) standard error; segments with fewer
    than `min_per_arm` treated or control rows are skipped with the reason. Also the joint
    covariance of the kept segments' means (None when too large to form)."""
    from scipy import stats

    z = stats.norm.ppf(0.5 + level / 2)
    n_all = len(scores)
    levels = sorted({str(s) for s in segments})
    keep: list[str] = []
    skipped: dict[str, str] = {}
    labels = segments.astype(str)
    for level_name in levels:
        rows = labels == level_name
        treated = int(t[rows].sum())
        control = int(rows.sum()) - treated
        if min(treated, control) < min_per_arm:
            skipped[level_name] = (
                f"{treated} treated and {control} untreated rows; at least {min_per_arm} of each are needed"
            )
        else:
            keep.append(level_name)
    effects: list[SegmentEffect] = []
    index = {name: i for i, name in enumerate(keep)}
    k_of = np.array([index.get(s, -1) for s in labels])
    means = np.array([scores[k_of == i].mean() for i in range(len(keep))])
    counts = np.bincount(k_of[k_of >= 0], minlength=len(keep)).astype(float)
    cov = _covariance(scores, k_of, means, counts, clusters)
    variances = np.diag(cov) if cov is not None else _variances(scores, k_of, means, counts, clusters)
    for i, name in enumerate(keep):
        rows = k_of == i
        se = float(np.sqrt(variances[i]))
        est = float(means[i])
        p = float(2 * stats.norm.sf(abs(est) / se)) if se > 0 else 0.0
        treated = int(t[rows].sum())
        effects.append(
            SegmentEffect(
                segment=name,
                cate=est,
                se=se,
                ci=(est - z * se, est + z * se),
                p_value=p,
                n=int(rows.sum()),
                n_treated=treated,
                n_control=int(rows.sum()) - treated,
                share=float(rows.sum()) / n_all,
                untreated=int(rows.sum()) - treated,
            )
        )
    return effects, skipped, cov


def _cluster_codes(clusters: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    import pandas as pd

    codes, uniques = pd.factorize(clusters)
    return codes, len(uniques)


def _covariance(
    scores: np.ndarray, k_of: np.ndarray, means: np.ndarray, counts: np.ndarray, clusters: np.ndarray | None
) -> np.ndarray | None:
    """Joint covariance of the segment means: sums of each cluster's centred scores per segment
    (rows are their own clusters when `clusters` is None), with the G/(G−1) correction."""
    kept = k_of >= 0
    if not kept.any():
        return np.zeros((0, 0))
    codes, g = _cluster_codes(clusters[kept] if clusters is not None else None, int(kept.sum()))
    if g * len(means) > DENSE_LIMIT:
        return None
    k = k_of[kept]
    weights = (scores[kept] - means[k]) / counts[k]
    sums = np.zeros((g, len(means)))
    np.add.at(sums, (codes, k), weights)
    return np.asarray(sums.T @ sums) * g / max(g - 1, 1)


def _variances(
    scores: np.ndarray, k_of: np.ndarray, means: np.ndarray, counts: np.ndarray, clusters: np.ndarray | None
) -> np.ndarray:
    """Each segment mean's variance alone (when the joint covariance is too large to form)."""
    out = np.empty(len(means))
    for i in range(len(means)):
        rows = k_of == i
        codes, g = _cluster_codes(clusters[rows] if clusters is not None else None, int(rows.sum()))
        sums = np.bincount(codes, weights=(scores[rows] - means[i]) / counts[i], minlength=g)
        out[i] = float(sums @ sums) * g / max(g - 1, 1)
    return out


def heterogeneity_test(effects: list[SegmentEffect], cov: np.ndarray | None) -> Heterogeneity | None:
    """Wald test of H₀: every segment has the same effect, on the contrasts against the first
    segment with the joint covariance (independent segments when it could not be formed)."""
    if len(effects) < 2:
        return None
    from scipy import stats

    tau = np.array([e.cate for e in effects])
    v = cov if cov is not None else np.diag([e.se**2 for e in effects])
    c = np.hstack([-np.ones((len(tau) - 1, 1)), np.eye(len(tau) - 1)])
    diff = c @ tau
    middle = c @ v @ c.T
    statistic = float(diff @ np.linalg.pinv(middle) @ diff)
    df = len(tau) - 1
    return Heterogeneity(statistic=statistic, df=df, p_value=float(stats.chi2.sf(statistic, df)))


def overall(scores: np.ndarray, clusters: np.ndarray | None) -> tuple[float, float]:
    """The average effect over all rows and its (cluster-robust) standard error."""
    mean = float(scores.mean())
    codes, g = _cluster_codes(clusters, len(scores))
    sums = np.bincount(codes, weights=(scores - mean) / len(scores), minlength=g)
    return mean, float(np.sqrt(float(sums @ sums) * g / max(g - 1, 1)))


def dr_learner(
    x: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    segments: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    min_per_arm: int = 20,
    learner: str = "linear",
) -> CateResult:
    """The core path: cross-fitted DR scores, averaged by segment, compared by a Wald test.

    When most rows lie outside the overlap band the averages would rest on a few extreme
    weights and on extrapolation, so the effects are taken over the comparable rows only
    (propensity within TRIM, Crump et al. 2009) and the notes say so."""
    from sklearn.metrics import roc_auc_score

    scores, e = dr_scores(x, t, y, learner=learner)
    outside = float(((e < OVERLAP[0]) | (e > OVERLAP[1])).mean())
    notes: list[str] = []
    method = f"DR-learner (cross-fitted AIPW scores, {learner} nuisance models)"
    keep = np.ones(len(t), dtype=bool)
    if outside > TRIM_WHEN:
        comparable = (e >= TRIM[0]) & (e <= TRIM[1])
        if comparable.sum() >= 2 * min_per_arm and 0 < t[comparable].sum() < comparable.sum():
            keep = comparable
            method += f" on the rows with a propensity in {TRIM[0]}–{TRIM[1]}"
            notes.append(
                f"poor overlap: {outside:.0%} of rows have a propensity outside {OVERLAP[0]}–{OVERLAP[1]}, so the "
                f"effects are those of the {int(keep.sum()):,} comparable rows (propensity {TRIM[0]}–{TRIM[1]}), "
                "not of every row"
            )
    kept_clusters = clusters[keep] if clusters is not None else None
    effects, skipped, cov = segment_effects(
        scores[keep], t[keep], segments[keep], clusters=kept_clusters, min_per_arm=min_per_arm
    )
    ate, ate_se = overall(scores[keep], kept_clusters)
    return CateResult(
        segments=effects,
        skipped=skipped,
        ate=ate,
        ate_se=ate_se,
        heterogeneity=heterogeneity_test(effects, cov),
        method=method,
        overlap_outside=outside,
        clipped=int(((e < CLIP) | (e > 1 - CLIP)).sum()),
        clusters=len(np.unique(kept_clusters)) if kept_clusters is not None else None,
        notes=notes,
        propensity_auc=float(roc_auc_score(t, e)),
        rows=int(keep.sum()),
    )


def econml_available() -> bool:
    """Whether EconML (the `causal` extra) can be imported, without importing it."""
    import importlib.util

    return importlib.util.find_spec("econml") is not None


def econml_learner(
    x: np.ndarray, t: np.ndarray, y: np.ndarray, segments: np.ndarray, *, min_per_arm: int = 20
) -> CateResult:
    """The optional path: EconML's `LinearDRLearner` with the kept segments' dummies as the final
    model's features (no intercept), so each coefficient is a segment's effect with its
    heteroskedasticity-robust interval. Raises ImportError when EconML is not installed."""
    from econml.dr import LinearDRLearner
    from scipy import stats
    from sklearn.linear_model import LinearRegression, LogisticRegression

    labels = segments.astype(str)
    counts = {s: (int(t[labels == s].sum()), int((labels == s).sum())) for s in sorted(set(labels))}
    skipped = {
        s: f"{tr} treated and {n - tr} untreated rows; at least {min_per_arm} of each are needed"
        for s, (tr, n) in counts.items()
        if min(tr, n - tr) < min_per_arm
    }
    keep = [s for s in counts if s not in skipped]
    rows = np.isin(labels, keep)
    dummies = (labels[rows][:, None] == np.array(keep)[None, :]).astype(float)
    est = LinearDRLearner(
        model_propensity=LogisticRegression(C=1e4, max_iter=2000),
        model_regression=LinearRegression(),
        fit_cate_intercept=False,
        min_propensity=CLIP,
        cv=5,
        random_state=0,
    )
    est.fit(y[rows], t[rows], X=dummies, W=x[rows] if x.shape[1] else None)
    inference = est.effect_inference(np.eye(len(keep)))
    point = np.asarray(inference.point_estimate, dtype=float).ravel()
    se = np.asarray(inference.stderr, dtype=float).ravel()
    z = stats.norm.ppf(0.975)
    n_all = int(rows.sum())
    effects = []
    for i, name in enumerate(keep):
        tr, n = counts[name]
        effects.append(
            SegmentEffect(
                segment=name,
                cate=float(point[i]),
                se=float(se[i]),
                ci=(float(point[i] - z * se[i]), float(point[i] + z * se[i])),
                p_value=float(2 * stats.norm.sf(abs(point[i]) / se[i])) if se[i] > 0 else 0.0,
                n=n,
                n_treated=tr,
                n_control=n - tr,
                share=n / n_all,
                untreated=n - tr,
            )
        )
    shares = np.array([e.share for e in effects])
    ate = float(shares @ point)
    ate_se = float(np.sqrt((shares**2) @ (se**2)))
    return CateResult(
        segments=effects,
        skipped=skipped,
        ate=ate,
        ate_se=ate_se,
        heterogeneity=heterogeneity_test(effects, None),
        method="EconML LinearDRLearner (segment dummies as the final model's features)",
        overlap_outside=None,
        clipped=0,
        clusters=None,
        notes=["EconML's intervals treat rows as independent (not clustered by entity)"],
    )
