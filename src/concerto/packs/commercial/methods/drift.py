"""Drift between two periods, measured for `drift_monitor` and `health_score`.

- Which rows are the reference and which the current period (`apply_split`, following a
  `SplitPlan`, which the agents read from the question and the source): two values of a
  period column (the built-in data's `period`: baseline vs recent), a split date on the time
  column ("since January"), or the last N months against the N before ("last quarter vs the
  one before"); without any of these, the later half of the time range against the earlier
  half.
- Per numeric feature: the population stability index over ten quantile bins of the
  reference period (PSI = Σ (c − r) · ln(c / r) over the bins' shares, a share of zero counted
  as 0.0001) and the two-sample Kolmogorov-Smirnov test (`scipy.stats.ks_2samp`).
- Per category feature: PSI over the categories' shares and the chi-square test of the
  period × category table (`scipy.stats.chi2_contingency`).
- The p-values of all features are adjusted together with Holm's step-down method
  (`statsmodels.stats.multitest.multipletests`), which keeps the chance of any false alarm
  at 5 % however many features are checked.

Levels (the usual PSI thresholds, confirmed by the test so that a small sample's noisy PSI
raises no alarm): `significant` — PSI > 0.25 and adjusted p < 0.05; `moderate` — PSI 0.1 to
0.25 and adjusted p < 0.05; `inconclusive` — PSI ≥ 0.1 but the test does not confirm it (too
few rows); `stable` — PSI < 0.1 (a test may still detect such a small shift in a large sample;
`test_significant` says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.methods.errors import PeriodError

if TYPE_CHECKING:
    import pandas as pd

BINS = 10
PSI_MODERATE = 0.1
PSI_SIGNIFICANT = 0.25
ALPHA = 0.05
FLOOR = 1e-4  # share of an empty bin, so that ln(c / r) stays finite
MAX_CATEGORIES = 50  # a category feature with more values is skipped (an id in disguise)
MIN_ROWS = 20  # per period and feature
THRESHOLDS = {
    "psi_stable_below": PSI_MODERATE,
    "psi_significant_above": PSI_SIGNIFICANT,
    "alpha": ALPHA,
    "multiple_testing": "holm",
    "bins": BINS,
}


@dataclass
class SplitPlan:
    """How to cut the rows into a reference and a current period."""

    kind: str  # "period" | "date" | "window" | "halves"
    column: str  # the period column or the time column
    reference: str | None = None  # period value (kind period)
    current: str | None = None
    split_date: date | None = None  # kind date
    latest_year: bool = False  # kind date: the split month in the data's latest year that has it
    months: int = 0  # kind window
    described: str = ""


@dataclass
class FeatureDrift:
    feature: str
    kind: str  # numeric | category
    psi: float
    test: str  # ks | chi2
    statistic: float
    p_value: float
    reference_rows: int
    current_rows: int
    reference_summary: str
    current_summary: str
    p_adjusted: float = 1.0
    level: str = "stable"
    missing_share: dict[str, float] = field(default_factory=dict)

    @property
    def test_significant(self) -> bool:
        return self.p_adjusted < ALPHA

    def as_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "kind": self.kind,
            "psi": round(self.psi, 4),
            "test": self.test,
            "statistic": round(self.statistic, 4),
            "p_value": float(f"{self.p_value:.4g}"),
            "p_adjusted": float(f"{self.p_adjusted:.4g}"),
            "test_significant": self.test_significant,
            "level": self.level,
            "reference": self.reference_summary,
            "current": self.current_summary,
            "reference_rows": self.reference_rows,
            "current_rows": self.current_rows,
        }


@dataclass
class DriftReport:
    features: list[FeatureDrift]
    skipped: dict[str, str]  # feature → why it could not be compared

    def of_level(self, *levels: str) -> list[FeatureDrift]:
        return [f for f in self.features if f.level in levels]


# --- which rows are which period ------------------------------------------------------------


def choose_periods(column: str, values: list[str], reference: str | None, current: str | None) -> tuple[str, str]:
    """The (reference, current) values of the period column `column`, whose values are
    `values`: the given ones, checked; the other of two when one is given; else the two
    values in order (reference-like labels such as baseline first, then by value)."""
    lowered = [v.lower() for v in values]
    for label in (reference, current):
        if label is not None and label.lower() not in lowered:
            raise PeriodError(
                f"'{label}' is not a value of {column}",
                f"Values of {column}: {', '.join(values[:20])}",
                error_type="unknown_period",
            )
    if len(values) < 2:
        raise PeriodError(
            f"only one period is present: {column} is '{values[0] if values else 'empty'}' in every row",
            "Load data covering two periods, or compare by date with time_column and split_date.",
            error_type="single_period",
        )
    if reference is not None and current is not None:
        if reference.lower() == current.lower():
            raise PeriodError(
                f"the reference and current periods are both '{reference}'",
                f"Choose two different values of {column}: {', '.join(values[:20])}",
                error_type="single_period",
            )
        return reference, current
    if len(values) != 2:
        raise PeriodError(
            f"{column} has {len(values)} values, not two: say which two to compare",
            f"Set reference_period and current_period to two of: {', '.join(values[:20])}",
            error_type="unknown_period",
        )
    ordered = sorted(values, key=_rank)
    if reference is None and current is None:
        return ordered[0], ordered[1]
    if reference is None:
        return next(v for v in ordered if v.lower() != str(current).lower()), str(current)
    return str(reference), next(v for v in ordered if v.lower() != reference.lower())


def _rank(value: str) -> tuple[int, float, str]:
    """Reference-like labels first, current-like last; then numbers (years) in order, then text."""
    lowered = value.lower()
    if any(w in lowered for w in ("base", "before", "pre", "old", "train", "ref", "control")):
        group = 0
    elif any(w in lowered for w in ("recent", "after", "post", "new", "current", "test", "latest")):
        group = 2
    else:
        group = 1
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    return group, number, lowered


def apply_split(df: pd.DataFrame, plan: SplitPlan) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """(reference rows, current rows, reference label, current label) of `df` under `plan`;
    raises `PeriodError` when a period has no rows."""
    import pandas as pd

    if plan.kind == "period":
        present = df[plan.column].dropna()
        labels = present.astype(str).str.lower()
        values = sorted({str(v) for v in present.astype(str).unique()}, key=_rank)
        ref_label, cur_label = choose_periods(plan.column, values, plan.reference, plan.current)
        ref, cur = df.loc[labels.index[labels == ref_label.lower()]], df.loc[labels.index[labels == cur_label.lower()]]
    else:
        when = pd.to_datetime(df[plan.column], errors="coerce")
        if getattr(when.dt, "tz", None) is not None:
            when = when.dt.tz_localize(None)
        if when.notna().sum() == 0:
            raise PeriodError(
                f"the time column {plan.column} holds no dates",
                "Name a date column with time_column.",
                error_type="no_time_column",
            )
        month = when.dt.to_period("M")
        last, first = month.max(), month.min()
        if plan.kind == "date":
            assert plan.split_date is not None
            split = plan.split_date
            if plan.latest_year:  # "since March": the latest March the data has
                year = last.year if split.month <= last.month else last.year - 1
                split = date(year, split.month, 1)
            cut = pd.Timestamp(split)
            ref, cur = df[when < cut], df[when >= cut]
            ref_label, cur_label = f"before {split}", f"since {split}"
        elif plan.kind == "window":
            start = last - plan.months + 1
            before = start - plan.months
            ref = df[(month >= before) & (month < start)]
            cur = df[month >= start]
            ref_label = f"{before} to {start - 1}" if plan.months > 1 else str(before)
            cur_label = f"{start} to {last}" if plan.months > 1 else str(last)
        else:  # halves of the distinct months
            months = sorted(month.dropna().unique())
            if len(months) < 2:
                raise PeriodError(
                    f"{plan.column} holds a single month ({first}): there is nothing to compare",
                    "Choose a source with more than one period, or name a period_column.",
                    error_type="single_period",
                )
            middle = months[len(months) // 2]
            ref, cur = df[month < middle], df[month >= middle]
            ref_label, cur_label = f"{months[0]} to {middle - 1}", f"{middle} to {months[-1]}"
    for rows, label in ((ref, ref_label), (cur, cur_label)):
        if rows.empty:
            raise PeriodError(
                f"no rows in the period '{label}' — only one period is present",
                "Choose periods (or a split date) inside the data's range, or a source with two periods.",
                error_type="single_period",
            )
    return ref, cur, ref_label, cur_label


# --- features ---------------------------------------------------------------------------------


def psi_numeric(reference: np.ndarray, current: np.ndarray, bins: int = BINS) -> float:
    """PSI over `bins` quantile bins of the reference (ties merge bins: a count with few
    distinct values gets one bin per value)."""
    edges = np.unique(np.quantile(reference, np.linspace(0, 1, bins + 1)[1:-1]))
    ref = np.bincount(np.digitize(reference, edges, right=True), minlength=len(edges) + 1) / len(reference)
    cur = np.bincount(np.digitize(current, edges, right=True), minlength=len(edges) + 1) / len(current)
    return _psi(ref, cur)


def psi_shares(reference: pd.Series, current: pd.Series) -> float:
    """PSI over the categories' shares (the union of both periods' categories)."""
    ref = reference.value_counts(normalize=True)
    cur = current.value_counts(normalize=True)
    union = ref.index.union(cur.index)
    return _psi(ref.reindex(union, fill_value=0).to_numpy(), cur.reindex(union, fill_value=0).to_numpy())


def _psi(ref: np.ndarray, cur: np.ndarray) -> float:
    r, c = np.maximum(ref, FLOOR), np.maximum(cur, FLOOR)
    return float(np.sum((c - r) * np.log(c / r)))


def compare(reference: pd.DataFrame, current: pd.DataFrame, numeric: list[str], category: list[str]) -> DriftReport:
    """Drift of every feature from `reference` to `current`, p-values adjusted (Holm)."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    features: list[FeatureDrift] = []
    skipped: dict[str, str] = {}
    for column in [*numeric, *category]:
        ref_all, cur_all = reference[column], current[column]
        ref, cur = ref_all.dropna(), cur_all.dropna()
        empty = [label for label, part in (("reference", ref), ("current", cur)) if part.empty]
        if empty:
            skipped[column] = f"it has no values in the {' and '.join(empty)} period"
            continue
        if min(len(ref), len(cur)) < MIN_ROWS:
            skipped[column] = f"it has fewer than {MIN_ROWS} values in a period ({len(ref)} vs {len(cur)})"
            continue
        missing = {
            "reference": round(1 - len(ref) / max(len(ref_all), 1), 4),
            "current": round(1 - len(cur) / max(len(cur_all), 1), 4),
        }
        if column in numeric:
            import pandas as pd

            r = pd.to_numeric(ref, errors="coerce").dropna().to_numpy(dtype=float)
            c = pd.to_numeric(cur, errors="coerce").dropna().to_numpy(dtype=float)
            if min(len(r), len(c)) < MIN_ROWS:
                skipped[column] = "its values are not numbers"
                continue
            ks = stats.ks_2samp(r, c)
            features.append(
                FeatureDrift(
                    column, "numeric", psi_numeric(r, c), "ks", float(ks.statistic), float(ks.pvalue),
                    len(r), len(c), f"mean {r.mean():.4g}", f"mean {c.mean():.4g}", missing_share=missing,
                )
            )  # fmt: skip
        else:
            ref_s, cur_s = ref.astype(str), cur.astype(str)
            if ref_s.nunique() > MAX_CATEGORIES:
                skipped[column] = f"it has more than {MAX_CATEGORIES} categories"
                continue
            ref_counts, cur_counts = ref_s.value_counts(), cur_s.value_counts()
            union = ref_counts.index.union(cur_counts.index)
            table = np.vstack(
                [ref_counts.reindex(union, fill_value=0).to_numpy(), cur_counts.reindex(union, fill_value=0).to_numpy()]
            )
            if table.shape[1] < 2:
                statistic, p_value = 0.0, 1.0
            else:
                chi = stats.chi2_contingency(table)
                statistic, p_value = float(chi.statistic), float(chi.pvalue)
            features.append(
                FeatureDrift(
                    column, "category", psi_shares(ref_s, cur_s), "chi2", statistic, p_value, len(ref_s),
                    len(cur_s), _top(ref_s), _top(cur_s), missing_share=missing,
                )
            )  # fmt: skip
    if features:
        adjusted = multipletests([f.p_value for f in features], alpha=ALPHA, method="holm")[1]
        for feature, p_adjusted in zip(features, adjusted, strict=True):
            feature.p_adjusted = float(p_adjusted)
            feature.level = level_of(feature.psi, feature.p_adjusted)
    return DriftReport(features, skipped)


def level_of(psi: float, p_adjusted: float) -> str:
    if psi < PSI_MODERATE:
        return "stable"
    if p_adjusted >= ALPHA:
        return "inconclusive"
    return "significant" if psi > PSI_SIGNIFICANT else "moderate"


def _top(values: pd.Series) -> str:
    shares = values.value_counts(normalize=True).head(3)
    return ", ".join(f"{k} {v:.0%}" for k, v in shares.items())
